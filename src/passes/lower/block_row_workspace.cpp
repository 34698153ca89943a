#include "passes/lower/block_row_workspace.h"

#include "passes/lower/level_access.h"
#include "passes/lower_to_loops.h"
#include "support/diagnostics.h"

namespace spgen::lowering {

using namespace loops;

namespace {

// The entry's place in its block: the dense levels below the gathered one, flattened.
Expr offset_in_block(const sparse::Program& program) {
  const sparse::SparseBuffer& output = program.output();
  Expr offset = int64(0);
  for (size_t level = output.gathered_level + 1; level < output.axes.size(); ++level) {
    const sparse::Axis& axis = program.axes[output.axes[level]];
    offset = add(mul(offset, axis_length(axis)), level_coordinate(axis));
  }
  return offset;
}

}  // namespace

std::string plan_block_row_workspace(const OutputContext& o, const FreshName& fresh_name, std::vector<Workspace>& workspaces,
                              const RowWorkspace* owner, RowWorkspace& rows, BlockRows& blocks) {
  const sparse::Program& program = o.program;
  const sparse::SparseBuffer& output = program.output();
  const std::vector<LevelPosition>& levels = o.positions;
  const int gathered = output.gathered_level;
  rows.row_depth = gathered > 0 ? levels[gathered - 1].ready_depth : -1;
  rows.row = gathered > 0 ? var(levels[gathered - 1].name) : int64(0);
  if (std::string why = summed_outside_rows(o, rows.row_depth, "block row"); !why.empty()) return why;
  const sparse::Axis& key_axis = program.axes[output.axes[gathered]];
  // r*c as one constant where the levels below are all in-block ones.
  int64_t constant_size = 1;
  blocks.size = int64(1);
  for (size_t level = gathered + 1; level < output.axes.size(); ++level) {
    const sparse::Axis& axis = program.axes[output.axes[level]];
    if (axis.block_part == BlockPart::InBlock) constant_size *= axis.block;
    else blocks.size = mul(blocks.size, axis_length(axis));
  }
  blocks.size = mul(blocks.size, int64(constant_size));
  Expr keys = axis_length(key_axis);
  blocks.offset = fresh_name("z");
  blocks.key = fresh_name(key_axis.mode_var + (key_axis.block_part == BlockPart::Block ? "_blk" : "_key"));
  if (owner) {  // a rest inside the owner's block row: its workspace
    rows.values = owner->values;
    rows.seen = owner->seen;
    rows.list = owner->list;
    rows.count = owner->count;
    return "";
  }
  rows.values = fresh_name(output.tensor + "_blocks");
  rows.seen = fresh_name(output.tensor + "_seen");
  rows.list = fresh_name(output.tensor + "_touched");
  rows.count = fresh_name(output.tensor + "_ntouched");
  workspaces.push_back({rows.seen, ScalarType::Int64, keys, int64(-1)});
  if (o.counting) return "";
  workspaces.push_back({rows.list, ScalarType::Int64, keys, int64(0)});
  workspaces.push_back({rows.values, o.value_type, mul(keys, blocks.size), std::make_shared<FloatImm>(0.0, "0", o.value_type)});
  return "";
}

// The block row then holds a block, so the compressed levels above open.
Stmt scatter_into_block(const OutputContext& o, const RowWorkspace& rows, const BlockRows& blocks, Expr value,
                        std::vector<Stmt> open_levels) {
  const sparse::SparseBuffer& output = o.program.output();
  const sparse::Axis& key_axis = o.program.axes[output.axes[output.gathered_level]];
  Expr key = var(blocks.key);
  std::vector<Stmt> stmts = {std::make_shared<Declare>(blocks.key, ScalarType::Int64, level_coordinate(key_axis), false)};
  Expr first_touch = binary(BinOp::Ne, load(rows.seen, key, ScalarType::Int64), rows.row);
  std::vector<Stmt> mark = {std::make_shared<Store>(rows.seen, key, rows.row, false)};
  mark.insert(mark.end(), open_levels.begin(), open_levels.end());
  if (o.counting) {
    mark.push_back(std::make_shared<Store>(key_axis.pos, add(rows.row, int64(1)), cast(o.index_type, int64(1)), true));
    stmts.push_back(std::make_shared<If>(first_touch, block(std::move(mark)), nullptr));
    return block(std::move(stmts));
  }
  const std::string& z = blocks.offset;
  Expr block_start = mul(key, blocks.size);
  mark.push_back(std::make_shared<Store>(rows.list, var(rows.count), key, false));
  mark.push_back(std::make_shared<Assign>(rows.count, int64(1), true));
  mark.push_back(std::make_shared<For>("zero " + output.tensor + " block", z, int64(0), blocks.size,
                                       std::make_shared<Store>(rows.values, add(block_start, var(z)),
                                                               std::make_shared<FloatImm>(0.0, "0", o.value_type), false)));
  stmts.push_back(std::make_shared<If>(first_touch, block(std::move(mark)), nullptr));
  stmts.push_back(std::make_shared<Store>(rows.values, add(block_start, offset_in_block(o.program)), std::move(value), true));
  return block(std::move(stmts));
}

Stmt append_block_row(const OutputContext& o, const RowWorkspace& rows, const BlockRows& blocks, Stmt row_loops, const std::string& why,
                      const FreshName& fresh_name) {
  const sparse::SparseBuffer& output = o.program.output();
  const sparse::Axis& key_axis = o.program.axes[output.axes[output.gathered_level]];
  std::string what = "gather each block row of " + output.tensor + " by " + level_coordinate_prose(key_axis) +
                     " in a workspace of whole blocks (" + why + ")";
  if (o.counting) return block({std::make_shared<Comment>(what + "; count them"), row_loops});
  const std::string& cursor = o.positions[output.gathered_level].name;
  std::string t = fresh_name("t"), key = fresh_name(blocks.key + "_out");
  const std::string& z = blocks.offset;
  Expr from = mul(var(key), blocks.size), to = mul(var(cursor), blocks.size);
  std::vector<Stmt> append_block = {
      std::make_shared<Declare>(key, ScalarType::Int64, load(rows.list, var(t), ScalarType::Int64), false),
      std::make_shared<Store>(key_axis.crd, var(cursor), cast(o.index_type, var(key)), false),
      std::make_shared<For>("copy " + output.tensor + " block", z, int64(0), blocks.size,
                            std::make_shared<Store>(output.values, add(to, var(z)), load(rows.values, add(from, var(z)), o.value_type),
                                                    false)),
      std::make_shared<Assign>(cursor, int64(1), true)};
  return block({std::make_shared<Comment>(what + "; append them sorted"),
                std::make_shared<Declare>(rows.count, ScalarType::Int64, int64(0), true), row_loops,
                std::make_shared<Sort>(rows.list, int64(0), var(rows.count)),
                std::make_shared<For>("append " + output.tensor, t, int64(0), var(rows.count), block(std::move(append_block)))});
}

}  // namespace spgen::lowering
