// What the output strategies (row_workspace.h, block_row_workspace.h, listed_output.h) read of the
// lowering, read-only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"
#include "passes/lower/level_position.h"

namespace spgen::lowering {

// What an output strategy reads of the lowering: the program's output, the positions of its levels,
// and the phase (computing, or counting one level's entries).
struct OutputContext {
  const sparse::Program& program;
  const Config& config;
  const std::vector<LevelPosition>& positions;  // the output's levels
  bool counting = false;
  int counted_level = -1;
  bool coo_segment = false;  // the output ends in a COO segment, whose rows are numbered
  loops::ScalarType value_type, index_type;
};

// Makes a name no other part of the kernel uses, from the one wanted.
using FreshName = std::function<std::string(const std::string&)>;

}  // namespace spgen::lowering
