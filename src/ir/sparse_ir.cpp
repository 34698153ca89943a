#include "ir/sparse_ir.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "support/text.h"

namespace spgen::sparse {

const char* axis_kind_name(AxisKind kind) {
  switch (kind) {
    case AxisKind::DenseFixed: return "dense_fixed";
    case AxisKind::DenseVariable: return "dense_variable";
    case AxisKind::SparseFixed: return "sparse_fixed";
    case AxisKind::SparseVariable: return "sparse_variable";
    case AxisKind::Singleton: return "singleton";
  }
  return "?";
}

AxisKind axis_kind_of(LevelKind kind) {
  switch (kind) {
    case LevelKind::Dense: return AxisKind::DenseFixed;
    case LevelKind::Compressed:
    case LevelKind::CompressedNonUnique: return AxisKind::SparseVariable;
    case LevelKind::Singleton: return AxisKind::Singleton;
    case LevelKind::DenseVariable: return AxisKind::DenseVariable;
    case LevelKind::SparseFixed: return AxisKind::SparseFixed;
  }
  return AxisKind::DenseFixed;
}

const SparseBuffer& Program::buffer(const std::string& tensor) const {
  for (const SparseBuffer& b : buffers)
    if (b.tensor == tensor) return b;
  throw std::logic_error("no buffer for tensor " + tensor);
}

const std::string& Program::size_var(const std::string& var) const {
  auto it = index_class.find(var);
  return it == index_class.end() ? var : it->second;
}

const SparseBuffer& Program::structure_of(const SparseBuffer& b) const {
  return b.shares_structure_with.empty() ? b : buffer(b.shares_structure_with);
}

size_t SparseIteration::shared_loops() const {
  size_t d = 0;
  while (d < iterators.size() && !iterators[d].is_reduction) ++d;
  return d;
}

std::vector<Iterator> SparseIteration::loops_of(const ast::Expr& terms, const std::vector<BlockedVar>& blocked) const {
  std::set<std::string> used(output.indices.begin(), output.indices.end());
  for (const ast::Access* access : ast::collect_accesses(terms)) used.insert(access->indices.begin(), access->indices.end());
  for (const BlockedVar& b : blocked)
    if (used.count(b.var)) used.insert({b.outer, b.inner});
  std::vector<Iterator> loops(iterators.begin(), iterators.begin() + static_cast<std::ptrdiff_t>(shared_loops()));
  for (size_t d = shared_loops(); d < iterators.size(); ++d)
    if (used.count(iterators[d].var)) loops.push_back(iterators[d]);
  return loops;
}

int Program::depth_of(const std::string& var) const {
  const std::string& loop = blocked(var) ? blocked(var)->inner : var;
  for (size_t d = 0; d < iteration.iterators.size(); ++d)
    if (iteration.iterators[d].var == loop) return static_cast<int>(d);
  return -1;
}

const BlockedVar* Program::blocked(const std::string& var) const {
  for (const BlockedVar& b : blocked_vars)
    if (b.var == var) return &b;
  return nullptr;
}

const BlockedVar* Program::blocked_loop(const std::string& loop) const {
  for (const BlockedVar& b : blocked_vars)
    if (b.outer == loop || b.inner == loop) return &b;
  return nullptr;
}

const SparseBuffer* Program::ordered_apart_buffer() const {
  for (const SparseBuffer& b : buffers)
    if (b.ordered_apart) return &b;
  return nullptr;
}

bool Program::parts_list_output() const {
  return !iteration.added_parts.empty() && (output().listed_blocks || output().parts_listed || ordered_apart_buffer());
}

// A scoped sum into an output gathered in block-row workspaces (gathered_level: C bsr beside a
// term without the blocked operand) where the body does not read an operand that blocks an
// index (D bsr in `C bsr = A csr B + D`; C_prev of `C += A B`, C bsr): the blocked operand's
// loops would split the body's loops into blocks it does not read. Instead each part is lowered
// blocked only by its own operands (block_row_part_program), and the parts share only the
// output's block-row loops (i_blk), each gathering its entries into the block row's workspace.
void set_part_loops(Program& part, const Program& whole, std::vector<BlockedVar> kept,
                    const std::map<std::string, std::string>& unblocked) {
  part.blocked_vars = std::move(kept);
  std::vector<Iterator> iterators;
  for (Iterator it : whole.iteration.iterators) {
    auto removed = unblocked.find(it.var);
    if (removed != unblocked.end() && removed->second.empty()) continue;
    if (removed != unblocked.end()) it.var = removed->second;
    iterators.push_back(it);
  }
  part.iteration.iterators = iterators;
  part.iteration.iterators = part.iteration.loops_of(*part.iteration.body, part.blocked_vars);
}

bool parts_in_block_rows(const Program& whole) {
  const SparseBuffer& output = whole.output();
  // (Only an assembled output gathers its block rows.)
  if (whole.iteration.added_parts.empty() || output.gathered_level < 0 || output.listed_blocks) return false;
  std::set<std::string> read;
  for (const ast::Access* access : ast::collect_accesses(*whole.iteration.body)) read.insert(access->tensor);
  for (const BlockedVar& b : whole.blocked_vars)
    if (b.tensor != output.tensor && !read.count(b.tensor)) return true;
  return false;
}

// One part of such a sum (parts_in_block_rows), as a program of its own: its terms over the
// whole's loops, blocked by the operands it reads. An index that only another part's operand
// blocks is split by the output's block rows where it is a block-row index (i into i_blk, i_in:
// the loops the parts share, as for an output blocked where no operand is), and is one loop
// where it keys the workspace (j: the output's levels on it reached at j / and % the block,
// the loop in the in-block loop's place).
Program block_row_part_program(const Program& whole, const ast::ExprPtr& terms) {
  Program part = whole;
  part.iteration.body = terms;
  part.iteration.added_parts.clear();
  const SparseBuffer& output = whole.output();
  const std::string& gathered_var = output.indices[static_cast<size_t>(output.format.mode_order[output.gathered_level])];
  std::set<std::string> read, used(output.indices.begin(), output.indices.end());
  for (const ast::Access* access : ast::collect_accesses(*terms)) {
    read.insert(access->tensor);
    used.insert(access->indices.begin(), access->indices.end());
  }
  std::vector<BlockedVar> kept;
  std::map<std::string, std::string> unblocked;  // a removed loop -> the index's loop in its place ("" for none)
  for (BlockedVar b : whole.blocked_vars) {
    if (!used.count(b.var)) continue;  // another part's summed index (A bsr's k): no loop of this part
    std::string alike;
    for (const Axis& axis : part.axes)
      if (read.count(axis.tensor) && axis.tensor != output.tensor && (axis.index_var == b.outer || axis.index_var == b.inner) &&
          alike.empty())
        alike = axis.tensor;
    const bool output_index = std::find(output.indices.begin(), output.indices.end(), b.var) != output.indices.end();
    if (alike.empty() && b.tensor != output.tensor && output_index && b.var == gathered_var) {
      unblocked[b.outer] = "";
      unblocked[b.inner] = b.var;
      for (int id : output.axes)
        if (part.axes[id].mode_var == b.var) part.axes[id].index_var = b.var;  // now blocked_apart()
      continue;
    }
    if (alike.empty() && b.tensor != output.tensor && output_index) b.tensor = output.tensor;  // its block rows
    else if (!alike.empty() && !read.count(b.tensor)) b.tensor = alike;
    kept.push_back(b);
  }
  set_part_loops(part, whole, std::move(kept), unblocked);
  return part;
}

// The loops those parts share: the output's block-row loops (its levels above the gathered
// one), in the body's program (block_row_part_program).
size_t block_row_loops(const Program& part) {
  const SparseBuffer& output = part.output();
  int loops = 0;
  for (int level = 0; level < output.gathered_level; ++level)
    loops = std::max(loops, part.depth_of(part.axes[output.axes[level]].index_var) + 1);
  return static_cast<size_t>(loops);
}

std::vector<OrderConstraint> hard_order_constraints(const Program& program) {
  std::vector<OrderConstraint> constraints;
  for (const SparseBuffer& buffer : program.buffers) {
    if (!buffer.shares_structure_with.empty()) continue;  // its owner already contributes
    const std::vector<LevelKind>& levels = buffer.format.levels;
    auto first_sparse = std::find_if(levels.begin(), levels.end(), [](LevelKind k) { return k != LevelKind::Dense; });
    if (first_sparse == levels.end()) continue;  // all dense: random access in any order
    size_t f = static_cast<size_t>(first_sparse - levels.begin());
    for (size_t b = std::max<size_t>(f, 1); b < levels.size(); ++b)
      for (size_t a = 0; a < b; ++a) {
        if (buffer.gathered_level >= 0) {
          // A block-row workspace gathers its level and those below in any order, inside the
          // loops of the levels above it (the rows).
          if (static_cast<int>(a) < buffer.gathered_level)
            constraints.push_back({program.axes[buffer.axes[a]].index_var, program.axes[buffer.axes[b]].index_var,
                                   buffer.tensor});
          continue;
        }
        // A level blocked apart from the loops is located once its variable and parent are
        // known, after any loops (its block levels would otherwise order i before j before i);
        // a level streamed below one still waits for its variable.
        if (!program.axes[buffer.axes[b]].blocked_apart())
          constraints.push_back({program.axes[buffer.axes[a]].index_var, program.axes[buffer.axes[b]].index_var,
                                 buffer.tensor});
      }
  }
  return constraints;
}

// "compressed i, dense j": each level's kind and index variable.
static std::string level_list(const SparseBuffer& buffer) {
  std::vector<std::string> levels;
  for (size_t l = 0; l < buffer.format.levels.size(); ++l)
    levels.push_back(std::string(level_kind_name(buffer.format.levels[l])) + " " +
                     buffer.indices[static_cast<size_t>(buffer.format.mode_order[l])]);
  return levels.empty() ? "no levels" : join(levels, ", ");
}

std::string dump_stage1(const Program& program) {
  std::string out = "# stage I: " + program.kernel_name + "\n";
  out += "types: value " + std::string(value_type_name(program.value_type)) + ", index " +
         index_type_name(program.index_type) + "\n";
  out += "axes:\n";
  for (const Axis& axis : program.axes) {
    out += "  " + axis.name + " = " + axis_kind_name(axis.kind) + "(" + axis.index_var;
    if (axis.parent >= 0) out += ", parent=" + program.axes[axis.parent].name;
    out += ", length=" + axis.length;
    if (!axis.pos.empty()) out += ", pos=" + axis.pos;
    if (!axis.crd.empty()) out += ", crd=" + axis.crd;
    if (axis.width) out += ", width=" + std::to_string(axis.width);
    if (axis.sliced) out += ", sliced";
    if (axis.lists_every_coordinate) out += ", every coordinate";
    if (!axis.ordered) out += ", unordered";
    if (axis.block_part != BlockPart::None)
      out += ", " + axis.mode_var +
             (axis.block_part == BlockPart::Block ? " floordiv " : " mod ") + std::to_string(axis.block);
    if (!axis.unique) out += ", nonunique";
    out += ")\n";
  }
  out += "buffers:\n";
  for (const SparseBuffer& buffer : program.buffers) {
    std::vector<std::string> axis_names;
    for (int id : buffer.axes) axis_names.push_back(program.axes[id].name);
    std::vector<std::string> modes;
    for (int m : buffer.format.mode_order) modes.push_back(std::to_string(m));
    out += "  " + buffer.tensor + "(" + join(buffer.indices, ",") + "): " + value_type_name(program.value_type) +
           "[" + join(axis_names, ", ") + "] format " + buffer.format.name +
           (buffer.format_inferred ? " (inferred from the operands: " + level_list(buffer) + ")" : "") +
           ", mode order (" + join(modes, ",") +
           "), values " + buffer.values;
    if (buffer.is_output) out += ", output";
    if (!buffer.shares_structure_with.empty()) out += ", shares the structure of " + buffer.shares_structure_with;
    if (buffer.gathered_level >= 0)
      out += ", blocks gathered by level " + std::to_string(buffer.gathered_level) + " in a block-row workspace";
    if (buffer.listed_blocks) out += ", entries listed, sorted and packed into its blocks";
    if (buffer.parts_listed) out += ", entries listed by each part, sorted and packed";
    if (buffer.ordered_apart) out += ", a part of the sum of its own, iterated in its own storage order";
    out += "\n";
  }
  std::vector<std::string> iterators;
  for (const Iterator& it : program.iteration.iterators)
    iterators.push_back(it.var + (!it.is_reduction                                   ? ": spatial"
                                  : program.iteration.reduction == ast::Reduction::Sum ? ": reduction"
                                                                                       : ": " + std::string(ast::reduction_name(program.iteration.reduction)) + " reduction"));
  out += "sparse_iteration " + program.iteration.name + " over [" + join(iterators, ", ") + "]:\n";
  for (const Fusion& f : program.iteration.fusions)
    out += "  fuse " + f.outer + ", " + f.inner + " -> " + f.into + ": one loop over the stored entries of " + f.tensor + "\n";
  out += "  " + program.spec_text + "\n";
  // (An output listed into its blocks, or beside parts in their own orders: lower_to_loops.h's
  // describe_listed_parts says how.)
  if (!program.iteration.added_parts.empty() && !program.parts_list_output()) {
    const SparseIteration& it = program.iteration;
    // In a blocked output's block rows, each part is blocked by its own operands (parts_in_block_rows).
    const bool in_block_rows = parts_in_block_rows(program);
    const size_t shared_loops = in_block_rows ? block_row_loops(block_row_part_program(program, it.body)) : it.shared_loops();
    std::vector<std::string> shared;
    for (size_t d = 0; d < shared_loops && d < it.iterators.size(); ++d)
      shared.push_back(in_block_rows ? block_row_part_program(program, it.body).iteration.iterators[d].var : it.iterators[d].var);
    auto vars = [&](const ast::ExprPtr& terms, size_t from) {
      std::vector<std::string> names;
      std::vector<Iterator> loops = in_block_rows ? block_row_part_program(program, terms).iteration.iterators
                                                  : it.loops_of(*terms, program.blocked_vars);
      for (size_t d = from; d < loops.size(); ++d) names.push_back(loops[d].var);
      return join(names, ", ");
    };
    out += "  one loop nest: " + ast::to_string(*it.body) + " over [" + vars(it.body, 0) + "]" +
           (in_block_rows ? ", blocked by its own operands" : "") + "\n";
    for (const AddedPart& part : it.added_parts) {
      const bool negated = part.body->kind == ast::ExprKind::Neg;  // "- b(i)" rather than "+ -b(i)"
      const std::string own = vars(part.body, shared_loops);
      out += std::string(negated ? "  - " : "  + ") + ast::to_string(negated ? *part.body->lhs : *part.body) + " (" +
             (part.summed.empty() ? "no summed index" : "summed over " + join(part.summed, ", ")) + "): inside [" +
             join(shared, ", ") + "], " + (own.empty() ? "no loops of its own" : "then over [" + own + "]") +
             (in_block_rows ? " blocked by its own operands, into the same block rows of " + program.output().tensor + "\n"
                            : ", into the same output entries\n");
    }
  }
  return out;
}

}  // namespace spgen::sparse
