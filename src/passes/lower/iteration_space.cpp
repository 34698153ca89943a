#include "passes/lower/iteration_space.h"

#include <algorithm>

namespace spgen::lowering {

using loops::Expr;

IterationSpace tensor_terms(const ast::Expr& expr) {
  return terms(expr, [](const std::string&) { return true; }, [](const IterationSpace&) {});
}

bool divides_by(const ast::Expr& expr, const std::string& tensor) {
  if (expr.kind == ast::ExprKind::Access) return false;
  if (expr.kind == ast::ExprKind::Div)
    for (const ast::Access* a : ast::collect_accesses(*expr.rhs))
      if (a->tensor == tensor) return true;
  return (expr.lhs && divides_by(*expr.lhs, tensor)) || (expr.rhs && divides_by(*expr.rhs, tensor));
}

Expr some_term_present(const IterationSpace& terms, const std::function<Expr(const std::string&)>& present_of) {
  Expr any;
  for (const Conjunction& term : terms) {
    Expr all;
    for (const std::string& tensor : term) all = logical_and(all, present_of(tensor));
    if (!all) return nullptr;
    any = logical_or(any, all);
  }
  return any;
}

bool in_every_conjunction(const IterationSpace& space, const std::string& tensor) {
  return std::all_of(space.begin(), space.end(), [&](const Conjunction& c) { return c.count(tensor) > 0; });
}

}  // namespace spgen::lowering
