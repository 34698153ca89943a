// Pass 1: parse. Index-notation text → ast::Spec, with every error as
// `file:line:col: error: ...` and a caret (CompileError).
#pragma once

#include <string>

#include "frontend/ast.h"

namespace spgen {

// Every statement, each checked on its own (docs/spec.md); the rules between statements are
// check_program's (frontend/program.h).
ast::Program parse_program(const std::string& file, const std::string& text);
// A spec of exactly one statement.
ast::Spec parse_spec(const std::string& file, const std::string& text);

// Names that would clash with C/C++ keywords or spgen's generated identifiers; they cannot name
// tensors, index variables or kernels.
bool is_reserved_name(const std::string& name);

}  // namespace spgen
