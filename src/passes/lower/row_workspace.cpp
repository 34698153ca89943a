#include "passes/lower/row_workspace.h"

#include <algorithm>

#include "passes/lower/output_levels.h"
#include "support/diagnostics.h"

namespace spgen::lowering {

using namespace loops;

// A row's entries arrive in any order and repeatedly, so they are gathered per row (per parent
// position of the compressed level) in a dense workspace, with a marker of the row that last
// touched each coordinate and the list of touched coordinates, which is sorted and appended
// when the row is done.
//
// A COO segment has no position per row (its rows are the coordinates of the levels above the
// last): a row is marked by its number among the rows this thread has visited.
std::string summed_outside_rows(const OutputContext& o, int row_depth, const std::string& row) {
  const sparse::Program& program = o.program;
  for (int d = 0; d <= row_depth; ++d)
    if (program.iteration.iterators[d].is_reduction)
      return format_config_error(o.config.file, "/tensors",
                                 "sparse output " + program.output().tensor + " is summed over " + program.iteration.iterators[d].var +
                                     " outside its " + row + "s, so no " + row + " can be finished before the next begins; make " +
                                     program.output().tensor + " dense, or reorder so its row loops are outermost");
  return "";
}

RowWorkspace plan_row_workspace(const OutputContext& o, const FreshName& fresh_name, std::vector<Workspace>& workspaces) {
  const sparse::Program& program = o.program;
  const sparse::SparseBuffer& output = program.output();
  const std::vector<LevelPosition>& levels = o.positions;
  RowWorkspace rows;
  rows.row_depth = levels.size() > 1 ? levels[levels.size() - 2].ready_depth : -1;
  if (o.coo_segment) {
    rows.row_depth = -1;
    for (size_t level = 0; level + 1 < output.axes.size(); ++level)
      rows.row_depth = std::max(rows.row_depth, program.depth_of(program.axes[output.axes[level]].index_var));
  }
  if (const std::string why = summed_outside_rows(o, rows.row_depth, "row"); !why.empty()) throw CompileError(why);
  const sparse::Axis& axis = program.axes[output.axes.back()];
  rows.row = levels.size() > 1 ? var(levels[levels.size() - 2].name) : int64(0);
  rows.values = fresh_name(output.tensor + "_row");
  rows.seen = fresh_name(output.tensor + "_seen");
  rows.list = fresh_name(output.tensor + "_touched");
  rows.count = fresh_name(output.tensor + "_ntouched");
  Expr width = var(axis.length);
  if (o.coo_segment) {
    rows.row_number = fresh_name(output.tensor + "_rows");
    workspaces.push_back({rows.row_number, ScalarType::Int64, int64(1), int64(0)});
    rows.row = load(rows.row_number, int64(0), ScalarType::Int64);
  }
  workspaces.push_back({rows.seen, ScalarType::Int64, width, int64(-1)});
  if (o.counting) return rows;
  workspaces.push_back({rows.list, ScalarType::Int64, width, int64(0)});
  workspaces.push_back({rows.values, o.value_type, width, std::make_shared<FloatImm>(0.0, "0", o.value_type)});
  return rows;
}

// The row then holds an entry, so the compressed levels above it open: the row's marker is its
// parent position, a cursor there, which a row that stays empty does not advance, and so shares
// with the next row without having marked anything.
Stmt scatter_into_row(const OutputContext& o, const RowWorkspace& rows, Expr value, std::vector<Stmt> open_levels,
                      Expr value_position) {
  const sparse::SparseBuffer& output = o.program.output();
  const sparse::Axis& axis = o.program.axes[output.axes.back()];
  Expr j = var(axis.index_var);
  Expr first_touch = binary(BinOp::Ne, load(rows.seen, j, ScalarType::Int64), rows.row);
  std::vector<Stmt> mark = {std::make_shared<Store>(rows.seen, j, rows.row, false)};
  mark.insert(mark.end(), open_levels.begin(), open_levels.end());
  if (o.counting) {
    // Counts sit one slot above the counted level's parent position (a COO segment's parent
    // is not the row).
    const sparse::Axis& counted = o.program.axes[output.axes[o.counted_level]];
    Expr parent = o.coo_segment ? value_position : rows.row;
    mark.push_back(std::make_shared<Store>(counted.pos, add(parent, int64(1)), cast(o.index_type, int64(1)), true));
    return std::make_shared<If>(first_touch, block(std::move(mark)), nullptr);
  }
  mark.push_back(std::make_shared<Store>(rows.list, var(rows.count), j, false));
  mark.push_back(std::make_shared<Assign>(rows.count, int64(1), true));
  mark.push_back(std::make_shared<Store>(rows.values, j, std::make_shared<FloatImm>(0.0, "0", o.value_type), false));
  return block({std::make_shared<If>(first_touch, block(std::move(mark)), nullptr),
                std::make_shared<Store>(rows.values, j, std::move(value), true)});
}

Stmt append_row(const OutputContext& o, const RowWorkspace& rows, Stmt row_loops, const FreshName& fresh_name) {
  Stmt next_row = o.coo_segment ? std::make_shared<Store>(rows.row_number, int64(0), int64(1), true) : nullptr;
  if (o.counting) return next_row ? block({row_loops, next_row}) : row_loops;
  const sparse::SparseBuffer& output = o.program.output();
  const sparse::Axis& axis = o.program.axes[output.axes.back()];
  int entries = entry_level(output.format);
  const std::string& cursor = o.positions[entries].name;
  std::string t = fresh_name("t"), j = fresh_name(axis.index_var + "_out");
  std::vector<Stmt> append_entry = {std::make_shared<Declare>(j, ScalarType::Int64, load(rows.list, var(t), ScalarType::Int64), false)};
  // A COO segment's levels above the last store the row's coordinates at every entry.
  for (size_t level = entries; level + 1 < output.axes.size(); ++level) {
    const sparse::Axis& stored = o.program.axes[output.axes[level]];
    append_entry.push_back(std::make_shared<Store>(stored.crd, var(cursor), cast(o.index_type, var(stored.index_var)), false));
  }
  append_entry.push_back(std::make_shared<Store>(axis.crd, var(cursor), cast(o.index_type, var(j)), false));
  append_entry.push_back(std::make_shared<Store>(output.values, var(cursor), load(rows.values, var(j), o.value_type), false));
  if (axis.kind == sparse::AxisKind::SparseFixed) append_entry = {within_ell_row(axis, rows.row, cursor, block(std::move(append_entry)))};
  append_entry.push_back(std::make_shared<Assign>(cursor, int64(1), true));
  std::vector<Stmt> stmts = {std::make_shared<Declare>(rows.count, ScalarType::Int64, int64(0), true), row_loops,
                             std::make_shared<Sort>(rows.list, int64(0), var(rows.count)),
                             std::make_shared<For>("append " + output.tensor, t, int64(0), var(rows.count),
                                                   block(std::move(append_entry)))};
  if (next_row) stmts.push_back(next_row);
  return block(std::move(stmts));
}

Stmt within_ell_row(const sparse::Axis& axis, Expr row, const std::string& cursor, Stmt slot) {
  Expr row_end = mul(add(std::move(row), int64(1)), int64(axis.width));
  return std::make_shared<If>(binary(BinOp::Lt, var(cursor), row_end), std::move(slot), nullptr);
}

}  // namespace spgen::lowering
