// The Lowering's expressions and presence flags (passes/lower/lowering.h).
#include <limits>

#include "passes/lower/lowering.h"

namespace spgen::lowering {

using namespace loops;

// With a scalar accumulator, factors of the top-level product that do not depend on the
// summed loops are applied once, after the sum: `Y = X * (sum_k A*B)` rather than summing X*A*B.
void Lowering::split_hoistable_factors() {
  std::vector<ast::ExprPtr> factors;
  collect_factors(program_.iteration.body, factors);
  for (const ast::ExprPtr& factor : factors) {
    if (factor->kind == ast::ExprKind::Access && factor->access.pattern) continue;  // (its loops are the structure's)
    // (Added parts add into the same sum: nothing multiplies it afterwards. A factor does not
    // leave a max or min: max(c x) is c max(x) only where c >= 0.)
    bool outer = write_.scalar_accumulator && !sum_.whole && !sum_.added_to && max_depth(*factor) <= write_.depth &&
                 program_.iteration.reduction == ast::Reduction::Sum;
    (outer ? write_.outer_factors : write_.inner_factors).push_back(factor);
  }
}

void Lowering::collect_factors(const ast::ExprPtr& expr, std::vector<ast::ExprPtr>& out) {
  if (expr->kind == ast::ExprKind::Mul) {
    collect_factors(expr->lhs, out);
    collect_factors(expr->rhs, out);
  } else {
    out.push_back(expr);
  }
}

int Lowering::max_depth(const ast::Expr& expr) const {
  int depth = -1;
  for (const ast::Access* access : ast::collect_accesses(expr))
    for (const std::string& var : access->indices) depth = std::max(depth, program_.depth_of(var));
  return depth;
}

Expr Lowering::product(const std::vector<ast::ExprPtr>& factors) const {
  Expr result;
  for (const ast::ExprPtr& factor : factors) {
    if (factor->kind == ast::ExprKind::Access && factor->access.pattern) continue;  // (1 where it is stored: the loops see to that)
    Expr value = lower_expr(*factor);
    result = result ? binary(BinOp::Mul, result, value) : value;
  }
  return result ? result : std::make_shared<FloatImm>(1.0, "1", value_type_);
}

Expr Lowering::lower_expr(const ast::Expr& expr) const {
  switch (expr.kind) {
    case ast::ExprKind::Access: {
      const std::string& tensor = expr.access.tensor;
      Expr value = expr.access.pattern ? std::make_shared<FloatImm>(1.0, "1", value_type_)
                                       : load(program_.buffer(tensor).values, value_position(tensor), value_type_);
      Expr present = presence(tensor);
      return present && !known_present(present) ? select(present, value, std::make_shared<FloatImm>(0.0, "0", value_type_)) : value;
    }
    case ast::ExprKind::Literal: return std::make_shared<FloatImm>(expr.value, expr.literal, value_type_);
    case ast::ExprKind::Neg: return std::make_shared<Neg>(lower_expr(*expr.lhs));
    case ast::ExprKind::Call: {
      // Evaluated only where its arguments' tensors are (iteration_space.h): in a merge loop that
      // visits more (`min(A * B, 1) - A` at an entry of A alone), the call reads 0 there, not
      // f of the absent entries' zeros.
      Expr present = some_term_present(tensor_terms(expr), [&](const std::string& tensor) { return presence(tensor); });
      if (present && known_present(present)) present = nullptr;
      // Inside the guard, its flags hold: the calls and accesses there are not guarded again.
      const size_t known = known_present_.size();
      if (present) conjuncts(present, known_present_);
      const Expr value = lower_call(expr);
      known_present_.resize(known);
      return present ? select(present, value, std::make_shared<FloatImm>(0.0, "0", value_type_)) : value;
    }
    default: break;
  }
  BinOp op = expr.kind == ast::ExprKind::Add   ? BinOp::Add
             : expr.kind == ast::ExprKind::Sub ? BinOp::Sub
             : expr.kind == ast::ExprKind::Mul ? BinOp::Mul
                                               : BinOp::Div;
  return binary(op, lower_expr(*expr.lhs), lower_expr(*expr.rhs));
}

Expr Lowering::reduction_identity() const {
  switch (program_.iteration.reduction) {
    case ast::Reduction::Sum: break;
    case ast::Reduction::Max: return std::make_shared<FloatImm>(-std::numeric_limits<double>::infinity(), "", value_type_);
    case ast::Reduction::Min: return std::make_shared<FloatImm>(std::numeric_limits<double>::infinity(), "", value_type_);
  }
  return std::make_shared<FloatImm>(0.0, "0", value_type_);
}

Stmt Lowering::reduce_into_accumulator(Expr value) const {
  if (program_.iteration.reduction == ast::Reduction::Sum) return std::make_shared<Assign>(write_.accumulator, std::move(value), true);
  const BinOp op = program_.iteration.reduction == ast::Reduction::Max ? BinOp::Max : BinOp::Min;
  return std::make_shared<Assign>(write_.accumulator, std::move(value), true, false, op);
}

void Lowering::conjuncts(const Expr& condition, std::vector<Expr>& out) {
  const auto* both = condition->kind == ExprKind::Binary ? &static_cast<const Binary&>(*condition) : nullptr;
  if (both && both->op == BinOp::And) {
    conjuncts(both->a, out);
    conjuncts(both->b, out);
  } else {
    out.push_back(condition);
  }
}

bool Lowering::known_present(const Expr& present) const {
  std::vector<Expr> needed;
  conjuncts(present, needed);
  return std::all_of(needed.begin(), needed.end(), [&](const Expr& flag) {
    return std::any_of(known_present_.begin(), known_present_.end(), [&](const Expr& known) { return same_expr(flag, known); });
  });
}

Expr Lowering::lower_call(const ast::Expr& call) const {
  const Expr first = lower_expr(*call.lhs);
  switch (call.function) {
    case ast::Function::Exp: return std::make_shared<MathFn>(MathOp::Exp, first);
    case ast::Function::Log: return std::make_shared<MathFn>(MathOp::Log, first);
    case ast::Function::Sqrt: return std::make_shared<MathFn>(MathOp::Sqrt, first);
    case ast::Function::Abs: return std::make_shared<MathFn>(MathOp::Abs, first);
    case ast::Function::Max: return binary(BinOp::Max, first, lower_expr(*call.rhs));
    case ast::Function::Min: return binary(BinOp::Min, first, lower_expr(*call.rhs));
  }
  throw std::logic_error("unknown function");
}

// The tensor is stored at the current point (null: always, no merge loop around here involves
// it, and none of its levels above `above_level` is found by binary search).
Expr Lowering::presence(const std::string& tensor, int above_level) const {
  return presence_with_searched(tensor, [&](const std::string&, int level) { return level < above_level; });
}

// The number of positions of the buffer's first `levels` levels (all of them by default).
Expr Lowering::structure_size(const sparse::SparseBuffer& buffer, size_t levels) const {
  return lowering::structure_size(program_, buffer, index_type_, levels);
}

}  // namespace spgen::lowering
