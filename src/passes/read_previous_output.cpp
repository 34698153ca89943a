#include "passes/read_previous_output.h"

#include <memory>

#include "passes/build_sparse_ir.h"
#include "support/diagnostics.h"

namespace spgen {

void read_previous_output(ast::Spec& spec, Config& config) {
  const Format format = config.format_of(spec.output.tensor);
  if (!spec.accumulate || format.all_dense() || !find_shared_structure(spec, config).empty()) return;
  ast::Access partial_sum = spec.output;
  partial_sum.tensor = "T";
  // The previous value is a term without the summed indices, which would make the kernel a sum
  // of parts (passes/split_sum.h) each writing the output: refused, as split_sum refuses it.
  for (const std::string& var : spec.index_vars)
    if (!spec.is_output_var(var))
      throw CompileError(format_source_error(
          spec.file, spec.text, spec.output.loc,
          "`+=` into " + spec.output.tensor + ", a sparse output the kernel assembles (" + format.name +
              "), adds its previous value as a term of its own, which lacks the summed index " + var +
              ": a sum whose terms sum over different indices is a loop nest per part, and only one loop nest can build "
              "an assembled output; give " + spec.output.tensor + " the format \"dense\" (added into in place), or compute "
              "the sum into a new output with `=`, then add it into " + spec.output.tensor + " with a second kernel (`" +
              ast::to_string(spec.output) + " += " + ast::to_string(partial_sum) + "` with T stored as " + spec.output.tensor +
              " is)"));
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
