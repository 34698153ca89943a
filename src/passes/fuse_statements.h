// Fusion of a spec's statements (issue #22, Halide's compute_at at the row loop): consecutive
// statements whose kernels are each one dense loop over the same rows, each reading what the
// group's earlier statements wrote only at its own row, run as one loop whose every row computes
// them in turn. The temporaries' rows are then used while in cache, and the kernel forks threads
// once instead of once per statement. (The temporaries stay whole arrays: holding a row's in
// registers or a row workspace is a later step.)
#pragma once

#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/program.h"
#include "ir/loop_ir.h"

namespace spgen {

struct StatementGroup {
  size_t first = 0, count = 1;  // statements first .. first + count - 1
  std::string row;              // the index variable of their common loop
};

// The statements as groups, in order, each of one statement or of several that fuse. `funcs`:
// each statement's kernel after its schedule.
std::vector<StatementGroup> fusable_statements(const ast::Program& program, const std::vector<loops::LoweredFunc>& funcs);

// One kernel named `name` whose row loop runs the kernels' row loops' bodies in turn, each in a
// scope of its own; its parameters are theirs, each once (writable where one writes it), in order
// of first appearance.
loops::LoweredFunc fuse_statement_kernels(const std::string& name, const std::vector<const loops::LoweredFunc*>& kernels);

}  // namespace spgen
