// The `spgen run` driver's main(): the kernel's tensor table and the call that binds the
// runtime's packed arrays to the kernel's parameters. The generic I/O is in the template
// spgen_run_runtime.hpp.
#pragma once

#include <optional>
#include <string>

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

// The kernel as the driver builds it, its conversion routines' algorithm linked instead of
// compiled with it (templates/run_pack_algorithm.hpp.in says why): `kernel` is the kernel's
// source with spgen_run_pack.hpp in place of its copy of the algorithm, and `header` and
// `source` are that header and the algorithm, for the kernel's index and value types (the same
// text for every kernel of those types). Nothing when the kernel has no conversion routines.
struct LinkedPackAlgorithm {
  GeneratedFile kernel;
  GeneratedFile header;
  GeneratedFile source;
};
std::optional<LinkedPackAlgorithm> link_pack_algorithm(const GeneratedFile& kernel_source, const std::string& kernel_name,
                                                       const sparse::Program& program);

}  // namespace spgen
