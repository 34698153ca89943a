// The iteration space of a loop: which stored tensors the loop of an index variable must
// visit, as a union of intersections of the tensors of an expression's terms. Pure functions of
// the expression (lower_to_loops decides which tensors count on a loop).
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "ir/loop_ir.h"

namespace spgen::lowering {

// Which stored tensors an index variable's loop must visit, as a union of intersections
// (disjunctive normal form): `A * B` → {{A,B}}, `A + B` → {{A},{B}}, a dense term → {{}}.
// This is the one-variable core of a merge lattice.
using Conjunction = std::set<std::string>;
using IterationSpace = std::vector<Conjunction>;

// The expression as a union of intersections (disjunctive normal form) of the tensors for
// which `counts` holds; a divisor contributes nothing to its term, and `check_divisor` sees
// the divisor's own terms first.
template <class Counts, class CheckDivisor>
IterationSpace terms(const ast::Expr& expr, const Counts& counts, const CheckDivisor& check_divisor) {
  switch (expr.kind) {
    case ast::ExprKind::Access: return counts(expr.access.tensor) ? IterationSpace{{expr.access.tensor}} : IterationSpace{{}};
    case ast::ExprKind::Literal: return {{}};
    case ast::ExprKind::Neg: return terms(*expr.lhs, counts, check_divisor);
    case ast::ExprKind::Div:
      check_divisor(terms(*expr.rhs, counts, check_divisor));
      return terms(*expr.lhs, counts, check_divisor);
    case ast::ExprKind::Mul: {
      IterationSpace product;
      const IterationSpace left = terms(*expr.lhs, counts, check_divisor), right = terms(*expr.rhs, counts, check_divisor);
      for (const Conjunction& a : left)
        for (const Conjunction& b : right) {
          Conjunction both = a;
          both.insert(b.begin(), b.end());
          product.push_back(both);
        }
      return product;
    }
    case ast::ExprKind::Call: {  // where its visited arguments are (`max(x(i), 0)`: x's entries)
      IterationSpace either;
      for (const ast::Expr* argument : ast::visited_arguments(expr)) {
        const IterationSpace own = terms(*argument, counts, check_divisor);
        either.insert(either.end(), own.begin(), own.end());
      }
      return either;
    }
    case ast::ExprKind::Add:
    case ast::ExprKind::Sub: {
      IterationSpace sum = terms(*expr.lhs, counts, check_divisor);
      IterationSpace right = terms(*expr.rhs, counts, check_divisor);
      sum.insert(sum.end(), right.begin(), right.end());
      return sum;
    }
  }
  return {{}};
}

// Every access's tensor, as a union of intersections (a tensor in a divisor counts as none).
IterationSpace tensor_terms(const ast::Expr& expr);

// Whether some divisor in `expr` reads `tensor`.
bool divides_by(const ast::Expr& expr, const std::string& tensor);

// Where some term has all its tensors present (`present_of`: a tensor's flag, null for
// always); null where some term is always present.
loops::Expr some_term_present(const IterationSpace& terms, const std::function<loops::Expr(const std::string&)>& present_of);

// Whether every conjunction of `space` holds `tensor`.
bool in_every_conjunction(const IterationSpace& space, const std::string& tensor);

}  // namespace spgen::lowering
