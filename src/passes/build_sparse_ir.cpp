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
        format.mode_order == out_format.mode_order && format.blocks == out_format.blocks)
      return access.tensor;
  }
  return "";
}

// Outputs whose structure the kernel builds itself (count, prefix sum, fill, level by level):
// dense and compressed levels, whose entries can be appended in loop order, possibly ending in a
// COO segment (one compressed-nonunique level, then singletons: one position per entry) or in a
// ragged (dense-variable) level, whose rows are sized by their largest coordinate.
bool is_assemblable(const Format& format) {
  bool in_coo_segment = false;
  for (size_t l = 0; l < format.levels.size(); ++l) {
    LevelKind kind = format.levels[l];
    bool ragged_last = kind == LevelKind::DenseVariable && l + 1 == format.levels.size();
    if (kind == LevelKind::CompressedNonUnique && !in_coo_segment) in_coo_segment = true;
    else if (in_coo_segment ? kind != LevelKind::Singleton
                            : kind != LevelKind::Dense && kind != LevelKind::Compressed && !ragged_last)
      return false;
  }
  return !format.all_dense();
}

// The loops of a blocked index variable `i`: over blocks, and inside one (docs/config.md).
std::string block_loop_name(const std::string& var, BlockPart part) {
  return var + (part == BlockPart::Block ? "_blk" : "_in");
}

[[noreturn]] void fail_blocked(const Config& config, const std::string& tensor, const std::string& message) {
  throw CompileError(format_config_error(config.file, "/tensors/" + tensor + "/format", message));
}

// The index variables that blocked operands split into block and in-block loops (`i_blk`,
// `i_in`). The first operand to block a variable gives the loops; operands blocked alike share
// them. Every other operand reaches the variable at its coordinate (passes/lower_to_loops.cpp,
// "located inside the blocks"): dense levels by arithmetic, the others by lookup or search, and
// levels blocked apart (other blocks) at the coordinate / or % their block.
void plan_blocked_vars(const ast::Spec& spec, const Config& config, sparse::Program& program) {
  const sparse::SparseBuffer& result = program.output();
  if (result.format.is_blocked() && result.shares_structure_with.empty())
    fail_blocked(config, result.tensor,
                 "the kernels do not assemble blocks: a blocked output (" + result.tensor + ", " + result.format.name +
                     ") must share the structure of a blocked input (as SDDMM's Y shares X's); make " + result.tensor +
                     " dense, or give it that input's format and indices");
  for (const sparse::SparseBuffer& buffer : program.buffers) {
    // An output blocks nothing: it shares an input's structure, or is refused below.
    if (buffer.is_output || !buffer.format.is_blocked()) continue;
    for (size_t l = 0; l < buffer.format.levels.size(); ++l) {
      LevelBlock block = buffer.format.block(l);
      if (block.part != BlockPart::Block) continue;
      const std::string& var = buffer.indices[buffer.format.mode_order[l]];
      // Operands blocked alike share the block loops: their block levels merge like any
      // compressed levels, and the in-block levels are dense.
      if (const sparse::BlockedVar* other = program.blocked(var)) {
        if (other->size == block.size) continue;
        for (int id : buffer.axes)
          if (program.axes[id].mode_var == var) program.axes[id].index_var = var;  // now blocked_apart()
        continue;
      }
      sparse::BlockedVar blocked{var, block_loop_name(var, BlockPart::Block), block_loop_name(var, BlockPart::InBlock),
                                 block.size, buffer.tensor};
      for (const std::string& name : {blocked.outer, blocked.inner})
        if (std::find(spec.index_vars.begin(), spec.index_vars.end(), name) != spec.index_vars.end())
          fail_blocked(config, buffer.tensor, "the block loops of index " + var + " are named " + blocked.outer +
                                                  " and " + blocked.inner + ", but the spec already uses " + name +
                                                  " as an index variable; rename it");
      program.blocked_vars.push_back(blocked);
    }
  }
  if (program.blocked_vars.empty()) return;
  const sparse::SparseBuffer& output = program.output();
  if (!output.format.all_dense() && output.shares_structure_with.empty())
    fail_blocked(config, output.tensor,
                 "sparse output " + output.tensor + " (" + output.format.name + ") beside a blocked operand (" +
                     program.blocked_vars.front().tensor +
                     ") is not supported: make the output dense, or give it the blocked operand's format and "
                     "indices so that it shares its structure (as SDDMM's Y does)");
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
                "(csr, dcsr, csf, sv, ...), possibly ending in one compressed-nonunique level and singletons (coo) or in a "
                "dense-variable level (ragged), or it shares the structure of an input with the same format and indices "
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
        axis.mode_var = axis.index_var;
        axis.parent = level == 0 ? -1 : static_cast<int>(program.axes.size()) - 1;
        axis.length = "dim_" + axis.index_var;
        LevelBlock block = buffer.format.block(level);
        axis.block_part = block.part;
        axis.block = block.size;
        if (block.part != BlockPart::None) axis.index_var = block_loop_name(axis.mode_var, block.part);
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

  plan_blocked_vars(spec, config, program);

  program.iteration.name = config.name;
  program.iteration.output = spec.output;
  program.iteration.accumulate = spec.accumulate;
  program.iteration.body = spec.rhs;
  for (const std::string& var : spec.index_vars) {
    bool reduction = !spec.is_output_var(var);
    if (const sparse::BlockedVar* blocked = program.blocked(var)) {
      program.iteration.iterators.push_back({blocked->outer, reduction});
      program.iteration.iterators.push_back({blocked->inner, reduction});
    } else {
      program.iteration.iterators.push_back({var, reduction});
    }
  }
  return program;
}

}  // namespace spgen
