#include "passes/build_sparse_ir.h"

#include <algorithm>

namespace spgen {
namespace {

[[noreturn]] void fail_at(const ast::Spec& spec, SourceLoc loc, const std::string& message) {
  throw CompileError(format_source_error(spec.file, spec.text, loc, message));
}

// The access through which each tensor is read. A tensor may appear several times only with
// the same indices: a buffer's axes bind one index variable each.
std::vector<const ast::Access*> unique_accesses(const ast::Spec& spec) {
  std::vector<const ast::Access*> accesses{&spec.output};
  for (const ast::Access* access : ast::collect_accesses(*spec.rhs)) {
    auto same_tensor = std::find_if(accesses.begin(), accesses.end(),
                                    [&](const ast::Access* a) { return a->tensor == access->tensor; });
    if (same_tensor == accesses.end()) {
      accesses.push_back(access);
    } else if ((*same_tensor)->indices != access->indices) {
      fail_at(spec, access->loc, "tensor " + access->tensor + " is accessed as " + ast::to_string(*access) +
                                     " here but as " + ast::to_string(**same_tensor) +
                                     " earlier; one tensor must be accessed with the same indices throughout");
    }
  }
  return accesses;
}

// The multiplicative factors of the whole right-hand side (`X * (A + B) * c` → X, A + B, c).
void top_level_factors(const ast::ExprPtr& expr, std::vector<const ast::Expr*>& out) {
  if (expr->kind == ast::ExprKind::Mul) {
    top_level_factors(expr->lhs, out);
    top_level_factors(expr->rhs, out);
  } else if (expr->kind == ast::ExprKind::Div) {
    top_level_factors(expr->lhs, out);  // the numerator's factors still multiply everything
  } else if (expr->kind == ast::ExprKind::Neg) {
    top_level_factors(expr->lhs, out);
  } else {
    out.push_back(expr.get());
  }
}

// A sparse output can reuse the structure of an input that has the same format and indices and
// multiplies the whole right-hand side: the result is zero wherever that input stores nothing.
std::string find_shared_structure(const ast::Spec& spec, const Config& config) {
  const Format& out_format = config.format_of(spec.output.tensor);
  std::vector<const ast::Expr*> factors;
  top_level_factors(spec.rhs, factors);
  for (const ast::Expr* factor : factors) {
    if (factor->kind != ast::ExprKind::Access) continue;
    const ast::Access& access = factor->access;
    const Format& format = config.format_of(access.tensor);
    if (access.indices == spec.output.indices && format.levels == out_format.levels &&
        format.mode_order == out_format.mode_order)
      return access.tensor;
  }
  return "";
}

// Outputs whose structure the kernel builds itself (count, prefix sum, fill, level by level):
// dense and compressed levels, whose entries can be appended in loop order.
bool is_assemblable(const Format& format) {
  for (LevelKind kind : format.levels)
    if (kind != LevelKind::Dense && kind != LevelKind::Compressed) return false;
  return !format.all_dense();
}

}  // namespace

sparse::Program build_sparse_ir(const ast::Spec& spec, const Config& config) {
  sparse::Program program;
  program.kernel_name = config.name;
  program.spec_text = ast::to_string(spec);
  program.value_type = config.value_type;
  program.index_type = config.index_type;
  program.index_vars = spec.index_vars;

  for (const ast::Access* access : unique_accesses(spec)) {
    sparse::SparseBuffer buffer;
    buffer.tensor = access->tensor;
    buffer.indices = access->indices;
    buffer.format = config.format_of(access->tensor);
    buffer.is_output = access == &spec.output;
    buffer.values = access->tensor + "_vals";
    if (buffer.is_output && !buffer.format.all_dense()) {
      buffer.shares_structure_with = find_shared_structure(spec, config);
      if (buffer.shares_structure_with.empty() && !is_assemblable(buffer.format))
        throw CompileError(format_config_error(
            config.file, "/tensors/" + buffer.tensor + "/format",
            "sparse output " + buffer.tensor + " (" + buffer.format.name +
                ") cannot be assembled: an output is assembled when its levels are dense and compressed ones "
                "(csr, dcsr, csf, sv, ...), or it shares the structure of an input with the same format and indices "
                "that multiplies the whole right-hand side (as X does in SDDMM)"));
      if (buffer.shares_structure_with.empty() && spec.accumulate)
        throw CompileError(format_config_error(config.file, "/tensors/" + buffer.tensor + "/format",
                                               "`+=` into an assembled sparse output is not supported; use `=`"));
    }
    if (buffer.shares_structure_with.empty()) {  // else its axes are filled in below
      for (size_t level = 0; level < buffer.format.levels.size(); ++level) {
        sparse::Axis axis;
        axis.name = buffer.tensor + "." + std::to_string(level);
        LevelKind kind = buffer.format.levels[level];
        axis.kind = sparse::axis_kind_of(kind);
        axis.tensor = buffer.tensor;
        axis.level = static_cast<int>(level);
        axis.mode = buffer.format.mode_order[level];
        axis.index_var = access->indices[axis.mode];
        axis.parent = level == 0 ? -1 : static_cast<int>(program.axes.size()) - 1;
        axis.length = "dim_" + axis.index_var;
        if (level_has_pos(kind)) axis.pos = buffer.tensor + "_pos" + std::to_string(level);
        if (level_has_crd(kind)) axis.crd = buffer.tensor + "_crd" + std::to_string(level);
        axis.width = buffer.format.width(level);
        axis.unique = kind != LevelKind::CompressedNonUnique;
        buffer.axes.push_back(static_cast<int>(program.axes.size()));
        program.axes.push_back(axis);
      }
    }
    program.buffers.push_back(buffer);
  }
  // The output is listed first but may share the axes of an input created after it.
  sparse::SparseBuffer& output = program.buffers.front();
  if (!output.shares_structure_with.empty()) output.axes = program.buffer(output.shares_structure_with).axes;

  program.iteration.name = config.name;
  program.iteration.output = spec.output;
  program.iteration.accumulate = spec.accumulate;
  program.iteration.body = spec.rhs;
  for (const std::string& var : spec.index_vars)
    program.iteration.iterators.push_back({var, !spec.is_output_var(var)});
  return program;
}

}  // namespace spgen
