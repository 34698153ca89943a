// Statements fused into one row loop (passes/fuse_statements.h): a dense temporary of one value per
// row that only they write and read is held in a scalar of the row, and a sparse temporary that only
// they write and read, on the entries of a CSR-like structure (a dense row level over a compressed
// one), is held a row at a time in a workspace of each thread, as long as the longest row, rather
// than as an array of every stored entry that the executor allocates on each call. The attention's
// S and E then stay in the L1 cache between the statements that write and read them, and the
// kernel's memory is a row per thread instead of two arrays of nnz values.
#pragma once

#include <string>
#include <vector>

#include "ir/loop_ir.h"

namespace spgen {

struct RowTemporary {
  std::string tensor;  // S
  std::string values;  // its values array (S_vals)
  std::string pos;     // a sparse one's: its structure's row positions, a parameter of the fused kernel (M_pos1)
};

// Rewrites `fused` (one parallel row loop): each temporary's values at position p of row i are
// read and written at p - pos[i] of its row workspace (NAME_row, per thread, the longest row's
// length and a vector's reach past it: masked tails read past a row's end); the values array
// leaves the kernel's parameters. False, and `fused` unchanged, where its shape is not that loop.
bool hold_rows_in_workspaces(loops::LoweredFunc& fused, const std::vector<RowTemporary>& temporaries);

// Before that: a dense temporary of one value per row (the attention's m and l) whose every read
// and write in `fused` is at the row loop's own coordinate is held in a scalar of the row's body
// instead (a register), its values array leaving the parameters. Those so held, in order.
std::vector<RowTemporary> hold_row_values_in_scalars(loops::LoweredFunc& fused, const std::vector<RowTemporary>& temporaries);

}  // namespace spgen
