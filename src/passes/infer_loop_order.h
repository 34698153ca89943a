// Pass 3: the default loop order (stage I). Loops follow the operands' storage orders, so every
// compressed level is iterated inside its parents (hard constraints), and ties are broken so that
// dense operands and the output are walked in storage order where possible (concordant access,
// as in Scorch). A CSC operand is thus traversed column by column.
#pragma once

#include <set>
#include <string>

#include "frontend/config.h"
#include "ir/sparse_ir.h"
#include "support/diagnostics.h"

namespace spgen {

// No loop order iterates every operand through its compressed levels.
class LoopOrderConflict : public CompileError {
 public:
  using CompileError::CompileError;
};

// A buffer that is sparse::SparseBuffer::ordered_apart orders no loops. `only` (the tensors of
// one part of a sum, into a listed output: its nest's loops): only they order them.
void infer_loop_order(sparse::Program& program, const Config& config, const std::set<std::string>& only = {});
// Whether the loop order iterates every non-dense level of `tensors` inside its parents.
bool loop_order_holds(const sparse::Program& program, const std::set<std::string>& tensors);

}  // namespace spgen
