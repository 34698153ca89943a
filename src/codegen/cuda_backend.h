// Backend: stage II IR → NAME.cu and its header. The output's zero fill and the loop nest become
// __global__ kernels, launched in that order by an extern "C" host function that takes device
// pointers and a stream. Prints only: which loop runs on which GPU index, and how iterations
// combine, are annotations the schedule decided (passes/gpu_bindings.cpp).
#pragma once

#include "codegen/generation_context.h"
#include "ir/loop_ir.h"

namespace spgen {

// `assemble`: a sparse output's assemble phases (count, prefix sum), each an ABI function of its own.
GeneratedFile emit_cuda_header(const loops::LoweredFunc& func, const GenerationContext& context,
                               const std::vector<loops::LoweredFunc>& assemble = {});
// `parts`: a decomposition's parts, each a static host function that `func` (the executor) calls.
GeneratedFile emit_cuda_source(const loops::LoweredFunc& func, const GenerationContext& context,
                               const std::vector<loops::LoweredFunc>& assemble = {},
                               const std::vector<loops::LoweredFunc>& parts = {});

}  // namespace spgen
