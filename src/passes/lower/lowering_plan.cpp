// The Lowering's names, loop plan, runs and fused rows (passes/lower/lowering.h).
#include "passes/lower/lowering.h"

namespace spgen::lowering {

using namespace loops;

// ---- names ----
void Lowering::reserve_names() {
  for (const std::string& var : program_.index_vars) {
    used_names_.insert(var);
    used_names_.insert(dim_name(var));
  }
  for (const sparse::Axis& axis : program_.axes) {
    if (!axis.pos.empty()) used_names_.insert(axis.pos);
    if (!axis.crd.empty()) used_names_.insert(axis.crd);
  }
  for (const sparse::SparseBuffer& b : program_.buffers) used_names_.insert(b.values);
  for (const sparse::BlockedVar& b : program_.blocked_vars) used_names_.insert({b.outer, b.inner});
  // (The parts of a sum in the output's block rows have block loops the body may not have.)
  if (sum_.whole && parts_in_block_rows(*sum_.whole))
    for (const sparse::BlockedVar& b : sum_.whole->blocked_vars) used_names_.insert({b.outer, b.inner});
}

std::string Lowering::fresh_name(const std::string& wanted) {
  std::string name = wanted;
  for (int suffix = 2; used_names_.count(name); ++suffix) name = wanted + "_" + std::to_string(suffix);
  used_names_.insert(name);
  return name;
}

// ---- which level drives each loop ----
// The stored (non-dense) axis of `tensor` that binds `var`, or -1.
int Lowering::compressed_axis(const std::string& tensor, const std::string& var) const {
  const sparse::SparseBuffer& buffer = program_.structure_of(program_.buffer(tensor));
  for (int id : buffer.axes)  // (a level blocked apart is located at var / or % its block, never streamed)
    if (program_.axes[id].kind != sparse::AxisKind::DenseFixed && program_.axes[id].index_var == var &&
        !program_.axes[id].blocked_apart() && !located_vars_.count(var))
      return id;
  return -1;
}

// Which stored tensors the loop of `var` must visit.
IterationSpace Lowering::iteration_space(const ast::Expr& expr, const std::string& var) const {
  return terms(
      expr, [&](const std::string& tensor) { return compressed_axis(tensor, var) >= 0; },
      [&](const IterationSpace& divisor) {
        for (const Conjunction& c : divisor)
          if (!c.empty())
            throw_unsupported("dividing by " + *c.begin() + ", which stores index " + var +
                              " compressed, is not supported: its implicit zeros would divide by zero");
      });
}

void Lowering::throw_unsupported(const std::string& message) const {
  throw CompileError(format_config_error(config_.file, "/tensors", message));
}

// How each loop visits its index variable. Every stored level on it is either streamed (a
// cursor over its coordinates in increasing order) or, where it allows random access (a
// ragged prefix), located: its position is computed from the coordinate that the streams (or
// a dense loop) produce. A level is located only where every conjunction that needs it has
// another operand to stream, as TACO iterates the sparsest operands and locates into the rest.
void Lowering::plan_loops() {
  const auto& iterators = program_.iteration.iterators;
  plans_.assign(iterators.size(), LoopPlan{});
  for (size_t d = 0; d < iterators.size(); ++d) {
    LoopPlan& plan = plans_[d];
    const std::string& var = iterators[d].var;
    const ast::Expr& iterated = sum_.whole && d < static_cast<size_t>(sum_.shared_loops) ? *whole_sum() : *program_.iteration.body;
    plan.space = iteration_space(iterated, var);
    plan.terms = tensor_terms(iterated);
    defer_located_terms(plan, var, sum_.whole && d < static_cast<size_t>(sum_.shared_loops));
    std::set<std::string> sparse_tensors;
    for (const Conjunction& c : plan.space) {
      sparse_tensors.insert(c.begin(), c.end());
      plan.dense_universe |= c.empty();
    }
    for (const std::string& t : sparse_tensors) plan.axes.push_back(compressed_axis(t, var));
    for (int id : plan.axes)
      if (level_access(program_.axes[id])->locatable()) plan.located.push_back(id);
    if (!plan.dense_universe)
      for (const Conjunction& conjunction : plan.space)
        if (std::all_of(conjunction.begin(), conjunction.end(), [&](const std::string& t) { return plan.locates(compressed_axis(t, var)); }))
          plan.located.erase(std::find(plan.located.begin(), plan.located.end(), compressed_axis(*conjunction.begin(), var)));
    size_t streams = plan.axes.size() - plan.located.size();
    if (sparse_tensors.empty()) plan.kind = LoopKind::Dense;
    else if (streams == 1 && !plan.dense_universe) plan.kind = LoopKind::Driven;
    else plan.kind = LoopKind::Merge;
    plan.driven_over_every_coordinate = plan.kind == LoopKind::Driven && plan.space.size() == 1 && plan.space[0].size() == 1 &&
                                        program_.axes[plan.stream()].lists_every_coordinate;
    for (int id : plan.axes)
      if (!program_.axes[id].ordered && plan.kind == LoopKind::Merge && !plan.locates(id))
        throw_unsupported("the rows of " + program_.axes[id].tensor + " are listed out of order (sell with \"sigma\" above 1 sorts " +
                          "them by length), but loop " + var + " merges them with " +
                          (plan.dense_universe ? "every coordinate" : "another operand's coordinates") +
                          ", which needs them in order; use \"sigma\": 1, or a dense operand on " + var);
    // An interleaved level's positions are no range: only a loop that streams it alone walks it.
    for (int id : plan.axes)
      if (level_access(program_.axes[id])->walks_slots() && plan.kind != LoopKind::Driven)
        throw_unsupported("the interleaved ELL slots of " + program_.axes[id].tensor + " are walked by a loop of their own, but loop " +
                          var + " also visits " + (plan.dense_universe ? "every coordinate" : "another operand's coordinates") +
                          "; decompose without \"interleave\"");
  }
  plan_runs();
  check_searched_terms();
}

// On the loop over a blocked operand's blocks, an operand located inside them is no stream: a
// term with the blocked operand looks it up there, and a term without it (A + B) is left to
// the rest that follows the blocks (lower_outside_blocks), unless a dense term makes the loop
// visit every block anyway. A loop that a scoped sum's parts share (`shared`) also visits
// the added parts' coordinates: their streamed operands' (D block-DCSR), or every one where a
// part has no stream on it (its operands located below, or dense: D csr's rows lie in any block
// row).
void Lowering::defer_located_terms(LoopPlan& plan, const std::string& loop, bool shared) const {
  const sparse::BlockedVar* blocked = program_.blocked_loop(loop);
  if (!blocked || loop != blocked->outer || blocked->tensor == program_.output().tensor) return;
  auto located_here = [&](const std::string& tensor) {
    for (int id : program_.structure_of(program_.buffer(tensor)).axes)
      if (is_located_in_blocks(program_.axes[id]) && program_.axes[id].index_var == blocked->var) return true;
    return false;
  };
  auto stored_or_located = [&](const std::string& tensor) { return compressed_axis(tensor, loop) >= 0 || located_here(tensor); };
  IterationSpace with_located = terms(*program_.iteration.body, stored_or_located, [](const IterationSpace&) {});
  IterationSpace space;
  // Into an output gathered in block rows, the rest runs inside each block row: a loop over
  // the block rows visits every one for a term of located operands only (D dcsc beside A and
  // B in compressed block rows), with cursors into the blocked operands'.
  const sparse::SparseBuffer& output = program_.output();
  const auto at = std::find_if(program_.iteration.iterators.begin(), program_.iteration.iterators.end(),
                               [&](const sparse::Iterator& it) { return it.var == loop; });
  const bool every_block_row = !sum_.whole && assembled_ && output.gathered_level >= 0 &&
                               at - program_.iteration.iterators.begin() <= gathered_row_depth();
  bool located_only = false;
  auto add = [&](Conjunction c, bool of_body) {
    bool streamed = std::any_of(c.begin(), c.end(), [&](const std::string& t) { return compressed_axis(t, loop) >= 0; });
    if (!streamed && !c.empty() && of_body) {  // only located operands: after the blocks
      located_only |= every_block_row;
      return;
    }
    for (auto t = c.begin(); t != c.end();) t = compressed_axis(*t, loop) >= 0 ? std::next(t) : c.erase(t);
    space.push_back(c);
  };
  for (const Conjunction& c : with_located) add(c, true);
  if (located_only && std::find(space.begin(), space.end(), Conjunction{}) == space.end()) space.push_back({});
  const bool body_universe = std::any_of(space.begin(), space.end(), [](const Conjunction& c) { return c.empty(); });
  if (shared)
    for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts)
      for (const Conjunction& c : terms(*part.body, stored_or_located, [](const IterationSpace&) {})) add(c, false);
  plan.universe_of_parts_only =
      !body_universe && std::any_of(space.begin(), space.end(), [](const Conjunction& c) { return c.empty(); });
  plan.space = space;
}

// A level located inside the blocks is only looked at where the blocked operand's loops go. A
// term that reads its tensor without the blocked operand is served there only if those loops
// visit every block (a dense term beside it); else where they visit exactly the blocked
// operand's blocks, the rest of the term follows them (see lower_outside_blocks).
void Lowering::check_searched_terms() {
  const IterationSpace terms = tensor_terms(*program_.iteration.body);
  for (const sparse::Axis& axis : program_.axes) {
    bool located = is_located_in_blocks(axis);
    if (!(located || axis.blocked_apart()) || program_.buffer(axis.tensor).is_output) continue;
    if (!program_.blocked(axis.index_var)) continue;  // the blocked operand itself, outside its blocks
    const std::string& blocker = program_.blocked(axis.index_var)->tensor;
    std::string how = located ? locate_strategy(axis) : "arithmetic on its coordinate / and % its blocks";
    // The loops visit the blocker's entries, not the searched tensor's: an output stored in the
    // searched tensor's structure would miss the entries outside the blocks. (plan_blocked_vars
    // lets the tensor whose structure the output shares give the block loops, and reaches the
    // others' blocks apart on the indices it stores unblocked, so this is only a safety net.)
    const sparse::SparseBuffer& output = program_.output();
    if (output.shares_structure_with == axis.tensor)
      throw_unsupported("output " + output.tensor + " would share the structure of " + axis.tensor + ", but " +
                        axis.tensor + " is located inside " + blocker + "'s blocks (by " + how +
                        "), so its entries outside them would go unwritten; give " + output.tensor + " " +
                        blocker + "'s format (" + program_.buffer(blocker).format.name + ") or make it dense");
    if (!located) continue;  // dense levels: a term without the blocker visits every block
    const std::string stored = stored_as(axis);
    const std::vector<std::string> alike = blocked_alike(blocker);
    for (const Conjunction& term : terms) {
      if (!term.count(axis.tensor) || inside_blocks_visited(term, blocker) || blocks_visit_every_coordinate(blocker)) continue;
      std::string refusal = outside_blocks_refusal(blocker);
      if (refusal.empty()) {
        rest_.blockers = alike;
        rest_.blocks_done = blocks_visited(blocker);
        for (const std::string& tensor : alike)  // (each at the same loop: outside_blocks_refusal)
          if (int level = ungated_merge_level(blocker, tensor); level >= 0) rest_.skip_levels_above[tensor] = level;
        continue;
      }
      std::string message = axis.tensor + " stores index " + axis.mode_var + " " + stored + ", and " + blocker +
                            " splits it into blocks: " + axis.tensor + " is then located inside " + blocker +
                            "'s blocks (by " + how + "), which serves only terms that multiply it by " + blocker +
                            ", and the entries of " + axis.tensor + " outside them cannot follow here (" + refusal +
                            "); store " + axis.tensor + " dense, or " + blocker + " unblocked (csr)";
      // (Where the shared loop visits the other block rows for another part's sake only, the
      // parts list the output's entries each in a nest of its own: NestRefusal::SharedBlocks.)
      if (rows_visited_for_parts_only()) return refuse(NestRefusal::Kind::SharedBlocks, format_config_error(config_.file, "/tensors", message));
      // (Where the terms, products of sums multiplied out, can each have a nest of their own:
      // listing an assembled output's entries, or adding into a dense output in place; also
      // the terms of a part of a scoped sum, lower.cpp's every_term_apart.)
      if ((assembled_ || (!sum_.whole && output.format.all_dense())) &&
          ast::distributed_terms(program_.iteration.body, output.indices).size() > 1)
        return refuse(NestRefusal::Kind::UnionNest, format_config_error(config_.file, "/tensors", message));
      throw_unsupported(message);
    }
    for (const ast::Access* access : ast::collect_accesses(*program_.iteration.body))
      if (access->tensor == axis.tensor && divides_by(*program_.iteration.body, axis.tensor))
        throw_unsupported("dividing by " + axis.tensor + ", which stores index " + axis.mode_var + " " + stored +
                          ", is not supported: its implicit zeros would divide by zero");
  }
}

// The blocked operands' analysis (passes/lower/blocked_analysis.h), over this nest's loop plans.
BlockedAnalysis Lowering::blocked_analysis() const { return BlockedAnalysis(program_, plans_, assembled_, sum_.whole); }

std::vector<std::string> Lowering::blocked_alike(const std::string& blocker) const { return blocked_analysis().blocked_alike(blocker); }

IterationSpace Lowering::blocks_visited(const std::string& blocker) const { return blocked_analysis().blocks_visited(blocker); }

bool Lowering::inside_blocks_visited(const Conjunction& term, const std::string& blocker) const {
  return blocked_analysis().inside_blocks_visited(term, blocker);
}

bool Lowering::blocks_visit_every_coordinate(const std::string& blocker) const { return blocked_analysis().blocks_visit_every_coordinate(blocker); }

bool Lowering::rows_visited_for_parts_only() const { return blocked_analysis().rows_visited_for_parts_only(); }

std::string Lowering::outside_blocks_refusal(const std::string& blocker) const { return blocked_analysis().outside_blocks_refusal(blocker); }

int Lowering::ungated_merge_level(const std::string& blocker, const std::string& tensor) const {
  return blocked_analysis().ungated_merge_level(blocker, tensor);
}

std::string Lowering::blocked_otherwise(const std::vector<std::string>& alike) const { return blocked_analysis().blocked_otherwise(alike); }

bool Lowering::reads(const std::string& tensor) const { return blocked_analysis().reads(tensor); }

int Lowering::gathered_row_depth() const { return blocked_analysis().gathered_row_depth(); }

std::string Lowering::stored_as(const sparse::Axis& axis) const { return blocked_analysis().stored_as(axis); }

bool Lowering::visits_every_coordinate(int depth) const { return blocked_analysis().visits_every_coordinate(depth); }

// COO's levels (a compressed-nonunique level, then singletons) store one position per entry.
// Merged with other operands, a level must be visited once per coordinate: its merge unit is
// the run of positions with equal coordinates, and the level below iterates that run (as a
// compressed level iterates pos[p] .. pos[p+1]). So a COO level that a merge streams, and every
// COO level above it, goes by runs; a loop that a run-wise level drives alone becomes a merge
// of one operand (it advances a run at a time).
//
// An assembled output is written once per coordinate of its indices (its cursors, and the rows
// of its workspace, move on when a coordinate is done), so a COO level that drives one of its
// loops alone goes by runs too.
void Lowering::plan_runs() {
  auto go_by_runs = [&](int id) {
    const sparse::Axis* axis = &program_.axes[id];
    if (is_coo_level(*axis) && !is_last_level(*axis)) by_runs_.insert(id);
    while (axis->parent >= 0 && is_coo_level(*axis)) {
      axis = &program_.axes[axis->parent];
      if (is_coo_level(*axis)) by_runs_.insert(axis_id(*axis));
    }
  };
  for (const LoopPlan& plan : plans_) {
    if (plan.kind != LoopKind::Merge) continue;
    for (int id : plan.axes)
      if (!plan.locates(id)) go_by_runs(id);
  }
  // (A fused loop visits COO's entries one by one: the output lists them, plan_listed.)
  auto fused = [&](int depth) { return fusion_at(depth) || (depth > 0 && fusion_at(depth - 1)); };
  if (assembled_)
    for (const std::string& var : program_.output().indices)
      if (const LoopPlan& plan = plans_[program_.depth_of(var)]; plan.kind == LoopKind::Driven && !fused(program_.depth_of(var)))
        go_by_runs(plan.stream());
  for (LoopPlan& plan : plans_)
    if (plan.kind == LoopKind::Driven && by_runs_.count(plan.stream())) plan.kind = LoopKind::Merge;
  // A COO level located inside a blocked operand's blocks is found a run at a time.
  for (const sparse::Axis& axis : program_.axes)
    if (is_located_in_blocks(axis) && is_coo_level(axis) && !is_last_level(axis)) by_runs_.insert(axis_id(axis));
}

// COO's runs (passes/lower/runs.h), as plan_runs chose them.
Runs Lowering::runs() const { return Runs(program_, by_runs_); }

bool Lowering::is_coo_level(const sparse::Axis& axis) { return Runs::is_coo_level(axis); }

bool Lowering::is_last_level(const sparse::Axis& axis) const { return runs().is_last_level(axis); }

bool Lowering::iterates_run(const sparse::Axis& axis) const { return runs().iterates_run(axis); }

bool Lowering::repeats(const sparse::Axis& axis) const { return runs().repeats(axis); }

int Lowering::axis_id(const sparse::Axis& axis) const { return runs().axis_id(axis); }

// ---- stage I fuse ----
const sparse::Fusion* Lowering::fusion_at(int depth) const {
  for (const sparse::Fusion& f : program_.iteration.fusions)
    if (program_.depth_of(f.outer) == depth) return &f;
  return nullptr;
}

// The fused loops must visit the entries of the fused tensor alone: no other operand may be
// co-iterated with it on either variable.
void Lowering::check_fusions() const {
  for (const sparse::Fusion& f : program_.iteration.fusions) {
    int depth = program_.depth_of(f.outer);
    auto [upper, lower] = fused_axes(f);
    for (int d : {depth, depth + 1}) {
      const LoopPlan& plan = plans_[d];
      const sparse::Axis* mine = d == depth ? upper : lower;
      bool alone = mine->kind == sparse::AxisKind::DenseFixed
                       ? plan.kind == LoopKind::Dense
                       : plan.kind == LoopKind::Driven && plan.axes.size() == 1 && plan.axes.front() == axis_id(*mine);
      if (!alone)
        throw CompileError(format_config_error(
            config_.file, f.op_path,
            "fuse: index " + program_.iteration.iterators[d].var + " is co-iterated with other operands (" +
                (plan.dense_universe ? "a term without " + f.tensor + " visits every coordinate" : "a merge") +
                "), but a fused loop visits only the stored entries of " + f.tensor));
    }
  }
}

// for e over the positions of the compressed level. Each entry's row comes from a cursor: the
// row of the previous entry, kept while the entry lies in it, else found by binary search in
// pos (the last row starting at or before the entry). So a row costs one search, not each
// entry, and a cursor that is stale (a thread's next chunk, an empty row) is only slower. A
// parallel loop gives each thread its own cursor (see `private_scalars`).
Stmt Lowering::fused_rows_loop(int depth, const sparse::Fusion& f) {
  auto [upper, lower] = fused_axes(f);
  const std::string& position = positions_.at(f.tensor)[1].name;
  auto pos_at = [this, lower = lower](Expr at) { return cast(ScalarType::Int64, load(lower->pos, std::move(at), index_type_)); };
  Expr rows = var(upper->length);
  std::string row = fresh_name(f.into + "_row"), low = fresh_name(f.into + "_row_low"),
              high = fresh_name(f.into + "_row_high"), middle = fresh_name(f.into + "_row_mid");
  Expr p = var(position);
  Expr outside_row = logical_or(binary(BinOp::Lt, p, pos_at(var(row))),
                                binary(BinOp::Le, pos_at(add(var(row), int64(1))), p));
  Stmt search = block({
      std::make_shared<Declare>(low, ScalarType::Int64, int64(0), true),
      std::make_shared<Declare>(high, ScalarType::Int64, rows, true),
      std::make_shared<While>(
          "search " + row, binary(BinOp::Lt, var(low), var(high)),
          block({std::make_shared<Declare>(middle, ScalarType::Int64, binary(BinOp::Div, add(var(low), var(high)), int64(2)), false),
                 std::make_shared<If>(binary(BinOp::Le, pos_at(var(middle)), p),
                                      std::make_shared<Assign>(low, add(var(middle), int64(1)), false),
                                      std::make_shared<Assign>(high, var(middle), false))})),
      std::make_shared<Assign>(row, sub(var(low), int64(1)), false)});
  std::vector<Stmt> body = {
      std::make_shared<Comment>("the row of entry " + position + ": the cursor's, or the last row starting at or before it"),
      std::make_shared<If>(outside_row, search, nullptr),
      std::make_shared<Declare>(f.outer, ScalarType::Int64, var(row), false)};
  append(body, fused_row_changes());
  append(body, position_declares(depth));
  body.push_back(std::make_shared<Declare>(f.inner, ScalarType::Int64,
                                           cast(ScalarType::Int64, load(lower->crd, var(position), index_type_)), false));
  append(body, position_declares(depth + 1));
  const sparse::SparseBuffer& output = program_.output();
  if (fused_rows_parallel_ && !counting_) {
    // The output's entry at the fused entry's place: no cursor (fuses_rows_in_parallel).
    const sparse::Axis& entries = program_.axes[output.axes.back()];
    const std::string& at = positions_.at(output.tensor).back().name;
    body.push_back(std::make_shared<Comment>("the entry's position in " + output.tensor + ": one entry per entry of " +
                                             f.tensor + ", in order"));
    body.push_back(std::make_shared<Declare>(
        at, ScalarType::Int64, add(cast(ScalarType::Int64, load(entries.pos, int64(0), index_type_)), sub(p, pos_at(int64(0)))), false));
  }
  body.push_back(loop_nest(depth + 2));
  std::vector<Stmt> before = {std::make_shared<Comment>("fuse " + f.outer + ", " + f.inner + ": one loop over the entries of " + f.tensor)};
  if (fused_rows_append_)
    before.push_back(std::make_shared<Comment>(
        "its entries come in " + output.tensor + "'s storage order, once each: appended in place" +
        (!fused_rows_parallel_ ? std::string()
         : counting_           ? ", counted atomically (threads may share a row)"
                               : ", each at its own position (threads write apart)")));
  for (const OpenLevel& open : open_levels_)
    if (!open.fused_row.empty()) before.push_back(std::make_shared<Declare>(open.fused_row, ScalarType::Int64, int64(-1), true));
  before.push_back(std::make_shared<Declare>(row, ScalarType::Int64, int64(0), true));
  return block({block(std::move(before)),
                std::make_shared<For>(f.into, position, pos_at(int64(0)), pos_at(rows), block(std::move(body)),
                                      // (into a listed output it is the outer loop, whose threads list apart)
                                      // (in parallel in place, it writes apart: fuses_rows_in_parallel)
                                      fused_rows_parallel_ ? LoopAnnotations{} : loop_annotations(listed_ ? depth : depth + 1))});
}

std::vector<Stmt> Lowering::fused_row_changes() const { return lowering::fused_row_changes(output_context(), open_levels_); }

// The loop at `depth` visits every coordinate of its variable (so no output entry is skipped).
// (A loop this nest does not have, depth -1, restricts nothing: a part of a scoped sum holds
// none of the loops of a blocked operand only another part reads.)
bool Lowering::iterates_axis(int depth, int axis) const {
  const std::vector<int>& axes = plans_[depth].axes;
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

}  // namespace spgen::lowering
