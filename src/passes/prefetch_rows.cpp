#include "passes/prefetch_rows.h"

#include <algorithm>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

// The level whose positions `loop` walks: a compressed level of `var` right under a dense root
// level (csr's rows), the one whose coordinate array the loop's body reads at its position. Its
// positions run on across rows, up to pos[rows], which bounds the look-ahead.
const sparse::Axis* walked_level(const sparse::Program& program, const For& loop) {
  for (const sparse::Axis& axis : program.axes) {
    if (axis.index_var != loop.label || axis.kind != sparse::AxisKind::SparseVariable || axis.parent < 0) continue;
    const sparse::Axis& parent = program.axes[static_cast<size_t>(axis.parent)];
    if (parent.kind != sparse::AxisKind::DenseFixed || parent.parent >= 0) continue;
    struct Reads : IRVisitor {
      std::string crd, position;
      bool found = false;
      void visit_load(const Load& node) override {
        found |= node.buffer == crd && node.index->kind == ExprKind::Var && static_cast<const Var&>(*node.index).name == position;
        IRVisitor::visit_load(node);
      }
    } reads;
    reads.crd = axis.crd;
    reads.position = loop.var;
    reads.visit(loop.body);
    if (reads.found) return &axis;
  }
  return nullptr;
}

}  // namespace

std::string prefetch_refusal(const LoweredFunc& func, const sparse::Program& program, const std::string& tensor,
                             const std::string& var) {
  const sparse::SparseBuffer& rows = program.buffer(tensor);
  if (!rows.format.all_dense() || rows.format.levels.empty())
    return tensor + " is " + rows.format.name + ": prefetch fetches rows of a dense input";
  const std::string& row_var = rows.indices[static_cast<size_t>(rows.format.mode_order[0])];
  FindLoops finder;
  finder.visit(func.body);
  if (std::none_of(finder.found.begin(), finder.found.end(), [&](const LoopInfo& info) { return info.loop->label == var; }))
    return "no loop named " + var;
  for (const LoopInfo& info : finder.found) {
    const For& loop = *info.loop;
    if (loop.label != var) continue;
    if (loop.var == loop.label)
      return "loop " + var + " counts its coordinates: prefetch looks ahead along the stored coordinates of a sparse level";
    if (loop.label != row_var)
      return "loop " + var + " iterates " + loop.label + ", but the rows of " + tensor + " (its first level) are indexed by " + row_var;
    if (!walked_level(program, loop))
      return "loop " + var + " does not walk a compressed level under a dense root level (csr's rows), whose positions run on "
             "across rows";
  }
  return "";
}

void prefetch_rows(LoweredFunc& func, const sparse::Program& program, const Config& config,
                   const std::vector<const ScheduleOp*>& prefetch_ops) {
  for (const ScheduleOp* op : prefetch_ops) {
    const PrefetchOp& prefetch = std::get<PrefetchOp>(op->op);
    auto fail = [&](const std::string& message) { fail_schedule_op(config, *op, message); };
    if (const std::string refusal = prefetch_refusal(func, program, prefetch.tensor, prefetch.var); !refusal.empty()) fail(refusal);
    const sparse::SparseBuffer& rows = program.buffer(prefetch.tensor);
    std::set<std::string> used = names_bound_in(func);
    auto fresh = [&](const std::string& wanted) { return *used.insert(first_unused_name(used, wanted)).first; };
    const ScalarType index_type = program.index_type == IndexType::Int64 ? ScalarType::Int64 : ScalarType::Int32;
    const int64_t line = 64 / (program.value_type == ValueType::Float64 ? 8 : 4);  // elements per 64-byte cache line
    Expr extent = int64(1);  // a row: the product of the lengths of the levels below the first
    for (size_t l = 1; l < rows.axes.size(); ++l) extent = mul(extent, var(program.axes[static_cast<size_t>(rows.axes[l])].length));
    // Every loop of that name (a tile's and its remainder's walk the same level) looks ahead.
    func.body = RewriteLoop(prefetch.var, [&](const For& loop) -> Stmt {
                  const sparse::Axis* level = walked_level(program, loop);  // (prefetch_refusal checked it)
                  const sparse::Axis& root = program.axes[static_cast<size_t>(level->parent)];
                  // The row `distance` positions ahead, or the last stored one near the end.
                  Expr last = sub(cast(ScalarType::Int64, load(level->pos, var(root.length), index_type)), int64(1));
                  Expr ahead = min(add(var(loop.var), int64(prefetch.distance)), last);
                  const std::string row = fresh(loop.label + "_ahead");
                  const std::string q = fresh("q_" + prefetch.tensor);
                  Stmt fetch = std::make_shared<For>(
                      "prefetch " + prefetch.tensor, q, int64(0), binary(BinOp::Div, add(extent, int64(line - 1)), int64(line)),
                      std::make_shared<Prefetch>(rows.values, add(mul(var(row), extent), mul(var(q), int64(line)))));
                  Stmt lookahead = block(
                      {std::make_shared<Comment>("prefetch the row of " + prefetch.tensor + " read " +
                                                 std::to_string(prefetch.distance) + " stored entries ahead"),
                       std::make_shared<Declare>(row, ScalarType::Int64, cast(ScalarType::Int64, load(level->crd, ahead, index_type)), false),
                       fetch});
                  return std::make_shared<For>(loop.label, loop.var, loop.begin, loop.end, block({lookahead, loop.body}),
                                               loop.annotations);
                }).mutate(func.body);
  }
}

}  // namespace spgen
