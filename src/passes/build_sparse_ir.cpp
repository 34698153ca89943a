#include "passes/build_sparse_ir.h"

#include <algorithm>
#include <set>

#include "passes/lower/iteration_space.h"

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
                                     " earlier; one tensor must be accessed with the same indices throughout a statement (a "
                                     "product such as A(i,j) * A(j,k) * x(k) runs as statements, each contracting a pair into a "
                                     "temporary: write them, or let `auto` do it, \"factor\": true)");
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

// Outputs whose structure the kernel builds itself (count, prefix sum, fill, level by level;
// Driver::is_assembled_shape in templates/spgen_run_runtime.hpp is its twin):
// dense, compressed, ragged (dense-variable) and ELL (sparse-fixed) levels, whose entries can be
// appended in loop order (a ragged row is sized by its largest coordinate that holds entries, and
// located, not appended; an ELL level's rows are counted so that the caller can check the width
// before the fill; above the last level, its entries are listed and sorted first), possibly
// with one COO segment (one compressed-nonunique level, then singletons: one position per entry,
// or per distinct coordinates of the segment where dense or compressed levels lie below it).
bool is_assemblable(const Format& format) {
  bool in_coo_segment = false, below_coo_segment = false;
  for (size_t l = 0; l < format.levels.size(); ++l) {
    LevelKind kind = format.levels[l];
    if (in_coo_segment && kind != LevelKind::Singleton) in_coo_segment = false, below_coo_segment = true;
    if (kind == LevelKind::CompressedNonUnique && !in_coo_segment && !below_coo_segment) in_coo_segment = true;
    else if (below_coo_segment ? kind != LevelKind::Dense && kind != LevelKind::Compressed
             : in_coo_segment  ? kind != LevelKind::Singleton
                               : kind != LevelKind::Dense && kind != LevelKind::Compressed &&
                                    kind != LevelKind::DenseVariable && kind != LevelKind::SparseFixed)
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

// Some term of the sum holds an operand that stores one of `vars` in a sparse level but no
// operand that blocks it as the block loops do (C bsr = A bsr + B csr: B's entries outside A's
// blocks), so those loops cannot give every block of the output.
bool has_term_outside_blocks(const ast::Spec& spec, const Config& config, const sparse::Program& program,
                             const std::set<std::string>& vars) {
  auto blocks = [&](const std::string& tensor, const std::string& var, bool sparse_only) {
    const sparse::SparseBuffer& buffer = program.buffer(tensor);
    const Format& format = config.format_of(tensor);
    for (size_t l = 0; l < format.levels.size(); ++l) {
      if (buffer.indices[format.mode_order[l]] != var) continue;
      LevelBlock block = format.block(l);
      if (sparse_only ? format.levels[l] != LevelKind::Dense
                      : block.part == BlockPart::Block && block.size == program.blocked(var)->size)
        return true;
    }
    return false;
  };
  for (const std::set<std::string>& term : lowering::tensor_terms(*spec.rhs))
    for (const std::string& var : vars) {
      bool blocked = std::any_of(term.begin(), term.end(), [&](const std::string& t) { return blocks(t, var, false); });
      bool sparse = std::any_of(term.begin(), term.end(), [&](const std::string& t) { return blocks(t, var, true); });
      if (sparse && !blocked) return true;
    }
  return false;
}

// An output whose entries are listed and packed into its blocks (sparse::SparseBuffer::
// listed_blocks): its blocked levels bind the spec's variables, reached at their coordinate / and
// % their block, as levels blocked apart from the loops are.
void list_blocked_output(sparse::Program& program, sparse::SparseBuffer& output) {
  output.listed_blocks = true;
  for (int id : output.axes)
    if (program.axes[id].block_part != BlockPart::None) program.axes[id].index_var = program.axes[id].mode_var;
}

// An assembled output blocked on indices that no operand blocks (C bsr = A csr + B csr) drives
// its blocks itself: the blocks of one parent position of its last sparse (compressed) level
// are gathered whole in a workspace keyed by that level's coordinate (passes/lower_to_loops.cpp,
// "a block-row workspace"). An index blocked above that level is split into loops (`i_blk` over
// block rows, `i_in` inside one, as an operand's blocks would split it); the index of that level
// stays one loop, its levels reached at its coordinate / and % the block (blocked apart).
//
// Operands that block some of its indices alike give those loops, and the workspace still
// gathers the blocks where the operands' block loops cannot append them in order: where they
// block only some of the output's blocked indices, or where a term without them (C bsr = A bsr +
// B csr) puts entries outside their blocks (lower_to_loops.cpp: the rest of that term joins
// each block row's workspace).
void plan_output_blocks(const ast::Spec& spec, const Config& config, sparse::Program& program, bool list_output) {
  sparse::SparseBuffer& output = program.buffers.front();
  if (output.format.all_dense() || !output.shares_structure_with.empty() || !output.format.is_blocked()) return;
  if (list_output) return list_blocked_output(program, output);
  // Blocked otherwise than the operands' block loops split an index (C blocked on i only, or by
  // 2x1, beside A bsr 2x2): those loops give its entries a block of A's at a time, which neither
  // its own blocks' order nor a workspace keyed by them follows, so they are listed.
  for (size_t l = 0; l < output.format.levels.size(); ++l) {
    const sparse::BlockedVar* blocked = program.blocked(output.indices[output.format.mode_order[l]]);
    LevelBlock block = output.format.block(l);
    if (blocked && (block.part == BlockPart::None || block.size != blocked->size ||
                    (block.part == BlockPart::InBlock && output.format.levels[l] != LevelKind::Dense)))
      return list_blocked_output(program, output);
  }
  std::set<std::string> by_operands, by_none;  // the output's blocked indices, by whether an operand blocks them
  for (size_t l = 0; l < output.format.levels.size(); ++l) {
    const std::string& var = output.indices[output.format.mode_order[l]];
    if (output.format.block(l).part == BlockPart::None) continue;
    (program.blocked(var) ? by_operands : by_none).insert(var);
  }
  if (by_none.empty() && !has_term_outside_blocks(spec, config, program, by_operands))
    return;  // the operands' block loops drive and append its blocks, blocked alike
  int gathered = -1;
  for (size_t l = 0; l < output.format.levels.size(); ++l)
    if (output.format.levels[l] != LevelKind::Dense) gathered = static_cast<int>(l);
  // Beside an operand that blocks some of its indices, block rows stored in another kind of
  // level than a workspace of whole blocks serves (ragged, ELL) are listed instead.
  bool rows_in_other_levels = gathered < 0 || output.format.levels[gathered] != LevelKind::Compressed;
  for (int l = 0; l < gathered; ++l)
    rows_in_other_levels |= output.format.levels[l] != LevelKind::Dense && output.format.levels[l] != LevelKind::Compressed;
  if (rows_in_other_levels && !by_operands.empty()) return list_blocked_output(program, output);
  if (gathered < 0 || output.format.levels[gathered] != LevelKind::Compressed)
    fail_blocked(config, output.tensor,
                 "sparse output " + output.tensor + " (" + output.format.name +
                     ") is blocked where no operand is, so its blocks are gathered in a workspace keyed by its last "
                     "sparse level, which must then be compressed");
  output.gathered_level = gathered;
  const std::string& gathered_var = output.indices[output.format.mode_order[gathered]];
  for (size_t l = 0; l < output.format.levels.size(); ++l) {
    LevelBlock block = output.format.block(l);
    const std::string& var = output.indices[output.format.mode_order[l]];
    if (block.part != BlockPart::Block || var == gathered_var || by_operands.count(var)) continue;
    sparse::BlockedVar blocked{var, block_loop_name(var, BlockPart::Block), block_loop_name(var, BlockPart::InBlock),
                               block.size, output.tensor};
    for (const std::string& name : {blocked.outer, blocked.inner})
      if (std::find(spec.index_vars.begin(), spec.index_vars.end(), name) != spec.index_vars.end())
        fail_blocked(config, output.tensor, "the block loops of index " + var + " are named " + blocked.outer + " and " +
                                                blocked.inner + ", but the spec already uses " + name +
                                                " as an index variable; rename it");
    program.blocked_vars.push_back(blocked);
  }
  if (by_operands.count(gathered_var)) return;  // keyed by the operands' block loop (j_blk)
  for (int id : output.axes)
    if (program.axes[id].mode_var == gathered_var) program.axes[id].index_var = gathered_var;  // now blocked_apart()
}

// The index variables that blocked operands split into block and in-block loops (`i_blk`,
// `i_in`). The first operand to block a variable gives the loops (the input whose structure the
// output shares comes first); operands blocked alike share
// them. Every other operand reaches the variable at its coordinate (passes/lower_to_loops.cpp,
// "located inside the blocks"): dense levels by arithmetic, the others by lookup or search, and
// levels blocked apart (other blocks) at the coordinate / or % their block.
void plan_blocked_vars(const ast::Spec& spec, const Config& config, sparse::Program& program, bool list_output) {
  // An output in the structure of an unblocked input X (C = X .* (A + B), A bsr) has exactly
  // X's entries, so X's loops must visit them all: where X stores an index that an operand
  // blocks in a non-dense level (inside the blocks X would only be located, and its entries
  // outside them would go unwritten), no operand gives block loops; each blocked operand is
  // reached at X's coordinates, / and % its blocks, as an operand blocked otherwise is.
  //
  // An output in the structure of a blocked input X (C bsr 4x4 = X bsr 4x4 .* A bsr 2x2, or X in
  // blocks of rows beside A bsr) has exactly X's entries likewise: X gives the block loops of the
  // indices it blocks (it is planned first), and on every index X stores without blocking it, the
  // other operands' blocks are reached apart, so that no level of X is ever located inside
  // another operand's blocks.
  bool blocks_apart = false;
  std::set<std::string> apart_vars;  // indices on which every operand's blocks are reached apart
  const sparse::SparseBuffer* shared_blocked = nullptr;
  const sparse::SparseBuffer& output = program.buffers.front();
  if (!output.shares_structure_with.empty()) {
    const sparse::SparseBuffer& shared = program.buffer(output.shares_structure_with);
    for (size_t l = 0; l < shared.format.levels.size() && !shared.format.is_blocked(); ++l) {
      if (shared.format.levels[l] == LevelKind::Dense) continue;
      const std::string& var = shared.indices[shared.format.mode_order[l]];
      for (const sparse::Axis& axis : program.axes)
        blocks_apart |= axis.block_part == BlockPart::Block && axis.mode_var == var && axis.tensor != output.tensor;
    }
    if (shared.format.is_blocked()) {
      shared_blocked = &shared;
      std::set<std::string> blocked_by_shared;
      for (size_t l = 0; l < shared.format.levels.size(); ++l)
        if (shared.format.block(l).part == BlockPart::Block) blocked_by_shared.insert(shared.indices[shared.format.mode_order[l]]);
      for (const std::string& var : shared.indices)
        if (!blocked_by_shared.count(var)) apart_vars.insert(var);
    }
  }
  std::vector<const sparse::SparseBuffer*> planned;
  if (shared_blocked) planned.push_back(shared_blocked);
  for (const sparse::SparseBuffer& buffer : program.buffers)
    if (&buffer != shared_blocked && !buffer.ordered_apart) planned.push_back(&buffer);
  for (const sparse::SparseBuffer& buffer : program.buffers)  // (C_prev in its own nest: the others' loops)
    if (&buffer != shared_blocked && buffer.ordered_apart) planned.push_back(&buffer);
  for (const sparse::SparseBuffer* planned_buffer : planned) {
    const sparse::SparseBuffer& buffer = *planned_buffer;
    // An output blocks nothing here: it shares an input's structure, follows the operands' block
    // loops, gathers its own blocks, or is listed (plan_output_blocks).
    if (buffer.is_output || !buffer.format.is_blocked()) continue;
    for (size_t l = 0; l < buffer.format.levels.size(); ++l) {
      LevelBlock block = buffer.format.block(l);
      if (block.part != BlockPart::Block) continue;
      const std::string& var = buffer.indices[buffer.format.mode_order[l]];
      if (blocks_apart || apart_vars.count(var)) {
        for (int id : buffer.axes)
          if (program.axes[id].mode_var == var) program.axes[id].index_var = var;  // now blocked_apart()
        continue;
      }
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
  plan_output_blocks(spec, config, program, list_output);
}

}  // namespace

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

// A call is evaluated at the stored entries of its argument's tensors (docs/spec.md): padding would
// be evaluated too (exp(0) = 1 in an ELL slot past the row's end), so such an operand is refused.
void check_calls_on_padding(const ast::Spec& spec, const Config& config, const ast::Expr& expr) {
  if (expr.kind == ast::ExprKind::Call) {
    for (const ast::Access* access : ast::collect_accesses(expr)) {
      const Format& format = config.format_of(access->tensor);
      if (access->tensor == spec.output.tensor || !format.stores_padding()) continue;
      throw CompileError(format_config_error(
          config.file, "/tensors/" + access->tensor + "/format",
          "the function call " + ast::to_string(expr) + " reads " + access->tensor + ", whose format (" + format.name +
              ") stores padding (ELL slots, zeros in blocks or dense levels under a sparse one): the call would be "
              "evaluated at those zeros too (exp(0) = 1); store " + access->tensor + " as csr, coo, csc, dcsr or dense"));
    }
    return;
  }
  if (expr.lhs) check_calls_on_padding(spec, config, *expr.lhs);
  if (expr.rhs) check_calls_on_padding(spec, config, *expr.rhs);
}

sparse::Program build_sparse_ir(const ast::Spec& spec, const Config& config, bool list_output, bool previous_apart,
                                const std::set<std::string>& apart) {
  check_calls_on_padding(spec, config, *spec.rhs);
  sparse::Program program;
  program.kernel_name = config.name;
  program.spec_text = ast::to_string(spec);  // (an explicit reduction's text included)
  program.value_type = config.value_type;
  program.index_type = config.index_type;
  program.index_vars = spec.index_vars;

  for (const ast::Access* access : unique_accesses(spec)) {
    sparse::SparseBuffer buffer;
    buffer.tensor = access->tensor;
    buffer.indices = access->indices;
    buffer.format = config.format_of(access->tensor);
    buffer.is_output = access == &spec.output;
    buffer.previous_output = access->tensor == spec.previous_output;
    buffer.ordered_apart = (buffer.previous_output && previous_apart) || (!buffer.is_output && apart.count(buffer.tensor));
    buffer.values = access->tensor + "_vals";
    if (buffer.is_output && !buffer.format.all_dense()) {
      buffer.shares_structure_with = find_shared_structure(spec, config);
      if (buffer.shares_structure_with.empty() && !is_assemblable(buffer.format))
        throw CompileError(format_config_error(
            config.file, "/tensors/" + buffer.tensor + "/format",
            "sparse output " + buffer.tensor + " (" + buffer.format.name +
                ") cannot be assembled: an output is assembled when its levels are dense, compressed, dense-variable and "
                "sparse-fixed ones (csr, dcsr, csf, sv, ragged, ell, ...), possibly with one compressed-nonunique level "
                "and singletons (coo), and dense or compressed levels below them, or it shares the structure of an input with the same format and indices "
                "that multiplies the whole right-hand side (as X does in SDDMM)"));
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
        // An assembled ELL output's rows are counted into positions, as a CSR row's are: the
        // caller reads each row's length there to check the width.
        bool counted_ell = buffer.is_output && kind == LevelKind::SparseFixed && buffer.shares_structure_with.empty();
        const bool sliced = kind == LevelKind::SparseFixed && level == 1 && buffer.format.sliced;
        if (level_has_pos(kind) || counted_ell || sliced) axis.pos = buffer.tensor + "_pos" + std::to_string(level);
        if (level_has_crd(kind)) axis.crd = buffer.tensor + "_crd" + std::to_string(level);
        axis.width = buffer.format.width(level);
        if (kind == LevelKind::SparseFixed && level == 1) axis.interleave = buffer.format.interleave;
        axis.sliced = sliced;
        if (level == 0 && kind == LevelKind::Compressed) {
          axis.lists_every_coordinate = buffer.format.every_row_listed;
          axis.ordered = !buffer.format.rows_unordered();
        }
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

  plan_blocked_vars(spec, config, program, list_output);

  program.iteration.name = config.name;
  program.iteration.output = spec.output;
  program.iteration.accumulate = spec.accumulate;
  program.iteration.reduction = spec.reduction;
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
