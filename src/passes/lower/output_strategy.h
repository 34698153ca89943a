// How the kernel writes its output: one strategy per kind of output, chosen in one place
// (choose_output_strategy) from the facts below, which the lowering establishes first.
#pragma once

#include <string>

namespace spgen::lowering {

enum class OutputStrategy {
  InPlace,            // dense, or in an input's structure: each value stored at its known position
  Appended,           // assembled in storage order: each level's entries appended through cursors
  RowWorkspace,       // assembled, a row's entries out of order or repeated: gathered per row (row_workspace.h)
  BlockRowWorkspace,  // assembled and blocked where no operand is: gathered a block row at a time (block_row_workspace.h)
  Listed,             // assembled, entries out of storage order: listed, sorted and packed (listed_output.h)
};

const char* output_strategy_name(OutputStrategy strategy);  // "in place", "appended", ...

// What the choice depends on.
struct OutputFacts {
  bool assembled = false;  // the kernel builds the output's structure
  bool listed = false;     // its entries arrive out of storage order (output_order.h), or join a list
  // A sum, or a non-unique level's repeats, outside the output's last loop: a coordinate is
  // written more than once, not in a row.
  bool reduction_outside = false;
  // The output's last level gathers a row (compressed or ELL), or it ends in a COO segment.
  bool last_level_gathers = false;
  int entry_level = 0;      // the level whose positions are the entries (output_levels.h)
  int gathered_level = -1;  // the level gathered a block row at a time (blocked where no operand is), or -1
  int counted_level = -1;   // counting (an assemble phase): the level it counts; -1 computing
};

// The decision table. A counting phase gathers only where it counts the gathered level: counting
// a level above, a row holds an entry as soon as anything is written under it.
OutputStrategy choose_output_strategy(const OutputFacts& facts);

}  // namespace spgen::lowering
