// Pass 6: stage II schedule. Applies split, reorder (of loops), parallel, vectorize, unroll and
// (cuda) bind to the loop nest, in config order, refusing what would change the result (a race
// on the output, a loop moved outside the loop its bounds depend on). Errors name the op by its
// index.
#pragma once

#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

// With `skip_ops_on_missing_loops`, ops that name a loop the nest does not have are left out
// (for an assemble phase, which lacks the summed loops).
void schedule_loops(loops::LoweredFunc& func, const sparse::Program& program, const Config& config,
                    const std::vector<ScheduleOp>& ops, bool skip_ops_on_missing_loops = false);

}  // namespace spgen
