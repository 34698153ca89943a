#include "frontend/ast.h"

#include <algorithm>
#include <set>

namespace spgen::ast {

const TensorUse* Spec::find_tensor(const std::string& name) const {
  for (const TensorUse& use : tensors)
    if (use.name == name) return &use;
  return nullptr;
}

bool Spec::is_output_var(const std::string& var) const {
  return std::find(output.indices.begin(), output.indices.end(), var) != output.indices.end();
}

static void collect(const Expr& expr, std::vector<const Access*>& out) {
  if (expr.kind == ExprKind::Access) out.push_back(&expr.access);
  if (expr.lhs) collect(*expr.lhs, out);
  if (expr.rhs) collect(*expr.rhs, out);
}

ExprPtr make_operator(ExprKind kind, SourceLoc loc, ExprPtr lhs, ExprPtr rhs) {
  auto node = std::make_shared<Expr>();
  node->kind = kind;
  node->loc = loc;
  node->lhs = std::move(lhs);
  node->rhs = std::move(rhs);
  return node;
}

ExprPtr make_call(Function function, SourceLoc loc, ExprPtr first, ExprPtr second) {
  auto node = std::make_shared<Expr>();
  node->kind = ExprKind::Call;
  node->loc = loc;
  node->function = function;
  node->lhs = std::move(first);
  node->rhs = std::move(second);
  return node;
}

const char* function_name(Function function) {
  switch (function) {
    case Function::Exp: return "exp";
    case Function::Log: return "log";
    case Function::Sqrt: return "sqrt";
    case Function::Abs: return "abs";
    case Function::Max: return "max";
    case Function::Min: return "min";
  }
  return "?";
}

bool function_named(const std::string& name, Function& out) {
  for (Function f : {Function::Exp, Function::Log, Function::Sqrt, Function::Abs, Function::Max, Function::Min})
    if (name == function_name(f)) {
      out = f;
      return true;
    }
  return false;
}

const char* reduction_name(Reduction reduction) {
  return reduction == Reduction::Max ? "max" : reduction == Reduction::Min ? "min" : "sum";
}

int function_arity(Function function) { return function == Function::Max || function == Function::Min ? 2 : 1; }

bool is_constant(const Expr& expr) { return collect_accesses(expr).empty(); }

std::vector<const Expr*> visited_arguments(const Expr& call) {
  std::vector<const Expr*> visited;
  for (const ExprPtr& argument : {call.lhs, call.rhs})
    if (argument && !is_constant(*argument)) visited.push_back(argument.get());
  if (visited.empty()) visited.push_back(call.lhs.get());
  return visited;
}

ExprPtr make_access(const Access& access) {
  auto node = std::make_shared<Expr>();
  node->kind = ExprKind::Access;
  node->loc = access.loc;
  node->access = access;
  return node;
}

std::vector<const Access*> collect_accesses(const Expr& expr) {
  std::vector<const Access*> out;
  collect(expr, out);
  return out;
}

int linear_degree(const Expr& e, const std::string& tensor) {
  switch (e.kind) {
    case ExprKind::Access: return e.access.tensor == tensor ? 1 : 0;
    case ExprKind::Literal: return 0;
    case ExprKind::Neg: return linear_degree(*e.lhs, tensor);
    case ExprKind::Add:
    case ExprKind::Sub: {
      const int a = linear_degree(*e.lhs, tensor), b = linear_degree(*e.rhs, tensor);
      return a == b ? a : -1;
    }
    case ExprKind::Mul: {
      const int a = linear_degree(*e.lhs, tensor), b = linear_degree(*e.rhs, tensor);
      return a < 0 || b < 0 || a + b > 1 ? -1 : a + b;
    }
    case ExprKind::Div: return linear_degree(*e.rhs, tensor) == 0 ? linear_degree(*e.lhs, tensor) : -1;
    case ExprKind::Call:
      return linear_degree(*e.lhs, tensor) == 0 && (!e.rhs || linear_degree(*e.rhs, tensor) == 0) ? 0 : -1;
  }
  return -1;
}

static void collect_terms(const ExprPtr& expr, bool negated, std::vector<SignedTerm>& out) {
  switch (expr->kind) {
    case ExprKind::Add:
      collect_terms(expr->lhs, negated, out);
      collect_terms(expr->rhs, negated, out);
      return;
    case ExprKind::Sub:
      collect_terms(expr->lhs, negated, out);
      collect_terms(expr->rhs, !negated, out);
      return;
    case ExprKind::Neg: collect_terms(expr->lhs, !negated, out); return;
    default: out.push_back({expr, negated});
  }
}

std::vector<SignedTerm> top_level_terms(const ExprPtr& expr) {
  std::vector<SignedTerm> out;
  collect_terms(expr, false, out);
  return out;
}

ExprPtr sum_of(const std::vector<SignedTerm>& terms) {
  ExprPtr sum;
  for (const SignedTerm& term : terms) {
    if (!sum) sum = term.negated ? make_operator(ExprKind::Neg, term.expr->loc, term.expr) : term.expr;
    else sum = make_operator(term.negated ? ExprKind::Sub : ExprKind::Add, term.expr->loc, sum, term.expr);
  }
  return sum;
}

// The index variables `expr` uses that `output_indices` lacks.
static std::set<std::string> summed_vars(const Expr& expr, const std::vector<std::string>& output_indices) {
  std::set<std::string> summed;
  for (const Access* access : collect_accesses(expr))
    for (const std::string& var : access->indices)
      if (std::find(output_indices.begin(), output_indices.end(), var) == output_indices.end()) summed.insert(var);
  return summed;
}

std::vector<std::string> summed_vars_of(const Spec& spec, const Expr& term) {
  const std::set<std::string> summed = summed_vars(term, spec.output.indices);
  std::vector<std::string> ordered;
  for (const std::string& var : spec.index_vars)
    if (summed.count(var)) ordered.push_back(var);
  return ordered;
}

std::vector<TermGroup> terms_by_summed_vars(const Spec& spec) {
  std::vector<TermGroup> groups;
  for (const SignedTerm& term : top_level_terms(spec.rhs)) {
    const std::vector<std::string> summed = summed_vars_of(spec, *term.expr);
    auto group = std::find_if(groups.begin(), groups.end(), [&](const TermGroup& g) { return g.summed == summed; });
    if (group == groups.end()) groups.push_back({summed, {term}});
    else group->terms.push_back(term);
  }
  return groups;
}

namespace {

constexpr size_t kMaxDistributedTerms = 32;

std::vector<SignedTerm> multiplied_out(const ExprPtr& expr, bool negated) {
  switch (expr->kind) {
    case ExprKind::Add:
    case ExprKind::Sub: {
      std::vector<SignedTerm> terms = multiplied_out(expr->lhs, negated);
      std::vector<SignedTerm> right = multiplied_out(expr->rhs, expr->kind == ExprKind::Sub ? !negated : negated);
      terms.insert(terms.end(), right.begin(), right.end());
      return terms;
    }
    case ExprKind::Neg: return multiplied_out(expr->lhs, !negated);
    case ExprKind::Mul: {
      std::vector<SignedTerm> terms;
      const std::vector<SignedTerm> left = multiplied_out(expr->lhs, negated), right = multiplied_out(expr->rhs, false);
      if (left.size() * right.size() > kMaxDistributedTerms) return {{expr, negated}};
      for (const SignedTerm& l : left)
        for (const SignedTerm& r : right)
          terms.push_back({make_operator(ExprKind::Mul, expr->loc, l.expr, r.expr), l.negated != r.negated});
      return terms;
    }
    case ExprKind::Div: {  // (the divisor stays whole: 1 / (b + c) is no sum of quotients)
      std::vector<SignedTerm> terms;
      for (const SignedTerm& l : multiplied_out(expr->lhs, negated))
        terms.push_back({make_operator(ExprKind::Div, expr->loc, l.expr, expr->rhs), l.negated});
      return terms;
    }
    default: return {{expr, negated}};
  }
}

}  // namespace

std::vector<SignedTerm> distributed_terms(const ExprPtr& expr, const std::vector<std::string>& output_indices) {
  std::vector<SignedTerm> out;
  for (const SignedTerm& term : top_level_terms(expr)) {
    std::vector<SignedTerm> parts = multiplied_out(term.expr, term.negated);
    const std::set<std::string> summed = summed_vars(*term.expr, output_indices);
    const bool alike = std::all_of(parts.begin(), parts.end(),
                                   [&](const SignedTerm& part) { return summed_vars(*part.expr, output_indices) == summed; });
    if (!alike || out.size() + parts.size() > kMaxDistributedTerms) parts = {term};
    out.insert(out.end(), parts.begin(), parts.end());
  }
  return out;
}

std::string to_string(const Access& access) {
  std::string out = access.tensor;
  if (!access.indices.empty()) {
    out += "(";
    for (size_t i = 0; i < access.indices.size(); ++i) out += (i ? "," : "") + access.indices[i];
    out += ")";
  }
  return access.pattern ? "pattern(" + out + ")" : out;
}

static int precedence(ExprKind kind) {
  switch (kind) {
    case ExprKind::Add:
    case ExprKind::Sub: return 1;
    case ExprKind::Mul:
    case ExprKind::Div: return 2;
    case ExprKind::Neg: return 3;
    default: return 4;
  }
}

static std::string operand(const Expr& child, int parent_precedence, bool right_side) {
  std::string text = to_string(child);
  int child_precedence = precedence(child.kind);
  bool needs_parens = child_precedence < parent_precedence ||
                      (right_side && child_precedence == parent_precedence && child_precedence < 3);
  return needs_parens ? "(" + text + ")" : text;
}

std::string to_string(const Expr& expr) {
  switch (expr.kind) {
    case ExprKind::Access: return to_string(expr.access);
    case ExprKind::Call:
      return std::string(function_name(expr.function)) + "(" + to_string(*expr.lhs) + (expr.rhs ? ", " + to_string(*expr.rhs) : "") + ")";
    case ExprKind::Literal: return expr.literal;
    case ExprKind::Neg: return "-" + operand(*expr.lhs, 3, false);
    default: break;
  }
  const char* op = expr.kind == ExprKind::Add   ? " + "
                   : expr.kind == ExprKind::Sub ? " - "
                   : expr.kind == ExprKind::Mul ? " * "
                                                : " / ";
  int p = precedence(expr.kind);
  return operand(*expr.lhs, p, false) + op + operand(*expr.rhs, p, true);
}

std::string to_string(const Spec& spec) {
  std::string rhs = to_string(*spec.rhs);
  if (spec.explicit_reduction) {
    std::string vars;
    for (const std::string& var : spec.reduced_vars) vars += (vars.empty() ? "" : ", ") + var;
    rhs = std::string(reduction_name(spec.reduction)) + "(" + vars + ": " + rhs + ")";
  }
  return to_string(spec.output) + (spec.accumulate ? " += " : " = ") + rhs;
}

}  // namespace spgen::ast
