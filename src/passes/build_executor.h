// Stage II of a decomposition: the executor, a kernel that calls the parts' kernels in turn
// (passes/decompose_operand.h). Its parameters are the parts' parameters, each once: the sizes
// and the other operands they share, and every part's arrays in part order where the
// decomposed tensor's arrays would be.
#pragma once

#include <string>
#include <vector>

#include "ir/loop_ir.h"
#include "passes/decompose_operand.h"

namespace spgen {

loops::LoweredFunc build_executor(const std::string& name, const Decomposition& decomposition,
                                  const std::vector<loops::LoweredFunc>& parts);

}  // namespace spgen
