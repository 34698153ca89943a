// The parsed spec: one index-notation assignment, e.g. `C(i,k) = A(i,j) * B(j,k)`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "support/diagnostics.h"

namespace spgen::ast {

struct Access {
  std::string tensor;
  std::vector<std::string> indices;
  // Only where the tensor is stored counts, not its value (1 there): the factor an output with a
  // "structure" puts on the right-hand side (passes/restrict_to_structure.h). Printed `pattern(S(i,j))`.
  bool pattern = false;
  SourceLoc loc;
  std::vector<SourceLoc> index_locs;
};

enum class ExprKind { Access, Literal, Neg, Add, Sub, Mul, Div, Call };

// The functions a spec may call: exp, log, sqrt, abs of one argument, max and min of two.
// A call is evaluated where its argument's tensors are stored (docs/spec.md): it never widens
// the iteration, and a constant argument of max/min adds no points (`max(x(i), 0)` is ReLU on
// x's entries).
enum class Function { Exp, Log, Sqrt, Abs, Max, Min };
const char* function_name(Function function);
// The function a name calls, if it is one of them.
bool function_named(const std::string& name, Function& out);
int function_arity(Function function);

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  ExprKind kind;
  SourceLoc loc;
  Access access;         // kind == Access
  double value = 0;      // kind == Literal
  std::string literal;   // kind == Literal: the spelling, printed back verbatim
  ExprPtr lhs, rhs;      // Neg uses lhs only; Call: its arguments (rhs for a second one)
  Function function = Function::Exp;  // kind == Call
};

// How the index variables the output lacks are reduced: summed (implicitly, or `sum(j: e)`), or
// the maximum or minimum over the entries visited (`max(j: e)`, `min(j, k: e)`, the whole
// right-hand side; −∞ or +∞ over none).
enum class Reduction { Sum, Max, Min };
const char* reduction_name(Reduction reduction);  // "sum", "max", "min"

struct TensorUse {
  std::string name;
  int order = 0;
  bool is_output = false;
  SourceLoc first_loc;
};

struct Spec {
  std::string file;  // as given on the command line, for diagnostics
  std::string text;
  Access output;
  bool accumulate = false;  // `+=`
  ExprPtr rhs;  // inside an explicit reduction, its expression
  Reduction reduction = Reduction::Sum;
  std::vector<std::string> reduced_vars;  // an explicit reduction's variables, as written (else empty)
  std::vector<SourceLoc> reduced_var_locs;
  bool explicit_reduction = false;
  // Set by read_previous_output: the input that holds a `+=` output's value before the kernel
  // (the output is then assembled anew, `=`); empty otherwise.
  std::string previous_output;
  // Derived by the parser, in order of first appearance (left-hand side first).
  std::vector<std::string> index_vars;
  std::vector<TensorUse> tensors;  // the output first

  const TensorUse* find_tensor(const std::string& name) const;
  bool is_output_var(const std::string& var) const;
};

// A spec of one or more statements, executed in order (docs/spec.md): a tensor one statement
// writes may be read by later ones.
struct Program {
  std::string file, text;
  std::vector<Spec> statements;
  // Temporaries the parser introduced: each holds a reduction written inside an expression, in a
  // statement of its own before the one that reads it.
  std::vector<std::string> lifted;
};

// Every access in the right-hand side, left to right.
std::vector<const Access*> collect_accesses(const Expr& expr);

// How `expr` depends on `tensor`'s values: 0 not at all, 1 linearly (every term a product with
// exactly one of them, or the dividend of a quotient of such), -1 otherwise. A sum linear in a
// tensor's entries is the sum of the same over any split of them (decompose's parts, a row cut
// between threads).
int linear_degree(const Expr& expr, const std::string& tensor);

// A new operator node (Neg uses lhs only), and a new access node, at `loc`.
ExprPtr make_operator(ExprKind kind, SourceLoc loc, ExprPtr lhs, ExprPtr rhs = nullptr);
ExprPtr make_call(Function function, SourceLoc loc, ExprPtr first, ExprPtr second = nullptr);
// Whether an expression reads no tensor (a constant: literals, operators and calls of them).
bool is_constant(const Expr& expr);
// The arguments of a call whose points it visits (docs/spec.md): those that read a tensor (a
// constant argument of max/min adds none), or the first where none does.
std::vector<const Expr*> visited_arguments(const Expr& call);
ExprPtr make_access(const Access& access);

// One term of a sum at the top of an expression: `a - (b + c)` has the terms a, -b and -c.
struct SignedTerm {
  ExprPtr expr;
  bool negated = false;
};
// The terms of `expr` at its top-level `+`, `-` and unary minus (parentheses do not hide them;
// a product or quotient of sums is one term), left to right.
std::vector<SignedTerm> top_level_terms(const ExprPtr& expr);
// The terms as one expression, each with its sign: `b(i) - c(i)`, `-(2 * b(i))`.
ExprPtr sum_of(const std::vector<SignedTerm>& terms);

// The top-level terms of the right-hand side grouped by the index variables they sum over (those
// they use that the output lacks, in spec order), in order of each group's first term: TACO
// scopes each sum to the terms that use its variables. One group when every term sums alike.
struct TermGroup {
  std::vector<std::string> summed;
  std::vector<SignedTerm> terms;
};
std::vector<TermGroup> terms_by_summed_vars(const Spec& spec);
// The index variables a term sums over: those it uses that the output lacks, in spec order.
std::vector<std::string> summed_vars_of(const Spec& spec, const Expr& term);

// The top-level terms with every product (and quotient's numerator) of sums multiplied out:
// `A(i,j) * (B(i,j) - D(i,j))` gives A*B and -(A*D). A term stays whole where a product of its
// would sum over other indices than the term does (`A(i,j) * (B(j,k) * x(k) + d(j))` into y(i):
// d(j) alone is not summed over k), or where it would give more than 32 terms. Where terms
// cannot share one loop nest, each of these can have its own (lower.cpp).
std::vector<SignedTerm> distributed_terms(const ExprPtr& expr, const std::vector<std::string>& output_indices);

// Index notation text of an expression, normalised spacing (`A(i,j) * B(j,k)`).
std::string to_string(const Expr& expr);
std::string to_string(const Access& access);
std::string to_string(const Spec& spec);  // the whole assignment

}  // namespace spgen::ast
