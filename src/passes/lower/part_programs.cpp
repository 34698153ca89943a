#include "passes/lower/part_programs.h"

#include <algorithm>
#include <map>
#include <set>

#include "passes/infer_loop_order.h"
#include "passes/lower_to_loops.h"

namespace spgen::lowering {

bool parts_listed_beside_blocks(const sparse::Program& whole) {
  const sparse::SparseBuffer& output = whole.output();
  if (whole.iteration.added_parts.empty() || !output_is_assembled(whole)) return false;
  if (whole.parts_list_output()) return true;
  if (output.format.is_blocked()) return false;
  for (const sparse::BlockedVar& b : whole.blocked_vars)
    if (std::find(output.indices.begin(), output.indices.end(), b.var) != output.indices.end()) return true;
  return false;
}

sparse::Program listed_part_program(const sparse::Program& whole, const ast::ExprPtr& terms, const Config& config) {
  sparse::Program part = whole;
  part.iteration.body = terms;
  part.iteration.added_parts.clear();
  // (The output blocks no loop of a part: it is unblocked, or listed into its blocks.)
  std::set<std::string> read;
  for (const ast::Access* access : ast::collect_accesses(*terms)) read.insert(access->tensor);
  std::vector<sparse::BlockedVar> kept;
  std::map<std::string, std::string> unblocked;  // a removed loop -> the index's loop in its place ("" for none)
  for (sparse::BlockedVar b : whole.blocked_vars) {
    std::string alike;
    for (const sparse::Axis& axis : part.axes)
      if (read.count(axis.tensor) && (axis.index_var == b.outer || axis.index_var == b.inner) && alike.empty())
        alike = axis.tensor;
    if (alike.empty()) {
      for (const sparse::Axis& axis : part.axes)
        if (read.count(axis.tensor) && axis.blocked_apart() && axis.mode_var == b.var && alike.empty()) {
          alike = axis.tensor;
          b.size = axis.block;
        }
      for (sparse::Axis& axis : part.axes)
        if (read.count(axis.tensor) && axis.blocked_apart() && axis.mode_var == b.var && axis.block == b.size)
          axis.index_var = axis.block_part == BlockPart::Block ? b.outer : b.inner;
    }
    if (alike.empty()) {
      // The index's loop takes the in-block loop's place, the later: the loops between the two
      // (another index's in-block loop, k_in) may give what an unblocked level on it needs (B(k,j)
      // csr beside D bsr: j after k_in).
      unblocked[b.outer] = "";
      unblocked[b.inner] = b.var;
      continue;
    }
    if (!read.count(b.tensor)) b.tensor = alike;
    kept.push_back(b);
  }
  sparse::set_part_loops(part, whole, std::move(kept), unblocked);
  // (C_prev of `+=` is kept a part alone, lower_iteration: its order serves no other tensor. A
  // union's term apart orders its loops by its own tensors.)
  if (std::any_of(read.begin(), read.end(), [&](const std::string& t) { return part.buffer(t).ordered_apart; }))
    infer_loop_order(part, config, read);
  // A tensor that gets its own block loops here (blocked apart in the whole: B block-DCSR 1x2
  // beside C_prev's 3x1 blocks) may need them in another order than the whole's: the part's
  // loops follow its own tensors then. (found by fuzzing: its block levels were iterated out of
  // order, reading a position not yet bound)
  else if (!loop_order_holds(part, read)) infer_loop_order(part, config, read);
  return part;
}

ast::ExprPtr without(const ast::ExprPtr& expr, const std::string& tensor) {
  auto with = [&](ast::ExprPtr lhs, ast::ExprPtr rhs) {
    auto copy = std::make_shared<ast::Expr>(*expr);
    copy->lhs = std::move(lhs);
    copy->rhs = std::move(rhs);
    return ast::ExprPtr(copy);
  };
  switch (expr->kind) {
    case ast::ExprKind::Access: return expr->access.tensor == tensor ? nullptr : expr;
    case ast::ExprKind::Literal: return expr;
    case ast::ExprKind::Neg: {
      ast::ExprPtr operand = without(expr->lhs, tensor);
      return operand ? with(operand, nullptr) : nullptr;
    }
    case ast::ExprKind::Mul:
    case ast::ExprKind::Div: {
      ast::ExprPtr lhs = without(expr->lhs, tensor), rhs = without(expr->rhs, tensor);
      return lhs && rhs ? with(lhs, rhs) : nullptr;  // (a divisor is never the blocked operand: checked)
    }
    case ast::ExprKind::Add:
    case ast::ExprKind::Sub: {
      ast::ExprPtr lhs = without(expr->lhs, tensor), rhs = without(expr->rhs, tensor);
      if (lhs && rhs) return with(lhs, rhs);
      if (lhs) return lhs;
      if (!rhs || expr->kind == ast::ExprKind::Add) return rhs;
      auto negated = std::make_shared<ast::Expr>(*expr);
      negated->kind = ast::ExprKind::Neg;
      negated->lhs = rhs;
      negated->rhs = nullptr;
      return ast::ExprPtr(negated);
    }
  }
  return expr;
}

}  // namespace spgen::lowering
