#include "passes/split_sum.h"

#include <algorithm>
#include <memory>
#include <set>
#include <variant>

#include "passes/build_sparse_ir.h"
#include "passes/decompose_operand.h"
#include "passes/infer_loop_order.h"
#include "passes/infer_output_format.h"
#include "support/diagnostics.h"

namespace spgen {

namespace {

// The terms of one part as one expression, each with its sign: `b(i) - c(i)`, `-(2 * b(i))`.
ast::ExprPtr sum_of(const std::vector<ast::SignedTerm>& terms) {
  ast::ExprPtr sum;
  for (const ast::SignedTerm& term : terms) {
    if (!sum) sum = term.negated ? ast::make_operator(ast::ExprKind::Neg, term.expr->loc, term.expr) : term.expr;
    else sum = ast::make_operator(term.negated ? ast::ExprKind::Sub : ast::ExprKind::Add, term.expr->loc, sum, term.expr);
  }
  return sum;
}

std::string summed_text(const std::vector<std::string>& summed) {
  if (summed.empty()) return "no summed index";
  std::string text = "summed over ";
  for (size_t k = 0; k < summed.size(); ++k) text += (k ? ", " : "") + summed[k];
  return text;
}

// The spec of one part: its terms, with the tensors and index variables they use (in the
// whole spec's order, so its kernel's parameters are a subsequence of the whole kernel's).
ast::Spec part_spec(const ast::Spec& spec, ast::ExprPtr rhs, bool accumulate) {
  ast::Spec part = spec;
  part.rhs = std::move(rhs);
  part.accumulate = accumulate;
  std::set<std::string> tensors{spec.output.tensor}, vars(spec.output.indices.begin(), spec.output.indices.end());
  for (const ast::Access* access : ast::collect_accesses(*part.rhs)) {
    tensors.insert(access->tensor);
    vars.insert(access->indices.begin(), access->indices.end());
  }
  std::erase_if(part.tensors, [&](const ast::TensorUse& use) { return !tensors.count(use.name); });
  std::erase_if(part.index_vars, [&](const std::string& var) { return !vars.count(var); });
  return part;
}

bool names_only_index_vars(const ast::Spec& spec, const ReorderOp& reorder) {
  return std::all_of(reorder.order.begin(), reorder.order.end(), [&](const std::string& var) {
    return std::find(spec.index_vars.begin(), spec.index_vars.end(), var) != spec.index_vars.end();
  });
}

[[noreturn]] void fail_output(const Config& config, const std::string& output, const std::string& message) {
  throw CompileError(format_config_error(config.file, "/tensors/" + output, message));
}

// "the terms A(i,j) * x(j) (summed over j) and b(i) (no summed index)"
std::string list_parts(const std::vector<SumPart>& parts) {
  std::string text;
  for (size_t k = 0; k < parts.size(); ++k)
    text += std::string(k == 0 ? "" : k + 1 == parts.size() ? " and " : ", ") + ast::to_string(*parts[k].spec.rhs) + " (" +
            summed_text(parts[k].summed) + ")";
  return text;
}

// Kernels that compute the same: each summed part into a tensor of its own, then their sum.
std::string several_kernels(const ast::Spec& spec, const std::vector<SumPart>& parts) {
  std::string kernels;
  std::vector<ast::SignedTerm> sum;
  for (const SumPart& part : parts) {
    if (part.summed.empty()) {
      sum.insert(sum.end(), part.terms.begin(), part.terms.end());
      continue;
    }
    ast::Access temporary = spec.output;
    temporary.tensor = "T" + std::to_string(sum.size() + 1);
    kernels += "`" + ast::to_string(temporary) + " = " + ast::to_string(*part.spec.rhs) + "`, ";
    sum.push_back({ast::make_access(temporary), false});
  }
  return kernels + "then `" + ast::to_string(spec.output) + (spec.accumulate ? " += " : " = ") + ast::to_string(*sum_of(sum)) + "`";
}

void check_output(const ast::Spec& spec, const Config& config, const std::vector<SumPart>& parts, bool inferred) {
  const std::string& output = spec.output.tensor;
  const std::string why = "the right-hand side sums its terms over different indices (" + list_parts(parts) +
                          "), so the kernel is one loop nest per part, each writing " + output;
  const Format& format = config.format_of(output);
  if (format.all_dense()) return;
  const std::string format_name = format.name + (inferred ? ", inferred from the operands" : "");
  std::vector<std::string> shared;
  for (const SumPart& part : parts) shared.push_back(find_shared_structure(part.spec, part.config));
  auto sharing = std::find_if(shared.begin(), shared.end(), [](const std::string& s) { return !s.empty(); });
  if (sharing == shared.end())
    fail_output(config, output, why + ", but " + output + " (" + format_name + ") is a sparse output the kernel assembles, "
                                    "which only one loop nest can build; give " + output + " the format \"dense\", or "
                                    "compute it with several kernels: " + several_kernels(spec, parts));
  for (size_t k = 0; k < parts.size(); ++k)
    if (shared[k] != *sharing)
      fail_output(config, output, why + ", and " + output + " (" + format_name + ") shares the structure of " + *sharing +
                                      " in the part " + ast::to_string(*parts[static_cast<size_t>(sharing - shared.begin())].spec.rhs) +
                                      ", but the part " + ast::to_string(*parts[k].spec.rhs) +
                                      (shared[k].empty() ? " does not multiply by " + *sharing
                                                         : " shares the structure of " + shared[k] + " instead") +
                                      "; give " + output + " the format \"dense\", or multiply every term by " + *sharing);
}

}  // namespace

std::vector<SumPart> split_sum(const ast::Spec& spec, Config& config) {
  const std::vector<ast::TermGroup> groups = ast::terms_by_summed_vars(spec);
  if (groups.size() < 2) return {};
  // An omitted output format is inferred once, from the whole spec's operands in storage order
  // (each part alone might infer another), and every part gets it.
  const bool inferred = config.infer_output_format;
  if (inferred) {
    sparse::Program whole = build_sparse_ir(spec, config);
    infer_loop_order(whole, config);
    infer_output_format(whole, config, spec);
    config.infer_output_format = false;
  }

  std::vector<SumPart> parts;
  for (size_t k = 0; k < groups.size(); ++k) {
    SumPart part;
    part.name = "part" + std::to_string(k + 1);
    part.summed = groups[k].summed;
    part.terms = groups[k].terms;
    // The first part writes the output as the spec says; the others add into it.
    part.spec = part_spec(spec, sum_of(part.terms), k > 0 || spec.accumulate);
    part.config = config;
    part.config.name = config.name + "_" + part.name;
    std::erase_if(part.config.formats, [&](const auto& entry) { return !part.spec.find_tensor(entry.first); });
    parts.push_back(std::move(part));
  }
  // Ops name parts that exist.
  std::string names;
  for (const SumPart& part : parts) names += (names.empty() ? "" : ", ") + part.name + " (" + ast::to_string(*part.spec.rhs) + ")";
  for (const ScheduleOp& op : config.schedule)
    if (!op.part.empty() && std::none_of(parts.begin(), parts.end(), [&](const SumPart& p) { return p.name == op.part; }))
      throw CompileError(format_config_error(config.file, op.path + "/part",
                                             op.name() + ": the sum has no part \"" + op.part + "\" (its parts: " + names + ")"));
  for (SumPart& part : parts) {
    // The ops for every part, and those that name it, less those a part's own op replaces.
    part.config.schedule.clear();
    for (const ScheduleOp& op : config.schedule)
      if (schedules_part(config, op, part.name)) part.config.schedule.push_back(op);
    // A reorder of the spec's index variables orders the part's own among themselves (so that it
    // stays a stage I op, before a fuse, in a part that lacks some of them).
    for (ScheduleOp& op : part.config.schedule)
      if (auto* reorder = std::get_if<ReorderOp>(&op.op); reorder && names_only_index_vars(spec, *reorder))
        std::erase_if(reorder->order, [&](const std::string& var) {
          return std::find(part.spec.index_vars.begin(), part.spec.index_vars.end(), var) == part.spec.index_vars.end();
        });
  }
  check_output(spec, config, parts, inferred);
  return parts;
}

std::string SumPart::description() const {
  return ast::to_string(spec.output) + (spec.accumulate ? " += " : " = ") + ast::to_string(*spec.rhs) + " (" + summed_text(summed) + ")";
}

}  // namespace spgen
