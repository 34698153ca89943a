#include "passes/lower_to_loops.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "ir/loop_ir_visitor.h"
#include "passes/infer_loop_order.h"
#include "passes/lower/abi_params.h"
#include "passes/lower/block_row_workspace.h"
#include "passes/lower/blocked_analysis.h"
#include "passes/lower/iteration_space.h"
#include "passes/lower/level_access.h"
#include "passes/lower/level_position.h"
#include "passes/lower/open_levels.h"
#include "passes/lower/listed_output.h"
#include "passes/lower/loop_plan.h"
#include "passes/lower/output_levels.h"
#include "passes/lower/output_order.h"
#include "passes/lower/output_strategy.h"
#include "passes/lower/part_programs.h"
#include "passes/lower/row_workspace.h"
#include "passes/lower/runs.h"

namespace spgen {

using namespace loops;
using namespace lowering;

ScalarType value_scalar_type(ValueType type) {
  return type == ValueType::Float32 ? ScalarType::Float32 : ScalarType::Float64;
}
ScalarType index_scalar_type(IndexType type) {
  return type == IndexType::Int32 ? ScalarType::Int32 : ScalarType::Int64;
}

namespace {

using sparse::block_row_part_program;
using sparse::parts_in_block_rows;

class Lowering {
 public:
  // `whole`: the program whose iteration has added parts, when `program` is its body's nest.
  Lowering(const sparse::Program& program, const Config& config, LoweringPhase phase, int counted_level,
           const sparse::Program* whole = nullptr)
      : program_(program), config_(config), value_type_(value_scalar_type(program.value_type)),
        index_type_(index_scalar_type(program.index_type)), assembled_(output_is_assembled(program)),
        counting_(phase == LoweringPhase::Assemble), counted_level_(counted_level) {
    if (counting_ && counted_level_ < 0) counted_level_ = assembled_levels(program).back();
    sum_.whole = whole;
    if (sum_.whole) sum_.shared_loops = static_cast<int>(sum_.whole->iteration.shared_loops());
  }

  LoweredFunc run() {
    LoweredFunc func;
    func.name = counting_ ? assemble_function_name(program_, counted_level_) : program_.kernel_name;
    reserve_names();
    // The parts of a listed output each list in a nest of their own: they share no loops.
    if (sum_.whole && parts_listed_beside_blocks(*sum_.whole)) sum_.shared_loops = 0;
    // The parts gathered in the output's block rows share only the loops of those.
    if (sum_.whole && parts_in_block_rows(*sum_.whole)) sum_.shared_loops = static_cast<int>(sparse::block_row_loops(program_));
    if (sum_.whole) check_body_blocked_by_its_own();
    plan_loops();
    plan_listed();
    names_before_positions_ = used_names_;
    func.params = kernel_params({program_, assembled_, counting_, counted_level_, listed_, by_runs_});
    check_fusions();
    plan_positions();
    plan_output();
    if (sum_.whole) check_added_parts_beside_blocks();
    if (sum_.whole && !counting_) check_added_parts();
    std::vector<Stmt> body;
    if (counting_) body.push_back(clear_counts());
    if (write_.needs_zero_fill) body.push_back(zero_fill());
    Stmt nest = sum_.whole && listed_ ? listed_parts_nests() : loop_nest(0);
    if (listed_ && !rest_.blockers.empty()) nest = with_listed_rest(nest, *this);
    if (listed_) nest = list_and_pack(nest);
    body.push_back(workspaces_.empty() ? nest : std::make_shared<Allocate>(workspaces_, nest));
    if (!rest_.blockers.empty() && !rest_.in_rows && !listed_) {
      Stmt rest = lower_outside_blocks();
      if (config_.target == Target::Cuda) append(body, statements_of(rest));  // its loop a top-level kernel
      else body.push_back(rest);
    }
    if (counting_) body.push_back(prefix_sum());
    func.body = block(std::move(body));
    return func;
  }

 private:
  // ---- names ----
  void reserve_names() {
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

  std::string fresh_name(const std::string& wanted) {
    std::string name = wanted;
    for (int suffix = 2; used_names_.count(name); ++suffix) name = wanted + "_" + std::to_string(suffix);
    used_names_.insert(name);
    return name;
  }

  // ---- which level drives each loop ----
  // The stored (non-dense) axis of `tensor` that binds `var`, or -1.
  int compressed_axis(const std::string& tensor, const std::string& var) const {
    const sparse::SparseBuffer& buffer = program_.structure_of(program_.buffer(tensor));
    for (int id : buffer.axes)  // (a level blocked apart is located at var / or % its block, never streamed)
      if (program_.axes[id].kind != sparse::AxisKind::DenseFixed && program_.axes[id].index_var == var &&
          !program_.axes[id].blocked_apart() && !located_vars_.count(var))
        return id;
    return -1;
  }

  // Which stored tensors the loop of `var` must visit.
  IterationSpace iteration_space(const ast::Expr& expr, const std::string& var) const {
    return terms(
        expr, [&](const std::string& tensor) { return compressed_axis(tensor, var) >= 0; },
        [&](const IterationSpace& divisor) {
          for (const Conjunction& c : divisor)
            if (!c.empty())
              throw_unsupported("dividing by " + *c.begin() + ", which stores index " + var +
                                " compressed, is not supported: its implicit zeros would divide by zero");
        });
  }

  [[noreturn]] void throw_unsupported(const std::string& message) const {
    throw CompileError(format_config_error(config_.file, "/tensors", message));
  }

  // How each loop visits its index variable. Every stored level on it is either streamed (a
  // cursor over its coordinates in increasing order) or, where it allows random access (a
  // ragged prefix), located: its position is computed from the coordinate that the streams (or
  // a dense loop) produce. A level is located only where every conjunction that needs it has
  // another operand to stream, as TACO iterates the sparsest operands and locates into the rest.
  void plan_loops() {
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
  void defer_located_terms(LoopPlan& plan, const std::string& loop, bool shared) const {
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
  void check_searched_terms() {
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
        // parts list the output's entries each in a nest of its own: SharedBlocksRefusal.)
        if (rows_visited_for_parts_only()) throw SharedBlocksRefusal(format_config_error(config_.file, "/tensors", message));
        // (Where the terms, products of sums multiplied out, can each have a nest of their own:
        // listing an assembled output's entries, or adding into a dense output in place; also
        // the terms of a part of a scoped sum, lower.cpp's every_term_apart.)
        if ((assembled_ || (!sum_.whole && output.format.all_dense())) &&
            ast::distributed_terms(program_.iteration.body, output.indices).size() > 1)
          throw UnionNestRefusal(format_config_error(config_.file, "/tensors", message));
        throw_unsupported(message);
      }
      for (const ast::Access* access : ast::collect_accesses(*program_.iteration.body))
        if (access->tensor == axis.tensor && divides_by(*program_.iteration.body, axis.tensor))
          throw_unsupported("dividing by " + axis.tensor + ", which stores index " + axis.mode_var + " " + stored +
                            ", is not supported: its implicit zeros would divide by zero");
    }
  }

  // The blocked operands' analysis (passes/lower/blocked_analysis.h), over this nest's loop plans.
  BlockedAnalysis blocked_analysis() const { return BlockedAnalysis(program_, plans_, assembled_, sum_.whole); }
  std::vector<std::string> blocked_alike(const std::string& blocker) const { return blocked_analysis().blocked_alike(blocker); }
  IterationSpace blocks_visited(const std::string& blocker) const { return blocked_analysis().blocks_visited(blocker); }
  bool inside_blocks_visited(const Conjunction& term, const std::string& blocker) const {
    return blocked_analysis().inside_blocks_visited(term, blocker);
  }
  bool blocks_visit_every_coordinate(const std::string& blocker) const { return blocked_analysis().blocks_visit_every_coordinate(blocker); }
  bool rows_visited_for_parts_only() const { return blocked_analysis().rows_visited_for_parts_only(); }
  std::string outside_blocks_refusal(const std::string& blocker) const { return blocked_analysis().outside_blocks_refusal(blocker); }
  int ungated_merge_level(const std::string& blocker, const std::string& tensor = "") const {
    return blocked_analysis().ungated_merge_level(blocker, tensor);
  }
  std::string blocked_otherwise(const std::vector<std::string>& alike) const { return blocked_analysis().blocked_otherwise(alike); }
  bool reads(const std::string& tensor) const { return blocked_analysis().reads(tensor); }
  int gathered_row_depth() const { return blocked_analysis().gathered_row_depth(); }
  std::string stored_as(const sparse::Axis& axis) const { return blocked_analysis().stored_as(axis); }
  bool visits_every_coordinate(int depth) const { return blocked_analysis().visits_every_coordinate(depth); }

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
  void plan_runs() {
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
  Runs runs() const { return Runs(program_, by_runs_); }
  static bool is_coo_level(const sparse::Axis& axis) { return Runs::is_coo_level(axis); }
  bool is_last_level(const sparse::Axis& axis) const { return runs().is_last_level(axis); }
  bool iterates_run(const sparse::Axis& axis) const { return runs().iterates_run(axis); }
  bool repeats(const sparse::Axis& axis) const { return runs().repeats(axis); }
  int axis_id(const sparse::Axis& axis) const { return runs().axis_id(axis); }

  // ---- stage I fuse ----
  const sparse::Fusion* fusion_at(int depth) const {
    for (const sparse::Fusion& f : program_.iteration.fusions)
      if (program_.depth_of(f.outer) == depth) return &f;
    return nullptr;
  }

  // The fused loops must visit the entries of the fused tensor alone: no other operand may be
  // co-iterated with it on either variable.
  void check_fusions() const {
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
  Stmt fused_rows_loop(int depth, const sparse::Fusion& f) {
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

  std::vector<Stmt> fused_row_changes() const { return lowering::fused_row_changes(output_context(), open_levels_); }

  // The loop at `depth` visits every coordinate of its variable (so no output entry is skipped).
  // (A loop this nest does not have, depth -1, restricts nothing: a part of a scoped sum holds
  // none of the loops of a blocked operand only another part reads.)
  bool iterates_axis(int depth, int axis) const {
    const std::vector<int>& axes = plans_[depth].axes;
    return std::find(axes.begin(), axes.end(), axis) != axes.end();
  }

  // ---- positions of each tensor's levels (passes/lower/level_position.h) ----
  void plan_positions() {
    for (const sparse::SparseBuffer& buffer : program_.buffers) {
      if (!buffer.shares_structure_with.empty()) continue;
      std::vector<LevelPosition>& levels = positions_[buffer.tensor];
      if (buffer.is_output && listed_) continue;  // its entries are listed, then packed (list_and_pack)
      Expr parent = int64(0);
      int parent_depth = -1;
      std::string found_above;  // the flag of the nearest level above located inside the blocks
      for (size_t level = 0; level < buffer.axes.size(); ++level) {
        // Levels below the one an assemble phase counts play no part in it.
        if (buffer.is_output && assembled_ && counting_ && static_cast<int>(level) > counted_level_) break;
        const sparse::Axis& axis = program_.axes[buffer.axes[level]];
        int depth = program_.depth_of(axis.index_var);
        if (const LevelPosition* outer = shared_position(buffer, level)) {
          // An added part's nest: the shared loops' positions and the output's, declared there.
          LevelPosition position = *outer;
          position.declare_depth = INT_MIN;
          // Visited by runs (its singleton child iterates the run) as the shared loop visits it.
          if (sum_.added_to->by_runs_.count(buffer.axes[level])) by_runs_.insert(buffer.axes[level]);
          else by_runs_.erase(buffer.axes[level]);
          // Located inside the blocks by the shared loops: this nest runs only where it was found.
          if (position.searched) searched_flags_[buffer.tensor].push_back({static_cast<int>(level), position.found});
          parent = var(position.name);
          parent_depth = position.ready_depth;
          levels.push_back(position);
          continue;
        }
        // Below the shared loops (anywhere, when listed), a nest of a sum's part has no positions
        // of a tensor only other parts read. (A rest listed beside a blocked operand still locates
        // the blocks it skips, below.)
        if (((sum_.lists_into && rest_.skip_blocks_of.empty()) || ((sum_.whole || sum_.added_to) && (depth < 0 || depth >= sum_.shared_loops))) && !buffer.is_output &&
            !reads(*program_.iteration.body, buffer.tensor))
          break;
        // Nor has a rest beside a blocked operand of a tensor it neither reads nor skips the blocks
        // of (B csr in A .* B + D, A bsr: B is zero outside A's blocks, so the rest is D alone).
        if (!rest_.skip_blocks_of.empty() && !buffer.is_output && !reads(buffer.tensor) && !skips_blocks_of(buffer.tensor)) break;
        // ... nor of the levels of one whose skip counts only those above them.
        if (auto above = rest_.skip_levels_above.find(buffer.tensor);
            above != rest_.skip_levels_above.end() && !reads(buffer.tensor) && static_cast<int>(level) >= above->second)
          break;
        LevelPosition position;
        position.name = fresh_name("p" + buffer.tensor + std::to_string(level));
        if (axis.kind == sparse::AxisKind::DenseFixed) {
          position.ready_depth = std::max(parent_depth, depth);
          position.value = add(mul(parent, axis_length(axis)), level_coordinate(axis));
        } else if (is_located_in_blocks(axis)) {
          position.searched = &axis;
          position.ready_depth = std::max(parent_depth, depth);
          position.value = parent;
          position.found = fresh_name(position.name + "_found");
          position.end = fresh_name(position.name + "_end");
          position.high = fresh_name(position.name + "_high");
          position.middle = fresh_name(position.name + "_mid");
          position.parent_found = found_above;
          if (level > 0) position.parent_run_end = levels.back().run_end;
          found_above = position.found;  // (false also when a level above is absent)
          searched_flags_[buffer.tensor].push_back({static_cast<int>(level), position.found});
        } else if (axis.kind == sparse::AxisKind::Singleton && !iterates_run(axis)) {
          position.ready_depth = depth;  // one entry per parent position: the same position
          position.value = parent;
        } else if (buffer.is_output && assembled_ && counting_ && static_cast<int>(level) == counted_level_) {
          // The counted level: its counts are indexed by the parent position.
          position.ready_depth = parent_depth;
          position.value = parent;
        } else if (buffer.is_output && assembled_ && axis.kind == sparse::AxisKind::DenseVariable) {
          // A ragged row holds 0 .. its largest coordinate: the entry is located, not appended.
          position.ready_depth = std::max(parent_depth, depth);
          position.value = add(cast(ScalarType::Int64, load(axis.pos, parent, index_type_)), var(axis.index_var));
        } else if (buffer.is_output && assembled_) {
          // A cursor, opened where the parent is known. The last level's is advanced by each
          // appended entry; a level above it is the next free position, and moves past the current
          // coordinate once that coordinate turns out to hold entries (see open_levels_).
          bool last = static_cast<int>(level) == entry_level(buffer.format) || static_cast<int>(level) == buffer.gathered_level;
          position.declare_depth = parent_depth;
          position.ready_depth = last ? parent_depth : depth;
          // An ELL row starts at its first slot; its positions only say how many it needs.
          position.value = axis.kind == sparse::AxisKind::SparseFixed ? mul(parent, int64(axis.width))
                                                                      : cast(ScalarType::Int64, load(axis.pos, parent, index_type_));
          // Under a ragged level, a coordinate past its row's largest one that holds entries has
          // no position there (nothing is written under it): its cursor must not read past the
          // pos array.
          bool under_ragged = false;
          for (size_t above = 0; above < level; ++above)
            under_ragged |= program_.axes[buffer.axes[above]].kind == sparse::AxisKind::DenseVariable;
          if (under_ragged && axis.kind != sparse::AxisKind::SparseFixed)
            position.value = select(binary(BinOp::Lt, parent, structure_size(buffer, level)), position.value, int64(0));
          position.is_cursor = true;
          // A fused loop appending in storage order: the last level's cursor runs through all
          // rows, declared before the loop (appends_rows_in_order).
          if (fused_rows_append_ && last && !counting_) {
            position.declare_depth = -1;
            position.value = cast(ScalarType::Int64, load(axis.pos, int64(0), index_type_));
            // In parallel, each entry's own position, declared by the fused loop (fused_rows_loop).
            if (fused_rows_parallel_) position.declare_depth = INT_MIN;
          }
        } else {
          if (!iterates_axis(depth, buffer.axes[level]))
            throw std::logic_error("compressed level " + axis.name + " is not iterated by its loop");
          position.ready_depth = depth;
        }
        if (!(buffer.is_output && assembled_ && position.is_cursor)) position.declare_depth = position.ready_depth;
        if (by_runs_.count(buffer.axes[level])) position.run_end = fresh_name(position.name + "_run_end");
        if (position.searched && !position.run_end.empty()) position.run_middle = fresh_name(position.name + "_run_mid");
        parent = var(position.name);
        parent_depth = position.ready_depth;
        levels.push_back(position);
        // The levels below a block-row workspace's are its blocks' values, written whole by the append.
        if (buffer.is_output && assembled_ && static_cast<int>(level) == buffer.gathered_level) break;
      }
    }
  }

  // The position of `tensor`'s last level (its value's index), and the depth where it is known.
  Expr value_position(const std::string& tensor) const {
    const sparse::SparseBuffer& structure = program_.structure_of(program_.buffer(tensor));
    const std::vector<LevelPosition>& levels = positions_.at(structure.tensor);
    return levels.empty() ? int64(0) : var(levels.back().name);
  }

  // ---- the output ----
  // Its rows (or block rows) are gathered in a workspace, then appended.
  bool scattered() const {
    return output_strategy_ == OutputStrategy::RowWorkspace || output_strategy_ == OutputStrategy::BlockRowWorkspace;
  }
  bool block_rows() const { return output_strategy_ == OutputStrategy::BlockRowWorkspace; }

  void plan_output() {
    const sparse::SparseBuffer& output = program_.output();
    int loops = static_cast<int>(program_.iteration.iterators.size());
    write_.depth = -1;
    for (const std::string& var : output.indices) write_.depth = std::max(write_.depth, program_.depth_of(var));
    bool reduction_outside = false;
    for (int d = 0; d < write_.depth; ++d) reduction_outside |= program_.iteration.iterators[d].is_reduction;
    // A fused row loop holds both variables: the output's entries are complete only after it.
    bool fused_output_index = false;
    for (const sparse::Fusion& f : program_.iteration.fusions) {
      int d = program_.depth_of(f.outer);
      if (!fuses_rows(f) || write_.depth < d) continue;
      if (write_.depth == d) write_.depth = d + 1;
      reduction_outside |= program_.iteration.iterators[d].is_reduction || program_.iteration.iterators[d + 1].is_reduction;
      for (const std::string& var : output.indices) fused_output_index |= var == f.outer || var == f.inner;
    }
    write_.scalar_accumulator = write_.depth < loops - 1;
    bool accumulate = program_.iteration.accumulate;
    // A non-unique level visits an output coordinate once per entry: those visits must add up.
    bool output_repeats = false;
    for (const std::string& var : output.indices) {
      const LoopPlan& plan = plans_[program_.depth_of(var)];
      for (int id : plan.axes) output_repeats |= repeats(program_.axes[id]);
    }
    reduction_outside |= output_repeats;
    // Reductions outside the last compressed level (or COO segment) scatter into a row workspace;
    // below a dense or ragged last level they just add into its entries. Counting a level above
    // the last needs no workspace: a row holds an entry as soon as anything is written under it.
    coo_segment_ = assembled_ && output.format.levels[entry_level(output.format)] == LevelKind::CompressedNonUnique;
    OutputFacts facts;
    facts.assembled = assembled_;
    facts.listed = listed_;
    if (assembled_) {  // (a dense output may have no levels: a scalar)
      facts.reduction_outside = reduction_outside;
      facts.last_level_gathers = output.format.levels.back() == LevelKind::Compressed ||
                                 output.format.levels.back() == LevelKind::SparseFixed || coo_segment_;
      facts.entry_level = entry_level(output.format);
      facts.gathered_level = output.gathered_level;
      facts.counted_level = counting_ ? counted_level_ : -1;
    }
    output_strategy_ = choose_output_strategy(facts);
    rest_.in_rows = assembled_ && !listed_ && output.gathered_level >= 0 && (!counting_ || counted_level_ <= output.gathered_level);
    if (rest_.block_row_owner) share_owner_rows();
    if (assembled_ && !listed_) plan_open_levels(output);
    if (rest_.in_rows && !rest_.blockers.empty())  // (the rest raises the flags too)
      for (OpenLevel& open : open_levels_) open.every_iteration = false;
    if (rest_.block_row_owner) share_owner_flags();
    if (rest_.in_rows && !block_rows() && (!rest_.blockers.empty() || rest_.block_row_owner)) {
      // Counting a compressed level above the gathered one (block-DCSR's block rows): the rest
      // still runs inside each block row, raising the same flag.
      rows_.row_depth = gathered_row_depth();
    }
    if (block_rows()) plan_block_workspace();
    else if (scattered()) plan_workspace();
    write_.overwrites = !accumulate && !reduction_outside;
    bool some_entry_unvisited = false;
    if (output.shares_structure_with.empty())
      for (const std::string& var : output.indices) {
        some_entry_unvisited |= !visits_every_coordinate(program_.depth_of(var));
        if (const sparse::BlockedVar* blocked = program_.blocked(var))
          some_entry_unvisited |= !visits_every_coordinate(program_.depth_of(blocked->outer));
      }
    some_entry_unvisited |= fused_output_index && output.shares_structure_with.empty();  // rows without entries
    // An output in an input X's structure has a value at each of X's positions: where the loop
    // over one of X's stored levels visits only coordinates that other operands store too (X .* B,
    // or X's block levels merged with those of an operand blocked alike), X's other entries are
    // never visited and must hold zeros.
    if (!output.shares_structure_with.empty())
      for (int id : program_.structure_of(output).axes) {
        const sparse::Axis& axis = program_.axes[id];
        int depth = program_.depth_of(axis.index_var);
        if (depth < 0 || visits_every_coordinate(depth)) continue;
        if (axis.kind == sparse::AxisKind::DenseFixed) {  // (a loop that follows another operand's level)
          some_entry_unvisited = true;
          continue;
        }
        const IterationSpace& space = plans_[depth].space;
        some_entry_unvisited |= std::none_of(space.begin(), space.end(), [&](const Conjunction& c) {
          return c.size() == 1 && c.count(output.shares_structure_with) > 0;
        });
      }
    // ELL padding positions of a shared structure are never visited but must hold zeros.
    for (int id : program_.structure_of(output).axes) some_entry_unvisited |= program_.axes[id].kind == sparse::AxisKind::SparseFixed;
    some_entry_unvisited |= !rest_.blockers.empty();  // the rest adds into the output
    write_.needs_zero_fill = !assembled_ && !accumulate && (reduction_outside || some_entry_unvisited);
    // Dense levels below a compressed (or ragged, or ELL) one store every coordinate under an entry,
    // written or not. So do the gaps of a ragged row.
    // So do an ELL row's slots past its entries (padding).
    if (assembled_ && !counting_)
      write_.needs_zero_fill = dense_below_compressed_or_ragged(output.format) || output.format.levels.back() == LevelKind::DenseVariable ||
                         output.format.levels.back() == LevelKind::SparseFixed;
    if (block_rows()) write_.needs_zero_fill = false;  // each block is appended whole, its zeros included
    if (write_.scalar_accumulator) write_.accumulator = fresh_name("acc");
    split_hoistable_factors();
  }

  static bool dense_below_compressed_or_ragged(const Format& format) {
    auto first = std::find_if(format.levels.begin(), format.levels.end(), [](LevelKind k) {
      return k == LevelKind::Compressed || k == LevelKind::CompressedNonUnique || k == LevelKind::DenseVariable ||
             k == LevelKind::SparseFixed;
    });
    return std::find(first, format.levels.end(), LevelKind::Dense) != format.levels.end();
  }

  // An assembled output's compressed levels above its last one hold a coordinate only where the
  // loops below it produce an entry (the iteration space, so a computed zero stays stored). Each
  // such level gets a flag, declared in its coordinate's loop body and raised by every entry
  // written below; after the body the flag advances the level's cursor (or, counting that level,
  // its count).
  void plan_open_levels(const sparse::SparseBuffer& output) {
    const std::vector<LevelPosition>& levels = positions_.at(output.tensor);
    int last_open = output.gathered_level >= 0 ? output.gathered_level : entry_level(output.format);
    for (int level = 0; level < last_open; ++level) {
      const sparse::Axis& axis = program_.axes[output.axes[level]];
      if (counting_ && level > counted_level_) break;
      if (axis.kind == sparse::AxisKind::DenseVariable) {
        if (counting_ && level == counted_level_) open_ragged_level(output, level);
        continue;
      }
      if (axis.kind != sparse::AxisKind::SparseVariable) continue;
      // A COO segment above the last level holds a position per distinct coordinates of its
      // levels: it is open until the loop of the segment's innermost index.
      const int last_of_level = axis.unique ? level : segment_end(output.format, level);
      int depth = program_.depth_of(axis.index_var);
      for (int l = level; l <= last_of_level; ++l)
        depth = std::max(depth, program_.depth_of(program_.axes[output.axes[l]].index_var));
      for (int d = 0; d < depth; ++d)
        if (program_.iteration.iterators[d].is_reduction) {
          const std::string message = format_config_error(config_.file, "/tensors/" + output.tensor + "/format",
                                                          summed_outside_compressed_level(output, level, program_.iteration.iterators[d].var));
          // (A blocked output's entries can be listed into its blocks instead, as an unblocked
          // output's are listed where they arrive out of order: lower.cpp, SharedBlocksRefusal.)
          if (output.format.is_blocked() && !output.listed_blocks) throw SharedBlocksRefusal(message);
          throw CompileError(message);
        }
      for (int l = level; l <= last_of_level; ++l) {
        const std::string& var_l = program_.axes[output.axes[l]].index_var;
        for (int id : plans_[program_.depth_of(var_l)].axes)
          if (repeats(program_.axes[id]))
            throw_unsupported("sparse output " + output.tensor + " (" + output.format.name + ") stores " + var_l +
                              " in compressed level " + std::to_string(l) + ", but the loop over " + var_l +
                              " visits each coordinate once per entry of " + program_.axes[id].tensor +
                              " (a non-unique level), so it cannot be appended to; make that level of " + output.tensor +
                              " dense");
      }
      OpenLevel open;
      open.level = level;
      open.last_level = last_of_level;
      open.depth = depth;
      open.flag = fresh_name(output.tensor + std::to_string(level) + "_nonempty");
      open.counted = counting_ && open.level == counted_level_;
      if (!open.counted) open.cursor = levels[level].name;
      open.every_iteration = writes_every_iteration(depth);
      if (fused_rows_append_) open.fused_row = fresh_name(output.tensor + std::to_string(level) + "_row");
      open_levels_.push_back(open);
    }
    // Cursors and counts are shared by the loops inside the first compressed (ragged, ELL) level's parent.
    for (size_t level = 0; level < output.axes.size(); ++level)
      if (program_.axes[output.axes[level]].kind == sparse::AxisKind::SparseVariable ||
          program_.axes[output.axes[level]].kind == sparse::AxisKind::DenseVariable ||
          program_.axes[output.axes[level]].kind == sparse::AxisKind::SparseFixed) {
        append_depth_ = level == 0 ? -1 : levels[level - 1].ready_depth;
        break;
      }
  }

  // Why a summed loop outside a compressed level above the last is refused, and what to store
  // instead: dense or ragged levels are located (their positions follow from the coordinates), so
  // their coordinates may come in any order and repeatedly. A last level that is appended to
  // (compressed, ELL, COO) would also get its rows out of order, so it must change too.
  std::string summed_outside_compressed_level(const sparse::SparseBuffer& output, int level, const std::string& summed) const {
    const sparse::Axis& axis = program_.axes[output.axes[level]];
    LevelKind last = output.format.levels[entry_level(output.format)];
    bool last_appended = last != LevelKind::Dense && last != LevelKind::DenseVariable;
    return "sparse output " + output.tensor + " (" + output.format.name + ") is summed over " + summed +
           " outside its compressed level " + std::to_string(level) + " (index " + axis.index_var +
           "), whose coordinates would then arrive out of order and repeatedly, but a compressed level appends each "
           "coordinate once, in increasing order; reorder so the output's loops are outermost, or store " +
           output.tensor + (last_appended ? " with dense or dense-variable levels only"
                                          : " with dense or dense-variable levels above its last one") +
           " (their positions are located from the coordinates, which may come in any order)";
  }

  // A ragged level above the output's last one, counted: its row (the parent position) is as long
  // as its largest coordinate that holds entries below, + 1. Maxima do not depend on the order the
  // coordinates come in, and the fill locates each coordinate's position (pos[p] + coordinate), so
  // summed loops outside it are no obstacle, and nothing is opened when filling.
  void open_ragged_level(const sparse::SparseBuffer& output, int level) {
    OpenLevel open;
    open.level = open.last_level = level;
    open.depth = program_.depth_of(program_.axes[output.axes[level]].index_var);
    open.flag = fresh_name(output.tensor + std::to_string(level) + "_nonempty");
    open.counted = true;
    open.every_iteration = writes_every_iteration(open.depth);
    open_levels_.push_back(open);
  }

  // Only the dense in-block loops of blocked indices (a blocked output's whole blocks) lie between
  // the loop at `depth` and the output's entries: each of its iterations writes some.
  bool writes_every_iteration(int depth) const {
    if (scattered() || depth >= write_.depth) return false;
    for (int d = depth + 1; d <= write_.depth; ++d) {
      const std::string& loop_var = program_.iteration.iterators[d].var;
      const sparse::BlockedVar* blocked = program_.blocked_loop(loop_var);
      if (!blocked || loop_var != blocked->inner || plans_[d].kind != LoopKind::Dense || fusion_at(d)) return false;
    }
    return true;
  }

  // Below the last marked level only whole blocks are written (dense positions, no cursor), and
  // every level above was marked before them: those loops share nothing.
  bool inside_marked_blocks(int depth) const {
    if (open_levels_.empty()) return false;
    for (const OpenLevel& open : open_levels_)
      if (!open.every_iteration || depth <= open.depth) return false;
    const sparse::SparseBuffer& output = program_.output();
    return program_.axes[output.axes[entry_level(output.format)]].kind == sparse::AxisKind::DenseFixed;
  }

  // The statements of the open levels (passes/lower/open_levels.h).
  Stmt with_open_flags(int depth, Stmt body) const {
    if (std::none_of(open_levels_.begin(), open_levels_.end(), [&](const OpenLevel& open) { return open.depth == depth; }))
      return body;
    const bool counts_here = std::any_of(open_levels_.begin(), open_levels_.end(),
                                         [&](const OpenLevel& open) { return open.depth == depth && open.counted; });
    return lowering::with_open_flags(output_context(), open_levels_, depth, std::move(body),
                                     counts_here ? value_position(program_.output().tensor) : nullptr);
  }
  std::vector<Stmt> open_levels() const { return lowering::open_levels(output_context(), open_levels_); }
  Stmt store_ragged_length(const sparse::Axis& axis, Expr slot) const { return lowering::store_ragged_length(output_context(), axis, std::move(slot)); }
  Stmt store_open_coordinate(int first_level, int last_level, const std::string& cursor) const {
    return lowering::store_open_coordinate(output_context(), first_level, last_level, cursor);
  }

  // With a scalar accumulator, factors of the top-level product that do not depend on the
  // summed loops are applied once, after the sum: `Y = X * (sum_k A*B)` rather than summing X*A*B.
  void split_hoistable_factors() {
    std::vector<ast::ExprPtr> factors;
    collect_factors(program_.iteration.body, factors);
    for (const ast::ExprPtr& factor : factors) {
      // (Added parts add into the same sum: nothing multiplies it afterwards.)
      bool outer = write_.scalar_accumulator && !sum_.whole && !sum_.added_to && max_depth(*factor) <= write_.depth;
      (outer ? write_.outer_factors : write_.inner_factors).push_back(factor);
    }
  }

  static void collect_factors(const ast::ExprPtr& expr, std::vector<ast::ExprPtr>& out) {
    if (expr->kind == ast::ExprKind::Mul) {
      collect_factors(expr->lhs, out);
      collect_factors(expr->rhs, out);
    } else {
      out.push_back(expr);
    }
  }

  int max_depth(const ast::Expr& expr) const {
    int depth = -1;
    for (const ast::Access* access : ast::collect_accesses(expr))
      for (const std::string& var : access->indices) depth = std::max(depth, program_.depth_of(var));
    return depth;
  }

  Expr product(const std::vector<ast::ExprPtr>& factors) const {
    Expr result;
    for (const ast::ExprPtr& factor : factors) {
      Expr value = lower_expr(*factor);
      result = result ? binary(BinOp::Mul, result, value) : value;
    }
    return result;
  }

  Expr lower_expr(const ast::Expr& expr) const {
    switch (expr.kind) {
      case ast::ExprKind::Access: {
        const std::string& tensor = expr.access.tensor;
        Expr value = load(program_.buffer(tensor).values, value_position(tensor), value_type_);
        Expr present = presence(tensor);
        return present ? select(present, value, std::make_shared<FloatImm>(0.0, "0", value_type_)) : value;
      }
      case ast::ExprKind::Literal: return std::make_shared<FloatImm>(expr.value, expr.literal, value_type_);
      case ast::ExprKind::Neg: return std::make_shared<Neg>(lower_expr(*expr.lhs));
      default: break;
    }
    BinOp op = expr.kind == ast::ExprKind::Add   ? BinOp::Add
               : expr.kind == ast::ExprKind::Sub ? BinOp::Sub
               : expr.kind == ast::ExprKind::Mul ? BinOp::Mul
                                                 : BinOp::Div;
    return binary(op, lower_expr(*expr.lhs), lower_expr(*expr.rhs));
  }

  // The tensor is stored at the current point (null: always, no merge loop around here involves
  // it, and none of its levels above `above_level` is found by binary search).
  Expr presence(const std::string& tensor, int above_level = INT_MAX) const {
    return presence_with_searched(tensor, [&](const std::string&, int level) { return level < above_level; });
  }

  // The merge loops' presence flags of the tensor's structure, and the found flags of those of
  // its levels located by binary search that `counts(structure, level)` keeps.
  template <class KeepSearched>
  Expr presence_with_searched(const std::string& tensor, const KeepSearched& counts) const {
    const std::string& structure = program_.structure_of(program_.buffer(tensor)).tensor;
    Expr all;
    if (auto found = presence_.find(structure); found != presence_.end())
      for (const std::string& flag : found->second) all = logical_and(all, var(flag, ScalarType::Bool));
    if (auto found = searched_flags_.find(structure); found != searched_flags_.end())
      for (const auto& [level, flag] : found->second)
        if (counts(structure, level)) all = logical_and(all, var(flag, ScalarType::Bool));
    return all;
  }

  // The number of positions of the buffer's first `levels` levels (all of them by default).
  Expr structure_size(const sparse::SparseBuffer& buffer, size_t levels = SIZE_MAX) const {
    return lowering::structure_size(program_, buffer, index_type_, levels);
  }

  Stmt zero_fill() {
    const sparse::SparseBuffer& output = program_.output();
    std::string p = fresh_name("p");
    Stmt store = std::make_shared<Store>(output.values, var(p), std::make_shared<FloatImm>(0.0, "0", value_type_), false);
    std::string why = write_.overwrites ? "the loops below skip entries that must be zero" : "the loops below add into it";
    // (A scalar output has no levels: its one value is the whole structure.)
    const sparse::Axis* last = output.axes.empty() ? nullptr : &program_.axes[output.axes.back()];
    if (assembled_ && last && last->kind == sparse::AxisKind::SparseFixed) {
      // Every slot starts as padding; the fill overwrites a row's first ones.
      why = "every slot starts as padding";
      store = block({store, std::make_shared<Store>(last->crd, var(p), cast(index_type_, int64(-1)), false)});
    }
    return block({std::make_shared<Comment>("zero " + output.tensor + ": " + why),
                  std::make_shared<For>("zero " + output.tensor, p, int64(0), structure_size(program_.structure_of(output)), store)});
  }

  // `enclosing`: the number of loops around the write (all of them by default; the loops outside
  // a scalar sum's).
  Stmt write_output(Expr value, int enclosing = INT_MAX) const {
    const sparse::SparseBuffer& output = program_.output();
    // (A term whose located factor is absent is zero: listed, it would be an explicit zero in
    // the output's structure, one per coordinate the loops visit, as where E is located in the
    // dense block loops of B beside A's blocks. Only the factors located by the loops around the
    // write count: a scalar sum's are gone.)
    if (listed_)
      return only_where(some_term_present(tensor_terms(*program_.iteration.body),
                                          [&](const std::string& tensor) {
                                            return presence_with_searched(tensor, [&](const std::string& structure, int level) {
                                              return positions_.at(structure)[static_cast<size_t>(level)].ready_depth < enclosing;
                                            });
                                          }),
                        list_entry(std::move(value)));
    if (!assembled_)
      return std::make_shared<Store>(output.values, value_position(output.tensor), std::move(value), !write_.overwrites);
    if (block_rows()) return scatter_into_block(std::move(value));
    if (scattered()) return scatter(std::move(value));
    std::vector<Stmt> stmts = open_levels();
    Expr cursor = value_position(output.tensor);
    int entries = entry_level(output.format);
    const sparse::Axis& axis = program_.axes[output.axes[entries]];
    if (counting_) {
      // One more entry under this parent (counts sit one slot up, for the prefix sum); a level
      // above the last one counts its flag instead, after its coordinate's loop.
      if (counted_level_ == entries && axis.kind == sparse::AxisKind::DenseVariable) {
        stmts.push_back(store_ragged_length(axis, add(cursor, int64(1))));
      } else if (counted_level_ == entries) {
        stmts.push_back(std::make_shared<Store>(axis.pos, add(cursor, int64(1)), cast(index_type_, int64(1)), true,
                                                /*atomic=*/fused_rows_parallel_));
      }
    } else if (axis.kind == sparse::AxisKind::SparseVariable) {
      // The entry's coordinates: the level's own, and those of the singletons below it (COO).
      const std::string& name = positions_.at(output.tensor)[entries].name;
      for (size_t level = entries; level < output.axes.size(); ++level) {
        const sparse::Axis& stored = program_.axes[output.axes[level]];
        stmts.push_back(std::make_shared<Store>(stored.crd, var(name), cast(index_type_, var(stored.index_var)), false));
      }
      stmts.push_back(std::make_shared<Store>(output.values, var(name), std::move(value), false));
      if (!fused_rows_parallel_) stmts.push_back(std::make_shared<Assign>(name, int64(1), true));
    } else if (axis.kind == sparse::AxisKind::SparseFixed) {
      // The next of the row's slots.
      const std::string& name = positions_.at(output.tensor)[entries].name;
      Expr row = entries == 0 ? int64(0) : var(positions_.at(output.tensor)[entries - 1].name);
      Stmt slot = block({std::make_shared<Store>(axis.crd, var(name), cast(index_type_, var(axis.index_var)), false),
                         std::make_shared<Store>(output.values, var(name), std::move(value), false)});
      stmts.push_back(within_ell_row(axis, row, name, slot));
      stmts.push_back(std::make_shared<Assign>(name, int64(1), true));
    } else {  // a dense or ragged last level, zeroed first
      stmts.push_back(std::make_shared<Store>(output.values, cursor, std::move(value), !write_.overwrites));
    }
    return stmts.size() == 1 ? stmts.front() : block(std::move(stmts));
  }

  // A scattered sparse output: its rows gathered in a workspace (passes/lower/row_workspace.h).
  OutputContext output_context() const {
    static const std::vector<LevelPosition> none;  // (before the positions are planned)
    const auto positions = positions_.find(program_.output().tensor);
    return {program_, config_, positions == positions_.end() ? none : positions->second, counting_, counted_level_, coo_segment_,
            value_type_, index_type_};
  }
  void plan_workspace() {
    rows_ = plan_row_workspace(output_context(), [this](const std::string& wanted) { return fresh_name(wanted); }, workspaces_);
  }
  Stmt scatter(Expr value) const {
    return scatter_into_row(output_context(), rows_, std::move(value), open_levels(), value_position(program_.output().tensor));
  }
  Stmt around_row(Stmt row_loops) {
    return append_row(output_context(), rows_, std::move(row_loops), [this](const std::string& wanted) { return fresh_name(wanted); });
  }

  // ---- a list of the output's entries ----
  // The order the output's entries arrive in (passes/lower/output_order.h).
  OutputOrder output_order() const {
    return OutputOrder(program_, config_, plans_, by_runs_, assembled_, sum_.whole, sum_.added_to || sum_.lists_into);
  }
  std::pair<const sparse::Axis*, const sparse::Axis*> fused_axes(const sparse::Fusion& f) const { return output_order().fused_axes(f); }
  bool fuses_rows(const sparse::Fusion& f) const { return output_order().fuses_rows(f); }
  std::string out_of_order_reason(const sparse::SparseBuffer& output) const { return output_order().out_of_order_reason(output); }
  bool appends_rows_in_order(const sparse::SparseBuffer& output) const { return output_order().appends_rows_in_order(output); }

  void plan_listed() {
    if (sum_.lists_into) {
      // A part of a sum into a listed output: its entries join the one list.
      listed_ = true;
      list_ = sum_.lists_into->list_;
      return;
    }
    if (!assembled_) return;
    const sparse::SparseBuffer& output = program_.output();
    if (output.gathered_level >= 0) return;
    for (size_t l = 0; l < output.format.levels.size() && !output.listed_blocks; ++l)
      if (output.format.block(l).part != BlockPart::None) return;  // appended in the block loops' order
    const std::string why = out_of_order_reason(output);
    if (why.empty()) {
      fused_rows_append_ = appends_rows_in_order(output);
      if (fused_rows_append_)
        for (const ScheduleOp& op : config_.schedule) fused_rows_parallel_ |= std::holds_alternative<ParallelOp>(op.op);
      return;
    }
    listed_ = true;
    list_.keys = fresh_name(output.tensor + "_keys");
    list_.values = fresh_name(output.tensor + "_entries");
    list_.count = fresh_name(output.tensor + "_listed");
  }

  // The list's code (passes/lower/listed_output.h).
  Stmt list_entry(Expr value) const { return lowering::list_entry(output_context(), list_, std::move(value)); }
  Stmt list_and_pack(Stmt nest) {
    return lowering::list_and_pack(output_context(), list_, std::move(nest), out_of_order_reason(program_.output()),
                                   [this](const std::string& wanted) { return fresh_name(wanted); });
  }

  // ---- a block-row workspace (passes/lower/block_row_workspace.h) ----
  void plan_block_workspace() {
    plan_block_row_workspace(output_context(), [this](const std::string& wanted) { return fresh_name(wanted); }, workspaces_,
                             rest_.block_row_owner ? &rest_.block_row_owner->rows_ : nullptr, rows_, blocks_);
  }
  Stmt scatter_into_block(Expr value) const {
    return lowering::scatter_into_block(output_context(), rows_, blocks_, std::move(value), open_levels());
  }
  Stmt around_block_row(Stmt row_loops) {
    return append_block_row(output_context(), rows_, blocks_, std::move(row_loops), why_blocks_gathered(),
                            [this](const std::string& wanted) { return fresh_name(wanted); });
  }
  // Why the output's blocks are gathered in a workspace, for the kernel's comment.
  std::string why_blocks_gathered() const {
    const sparse::SparseBuffer& output = program_.output();
    if (!rest_.blockers.empty()) return blocks_of() + ", and the other operands' entries outside them";
    if (sum_.whole && parts_in_block_rows(*sum_.whole)) return "the parts of the sum gather into it, each blocked only by its own operands";
    if (std::any_of(program_.blocked_vars.begin(), program_.blocked_vars.end(),
                    [&](const sparse::BlockedVar& b) { return b.tensor != output.tensor; }))
      return "the operands give only some of " + output.tensor + "'s blocked indices";
    return "no operand gives " + output.tensor + "'s blocks";
  }

  // Loops inside a row share its workspace: they stay sequential.
  LoopAnnotations loop_annotations(int depth) const {
    LoopAnnotations annotations;
    if (listed_) {
      // On cuda each entry takes its slot of the list atomically: any loop may run on threads. On
      // the cpu the outermost loop may run in parallel, each thread listing into lists of its own
      // that join the list in thread order (schedule_loops' parallel); the loops inside stay
      // sequential.
      if (config_.target == Target::Cuda) return annotations;
      // (A part of a scoped sum appends to the list after the parts before it: its loops stay
      // sequential, listed_parts_nests.)
      if (depth == 0 && sum_.lists_into == nullptr) {
        annotations.listed.keys = list_.keys;
        annotations.listed.count = list_.count;
        if (!counting_) annotations.listed.values = list_.values;
      } else {
        annotations.sequential_reason = "it appends to the list of " + program_.output().tensor + "'s entries";
      }
      return annotations;
    }
    if (assembled_ && depth > append_depth_ && depth <= write_.depth && !inside_marked_blocks(depth))  // (summed loops inside touch neither)
      annotations.sequential_reason = std::string(counting_ ? "it counts" : "it appends") + " the entries of " +
                                      program_.output().tensor + " under one parent position";
    if (scattered() && depth > rows_.row_depth)
      annotations.sequential_reason = "it adds into the row workspace of " + program_.output().tensor;
    // A summed loop above a ragged output's rows: its lengths and values have no private copies.
    if (assembled_ && depth <= append_depth_ && program_.iteration.iterators[depth].is_reduction)
      annotations.sequential_reason = std::string(counting_ ? "it counts" : "it adds into") + " the rows of " +
                                      program_.output().tensor + ", which are assembled, not privatized";
    return annotations;
  }

  // Assemble phase: zero the counts, and turn them into positions after the loops.
  Stmt clear_counts() {
    const sparse::SparseBuffer& output = program_.output();
    const sparse::Axis& axis = program_.axes[output.axes[counted_level_]];
    std::string p = fresh_name("p");
    Expr parents = parent_count(output);
    return block({std::make_shared<Comment>("count the entries of " + output.tensor + " under each parent position"),
                  std::make_shared<For>("zero " + output.tensor, p, int64(0), add(parents, int64(1)),
                                        std::make_shared<Store>(axis.pos, var(p), cast(index_type_, int64(0)), false))});
  }

  Stmt prefix_sum() {
    const sparse::SparseBuffer& output = program_.output();
    const sparse::Axis& axis = program_.axes[output.axes[counted_level_]];
    std::string p = fresh_name("p");
    Stmt step = std::make_shared<Store>(axis.pos, add(var(p), int64(1)), load(axis.pos, var(p), index_type_), true);
    return block({std::make_shared<Comment>("prefix sum: counts become positions"),
                  std::make_shared<For>("prefix sum", p, int64(0), parent_count(output), step)});
  }

  // Parent positions of the counted level of an assembled output.
  Expr parent_count(const sparse::SparseBuffer& output) const {
    return structure_size(output, static_cast<size_t>(counted_level_));
  }

  // Declarations of the positions that become known at `depth`.
  std::vector<Stmt> position_declares(int depth) const {
    std::vector<Stmt> declares;
    for (const sparse::SparseBuffer& buffer : program_.buffers) {
      auto found = positions_.find(buffer.tensor);
      if (found == positions_.end()) continue;
      for (const LevelPosition& position : found->second)
        if (position.searched && position.declare_depth == depth)
          append(declares, locate_in_blocks(position));
        else if (position.value && position.declare_depth == depth)
          declares.push_back(std::make_shared<Declare>(position.name, ScalarType::Int64, position.value, position.is_cursor));
    }
    return declares;
  }

  // ---- located inside the blocks ----
  // A level of another operand on an index that a blocked operand splits (A bsr .* B csr): the
  // block loops produce its coordinates a block at a time, and no cursor can follow them across
  // blocks, so each coordinate is located under the level's parent position, by the level's kind:
  // - compressed: binary search in the parent's crd range;
  // - ragged (dense-variable): direct, at position pos[p] + coordinate, stored below pos[p+1];
  // - ELL: binary search in the parent's W slots (increasing up to the padding, whose coordinate
  //   is negative: "0 <= crd < coordinate" holds on a prefix);
  // - COO: the run of equal coordinates (a compressed-nonunique level, or a singleton above the
  //   last level) by a lower and an upper bound, inside the parent's run; the last singleton
  //   by one search there;
  // - a level blocked apart from the loops (B bsr 4x4 beside A bsr 2x2): the same, at the
  //   coordinate / its block (block level) or % its block (in-block level).
  // (The rest of a union, lower_outside_blocks, locates the blocked operand's own blocks so.)
  bool is_located_in_blocks(const sparse::Axis& axis) const {
    const sparse::BlockedVar* blocked = program_.blocked(axis.index_var);
    if (axis.tensor == program_.output().tensor) return false;  // a block-row workspace gathers its blocks
    if (axis.kind == sparse::AxisKind::DenseFixed) return false;
    // A rest locates the blocks it skips, their unblocked sparse levels too (DCSR-like rows).
    if (axis.block_part == BlockPart::None && skips_blocks_of(axis.tensor) && !reads(axis.tensor)) return true;
    if (located_vars_.count(axis.index_var)) return true;  // (a cuda rest's outer loop: see lower_outside_blocks)
    return (blocked && blocked->tensor != axis.tensor) || axis.blocked_apart();
  }

  bool skips_blocks_of(const std::string& tensor) const {
    return std::any_of(rest_.skip_blocks_of.begin(), rest_.skip_blocks_of.end(), [&](const Conjunction& c) { return c.count(tensor) > 0; });
  }

  static std::string locate_strategy(const sparse::Axis& axis, bool in_run = true) {
    return level_access(axis)->locate_strategy(in_run);
  }

  std::vector<Stmt> locate_in_blocks(const LevelPosition& position) const {
    const sparse::Axis& axis = *position.searched;
    const std::string& p = position.name;
    const Expr parent = position.value;
    auto [begin, last] = level_access(axis)->positions_under(parent, position.parent_run_end, index_type_);
    // An absent parent has no entries: a located level above that is not found, or a merge
    // around here that found no entry of this tensor (its cursor may sit past the end).
    Expr parent_found = position.parent_found.empty() ? nullptr : var(position.parent_found, ScalarType::Bool);
    if (auto merged = presence_.find(axis.tensor); merged != presence_.end())
      for (const std::string& flag : merged->second) parent_found = logical_and(parent_found, var(flag, ScalarType::Bool));
    if (parent_found) {
      begin = select(parent_found, begin, int64(0));
      last = select(parent_found, last, int64(0));
    }
    const Expr coordinate = level_coordinate(axis);
    const sparse::BlockedVar* blocked = program_.blocked(axis.index_var);
    std::string why = located_vars_.count(axis.index_var)
                          ? "each thread takes its own coordinates of " + axis.index_var + ", so no cursor can follow them"
                      : blocked ? blocked->tensor + " splits " + axis.index_var + " into blocks, so no cursor can follow it"
                      : reads(axis.tensor) && !program_.output().shares_structure_with.empty()
                          ? "the loops follow the entries of " + program_.output().shares_structure_with + ", whose structure " +
                                program_.output().tensor + " shares"
                          : "to skip the blocks of " + axis.tensor + ", done above";
    std::vector<Stmt> stmts = {std::make_shared<Comment>("locate " + level_coordinate_prose(axis) + " in " + axis.tensor + " by " +
                                                         locate_strategy(axis, !position.parent_run_end.empty()) + " (" +
                                                         why + ")")};
    const SearchNames names = {p, position.end, position.high, position.middle, position.found, position.run_end, position.run_middle};
    std::vector<Stmt> search = level_access(axis)->locate(names, parent, begin, last, parent_found, coordinate,
                                                          !position.parent_run_end.empty(), index_type_);
    stmts.insert(stmts.end(), search.begin(), search.end());
    return stmts;
  }

  Stmt innermost_statement() const {
    Stmt statement;
    if (counting_) statement = write_output(nullptr);
    else if (write_.scalar_accumulator) statement = std::make_shared<Assign>(write_.accumulator, product(write_.inner_factors), true);
    else statement = write_output(product(write_.inner_factors));
    if (rest_.skip_blocks_of.empty()) return statement;
    // The blocks of the blocked operands were done before (lower_outside_blocks).
    Expr in_blocks;
    for (const Conjunction& visited : rest_.skip_blocks_of) {
      Expr all;
      for (const std::string& tensor : visited) {
        auto levels = rest_.skip_levels_above.find(tensor);
        all = logical_and(all, presence(tensor, levels == rest_.skip_levels_above.end() ? INT_MAX : levels->second));
      }
      in_blocks = logical_or(in_blocks, all);
    }
    return std::make_shared<If>(binary(BinOp::Eq, in_blocks, std::make_shared<IntImm>(0, ScalarType::Bool)), statement, nullptr);
  }

  // ---- the rest of a union beside a blocked operand ----
  // A + B, A bsr: the block loops visit A's blocks (B located inside them); then B's entries
  // outside them, with A gone from the expression (it is zero there): the same spec, unblocked,
  // whose loops follow B, locate A's block at each coordinate (as an operand blocked otherwise)
  // and skip the coordinate where A stores it. It adds into the output, zeroed before the blocks.
  Stmt lower_outside_blocks() {
    sparse::Program rest = rest_program();
    auto lower_rest = [&](const std::set<std::string>& located_vars) {
      auto lowering = std::make_unique<Lowering>(rest, config_, LoweringPhase::Compute, -1);
      lowering->used_names_ = used_names_;
      lowering->rest_.skip_blocks_of = rest_.skip_blocks_of;  // (a rest's own rest skips both)
      lowering->rest_.skip_levels_above = rest_.skip_levels_above;
      lowering->rest_.skip_blocks_of.insert(lowering->rest_.skip_blocks_of.end(), rest_.blocks_done.begin(), rest_.blocks_done.end());
      lowering->located_vars_ = located_vars;
      return lowering;
    };
    std::unique_ptr<Lowering> rest_lowering = lower_rest({});
    LoweredFunc func = rest_lowering->run();
    // On the GPU the rest's outer loop is spread over the grid, where a merge's cursors cannot
    // be shared out: where it merges (B and D dcsr), it visits every coordinate instead, each
    // operand's level there located by binary search (as inside the blocks; an absent row has
    // no entries), so that each thread has rows of its own.
    if (config_.target == Target::Cuda && rest_lowering->plans_.front().kind == LoopKind::Merge) {
      rest_lowering = lower_rest({rest.iteration.iterators.front().var});
      func = rest_lowering->run();
    }
    Lowering& lowering = *rest_lowering;
    used_names_.insert(lowering.used_names_.begin(), lowering.used_names_.end());
    Stmt comment = std::make_shared<Comment>("the other operands outside " + blocks_of() + ", where " + zero() + ": " +
                                             ast::to_string(*rest.iteration.body));
    Stmt body = relabel_shared_loops(func.body);
    if (config_.target != Target::Cuda) return block({comment, body});
    // On the GPU the block loops' kernel would run the rest in every thread: the rest is a kernel
    // of its own after it, its outer loop spread over the grid. Iterations that may meet on an
    // output entry (a summed outer loop, COO rows that repeat) add into it atomically; a merge's
    // cursors cannot be shared out.
    std::vector<Stmt> top;
    std::function<void(const Stmt&)> flatten = [&](const Stmt& s) {
      if (s->kind == StmtKind::Block) for (const Stmt& t : static_cast<const Block&>(*s).stmts) flatten(t);
      else top.push_back(s);
    };
    flatten(body);
    // Its loop, then the kernels of its own rest, if any (beside a second operand blocked otherwise).
    std::vector<Stmt> own_rest(top.begin() + (top.empty() ? 0 : 1), top.end());
    bool own_rest_kernels = std::all_of(own_rest.begin(), own_rest.end(), [](const Stmt& s) {
      return s->kind == StmtKind::Comment || (as_for(s) && as_for(s)->annotations.own_kernel);
    });
    const For* loop = !top.empty() && own_rest_kernels ? as_for(top.front()) : nullptr;
    const sparse::Iterator& outer = rest.iteration.iterators.front();
    const LoopPlan& plan = lowering.plans_.front();
    if (plan.kind != LoopKind::Dense && plan.kind != LoopKind::Driven)
      throw_unsupported("the entries of " + names(tensors_read(rest)) + " outside " + blocks_of() +
                        " follow in a kernel of their own on the cuda target, its outer loop spread over the threads "
                        "of the grid, but that loop (" + outer.var + ") merges " + names(tensors_read(rest)) +
                        " with cursors that no thread can share; run it on the cpu target, or store " + outer.var +
                        " in a dense level in all but one of them (csr rather than dcsr)");
    if (!loop)
      throw_unsupported("the entries of " + names(tensors_read(rest)) + " outside " + blocks_of() +
                        " follow in a kernel of their own on the cuda target, but its loops do not form one nest; run it "
                        "on the cpu target");
    bool distinct_rows = !outer.is_reduction && (plan.kind == LoopKind::Dense || !lowering.repeats(rest.axes[plan.stream()]));
    LoopAnnotations annotations = loop->annotations;
    annotations.own_kernel = true;
    if (!distinct_rows) annotations.bind_reduction = "atomic";
    std::vector<Stmt> kernels = {comment, std::make_shared<For>(loop->label, loop->var, loop->begin, loop->end, loop->body, annotations)};
    kernels.insert(kernels.end(), own_rest.begin(), own_rest.end());
    return block(std::move(kernels));
  }

  // The operands the rest reads.

  // "A's blocks", "A's and E's blocks"; "A is zero", "A and E are zero".
  // Where the operands blocked alike multiply: "the blocks A and B both store"; "A .* B is zero".
  std::string blocks_of() const {
    std::vector<std::string> owners;
    bool products = std::any_of(rest_.blocks_done.begin(), rest_.blocks_done.end(), [](const Conjunction& c) { return c.size() > 1; });
    if (products) {
      for (const Conjunction& c : rest_.blocks_done) owners.push_back(names(std::vector<std::string>(c.begin(), c.end())));
      return "the blocks " + names(owners) + (rest_.blocks_done.size() == 1 ? " both store" : " store together");
    }
    for (const std::string& t : rest_.blockers) owners.push_back(t + "'s");
    return names(owners) + " blocks";
  }
  std::string zero() const {
    bool products = std::any_of(rest_.blocks_done.begin(), rest_.blocks_done.end(), [](const Conjunction& c) { return c.size() > 1; });
    if (products) {
      std::vector<std::string> terms;
      for (const Conjunction& c : rest_.blocks_done) {
        std::string term;
        for (const std::string& t : c) term += (term.empty() ? "" : " .* ") + t;
        terms.push_back(term);
      }
      return names(terms) + (terms.size() > 1 ? " are zero" : " is zero");
    }
    return names(rest_.blockers) + (rest_.blockers.size() > 1 ? " are zero" : " is zero");
  }

  // The operands whose blocks a rest skips.
  std::vector<std::string> skipped_tensors() const {
    std::vector<std::string> tensors;
    for (const Conjunction& c : rest_.skip_blocks_of)
      for (const std::string& t : c)
        if (!std::count(tensors.begin(), tensors.end(), t)) tensors.push_back(t);
    return tensors;
  }

  // The rest beside the blocked operands, as a program of its own (passes/lower/part_programs.h).
  sparse::Program rest_program() {
    const RestOfBlocks rest{rest_.blockers, rest_.in_rows, blocked_otherwise(rest_.blockers), rows_.row_depth, blocks_of()};
    return lowering::rest_program(program_, config_, rest, [this](const std::string& wanted) { return fresh_name(wanted); });
  }

  // The rest's loops named as this nest's (k in both, or i_in) get labels of their own: schedule
  // ops find loops by label and mean this nest's; the rest's loops stay as lowered.
  Stmt relabel_shared_loops(const Stmt& rest) {
    struct Relabel : IRMutator {
      Lowering& owner;
      std::map<std::string, std::string> labels;
      explicit Relabel(Lowering& o) : owner(o) {}
      Stmt mutate_for(const For& node, const Stmt& self) override {
        Stmt inner = IRMutator::mutate_for(node, self);
        const auto& loops = owner.program_.iteration.iterators;
        if (std::none_of(loops.begin(), loops.end(), [&](const sparse::Iterator& it) { return it.var == node.label; }))
          return inner;
        if (!labels.count(node.label)) labels[node.label] = owner.fresh_name(node.label);
        const For& loop = static_cast<const For&>(*inner);
        return std::make_shared<For>(labels[node.label], loop.var, loop.begin, loop.end, loop.body, loop.annotations);
      }
    } relabel(*this);
    return relabel.mutate(rest);
  }

  // The variable of a gathered output's key level (its blocks' columns: j of j / c).
  bool output_gathered_var(const std::string& var) const {
    const sparse::SparseBuffer& output = program_.output();
    return output.gathered_level >= 0 && program_.axes[output.axes[output.gathered_level]].mode_var == var;
  }

  // A gathered output's rest (C bsr = A bsr + B csr): the other operands' entries outside the
  // blocked operand's blocks, lowered as rest_program says for the loops inside this block row
  // (the loops down to the row are this one's), scattered into this block row's workspace.
  Stmt rest_in_block_row() {
    sparse::Program rest = rest_program();
    Lowering lowering(rest, config_, counting_ ? LoweringPhase::Assemble : LoweringPhase::Compute, counted_level_);
    lowering.used_names_ = used_names_;
    lowering.rest_.skip_blocks_of = rest_.blocks_done;
    lowering.rest_.skip_levels_above = rest_.skip_levels_above;
    lowering.rest_.block_row_owner = this;
    lowering.rest_.skip_blocks_of.insert(lowering.rest_.skip_blocks_of.begin(), rest_.skip_blocks_of.begin(), rest_.skip_blocks_of.end());
    Stmt body = lowering.run_in_block_row();
    used_names_.insert(lowering.used_names_.begin(), lowering.used_names_.end());
    body = relabel_shared_loops(body);
    return block({std::make_shared<Comment>("the other operands outside " + blocks_of() + ", where " + zero() +
                                            ", into the same block row: " + ast::to_string(*rest.iteration.body)),
                  body});
  }

  // A rest inside its owner's block row appends to the same output rows: the output's positions
  // above the gathered level (a block-DCSR block row's cursor) and the flags that open them are
  // the owner's, declared and advanced by its loops.
  void share_owner_rows() {
    const sparse::SparseBuffer& output = program_.output();
    std::vector<LevelPosition>& mine = positions_.at(output.tensor);
    const std::vector<LevelPosition>& owners = rest_.block_row_owner->positions_.at(output.tensor);
    const int levels = std::min({output.gathered_level + 1, static_cast<int>(mine.size()), static_cast<int>(owners.size())});
    for (int level = 0; level < levels; ++level) {
      if (mine[level].name == owners[level].name) continue;
      mine[level].name = owners[level].name;
      rest_.owner_rows.insert(owners[level].name);
    }
  }
  void share_owner_flags() {
    for (OpenLevel& open : open_levels_)
      for (const OpenLevel& owner : rest_.block_row_owner->open_levels_)
        if (owner.level == open.level) {
          open.flag = owner.flag;
          open.cursor = owner.cursor;
          open.every_iteration = owner.every_iteration;
        }
  }

  // The loops of a block row's rest, below the owner's loops down to the row (see rest_in_block_row).
  Stmt run_in_block_row() {
    reserve_names();
    plan_loops();
    check_fusions();
    plan_positions();
    plan_output();
    const auto& mine = program_.iteration.iterators;
    const auto& owners = rest_.block_row_owner->program_.iteration.iterators;
    bool same_rows = rows_.row_depth == rest_.block_row_owner->rows_.row_depth;
    for (int d = 0; same_rows && d <= rows_.row_depth; ++d) same_rows = mine[d].var == owners[d].var;
    if (!same_rows)
      throw_unsupported("the loops of " + program_.output().tensor + "'s block rows differ between " + names(skipped_tensors()) +
                        "'s blocks and the other operands' entries outside them, so they cannot share a block row; "
                        "reorder so the block rows are outermost");
    std::vector<Stmt> body;
    for (int d = -1; d <= rows_.row_depth; ++d)
      for (const Stmt& declare : position_declares(d))
        if (declare->kind != StmtKind::Declare || !rest_.owner_rows.count(static_cast<const Declare&>(*declare).name)) body.push_back(declare);
    body.push_back(loops_from(rows_.row_depth + 1));  // (the owner's loops declare and advance the output's open levels)
    // Its loops follow an operand blocked otherwise (A 2x3 + B 3x2 - 3 * D into bsr 2x3): the
    // entries outside its blocks too follow, into the same block row.
    if (!rest_.blockers.empty()) body.push_back(rest_in_block_row());
    return block(std::move(body));
  }

  // The expression with `tensor` read as zero (null: zero altogether).
  // ---- a sum whose terms sum over different indices, into an assembled output ----
  // The body's nest is lowered here; each added part gets a nest of its own inside the shared
  // loops (those outside the first summed one), after the body's loops there, lowered by a
  // Lowering of its own that takes over the shared loops' positions, the output's cursors and
  // flags, and the row workspace or scalar sum the body adds into.

  // The body and the added parts as one sum: what the shared loops visit.
  ast::ExprPtr whole_sum() {
    if (!sum_.whole_sum) {
      sum_.whole_sum = program_.iteration.body;
      for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts)
        sum_.whole_sum = ast::make_operator(ast::ExprKind::Add, part.body->loc, sum_.whole_sum, part.body);
    }
    return sum_.whole_sum;
  }

  static bool reads(const ast::Expr& expr, const std::string& tensor) {
    for (const ast::Access* access : ast::collect_accesses(expr))
      if (access->tensor == tensor) return true;
    return false;
  }

  // Lowering an added part: the position the body's nest gives this level, where it is known in
  // the shared loops (so are the output's appended levels: written through the same cursors).
  const LevelPosition* shared_position(const sparse::SparseBuffer& buffer, size_t level) const {
    if (!sum_.added_to) return nullptr;
    auto found = sum_.added_to->positions_.find(buffer.tensor);
    if (found == sum_.added_to->positions_.end() || level >= found->second.size()) return nullptr;
    const LevelPosition& position = found->second[level];
    if (position.ready_depth < sum_.shared_loops) return &position;
    // Below the shared loops, an output level located from its coordinate (dense, ragged) is
    // located again by this nest's own loops; the others are written through the same cursors.
    const sparse::AxisKind kind = program_.axes[buffer.axes[level]].kind;
    const bool located = kind == sparse::AxisKind::DenseFixed || kind == sparse::AxisKind::DenseVariable;
    return buffer.is_output && !located ? &position : nullptr;
  }

  // "A(i,k) * B(k,j) (summed over k)"
  static std::string describe_terms(const ast::Expr& terms, const std::vector<std::string>& summed) {
    std::string text = ast::to_string(terms) + " (";
    if (summed.empty()) return text + "no summed index)";
    text += "summed over ";
    for (size_t k = 0; k < summed.size(); ++k) text += (k ? ", " : "") + summed[k];
    return text + ")";
  }

  // The added parts join the body's nest where the shared loops end: in a row workspace that
  // gathers the output's last level (SpGEMM), or in the scalar sum of one output entry.
  std::string summed_outside_added_parts() const {
    if (parts_in_block_rows(*sum_.whole))  // (the whole's loops are not the body's: block_row_part_program)
      for (const sparse::Iterator& it : program_.iteration.iterators)
        if (it.is_reduction) return it.var;
    return sum_.whole->iteration.iterators[static_cast<size_t>(sum_.shared_loops)].var;
  }

  // Why the added parts need a place in the body's nest (the start of each refusal below).
  std::string why_added_parts_join() const {
    const sparse::SparseBuffer& output = program_.output();
    const std::string summed = summed_outside_added_parts();
    std::vector<std::string> body_summed;
    for (const sparse::Iterator& it : program_.iteration.iterators)
      if (it.is_reduction) body_summed.push_back(it.var);
    std::string terms = describe_terms(*program_.iteration.body, body_summed);
    for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts) terms += "; " + describe_terms(*part.body, part.summed);
    return "the right-hand side sums its terms over different indices (" + terms + "), and " + output.tensor + " (" +
           output.format.name + ") is a sparse output the kernel assembles, so they share one loop nest: the terms without " +
           summed + " are added where the loops outside " + summed + " end";
  }

  // The operands blocked otherwise than the output (C_prev of `+=` is blocked as the output is).
  std::vector<std::string> blocked_operands() const {
    std::vector<std::string> tensors;
    for (const sparse::BlockedVar& b : program_.blocked_vars)
      if (b.tensor != program_.output().tensor && std::find(tensors.begin(), tensors.end(), b.tensor) == tensors.end())
        tensors.push_back(b.tensor);
    return tensors;
  }

  // Into a blocked output, the parts share the loops of the body's blocks (its block rows): an
  // operand of another part that blocks an index (D bsr in `A B + D`, C_prev of `C += A B`, C
  // bsr) would split the body's loops into blocks that the body does not read.
  void check_body_blocked_by_its_own() const {
    if (parts_listed_beside_blocks(*sum_.whole)) return;
    if (parts_in_block_rows(*sum_.whole) && parts_share_block_rows()) return;
    std::set<std::string> read;
    for (const ast::Access* access : ast::collect_accesses(*program_.iteration.body)) read.insert(access->tensor);
    const sparse::SparseBuffer& output = program_.output();
    for (const sparse::BlockedVar& b : program_.blocked_vars) {
      if (b.tensor == output.tensor || read.count(b.tensor)) continue;
      const bool previous = program_.buffer(b.tensor).previous_output;
      throw SharedBlocksRefusal(format_config_error(
          config_.file, "/tensors/" + (previous ? output.tensor : b.tensor) + "/format",
          why_added_parts_join() + "; " +
              (previous ? b.tensor + ", the value of " + output.tensor + " before `+=`, stored as " + output.tensor + " is,"
                        : b.tensor + " (" + program_.buffer(b.tensor).format.name + ")") +
              " splits index " + b.var + " into blocks, which the shared loops would follow, but the terms " +
              ast::to_string(*program_.iteration.body) + " do not read " + b.tensor +
              ", which is not supported; " +
              (previous ? "store " + output.tensor + " unblocked (its entries are then listed), or make it dense"
                        : "store " + b.tensor + " unblocked, or " + output.tensor + " unblocked (its entries are then listed)")));
    }
  }

  // Every part's program begins with the block-row loops, spatial and dense in the output (its
  // block rows visited whole), in the same order: the body's nest can hold the parts'.
  bool parts_share_block_rows() const {
    const sparse::SparseBuffer& output = program_.output();
    if (sum_.shared_loops < 1) return false;
    for (int level = 0; level < output.gathered_level; ++level)
      if (program_.axes[output.axes[level]].kind != sparse::AxisKind::DenseFixed) return false;
    auto begins_alike = [&](const sparse::Program& part) {
      if (static_cast<int>(part.iteration.iterators.size()) <= sum_.shared_loops) return false;
      for (int d = 0; d < sum_.shared_loops; ++d) {
        const sparse::Iterator& it = part.iteration.iterators[d];
        if (it.var != program_.iteration.iterators[d].var || it.is_reduction) return false;
      }
      return true;
    };
    if (!begins_alike(program_)) return false;
    for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts)
      if (!begins_alike(block_row_part_program(*sum_.whole, part.body))) return false;
    return true;
  }

  // Beside a blocked operand each part's nest goes over that operand's blocks where it reads it,
  // and over its own operands' entries elsewhere. A listed output takes both in any order
  // (listed_parts_nests: a nest per part); a row or block-row workspace takes both where the
  // shared loops visit every coordinate (a dense block-row level), as the parts' coordinates
  // need not lie in the blocked operand's block rows. A part whose own terms hold a term
  // without the blocked operand (its entries outside the blocks: lower_outside_blocks) has no
  // place in either (check_part_without_rest).
  void check_added_parts_beside_blocks() const {
    const std::vector<std::string> blocked = blocked_operands();
    if (blocked.empty()) return;
    // The body's own term without its blocked operand (A B + E B + D, A bsr) follows the blocks:
    // into the list (listed_parts_nests), or in each block row (rest_in_block_row).
    if (!listed_ && !rest_.in_rows) check_part_without_rest();
    if (listed_) return;
    const sparse::SparseBuffer& output = program_.output();
    const bool previous = program_.buffer(blocked.front()).previous_output;
    for (int d = 0; d < sum_.shared_loops; ++d)
      if (!visits_every_coordinate(d))
        throw SharedBlocksRefusal(format_config_error(
            config_.file, "/tensors/" + (previous ? output.tensor : blocked.front()) + "/format",
            why_added_parts_join() + ", which beside a blocked operand (" + names(blocked) +
                (previous ? ", the value of " + output.tensor + " before `+=`, stored as " + output.tensor + " is" : "") +
                ") needs the shared loops to visit every coordinate, but the loop " + program_.iteration.iterators[d].var +
                " visits only the stored ones, and the other parts' entries may lie elsewhere; store " +
                (previous ? output.tensor : blocked.front()) + "'s levels above " + program_.iteration.iterators[d].var +
                " dense (bsr), or make " + output.tensor + " dense"));
  }

  // A part of a scoped sum (the body, an added or a listed part) beside a blocked operand: its
  // own terms must all hold the blocked operand, or none of them its index's blocks.
  void check_part_without_rest() const {
    if (rest_.blockers.empty()) return;
    const sparse::SparseBuffer& output = program_.output();
    // (lower.cpp then gives each term a part of its own, where that helps: UnionNestRefusal.)
    throw UnionNestRefusal(format_config_error(
        config_.file, "/tensors/" + rest_.blockers.front() + "/format",
        "the right-hand side sums its terms over different indices, and " + output.tensor + " (" + output.format.name +
            ") is a sparse output the kernel assembles; the part " + ast::to_string(*program_.iteration.body) +
            " holds a term without " + names(rest_.blockers) +
            ", whose entries outside its blocks would be a second nest of that part, which is not supported; "
            "store " + rest_.blockers.front() + " unblocked, or make " + output.tensor + " dense"));
  }

  void check_added_parts() const {
    const sparse::SparseBuffer& output = program_.output();
    const std::string summed = summed_outside_added_parts();
    const std::string why = why_added_parts_join();
    for (const sparse::Fusion& f : program_.iteration.fusions)
      throw CompileError(format_config_error(config_.file, f.op_path,
                                             "fuse: " + why + ", which a fused loop over " + f.outer + " and " + f.inner +
                                                 " does not have; leave out the fuse, or make " + output.tensor + " dense"));
    if (listed_) return;  // each part lists its entries in a nest of its own (listed_parts_nests)
    const std::string where = "/tensors/" + output.tensor + "/format";
    bool into_rows = scattered() && !block_rows() && rows_.row_depth + 1 == sum_.shared_loops;
    // A blocked output's block row (its loops outside the summed one: plan_block_workspace)
    // gathers every entry under it, the parts' too.
    bool into_blocks = block_rows() && rows_.row_depth < sum_.shared_loops;
    // A dense or ragged last level below the summed loop: its entries are located, not appended,
    // so each part adds into them where its own loops find them (the levels above are bound by
    // the shared loops, else the entries would be listed).
    const LevelKind last = output.format.levels.back();
    bool into_entries = !scattered() && !block_rows() && write_.depth >= sum_.shared_loops &&
                        (last == LevelKind::Dense || last == LevelKind::DenseVariable);
    if (!into_rows && !into_blocks && !parts_add_into_sum() && !into_entries)
      throw CompileError(format_config_error(
          config_.file, where,
          why + ", into a row workspace (a summed loop just outside the output's last level, compressed), a scalar "
                "sum (summed loops inside all of the output's) or the located entries of a dense or ragged last level, but " +
              summed + " lies outside the output's last level, " + level_kind_name(output.format.levels.back()) +
              ", where none of these gathers them; store " + output.tensor + "'s last level compressed, or make " +
              output.tensor + " dense"));
  }

  // The added parts add into the scalar sum of one output entry: the shared loops bind the
  // output's, and the body's summed loops inside them sum into it.
  bool parts_add_into_sum() const { return write_.scalar_accumulator && write_.depth + 1 == sum_.shared_loops; }

  // Where the shared loops visit a coordinate that only other parts store (a union), each term
  // of this nest's body lacks a stored operand, so the body adds zeros: its loops are skipped.
  // Null where some term is stored wherever the shared loops go.
  Stmt where_body_present(Stmt nest) const {
    return only_where(some_term_present(tensor_terms(*program_.iteration.body),
                                        [&](const std::string& tensor) { return presence_in_shared_loops(tensor); }),
                      std::move(nest));
  }

  // presence(tensor) as the shared loops know it: a level located inside the blocks below them
  // (a binary search per coordinate) is searched by the nest itself.
  Expr presence_in_shared_loops(const std::string& tensor) const {
    return presence_with_searched(tensor, [&](const std::string& structure, int level) {
      return positions_.at(structure)[static_cast<size_t>(level)].ready_depth < sum_.shared_loops;
    });
  }

  static Stmt only_where(Expr condition, Stmt stmt) {
    return condition ? std::make_shared<If>(std::move(condition), std::move(stmt), nullptr) : stmt;
  }

  // The loop at `depth` and, where the shared loops end, the added parts' nests after it.
  Stmt loop_and_added_parts(int depth) {
    if (!sum_.whole || depth != sum_.shared_loops) return loop(depth);
    std::vector<Stmt> stmts = {where_body_present(loop(depth))};
    for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts) {
      // (Parts gathered in the output's block rows are each blocked by their own operands.)
      sparse::Program added = parts_in_block_rows(*sum_.whole) ? block_row_part_program(*sum_.whole, part.body) : *sum_.whole;
      if (!parts_in_block_rows(*sum_.whole)) {
        added.iteration.body = part.body;
        added.iteration.added_parts.clear();
        added.iteration.iterators = sum_.whole->iteration.loops_of(*part.body, sum_.whole->blocked_vars);
      }
      Lowering lowering(added, config_, counting_ ? LoweringPhase::Assemble : LoweringPhase::Compute, counted_level_);
      Stmt added_nest = lowering.lower_added_part(*this);
      used_names_ = lowering.used_names_;
      std::string into = parts_add_into_sum() ? "the sum " + write_.accumulator
                         : block_rows()      ? "the block row workspace of " + program_.output().tensor
                         : scattered()       ? "the row workspace of " + program_.output().tensor
                                            : "the entries of " + program_.output().tensor;
      const bool negated = part.body->kind == ast::ExprKind::Neg;  // "- b(i)" rather than "+ -b(i)"
      stmts.push_back(std::make_shared<Comment>((negated ? "- " : "+ ") + describe_terms(negated ? *part.body->lhs : *part.body, part.summed) +
                                                ", into " + into));
      stmts.push_back(added_nest);
    }
    return block(std::move(stmts));
  }

  // An output whose entries are listed (plan_listed) needs no shared loops: the body and each
  // added part list their entries in a nest of their own, one after the other, and the one list
  // is sorted and packed after them all.
  Stmt listed_parts_nests() {
    std::vector<Stmt> nests;
    std::set<std::string> names = names_before_positions_;  // (this Lowering's own nest is not built)
    auto list_part = [&](const ast::ExprPtr& terms, const std::vector<std::string>& summed, bool first) {
      sparse::Program part = listed_part_program(*sum_.whole, terms, config_);
      Lowering lowering(part, config_, counting_ ? LoweringPhase::Assemble : LoweringPhase::Compute, counted_level_);
      // (The body's own rest lists after every part's nest: run's with_listed_rest.)
      Stmt nest = lowering.lower_listed_part(*this, names, true, !first);
      names = lowering.used_names_;
      const bool negated = !first && terms->kind == ast::ExprKind::Neg;  // "- b(i)" rather than "+ -b(i)"
      nests.push_back(std::make_shared<Comment>((first ? "" : negated ? "- " : "+ ") +
                                                describe_terms(negated ? *terms->lhs : *terms, summed) + ", into the list of " +
                                                program_.output().tensor + "'s entries"));
      nests.push_back(nest);
      // An added part with a term without its blocked operand (D + E, D bsr, E csr): E's entries
      // outside D's blocks list after the part's nest (each rest a comment and a nest).
      for (const Stmt& rest : lowering.sum_.listed_rests) nests.push_back(rest);
    };
    std::vector<std::string> body_summed;
    for (const sparse::Iterator& it : program_.iteration.iterators)
      if (it.is_reduction) body_summed.push_back(it.var);
    list_part(program_.iteration.body, body_summed, true);
    for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts) list_part(part.body, part.summed, false);
    if (config_.target == Target::Cuda) {
      // nests: a comment and a nest per part. The first term's nest is scheduled as one (its
      // ops name its loops), unless an added part's nest has a loop of its outer loop's label,
      // which no op could tell apart: then it too lists in kernels of its own.
      const For* first_outer = statements_of(nests[1]).size() == 1 ? as_for(statements_of(nests[1]).front()) : nullptr;
      bool shared_label = false;
      for (size_t k = 3; k < nests.size() && first_outer; k += 2) shared_label |= has_loop_labelled(nests[k], first_outer->label);
      // (So too where no op can name its outer loop, no loop of the whole sum: A B over i, k, j
      // unsplit by D's blocks, listed into C's.)
      const bool unscheduled = first_outer && !whole_loop(first_outer->label);
      for (size_t k = shared_label || unscheduled ? 1 : 3; k < nests.size(); k += 2) nests[k] = own_listing_kernel(nests[k], names);
    }
    used_names_.insert(names.begin(), names.end());
    return block(std::move(nests));
  }

  // A loop of the whole sum's iteration (or a fused one), which schedule ops may name.
  bool whole_loop(const std::string& label) const {
    for (const sparse::Iterator& it : sum_.whole->iteration.iterators)
      if (it.var == label) return true;
    for (const sparse::Fusion& f : sum_.whole->iteration.fusions)
      if (f.into == label) return true;
    return false;
  }

  static bool has_loop_labelled(const Stmt& stmt, const std::string& label) {
    struct Find : IRVisitor {
      const std::string& label;
      bool found = false;
      explicit Find(const std::string& l) : label(l) {}
      void visit_for(const For& node) override {
        found |= node.label == label;
        IRVisitor::visit_for(node);
      }
    } find(label);
    find.visit(stmt);
    return find.found;
  }

  // On cuda an added part's nest lists its entries in kernels of its own (cuda_backend.cpp:
  // listing_kernels), after the body's, its outer loop spread over the grid (gpu_bindings.cpp);
  // each entry takes its slot atomically, so any iterations may run at once. A nest that is no
  // such loop (a merge, or a loop that advances co-iteration cursors) runs in one thread, inside
  // a loop of one trip.
  // A nest around heap workspaces (allocated once per kernel, for every thread) stays as it is:
  // the first term's kernel runs it, or one of its own between nests that are.
  static Stmt own_listing_kernel(const Stmt& nest, std::set<std::string>& names) {
    if (nest->kind == StmtKind::Allocate) {
      const auto& buffers = static_cast<const Allocate&>(*nest).buffers;
      if (std::any_of(buffers.begin(), buffers.end(), [](const Workspace& w) { return !w.local && !w.shared; })) return nest;
    }
    LoopAnnotations annotations;
    annotations.own_kernel = true;
    const std::vector<Stmt> stmts = statements_of(nest);
    const For* loop = stmts.size() == 1 ? as_for(stmts.front()) : nullptr;
    // (Iterations that meet on an entry of the output, COO rows that repeat, list it twice; the
    // sort sums them: that reason alone keeps no loop sequential here.)
    const std::string repeat_reason = "its coordinates repeat";
    if (loop && (loop->annotations.sequential_reason.empty() ||
                 (loop->annotations.repeats_coordinates && loop->annotations.sequential_reason.rfind(repeat_reason, 0) == 0))) {
      LoopAnnotations own = loop->annotations;
      own.sequential_reason.clear();
      own.own_kernel = true;
      return std::make_shared<For>(loop->label, loop->var, loop->begin, loop->end, loop->body, own);
    }
    std::string once = "once";
    for (int suffix = 2; names.count(once); ++suffix) once = "once_" + std::to_string(suffix);
    names.insert(once);
    return std::make_shared<For>("one thread", once, int64(0), int64(1), nest, annotations);
  }

  // This Lowering's program is one part of a sum into `into`'s listed output: the whole nest of
  // its terms, appending to `into`'s list.
  // A part's own rest outside its blocked operand's blocks (`with_rest`) lists after it: built
  // here into sum_.listed_rests where `list_rest`.
  Stmt lower_listed_part(const Lowering& into, const std::set<std::string>& names, bool with_rest = false,
                         bool list_rest = true) {
    sum_.lists_into = &into;
    used_names_ = names;
    plan_loops();
    if (!sum_.listing_rest && !with_rest) check_part_without_rest();  // (a rest lists its own rest: listed_rest)
    plan_listed();
    check_fusions();
    plan_positions();
    plan_output();
    Stmt nest = loop_nest(0);
    if (!workspaces_.empty()) nest = std::make_shared<Allocate>(workspaces_, nest);
    if (!rest_.blockers.empty() && list_rest) sum_.listed_rests = listed_rest(into);  // (the caller places them after the nest)
    return nest;
  }

  // Into a listed output (C csr = A bsr + B csr), the rest of the sum outside the blocked
  // operand's blocks lists its entries into the same list, before the sort: loops of its own, as
  // into a dense output (lower_outside_blocks), appending rather than adding. On cuda it lists in
  // kernels of its own, after the block loops'.
  Stmt with_listed_rest(const Stmt& nest, const Lowering& into) {
    std::vector<Stmt> stmts = statements_of(nest);
    append(stmts, listed_rest(into));
    return block(std::move(stmts));
  }

  // The rest's comment and nest, then its own rest's (beside a second operand blocked otherwise),
  // each a kernel of its own on cuda.
  std::vector<Stmt> listed_rest(const Lowering& into) {
    sparse::Program rest = rest_program();
    Lowering lowering(rest, config_, counting_ ? LoweringPhase::Assemble : LoweringPhase::Compute, counted_level_);
    lowering.rest_.skip_blocks_of = rest_.skip_blocks_of;  // (a rest's own rest skips both)
    // (Where the loop over A's unblocked level merges the others' coordinates, the block loops
    // did A's block rows whole: the rest skips those, not only A's entries in them.)
    lowering.rest_.skip_levels_above = rest_.skip_levels_above;
    lowering.rest_.skip_blocks_of.insert(lowering.rest_.skip_blocks_of.end(), rest_.blocks_done.begin(), rest_.blocks_done.end());
    lowering.sum_.listing_rest = true;
    Stmt rest_nest = lowering.lower_listed_part(into, used_names_);
    used_names_.insert(lowering.used_names_.begin(), lowering.used_names_.end());
    if (config_.target == Target::Cuda) rest_nest = own_listing_kernel(rest_nest, used_names_);
    std::vector<Stmt> stmts = {std::make_shared<Comment>("the other operands outside " + blocks_of() + ", where " + zero() +
                                                         ", into the list of " + program_.output().tensor + "'s entries: " +
                                                         ast::to_string(*rest.iteration.body)),
                               rest_nest};
    append(stmts, lowering.sum_.listed_rests);
    for (Stmt& stmt : stmts) stmt = relabel_shared_loops(stmt);
    return stmts;
  }

  // This Lowering's program is an added part's (its loops: the shared ones, then its own): its
  // nest inside the shared loops of `body`'s Lowering, writing where that one writes.
  Stmt lower_added_part(const Lowering& body) {
    sum_.added_to = &body;
    sum_.shared_loops = body.sum_.shared_loops;
    used_names_ = body.used_names_;
    plan_loops();
    // Into a block-row workspace, a term of the part without its blocked operand (D + E, D bsr,
    // E csr: E's entries outside D's blocks) follows in the same block row (rest_in_block_row),
    // as beside the body's blocks; elsewhere it would be a second nest of the part.
    const bool rest_in_block_row = body.block_rows() && !rest_.blockers.empty();
    if (!rest_in_block_row) check_part_without_rest();
    plan_positions();
    output_strategy_ = body.output_strategy_;
    rest_.in_rows = body.rest_.in_rows;
    blocks_ = body.blocks_;
    coo_segment_ = body.coo_segment_;
    rows_ = body.rows_;
    open_levels_ = body.open_levels_;
    append_depth_ = body.append_depth_;
    write_.overwrites = false;
    presence_ = body.presence_;
    write_.depth = -1;
    for (const std::string& var : program_.output().indices) write_.depth = std::max(write_.depth, program_.depth_of(var));
    if (body.parts_add_into_sum()) {
      // Into the body's sum of the entry, before it is written.
      write_.scalar_accumulator = sum_.adds_to_parent_sum = true;
      write_.accumulator = body.write_.accumulator;
    } else {
      // Into the row workspace or the located entries; summed loops inside the output's have a
      // sum of their own.
      write_.scalar_accumulator = write_.depth < static_cast<int>(program_.iteration.iterators.size()) - 1;
      if (write_.scalar_accumulator) write_.accumulator = fresh_name("acc");
    }
    split_hoistable_factors();
    Stmt nest = loops_from(sum_.shared_loops);
    if (sum_.shared_loops < static_cast<int>(program_.iteration.iterators.size())) nest = where_body_present(nest);
    return rest_in_block_row ? block({nest, this->rest_in_block_row()}) : nest;
  }

  // The loops at `depth` and below, with the flags of the output levels the enclosing loop binds.
  Stmt loop_nest(int depth) { return with_open_flags(depth - 1, loops_from(depth)); }

  Stmt loops_from(int depth) {
    const auto& iterators = program_.iteration.iterators;
    std::vector<Stmt> body;
    if (depth == 0) append(body, position_declares(-1));  // order-0 tensors, dense roots without loops
    if (depth == static_cast<int>(iterators.size())) {
      body.push_back(innermost_statement());
      return block(std::move(body));
    }
    if (rest_.in_rows && !block_rows() && !rest_.blockers.empty() && depth - 1 == rows_.row_depth && !sum_.added_to &&
        !rest_.block_row_owner) {
      body.push_back(block({loop_and_added_parts(depth), rest_in_block_row()}));
      return block(std::move(body));
    }
    if (scattered() && depth - 1 == rows_.row_depth && !sum_.added_to && !rest_.block_row_owner) {
      if (block_rows() && !rest_.blockers.empty())
        body.push_back(around_block_row(block({loop_and_added_parts(depth), rest_in_block_row()})));
      else body.push_back(block_rows() ? around_block_row(loop_and_added_parts(depth)) : around_row(loop_and_added_parts(depth)));
      return block(std::move(body));
    }
    if (depth - 1 == write_.depth && write_.scalar_accumulator && counting_) {
      body.push_back(write_output(nullptr, depth));  // the summed loops do not change which entries exist
      return block(std::move(body));
    }
    if (depth - 1 == write_.depth && write_.scalar_accumulator && !sum_.adds_to_parent_sum) {
      // Just inside the output's last loop: sum the remaining loops into a scalar.
      body.push_back(std::make_shared<Declare>(write_.accumulator, value_type_,
                                               std::make_shared<FloatImm>(0.0, "0", value_type_), true));
      body.push_back(loop_and_added_parts(depth));
      Expr total = var(write_.accumulator, value_type_);
      if (!write_.outer_factors.empty()) total = binary(BinOp::Mul, product(write_.outer_factors), total);
      body.push_back(write_output(total, depth));
      return block(std::move(body));
    }
    body.push_back(loop_and_added_parts(depth));
    return block(std::move(body));
  }

  static void append(std::vector<Stmt>& to, std::vector<Stmt> more) {
    for (Stmt& s : more) to.push_back(std::move(s));
  }

  Stmt loop(int depth) {
    if (const sparse::Fusion* f = fusion_at(depth); f && fuses_rows(*f)) return fused_rows_loop(depth, *f);
    switch (plans_[depth].kind) {
      case LoopKind::Dense: return dense_loop(depth);
      case LoopKind::Driven: return driven_loop(depth);
      case LoopKind::Merge: return merge_loop(depth);
    }
    return nullptr;
  }

  // How many coordinates a loop over every coordinate visits: the dimension, or the blocks of a
  // blocked index (the in-block loop's extent depends on its block: see dense_loop).
  Expr coordinate_count(const std::string& index_var) const {
    const sparse::BlockedVar* blocked = program_.blocked_loop(index_var);
    if (blocked && index_var == blocked->outer) return block_count(dim_name(blocked->var), blocked->size);
    return var(dim_name(index_var));
  }

  Stmt dense_loop(int depth) {
    const std::string& index_var = program_.iteration.iterators[depth].var;
    std::vector<Stmt> body;
    Expr end = coordinate_count(index_var);
    if (const sparse::BlockedVar* blocked = program_.blocked_loop(index_var)) {
      if (index_var != blocked->outer) {
        // The last block may stick out of the dimension: its padding is never visited.
        Expr start = mul(var(blocked->outer), int64(blocked->size));
        end = min(int64(blocked->size), sub(var(dim_name(blocked->var)), start));
        body.push_back(std::make_shared<Declare>(blocked->var, ScalarType::Int64, add(start, var(index_var)), false));
      }
    }
    append(body, position_declares(depth));
    body.push_back(loop_nest(depth + 1));
    return std::make_shared<For>(index_var, index_var, int64(0), end, block(std::move(body)), loop_annotations(depth));
  }

  // The range of a stored level's positions under its parent: pos[p] .. pos[p+1], an ELL row's
  // slots, or (a singleton below a run-wise COO level) the parent's run. Empty where the parent
  // is absent in an enclosing merge.
  std::pair<Expr, Expr> level_range(const sparse::Axis& axis) const {
    const std::vector<LevelPosition>& levels = positions_.at(axis.tensor);
    Expr parent = axis.level == 0 ? int64(0) : var(levels[axis.level - 1].name);
    const std::string parent_run_end = axis.level == 0 ? "" : levels[axis.level - 1].run_end;
    auto [begin, end] = level_access(axis)->positions_under(parent, parent_run_end, index_type_);
    if (Expr present = presence(axis.tensor, axis.level)) {
      begin = select(present, begin, int64(0));
      end = select(present, end, int64(0));
    }
    return {begin, end};
  }

  // One stored level in a co-iterated loop, and how the loop reaches it: a cursor that streams
  // its coordinates in increasing order, or a direct lookup of the loop's coordinate.
  struct Operand {
    const sparse::Axis* axis = nullptr;
    bool located = false;
    std::string position;  // its position variable (a cursor, or the looked-up position)
    std::string begin;     // a ragged level's first position under the parent (its coordinate 0)
    std::string end;       // the end of its positions under the parent
    std::string coordinate;  // a two-finger merge: the coordinate under the cursor
    std::string present;     // it stores the loop's current coordinate (empty: a driving loop's own level)
    std::string run_end;     // a run-wise COO level: the end of the current run
  };

  Expr coordinate_at(const Operand& o) const {
    return level_access(*o.axis)->coordinate_at(o.position, o.begin.empty() ? nullptr : var(o.begin), index_type_);
  }

  // The cursor has coordinates left: before the end, and (ELL) before the padding.
  Expr not_done(const Operand& o) const { return level_access(*o.axis)->not_done(o.position, o.end, coordinate_at(o)); }

  // For the stage II comment: the operand, and what its cursor visits where that is not plain.
  std::string describe(const Operand& o) const {
    const sparse::Axis& axis = *o.axis;
    if (o.located) return axis.tensor + " (ragged: position " + axis.pos + "[parent] + coordinate)";
    return level_access(axis)->describe(by_runs_.count(axis_id(axis)) > 0, iterates_run(axis));
  }

  std::string describe_all(const std::vector<Operand>& operands) const {
    std::string names;
    for (const Operand& o : operands) names += (names.empty() ? "" : ", ") + describe(o);
    return names;
  }

  // The located levels of the loop at `depth`: their ranges, declared before the loop.
  std::vector<Operand> locate_setup(int depth, std::vector<Stmt>& setup) {
    std::vector<Operand> lookups;
    for (int id : plans_[depth].located) {
      Operand o;
      o.axis = &program_.axes[id];
      o.located = true;
      o.position = positions_.at(o.axis->tensor)[o.axis->level].name;
      o.begin = fresh_name(o.position + "_begin");
      o.end = fresh_name(o.position + "_end");
      o.present = fresh_name("in" + o.axis->tensor);
      auto [begin, end] = level_range(*o.axis);
      setup.push_back(std::make_shared<Declare>(o.begin, ScalarType::Int64, begin, false));
      setup.push_back(std::make_shared<Declare>(o.end, ScalarType::Int64, end, false));
      lookups.push_back(o);
    }
    return lookups;
  }

  // Once the loop's coordinate is known: each located level's position, and whether it is stored.
  static void locate(const std::vector<Operand>& lookups, const std::string& index_var, std::vector<Stmt>& body) {
    for (const Operand& o : lookups) {
      body.push_back(std::make_shared<Declare>(o.position, ScalarType::Int64, add(var(o.begin), var(index_var)), false));
      body.push_back(std::make_shared<Declare>(o.present, ScalarType::Bool, binary(BinOp::Lt, var(o.position), var(o.end)), false));
    }
  }

  // The loops below, run where the iteration space holds. Inside, an operand that some
  // conjunction can do without reads through its presence flag (absent: zero, no children).
  Stmt guarded_nest(int depth, const std::vector<Operand>& operands) {
    const LoopPlan& plan = plans_[depth];
    std::vector<const Operand*> maybe_absent;
    for (const Operand& o : operands)
      if (!o.present.empty() && (plan.dense_universe || !in_every_conjunction(plan.space, o.axis->tensor)))
        maybe_absent.push_back(&o);
    for (const Operand* o : maybe_absent) presence_[o->axis->tensor].push_back(o->present);
    Stmt inner = loop_nest(depth + 1);
    for (const Operand* o : maybe_absent) presence_[o->axis->tensor].pop_back();
    return guarded(plan, operands, inner);
  }

  Stmt driven_loop(int depth) {
    const LoopPlan& plan = plans_[depth];
    const std::string& index_var = program_.iteration.iterators[depth].var;
    const sparse::Axis& axis = program_.axes[plan.stream()];
    const std::vector<LevelPosition>& levels = positions_.at(axis.tensor);
    const std::string& position = levels[axis.level].name;
    Expr parent = axis.level == 0 ? int64(0) : var(levels[axis.level - 1].name);
    auto coordinate = [&](Expr at) { return cast(ScalarType::Int64, load(axis.crd, std::move(at), index_type_)); };
    std::vector<Stmt> setup;
    std::vector<Operand> operands = locate_setup(depth, setup);
    Operand driver;
    driver.axis = &axis;
    operands.insert(operands.begin(), driver);
    if (!plan.located.empty())
      setup.insert(setup.begin(), std::make_shared<Comment>("co-iterate " + index_var + ": the entries of " + describe(driver) +
                                                            ", with direct lookup into " +
                                                            describe_all({operands.begin() + 1, operands.end()})));
    std::vector<Stmt> body;
    const std::unique_ptr<LevelAccess> level = level_access(axis);
    if (level->one_per_parent() && !iterates_run(axis)) {
      // No loop: the parent's entry has exactly one coordinate here.
      body.push_back(std::make_shared<Declare>(index_var, ScalarType::Int64, coordinate(parent), false));
      locate({operands.begin() + 1, operands.end()}, index_var, body);
      append(body, position_declares(depth));
      body.push_back(guarded_nest(depth, operands));
      append(setup, std::move(body));
      return block(std::move(setup));
    }
    auto [begin, end] = level_range(axis);
    Expr value = level->coordinate_at(position, begin, index_type_);
    body.push_back(std::make_shared<Declare>(index_var, ScalarType::Int64, value, false));
    locate({operands.begin() + 1, operands.end()}, index_var, body);
    append(body, position_declares(depth));
    body.push_back(level->only_stored(index_var, guarded_nest(depth, operands)));
    LoopAnnotations annotations = loop_annotations(depth);
    // COO's top level fused with the singleton below: already one loop over the entries, now
    // named by the fuse; its iterations are distinct entries (parallel asks for a reduction
    // where several entries meet in one output entry).
    const sparse::Fusion* fused = fusion_at(depth);
    if (fused) {
      body.insert(body.begin(), std::make_shared<Comment>("fuse " + fused->outer + ", " + fused->inner +
                                                          ": one loop over the entries of " + fused->tensor));
    } else if (repeats(axis) && !program_.iteration.iterators[depth].is_reduction && annotations.listed.keys.empty()) {
      annotations.sequential_reason = "its coordinates repeat (a non-unique level of " + axis.tensor +
                                      "), so iterations may write the same entry of " + program_.output().tensor;
      annotations.repeats_coordinates = true;
    }
    setup.push_back(std::make_shared<For>(fused ? fused->into : index_var, position, begin, end, block(std::move(body)), annotations));
    return setup.size() == 1 ? setup.front() : block(std::move(setup));
  }

  // Co-iteration. With a dense term, a dense loop visits every coordinate and each streamed
  // level keeps a cursor that advances when its coordinate comes up. Otherwise a two-finger
  // merge visits the coordinates of the streamed levels in increasing order, runs the body
  // where the iteration space holds (A and B for a product, A or B for a sum), and advances
  // every cursor that sat on the coordinate (a run-wise COO level past the whole run). Located
  // levels are looked up at each coordinate.
  Stmt merge_loop(int depth) {
    const LoopPlan& plan = plans_[depth];
    const std::string& index_var = program_.iteration.iterators[depth].var;
    std::vector<Operand> cursors;
    std::vector<Stmt> setup;
    for (int id : plan.axes) {
      if (plan.locates(id)) continue;
      Operand c;
      c.axis = &program_.axes[id];
      const LevelPosition& level = positions_.at(c.axis->tensor)[c.axis->level];
      c.position = level.name;
      c.run_end = level.run_end;
      c.end = fresh_name(c.position + "_end");
      c.coordinate = fresh_name(index_var + c.axis->tensor);
      c.present = fresh_name("in" + c.axis->tensor);
      auto [begin, end] = level_range(*c.axis);
      if (level_access(*c.axis)->coordinate_is_offset()) {
        c.begin = fresh_name(c.position + "_begin");
        setup.push_back(std::make_shared<Declare>(c.begin, ScalarType::Int64, begin, false));
        begin = var(c.begin);
      }
      setup.push_back(std::make_shared<Declare>(c.position, ScalarType::Int64, begin, true));
      setup.push_back(std::make_shared<Declare>(c.end, ScalarType::Int64, end, false));
      cursors.push_back(c);
    }
    std::vector<Operand> lookups = locate_setup(depth, setup);

    std::vector<Stmt> body;
    if (!plan.dense_universe && cursors.size() == 1) {
      // One cursor (a run-wise COO level): its coordinate is the loop's, and always present.
      cursors.front().present.clear();
      body.push_back(std::make_shared<Declare>(index_var, ScalarType::Int64, coordinate_at(cursors.front()), false));
    } else if (!plan.dense_universe) {
      // The next coordinate: the least one under any cursor (exhausted cursors never win).
      Expr least;
      for (const Operand& c : cursors) {
        body.push_back(std::make_shared<Declare>(
            c.coordinate, ScalarType::Int64,
            select(not_done(c), coordinate_at(c), int64(std::numeric_limits<int64_t>::max())), false));
        least = least ? min(least, var(c.coordinate)) : var(c.coordinate);
      }
      body.push_back(std::make_shared<Declare>(index_var, ScalarType::Int64, least, false));
      for (const Operand& c : cursors)
        body.push_back(std::make_shared<Declare>(c.present, ScalarType::Bool,
                                                 binary(BinOp::Eq, var(c.coordinate), var(index_var)), false));
    } else {
      for (const Operand& c : cursors)
        body.push_back(std::make_shared<Declare>(
            c.present, ScalarType::Bool,
            logical_and(not_done(c), binary(BinOp::Eq, coordinate_at(c), var(index_var))), false));
    }
    // A run-wise COO level on the coordinate: its run is every position that repeats it.
    for (const Operand& c : cursors) {
      if (c.run_end.empty()) continue;
      Operand next = c;
      next.position = c.run_end;
      Expr present = c.present.empty() ? nullptr : var(c.present, ScalarType::Bool);
      Expr repeats = logical_and(logical_and(present, not_done(next)), binary(BinOp::Eq, coordinate_at(next), var(index_var)));
      body.push_back(std::make_shared<Declare>(c.run_end, ScalarType::Int64, var(c.position), true));
      body.push_back(std::make_shared<While>("run of " + c.position, repeats, std::make_shared<Assign>(c.run_end, int64(1), true)));
    }
    locate(lookups, index_var, body);
    append(body, position_declares(depth));
    std::vector<Operand> operands = cursors;
    operands.insert(operands.end(), lookups.begin(), lookups.end());
    body.push_back(guarded_nest(depth, operands));
    for (const Operand& c : cursors)
      body.push_back(c.run_end.empty() && !c.present.empty()
                         ? std::make_shared<Assign>(c.position, cast(ScalarType::Int64, var(c.present, ScalarType::Bool)), true)
                         : std::make_shared<Assign>(c.position, var(c.run_end), false));

    std::string streamed = describe_all(cursors);
    std::string looked_up = lookups.empty() ? "" : "direct lookup into " + describe_all(lookups);
    Stmt loop;
    if (plan.dense_universe) {
      std::string how = cursors.empty() ? "with " + looked_up
                                        : "with cursors into " + streamed + (lookups.empty() ? "" : "; " + looked_up);
      setup.insert(setup.begin(), std::make_shared<Comment>("co-iterate " + index_var + ": every coordinate, " + how));
      // What keeps any loop at this depth sequential (an output appended to under one parent) ...
      LoopAnnotations annotations = loop_annotations(depth);
      if (!cursors.empty()) {  // ... and the cursors it advances

        std::string names;
        for (const Operand& c : cursors) names += (names.empty() ? "" : ", ") + c.axis->tensor;
        annotations.sequential_reason = "it advances co-iteration cursors into " + names;
      }
      loop = std::make_shared<For>(index_var, index_var, int64(0), coordinate_count(index_var), block(std::move(body)), annotations);
    } else {
      // Keep going while some conjunction of the iteration space can still hold: while all its
      // streamed operands have coordinates left.
      Expr more;
      for (const std::vector<const Operand*>& streams : minimal_conjunctions(plan, cursors, [](const Operand&) { return true; })) {
        Expr all;
        for (const Operand* c : streams) all = logical_and(all, not_done(*c));
        more = logical_or(more, all);
      }
      std::string how = cursors.size() == 1 ? "a cursor over " + streamed : "two-finger merge of " + streamed;
      setup.insert(setup.begin(), std::make_shared<Comment>("co-iterate " + index_var + ": " + how +
                                                            (lookups.empty() ? "" : "; " + looked_up)));
      loop = std::make_shared<While>(index_var, more, block(std::move(body)));
    }
    setup.push_back(loop);
    return block(std::move(setup));
  }

  // Per conjunction of the iteration space, its operands that `counts`, leaving out those whose
  // operands include another's (A || A && B is A).
  template <class Counts>
  static std::vector<std::vector<const Operand*>> minimal_conjunctions(const LoopPlan& plan, const std::vector<Operand>& operands,
                                                                      Counts counts) {
    std::vector<std::vector<const Operand*>> all;
    for (const Conjunction& conjunction : plan.space) {
      std::vector<const Operand*> members;
      for (const Operand& o : operands)
        if (conjunction.count(o.axis->tensor) && counts(o)) members.push_back(&o);
      all.push_back(members);
    }
    std::vector<std::vector<const Operand*>> minimal;
    for (size_t a = 0; a < all.size(); ++a) {
      bool absorbed = false;
      for (size_t b = 0; b < all.size() && !absorbed; ++b)
        absorbed = b != a && std::includes(all[a].begin(), all[a].end(), all[b].begin(), all[b].end()) &&
                   (all[a] != all[b] || b < a);
      if (!absorbed) minimal.push_back(all[a]);
    }
    return minimal;
  }

  // Runs `inner` only where the iteration space holds; a pure union needs no test (the least
  // coordinate is present in some operand by construction), nor does a conjunction that holds
  // wherever the loop goes (the driving level alone).
  Stmt guarded(const LoopPlan& plan, const std::vector<Operand>& operands, Stmt inner) const {
    if (plan.dense_universe) return where_some_term_present(plan, operands, std::move(inner));
    bool pure_union = std::all_of(plan.space.begin(), plan.space.end(), [](const Conjunction& c) { return c.size() == 1; });
    if (pure_union) return inner;
    Expr holds;
    for (const std::vector<const Operand*>& present : minimal_conjunctions(plan, operands, [](const Operand& o) { return !o.present.empty(); })) {
      if (present.empty()) return inner;
      Expr all;
      for (const Operand* o : present) all = logical_and(all, var(o->present, ScalarType::Bool));
      holds = logical_or(holds, all);
    }
    return std::make_shared<If>(holds, inner, nullptr);
  }

  // A loop that visits every coordinate for a term that is absent here (its dense level lies
  // under a parent an enclosing merge may lack: E(i,j) with E's i compressed) would give an
  // assembled output entries where no term is stored: those run only where some term is.
  // Values there are zeros anyway, so a dense output (or one sharing a structure) needs no test.
  Stmt where_some_term_present(const LoopPlan& plan, const std::vector<Operand>& operands, Stmt inner) const {
    if (!assembled_) return inner;
    return only_where(some_term_present(plan.terms,
                                        [&](const std::string& tensor) {
                                          const std::string& structure = program_.structure_of(program_.buffer(tensor)).tensor;
                                          auto here = std::find_if(operands.begin(), operands.end(), [&](const Operand& o) {
                                            return o.axis->tensor == structure;
                                          });
                                          // An operand of this loop is absent where its parent is (its range is
                                          // empty there); else the enclosing merges' flags (a searched level's flag
                                          // is declared further in, out of scope here).
                                          return here != operands.end() && !here->present.empty()
                                                     ? var(here->present, ScalarType::Bool)
                                                     : presence(tensor, 0);
                                        }),
                      std::move(inner));
  }

  const sparse::Program& program_;
  const Config& config_;
  // A part of a scoped sum or a union (a nest of its own beside the body's, or inside it).
  struct SumParts {
    const sparse::Program* whole = nullptr;  // the program with added parts, when this is its body's nest
    int shared_loops = -1;                   // ... the loops that body and added parts share
    ast::ExprPtr whole_sum;                  // ... the body and the added parts as one sum (whole_sum)
    const Lowering* added_to = nullptr;      // lowering an added part: the body's Lowering
    bool adds_to_parent_sum = false;         // ... which sums the entry in a scalar: this adds into it
    const Lowering* lists_into = nullptr;    // a part of a sum whose entries join this Lowering's list
    bool listing_rest = false;               // lists the rest of a sum outside a blocked operand's blocks (listed_rest)
    std::vector<Stmt> listed_rests;          // a listed part's rests outside the blocks, after its nest (listed_rest)
  };
  SumParts sum_;
  ScalarType value_type_, index_type_;
  std::set<std::string> used_names_;
  // Operands blocked where others are not (C = A + B, A bsr): the entries outside the blocks
  // are a rest, lowered as a nest of its own (lower_outside_blocks, rest_in_block_row).
  struct BlockedRest {
    // The blocked operands (the first gives the block loops, the others are blocked alike) whose
    // blocks other operands' entries lie outside of; lowering that rest, those whose blocks it skips.
    std::vector<std::string> blockers;
    IterationSpace blocks_done;     // ... the blocks its loops visit (blocks_visited), of those operands
    IterationSpace skip_blocks_of;  // lowering a rest: the blocks done before (each all of a conjunction's)
    // ... by tensor, where only its levels above one were done (ungated_merge_level): their count
    std::map<std::string, int> skip_levels_above;
    const Lowering* block_row_owner = nullptr;  // ... inside this lowering's block row, into its workspace
    // The output's blocks are gathered per block row (in this phase, or the levels above counted):
    // a rest beside a blocked operand runs inside each block row (rest_in_block_row).
    bool in_rows = false;
    std::set<std::string> owner_rows;  // a rest's own names for the owner's output positions (not declared)
  };
  BlockedRest rest_;
  bool assembled_;  // the output's structure is built here (see LoweringPhase)
  OutputStrategy output_strategy_ = OutputStrategy::InPlace;  // how it is written (plan_output)
  BlockRows blocks_;  // ... whole blocks of them, keyed by the gathered level (plan_block_workspace)
  bool coo_segment_ = false;  // ... and it ends in a COO segment (compressed-nonunique, singletons)
  RowWorkspace rows_;  // ... the workspace of its rows (or block rows): see plan_workspace
  std::vector<Workspace> workspaces_;
  bool counting_;   // this is the assemble phase
  int counted_level_ = -1;  // ... which counts this compressed level of the output
  std::vector<OpenLevel> open_levels_;  // compressed (or counted ragged) output levels above the last (plan_open_levels)
  int append_depth_ = -1;  // loops deeper than this share the output's cursors or counts
  bool listed_ = false;    // the output's entries are listed, sorted and packed (plan_listed)
  bool fused_rows_append_ = false;  // a fused loop appends the output's rows in place (appends_rows_in_order)
  bool fused_rows_parallel_ = false;  // ... and runs in parallel: no cursor (fuses_rows_in_parallel)
  std::set<std::string> names_before_positions_;  // used_names_ once the loops and the list are planned
  EntryList list_;  // ... the list's names (plan_listed)
  std::vector<LoopPlan> plans_;  // per loop depth
  // Variables whose stored levels are all located at each coordinate of a dense loop, as inside
  // the blocks (a cuda rest's outer loop, spread over the grid: see lower_outside_blocks).
  std::set<std::string> located_vars_;
  std::set<int> by_runs_;        // COO levels visited once per run of equal coordinates (plan_runs)
  // Per tensor, the "present here" flags of the merge loops around the code being built: where
  // one is false the tensor stores nothing, so its value reads as zero and its children are empty.
  std::map<std::string, std::vector<std::string>> presence_;
  std::map<std::string, std::vector<std::pair<int, std::string>>> searched_flags_;  // by tensor: (level, flag) of its searched levels
  std::map<std::string, std::vector<LevelPosition>> positions_;
  // How the body's value reaches the output (plan_output).
  struct OutputWrite {
    int depth = -1;  // the depth of the output's innermost index's loop
    bool scalar_accumulator = false;  // the loops inside it sum into a scalar, written once after them
    bool overwrites = false;          // each value is written once (no sum outside, no `+=`)
    bool needs_zero_fill = false;     // zeroed first: the loops skip entries or add into them
    std::string accumulator;          // the scalar's name
    // With a scalar accumulator, the top-level product's factors applied after the sum (outer)
    // and those inside it (split_hoistable_factors).
    std::vector<ast::ExprPtr> outer_factors, inner_factors;
  };
  OutputWrite write_;
};

}  // namespace

bool output_is_assembled(const sparse::Program& program) {
  const sparse::SparseBuffer& output = program.output();
  return !output.format.all_dense() && output.shares_structure_with.empty();
}

bool output_may_be_listed(const sparse::Program& program, const Config&) {  // every target lists
  const sparse::SparseBuffer& output = program.output();
  if (!output_is_assembled(program) || output.gathered_level >= 0) return false;
  if (output.listed_blocks) return true;
  for (size_t l = 0; l < output.format.levels.size(); ++l)
    if (output.format.block(l).part != BlockPart::None) return false;
  return true;
}

std::string describe_listed_parts(const sparse::Program& program, const Config& config) {
  if (!program.parts_list_output()) return "";
  auto comma_list = [](const std::vector<std::string>& items) {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
    return text;
  };
  auto part = [&](const ast::ExprPtr& terms, const std::vector<std::string>& summed, const char* sign) {
    std::vector<std::string> loops;
    for (const sparse::Iterator& it : listed_part_program(program, terms, config).iteration.iterators) loops.push_back(it.var);
    const bool negated = terms->kind == ast::ExprKind::Neg;  // "- b(i)" rather than "+ -b(i)"
    return "  " + std::string(negated ? "- " : sign) + ast::to_string(negated ? *terms->lhs : *terms) + " (" +
           (summed.empty() ? std::string("no summed index") : "summed over " + comma_list(summed)) + "): a nest of its own over [" +
           comma_list(loops) + "], into the list of " + program.output().tensor + "'s entries\n";
  };
  std::vector<std::string> body_summed;
  for (const sparse::Iterator& it : listed_part_program(program, program.iteration.body, config).iteration.iterators)
    if (it.is_reduction) body_summed.push_back(it.var);
  std::string out = "  each part lists the entries of " + program.output().tensor + ", to be sorted and packed" +
                    (program.output().format.is_blocked() ? " into its blocks" : "") + ":\n";
  out += part(program.iteration.body, body_summed, "");
  for (const sparse::AddedPart& added : program.iteration.added_parts) out += part(added.body, added.summed, "+ ");
  return out;
}

bool may_list_parts_into_blocks(const sparse::Program& program) {
  const sparse::SparseBuffer& output = program.output();
  return output_is_assembled(program) && output.format.is_blocked() && !output.listed_blocks;
}

bool may_list_union_parts(const sparse::Program& program) {
  return program.iteration.added_parts.empty() && output_is_assembled(program) && !program.blocked_vars.empty() &&
         ast::distributed_terms(program.iteration.body, program.output().indices).size() >= 2;
}

std::vector<int> assembled_levels(const sparse::Program& program) {
  std::vector<int> levels;
  if (!output_is_assembled(program)) return levels;
  const Format& format = program.output().format;
  for (size_t l = 0; l < format.levels.size(); ++l)
    if (format.levels[l] == LevelKind::Compressed || format.levels[l] == LevelKind::CompressedNonUnique ||
        format.levels[l] == LevelKind::DenseVariable || format.levels[l] == LevelKind::SparseFixed)
      levels.push_back(static_cast<int>(l));
  return levels;
}

std::string assemble_function_name(const sparse::Program& program, int level) {
  std::string name = program.kernel_name + "_assemble";
  return assembled_levels(program).size() > 1 ? name + "_level" + std::to_string(level) : name;
}

LoweredFunc lower_to_loops(const sparse::Program& program, const Config& config, LoweringPhase phase, int level) {
  if (program.iteration.added_parts.empty()) return Lowering(program, config, phase, level).run();
  // The body's nest, over its loops; the added parts' nests join it (loop_and_added_parts).
  sparse::Program body = program;
  body.iteration.added_parts.clear();
  body.iteration.iterators = program.iteration.loops_of(*program.iteration.body, program.blocked_vars);
  if (parts_listed_beside_blocks(program)) body = listed_part_program(program, program.iteration.body, config);
  if (parts_in_block_rows(program)) body = block_row_part_program(program, program.iteration.body);
  return Lowering(body, config, phase, level, &program).run();
}

}  // namespace spgen
