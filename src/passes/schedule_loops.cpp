#include "passes/schedule_loops.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "ir/loop_ir_visitor.h"
#include "passes/gpu_bindings.h"

namespace spgen {

using namespace loops;

namespace {

// Replaces the loop labelled `label` with what `rewrite` makes of it.
class RewriteLoop : public IRMutator {
 public:
  RewriteLoop(std::string label, std::function<Stmt(const For&)> rewrite)
      : label_(std::move(label)), rewrite_(std::move(rewrite)) {}

 protected:
  Stmt mutate_for(const For& node, const Stmt& self) override {
    if (node.label == label_) return rewrite_(node);
    return IRMutator::mutate_for(node, self);
  }

 private:
  std::string label_;
  std::function<Stmt(const For&)> rewrite_;
};

struct LoopInfo {
  const For* loop = nullptr;
  std::vector<const For*> enclosing;  // outermost first
};

class FindLoops : public IRVisitor {
 public:
  std::vector<LoopInfo> found;

 protected:
  void visit_for(const For& node) override {
    found.push_back({&node, stack_});
    stack_.push_back(&node);
    IRVisitor::visit_for(node);
    stack_.pop_back();
  }

 private:
  std::vector<const For*> stack_;
};

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

class Scheduler {
 public:
  Scheduler(LoweredFunc& func, const sparse::Program& program, const Config& config)
      : func_(func), program_(program), config_(config) {
    for (const sparse::Iterator& it : program.iteration.iterators) origin_[it.var] = it.var;
    for (const LoopInfo& info : loops())
      if (info.loop->var != info.loop->label) positional_.insert(info.loop->label);
  }

  // Every loop the op names exists in the nest.
  bool has_loops_named_by(const ScheduleOp& op) const {
    std::vector<std::string> named;
    std::visit([&](const auto& concrete) {
      using T = std::decay_t<decltype(concrete)>;
      if constexpr (std::is_same_v<T, ReorderOp>) named = concrete.order;
      else if constexpr (std::is_same_v<T, SplitOp>) named = {concrete.var};
      else named = {concrete.var};
    }, op.op);
    std::vector<LoopInfo> all = loops();
    for (const std::string& label : named)
      if (std::none_of(all.begin(), all.end(), [&](const LoopInfo& info) { return info.loop->label == label; }))
        return false;
    return true;
  }

  void apply(const ScheduleOp& op) {
    op_ = &op;
    std::visit([this](const auto& concrete) { apply_op(concrete); }, op.op);
  }

  void finish() {
    if (config_.target == Target::Cuda) {
      finish_gpu_bindings(func_, program_, config_, bindings_, {origin_, positional_});
      return;
    }
    if (!any_parallel_) return;
    // The zero fill runs before the loop nest; when the nest is parallel, so is the fill.
    for (const LoopInfo& info : loops())
      if (info.enclosing.empty() && info.loop->label.rfind("zero ", 0) == 0)
        set_annotations(info.loop->label, [](LoopAnnotations& a) { a.parallel = true; });
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { fail_schedule_op(config_, *op_, message); }

  std::vector<LoopInfo> loops() const {
    FindLoops finder;
    finder.visit(func_.body);
    return finder.found;
  }

  LoopInfo find(const std::string& label) const {
    std::vector<LoopInfo> all = loops();
    for (const LoopInfo& info : all)
      if (info.loop->label == label) return info;
    for (const std::string& merge : merge_loop_labels(func_.body))
      if (merge == label)
        fail("loop " + label + " co-iterates several sparse operands (a two-finger merge), which no schedule op "
             "can transform");
    std::string known;
    for (const LoopInfo& info : all)
      if (info.loop->label.rfind("zero ", 0) != 0) known += (known.empty() ? "" : ", ") + info.loop->label;
    fail("no loop named " + label + " (the loops are: " + known + ")");
  }

  bool is_reduction(const std::string& label) const {
    const std::string& var = origin_.at(label);
    for (const sparse::Iterator& it : program_.iteration.iterators)
      if (it.var == var) return it.is_reduction;
    return false;
  }

  void set_annotations(const std::string& label, const std::function<void(LoopAnnotations&)>& change) {
    func_.body = RewriteLoop(label, [&](const For& node) {
                   LoopAnnotations a = node.annotations;
                   change(a);
                   return std::make_shared<For>(node.label, node.var, node.begin, node.end, node.body, a);
                 }).mutate(func_.body);
  }

  std::string fresh(const std::string& wanted) {
    std::set<std::string> bound = names_bound_in(func_);
    std::string name = wanted;
    for (int k = 2; bound.count(name) || origin_.count(name); ++k) name = wanted + "_" + std::to_string(k);
    return name;
  }

  void check_new_name(const std::string& name) const {
    bool index_var = std::find(program_.index_vars.begin(), program_.index_vars.end(), name) != program_.index_vars.end();
    if (names_bound_in(func_).count(name) || index_var || origin_.count(name))
      fail("the name " + name + " is already in use; choose another");
  }

  // ---- split ----
  void apply_op(const SplitOp& split) {
    LoopInfo info = find(split.var);
    check_new_name(split.outer);
    check_new_name(split.inner);
    const For& loop = *info.loop;
    if (loop.annotations.parallel || loop.annotations.vectorized)
      fail("split " + split.var + " before making it parallel or vectorized");
    if (!loop.annotations.bind.empty()) fail("split " + split.var + " before binding it");
    std::vector<Stmt> prologue;
    Expr begin = loop.begin, extent = loop.end;
    // Bounds that read memory are computed once, before the split loops.
    if (!is_const_int(loop.begin, 0)) {
      std::string b = fresh(loop.var + "_begin"), e = fresh(loop.var + "_end");
      prologue.push_back(std::make_shared<Declare>(b, ScalarType::Int64, loop.begin, false));
      prologue.push_back(std::make_shared<Declare>(e, ScalarType::Int64, loop.end, false));
      begin = var(b);
      extent = sub(var(e), var(b));
    }
    Expr factor = int64(split.factor);
    Expr outer_extent = binary(BinOp::Div, add(extent, int64(split.factor - 1)), factor);
    Expr inner_extent = min(factor, sub(extent, mul(var(split.outer), factor)));
    Stmt body = block({std::make_shared<Declare>(loop.var, ScalarType::Int64,
                                                 add(add(begin, mul(var(split.outer), factor)), var(split.inner)), false),
                       loop.body});
    // What kept the loop sequential (cursors it advances) holds for both halves.
    LoopAnnotations sequential;
    sequential.sequential_reason = loop.annotations.sequential_reason;
    Stmt inner = std::make_shared<For>(split.inner, split.inner, int64(0), inner_extent, body, sequential);
    Stmt outer = std::make_shared<For>(split.outer, split.outer, int64(0), outer_extent, inner, sequential);
    prologue.push_back(outer);
    Stmt replacement = block(std::move(prologue));
    func_.body = RewriteLoop(split.var, [&](const For&) { return replacement; }).mutate(func_.body);
    origin_[split.outer] = origin_.at(split.var);
    origin_[split.inner] = origin_.at(split.var);
    if (positional_.count(split.var)) positional_.insert({split.outer, split.inner});
  }

  // ---- reorder of loops (stage II) ----
  // The named loops must lie on one chain of nested loops with only declarations between them;
  // declarations are re-placed as early as their inputs allow.
  void apply_op(const ReorderOp& reorder) {
    std::set<std::string> named(reorder.order.begin(), reorder.order.end());
    if (named.size() != reorder.order.size()) fail("a loop is named twice");
    for (const std::string& label : reorder.order) find(label);
    LoopInfo outermost = find(reorder.order.front());
    for (const std::string& label : reorder.order) {
      LoopInfo info = find(label);
      if (info.enclosing.size() < outermost.enclosing.size()) outermost = info;
    }
    // Walk the chain down from the outermost named loop.
    std::vector<const For*> chain;
    std::vector<Stmt> declares;
    const For* current = outermost.loop;
    size_t found = 0;
    for (;;) {
      chain.push_back(current);
      found += named.count(current->label);
      if (found == named.size()) break;
      const For* next = nullptr;
      std::vector<Stmt> stmts = current->body->kind == StmtKind::Block
                                    ? static_cast<const Block&>(*current->body).stmts
                                    : std::vector<Stmt>{current->body};
      for (const Stmt& s : stmts) {
        // A mutable declaration (a cursor, an accumulator) carries state through the loops below it:
        // a loop moved above it would restart that state on each of its iterations.
        if (s->kind == StmtKind::Declare && !next && static_cast<const Declare&>(*s).is_mutable)
          fail("the loops " + join(reorder.order) + " cannot be reordered: " + current->label + " declares " +
               static_cast<const Declare&>(*s).name + ", which the loops inside it advance");
        if (s->kind == StmtKind::Declare && !next) declares.push_back(s);
        else if (s->kind == StmtKind::For && !next) next = static_cast<const For*>(s.get());
        else if (s->kind != StmtKind::Comment)
          fail("the loops " + join(reorder.order) + " are not perfectly nested: " + current->label +
               " holds statements besides the loop inside it");
      }
      if (!next) fail("the loops " + join(reorder.order) + " are not nested in one another");
      current = next;
    }
    // The new chain: named loops take the slots of named loops, in the requested order.
    std::vector<const For*> reordered = chain;
    size_t next_named = 0;
    for (const For*& slot : reordered)
      if (named.count(slot->label)) slot = find(reorder.order[next_named++]).loop;
    // Rebuild inside out, then place declarations where their inputs are bound.
    // Bound outside the chain: everything except what the chain's loops bind (names are unique).
    std::set<std::string> inside = names_bound_in(outermost_stmt(chain.front()));
    std::set<std::string> bound;
    for (const std::string& name : names_bound_in(func_))
      if (!inside.count(name)) bound.insert(name);
    std::vector<std::vector<Stmt>> placed(reordered.size() + 1);  // before loop k; last: innermost
    std::vector<bool> done(declares.size(), false);
    for (size_t k = 0; k <= reordered.size(); ++k) {
      if (k > 0) bound.insert(reordered[k - 1]->var);
      bool progress = true;
      while (progress) {
        progress = false;
        for (size_t d = 0; d < declares.size(); ++d) {
          const auto& declare = static_cast<const Declare&>(*declares[d]);
          if (done[d] || !all_bound(declare.init, bound)) continue;
          placed[k].push_back(declares[d]);
          bound.insert(declare.name);
          done[d] = progress = true;
        }
      }
      if (k < reordered.size()) {
        for (const Expr& bound_expr : {reordered[k]->begin, reordered[k]->end})
          if (!all_bound(bound_expr, bound))
            fail("loop " + reordered[k]->label + " cannot move there: its bounds depend on a loop that would "
                 "then be inside it");
      }
    }
    Stmt inner = chain.back()->body;
    std::vector<Stmt> innermost = placed.back();
    innermost.push_back(inner);
    inner = block(std::move(innermost));
    for (size_t k = reordered.size(); k-- > 0;) {
      const For& loop = *reordered[k];
      inner = std::make_shared<For>(loop.label, loop.var, loop.begin, loop.end, inner, loop.annotations);
      if (k > 0 && !placed[k].empty()) {
        std::vector<Stmt> with_declares = placed[k];
        with_declares.push_back(inner);
        inner = block(std::move(with_declares));
      }
    }
    if (!placed[0].empty()) {
      std::vector<Stmt> with_declares = placed[0];
      with_declares.push_back(inner);
      inner = block(std::move(with_declares));
    }
    Stmt replacement = inner;
    func_.body = RewriteLoop(chain.front()->label, [&](const For&) { return replacement; }).mutate(func_.body);
  }

  // The loop as a statement node, found again in the tree (the chain holds raw pointers).
  Stmt outermost_stmt(const For* loop) const {
    struct Finder : IRVisitor {
      const For* wanted;
      Stmt found;
      void visit_block(const Block& node) override {
        for (const Stmt& s : node.stmts) {
          if (s.get() == wanted) found = s;
          visit(s);
        }
      }
      void visit_for(const For& node) override {
        if (node.body.get() == wanted) found = node.body;
        IRVisitor::visit_for(node);
      }
    } finder;
    finder.wanted = loop;
    finder.visit(func_.body);
    if (func_.body.get() == loop) return func_.body;
    return finder.found;
  }

  static bool all_bound(const Expr& expr, const std::set<std::string>& bound) {
    for (const std::string& name : vars_read(expr))
      if (!bound.count(name)) return false;
    return true;
  }

  static std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
    return out;
  }

  // ---- parallel ----
  bool has_workspace() const {
    struct Finder : IRVisitor {
      bool found = false;
      void visit_allocate(const Allocate& node) override {
        found = true;
        IRVisitor::visit_allocate(node);
      }
    } finder;
    finder.visit(func_.body);
    return finder.found;
  }

  void refuse_sequential(const LoopInfo& info, const char* action) const {
    if (!info.loop->annotations.sequential_reason.empty())
      fail("cannot " + std::string(action) + " " + info.loop->label + ": " + info.loop->annotations.sequential_reason);
  }

  void apply_op(const ParallelOp& parallel) {
    if (config_.target == Target::Cuda) fail("parallel is OpenMP's, for the cpu target: use bind on the cuda target");
    LoopInfo info = find(parallel.var);
    refuse_sequential(info, "parallelize");
    if (has_workspace() && !info.enclosing.empty())
      fail("cannot parallelize " + parallel.var + ": the kernel keeps a row workspace, which each thread owns for "
           "the outermost loop only; parallelize " + loops().front().loop->label + " instead");
    if (is_reduction(parallel.var))
      fail("cannot parallelize " + parallel.var + ": it iterates the reduction index " + origin_.at(parallel.var) +
           ", so threads would race on the same entries of " + program_.output().tensor +
           " (reorder so a spatial loop is outermost, or parallelize a spatial loop)");
    for (const For* e : info.enclosing)
      if (e->annotations.parallel) fail("loop " + parallel.var + " is inside parallel loop " + e->label + "; nested parallel loops are not supported");
    FindLoops inner;
    inner.visit(info.loop->body);
    for (const LoopInfo& i : inner.found)
      if (i.loop->annotations.parallel) fail("loop " + parallel.var + " contains parallel loop " + i.loop->label + "; nested parallel loops are not supported");
    if (info.loop->annotations.unroll) refuse_unroll_beside_openmp(parallel.var, "parallel");
    set_annotations(parallel.var, [&](LoopAnnotations& a) {
      a.parallel = true;
      a.schedule = static_cast<ParallelSchedule>(static_cast<int>(parallel.schedule));
      a.chunk = parallel.chunk;
    });
    any_parallel_ = true;
  }

  // ---- vectorize ----
  void apply_op(const VectorizeOp& vectorize) {
    if (config_.target == Target::Cuda) fail("vectorize is OpenMP's, for the cpu target: use bind on the cuda target");
    LoopInfo info = find(vectorize.var);
    refuse_sequential(info, "vectorize");
    if (contains_loop(info.loop->body)) fail("loop " + vectorize.var + " is not innermost; only innermost loops can be vectorized");
    std::vector<std::string> reductions = accumulated_scalars(*info.loop);
    if (is_reduction(vectorize.var) && writes_output(*info.loop))
      fail("cannot vectorize " + vectorize.var + ": it iterates the reduction index " + origin_.at(vectorize.var) +
           " and every iteration adds into the same entry of " + program_.output().tensor);
    if (info.loop->annotations.unroll) refuse_unroll_beside_openmp(vectorize.var, "vectorized");
    set_annotations(vectorize.var, [&](LoopAnnotations& a) {
      a.vectorized = true;
      a.simd_reductions = reductions;
    });
  }

  bool writes_output(const For& loop) const { return stores_into(loop.body, program_.output().values); }

  // Scalars declared outside the loop that its body adds into: a vectorized loop must reduce them.
  static std::vector<std::string> accumulated_scalars(const For& loop) { return scalars_assigned_outside(loop.body); }

  // ---- unroll ----
  // On the CPU an OpenMP loop cannot also carry GCC's unroll pragma (compilers reject the pair).
  void refuse_unroll_beside_openmp(const std::string& label, const char* openmp_kind) const {
    if (config_.target == Target::Cpu)
      fail("loop " + label + " cannot be both unrolled and " + openmp_kind +
           ": compilers reject an unroll pragma beside an OpenMP one; split it and unroll the inner loop");
  }

  void apply_op(const UnrollOp& unroll) {
    const LoopAnnotations& a = find(unroll.var).loop->annotations;
    if (a.parallel || a.vectorized) refuse_unroll_beside_openmp(unroll.var, a.parallel ? "parallel" : "vectorized");
    set_annotations(unroll.var, [&](LoopAnnotations& annotations) { annotations.unroll = unroll.factor; });
  }

  // ---- bind (cuda) ----
  // Only marks the loop: later ops may still reorder the nest, so finish() checks the bindings.
  void apply_op(const BindOp& bind) {
    if (config_.target != Target::Cuda) fail("bind is for the cuda target (set \"target\": \"cuda\")");
    LoopInfo info = find(bind.var);
    refuse_sequential(info, "bind");
    if (!info.loop->annotations.bind.empty())
      fail("loop " + bind.var + " is already bound to " + info.loop->annotations.bind);
    set_annotations(bind.var, [&](LoopAnnotations& a) {
      a.bind = bind.to;
      a.bind_reduction = bind.reduction;
    });
    bindings_.push_back({op_, bind.var});
  }

  LoweredFunc& func_;
  const sparse::Program& program_;
  const Config& config_;
  const ScheduleOp* op_ = nullptr;
  std::map<std::string, std::string> origin_;  // loop label → index variable it iterates
  std::set<std::string> positional_;           // loops over positions of a compressed level
  std::vector<GpuBinding> bindings_;           // bind ops, in the order they applied
  bool any_parallel_ = false;
};

}  // namespace

void schedule_loops(LoweredFunc& func, const sparse::Program& program, const Config& config,
                    const std::vector<ScheduleOp>& ops, bool skip_ops_on_missing_loops) {
  Scheduler scheduler(func, program, config);
  for (const ScheduleOp& op : ops)
    if (!skip_ops_on_missing_loops || scheduler.has_loops_named_by(op)) scheduler.apply(op);
  scheduler.finish();
}

}  // namespace spgen
