#include "passes/place_sum_parts.h"

#include <algorithm>
#include <climits>

#include "passes/lower_to_loops.h"

namespace spgen {

void place_sum_parts(sparse::Program& program, const ast::Spec& spec, bool union_apart) {
  std::vector<ast::TermGroup> groups = ast::terms_by_summed_vars(spec);
  // Terms that cannot share one nest (beside a blocked operand, or their storage orders
  // conflict): a part per term, each with the indices it sums over, C_prev of `+=` among them.
  if (union_apart) {
    const std::vector<ast::SignedTerm> terms = ast::distributed_terms(spec.rhs, spec.output.indices);
    if (terms.size() < 2) return;
    program.iteration.body = ast::sum_of({terms.front()});
    for (size_t t = 1; t < terms.size(); ++t)
      program.iteration.added_parts.push_back({ast::summed_vars_of(spec, *terms[t].expr), ast::sum_of({terms[t]})});
    return;
  }
  // C_prev of `+=` ordered apart (its storage order conflicts with the operands'): `C_prev + rest`
  // (read_previous_output) lists C's entries with C_prev a part of its own, in a nest of its own
  // order; the rest is one part, or its groups' parts where its terms sum over different indices
  // (`C += A B + D`: C_prev apart from D, whose storage order conflicts with its own).
  if (!spec.previous_output.empty() && program.buffer(spec.previous_output).ordered_apart &&
      spec.rhs->kind == ast::ExprKind::Add && spec.rhs->lhs->kind == ast::ExprKind::Access &&
      spec.rhs->lhs->access.tensor == spec.previous_output) {
    ast::Spec rest = spec;
    rest.rhs = spec.rhs->rhs;
    rest.previous_output.clear();
    place_sum_parts(program, rest);
    if (program.iteration.added_parts.empty()) program.iteration.body = rest.rhs;
    program.iteration.added_parts.push_back({{}, spec.rhs->lhs});
    return;
  }
  if (groups.size() < 2 || !output_is_assembled(program)) return;
  // The body is the group that sums outermost: its loops decide how the output's entries are
  // gathered (a row workspace when its summed loop is outside the output's last, else a scalar).
  auto first_summed_depth = [&](const ast::TermGroup& group) {
    int depth = INT_MAX;
    for (const std::string& var : group.summed) depth = std::min(depth, program.depth_of(var));
    return depth;
  };
  auto body = std::min_element(groups.begin(), groups.end(), [&](const ast::TermGroup& a, const ast::TermGroup& b) {
    return first_summed_depth(a) < first_summed_depth(b);
  });
  program.iteration.body = ast::sum_of(body->terms);
  for (auto group = groups.begin(); group != groups.end(); ++group)
    if (group != body) program.iteration.added_parts.push_back({group->summed, ast::sum_of(group->terms)});
}

}  // namespace spgen
