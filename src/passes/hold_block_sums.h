// cpu: a walk that adds into the same few output entries at every step holds their sums in a
// local array across it, and adds them once after it. A BSR row of blocks (`y[i_blk*r + i_in] +=
// ...` for each of its blocks) otherwise reads and writes y once per block, where CSR's row sum
// writes y once per row: bsr 3x3 SpMV on bcsstk16 went 0.114 -> 0.092 ms with the rows held
// (bench/RESULTS.md, session 32).
//
// The pattern: a loop W (sequential, no schedule of its own) whose body runs a blocked operand's
// in-block loop R over [0, E), E at most the block's extent C (`min(C, ...)`) and not changed by W; R's
// body adds into B[index], an index made of R's variable and of what is fixed outside W (through
// R's own lets); W reads and writes B nowhere else. Then B_rows[C] (zero) is declared around W,
// R adds into B_rows[R's variable], and a copy of R after W adds B_rows into B.
#pragma once

#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

void hold_block_sums(loops::LoweredFunc& func, const sparse::Program& program);

}  // namespace spgen
