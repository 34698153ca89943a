// The kernel's parameters, its ABI: a size per index, then each tensor's pos, crd and values
// arrays in buffer order, each with the prose that documents what it holds and its length.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen::lowering {

// What the parameters depend on besides the program: whether the kernel builds the output's
// structure (`assembled`) and is its assemble phase counting one level (`counting`,
// `counted_level`), whether it lists the output's entries, and which COO levels it visits by
// runs (their singletons' order promise).
struct AbiInputs {
  const sparse::Program& program;
  bool assembled = false;
  bool counting = false;
  int counted_level = -1;
  bool listed = false;
  const std::set<int>& by_runs;
};

std::vector<loops::Param> kernel_params(const AbiInputs& inputs);

// The parameter that holds the size of index `var`.
inline std::string dim_name(const std::string& var) { return "dim_" + var; }

}  // namespace spgen::lowering
