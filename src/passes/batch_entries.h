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

#include <string>
#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

void batch_entries(loops::LoweredFunc& func, const Config& config, const sparse::Program& program,
                   const std::vector<const ScheduleOp*>& batch_ops);

// `batch` by length runs a loop's iterations one at a time unless the rows hold this many entries
// on average: SDDMM's rows of 4-5 entries ran 0.71-0.91x batched by 4 (quiet machine, k = 32),
// 0.92-0.97x where each row tested its own length, 0.95-1.03x where the kernel tests the mean
// (one load the compiler takes out of the loops; the mean as an `if` around two loops ran
// 0.87-0.95x), which kept the gains of rows of 40 entries and more (bench/RESULTS.md, session 32).
inline constexpr int64_t kShortestBatched = 16;
// Dot products longer than this (bytes, fixed by "sizes") are batched 2 at a time, not 4.
inline constexpr int64_t kLongestBatchedBy4 = 128;

// The iterations `op` runs at once: its factor, or without one, by the length of the dot products
// (the sums inside `op.var`): 4, or 2 where "sizes" fix it above 128 bytes (32 floats). Measured
// at 64 and 128 floats, 4 at once ran 0.74-1.31x, 2 at once 1.01-1.21x: 4 dot products' rows of
// B in flight outgrow the misses a core tracks (bench/RESULTS.md, session 32).
int64_t batch_factor(const BatchOp& op, const sparse::Program& program, const Config& config);

// Why the loops labelled `var` in `func` may not run their iterations together, or "" where they
// may (the dot product in lanes that `batch` also needs comes from `vectorize`: not checked here).
std::string batch_refusal(const loops::LoweredFunc& func, const std::string& var);

}  // namespace spgen
