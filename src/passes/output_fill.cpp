#include "passes/output_fill.h"

namespace spgen {
namespace {

// The level of `format` that stores mode `mode`, or -1 (the first, for a blocked mode).
int level_of_mode(const Format& format, int mode) {
  for (size_t l = 0; l < format.mode_order.size(); ++l)
    if (format.mode_order[l] == mode) return static_cast<int>(l);
  return -1;
}

// Two reasons as one: "stored sparsely by A and B".
std::string joined(const std::string& left, const std::string& right) {
  const std::string stored = "stored sparsely by ";
  if (left == right) return left;
  if (left.rfind(stored, 0) == 0 && right.rfind(stored, 0) == 0) return left + " and " + right.substr(stored.size());
  return left + ", and " + right;
}

class FillAnalysis {
 public:
  FillAnalysis(const ast::Spec& spec, const Config& config) : spec_(spec), config_(config) {}

  // Whether `expr` holds `var` sparsely; `why` says why (or why not) in a few words.
  bool sparse_along(const ast::Expr& expr, const std::string& var, std::string& why) const {
    switch (expr.kind) {
      case ast::ExprKind::Access: return access_sparse_along(expr.access, var, why);
      case ast::ExprKind::Literal: return false;
      case ast::ExprKind::Neg: return sparse_along(*expr.lhs, var, why);
      case ast::ExprKind::Div: return sparse_along(*expr.lhs, var, why);  // (a quotient is zero where its numerator is)
      case ast::ExprKind::Call: {  // (evaluated only where its visited arguments are: sparse where each of them is)
        const std::vector<const ast::Expr*> arguments = ast::visited_arguments(expr);
        if (arguments.size() == 1) return sparse_along(*arguments.front(), var, why);
        std::string reasons;
        for (const ast::Expr* argument : arguments) {
          std::string own;
          if (!sparse_along(*argument, var, own)) {
            why = own.empty() ? "an argument of " + std::string(ast::function_name(expr.function)) + " holds every " + var : own;
            return false;
          }
          reasons = reasons.empty() ? own : joined(reasons, own);
        }
        return why = reasons, true;
      }
      case ast::ExprKind::Mul: {
        std::string left, right;
        if (sparse_along(*expr.lhs, var, left)) return why = left, true;
        if (sparse_along(*expr.rhs, var, right)) return why = right, true;
        why = !left.empty() ? left : right;
        return false;
      }
      case ast::ExprKind::Add:
      case ast::ExprKind::Sub: {
        std::string left, right;
        const bool l = sparse_along(*expr.lhs, var, left), r = sparse_along(*expr.rhs, var, right);
        if (l && r) return why = joined(left, right), true;
        why = !l ? (left.empty() ? "a term of the sum holds every " + var : left) : (right.empty() ? "a term of the sum holds every " + var : right);
        return false;
      }
    }
    return false;
  }

 private:
  bool access_sparse_along(const ast::Access& access, const std::string& var, std::string& why) const {
    if (spec_.find_tensor(access.tensor) && spec_.find_tensor(access.tensor)->is_output) return false;
    const Format& format = config_.format_of(access.tensor);
    for (size_t m = 0; m < access.indices.size(); ++m) {
      if (access.indices[m] != var) continue;
      const int level = level_of_mode(format, static_cast<int>(m));
      if (level < 0 || format.lists_every_coordinate(static_cast<size_t>(level))) continue;
      // A summed variable above the level unions its fibres: over every coordinate, unless some
      // other operand stores that variable sparsely (selects a few of them).
      for (int above = 0; above < level; ++above) {
        const std::string& outer = access.indices[static_cast<size_t>(format.mode_order[static_cast<size_t>(above)])];
        if (spec_.is_output_var(outer) || selected_elsewhere(outer, access.tensor)) continue;
        why = "the sum over " + outer + " unions " + access.tensor + "'s fibres of every " + outer + ", which fills nearly every " + var;
        return false;
      }
      why = "stored sparsely by " + access.tensor;
      return true;
    }
    return false;
  }

  // Another operand than `tensor` stores `var` in a level that is not dense.
  bool selected_elsewhere(const std::string& var, const std::string& tensor) const {
    for (const ast::Access* a : ast::collect_accesses(*spec_.rhs)) {
      if (a->tensor == tensor) continue;
      const Format& format = config_.format_of(a->tensor);
      for (size_t m = 0; m < a->indices.size(); ++m) {
        const int level = level_of_mode(format, static_cast<int>(m));
        if (a->indices[m] == var && level >= 0 && !format.lists_every_coordinate(static_cast<size_t>(level))) return true;
      }
    }
    return false;
  }

  const ast::Spec& spec_;
  const Config& config_;
};

}  // namespace

OutputFill expected_fill(const ast::Spec& spec, const Config& config) {
  OutputFill fill;
  const FillAnalysis analysis(spec, config);
  for (const std::string& var : spec.output.indices) {
    std::string why;
    fill.sparse[var] = analysis.sparse_along(*spec.rhs, var, why);
    fill.reason[var] = why.empty() ? "no operand stores it sparsely" : why;
  }
  return fill;
}

std::string describe_fill(const ast::Spec& spec, const OutputFill& fill) {
  std::string out;
  for (const std::string& var : spec.output.indices)
    out += (out.empty() ? "" : "; ") + var + " " + (fill.sparse.at(var) ? "sparse" : "dense") + ": " + fill.reason.at(var);
  return out;
}

}  // namespace spgen
