#include "passes/lower/open_levels.h"

#include <algorithm>

namespace spgen::lowering {

using namespace loops;

Stmt with_open_flags(const OutputContext& o, const std::vector<OpenLevel>& opened, int depth, Stmt body, Expr value_position) {
  if (std::none_of(opened.begin(), opened.end(), [&](const OpenLevel& open) { return open.depth == depth; }))
    return body;
  std::vector<Stmt> stmts;
  for (const OpenLevel& open : opened) {
    if (open.depth != depth || !open.fused_row.empty()) continue;
    if (!open.every_iteration)
      stmts.push_back(std::make_shared<Declare>(open.flag, ScalarType::Bool, std::make_shared<IntImm>(0, ScalarType::Bool), true));
    else if (!open.counted)
      stmts.push_back(store_open_coordinate(o, open.level, open.last_level, open.cursor));
  }
  stmts.push_back(body);
  for (const OpenLevel& open : opened) {
    if (open.depth != depth || !open.fused_row.empty()) continue;
    Expr entries = open.every_iteration ? int64(1) : cast(ScalarType::Int64, var(open.flag, ScalarType::Bool));
    if (!open.counted) {
      stmts.push_back(std::make_shared<Assign>(open.cursor, entries, true));
    } else {
      const sparse::Axis& axis = o.program.axes[o.program.output().axes[open.level]];
      Expr slot = add(value_position, int64(1));
      // Under a parent that is itself a cursor (the next free position), an empty last parent
      // leaves the cursor one past the counts; under a ragged level, a row is only as long as
      // its largest coordinate that holds entries, so a larger one is past its positions: only
      // a coordinate that holds entries counts.
      const std::vector<LevelPosition>& levels = o.positions;
      bool under_ragged = false;
      for (int above = 0; above < open.level; ++above)
        under_ragged |= o.program.axes[o.program.output().axes[above]].kind == sparse::AxisKind::DenseVariable;
      if (axis.kind == sparse::AxisKind::DenseVariable) {
        Stmt lengthen = store_ragged_length(o, axis, slot);
        stmts.push_back(open.every_iteration ? lengthen : std::make_shared<If>(var(open.flag, ScalarType::Bool), lengthen, nullptr));
      } else if (open.level > 0 && (levels[open.level - 1].is_cursor || under_ragged) && !open.every_iteration) {
        stmts.push_back(std::make_shared<If>(var(open.flag, ScalarType::Bool),
                                             std::make_shared<Store>(axis.pos, slot, cast(o.index_type, int64(1)), true), nullptr));
      } else {
        stmts.push_back(std::make_shared<Store>(axis.pos, slot, cast(o.index_type, entries), true));
      }
    }
  }
  return block(std::move(stmts));
}

std::vector<Stmt> open_levels(const OutputContext& o, const std::vector<OpenLevel>& opened) {
  std::vector<Stmt> stmts;
  for (const OpenLevel& open : opened) {
    if (open.every_iteration || !open.fused_row.empty()) continue;  // marked before its loop's body
    if (!o.counting) stmts.push_back(store_open_coordinate(o, open.level, open.last_level, open.cursor));
    stmts.push_back(std::make_shared<Assign>(open.flag, std::make_shared<IntImm>(1, ScalarType::Bool), false));
  }
  return stmts;
}

Stmt store_ragged_length(const OutputContext& o, const sparse::Axis& axis, Expr slot) {
  Expr length = binary(BinOp::Max, load(axis.pos, slot, o.index_type), cast(o.index_type, add(var(axis.index_var), int64(1))));
  return std::make_shared<Store>(axis.pos, slot, length, false);
}

Stmt store_open_coordinate(const OutputContext& o, int first_level, int last_level, const std::string& cursor) {
  std::vector<Stmt> stores;
  for (int level = first_level; level <= last_level; ++level) {
    const sparse::Axis& axis = o.program.axes[o.program.output().axes[level]];
    stores.push_back(std::make_shared<Store>(axis.crd, var(cursor), cast(o.index_type, var(axis.index_var)), false));
  }
  return stores.size() == 1 ? stores.front() : block(std::move(stores));
}

// A fused loop appending an output's rows in place (appends_rows_in_order): where an entry's row
// differs from the last entry's, the row level holds one more coordinate. Counting that level
// counts it; else its cursor moves on to it (after the first), and filling stores it there.
std::vector<Stmt> fused_row_changes(const OutputContext& o, const std::vector<OpenLevel>& opened) {
  std::vector<Stmt> stmts;
  const sparse::SparseBuffer& output = o.program.output();
  for (const OpenLevel& open : opened) {
    if (open.fused_row.empty()) continue;
    const sparse::Axis& axis = o.program.axes[output.axes[open.level]];
    const LevelPosition& position = o.positions[open.level];
    std::vector<Stmt> change;
    if (open.counted) {
      change.push_back(std::make_shared<Store>(axis.pos, add(var(position.name), int64(1)), cast(o.index_type, int64(1)), true));
    } else {
      change.push_back(std::make_shared<If>(binary(BinOp::Le, int64(0), var(open.fused_row)),
                                            std::make_shared<Assign>(open.cursor, int64(1), true), nullptr));
      if (!o.counting) change.push_back(store_open_coordinate(o, open.level, open.last_level, open.cursor));
    }
    change.push_back(std::make_shared<Assign>(open.fused_row, var(axis.index_var), false));
    stmts.push_back(std::make_shared<Comment>("a new row of " + output.tensor + " where the entry's row changes"));
    stmts.push_back(std::make_shared<If>(binary(BinOp::Ne, var(axis.index_var), var(open.fused_row)), block(std::move(change)), nullptr));
  }
  return stmts;
}

}  // namespace spgen::lowering
