// What the block passes (hold_block_sums, full_blocks) know of a blocked operand's in-block
// loops: which loops they are, and the bound that stops one at a block's edge.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

// The labels of the program's in-block loops (BSR's i_in, j_in).
std::set<std::string> in_block_loops(const sparse::Program& program);

// An in-block loop's end: the block's extent C, and where it is `min(C, rest)` (a block at the
// edge of a dimension C does not divide), `rest`; null where the end is C itself.
struct BlockBound {
  int64_t extent = 0;
  loops::Expr rest;
};
std::optional<BlockBound> block_bound(const loops::Expr& end);

}  // namespace spgen
