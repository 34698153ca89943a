#include "passes/schedule_loops.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ir/loop_ir_visitor.h"
#include "passes/cache_operands.h"
#include "passes/batch_entries.h"
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
      ok &= node.name != name || node.accumulate;
      IRVisitor::visit_assign(node);
    }
  } check;
  check.name = scalar;
  check.visit(body);
  return check.ok;
}

PrecomputeShape precompute_shape(const For& loop) {
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
  for (const Expr& bound : {summing->begin, summing->end})
    for (const std::string& name : vars_read(bound))
      if (shape.depends_on_loop.count(name)) {
        shape.refusal = "loop " + summing->label + " cannot move outside " + loop.label + ": its bounds depend on it";
        return shape;
      }
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
  prefetch_rows(func_, program_, config_, prefetch_ops_);
  batch_entries(func_, config_, batch_ops_);  // last: it copies the loop body, prefetches and all
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

}  // namespace spgen
