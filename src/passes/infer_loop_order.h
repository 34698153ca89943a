// Pass 3: the default loop order (stage I). Loops follow the operands' storage orders, so every
// compressed level is iterated inside its parents (hard constraints), and ties are broken so that
// dense operands and the output are walked in storage order where possible (concordant access,
// as in Scorch). A CSC operand is thus traversed column by column.
#pragma once

#include <optional>
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
// The same, or, where no loop order exists, the conflict it would throw (the loops left as they were).
std::optional<LoopOrderConflict> infer_loop_order_or_conflict(sparse::Program& program, const Config& config,
                                                              const std::set<std::string>& only = {});
// Whether the loop order iterates every non-dense level of `tensors` inside its parents.
bool loop_order_holds(const sparse::Program& program, const std::set<std::string>& tensors);

// Whether infer_loop_order finds a loop order (it throws where none exists).
bool loop_order_exists(const sparse::Program& program, const Config& config);
// The error infer_loop_order would throw, where no loop order exists; else nullopt.
std::optional<LoopOrderConflict> loop_order_conflict(const sparse::Program& program, const Config& config,
                                                     const std::set<std::string>& only = {});

// Blocks of rows (a mode's floordiv level, then levels of other, unblocked modes, then its mod
// level: dense i / r, compressed j, dense i % r) store those other levels outside the rows of a
// block (i_in), while an operand or output that stores i above j (csr) needs j inside i_in: no
// loop order iterates both. Stored as BSR r x 1, whose arrays are the same (a level j / 1, a dense
// j % 1 of one coordinate below the rows), j is blocked too, and such an operand is located inside
// the blocks (binary search of j in row i). Each such tensor of `config` whose levels between its
// blocks are dense or compressed is so rewritten; returns the names of those rewritten.
std::vector<std::string> block_levels_inside_row_blocks(Config& config);

}  // namespace spgen
