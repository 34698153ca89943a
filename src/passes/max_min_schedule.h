// The schedule ops a max or min reduction takes (for now): those that only reorder, split, spread
// or unroll loops, none spreading a reduced loop over threads but a warp's shuffle (cuda:
// spgen_warp_max), and a plain `vectorize` (OpenMP's simd reduction(max: ...)). The others
// (vectorize in lanes, precompute, batch, fuse, a parallel or bound reduced loop) combine partial
// results by adding them. (decompose refuses a max itself, before stage I: decompose_operand.)
#pragma once

#include <string>
#include <vector>

#include "frontend/config.h"
#include "ir/sparse_ir.h"

namespace spgen {

// Why `op` (at its place in `ops`, whose earlier splits name loops) cannot schedule the
// program's max or min reduction; empty where it can.
std::string max_min_refusal(const std::vector<ScheduleOp>& ops, size_t k, const sparse::Program& program);

// `auto`'s ops without those a max or min reduction cannot take; a vectorize in lanes becomes a
// plain one.
std::vector<ScheduleOp> max_min_safe(const std::vector<ScheduleOp>& ops, const sparse::Program& program);

}  // namespace spgen
