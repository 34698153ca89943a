// Where a tensor's level stands in the loops: the name of its position, and the depth where it
// becomes known.
#pragma once

#include <string>

#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen::lowering {

// A level's position becomes known in the loop of the deepest variable among it and its
// parents; dense levels are computed there, compressed levels are the loop's own variable.
struct LevelPosition {
  bool is_cursor = false;  // a mutable position that the body advances
  // A level whose index another operand splits into blocks: no loop iterates it, so once the
  // coordinate is known it is located under `value` (the parent position), by lookup or
  // binary search (see locate_in_blocks); `found` says whether it is stored.
  const sparse::Axis* searched = nullptr;
  std::string found, parent_found;  // parent_found: of the nearest located level above
  std::string parent_run_end;       // a singleton's parent visited by runs: the run's end
  std::string end, high, middle;    // the search's range end and bounds
  std::string run_middle;           // ... and of the search for the run's end
  std::string name;
  std::string run_end;  // a COO level visited by runs: the end of the current run (the loop sets it)
  int ready_depth = -1;
  int declare_depth = -1;  // where it is declared: ready_depth, or above it for an output cursor
  loops::Expr value;  // for dense levels: parent * length + coordinate
};

}  // namespace spgen::lowering
