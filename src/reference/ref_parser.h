// The reference evaluator's own lexer and parser of one assignment (reference.h states the
// language). Shares nothing with src/ on purpose.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace spgen_ref {

struct Expr {
    enum class Kind { Literal, Access, Negate, Add, Subtract, Multiply, Divide };
    Kind kind = Kind::Literal;
    double literal = 0;                // Literal
    std::string tensor;                // Access
    std::vector<std::string> indices;  // Access
    int slot = -1;                     // Access: its position in the evaluation's access table
    std::unique_ptr<Expr> left, right; // Negate uses left only
};

struct Spec {
    std::string output;
    std::vector<std::string> output_indices;
    bool accumulate = false;  // +=
    std::unique_ptr<Expr> rhs;
};

// Parses `spec_text`; throws std::runtime_error "spec:line:column: ..." where it is malformed.
Spec parse_spec(const std::string& spec_text);

}  // namespace spgen_ref
