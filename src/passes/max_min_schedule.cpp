#include "passes/max_min_schedule.h"

namespace spgen {

namespace {

// The index variable a loop named `label` iterates: itself, or what a split of it was.
std::string index_var_of(const std::vector<ScheduleOp>& ops, size_t before, std::string label) {
  for (size_t k = before; k-- > 0;) {
    if (const auto* split = std::get_if<SplitOp>(&ops[k].op); split && (split->outer == label || split->inner == label)) label = split->var;
    if (const auto* tile = std::get_if<TileOp>(&ops[k].op); tile && (tile->outer == label || tile->inner == label)) label = tile->var;
  }
  return label;
}

bool reduced(const sparse::Program& program, const std::string& var) {
  const int depth = program.depth_of(var);
  return depth >= 0 && program.iteration.iterators[static_cast<size_t>(depth)].is_reduction;
}

// Why `op`, at place k of `ops` (whose earlier splits name loops), cannot schedule the max.
std::string refusal(const decltype(ScheduleOp::op)& op, const std::vector<ScheduleOp>& ops, size_t k, const sparse::Program& program) {
  const std::string name = ast::reduction_name(program.iteration.reduction);
  const std::string adds = " would combine partial results by adding them, which a " + name + " reduction does not take (yet)";
  if (std::holds_alternative<ReorderOp>(op) || std::holds_alternative<SplitOp>(op) || std::holds_alternative<TileOp>(op) ||
      std::holds_alternative<UnrollOp>(op) || std::holds_alternative<CacheOp>(op) || std::holds_alternative<PrefetchOp>(op))
    return "";
  if (const auto* parallel = std::get_if<ParallelOp>(&op)) {
    if (!parallel->reduction.empty() || reduced(program, index_var_of(ops, k, parallel->var)))
      return "its threads" + adds;
    return "";
  }
  if (const auto* bind = std::get_if<BindOp>(&op)) {
    // A warp's shuffle takes the max of its lanes (spgen_warp_max); atomics and shared sums add.
    if (bind->reduction == "shuffle") return "";
    if (!bind->reduction.empty() || reduced(program, index_var_of(ops, k, bind->var)))
      return "its threads" + adds + " (bind it to warp with \"reduction\": \"shuffle\")";
    return "";
  }
  if (const auto* vectorize = std::get_if<VectorizeOp>(&op)) {
    // A plain simd loop takes the max into its scalar (OpenMP's reduction(max: ...)); lanes
    // and masked tails keep partial sums.
    if (vectorize->lanes || vectorize->masked_tail) return "its lanes" + adds + " (a plain vectorize takes the " + name + ")";
    return "";
  }
  if (std::holds_alternative<PrecomputeOp>(op)) return "its workspace" + adds;
  if (std::holds_alternative<BatchOp>(op)) return "its lanes" + adds;
  return "this op is not supported with a " + name + " reduction (yet)";
}

}  // namespace

std::string max_min_refusal(const std::vector<ScheduleOp>& ops, size_t k, const sparse::Program& program) {
  return refusal(ops[k].op, ops, k, program);
}

std::vector<ScheduleOp> max_min_safe(const std::vector<ScheduleOp>& ops, const sparse::Program& program) {
  std::vector<ScheduleOp> kept;
  for (size_t k = 0; k < ops.size(); ++k) {
    ScheduleOp op = ops[k];
    if (auto* vectorize = std::get_if<VectorizeOp>(&op.op)) *vectorize = VectorizeOp{vectorize->var};  // (lanes: plain simd)
    if (refusal(op.op, ops, k, program).empty()) kept.push_back(op);
  }
  return kept;
}

}  // namespace spgen
