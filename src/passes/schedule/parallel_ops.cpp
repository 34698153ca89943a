#include "passes/schedule/scheduler.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "passes/batch_entries.h"
#include "passes/cache_operands.h"
#include "passes/prefetch_rows.h"

namespace spgen::scheduling {

namespace {

// end - begin, reading `(x + a) - (x + b)` as `a - b`: a loop's remaining count where both bounds
// start from the same position (a row's rest after its groups of lanes).
Expr difference(const Expr& end, const Expr& begin) {
  auto sum = [](const Expr& e) -> const Binary* {
    return e->kind == ExprKind::Binary && static_cast<const Binary&>(*e).op == BinOp::Add ? &static_cast<const Binary&>(*e) : nullptr;
  };
  const Binary* a = sum(end);
  const Binary* b = sum(begin);
  if (a && b && same_expr(a->a, b->a)) return sub(a->b, b->b);
  return sub(end, begin);
}

// The masked sum of `value` over `lane` in [0, count). Where the value is a product whose first
// factor reads consecutive elements, `buffer[base + lane]` (A's values along a csr row), that
// factor is kept apart (MaskedSum::row): it is loaded as one vector, not lane by lane, which
// measured 1.04-1.10x on SpMV of rows of 3-5 entries (bench/RESULTS.md, session 25).
Expr masked_sum_with_row(const std::string& lane, Expr count, Expr value, int64_t lanes) {
  if (value->kind == ExprKind::Binary) {
    const auto& product = static_cast<const Binary&>(*value);
    if (product.op == BinOp::Mul && product.a->kind == ExprKind::Load) {
      const auto& factor = static_cast<const Load&>(*product.a);
      if (!factor.vector && factor.gather_lane.empty() && factor.type == value->type && factor.index->kind == ExprKind::Binary) {
        const auto& index = static_cast<const Binary&>(*factor.index);
        if (index.op == BinOp::Add && index.b->kind == ExprKind::Var && static_cast<const Var&>(*index.b).name == lane &&
            !reads_var(index.a, lane))
          return std::make_shared<MaskedSum>(lane, std::move(count), product.b, lanes,
                                             std::make_shared<Load>(factor.buffer, index.a, factor.type));
      }
    }
  }
  return std::make_shared<MaskedSum>(lane, std::move(count), std::move(value), lanes);
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

}  // namespace

// ---- parallel ----
bool Scheduler::has_workspace() const {
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

void Scheduler::refuse_sequential(const LoopInfo& info, const char* action) const {
  if (!info.loop->annotations.sequential_reason.empty())
    fail("cannot " + std::string(action) + " " + info.loop->label + ": " + info.loop->annotations.sequential_reason);
}

void Scheduler::apply_op(const ParallelOp& parallel) {
  if (config_.target == Target::Cuda) fail("parallel is OpenMP's, for the cpu target: use bind on the cuda target");
  LoopInfo info = find(parallel.var);
  // Repeated coordinates race like a summed index: a reduction makes the loop parallel, or a
  // balance whose parts each begin at a run of equal coordinates (balance_by_runs), so that each
  // part owns its runs whole.
  const bool repeats = info.loop->annotations.repeats_coordinates;
  const bool runs_whole = repeats && !parallel.balance.empty() && !is_reduction(parallel.var);
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
  if (repeats && parallel.reduction.empty() && !runs_whole)
    fail("cannot parallelize " + parallel.var + ": " + info.loop->annotations.sequential_reason +
         " (add \"reduction\": \"atomic\" or \"privatize\"" +
         (runs_coordinates(program_, *info.loop).empty() ? "" : ", or \"balance\": \"nonzeros\", whose parts own their runs whole") + ")");
  if (!repeats) refuse_sequential(info, "parallelize");
  if (has_workspace() && !info.enclosing.empty())
    fail("cannot parallelize " + parallel.var + ": the kernel keeps a row workspace, which each thread owns for "
         "the outermost loop only; parallelize " + loops().front().loop->label + " instead");
  const std::string& output = program_.output().tensor;
  bool reduction = (is_reduction(parallel.var) || (repeats && !runs_whole)) && !lists;
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
  if (parallel.schedule == OmpSchedule::EvenRows) {
    annotations.rows_pos = origin_.at(parallel.var) == parallel.var ? rows_positions(program_, loop) : "";
    if (annotations.rows_pos.empty())
      fail("even_rows: loop " + parallel.var + " does not run over the rows of a csr-like operand (a dense top level over a "
           "compressed one), whose row positions would tell how evenly its rows hold their entries");
    if (!parallel.balance.empty() || parallel.reduction == "privatize")
      fail("even_rows: loop " + parallel.var + " already has its iterations shared by " +
           (parallel.balance.empty() ? std::string("per-thread copies of the output") : "balance"));
    if (!annotations.chunk) annotations.chunk = 512;  // (the dynamic fallback's)
  }
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
    if (reduction_combine(loop, annotations.simd_reductions) != BinOp::Add)
      fail("a parallel reduction adds the threads' partial results; loop " + loop.label + " takes a max or min");
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
    if (parallel.balance == "merge_path" && (runs_whole || !parallel.reduction.empty()))
      fail("balance merge_path cuts the rows of a compressed level, whose rows are its loop's distinct iterations; " +
           std::string(runs_whole ? "COO's runs are balanced by \"nonzeros\"" : "a loop that needs a reduction has none to cut"));
    replacement = runs_whole                           ? balance_by_runs(loop, body, annotations, parallel.parts)
                  : parallel.balance == "merge_path" ? balance_by_merge_path(loop, body, annotations, parallel.parts)
                                                     : balance_by_nonzeros(loop, body, annotations, parallel.parts);
  }
  if (!private_copy.empty()) replacement = privatized(replacement, private_copy);
  if (lists) replacement = listed_per_thread(*as_for(replacement));
  func_.body = RewriteLoop(parallel.var, [&](const For&) { return replacement; }).mutate(func_.body);
  any_parallel_ = true;
}

// Atomics and private copies only add: a loop that overwrites output entries cannot combine.
void Scheduler::refuse_overwrites(const For& loop) const {
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

// A listed output's outermost loop in parallel: each thread appends to lists of its own (the
// loop's stores into the output's lists redirected there), which then join the output's lists
// one thread after another in thread order. A static schedule gives each thread one contiguous
// range of the loop, in thread order, so the joined list is the sequential loop's.
Stmt Scheduler::listed_per_thread(const For& loop) {
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
Stmt Scheduler::privatized(const Stmt& loop, const std::string& copy) {
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

// ---- vectorize ----
void Scheduler::apply_op(const VectorizeOp& vectorize) {
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
    vectorize_in_lanes(*info.loop, vectorize.lanes, reductions, vectorize.masked_tail);
    return;
  }
  const BinOp combine = reduction_combine(*info.loop, reductions);
  if (combine != BinOp::Add && config_.target == Target::Cuda)
    fail("on the cuda target, vectorize keeps no max or min reduction (a thread's loop over " + vectorize.var + " stays scalar)");
  set_annotations(vectorize.var, [&](LoopAnnotations& a) {
    a.vectorized = true;
    a.simd_reductions = reductions;
    a.simd_combine = combine;
  });
}

// On the GPU a thread's vectors are float4 (double2) loads and stores: `vectorize` applies to
// the loops of a register tile (`precompute`), which passes/explicit_vectors turns into them.
void Scheduler::check_cuda_vectorize(const VectorizeOp& vectorize, const For& loop) const {
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
void Scheduler::vectorize_in_lanes(const For& loop, int64_t lanes, const std::vector<std::string>& scalars, bool masked_tail) {
  // A masked tail reads up to `lanes` elements past the loop's range: only where the arrays go on
  // that far (their length, from the level's pos array: `limit`), else the scalar loop runs.
  const Expr limit = masked_tail ? masked_tail_limit(loop) : nullptr;
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
  TiledBounds bounds;
  std::vector<Stmt> stmts = tile_loop(loop, lanes, group, lane, rest, into_lanes.mutate(loop.body), vectorized, &bounds);
  std::vector<Stmt> head;  // a masked tail: the bounds, read once before the choice below
  Stmt whole_range;        // ... and the masked sum of a whole range shorter than the lanes
  Expr fits;               // ... where it is shorter and the arrays reach far enough
  if (masked_tail) {
    // tile_loop's last statement is the scalar loop over the rest, [rest_begin, end): where the
    // arrays reach `reach` elements past rest_begin (the most a masked sum reads), the rest is one
    // masked sum into the scalar instead.
    const auto& rest_loop = static_cast<const For&>(*stmts.back());
    const std::string tail = fresh(loop.label + "_tail"), left = fresh(loop.label + "_left");
    // The one value the body adds into one scalar (plan_masked_tail checked it), at a position.
    const MaskedSumOf sum = masked_sum_of(loop);
    auto value_at = [&](const Expr& position) { return substitute(sum.value, {{loop.var, position}}); };
    const std::string& scalar = sum.scalar;
    const ScalarType type = find_declare(scalar)->type;
    const int64_t reach = std::max<int64_t>(lanes, type == ScalarType::Float64 ? 2 : 4);
    Stmt masked = std::make_shared<Assign>(scalar, masked_sum_with_row(tail, var(left), value_at(add(rest_loop.begin, var(tail))), lanes), true);
    Stmt rest_stmt = stmts.back();
    stmts.back() = std::make_shared<Declare>(left, ScalarType::Int64, difference(rest_loop.end, rest_loop.begin), false);
    stmts.push_back(std::make_shared<If>(binary(BinOp::Le, add(rest_loop.begin, int64(reach)), limit), masked, rest_stmt));
    // A range shorter than the lanes (a short row: most of them in a graph) is the masked sum
    // alone, without the lanes' setup and final sum.
    const size_t setup = static_cast<size_t>(bounds.declared);
    head.assign(stmts.begin(), stmts.begin() + static_cast<std::ptrdiff_t>(setup));
    stmts.erase(stmts.begin(), stmts.begin() + static_cast<std::ptrdiff_t>(setup));
    whole_range = std::make_shared<Assign>(
        scalar, masked_sum_with_row(tail, bounds.extent, value_at(add(bounds.begin, var(tail))), lanes), true);
    fits = logical_and(binary(BinOp::Lt, bounds.extent, int64(lanes)), binary(BinOp::Le, add(bounds.begin, int64(reach)), limit));
  }
  // Then the partial sums are added into the scalar, pairwise (a tree, in vector registers).
  for (const auto& [scalar, array] : lane_arrays)
    stmts.push_back(std::make_shared<Assign>(scalar, std::make_shared<LaneSum>(array, lanes, find_declare(scalar)->type), true));
  Stmt replacement = std::make_shared<Allocate>(std::move(arrays), block(std::move(stmts)));
  if (masked_tail) {
    head.push_back(std::make_shared<If>(fits, whole_range, replacement));
    replacement = block(std::move(head));
  }
  // (`loop` lies in the body that the rewrite replaces: read its label before.)
  const std::string label = loop.label, origin = origin_.at(label);
  func_.body = RewriteLoop(label, [&](const For&) { return replacement; }).mutate(func_.body);
  origin_[group] = origin_[lane] = origin_[rest] = origin;
}

Expr Scheduler::masked_tail_limit(const For& loop) const {
  MaskedTailPlan plan = plan_masked_tail(loop, program_);
  if (!plan.refusal.empty()) fail(plan.refusal);
  return plan.limit;
}

const Declare* Scheduler::find_declare(const std::string& name) const {
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

Expr Scheduler::zero_of(ScalarType type) { return std::make_shared<FloatImm>(0.0, "0", type); }

bool Scheduler::writes_output(const For& loop) const { return stores_into(loop.body, program_.output().values); }

// Scalars declared outside the loop that its body adds into: a vectorized loop must reduce them.
std::vector<std::string> Scheduler::accumulated_scalars(const For& loop) { return scalars_assigned_outside(loop.body); }

BinOp Scheduler::reduction_combine(const For& loop, const std::vector<std::string>& scalars) const {
  const std::set<BinOp> ops = reduction_combines(loop.body, scalars);
  if (ops.size() > 1) fail("loop " + loop.label + " reduces scalars both by adding and by max or min: one reduction per loop");
  return ops.empty() ? BinOp::Add : *ops.begin();
}

// ---- unroll ----
// On the CPU an OpenMP loop cannot also carry GCC's unroll pragma (compilers reject the pair).
void Scheduler::refuse_unroll_beside_openmp(const std::string& label, const char* openmp_kind) const {
  if (config_.target == Target::Cpu)
    fail("loop " + label + " cannot be both unrolled and " + openmp_kind +
         ": compilers reject an unroll pragma beside an OpenMP one; split it and unroll the inner loop");
}

void Scheduler::apply_op(const UnrollOp& unroll) {
  const LoopAnnotations& a = find(unroll.var).loop->annotations;
  if (a.parallel || a.vectorized) refuse_unroll_beside_openmp(unroll.var, a.parallel ? "parallel" : "vectorized");
  set_annotations(unroll.var, [&](LoopAnnotations& annotations) { annotations.unroll = unroll.factor; });
}

// ---- bind (cuda) ----
// Only marks the loop: later ops may still reorder the nest, so finish() checks the bindings.
void Scheduler::apply_op(const BindOp& bind) {
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

bool Scheduler::has_loop(const std::string& label) const {
  std::vector<LoopInfo> all = loops();
  return std::any_of(all.begin(), all.end(), [&](const LoopInfo& info) { return info.loop->label == label; });
}

// ---- cache (cuda) ----
// Applied by finish(), once the nest and its bindings are final.
void Scheduler::apply_op(const CacheOp& cache) {
  if (config_.target != Target::Cuda) fail("cache keeps a tile in GPU shared memory: it is for the cuda target");
  find(cache.var);
  cache_ops_.push_back(op_);
}

// ---- prefetch (cpu) ----
// Applied by finish(), on the final nest.
void Scheduler::apply_op(const PrefetchOp&) {
  if (config_.target != Target::Cpu) fail("prefetch is for the cpu target (on cuda, cache a tile in shared memory)");
  prefetch_ops_.push_back(op_);  // (every loop of that name: a tile's and its remainder's)
}

// ---- batch (cpu) ----
// Applied by finish(), on the final nest.
void Scheduler::apply_op(const BatchOp&) {
  if (config_.target != Target::Cpu) fail("batch is for the cpu target");
  batch_ops_.push_back(op_);
}

}  // namespace spgen::scheduling
