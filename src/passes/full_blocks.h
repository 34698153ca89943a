// cpu: a blocked operand's in-block loop runs `min(C, n - blk*C)` times, so that the last block
// of a dimension that C does not divide stops at its edge; the compiler then neither unrolls it
// nor keeps the block's values in registers. Into a dense output, where the block's loops are the
// innermost (SpMV; SpMM's loop over k inside them gains nothing by it), the outermost block loop in
// which the test of such a loop's block stays the same runs twice: `if (C <= n - blk*C)` with the
// loop of exactly C iterations, else as it was. (A test the walk over the blocks does not change,
// a partial row of blocks, is hold_block_sums'.) bsr 3x3 SpMV on bcsstk16 went 0.094 -> 0.065 ms
// (with hold_block_sums), against csr auto's 0.086 (bench/RESULTS.md, session 32).
#pragma once

#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

void version_full_blocks(loops::LoweredFunc& func, const sparse::Program& program);

}  // namespace spgen
