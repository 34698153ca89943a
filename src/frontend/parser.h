// Pass 1: parse. Index-notation text → ast::Spec, with every error as
// `file:line:col: error: ...` and a caret (CompileError).
#pragma once

#include <string>

#include "frontend/ast.h"

namespace spgen {

ast::Spec parse_spec(const std::string& file, const std::string& text);

}  // namespace spgen
