#include "passes/restrict_to_structure.h"

namespace spgen {

void restrict_to_structure(ast::Spec& spec, const Config& config) {
  if (config.output_structure.empty()) return;
  ast::Access pattern;
  for (const ast::Access* access : ast::collect_accesses(*spec.rhs))
    if (access->tensor == config.output_structure && access->indices == spec.output.indices) pattern = *access;
  pattern.pattern = true;
  // Each top-level term gets the factor, so that each is still summed over its own indices (a
  // bias added once, not once per k).
  std::vector<ast::SignedTerm> terms = ast::top_level_terms(spec.rhs);
  for (ast::SignedTerm& term : terms) term.expr = ast::make_operator(ast::ExprKind::Mul, term.expr->loc, ast::make_access(pattern), term.expr);
  spec.rhs = ast::sum_of(terms);
}

}  // namespace spgen
