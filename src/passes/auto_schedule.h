// `"schedule": "auto"`: picks schedule ops from the loop nest's shape, as explicit ops that then
// go through the same checks as a hand-written schedule, each with its reason for the header.
// On the cpu: the outermost loop runs in parallel (dynamically balanced, for skewed rows) when it
// is race-free; a dense free index summed over a sparse one (SpMM's k over A's j) is kept in a
// register tile across that sum (stage I moves it outside the sum, stage II tiles, precomputes
// and vectorizes it); a dot product over an innermost dense loop (SDDMM's k) sums in vector
// lanes; another innermost dense loop is vectorized. On the cuda target the outermost loop is
// bound to blocks and threads, with a warp per outer iteration when an inner loop suits its lanes
// (see auto_schedule.cpp, docs/cuda.md).
#pragma once

#include <optional>
#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

// A dense index whose size neither "sizes", a size variant nor the statistics give: a typical
// feature width (what `auto` and factor_product assume of it).
constexpr int64_t kAssumedFeatureWidth = 32;

// Stage I (cpu): the reorder that puts a dense free index outside the sparse sum it sits in, or
// nothing. Apply it before lowering; stage II's auto_schedule then finds the register tile.
std::optional<ScheduleOp> auto_reorder(const sparse::Program& program, const Config& config);

std::vector<ScheduleOp> auto_schedule(const loops::LoweredFunc& func, const sparse::Program& program, const Config& config);


}  // namespace spgen
