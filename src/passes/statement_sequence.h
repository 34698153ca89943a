// A spec of several statements as one kernel: each statement is lowered as a kernel of its own
// (lower_statements.cpp); these build what joins them. The kernel's stage I program lists the
// tensors of its ABI (every tensor but the temporaries), and its executor allocates the
// temporaries and calls the statements' kernels in order.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/program.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

struct StatementKernels {
  const ProgramTensors& tensors;
  std::set<std::string> temporaries;
  // A tensor a statement writes with the structure of another (SDDMM's output, or "structure"):
  // the input whose pos and crd arrays it has, followed through temporaries.
  std::map<std::string, std::string> structure_root;
  std::vector<sparse::Program> programs;  // each statement's stage I
  std::vector<std::string> texts;         // each statement, as written
  // The kernels the executor calls in turn, each after its comment: a statement's (its entry
  // point), or that of statements fused into one loop (passes/fuse_statements.h).
  std::vector<loops::LoweredFunc> funcs;
  std::vector<std::string> comments;
  // A statement `auto` factored (passes/factor_product.h): the ABI keeps its order of index
  // variables and tensors, as if it were one nest.
  const ast::Spec* abi_order = nullptr;
};

// The program whose buffers are the kernel's ABI: the outputs in the order the statements write
// them, then the inputs in order of first use, each stored as its statements store it, sizes by
// class of index variables (ProgramTensors::index_class).
sparse::Program statement_sequence_program(const std::string& name, const StatementKernels& kernels);

// The executor: parameters as `whole` gives them (lowering::kernel_params), the temporaries'
// values as workspaces (a sparse temporary reads its structure root's pos and crd), and a call
// of each kernel in turn.
loops::LoweredFunc build_statement_executor(const std::string& name, const sparse::Program& whole, const StatementKernels& kernels);

}  // namespace spgen
