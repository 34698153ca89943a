// `"schedule": "auto"`: picks schedule ops from the loop nest's shape, as explicit ops that then
// go through the same checks as a hand-written schedule: the outermost loop runs in parallel
// (dynamically balanced, for skewed rows) when it is race-free, and an innermost dense loop is
// vectorized.
#pragma once

#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

std::vector<ScheduleOp> auto_schedule(const loops::LoweredFunc& func, const sparse::Program& program);

}  // namespace spgen
