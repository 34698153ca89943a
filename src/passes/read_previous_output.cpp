#include "passes/read_previous_output.h"

#include <memory>

#include "passes/build_sparse_ir.h"

namespace spgen {

void read_previous_output(ast::Spec& spec, Config& config) {
  const Format format = config.format_of(spec.output.tensor);
  if (!spec.accumulate || format.all_dense() || !find_shared_structure(spec, config).empty()) return;
  // With a summed right-hand side (SpGEMM `C(i,j) += A(i,k) * B(k,j)`), C_prev is a term without
  // the summed index: the sum's parts share one loop nest (passes/place_sum_parts.h).
  // `C_prev`, or with a number when the spec already names a tensor so.
  std::string name = spec.output.tensor + "_prev";
  for (int n = 2; spec.find_tensor(name); ++n) name = spec.output.tensor + "_prev" + std::to_string(n);

  ast::Access previous = spec.output;
  previous.tensor = name;
  spec.rhs = ast::make_operator(ast::ExprKind::Add, spec.rhs->loc, ast::make_access(previous), spec.rhs);
  spec.accumulate = false;
  spec.previous_output = name;
  // Listed right after the output, as the right-hand side now reads it first.
  ast::TensorUse use = spec.tensors.front();
  use.name = name;
  use.is_output = false;
  spec.tensors.insert(spec.tensors.begin() + 1, use);
  config.formats[name] = format;
}

}  // namespace spgen
