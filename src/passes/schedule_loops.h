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

void schedule_loops(loops::LoweredFunc& func, const sparse::Program& program, const Config& config,
                    const std::vector<ScheduleOp>& ops);

}  // namespace spgen
