// Pass 2: spec + config → stage I IR (axes, buffers, one sparse iteration in spec order).
#pragma once

#include "frontend/ast.h"
#include "frontend/config.h"
#include "ir/sparse_ir.h"

namespace spgen {

sparse::Program build_sparse_ir(const ast::Spec& spec, const Config& config);

}  // namespace spgen
