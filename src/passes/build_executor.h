// Stage II of a kernel made of parts: the executor, a kernel that calls the parts' kernels in turn.
//
// A decomposition's (passes/decompose_operand.h): its parameters are the parts' parameters, each once: the sizes
// and the other operands they share, and every part's arrays in part order where the
// decomposed tensor's arrays would be.
#pragma once

#include <string>
#include <vector>

#include "frontend/ast.h"
#include "ir/loop_ir.h"
#include "passes/decompose_operand.h"

namespace spgen {

loops::LoweredFunc build_executor(const std::string& name, const Decomposition& decomposition,
                                  const std::vector<loops::LoweredFunc>& parts);

// The executor of a sum split into parts (passes/split_sum.h), each part's tensors a subset of
// the spec's: its parameters are every part's, each once, in the order of the whole spec's
// kernel (sizes by index variable, then the tensors' arrays). `comments`: one per part.
loops::LoweredFunc build_executor(const std::string& name, const ast::Spec& spec, const std::vector<loops::LoweredFunc>& parts,
                                  const std::vector<std::string>& comments);

}  // namespace spgen
