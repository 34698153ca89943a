// cpu `batch`: a loop whose iterations each finish a dot product summed in vector lanes (SDDMM's
// walk over a row's stored entries, `vectorize` with `lanes` on k) runs `factor` iterations at
// once. Their statements are interleaved, their inner loops fused into one (unroll and jam:
// the row of A that all of them read is loaded once per group), and their partial sums are added
// up by one transposing tree of vector additions (LaneSums), instead of a horizontal sum each,
// which dominates a short dot product. The iterations left over run as before. Runs after the
// other ops, on the final nest. Errors name the batch op.
//
// Legal where iterations are independent: each writes only its own entry of the output (at an
// index made of its position or coordinate, on a level whose coordinates do not repeat), reads
// nothing any of them writes, and sums only into scalars of its own.
#pragma once

#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"

namespace spgen {

void batch_entries(loops::LoweredFunc& func, const Config& config, const std::vector<const ScheduleOp*>& batch_ops);

}  // namespace spgen
