#include "passes/schedule/scheduler.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "support/text.h"

namespace spgen::scheduling {

// A decomposition splits the kernel into parts before any loop exists (lower.cpp).
void Scheduler::apply_op(const DecomposeOp&) { fail("must be the first schedule op"); }

// ---- split ----
void Scheduler::apply_op(const SplitOp& split) {
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
  const LoopAnnotations sequential = kept_sequential(loop);
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
LoopAnnotations Scheduler::kept_sequential(const For& loop) const {
  LoopAnnotations sequential;
  sequential.sequential_reason = loop.annotations.sequential_reason;
  // Only the whole outermost loop keeps per-thread lists of a listed output's entries.
  if (!loop.annotations.listed.keys.empty())
    sequential.sequential_reason = "it appends to the list of " + program_.output().tensor +
                                   "'s entries, which each thread keeps for the whole outermost loop only";
  sequential.repeats_coordinates = loop.annotations.repeats_coordinates;
  return sequential;
}

std::vector<Stmt> Scheduler::tile_loop(const For& loop, int64_t factor, const std::string& outer, const std::string& inner,
                                       const std::string& rest, const Stmt& main_body, const LoopAnnotations& inner_annotations,
                                       TiledBounds* bounds, const LoopAnnotations& outer_annotations) {
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
  if (bounds) *bounds = {begin, extent, static_cast<int>(stmts.size())};
  std::string groups = fresh(loop.label + "_groups");
  stmts.push_back(std::make_shared<Declare>(groups, ScalarType::Int64, binary(BinOp::Div, extent, int64(factor)), false));
  Expr first = is_const_int(begin, 0) ? mul(var(outer), int64(factor)) : add(begin, mul(var(outer), int64(factor)));
  Stmt body = block({std::make_shared<Declare>(loop.var, ScalarType::Int64, add(first, var(inner)), false), main_body});
  Stmt inner_loop = std::make_shared<For>(inner, inner, int64(0), int64(factor), body, inner_annotations);
  stmts.push_back(std::make_shared<For>(outer, outer, int64(0), var(groups), inner_loop, outer_annotations));
  Expr rest_begin = is_const_int(begin, 0) ? mul(var(groups), int64(factor)) : add(begin, mul(var(groups), int64(factor)));
  stmts.push_back(std::make_shared<For>(rest, loop.var, rest_begin, is_const_int(loop.begin, 0) ? loop.end : add(begin, extent), loop.body,
                                        outer_annotations));
  return stmts;
}

void Scheduler::apply_op(const TileOp& tile) {
  LoopInfo info = find(tile.var);
  check_new_name(tile.outer);
  check_new_name(tile.inner);
  const For& loop = *info.loop;
  if (loop.annotations.parallel || loop.annotations.vectorized)
    fail("tile " + tile.var + " before making it parallel or vectorized");
  if (!loop.annotations.bind.empty()) fail("tile " + tile.var + " before binding it");
  std::string rest = fresh(tile.var + "_rest");
  tile_rest_[tile.outer] = rest;
  // What kept the loop sequential holds for the tile's loops too (a parallel outer loop over
  // hyb's widest bucket, whose cut rows repeat, raced before).
  const LoopAnnotations sequential = kept_sequential(loop);
  Stmt replacement =
      block(tile_loop(loop, tile_factor(tile, config_), tile.outer, tile.inner, rest, loop.body, sequential, nullptr, sequential));
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
void Scheduler::apply_op(const PrecomputeOp& precompute) {
  LoopInfo info = find(precompute.var);
  const For& loop = *info.loop;
  if (!is_const_int(loop.begin, 0) || loop.end->kind != ExprKind::IntImm)
    fail("loop " + precompute.var + " needs a constant trip count, so that its sums fit a local array: tile it first");
  int64_t trips = static_cast<const IntImm&>(*loop.end).value;
  if (trips > 1024) fail("loop " + precompute.var + " runs " + std::to_string(trips) + " times; a local array holds at most 1024 sums");
  if (is_reduction(precompute.var))
    fail("cannot precompute over " + precompute.var + ": it iterates the reduction index " + origin_.at(precompute.var));
  if (loop.annotations.scheduled())
    fail("precompute " + precompute.var + " before scheduling it further");
  PrecomputeShape shape = precompute_shape(loop, &func_.body);
  if (!shape.refusal.empty()) fail(shape.refusal);
  const Declare* sum = shape.sum;
  const For* summing = shape.summing;
  // A range that starts per iteration but runs a fixed count: counted from 0, the position
  // declared inside ([p * W, p * W + W) becomes [0, W) with pA = p * W + slot).
  std::shared_ptr<const For> counted;
  if (shape.invariant_trips) {
    const std::string slot = fresh(summing->var + "_slot");
    counted = std::make_shared<For>(
        summing->label, slot, int64(0), shape.invariant_trips,
        block({std::make_shared<Declare>(summing->var, ScalarType::Int64, add(summing->begin, var(slot)), false), summing->body}),
        summing->annotations);
    summing = counted.get();
  } else if (shape.folded_end) {
    counted = std::make_shared<For>(summing->label, summing->var, summing->begin, shape.folded_end, summing->body, summing->annotations);
    summing = counted.get();
  }
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
      if (node.combine != BinOp::Add) throw std::logic_error("precompute of a max or min reduction (refused before scheduling)");
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
  // Inside the summing loop each iteration adds into its own entry of the local array, even
  // where the loop's coordinates repeat (that matters to the stores below only).
  LoopAnnotations moved = loop.annotations;
  if (moved.repeats_coordinates) {
    moved.repeats_coordinates = false;
    moved.sequential_reason.clear();
  }
  hoisted.push_back(std::make_shared<For>(loop.label, loop.var, loop.begin, loop.end, block(std::move(inner)), moved));
  Stmt summing_outside = std::make_shared<For>(summing->label, summing->var, summing->begin, summing->end,
                                               block(std::move(hoisted)), summing->annotations);
  std::vector<Stmt> uses = lets_read_by(lets, after);
  for (const Stmt& s : after) uses.push_back(into_tile.mutate(s));
  // Each iteration writes its own entries (the loop is spatial), so the stores vectorize; unless
  // its coordinates repeat (hyb's widest bucket, whose cut rows add into one output row): then
  // one lane's add would overwrite another's, and the stores stay one by one. Stores through
  // indices read from memory (a listed row's y[crd0[p]]) would be a scatter, slower than one by
  // one (cora, hyb interleaved by 16: 0.0098 ms scattered, 0.0091 ms one by one).
  struct Scatters : IRVisitor {
    bool found = false;
    std::set<std::string> loaded;  // declared from memory, directly or through others
    bool reads_memory(const Expr& e) const {
      struct Reads : IRVisitor {
        const std::set<std::string>* loaded;
        bool found = false;
        void visit_load(const Load&) override { found = true; }
        void visit_var(const Var& node) override { found |= loaded->count(node.name) > 0; }
      } reads;
      reads.loaded = &loaded;
      reads.visit(e);
      return reads.found;
    }
    void visit_declare(const Declare& node) override {
      if (reads_memory(node.init)) loaded.insert(node.name);
      IRVisitor::visit_declare(node);
    }
    void visit_store(const Store& node) override {
      found |= reads_memory(node.index);
      IRVisitor::visit_store(node);
    }
  } scatters;
  for (const Stmt& s : uses) scatters.visit(s);
  LoopAnnotations stores;
  stores.vectorized = !loop.annotations.repeats_coordinates && !scatters.found;
  stores.repeats_coordinates = loop.annotations.repeats_coordinates;
  if (stores.repeats_coordinates) stores.sequential_reason = "its coordinates repeat: its stores add into the same entries";
  Stmt store_loop = std::make_shared<For>(store_label, loop.var, loop.begin, loop.end, block(std::move(uses)), stores);
  Workspace array{tile, sum->type, int64(trips), zero_of(sum->type), true};
  Stmt replacement = std::make_shared<Allocate>(std::vector<Workspace>{array}, block({summing_outside, store_loop}));
  func_.body = RewriteLoop(precompute.var, [&](const For&) { return replacement; }).mutate(func_.body);
  origin_[store_label] = origin_.at(precompute.var);
  register_tile_loops_.insert({precompute.var, store_label});
}

// The declarations among `lets` that `stmts` read, directly or through later declarations.
std::vector<Stmt> Scheduler::lets_read_by(const std::vector<Stmt>& lets, const std::vector<Stmt>& stmts) {
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

std::set<std::string> Scheduler::names_read(const Stmt& stmt) {
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
void Scheduler::apply_op(const ReorderOp& reorder) {
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
Stmt Scheduler::outermost_stmt(const For* loop) const {
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

bool Scheduler::all_bound(const Expr& expr, const std::set<std::string>& bound) {
  for (const std::string& name : vars_read(expr))
    if (!bound.count(name)) return false;
  return true;
}

// ---- fuse (stage II: dense loops) ----
// for a, for b  →  for ab in [0, extent_a * extent_b) with a = ab / extent_b, b = ab % extent_b,
// so a parallel loop gets more iterations. Fusing sparse levels happens in stage I.
void Scheduler::apply_op(const FuseOp& fuse) {
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
    if (a.scheduled())
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

}  // namespace spgen::scheduling
