// `"schedule": "auto"`: picks schedule ops from the loop nest's shape, as explicit ops that then
// go through the same checks as a hand-written schedule: the outermost loop runs in parallel
// (dynamically balanced, for skewed rows) when it is race-free, and an innermost dense loop is
// vectorized. On the cuda target the outermost loop is bound to blocks and threads, with a warp
// per outer iteration when an inner loop suits its lanes (see auto_schedule.cpp, docs/cuda.md).
#pragma once

#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

std::vector<ScheduleOp> auto_schedule(const loops::LoweredFunc& func, const sparse::Program& program, Target target);

}  // namespace spgen
