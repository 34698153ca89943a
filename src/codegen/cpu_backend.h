// Backend: stage II IR → NAME.cpp (C++ with OpenMP). Prints only; decides nothing.
#pragma once

#include "codegen/generation_context.h"
#include "ir/loop_ir.h"

namespace spgen {

// `assemble`, when the output is a sparse one the kernels build, is printed first; `parts`, the
// kernels a decomposition's executor `func` calls, are printed before it as static functions.
GeneratedFile emit_cpu_source(const loops::LoweredFunc& func, const GenerationContext& context,
                              const std::vector<loops::LoweredFunc>& assemble = {},
                              const std::vector<loops::LoweredFunc>& parts = {});

}  // namespace spgen
