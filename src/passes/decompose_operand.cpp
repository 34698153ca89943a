#include "passes/decompose_operand.h"

#include "passes/output_fill.h"

#include <algorithm>
#include <type_traits>
#include <variant>

namespace spgen {

namespace {

// The spec's right-hand side with every access of `from` reading `to` instead.
ast::ExprPtr renamed(const ast::ExprPtr& expr, const std::string& from, const std::string& to) {
  if (!expr) return expr;
  auto copy = std::make_shared<ast::Expr>(*expr);
  if (copy->kind == ast::ExprKind::Access && copy->access.tensor == from) copy->access.tensor = to;
  copy->lhs = renamed(expr->lhs, from, to);
  copy->rhs = renamed(expr->rhs, from, to);
  return copy;
}

Format part_format(const DecomposedPart& part, const DecomposeOp& op) {
  using L = LevelKind;
  switch (part.kind) {
    case PartKind::Ell: return Format{"ell", {L::Dense, L::SparseFixed}, {0, 1}, {0, part.width}, {}, op.interleave};
    case PartKind::Coo: return Format{"coo", {L::CompressedNonUnique, L::Singleton}, {0, 1}};
    case PartKind::Bucket:
      return Format{"hyb bucket", {part.unique_rows ? L::Compressed : L::CompressedNonUnique, L::SparseFixed}, {0, 1},
                    {0, part.width}, {}, op.interleave};
    case PartKind::Bsr:
      return Format{"bsr", {L::Dense, L::Compressed, L::Dense, L::Dense}, {0, 1, 0, 1}, {},
                    {{BlockPart::Block, op.block_rows}, {BlockPart::Block, op.block_cols},
                     {BlockPart::InBlock, op.block_rows}, {BlockPart::InBlock, op.block_cols}}};
    case PartKind::Csr: return Format{"csr", {L::Dense, L::Compressed}, {0, 1}};
    case PartKind::Sell: {
      // The rows listed (sorted within windows of sigma, so out of order there), then the
      // slices' slots: a SparseFixed level whose width varies by slice.
      return sell_format(op.interleave, op.sigma);
    }
  }
  return {};
}

std::vector<DecomposedPart> part_list(const DecomposeOp& op) {
  std::vector<DecomposedPart> parts;
  auto add = [&](std::string name, PartKind kind, int64_t width = 0, int64_t partition = 0, bool unique = true) {
    DecomposedPart part;
    part.name = std::move(name);
    part.kind = kind;
    part.width = width;
    part.partition = partition;
    part.unique_rows = unique;
    parts.push_back(std::move(part));
  };
  if (op.format == "ell+coo") {
    add("ell", PartKind::Ell, op.width);
    add("coo", PartKind::Coo, 0, 0, false);
  } else if (op.format == "bsr+csr") {
    add("bsr", PartKind::Bsr);
    add("csr", PartKind::Csr);
  } else if (op.format == "bsr") {
    add("bsr", PartKind::Bsr);
  } else if (op.format == "sell") {
    add("sell", PartKind::Sell);
  } else {
    // Only the widest bucket holds the pieces of rows longer than it, so only its rows repeat.
    for (int64_t p = 0; p < op.partitions; ++p)
      for (size_t b = 0; b < op.buckets.size(); ++b)
        add("p" + std::to_string(p) + "_b" + std::to_string(op.buckets[b]), PartKind::Bucket, op.buckets[b], p,
            b + 1 < op.buckets.size());
  }
  return parts;
}

// What an op does and to which loop: an op for one part replaces the ops for every part that
// have the same key ("parallel i" for part coo replaces "parallel i" for the coo part).
std::string op_key(const ScheduleOp& op) {
  std::string target = std::visit([](const auto& o) -> std::string {
    using T = std::decay_t<decltype(o)>;
    if constexpr (std::is_same_v<T, ReorderOp> || std::is_same_v<T, DecomposeOp>) return "";
    else if constexpr (std::is_same_v<T, FuseOp>) return o.vars[0];
    else return o.var;
  }, op.op);
  return op.name() + " " + target;
}

bool overridden_for_part(const Config& config, const ScheduleOp& op, const std::string& part) {
  return op.part.empty() && std::any_of(config.schedule.begin(), config.schedule.end(), [&](const ScheduleOp& other) {
           return other.part == part && op_key(other) == op_key(op);
         });
}

}  // namespace

bool Decomposition::is_part_tensor(const std::string& tensor) const {
  return std::any_of(parts.begin(), parts.end(), [&](const DecomposedPart& p) { return p.tensor == tensor; });
}

bool schedules_part(const Config& config, const ScheduleOp& op, const std::string& part) {
  return (op.part.empty() || op.part == part) && !overridden_for_part(config, op, part);
}

bool has_decomposition(const Config& config) {
  return !config.schedule.empty() && std::holds_alternative<DecomposeOp>(config.schedule.front().op);
}

std::string decompose_refusal(const ast::Spec& spec, const Config& config, const std::string& tensor) {
  const Format& declared = config.format_of(tensor);
  if (declared.levels != std::vector<LevelKind>{LevelKind::Dense, LevelKind::Compressed} ||
      declared.mode_order != std::vector<int>{0, 1})
    return "the inspector reads " + tensor + " as csr, but its format is " + declared.name + "; give " + tensor +
           " the format \"csr\"";
  const std::string& output = spec.output.tensor;
  // An output whose format is left open is dense here when its fill says so (passes/output_fill.h).
  if (config.infer_output_format) {
    const OutputFill fill = expected_fill(spec, config);
    for (const std::string& var : spec.output.indices)
      if (fill.sparse.at(var))
        return "the parts add into the output, which must be dense, but " + output + " would be inferred sparse in " + var + " (" +
               fill.reason.at(var) + "): give " + output + " the format \"dense\"";
  } else if (!config.format_of(output).all_dense()) {
    return "the parts add into the output, which must be dense: give " + output + " the format \"dense\"";
  }
  if (spec.reduction != ast::Reduction::Sum)
    return std::string("the parts' kernels add up, which a ") + ast::reduction_name(spec.reduction) + " reduction does not take";
  const auto accesses = ast::collect_accesses(*spec.rhs);
  long uses = std::count_if(accesses.begin(), accesses.end(), [&](const ast::Access* a) { return a->tensor == tensor; });
  // The sum over parts is the whole only when the right-hand side is a multiple of `tensor`'s
  // one access: a factor of the product (or the dividend of a quotient) at the top.
  if (uses != 1 || ast::linear_degree(*spec.rhs, tensor) != 1)
    return "the kernel must be a sum of the parts' kernels: " + tensor +
           " must appear once, as a factor of the whole right-hand side (as in A(i,j) * B(j,k))";
  return "";
}

Decomposition decompose_operand(const ast::Spec& spec, const Config& config) {
  const ScheduleOp& source = config.schedule.front();
  Decomposition d;
  d.op = std::get<DecomposeOp>(source.op);
  d.op_path = source.path;
  const std::string& tensor = d.op.tensor;
  auto fail = [&](const std::string& message) { fail_schedule_op(config, source, message); };
  if (const std::string refusal = decompose_refusal(spec, config, tensor); !refusal.empty()) fail(refusal);

  d.parts = part_list(d.op);
  // Ops name parts that exist.
  std::string names;
  for (const DecomposedPart& part : d.parts) names += (names.empty() ? "" : ", ") + part.name;
  for (const ScheduleOp& op : config.schedule)
    if (!op.part.empty() && std::none_of(d.parts.begin(), d.parts.end(), [&](const DecomposedPart& p) { return p.name == op.part; }))
      throw CompileError(format_config_error(config.file, op.path + "/part",
                                             op.name() + ": the decomposition of " + tensor + " has no part \"" + op.part +
                                                 "\" (its parts: " + names + ")"));

  for (size_t k = 0; k < d.parts.size(); ++k) {
    DecomposedPart& part = d.parts[k];
    part.tensor = tensor + "_" + part.name;
    if (spec.find_tensor(part.tensor))
      fail("the part " + part.name + " would be named " + part.tensor + ", which the spec already uses; rename that tensor");
    part.spec = spec;
    part.spec.rhs = renamed(spec.rhs, tensor, part.tensor);
    for (ast::TensorUse& use : part.spec.tensors)
      if (use.name == tensor) use.name = part.tensor;
    // The first part writes the output as the spec says; the others add into it.
    if (k > 0) part.spec.accumulate = true;
    part.config = config;
    part.config.name = config.name + "_" + part.name;
    part.config.formats.erase(tensor);
    part.config.formats[part.tensor] = part_format(part, d.op);
    part.config.schedule.clear();
    part.config.infer_output_format = false;  // (dense, decided above for the whole kernel)
    for (size_t i = 1; i < config.schedule.size(); ++i)
      if (schedules_part(config, config.schedule[i], part.name)) part.config.schedule.push_back(config.schedule[i]);
  }
  return d;
}

}  // namespace spgen
