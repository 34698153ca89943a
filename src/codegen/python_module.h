// NAME.py (`spgen gen --python`): a Python module that compiles NAME.cpp into NAME.so on first
// use and exposes the kernel as a function over numpy arrays and scipy.sparse matrices. The code
// is fixed text (templates/python_module.py.in); this file prints the kernel's table (tensors,
// parameters, routines) and the entry function's signature.
#pragma once

#include <vector>

#include "codegen/generation_context.h"
#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"
#include "passes/decompose_operand.h"

namespace spgen {

// Throws CompileError for a kernel the module cannot call: the cuda target, a sparse output the
// kernel neither assembles nor shares with an input, a `+=` into an assembled output, or a name
// that is a Python keyword or hides one of the module's own.
GeneratedFile emit_python_module(const loops::LoweredFunc& func, const sparse::Program& program, Target target,
                                 const std::vector<loops::LoweredFunc>& assemble, const Decomposition* decomposition,
                                 const GenerationContext& context);

}  // namespace spgen
