#include "passes/infer_output_format.h"

#include <algorithm>

#include "passes/build_sparse_ir.h"
#include "passes/infer_loop_order.h"
#include "passes/output_fill.h"
#include "support/diagnostics.h"

namespace spgen {
namespace {

// The shorthand that spells `format`, or "custom".
std::string shorthand_name(const Format& format) {
  const LevelKind D = LevelKind::Dense, C = LevelKind::Compressed;
  const std::vector<LevelKind>& levels = format.levels;
  bool identity = true;
  for (size_t l = 0; l < format.mode_order.size(); ++l) identity &= format.mode_order[l] == static_cast<int>(l);
  if (format.all_dense() && identity) return "dense";
  if (levels == std::vector<LevelKind>{C}) return "sv";
  if (levels == std::vector<LevelKind>{D, C}) return identity ? "csr" : "csc";
  if (levels == std::vector<LevelKind>{C, C}) return identity ? "dcsr" : "dcsc";
  if (identity && std::all_of(levels.begin(), levels.end(), [&](LevelKind k) { return k == C; })) return "csf";
  return "custom";
}

}  // namespace

std::optional<LoopOrderConflict> infer_output_format(sparse::Program& program, Config& config, const ast::Spec& spec) {
  const sparse::SparseBuffer& output = program.output();
  // Levels follow the loop order, so the output is appended to as the loops run.
  std::vector<int> modes(output.indices.size());
  for (size_t m = 0; m < modes.size(); ++m) modes[m] = static_cast<int>(m);
  std::stable_sort(modes.begin(), modes.end(), [&](int a, int b) {
    return program.depth_of(output.indices[static_cast<size_t>(a)]) < program.depth_of(output.indices[static_cast<size_t>(b)]);
  });
  const OutputFill fill = expected_fill(spec, config);
  Format format;
  format.mode_order = modes;
  // (A max or min reduction is written dense, for now: its entries over no visit are -inf or +inf.)
  const bool sparse_allowed = spec.reduction == ast::Reduction::Sum;
  for (int mode : modes)
    format.levels.push_back(sparse_allowed && fill.sparse.at(output.indices[static_cast<size_t>(mode)]) ? LevelKind::Compressed
                                                                                                           : LevelKind::Dense);
  // No compressed level above a dense one: a dense level holds every coordinate under each
  // parent, so the levels above it gain nothing from being compressed (and a compressed level
  // above a dense one would need per-parent assembly of a dense block for a few entries).
  bool dense_below = false;
  for (size_t l = format.levels.size(); l-- > 0;) {
    if (dense_below) format.levels[l] = LevelKind::Dense;
    dense_below |= format.levels[l] == LevelKind::Dense;
  }
  format.name = shorthand_name(format);
  const Config before = config;
  config.formats[output.tensor] = format;

  // Keep what the stage I schedule made of the iteration: its loop order and fusions.
  std::vector<sparse::Iterator> loop_order = program.iteration.iterators;
  std::vector<sparse::Fusion> fusions = program.iteration.fusions;
  const std::string tensor = output.tensor;
  program = build_sparse_ir(spec, config);
  auto vars_of = [](const std::vector<sparse::Iterator>& iterators) {
    std::vector<std::string> vars;
    for (const sparse::Iterator& it : iterators) vars.push_back(it.var);
    return vars;
  };
  std::vector<std::string> old_vars = vars_of(loop_order), new_vars = vars_of(program.iteration.iterators);
  std::sort(old_vars.begin(), old_vars.end());
  std::sort(new_vars.begin(), new_vars.end());
  if (old_vars == new_vars) {
    program.iteration.iterators = loop_order;
    program.iteration.fusions = fusions;
  } else {
    // The inferred format changed the loops themselves (an output in the structure of an
    // unblocked operand takes no block loops): order the new ones afresh, which is only right
    // where the stage I schedule had not ordered the old ones otherwise.
    sparse::Program plain = build_sparse_ir(spec, before);
    if (std::optional<LoopOrderConflict> conflict = infer_loop_order_or_conflict(plain, before)) return conflict;
    if (!fusions.empty() || vars_of(plain.iteration.iterators) != vars_of(loop_order))
      throw CompileError(format_config_error(
          config.file, "/tensors/" + tensor + "/format",
          "the format inferred for " + tensor + " (" + format.name + ", in the structure of " +
              program.output().shares_structure_with + ") changes the loops that the stage I schedule reordered or fused; give " +
              tensor + "'s format in the config"));
    if (std::optional<LoopOrderConflict> conflict = infer_loop_order_or_conflict(program, config)) return conflict;
  }
  program.buffers.front().format_inferred = true;
  program.buffers.front().format_reason = describe_fill(spec, fill);
  return std::nullopt;
}

}  // namespace spgen
