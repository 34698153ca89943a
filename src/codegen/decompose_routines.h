// The inspector of a decomposition (passes/decompose_operand.h): NAME_decompose_T_sizes and
// NAME_decompose_T split the decomposed tensor, given in CSR, into the executor's part arrays.
// The algorithm is fixed text (templates/cpu_decompose_routines.cpp.in); this file prints the
// table of parts, the extern "C" wrappers and the header's documentation.
#pragma once

#include "codegen/generation_context.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"
#include "passes/decompose_operand.h"

namespace spgen {

// `program` is the kernel with the declared formats (the tensor as CSR); `executor` the kernel
// the user calls, whose parameters list the part arrays.
PackRoutines emit_decompose_routines(const Decomposition& decomposition, const sparse::Program& program,
                                     const loops::LoweredFunc& executor);

}  // namespace spgen
