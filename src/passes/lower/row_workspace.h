// The output strategy of a sparse output whose rows arrive out of order (SpGEMM's `C(i,j) =
// A(i,k) * B(k,j)`): each row (or block row) is gathered in a dense workspace, then appended in
// coordinate order when it is done.
#pragma once

#include <string>

#include "ir/loop_ir.h"

namespace spgen::lowering {

// The names a row workspace's code uses. A block-row workspace (an output gathered a block per
// key of its gathered level) uses the same arrays, `values` holding whole blocks.
struct RowWorkspace {
  int row_depth = -1;  // the loop depth where a row (the output's parent position) is known
  loops::Expr row;     // the row's marker: its parent position (a COO segment's: its number)
  std::string values;  // the row's sums, by coordinate
  std::string seen;    // by coordinate, the marker of the row that last touched it
  std::string list;    // the coordinates the row touched, in the order it touched them
  std::string count;   // how many it touched
  std::string row_number;  // a COO segment's row marker: the rows visited so far
};

}  // namespace spgen::lowering
