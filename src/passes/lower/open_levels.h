// The open levels of an appended output: its compressed (or counted ragged) levels above the last
// hold a coordinate only where the loops below produce an entry (so a computed zero stays
// stored). Each gets a flag, declared in its coordinate's loop body and raised by every entry
// written below; after the body the flag advances the level's cursor (or, counting that level,
// its count). The lowering plans them (plan_open_levels); these are their statements.
#pragma once

#include <string>
#include <vector>

#include "ir/loop_ir.h"
#include "passes/lower/output_context.h"

namespace spgen::lowering {

struct OpenLevel {
  int level = 0, depth = 0;  // output level and the loop depth that binds its coordinate
  int last_level = 0;        // level, or a COO segment's last singleton (its coordinates are stored too)
  std::string flag, cursor;  // cursor empty when this level is the one counted
  bool counted = false;
  // Every iteration of its loop writes entries below (only whole blocks' loops are inside):
  // it is marked once, before the body, with no flag (see writes_every_iteration).
  bool every_iteration = false;
  // The row level of an output that a fused loop appends in place: the row of its last entry
  // (-1 before the first), against which each entry's row is compared (fused_row_change).
  std::string fused_row;
};

// The flags of the levels whose coordinate the loop at `depth` binds, around that loop's body;
// a level written at every iteration is marked before the body instead. `value_position`: the
// output's last level's position (where counts sit, one slot up).
loops::Stmt with_open_flags(const OutputContext& output, const std::vector<OpenLevel>& opened, int depth, loops::Stmt body,
                            loops::Expr value_position);

// An entry is written below: raise the flag of every level above it, and (filling) store their
// coordinates at their cursors, which is the same store for every entry under one coordinate.
std::vector<loops::Stmt> open_levels(const OutputContext& output, const std::vector<OpenLevel>& opened);

// A fused loop appending an output's rows in place (appends_rows_in_order): where an entry's row
// differs from the last entry's, the row level holds one more coordinate. Counting that level
// counts it; else its cursor moves on to it (after the first), and filling stores it there.
std::vector<loops::Stmt> fused_row_changes(const OutputContext& output, const std::vector<OpenLevel>& opened);

// A ragged row's length is its largest coordinate + 1, whatever order the entries come in
// (counts sit one slot up, at `slot`, for the prefix sum).
loops::Stmt store_ragged_length(const OutputContext& output, const sparse::Axis& axis, loops::Expr slot);

// The coordinate of the output's open level (and of a COO segment's singletons), stored at its cursor.
loops::Stmt store_open_coordinate(const OutputContext& output, int first_level, int last_level, const std::string& cursor);

}  // namespace spgen::lowering
