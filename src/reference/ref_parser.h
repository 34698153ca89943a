// The reference evaluator's own lexer and parser of one assignment (reference.h states the
// language). Shares nothing with src/ on purpose.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace spgen_ref {

// The functions of the language: exp, log, sqrt, abs of one argument; max, min of two.
enum class Func { Exp, Log, Sqrt, Abs, Max, Min };

struct Expr {
    enum class Kind { Literal, Access, Negate, Add, Subtract, Multiply, Divide, Call };
    Kind kind = Kind::Literal;
    double literal = 0;                // Literal
    std::string tensor;                // Access
    std::vector<std::string> indices;  // Access
    Func func = Func::Exp;             // Call
    int slot = -1;                     // Access: its position in the evaluation's access table; Call: in its call table
    std::unique_ptr<Expr> left, right; // Negate uses left only; Call: its arguments (right only for max and min)
};

// The function named `name`, if it is one; its number of arguments.
bool function_named(const std::string& name, Func& func);
int function_arity(Func func);
const char* function_name(Func func);

// An explicit reduction, the whole right-hand side: `sum(j: e)`, `max(j, k: e)`, `min(j: e)`.
enum class Reduction { None, Sum, Max, Min };

struct Spec {
    std::string output;
    std::vector<std::string> output_indices;
    bool accumulate = false;  // +=
    Reduction reduction = Reduction::None;
    std::vector<std::string> reduced_vars;  // the reduction's variables, as listed
    std::unique_ptr<Expr> rhs;              // with a reduction, its expression
};

// Parses `spec_text`; throws std::runtime_error "spec:line:column: ..." where it is malformed,
// including a reduction that is not the whole right-hand side or whose variables do not fit
// (reference.h states the rules).
Spec parse_spec(const std::string& spec_text);

}  // namespace spgen_ref
