#include "passes/nest_plan.h"

#include <algorithm>

#include "passes/build_sparse_ir.h"
#include "passes/infer_loop_order.h"

namespace spgen {

StageOneOptions options_for(NestPlan plan, bool has_previous_output, const std::set<std::string>& apart) {
  StageOneOptions o;
  switch (plan) {
    case NestPlan::OneNest: break;
    case NestPlan::PreviousApart:
      o.list_output = o.previous_apart = true;
      break;
    case NestPlan::TermsApartByGroups:
      o.list_output = true;
      o.previous_apart = has_previous_output;
      o.apart = apart;
      break;
    case NestPlan::EveryTermApartOf:
      o.list_output = o.union_apart = true;
      o.previous_apart = has_previous_output;
      o.apart = apart;
      break;
    case NestPlan::PartsListedIntoBlocks: o.list_output = true; break;
    case NestPlan::PartsListed: o.list_output = o.parts_listed = true; break;
    case NestPlan::UnionPartsListed: o.list_output = o.union_apart = true; break;
    case NestPlan::EveryTermApart:
      o.list_output = o.union_apart = true;
      o.previous_apart = has_previous_output;
      break;
  }
  return o;
}

bool is_first_plan(NestPlan plan) {
  return plan == NestPlan::OneNest || plan == NestPlan::PreviousApart || plan == NestPlan::TermsApartByGroups ||
         plan == NestPlan::EveryTermApartOf;
}

std::optional<NestPlan> plan_after_refusal(const NestRefusal& refusal, NestPlan tried, const sparse::Program& program,
                                           const ast::Spec& spec) {
  const bool first = is_first_plan(tried);
  const bool parts_listed = tried == NestPlan::PartsListedIntoBlocks || tried == NestPlan::PartsListed;
  const bool added_parts = !program.iteration.added_parts.empty();
  // (A part's own terms beside a blocked operand, C_prev + D in `C += A B + D`, D outside
  // C_prev's blocks: every term a part gives more parts than the sum's.)
  auto more_parts_by_term = [&] {
    return added_parts && output_is_assembled(program) && !program.blocked_vars.empty() &&
           ast::distributed_terms(spec.rhs, spec.output.indices).size() > 1 + program.iteration.added_parts.size();
  };
  switch (refusal.kind) {
    case NestRefusal::Kind::SharedBlocks:
      if (!first) return std::nullopt;
      if (may_list_parts_into_blocks(program)) return NestPlan::PartsListedIntoBlocks;
      if (added_parts && output_is_assembled(program)) return NestPlan::PartsListed;
      return std::nullopt;
    case NestRefusal::Kind::UnionNest:
      if (first && may_list_union_parts(program)) return NestPlan::UnionPartsListed;
      if ((first || parts_listed) && more_parts_by_term()) return NestPlan::EveryTermApart;
      return std::nullopt;
    case NestRefusal::Kind::LoopOrder: return std::nullopt;
  }
  return std::nullopt;
}

std::set<std::string> operands_apart(const ast::Spec& spec, const Config& config) {
  const std::vector<ast::SignedTerm> terms = ast::distributed_terms(spec.rhs, spec.output.indices);
  std::set<std::string> apart;
  // (C_prev of `+=` is apart too, a part alone: the first term is the first operand's.)
  auto first = std::find_if(terms.begin(), terms.end(), [&](const ast::SignedTerm& term) {
    return term.expr->kind != ast::ExprKind::Access || term.expr->access.tensor != spec.previous_output;
  });
  for (const ast::Access* access : ast::collect_accesses(*spec.rhs)) apart.insert(access->tensor);
  for (const ast::Access* access : ast::collect_accesses(*first->expr)) apart.erase(access->tensor);
  apart.erase(spec.previous_output);
  // Only those that must: an operand whose order agrees with the others' joins them again
  // (in spec order), so that as few nests as possible order their own loops.
  for (const ast::TensorUse& use : spec.tensors) {
    if (!apart.count(use.name)) continue;
    std::set<std::string> fewer = apart;
    fewer.erase(use.name);
    if (loop_order_exists(build_sparse_ir(spec, config, true, !spec.previous_output.empty(), fewer), config)) apart = fewer;
  }
  return apart;
}

bool apart_by_groups(const ast::Spec& spec) {
  // Terms that sum over different indices are the parts of their groups, as always, unless
  // a group's own terms conflict (A B + E B + D with A dcsc, E dcsr): then every term apart.
  return ast::terms_by_summed_vars(spec).size() > 1;
}

}  // namespace spgen
