// Pass 2: spec + config → stage I IR (axes, buffers, one sparse iteration in spec order).
#pragma once

#include "frontend/ast.h"
#include "frontend/config.h"
#include "ir/sparse_ir.h"

namespace spgen {

// The input whose structure a sparse output reuses: one with the same format and indices that
// multiplies the whole right-hand side (the result is zero wherever it stores nothing), as X
// does in SDDMM. Empty: none.
std::string find_shared_structure(const ast::Spec& spec, const Config& config);

sparse::Program build_sparse_ir(const ast::Spec& spec, const Config& config);

}  // namespace spgen
