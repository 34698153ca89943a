#include "passes/lower/output_order.h"

#include <variant>

#include "passes/lower/output_levels.h"

namespace spgen::lowering {

std::pair<const sparse::Axis*, const sparse::Axis*> OutputOrder::fused_axes(const sparse::Fusion& f) const {
  const sparse::SparseBuffer& buffer = program_.buffer(f.tensor);
  return {&program_.axes[buffer.axes[0]], &program_.axes[buffer.axes[1]]};
}

bool OutputOrder::fuses_rows(const sparse::Fusion& f) const { return fused_axes(f).first->kind == sparse::AxisKind::DenseFixed; }

std::string OutputOrder::out_of_order_reason(const sparse::SparseBuffer& output) const {
  const Format& format = output.format;
  const size_t last = format.levels.size() - 1;
  if (std::string why = blocked_entries_reason(output); !why.empty()) return why;
  for (size_t level = 0; level < last; ++level)
    if (format.levels[level] == LevelKind::SparseFixed)
      return "it stores index " + program_.axes[output.axes[level]].index_var + " in an ELL level above its last one";
  // A level stored below another whose loop is inside its own (a loop order discordant with
  // the output's storage order, which the operands or a reorder impose).
  for (size_t below = 1; below < format.levels.size(); ++below)
    for (size_t above = 0; above < below; ++above) {
      const std::string& outer = program_.axes[output.axes[below]].index_var;
      const std::string& inner = program_.axes[output.axes[above]].index_var;
      if (program_.depth_of(outer) < program_.depth_of(inner))
        return "it stores index " + outer + " in a level below index " + inner + ", whose loop is inside " + outer + "'s";
    }
  const LevelKind entries = format.levels[entry_level(format)];
  const bool last_appended = entries == LevelKind::Compressed || entries == LevelKind::CompressedNonUnique ||
                             entries == LevelKind::SparseFixed;
  for (size_t level = 0; level < last; ++level) {
    const sparse::Axis& axis = program_.axes[output.axes[level]];
    // A COO segment's singletons are appended with its compressed-nonunique level.
    const bool appended = axis.kind == sparse::AxisKind::SparseVariable || axis.kind == sparse::AxisKind::Singleton;
    if (!appended && !last_appended) continue;  // dense and ragged levels are located
    const int depth = program_.depth_of(axis.index_var);
    for (int d = 0; d < depth; ++d)
      if (program_.iteration.iterators[d].is_reduction)
        return "it is summed over " + program_.iteration.iterators[d].var + " outside its " +
               (!appended                                     ? std::string("rows")
                : axis.kind == sparse::AxisKind::Singleton ? "COO segment's level " + std::to_string(level)
                                                           : "compressed level " + std::to_string(level)) +
               " (index " + axis.index_var + ")";
    if (appended && static_cast<int>(level) < entry_level(format))
      for (int id : plans_[depth].axes)
        if (repeats(program_.axes[id]))
          return "the loop over " + axis.index_var + " visits each coordinate once per entry of " + program_.axes[id].tensor +
                 " (a non-unique level)";
  }
  // A fused loop has no end of its outer variable's rows (no point where a row's appends
  // close), and rows found by a cursor: the entries are listed, whatever order they come in.
  // (On the cpu a vector output, `y(i) = A(i,j) * x(j)` into sv, is gathered whole in a
  // workspace that is appended after the loops, plan_workspace: any order serves. On cuda
  // one thread would own that workspace, so the threads list the entries there too.)
  if ((output.axes.size() > 1 && !appends_in_order(output)) || config_.target == Target::Cuda)
    for (const sparse::Fusion& f : program_.iteration.fusions)
      for (int id : output.axes)
        if (program_.axes[id].index_var == f.outer || program_.axes[id].index_var == f.inner)
          return "loop " + f.into + " fuses " + f.outer + " and " + f.inner + " into one loop over the entries of " + f.tensor +
                 ", which closes no row of " + output.tensor;
  return "";
}

bool OutputOrder::appends_in_order(const sparse::SparseBuffer& output) const {
  const Format& format = output.format;
  if (appends_rows_in_order(output)) return true;
  if (config_.target == Target::Cuda || format.levels.front() != LevelKind::CompressedNonUnique ||
      segment_end(format, 0) != static_cast<int>(format.levels.size()) - 1)
    return false;
  for (const sparse::Fusion& f : program_.iteration.fusions)
    if (!fuses_rows(f) || program_.iteration.iterators[program_.depth_of(f.outer)].is_reduction ||
        program_.iteration.iterators[program_.depth_of(f.inner)].is_reduction)
      return false;
  return true;
}

bool OutputOrder::appends_rows_in_order(const sparse::SparseBuffer& output) const {
  const Format& format = output.format;
  if (config_.target == Target::Cuda || config_.auto_schedule || format.levels.size() != 2 || format.is_blocked() ||
      output.gathered_level >= 0 || output.listed_blocks || whole_ || nested_ ||
      !program_.iteration.added_parts.empty() || program_.iteration.fusions.size() != 1 ||
      !output.shares_structure_with.empty())
    return false;
  if (format.levels[1] != LevelKind::Compressed ||
      (format.levels[0] != LevelKind::Dense && format.levels[0] != LevelKind::Compressed))
    return false;
  const sparse::Fusion& f = program_.iteration.fusions.front();
  for (const ScheduleOp& op : config_.schedule)
    if (const ParallelOp* parallel = std::get_if<ParallelOp>(&op.op); parallel && !fuses_rows_in_parallel(output, f, *parallel))
      return false;
  if (!fuses_rows(f) || program_.depth_of(f.outer) != 0 || !fused_axes(f).second->unique ||
      program_.iteration.iterators[0].is_reduction || program_.iteration.iterators[1].is_reduction)
    return false;
  const sparse::Axis& rows = program_.axes[output.axes[0]];
  const sparse::Axis& columns = program_.axes[output.axes[1]];
  return rows.index_var == f.outer && columns.index_var == f.inner && rows.block_part == BlockPart::None &&
         columns.block_part == BlockPart::None && (rows.kind == sparse::AxisKind::DenseFixed || rows.unique) &&
         columns.unique;
}

bool OutputOrder::fuses_rows_in_parallel(const sparse::SparseBuffer& output, const sparse::Fusion& f, const ParallelOp& parallel) const {
  return output.format.levels[0] == LevelKind::Dense && parallel.var == f.into && parallel.reduction.empty() &&
         parallel.balance.empty();
}

}  // namespace spgen::lowering
