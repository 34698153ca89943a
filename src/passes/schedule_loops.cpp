#include "passes/schedule_loops.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ir/loop_ir_visitor.h"
#include "passes/batch_entries.h"
#include "passes/cache_operands.h"
#include "passes/fold_lane_arithmetic.h"
#include "passes/prefetch_rows.h"
#include "passes/gpu_bindings.h"
#include "passes/schedule/scheduler.h"

namespace spgen::scheduling {

// Labels of co-iteration (while) loops, which no schedule op can transform.
std::vector<std::string> merge_loop_labels(const Stmt& stmt) {
  struct Finder : IRVisitor {
    std::vector<std::string> labels;
    void visit_while(const While& node) override {
      labels.push_back(node.label);
      IRVisitor::visit_while(node);
    }
  } finder;
  finder.visit(stmt);
  return finder.labels;
}

bool has_store(const Stmt& stmt) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_store(const Store& node) override {
      found = true;
      IRVisitor::visit_store(node);
    }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

bool is_zero(const Expr& expr) {
  return (expr->kind == ExprKind::FloatImm && static_cast<const FloatImm&>(*expr).value == 0) || is_const_int(expr, 0);
}

// The body only adds into the scalar (`+=`) and never reads it otherwise.
bool only_accumulates(const Stmt& body, const std::string& scalar) {
  struct Check : IRVisitor {
    std::string name;
    bool ok = true;
    void visit_var(const Var& node) override { ok &= node.name != name; }
    void visit_assign(const Assign& node) override {
      ok &= node.name != name || (node.accumulate && node.combine == BinOp::Add);
      IRVisitor::visit_assign(node);
    }
  } check;
  check.name = scalar;
  check.visit(body);
  return check.ok;
}

PrecomputeShape precompute_shape(const For& loop, const Stmt* scope) {
  PrecomputeShape shape;
  shape.depends_on_loop = {loop.var};
  for (const Stmt& s : statements_of(loop.body)) {
    if (!shape.sum && s->kind == StmtKind::Declare && !static_cast<const Declare&>(*s).is_mutable) {
      shape.lets.push_back(s);
      shape.depends_on_loop.insert(static_cast<const Declare&>(*s).name);
    } else if (!shape.sum && s->kind == StmtKind::Declare) {
      shape.sum = static_cast<const Declare*>(s.get());
    } else if (shape.sum && !shape.summing && s->kind == StmtKind::For) {
      shape.summing = static_cast<const For*>(s.get());
    } else if (shape.summing) {
      shape.after.push_back(s);
    } else if (s->kind != StmtKind::Comment) {
      break;
    }
  }
  const Declare* sum = shape.sum;
  const For* summing = shape.summing;
  if (!sum || !summing || scalars_assigned_outside(summing->body) != std::vector<std::string>{sum->name} ||
      !only_accumulates(summing->body, sum->name) || !is_zero(sum->init)) {
    shape.refusal = "loop " + loop.label + " does not hold a sum over an inner loop into one scalar (its body must be: "
                    "declarations, the sum starting at zero, the loop that adds into it, then what uses it)";
    return shape;
  }
  if (has_store(summing->body)) {
    shape.refusal = "loop " + summing->label + " stores into memory besides the sum, so " + loop.label + " cannot move inside it";
    return shape;
  }
  for (const Stmt& s : shape.after)
    if (contains_loop(s) || !scalars_assigned_outside(s).empty()) {
      shape.refusal = "after its sum, loop " + loop.label + " holds loops or updates scalars; its sums can only be "
                      "written out by a plain loop of stores";
      return shape;
    }
  auto depends = [&](const Expr& e) {
    const std::vector<std::string> read = vars_read(e);
    return std::any_of(read.begin(), read.end(), [&](const std::string& name) { return shape.depends_on_loop.count(name) > 0; });
  };
  if (!depends(summing->begin) && !depends(summing->end)) return shape;
  // [b, b + n) with n independent of the loop: the summing loop can run [0, n) outside it, each
  // iteration finding its position at b + its count inside (ELL's slots across a group of rows).
  if (summing->end->kind == ExprKind::Binary) {
    const auto& end = static_cast<const Binary&>(*summing->end);
    if (end.op == BinOp::Add && same_expr(end.a, summing->begin) && !depends(end.b)) {
      shape.invariant_trips = end.b;
      return shape;
    }
  }
  if (scope && !depends(summing->begin)) {
    Expr end = fold_lane_arithmetic_at(*scope, summing, summing->end);
    if (!depends(end)) {
      shape.folded_end = end;
      return shape;
    }
  }
  shape.refusal = "loop " + summing->label + " cannot move outside " + loop.label + ": its bounds depend on it";
  shape.refused_for_bounds = true;
  return shape;
}

// Every loop the op names exists in the nest.
bool Scheduler::has_loops_named_by(const ScheduleOp& op) const {
  std::vector<std::string> named;
  std::visit([&](const auto& concrete) {
    using T = std::decay_t<decltype(concrete)>;
    if constexpr (std::is_same_v<T, ReorderOp>) named = concrete.order;
    else if constexpr (std::is_same_v<T, SplitOp>) named = {concrete.var};
    else if constexpr (std::is_same_v<T, FuseOp>) named = concrete.vars;
    else if constexpr (std::is_same_v<T, DecomposeOp>) named = {};
    else named = {concrete.var};
  }, op.op);
  std::vector<LoopInfo> all = loops();
  for (const std::string& label : named)
    if (std::none_of(all.begin(), all.end(), [&](const LoopInfo& info) { return info.loop->label == label; }))
      return false;
  return true;
}

void Scheduler::apply(const ScheduleOp& op) {
  op_ = &op;
  std::visit([this](const auto& concrete) { apply_op(concrete); }, op.op);
}

void Scheduler::finish() {
  if (config_.target == Target::Cuda) {
    finish_gpu_bindings(func_, program_, config_, bindings_, {origin_, positional_});
    cache_in_shared_memory(func_, program_, config_, cache_ops_);
    return;
  }
  cut_rows();  // first: the ops on the rows' body are done, and the passes below see both copies
  prefetch_rows(func_, program_, config_, prefetch_ops_);
  batch_entries(func_, config_, program_, batch_ops_);  // last: it copies the loop body, prefetches and all
  if (!any_parallel_) return;
  // The zero fill runs before the loop nest; when the nest is parallel, so is the fill.
  for (const LoopInfo& info : loops())
    if (info.enclosing.empty() && info.loop->label.rfind("zero ", 0) == 0)
      set_annotations(info.loop->label, [](LoopAnnotations& a) { a.parallel = true; });
}

void Scheduler::fail(const std::string& message) const { fail_schedule_op(config_, *op_, message); }

std::vector<LoopInfo> Scheduler::loops() const {
  FindLoops finder;
  finder.visit(func_.body);
  return finder.found;
}

LoopInfo Scheduler::find(const std::string& label) const {
  std::vector<LoopInfo> all = loops();
  // A sum's terms that sum over different indices, in one loop nest: the body's loops and an
  // added part's below the shared loops may iterate the same index variable (all of them, when
  // each part lists the entries of the output in a nest of its own).
  if (std::count_if(all.begin(), all.end(), [&](const LoopInfo& info) { return info.loop->label == label; }) > 1)
    fail("there are several loops over " + label + " (the terms of the sum that sum over different indices each " +
         "have theirs, inside the loops outside the first summed index, or in nests of their own where the output's "
         "entries are listed), which no schedule op can tell apart; " +
         "schedule the loops they share, or " + label + " where only one part has it");
  for (const LoopInfo& info : all)
    if (info.loop->label == label) {
      // The loops of a sum's rest beside a blocked operand (lower_to_loops) are no iterator of
      // the program, nor made by an op: they are not scheduled. Nor are those of a listed part
      // of a scoped sum that no blocked operand of another part splits (listed_part_program).
      if (!origin_.count(label))
        fail("loop " + label + " " +
             (program_.iteration.added_parts.empty()
                  ? unscheduled_nest_text()
                  : "iterates a part of the sum whose terms sum over different indices unsplit by the blocks of "
                    "another part's operand, a nest of its own that schedule ops do not transform") +
             "; schedule the loops of the main nest: " + main_loop_labels());
      return info;
    }
  for (const std::string& merge : merge_loop_labels(func_.body))
    if (merge == label)
      fail("loop " + label + " co-iterates several sparse operands (a two-finger merge), which no schedule op "
           "can transform");
  std::string known;
  for (const LoopInfo& info : all)
    if (info.loop->label.rfind("zero ", 0) != 0) known += (known.empty() ? "" : ", ") + info.loop->label;
  fail("no loop named " + label + " (the loops are: " + known + ")");
}

std::string Scheduler::unscheduled_nest_text() {
  return "iterates the terms outside a blocked operand's blocks, a nest of its own that schedule ops do not transform";
}

std::string Scheduler::main_loop_labels() const {
  std::string known;
  for (const LoopInfo& info : loops())
    if (origin_.count(info.loop->label)) known += (known.empty() ? "" : ", ") + info.loop->label;
  return known;
}

bool Scheduler::is_reduction(const std::string& label) const {
  const std::string& var = origin_.at(label);
  for (const sparse::Iterator& it : program_.iteration.iterators)
    if (it.var == var) return it.is_reduction;
  return false;
}

void Scheduler::set_annotations(const std::string& label, const std::function<void(LoopAnnotations&)>& change) {
  func_.body = RewriteLoop(label, [&](const For& node) {
                 LoopAnnotations a = node.annotations;
                 change(a);
                 return std::make_shared<For>(node.label, node.var, node.begin, node.end, node.body, a);
               }).mutate(func_.body);
}

std::string Scheduler::fresh(const std::string& wanted) {
  std::set<std::string> bound = names_bound_in(func_);
  std::string name = wanted;
  for (int k = 2; bound.count(name) || origin_.count(name); ++k) name = wanted + "_" + std::to_string(k);
  return name;
}

void Scheduler::check_new_name(const std::string& name) const {
  bool index_var = std::find(program_.index_vars.begin(), program_.index_vars.end(), name) != program_.index_vars.end();
  if (names_bound_in(func_).count(name) || index_var || origin_.count(name))
    fail("the name " + name + " is already in use; choose another");
}

}  // namespace spgen::scheduling

namespace spgen {

using namespace loops;
using scheduling::Scheduler;
using scheduling::precompute_shape;

int64_t tile_factor(const TileOp& tile, const Config& config) {
  auto fixed = config.sizes.find(tile.var);
  int64_t factor = tile.factor;
  if (fixed != config.sizes.end())
    while (factor > 4 && factor > fixed->second) factor /= 2;
  return factor;
}

std::vector<bool> schedule_loops(LoweredFunc& func, const sparse::Program& program, const Config& config,
                                 const std::vector<ScheduleOp>& ops, MissingLoops missing) {
  Scheduler scheduler(func, program, config);
  std::vector<bool> applied;
  for (const ScheduleOp& op : ops) {
    bool may_skip = missing == MissingLoops::Skip || (missing == MissingLoops::SkipUnlessPartNamed && op.part.empty());
    applied.push_back(!may_skip || scheduler.has_loops_named_by(op));
    if (applied.back()) scheduler.apply(op);
  }
  scheduler.finish();
  return applied;
}

std::string precompute_refusal(const loops::For& loop) { return precompute_shape(loop).refusal; }

std::string precompute_body_refusal(const loops::For& loop) {
  scheduling::PrecomputeShape shape = precompute_shape(loop);
  return shape.refused_for_bounds ? "" : shape.refusal;
}

std::string rows_positions(const sparse::Program& program, const loops::For& loop) {
  if (loop.var != loop.label || !loops::is_const_int(loop.begin, 0)) return "";
  for (const sparse::Axis& axis : program.axes) {
    if (axis.kind != sparse::AxisKind::SparseVariable || axis.level != 1 || !axis.unique || axis.pos.empty()) continue;
    const sparse::Axis& top = program.axes[static_cast<size_t>(program.buffer(axis.tensor).axes[0])];
    if (top.kind == sparse::AxisKind::DenseFixed && top.index_var == loop.label && top.block_part == BlockPart::None) return axis.pos;
  }
  return "";
}

std::string runs_coordinates(const sparse::Program& program, const loops::For& loop) {
  if (loop.var == loop.label || loop.annotations.walks.empty()) return "";
  for (const sparse::Axis& axis : program.axes)
    if (axis.tensor == loop.annotations.walks && axis.index_var == loop.label && !axis.unique &&
        axis.kind == sparse::AxisKind::SparseVariable && !axis.crd.empty())
      return axis.crd;
  return "";
}

MaskedSumOf masked_sum_of(const loops::For& loop) {
  std::map<std::string, Expr> lets;
  MaskedSumOf sum;
  for (const Stmt& s : statements_of(loop.body)) {
    if (s->kind == StmtKind::Comment) continue;
    if (s->kind == StmtKind::Declare && !static_cast<const Declare&>(*s).is_mutable) {
      const auto& d = static_cast<const Declare&>(*s);
      lets[d.name] = substitute(d.init, lets);
      continue;
    }
    if (s->kind == StmtKind::Assign && static_cast<const Assign&>(*s).accumulate && static_cast<const Assign&>(*s).combine == BinOp::Add &&
        !sum.value) {
      const auto& a = static_cast<const Assign&>(*s);
      sum.scalar = a.name;
      sum.value = substitute(a.value, lets);
      continue;
    }
    return {"", nullptr, "a masked tail sums one value into one scalar, and the body of loop " + loop.label + " does more"};
  }
  if (!sum.value) sum.refusal = "a masked tail needs a sum: loop " + loop.label + " adds into no scalar";
  return sum;
}

// The loop walks the positions of a compressed level under a dense root (csr's j: [pos[i],
// pos[i+1])), reads by position only that level's coordinates and its tensor's values, all
// pos[rows] long, and its body only adds one value into one scalar.
MaskedTailPlan plan_masked_tail(const loops::For& loop, const sparse::Program& program) {
  auto pos_load = [](const Expr& e) -> const Load* {
    const Expr& inner = e->kind == ExprKind::Cast ? static_cast<const Cast&>(*e).a : e;
    return inner->kind == ExprKind::Load ? static_cast<const Load*>(inner.get()) : nullptr;
  };
  const Load* begin = pos_load(loop.begin);
  const sparse::Axis* level = nullptr;
  for (const sparse::Axis& axis : program.axes)
    if (begin && !axis.pos.empty() && axis.pos == begin->buffer) level = &axis;
  const std::string shape = "a masked tail needs a loop over the entries of a row of a compressed level under a dense one "
                            "(csr's j)";
  if (!level || level->parent < 0 || !level->unique || level->block_part != BlockPart::None) return {shape, nullptr};
  const sparse::Axis& parent = program.axes.at(static_cast<size_t>(level->parent));
  const sparse::SparseBuffer& tensor = program.buffer(level->tensor);
  if (parent.parent >= 0 || parent.kind != sparse::AxisKind::DenseFixed ||
      level->level + 1 != static_cast<int>(tensor.format.levels.size()))
    return {shape, nullptr};
  MaskedSumOf sum = masked_sum_of(loop);
  if (!sum.refusal.empty()) return {sum.refusal, nullptr};
  // Past the row's end, the value may read only the level's coordinates and the tensor's values
  // by position (the arrays checked against the limit), and elsewhere only through coordinates
  // (x[crd[p]]: any stored coordinate is in range).
  struct Reads : IRVisitor {
    std::string var, crd, values, stray;
    int in_coordinates = 0;
    void visit_var(const Var& node) override {
      if (node.name == var && !in_coordinates && stray.empty()) stray = "its position " + var;
    }
    void visit_load(const Load& node) override {
      if (node.buffer == crd || node.buffer == values) {
        ++in_coordinates;
        IRVisitor::visit_load(node);
        --in_coordinates;
        return;
      }
      const std::string before = stray;
      IRVisitor::visit_load(node);
      if (before.empty() && !stray.empty()) stray = node.buffer;
    }
  } reads;
  reads.var = loop.var;
  reads.crd = level->crd;
  reads.values = tensor.values;
  reads.visit(sum.value);
  if (!reads.stray.empty())
    return {"a masked tail reads past the end of the row, where only " + level->crd + " and " + tensor.values + " (as long as " +
                level->tensor + "'s entries) may be read by position; loop " + loop.label + " also reads " + reads.stray,
            nullptr};
  return {"", cast(ScalarType::Int64, load(begin->buffer, var(parent.length), begin->type))};
}

}  // namespace spgen
