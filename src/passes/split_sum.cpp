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

// Several loop nests can write the output: it is dense, or every part's output shares one input's
// structure (as X in SDDMM). Otherwise the kernel assembles it, which only one loop nest can.
bool nest_per_part(const Config& config, const std::vector<SumPart>& parts) {
  if (config.format_of(parts.front().spec.output.tensor).all_dense()) return true;
  const std::string shared = find_shared_structure(parts.front().spec, parts.front().config);
  return !shared.empty() &&
         std::all_of(parts.begin(), parts.end(), [&](const SumPart& p) { return find_shared_structure(p.spec, p.config) == shared; });
}

// The parts of `groups`, as split_sum gives them.
std::vector<SumPart> parts_of_groups(const ast::Spec& spec, Config& config, const std::vector<ast::TermGroup>& groups) {
  // An omitted output format is inferred once, from the whole spec's operands in storage order
  // (each part alone might infer another), and every part gets it.
  const bool inferred = config.infer_output_format;
  const Config original = config;
  if (inferred) {
    sparse::Program whole = build_sparse_ir(spec, config);
    infer_loop_order(whole, config);
    if (std::optional<LoopOrderConflict> conflict = infer_output_format(whole, config, spec)) throw *conflict;
    config.infer_output_format = false;
  }

  std::vector<SumPart> parts;
  for (size_t k = 0; k < groups.size(); ++k) {
    SumPart part;
    part.name = "part" + std::to_string(k + 1);
    part.summed = groups[k].summed;
    part.terms = groups[k].terms;
    // The first part writes the output as the spec says; the others add into it.
    part.spec = part_spec(spec, ast::sum_of(part.terms), k > 0 || spec.accumulate);
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
  if (!nest_per_part(config, parts)) {
    // Only one loop nest can build an assembled output: the sum stays whole, its parts placed in
    // one nest (passes/place_sum_parts.h), and its format is inferred there as for any spec.
    for (const ScheduleOp& op : config.schedule)
      if (!op.part.empty())
        throw CompileError(format_config_error(
            config.file, op.path + "/part",
            op.name() + ": the sum is one loop nest, as " + spec.output.tensor + " (" + config.format_of(spec.output.tensor).name +
                ") is a sparse output the kernel assembles, so it has no parts to name; leave out \"part\""));
    config = original;
    return {};
  }
  return parts;
}

}  // namespace

std::vector<SumPart> split_sum(const ast::Spec& spec, Config& config) {
  const std::vector<ast::TermGroup> groups = ast::terms_by_summed_vars(spec);
  if (groups.size() < 2) return {};
  return parts_of_groups(spec, config, groups);
}

std::vector<SumPart> split_terms(const ast::Spec& spec, Config& config) {
  const std::vector<ast::SignedTerm> terms = ast::distributed_terms(spec.rhs, spec.output.indices);
  if (terms.size() < 2 || !config.format_of(spec.output.tensor).all_dense()) return {};
  std::vector<ast::TermGroup> groups;
  for (const ast::SignedTerm& term : terms) groups.push_back({ast::summed_vars_of(spec, *term.expr), {term}});
  return parts_of_groups(spec, config, groups);
}

std::string SumPart::description() const {
  return ast::to_string(spec.output) + (spec.accumulate ? " += " : " = ") + ast::to_string(*spec.rhs) + " (" + summed_text(summed) + ")";
}

}  // namespace spgen
