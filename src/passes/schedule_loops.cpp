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

namespace spgen {

using namespace loops;

namespace {

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

// The body `precompute` turns into a register tile: declarations, the sum starting at zero, the
// loop that only adds into it (and stores nothing), then plain stores of it. `refusal` says why
// a loop's body is not of that shape (empty when it is).
struct PrecomputeShape {
  std::vector<Stmt> lets, after;
  const Declare* sum = nullptr;
  const For* summing = nullptr;
  std::set<std::string> depends_on_loop;  // the loop's variable and the declarations after it
  std::string refusal;
};

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

class Scheduler {
 public:
  Scheduler(LoweredFunc& func, const sparse::Program& program, const Config& config)
      : func_(func), program_(program), config_(config) {
    for (const sparse::Iterator& it : program.iteration.iterators) origin_[it.var] = it.var;
    // A fused loop races when either of its variables is summed: it stands for that one.
    for (const sparse::Fusion& f : program.iteration.fusions) origin_[f.into] = is_reduction(f.outer) ? f.outer : f.inner;
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

  void apply(const ScheduleOp& op) {
    op_ = &op;
    std::visit([this](const auto& concrete) { apply_op(concrete); }, op.op);
  }

  void finish() {
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

 private:
  [[noreturn]] void fail(const std::string& message) const { fail_schedule_op(config_, *op_, message); }

  std::vector<LoopInfo> loops() const {
    FindLoops finder;
    finder.visit(func_.body);
    return finder.found;
  }

  LoopInfo find(const std::string& label) const {
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

  static std::string unscheduled_nest_text() {
    return "iterates the terms outside a blocked operand's blocks, a nest of its own that schedule ops do not transform";
  }

  std::string main_loop_labels() const {
    std::string known;
    for (const LoopInfo& info : loops())
      if (origin_.count(info.loop->label)) known += (known.empty() ? "" : ", ") + info.loop->label;
    return known;
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

  // A decomposition splits the kernel into parts before any loop exists (lower.cpp).
  void apply_op(const DecomposeOp&) { fail("must be the first schedule op"); }

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
    // Only the whole outermost loop keeps per-thread lists of a listed output's entries.
    if (!loop.annotations.listed.keys.empty())
      sequential.sequential_reason = "it appends to the list of " + program_.output().tensor +
                                     "'s entries, which each thread keeps for the whole outermost loop only";
    sequential.repeats_coordinates = loop.annotations.repeats_coordinates;
    Stmt inner = std::make_shared<For>(split.inner, split.inner, int64(0), inner_extent, body, sequential);
    Stmt outer = std::make_shared<For>(split.outer, split.outer, int64(0), outer_extent, inner, sequential);
    prologue.push_back(outer);
    Stmt replacement = block(std::move(prologue));
    func_.body = RewriteLoop(split.var, [&](const For&) { return replacement; }).mutate(func_.body);
    origin_[split.outer] = origin_.at(split.var);
    origin_[split.inner] = origin_.at(split.var);
    if (positional_.count(split.var)) positional_.insert({split.outer, split.inner});
  }

  // ---- tile ----
  // The loop as whole groups of `factor` iterations (an inner loop with a constant trip count)
  // and a remainder loop for the iterations left over, which keeps the original body.
  std::vector<Stmt> tile_loop(const For& loop, int64_t factor, const std::string& outer, const std::string& inner,
                              const std::string& rest, const Stmt& main_body, const LoopAnnotations& inner_annotations) {
    std::vector<Stmt> stmts;
    Expr begin = loop.begin, extent = sub(loop.end, loop.begin);
    if (!is_const_int(loop.begin, 0)) {  // bounds that read memory are computed once
      std::string b = fresh(loop.var + "_begin"), e = fresh(loop.var + "_end");
      stmts.push_back(std::make_shared<Declare>(b, ScalarType::Int64, loop.begin, false));
      stmts.push_back(std::make_shared<Declare>(e, ScalarType::Int64, loop.end, false));
      begin = var(b);
      extent = sub(var(e), var(b));
    } else {
      extent = loop.end;
    }
    std::string groups = fresh(loop.label + "_groups");
    stmts.push_back(std::make_shared<Declare>(groups, ScalarType::Int64, binary(BinOp::Div, extent, int64(factor)), false));
    Expr first = is_const_int(begin, 0) ? mul(var(outer), int64(factor)) : add(begin, mul(var(outer), int64(factor)));
    Stmt body = block({std::make_shared<Declare>(loop.var, ScalarType::Int64, add(first, var(inner)), false), main_body});
    Stmt inner_loop = std::make_shared<For>(inner, inner, int64(0), int64(factor), body, inner_annotations);
    stmts.push_back(std::make_shared<For>(outer, outer, int64(0), var(groups), inner_loop));
    Expr rest_begin = is_const_int(begin, 0) ? mul(var(groups), int64(factor)) : add(begin, mul(var(groups), int64(factor)));
    stmts.push_back(std::make_shared<For>(rest, loop.var, rest_begin, is_const_int(loop.begin, 0) ? loop.end : add(begin, extent), loop.body));
    return stmts;
  }

  void apply_op(const TileOp& tile) {
    LoopInfo info = find(tile.var);
    check_new_name(tile.outer);
    check_new_name(tile.inner);
    const For& loop = *info.loop;
    if (loop.annotations.parallel || loop.annotations.vectorized)
      fail("tile " + tile.var + " before making it parallel or vectorized");
    if (!loop.annotations.bind.empty()) fail("tile " + tile.var + " before binding it");
    std::string rest = fresh(tile.var + "_rest");
    tile_rest_[tile.outer] = rest;
    Stmt replacement = block(tile_loop(loop, tile_factor(tile, config_), tile.outer, tile.inner, rest, loop.body, {}));
    func_.body = RewriteLoop(tile.var, [&](const For&) { return replacement; }).mutate(func_.body);
    for (const std::string& part : {tile.outer, tile.inner, rest}) {
      origin_[part] = origin_.at(tile.var);
      if (positional_.count(tile.var)) positional_.insert(part);
    }
  }

  // ---- precompute ----
  // for v in [0, T): { lets; var acc = 0; for r: acc += x; after(acc) }   becomes
  // allocate local acc_tile[T]: { for r: for v: { lets; acc_tile[v] += x }; for v_store at v: { lets; after(acc_tile[v]) } }
  // so the T sums stay in one small array across the loop r, which a compiler may keep in registers.
  void apply_op(const PrecomputeOp& precompute) {
    LoopInfo info = find(precompute.var);
    const For& loop = *info.loop;
    if (!is_const_int(loop.begin, 0) || loop.end->kind != ExprKind::IntImm)
      fail("loop " + precompute.var + " needs a constant trip count, so that its sums fit a local array: tile it first");
    int64_t trips = static_cast<const IntImm&>(*loop.end).value;
    if (trips > 1024) fail("loop " + precompute.var + " runs " + std::to_string(trips) + " times; a local array holds at most 1024 sums");
    if (is_reduction(precompute.var))
      fail("cannot precompute over " + precompute.var + ": it iterates the reduction index " + origin_.at(precompute.var));
    if (loop.annotations.parallel || loop.annotations.vectorized || !loop.annotations.bind.empty() || loop.annotations.unroll)
      fail("precompute " + precompute.var + " before scheduling it further");
    PrecomputeShape shape = precompute_shape(loop);
    if (!shape.refusal.empty()) fail(shape.refusal);
    const Declare* sum = shape.sum;
    const For* summing = shape.summing;
    const std::vector<Stmt>& lets = shape.lets;
    const std::vector<Stmt>& after = shape.after;
    const std::set<std::string>& depends_on_loop = shape.depends_on_loop;
    if (summing->annotations.parallel || summing->annotations.vectorized)
      fail("precompute " + precompute.var + " before scheduling loop " + summing->label);
    std::string tile = fresh(sum->name + "_tile");
    std::string store_label = fresh(precompute.var + "_store");
    struct IntoTile : IRMutator {
      std::string sum, tile, index;
      ScalarType type;
      Stmt mutate_assign(const Assign& node, const Stmt& self) override {
        if (node.name != sum) return self;
        return std::make_shared<Store>(tile, var(index), node.value, true);
      }
      Expr mutate_var(const Var& node, const Expr& self) override {
        return node.name == sum ? load(tile, var(index), type) : self;
      }
    } into_tile;
    into_tile.sum = sum->name;
    into_tile.tile = tile;
    into_tile.index = loop.var;
    into_tile.type = sum->type;
    // The summing loop's leading declarations that do not depend on `var` stay outside it (a
    // coordinate read inside a vectorized loop would become a gather).
    std::vector<Stmt> summed = statements_of(summing->body);
    std::vector<Stmt> hoisted;
    size_t first_kept = 0;
    for (; first_kept < summed.size() && summed[first_kept]->kind == StmtKind::Declare; ++first_kept) {
      const auto& let = static_cast<const Declare&>(*summed[first_kept]);
      bool invariant = std::none_of(depends_on_loop.begin(), depends_on_loop.end(),
                                    [&](const std::string& name) { return reads_var(let.init, name); });
      if (!invariant || let.is_mutable) break;
      hoisted.push_back(summed[first_kept]);
    }
    Stmt rest_of_body = block(std::vector<Stmt>(summed.begin() + static_cast<std::ptrdiff_t>(first_kept), summed.end()));
    std::vector<Stmt> inner = lets_read_by(lets, {rest_of_body});
    inner.push_back(into_tile.mutate(rest_of_body));
    hoisted.push_back(
        std::make_shared<For>(loop.label, loop.var, loop.begin, loop.end, block(std::move(inner)), loop.annotations));
    Stmt summing_outside = std::make_shared<For>(summing->label, summing->var, summing->begin, summing->end,
                                                 block(std::move(hoisted)), summing->annotations);
    std::vector<Stmt> uses = lets_read_by(lets, after);
    for (const Stmt& s : after) uses.push_back(into_tile.mutate(s));
    // Each iteration writes its own entries (the loop is spatial), so the stores vectorize.
    LoopAnnotations vectorized;
    vectorized.vectorized = true;
    Stmt store_loop = std::make_shared<For>(store_label, loop.var, loop.begin, loop.end, block(std::move(uses)), vectorized);
    Workspace array{tile, sum->type, int64(trips), zero_of(sum->type), true};
    Stmt replacement = std::make_shared<Allocate>(std::vector<Workspace>{array}, block({summing_outside, store_loop}));
    func_.body = RewriteLoop(precompute.var, [&](const For&) { return replacement; }).mutate(func_.body);
    origin_[store_label] = origin_.at(precompute.var);
    register_tile_loops_.insert({precompute.var, store_label});
  }

  // The declarations among `lets` that `stmts` read, directly or through later declarations.
  static std::vector<Stmt> lets_read_by(const std::vector<Stmt>& lets, const std::vector<Stmt>& stmts) {
    std::set<std::string> read;
    for (const Stmt& s : stmts)
      for (const std::string& name : names_read(s)) read.insert(name);
    std::vector<Stmt> kept;
    for (size_t k = lets.size(); k-- > 0;) {
      const auto& let = static_cast<const Declare&>(*lets[k]);
      if (!read.count(let.name)) continue;
      kept.insert(kept.begin(), lets[k]);
      for (const std::string& name : vars_read(let.init)) read.insert(name);
    }
    return kept;
  }

  static std::set<std::string> names_read(const Stmt& stmt) {
    struct Reader : IRVisitor {
      std::set<std::string> names;
      void visit_var(const Var& node) override { names.insert(node.name); }
    } reader;
    reader.visit(stmt);
    return reader.names;
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

  // ---- fuse (stage II: dense loops) ----
  // for a, for b  →  for ab in [0, extent_a * extent_b) with a = ab / extent_b, b = ab % extent_b,
  // so a parallel loop gets more iterations. Fusing sparse levels happens in stage I.
  void apply_op(const FuseOp& fuse) {
    if (config_.target == Target::Cuda) fail("fusing loops is supported on the cpu target only for now");
    LoopInfo outer_info = find(fuse.vars[0]);
    LoopInfo inner_info = find(fuse.vars[1]);
    check_new_name(fuse.into);
    const For& outer = *outer_info.loop;
    const For& inner = *inner_info.loop;
    for (const For* loop : {&outer, &inner})
      if (positional_.count(loop->label))
        fail("loop " + loop->label + " iterates the positions of a sparse level; fuse sparse levels by their index "
             "variables, before any other op (stage I)");
    for (const For* loop : {&outer, &inner}) {
      if (!loop->annotations.sequential_reason.empty())
        fail("cannot fuse " + loop->label + ": " + loop->annotations.sequential_reason);
      const LoopAnnotations& a = loop->annotations;
      if (a.parallel || a.vectorized || a.unroll || !a.bind.empty())
        fail("fuse " + outer.label + " and " + inner.label + " before making them parallel, vectorized, unrolled or bound");
      if (!is_const_int(loop->begin, 0)) fail("loop " + loop->label + " does not start at 0, which fuse needs");
    }
    std::vector<Stmt> stmts = statements_of(outer.body);
    std::vector<Stmt> declares;
    bool found = false;
    for (const Stmt& s : stmts) {
      if (s->kind == StmtKind::Comment) continue;
      if (!found && s->kind == StmtKind::Declare) declares.push_back(s);
      else if (!found && s.get() == &inner) found = true;
      else if (!found && as_for(s))
        fail("loop " + inner.label + " is not directly inside loop " + outer.label +
             " (fuse a loop with the loop just inside it)");
      else
        fail("the loops " + outer.label + ", " + inner.label + " are not perfectly nested: " + outer.label +
             " holds statements besides the loop inside it");
    }
    if (!found) fail("loop " + inner.label + " is not directly inside loop " + outer.label + " (fuse a loop with the loop just inside it)");
    std::set<std::string> inside = names_bound_in(outer.body);
    inside.insert(outer.var);
    for (const std::string& name : vars_read(inner.end))
      if (inside.count(name))
        fail("the extent of loop " + inner.label + " depends on loop " + outer.label + ", so they cannot be fused");
    std::vector<Stmt> body = {
        std::make_shared<Declare>(outer.var, ScalarType::Int64, binary(BinOp::Div, var(fuse.into), inner.end), false),
        std::make_shared<Declare>(inner.var, ScalarType::Int64, binary(BinOp::Mod, var(fuse.into), inner.end), false)};
    body.insert(body.end(), declares.begin(), declares.end());
    body.push_back(inner.body);
    Stmt fused = std::make_shared<For>(fuse.into, fuse.into, int64(0), mul(outer.end, inner.end), block(std::move(body)));
    // The fused loop races when either loop sums (parallel asks for a reduction then). (Decided
    // before the rewrite, which frees both loops that `outer` and `inner` refer to.)
    const std::string racing = is_reduction(inner.label) ? inner.label : outer.label;
    func_.body = RewriteLoop(outer.label, [&](const For&) { return fused; }).mutate(func_.body);
    origin_[fuse.into] = origin_.at(racing);
  }

  // ---- parallel ----
  bool has_workspace() const {
    struct Finder : IRVisitor {
      bool found = false;
      void visit_allocate(const Allocate& node) override {
        for (const Workspace& w : node.buffers) found |= !w.local;
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
    // Repeated coordinates race like a summed index: a reduction makes the loop parallel.
    const bool repeats = info.loop->annotations.repeats_coordinates;
    const bool lists = !info.loop->annotations.listed.keys.empty();
    if (lists && (!parallel.reduction.empty() || !parallel.balance.empty() || parallel.schedule != OmpSchedule::Static ||
                  parallel.chunk))
      fail("cannot parallelize " + parallel.var + " with " +
           (!parallel.reduction.empty() ? "a reduction"
            : !parallel.balance.empty() ? "a balance"
                                        : std::string("a schedule other than static without chunk")) +
           ": it lists the entries of " + program_.output().tensor +
           ", whose per-thread lists are joined in thread order, which is the loop's order under \"schedule\": \"static\" "
           "only (repeats then add up in the same order as sequentially); each thread's list needs no reduction");
    if (repeats && parallel.reduction.empty())
      fail("cannot parallelize " + parallel.var + ": " + info.loop->annotations.sequential_reason +
           " (add \"reduction\": \"atomic\" or \"privatize\")");
    if (!repeats) refuse_sequential(info, "parallelize");
    if (has_workspace() && !info.enclosing.empty())
      fail("cannot parallelize " + parallel.var + ": the kernel keeps a row workspace, which each thread owns for "
           "the outermost loop only; parallelize " + loops().front().loop->label + " instead");
    const std::string& output = program_.output().tensor;
    bool reduction = (is_reduction(parallel.var) || repeats) && !lists;
    if (reduction && parallel.reduction.empty())
      fail("cannot parallelize " + parallel.var + ": it iterates the reduction index " + origin_.at(parallel.var) +
           ", so threads would race on the same entries of " + output +
           " (add \"reduction\": \"atomic\" or \"privatize\", reorder so a spatial loop is outermost, or "
           "parallelize a spatial loop)");
    if (!reduction && !parallel.reduction.empty())
      fail("loop " + parallel.var + " iterates the spatial index " + origin_.at(parallel.var) +
           ": its iterations write different entries of " + output + ", so there is nothing to combine (drop \"reduction\")");
    bool stores_output = stores_into(info.loop->body, program_.output().values);
    if (!parallel.reduction.empty() && stores_output && !program_.output().format.all_dense())
      fail("a reduction combines additions into a dense output, but " + output + " is sparse (" +
           program_.output().format.name + "); make " + output + " dense, or parallelize a spatial loop");
    for (const For* e : info.enclosing)
      if (e->annotations.parallel) fail("loop " + parallel.var + " is inside parallel loop " + e->label + "; nested parallel loops are not supported");
    FindLoops inner;
    inner.visit(info.loop->body);
    for (const LoopInfo& i : inner.found)
      if (i.loop->annotations.parallel) fail("loop " + parallel.var + " contains parallel loop " + i.loop->label + "; nested parallel loops are not supported");
    if (info.loop->annotations.unroll) refuse_unroll_beside_openmp(parallel.var, "parallel");

    const For& loop = *info.loop;
    LoopAnnotations annotations = loop.annotations;
    annotations.parallel = true;
    annotations.schedule = static_cast<ParallelSchedule>(static_cast<int>(parallel.schedule));
    annotations.chunk = parallel.chunk;
    Stmt body = loop.body;
    std::string private_copy;
    // Per-loop state such as a fused loop's row cursor, set with `=`, which each thread must own.
    std::vector<std::string> state = scalars_assigned_outside(loop.body, /*overwrites_only=*/true);
    annotations.private_scalars = state;
    if (!parallel.reduction.empty()) {
      refuse_overwrites(loop);
      // Sums kept in scalars declared outside the loop: OpenMP's reduction clause gives each
      // thread its own and adds them up once, which is what either strategy asks for.
      std::vector<std::string> scalars = scalars_assigned_outside(loop.body);
      for (const std::string& scalar : scalars) {
        bool is_state = std::find(state.begin(), state.end(), scalar) != state.end();
        bool listed = std::find(annotations.simd_reductions.begin(), annotations.simd_reductions.end(), scalar) !=
                      annotations.simd_reductions.end();
        if (!is_state && !listed) annotations.simd_reductions.push_back(scalar);
      }
      if (parallel.reduction == "atomic") {
        body = RedirectOutputStores(program_.output().values, "", true).mutate(body);
      } else if (stores_output) {
        private_copy = fresh(output + "_private");
        body = RedirectOutputStores(program_.output().values, private_copy, false).mutate(body);
      }
    }
    Stmt replacement;
    if (parallel.balance.empty()) {
      replacement = std::make_shared<For>(loop.label, loop.var, loop.begin, loop.end, body, annotations);
    } else {
      replacement = balance_by_nonzeros(loop, body, annotations, parallel.parts ? parallel.parts : kDefaultParts);
    }
    if (!private_copy.empty()) replacement = privatized(replacement, private_copy);
    if (lists) replacement = listed_per_thread(*as_for(replacement));
    func_.body = RewriteLoop(parallel.var, [&](const For&) { return replacement; }).mutate(func_.body);
    any_parallel_ = true;
  }

  // Atomics and private copies only add: a loop that overwrites output entries cannot combine.
  void refuse_overwrites(const For& loop) const {
    struct Finder : IRVisitor {
      const std::string* buffer;
      bool overwrites = false;
      void visit_store(const Store& node) override { overwrites |= node.buffer == *buffer && !node.accumulate; }
    } finder;
    finder.buffer = &program_.output().values;
    finder.visit(loop.body);
    if (finder.overwrites)
      fail("loop " + loop.label + " overwrites entries of " + program_.output().tensor +
           " rather than adding into them, so no reduction can combine its iterations");
  }

  // The output's stores inside a reduced loop: atomic adds, or adds into a per-thread copy.
  class RedirectOutputStores : public IRMutator {
   public:
    RedirectOutputStores(std::string output, std::string target, bool atomic)
        : output_(std::move(output)), target_(std::move(target)), atomic_(atomic) {}

   protected:
    Stmt mutate_store(const Store& node, const Stmt& self) override {
      if (node.buffer != output_) return IRMutator::mutate_store(node, self);
      return std::make_shared<Store>(target_.empty() ? node.buffer : target_, node.index, node.value, true, atomic_);
    }

   private:
    std::string output_, target_;
    bool atomic_;
  };

  // A listed output's outermost loop in parallel: each thread appends to lists of its own (the
  // loop's stores into the output's lists redirected there), which then join the output's lists
  // one thread after another in thread order. A static schedule gives each thread one contiguous
  // range of the loop, in thread order, so the joined list is the sequential loop's.
  Stmt listed_per_thread(const For& loop) {
    const LoopAnnotations::ListedEntries& listed = loop.annotations.listed;
    std::string keys = fresh(listed.keys + "_thread"), count = fresh(listed.count + "_thread");
    std::string values = listed.values.empty() ? "" : fresh(listed.values + "_thread");
    ScalarType value_type = config_.value_type == ValueType::Float32 ? ScalarType::Float32 : ScalarType::Float64;
    struct ToThreadLists : IRMutator {
      const LoopAnnotations::ListedEntries* listed;
      std::string keys, values, count;
      Stmt mutate_store(const Store& node, const Stmt& self) override {
        if (node.buffer != listed->keys && (listed->values.empty() || node.buffer != listed->values))
          return IRMutator::mutate_store(node, self);
        return std::make_shared<Store>(node.buffer == listed->keys ? keys : values, load(count, int64(0), ScalarType::Int64),
                                       mutate(node.value), false);
      }
      Stmt mutate_assign(const Assign& node, const Stmt& self) override {
        if (node.name != listed->count) return IRMutator::mutate_assign(node, self);
        return std::make_shared<Store>(count, int64(0), node.value, true);
      }
    } redirect;
    redirect.listed = &listed;
    redirect.keys = keys;
    redirect.values = values;
    redirect.count = count;
    Stmt body = redirect.mutate(loop.body);
    std::string t = fresh("t");
    std::vector<Stmt> join = {std::make_shared<Store>(listed.keys, var(listed.count), load(keys, var(t), ScalarType::Int64), false)};
    if (!values.empty())
      join.push_back(std::make_shared<Store>(listed.values, var(listed.count), load(values, var(t), value_type), false));
    join.push_back(std::make_shared<Assign>(listed.count, int64(1), true));
    LoopAnnotations in_order;
    in_order.in_thread_order = true;
    std::vector<Workspace> lists = {{keys, ScalarType::Int64, int64(0), int64(0)}};
    lists.back().growable = true;
    if (!values.empty()) {
      lists.push_back({values, value_type, int64(0), std::make_shared<FloatImm>(0.0, "0", value_type)});
      lists.back().growable = true;
    }
    lists.push_back({count, ScalarType::Int64, int64(1), int64(0)});
    lists.back().local = true;  // a counter in the thread's frame
    return std::make_shared<Allocate>(
        lists, block({std::make_shared<For>(loop.label, loop.var, loop.begin, loop.end, body, loop.annotations),
                      std::make_shared<Comment>("join this thread's list to " + listed.keys + ", in thread order"),
                      std::make_shared<For>("join " + program_.output().tensor, t, int64(0), load(count, int64(0), ScalarType::Int64),
                                            block(std::move(join)), in_order)}));
  }

  // Each thread adds into its own zeroed copy of the (dense) output; when its share of the
  // loop is done, it adds the copy into the output with atomic adds, all threads at once.
  Stmt privatized(const Stmt& loop, const std::string& copy) {
    const sparse::SparseBuffer& output = program_.output();
    Expr size = int64(1);
    for (const std::string& index : output.indices) size = is_const_int(size, 1) ? var("dim_" + index) : mul(size, var("dim_" + index));
    ScalarType value_type = config_.value_type == ValueType::Float32 ? ScalarType::Float32 : ScalarType::Float64;
    std::string p = fresh("p");
    Stmt combine = std::make_shared<For>("combine " + output.tensor, p, int64(0), size,
                                         std::make_shared<Store>(output.values, var(p), load(copy, var(p), value_type),
                                                                 true, true));
    Workspace workspace{copy, value_type, size, std::make_shared<FloatImm>(0.0, "0", value_type)};
    return std::make_shared<Allocate>(std::vector<Workspace>{workspace},
                                      block({loop, std::make_shared<Comment>("add this thread's copy into " + output.tensor),
                                             combine}));
  }

  // ---- balance by nonzeros ----
  static constexpr int64_t kDefaultParts = 256;

  // A loop over the rows of a compressed level (its body reads pos[row]) becomes a loop over
  // `parts` ranges of rows holding equal numbers of nonzeros, found by binary search in pos, as
  // merge-based SpMV does. A static schedule then gives each thread a contiguous run of parts,
  // so equal shares of nonzeros, without knowing the thread count. Rows are not cut: a row
  // longer than a part lands in one part whole (exact, if less balanced).
  Stmt balance_by_nonzeros(const For& loop, const Stmt& body, LoopAnnotations annotations, int64_t parts) {
    if (loop.var != loop.label || !is_const_int(loop.begin, 0))
      fail("balance nonzeros needs a loop over rows: " + loop.label +
           " is a loop over positions or a split loop; balance the dense loop whose rows a compressed level stores");
    std::string pos = row_positions(loop);
    if (pos.empty())
      fail("balance nonzeros needs a loop over the rows of a compressed level, but no compressed level stores its "
           "entries under the rows of " + loop.label + " (for csr A(i,j), balance i)");
    ScalarType index_type = config_.index_type == IndexType::Int32 ? ScalarType::Int32 : ScalarType::Int64;
    auto pos_at = [&](Expr row) { return cast(ScalarType::Int64, load(pos, std::move(row), index_type)); };
    const std::string& row = loop.var;
    std::string part = fresh(row + "_part");
    Expr rows = loop.end;
    Expr first = pos_at(int64(0));
    Expr total = sub(pos_at(rows), first);
    std::vector<Stmt> stmts;
    // The first row whose entries start at or after nonzero `target`, in [0, rows].
    auto search = [&](const std::string& result, Expr target) {
      std::string high = fresh(result + "_high"), middle = fresh(result + "_mid");
      stmts.push_back(std::make_shared<Declare>(result, ScalarType::Int64, int64(0), true));
      stmts.push_back(std::make_shared<Declare>(high, ScalarType::Int64, rows, true));
      Stmt step = block({std::make_shared<Declare>(middle, ScalarType::Int64,
                                                   binary(BinOp::Div, add(var(result), var(high)), int64(2)), false),
                         std::make_shared<If>(binary(BinOp::Lt, pos_at(var(middle)), target),
                                              std::make_shared<Assign>(result, add(var(middle), int64(1)), false),
                                              std::make_shared<Assign>(high, var(middle), false))});
      stmts.push_back(std::make_shared<While>("search " + result, binary(BinOp::Lt, var(result), var(high)), step));
    };
    auto target = [&](Expr k) { return add(first, binary(BinOp::Div, mul(total, k), int64(parts))); };
    std::string begin = fresh(row + "_begin"), end = fresh(row + "_end");
    stmts.push_back(std::make_shared<Comment>("iterations [" + begin + ", " + end + ") hold share " + part + " of " +
                                              std::to_string(parts) + " equal shares of the nonzeros in " + pos));
    search(begin, target(var(part)));
    Expr next = add(var(part), int64(1));
    search(end, target(next));
    // The last part also takes the empty rows after the last nonzero.
    stmts.push_back(std::make_shared<If>(binary(BinOp::Eq, next, int64(parts)),
                                         std::make_shared<Assign>(end, rows, false), nullptr));
    LoopAnnotations serial = loop.annotations;
    stmts.push_back(std::make_shared<For>(loop.label, loop.var, var(begin), var(end), body, serial));
    origin_[part] = origin_.at(loop.label);
    return std::make_shared<For>(part, part, int64(0), int64(parts), block(std::move(stmts)), annotations);
  }

  // The pos array of a compressed level whose parent position is the loop's variable itself.
  std::string row_positions(const For& loop) const {
    std::set<std::string> pos_arrays;
    for (const Param& p : func_.params)
      if (p.kind == ParamKind::Pos && p.is_const) pos_arrays.insert(p.name);
    struct Finder : IRVisitor {
      const std::set<std::string>* pos;
      const std::string* row;
      std::string found;
      void visit_load(const Load& node) override {
        if (found.empty() && pos->count(node.buffer) && node.index->kind == ExprKind::Var &&
            static_cast<const Var&>(*node.index).name == *row)
          found = node.buffer;
        IRVisitor::visit_load(node);
      }
    } finder;
    finder.pos = &pos_arrays;
    finder.row = &loop.var;
    finder.visit(loop.body);
    return finder.found;
  }

  // ---- vectorize ----
  void apply_op(const VectorizeOp& vectorize) {
    LoopInfo info = find(vectorize.var);
    if (config_.target == Target::Cuda) check_cuda_vectorize(vectorize, *info.loop);
    refuse_sequential(info, "vectorize");
    if (contains_loop(info.loop->body)) fail("loop " + vectorize.var + " is not innermost; only innermost loops can be vectorized");
    std::vector<std::string> reductions = accumulated_scalars(*info.loop);
    if (is_reduction(vectorize.var) && writes_output(*info.loop))
      fail("cannot vectorize " + vectorize.var + ": it iterates the reduction index " + origin_.at(vectorize.var) +
           " and every iteration adds into the same entry of " + program_.output().tensor);
    if (info.loop->annotations.unroll) refuse_unroll_beside_openmp(vectorize.var, "vectorized");
    if (vectorize.lanes) {
      if (reductions.empty())
        fail("lanes keep partial sums of a reduction, and loop " + vectorize.var + " sums into no scalar");
      vectorize_in_lanes(*info.loop, vectorize.lanes, reductions);
      return;
    }
    set_annotations(vectorize.var, [&](LoopAnnotations& a) {
      a.vectorized = true;
      a.simd_reductions = reductions;
    });
  }

  // On the GPU a thread's vectors are float4 (double2) loads and stores: `vectorize` applies to
  // the loops of a register tile (`precompute`), which passes/explicit_vectors turns into them.
  void check_cuda_vectorize(const VectorizeOp& vectorize, const For& loop) const {
    if (vectorize.lanes) fail("lanes are for the cpu target: on the cuda target a reduction spreads over threads (bind)");
    if (!loop.annotations.bind.empty()) fail("loop " + vectorize.var + " is bound to " + loop.annotations.bind +
                                             ": a thread's vector runs inside its thread");
    int64_t lanes = program_.value_type == ValueType::Float64 ? 2 : 4;
    bool in_tile = register_tile_loops_.count(loop.label) && loop.end->kind == ExprKind::IntImm &&
                   static_cast<const IntImm&>(*loop.end).value % lanes == 0;
    if (!in_tile)
      fail("on the cuda target, vectorize makes " + std::string(lanes == 4 ? "float4" : "double2") +
           " loads of a register tile: loop " + vectorize.var + " must iterate one made by precompute, " +
           "with a trip count that is a multiple of " + std::to_string(lanes) + " (tile, then precompute it)");
  }

  // The loop's sums go into `lanes` partial sums per scalar: a main loop over whole groups of
  // lanes, whose vectorized inner loop adds lane l into partial sum l; the leftover iterations
  // run serially into the scalar; then the partial sums are added pairwise (a tree) into it.
  // This reassociates the float sum, as any vectorized reduction does, but leaves the compiler
  // no serial lane-by-lane epilogue.
  void vectorize_in_lanes(const For& loop, int64_t lanes, const std::vector<std::string>& scalars) {
    std::map<std::string, std::string> lane_arrays;
    std::vector<Workspace> arrays;
    for (const std::string& scalar : scalars) {
      const Declare* declared = find_declare(scalar);
      if (!declared) fail("cannot keep lanes for " + scalar + ": it is not declared in the kernel");
      if (!only_accumulates(loop.body, scalar))
        fail("cannot keep lanes for " + scalar + ": the loop body does more than add into it");
      lane_arrays[scalar] = fresh(scalar + "_lanes");
      arrays.push_back({lane_arrays[scalar], declared->type, int64(lanes), zero_of(declared->type), true});
    }
    std::string group = fresh(loop.label + "_group"), lane = fresh(loop.label + "_lane");
    std::string rest = fresh(loop.label + "_rest");
    struct IntoLanes : IRMutator {
      const std::map<std::string, std::string>* arrays;
      std::string lane;
      Stmt mutate_assign(const Assign& node, const Stmt& self) override {
        auto it = arrays->find(node.name);
        if (it == arrays->end()) return self;
        return std::make_shared<Store>(it->second, var(lane), node.value, true);
      }
    } into_lanes;
    into_lanes.arrays = &lane_arrays;
    into_lanes.lane = lane;
    LoopAnnotations vectorized;
    vectorized.vectorized = true;
    std::vector<Stmt> stmts = tile_loop(loop, lanes, group, lane, rest, into_lanes.mutate(loop.body), vectorized);
    // Then the partial sums are added into the scalar, pairwise (a tree, in vector registers).
    for (const auto& [scalar, array] : lane_arrays)
      stmts.push_back(std::make_shared<Assign>(scalar, std::make_shared<LaneSum>(array, lanes, find_declare(scalar)->type), true));
    Stmt replacement = std::make_shared<Allocate>(std::move(arrays), block(std::move(stmts)));
    // (`loop` lies in the body that the rewrite replaces: read its label before.)
    const std::string label = loop.label, origin = origin_.at(label);
    func_.body = RewriteLoop(label, [&](const For&) { return replacement; }).mutate(func_.body);
    origin_[group] = origin_[lane] = origin_[rest] = origin;
  }

  const Declare* find_declare(const std::string& name) const {
    struct Finder : IRVisitor {
      std::string name;
      const Declare* found = nullptr;
      void visit_declare(const Declare& node) override {
        if (node.name == name) found = &node;
        IRVisitor::visit_declare(node);
      }
    } finder;
    finder.name = name;
    finder.visit(func_.body);
    return finder.found;
  }

  static Expr zero_of(ScalarType type) { return std::make_shared<FloatImm>(0.0, "0", type); }

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
    // Repeated coordinates (COO rows) race like a summed index: atomics make the loop bindable.
    if (info.loop->annotations.repeats_coordinates && bind.reduction != "atomic")
      fail("cannot bind " + bind.var + ": " + info.loop->annotations.sequential_reason + " (add \"reduction\": \"atomic\")");
    if (!info.loop->annotations.repeats_coordinates && !info.loop->annotations.sequential_reason.empty() && has_workspace()) {
      // A row workspace belongs to one thread, so only whole rows can be spread over threads.
      std::string rows;
      for (const For* outer : info.enclosing)
        if (outer->annotations.sequential_reason.empty()) rows += (rows.empty() ? "" : ", ") + outer->label;
      fail("cannot bind " + bind.var + ": " + info.loop->annotations.sequential_reason +
           ", which one GPU thread owns for whole rows; bind the loops over the rows instead (" + rows +
           "), a thread per row");
    }
    if (!info.loop->annotations.repeats_coordinates) refuse_sequential(info, "bind");
    if (!info.loop->annotations.bind.empty())
      fail("loop " + bind.var + " is already bound to " + info.loop->annotations.bind);
    auto spread = [&](LoopAnnotations& a) {
      a.bind = bind.to;
      a.bind_reduction = bind.reduction;
    };
    set_annotations(bind.var, spread);
    // A tile's remainder loop runs after its main loops, over the last iterations: the same
    // threads take them. A sum combined after the main loops would miss them, though.
    std::string remainder;
    if (auto rest = tile_rest_.find(bind.var); rest != tile_rest_.end() && has_loop(rest->second)) {
      if (bind.reduction == "shuffle" || bind.reduction == "shared")
        fail("loop " + bind.var + " is a tile's main loop, and its remainder loop " + rest->second +
             " adds into the same sums after the " + bind.reduction + " reduction would combine them (split the loop "
             "instead of tiling it)");
      remainder = rest->second;
      set_annotations(remainder, spread);
    }
    bindings_.push_back({op_, bind.var, remainder});
  }

  bool has_loop(const std::string& label) const {
    std::vector<LoopInfo> all = loops();
    return std::any_of(all.begin(), all.end(), [&](const LoopInfo& info) { return info.loop->label == label; });
  }

  // ---- cache (cuda) ----
  // Applied by finish(), once the nest and its bindings are final.
  void apply_op(const CacheOp& cache) {
    if (config_.target != Target::Cuda) fail("cache keeps a tile in GPU shared memory: it is for the cuda target");
    find(cache.var);
    cache_ops_.push_back(op_);
  }

  // ---- prefetch (cpu) ----
  // Applied by finish(), on the final nest.
  void apply_op(const PrefetchOp&) {
    if (config_.target != Target::Cpu) fail("prefetch is for the cpu target (on cuda, cache a tile in shared memory)");
    prefetch_ops_.push_back(op_);  // (every loop of that name: a tile's and its remainder's)
  }

  // ---- batch (cpu) ----
  // Applied by finish(), on the final nest.
  void apply_op(const BatchOp&) {
    if (config_.target != Target::Cpu) fail("batch is for the cpu target");
    batch_ops_.push_back(op_);
  }

  LoweredFunc& func_;
  const sparse::Program& program_;
  const Config& config_;
  const ScheduleOp* op_ = nullptr;
  std::map<std::string, std::string> origin_;  // loop label → index variable it iterates
  std::set<std::string> positional_;           // loops over positions of a compressed level
  std::vector<GpuBinding> bindings_;           // bind ops, in the order they applied
  std::vector<const ScheduleOp*> cache_ops_;
  std::vector<const ScheduleOp*> prefetch_ops_;
  std::vector<const ScheduleOp*> batch_ops_;
  std::set<std::string> register_tile_loops_;  // the loops over a precompute's local array
  std::map<std::string, std::string> tile_rest_;  // a tile's outer loop → its remainder loop
  bool any_parallel_ = false;
};

}  // namespace

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
