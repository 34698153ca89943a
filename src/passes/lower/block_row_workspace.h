// The output strategy of an output blocked where no operand is (C bsr r x c = A csr + B csr): the
// loops go over block rows (i_blk) and the rows inside one (i_in), the operands read at
// i = i_blk*r + i_in, and the entries of one block row, which arrive row by row, are gathered per
// block column (j / c). A workspace holds each touched block whole (r*c values, zeroed at its
// first touch, so the padding of a partial block stays zero), with a marker of the block row
// that last touched it and the list of touched block columns, sorted and appended block by block
// when the block row is done. It is the row workspace (row_workspace.h) with a block per
// coordinate; the count phase counts each block row's distinct block columns.
#pragma once

#include <string>
#include <vector>

#include "passes/lower/row_workspace.h"

namespace spgen::lowering {

// Names the workspace into `rows` (its row depth and marker from the output's levels above the
// gathered one) and `blocks`, and adds its arrays to `workspaces`; a rest inside another
// lowering's block row (`owner`) uses the owner's arrays instead. A sum outside the block rows
// is refused: the refusal's message (a NestRefusal::SharedBlocks: lower.cpp then lists the
// output's entries into its blocks), else "".
std::string plan_block_row_workspace(const OutputContext& output, const FreshName& fresh_name, std::vector<loops::Workspace>& workspaces,
                              const RowWorkspace* owner, RowWorkspace& rows, BlockRows& blocks);

// The write of `value` into its block: a block's first touch in the block row marks it, opens
// the output's levels above (`open_levels`) and, computing, lists it and zeroes it; counting, it
// counts a block under the block row.
loops::Stmt scatter_into_block(const OutputContext& output, const RowWorkspace& rows, const BlockRows& blocks, loops::Expr value,
                               std::vector<loops::Stmt> open_levels);

// Around a block row's loops: an empty list before; after, the touched block columns sorted and
// each block appended whole. `why` says in the kernel's comment why the blocks are gathered.
loops::Stmt append_block_row(const OutputContext& output, const RowWorkspace& rows, const BlockRows& blocks, loops::Stmt row_loops,
                             const std::string& why, const FreshName& fresh_name);

}  // namespace spgen::lowering
