// The output strategy of a sparse output whose rows arrive out of order (SpGEMM's `C(i,j) =
// A(i,k) * B(k,j)`): each row (or block row) is gathered in a dense workspace, then appended in
// coordinate order when it is done.
#pragma once

#include <string>
#include <vector>

#include "ir/loop_ir.h"
#include "passes/lower/output_context.h"

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

// A block-row workspace's own names: `values` of RowWorkspace holds a block per key.
struct BlockRows {
  loops::Expr size;    // the values of one block: the dense levels below the gathered one
  std::string key;     // the gathered level's coordinate, declared where an entry is scattered
  std::string offset;  // the loop variable over a block's values (zeroing, appending)
};

// The refusal of a sum outside the output's rows (or block rows: `row` names them) above
// `row_depth`, where no row could be finished before the next begins; empty where there is none.
std::string summed_outside_rows(const OutputContext& output, int row_depth, const std::string& row);

// Names the workspace and adds its arrays to `workspaces` (counting needs only `seen`). A sum
// outside the rows is a CompileError: no row could be finished before the next begins.
RowWorkspace plan_row_workspace(const OutputContext& output, const FreshName& fresh_name, std::vector<loops::Workspace>& workspaces);

// The write of `value` into the row: a coordinate's first touch in the row marks it, opens the
// output's levels above (`open_levels`: their flags raised) and, computing, lists it and clears
// its sum; counting, it counts an entry under the parent (`value_position`, a COO segment's).
loops::Stmt scatter_into_row(const OutputContext& output, const RowWorkspace& rows, loops::Expr value,
                             std::vector<loops::Stmt> open_levels, loops::Expr value_position);

// Around a row's loops: an empty list before; after, the touched coordinates sorted and the row
// appended at the output's cursor (and a COO segment's next row numbered).
loops::Stmt append_row(const OutputContext& output, const RowWorkspace& rows, loops::Stmt row_loops, const FreshName& fresh_name);

// `slot` runs only while `cursor` is within the W slots of ELL row `row` (a parent position):
// a row longer than the width, which the caller was to check on the counted positions, keeps
// its first entries, and nothing is written past it.
loops::Stmt within_ell_row(const sparse::Axis& axis, loops::Expr row, const std::string& cursor, loops::Stmt slot);

}  // namespace spgen::lowering
