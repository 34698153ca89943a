#include "passes/size_variants.h"

#include <algorithm>
#include <set>

#include "support/diagnostics.h"

namespace spgen {

using namespace loops;

const Param* size_param(const LoweredFunc& func, const std::string& var) {
  for (const Param& p : func.params)
    if (p.kind == ParamKind::Dim && p.index_var == var) return &p;
  return nullptr;
}

namespace {

// The index variable of a tile (a register tile) or of a vectorize in lanes (a dot product): the
// loops that a constant size turns into straight-line vector code, and that measured 1.2-1.5x
// faster so (bench/RESULTS.md, session 18). A plain vectorize gains little from it.
std::string tiled_or_in_lanes(const ScheduleOp& op) {
  if (const auto* tile = std::get_if<TileOp>(&op.op)) return tile->var;
  // (A masked tail's lanes walk a sparse level's entries, SpMV's row: as many as the row has,
  // whatever the size of its index. No size helps them.)
  if (const auto* vectorize = std::get_if<VectorizeOp>(&op.op); vectorize && vectorize->lanes > 0 && !vectorize->masked_tail)
    return vectorize->var;
  return "";
}

}  // namespace

std::optional<SizeVariants> choose_size_variants(const Config& config, const sparse::Program& program, const LoweredFunc& generic,
                                                 bool assembles_output, const std::vector<ScheduleOp>& applied) {
  if (config.specialize_given) {
    if (config.specialize.empty()) return std::nullopt;
    // (named copies: clang 14 cannot capture structured bindings in a lambda)
    const std::string var = config.specialize.begin()->first;
    const std::vector<int64_t> sizes = config.specialize.begin()->second;
    auto refuse = [&](const std::string& why) {
      throw CompileError(format_config_error(config.file, "/specialize/" + var, why));
    };
    if (assembles_output)
      refuse("the kernel assembles its output " + program.output().tensor +
             ", which variants by size do not do yet (fix the size with \"sizes\", or give " + program.output().tensor +
             " a dense format)");
    if (!size_param(generic, var)) refuse("the kernel takes no size of " + var + " (dim_" + var + "): nothing to choose by");
    return SizeVariants{var, sizes, "\"specialize\""};
  }
  if (!config.auto_schedule || config.target != Target::Cpu || assembles_output) return std::nullopt;
  for (const ScheduleOp& op : applied) {
    const std::string var = tiled_or_in_lanes(op);
    if (var.empty() || config.sizes.count(var) || !size_param(generic, var)) continue;
    if (std::find(program.index_vars.begin(), program.index_vars.end(), var) == program.index_vars.end()) continue;
    // The output's rows in groups (an interleaved level's lanes) are no feature width.
    const std::vector<std::string>& rows = program.output().indices;
    if (!rows.empty() && rows.front() == var) continue;
    const std::string what = std::holds_alternative<TileOp>(op.op) ? "register tile over " : "dot product in lanes over ";
    return SizeVariants{var, kAutoVariantSizes, "`auto`, for its " + what + var + " at the usual feature widths"};
  }
  return std::nullopt;
}

std::vector<std::string> describe_variants(const std::optional<SizeVariants>& sizes, const std::vector<RowLengthVariant>& rows) {
  std::vector<std::string> lines;
  if (sizes) {
    std::string listed;  // "16, 32, 64 and 128"
    for (size_t k = 0; k < sizes->sizes.size(); ++k)
      listed += (k == 0 ? "" : k + 1 == sizes->sizes.size() ? " and " : ", ") + std::to_string(sizes->sizes[k]);
    lines.push_back(sizes->var + ": a kernel for each of " + listed + " (constant trip counts), chosen on entry by dim_" + sizes->var +
                    ";");
    lines.push_back("  any other size runs the generic kernel (" + sizes->reason + ")");
  }
  for (const RowLengthVariant& v : rows) {
    std::string ops;
    for (const ScheduleOp& op : v.schedule) ops += (ops.empty() ? "" : ", ") + describe_schedule_op(op);
    lines.push_back("rows of at least " + std::to_string(v.min_entries_per_row) +
                    " stored entries on average: a kernel of its own, chosen on entry,");
    lines.push_back("  scheduled " + ops);
  }
  return lines;
}

std::string variant_name(const std::string& kernel, const SizeVariants& variants, int64_t size) {
  return kernel + "_" + variants.var + std::to_string(size);
}

LoweredFunc build_dispatch(const std::string& name, const LoweredFunc& generic, const std::vector<DispatchCase>& cases,
                           const std::string& comment) {
  LoweredFunc entry;
  entry.name = name;
  entry.params = generic.params;
  std::vector<Expr> args;
  for (const Param& p : generic.params) args.push_back(var(p.name));
  // if (case 1) NAME_1(...); else if (case 2) ...; else NAME_generic(...)
  Stmt chain = std::make_shared<Call>(generic.name, args);
  for (auto it = cases.rbegin(); it != cases.rend(); ++it)
    chain = std::make_shared<If>(it->condition, std::make_shared<Call>(it->callee, args), chain);
  entry.body = block({std::make_shared<Comment>(comment), chain});
  return entry;
}

Expr size_equals(const LoweredFunc& generic, const std::string& index_var, int64_t size) {
  return binary(BinOp::Eq, var(size_param(generic, index_var)->name), int64(size));
}

Expr mean_row_length_at_least(const sparse::Program& program, const LoweredFunc& generic, int64_t min) {
  if (program.iteration.iterators.empty()) return nullptr;
  const std::string& rows = program.iteration.iterators.front().var;
  const Param* dim = size_param(generic, rows);
  if (!dim) return nullptr;
  for (const sparse::SparseBuffer& buffer : program.buffers) {
    const Format& f = buffer.format;
    if (buffer.is_output || f.levels.size() < 2 || f.levels[0] != LevelKind::Dense || f.levels[1] != LevelKind::Compressed ||
        f.block(0).part != BlockPart::None || f.block(1).part != BlockPart::None || buffer.indices[f.mode_order[0]] != rows)
      continue;
    for (const Param& p : generic.params)
      if (p.kind == ParamKind::Pos && p.tensor == buffer.tensor && p.level == 1)
        return binary(BinOp::Le, mul(int64(min), var(dim->name)), cast(ScalarType::Int64, load(p.name, var(dim->name), p.type)));
  }
  return nullptr;
}

std::string row_variant_name(const std::string& kernel, int64_t min) { return kernel + "_rows" + std::to_string(min); }

std::vector<std::string> schedule_differences(const std::vector<ScheduleOp>& generic, const std::vector<ScheduleOp>& variant,
                                              const std::string& which) {
  auto described = [](const std::vector<ScheduleOp>& ops) {
    std::vector<std::string> lines;
    for (const ScheduleOp& op : ops) lines.push_back(describe_schedule_op(op));
    return lines;
  };
  // "tile(k, 16 -> k0, k1)" and "tile(k, 32 -> k0, k1)" are the same op on the same loop.
  auto head = [](const std::string& op) { return op.substr(0, op.find_first_of(",)")); };
  const std::vector<std::string> theirs = described(generic), own = described(variant);
  std::vector<std::string> lines;
  std::set<std::string> replaced;
  for (size_t k = 0; k < own.size(); ++k) {
    if (std::find(theirs.begin(), theirs.end(), own[k]) != theirs.end()) continue;
    auto same = std::find_if(theirs.begin(), theirs.end(), [&](const std::string& op) { return head(op) == head(own[k]); });
    std::string line = "for " + which + ": " + own[k];
    if (same != theirs.end()) {
      line += " in place of " + *same;
      replaced.insert(*same);
    } else {
      line += " as well";
    }
    lines.push_back(line + (variant[k].reason.empty() ? "" : ": " + variant[k].reason));
  }
  for (const std::string& op : theirs)
    if (std::find(own.begin(), own.end(), op) == own.end() && !replaced.count(op)) lines.push_back("for " + which + ": no " + op);
  return lines;
}

}  // namespace spgen
