// The `spgen run` driver's main(): the kernel's tensor table and the call that binds the
// runtime's packed arrays to the kernel's parameters. The generic I/O is in the template
// spgen_run_runtime.hpp.
#pragma once

#include "codegen/generation_context.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"
#include "passes/decompose_operand.h"

namespace spgen {

// On the cuda target, the driver (run_driver.cu) copies the packed arrays to the GPU and times
// the kernel with CUDA events.
// With a `decomposition`, `func` is its executor and the driver runs the inspector first.
GeneratedFile emit_run_driver(const loops::LoweredFunc& func, const sparse::Program& program, Target target,
                              const std::vector<loops::LoweredFunc>& assemble = {},
                              const Decomposition* decomposition = nullptr);

}  // namespace spgen
