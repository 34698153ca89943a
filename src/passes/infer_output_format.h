// Pass 4b: the output's format, when the config omits it (or says "auto"), inferred from the
// operands by Scorch's rule, weighing the fill (passes/output_fill.h): a level is compressed
// where the output is expected to hold its index variable sparsely, else dense; the levels follow
// the loop order, and none is compressed below a dense one.
#pragma once

#include <optional>

#include "frontend/ast.h"
#include "frontend/config.h"
#include "ir/sparse_ir.h"
#include "passes/infer_loop_order.h"

namespace spgen {

// `program` was built with the output dense, and its loop order is final (stage I scheduled).
// Sets the output's format in `config` and rebuilds `program` with it, keeping the loop order.
// Where the format changes the loops and those have no order, returns the conflict.
std::optional<LoopOrderConflict> infer_output_format(sparse::Program& program, Config& config, const ast::Spec& spec);

}  // namespace spgen
