// Stages 1-5 for a spec of several statements (docs/spec.md): see lower_statements.cpp.
#pragma once

#include <functional>

#include "frontend/program.h"
#include "lower.h"
#include "passes/factor_product.h"

namespace spgen {

// Each statement read, lowered and scheduled as a kernel of its own by `lower_kernel` (named
// NAME_s1, NAME_s2, ... in `c.parts`, in order), each reading the tensors earlier ones wrote as
// they stored them; then the kernel's ABI program and the executor that holds the temporaries
// and calls them (passes/statement_sequence.h). Fills `c` as lower_kernel fills it for one.
// `abi_order`: a statement `auto` factored into these (passes/factor_product.h), whose ABI the
// kernel keeps.
// `add_variants` gives a statement that runs alone (not fused) its kernels per size, from the
// statement as read.
using AddVariants = std::function<void(Compilation& statement, const Compilation& read)>;
void lower_statements(Compilation& c, const ast::Program& program, const ProgramTensors& tensors, const ProgramConfig& config,
                      const CompileInput& input, const std::function<void(Compilation&)>& lower_kernel,
                      const AddVariants& add_variants, const ast::Spec* abi_order = nullptr);

// A statement `auto` factored (passes/factor_product.h): its two statements lowered as a spec of
// several statements would be, behind the statement's own ABI; `c` holds the statement as read.
void lower_factored(Compilation& c, const Factoring& factored, const CompileInput& input,
                    const std::function<void(Compilation&)>& lower_kernel, const AddVariants& add_variants);

}  // namespace spgen
