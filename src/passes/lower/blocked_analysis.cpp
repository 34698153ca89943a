#include "passes/lower/blocked_analysis.h"

#include <algorithm>
#include <set>

#include "frontend/config.h"
#include "passes/lower/part_programs.h"

namespace spgen::lowering {

std::string names(const std::vector<std::string>& tensors) {
  std::string all;
  for (size_t t = 0; t < tensors.size(); ++t) all += (t == 0 ? "" : t + 1 == tensors.size() ? " and " : ", ") + tensors[t];
  return all;
}

std::vector<std::string> BlockedAnalysis::blocked_alike(const std::string& blocker) const {
  std::vector<std::string> alike = {blocker};
  std::set<std::string> loops;
  for (const sparse::BlockedVar& b : program_.blocked_vars)
    if (b.tensor == blocker) loops.insert({b.outer, b.inner});
  for (const sparse::SparseBuffer& buffer : program_.buffers) {
    if (buffer.is_output || buffer.tensor == blocker || !buffer.shares_structure_with.empty()) continue;
    if (!reads(buffer.tensor)) continue;  // (another part's operand: C_prev beside A + B)
    // Alike on one index only (B block-DCSR 2x3 beside A bsr 2x2: i alike, j apart), its
    // blocks on the other lie outside the blocker's too: it is blocked otherwise.
    bool otherwise = false;
    for (int id : buffer.axes) {
      const sparse::Axis& axis = program_.axes[id];
      const sparse::BlockedVar* b = program_.blocked(axis.mode_var);
      otherwise |= b && b->tensor == blocker && axis.blocked_apart();
    }
    if (otherwise) continue;
    for (int id : buffer.axes)
      if (loops.count(program_.axes[id].index_var)) {
        alike.push_back(buffer.tensor);
        break;
      }
  }
  return alike;
}

IterationSpace BlockedAnalysis::blocks_visited(const std::string& blocker) const {
  std::set<int> depths;
  for (const sparse::BlockedVar& b : program_.blocked_vars)
    if (b.tensor == blocker && !visits_every_coordinate(program_.depth_of(b.outer))) depths.insert(program_.depth_of(b.outer));
  for (int id : program_.buffer(blocker).axes) {  // its unblocked sparse levels (DCSR-like rows above the blocks)
    const sparse::Axis& axis = program_.axes[id];
    if (axis.kind == sparse::AxisKind::DenseFixed || axis.block_part != BlockPart::None) continue;
    int depth = program_.depth_of(axis.index_var);
    if (depth >= 0 && !visits_every_coordinate(depth)) depths.insert(depth);
  }
  // (A loop over an unblocked level that merges other operands' coordinates reaches the body
  // only where a loop below visits the blocked operands' blocks: see gated_below.)
  const std::vector<std::string> alike = blocked_alike(blocker);
  auto holds_alike = [&](const Conjunction& c) {
    return std::any_of(c.begin(), c.end(), [&](const std::string& t) { return std::count(alike.begin(), alike.end(), t) > 0; });
  };
  IterationSpace visited = {{}};
  for (int depth : depths) {
    IterationSpace both;
    for (const Conjunction& above : visited)
      for (const Conjunction& here : plans_[depth].space) {
        if (!holds_alike(here)) continue;
        Conjunction all = above;
        all.insert(here.begin(), here.end());
        if (std::find(both.begin(), both.end(), all) == both.end()) both.push_back(all);
      }
    visited = both;
  }
  return visited;
}

bool BlockedAnalysis::inside_blocks_visited(const Conjunction& term, const std::string& blocker) const {
  const std::vector<std::string> alike = blocked_alike(blocker);
  Conjunction blocked;
  for (const std::string& t : term)
    if (std::count(alike.begin(), alike.end(), t)) blocked.insert(t);
  if (blocked.empty()) return false;
  const IterationSpace visited = blocks_visited(blocker);
  return std::any_of(visited.begin(), visited.end(), [&](const Conjunction& c) {
    return std::includes(blocked.begin(), blocked.end(), c.begin(), c.end());
  });
}

bool BlockedAnalysis::blocks_visit_every_coordinate(const std::string& blocker) const {
  for (const sparse::BlockedVar& b : program_.blocked_vars)
    if (b.tensor == blocker && !body_visits_every_coordinate(program_.depth_of(b.outer))) return false;
  return true;
}

bool BlockedAnalysis::body_visits_every_coordinate(int depth) const {
  return (depth < 0 || !plans_[depth].universe_of_parts_only) && visits_every_coordinate(depth);
}

bool BlockedAnalysis::rows_visited_for_parts_only() const {
  const sparse::SparseBuffer& output = program_.output();
  if (!assembled_ || output.gathered_level < 0 || whole_ == nullptr || whole_->iteration.added_parts.empty()) return false;
  for (int level = 0; level < output.gathered_level; ++level)
    if (output.format.levels[level] != LevelKind::Dense && output.format.levels[level] != LevelKind::Compressed) return false;
  for (int d = 0; d <= gathered_row_depth(); ++d)
    if (!body_visits_every_coordinate(d)) return plans_[d].universe_of_parts_only;
  return false;
}

std::string BlockedAnalysis::outside_blocks_refusal(const std::string& blocker) const {
  const sparse::SparseBuffer& output = program_.output();
  bool gathered = assembled_ && output.gathered_level >= 0;
  // A listed output (plan_listed) takes the rest's entries into its list before the sort.
  const bool listed = assembled_ && !gathered && !blocked_entries_reason(output).empty();
  if (!listed && !output.format.all_dense() && assembled_ && output.format.is_blocked() && !gathered)
    return "the output " + output.tensor + " is assembled in " + blocker + "'s block loops, and its blocks outside " +
           blocker + "'s would arrive after them; with " + blocker + " unblocked, a block-row workspace gathers them";
  if (!listed && !output.format.all_dense() && !gathered) return "the output is not dense";
  if (gathered) {
    for (int level = 0; level < output.gathered_level; ++level)
      if (output.format.levels[level] != LevelKind::Dense && output.format.levels[level] != LevelKind::Compressed)
        return "the output " + output.tensor + " (" + output.format.name + ") stores its block rows in a " +
               level_kind_name(output.format.levels[level]) + " level, which the rest cannot share with " + blocker +
               "'s block loops; make that level dense (bsr) or compressed (block-DCSR)";
    for (int d = 0; d <= gathered_row_depth(); ++d)
      if (!body_visits_every_coordinate(d))
        return "the loop " + program_.iteration.iterators[d].var + " over the output's block rows visits only " +
               blocker + "'s" + (plans_[d].universe_of_parts_only ? " for these terms (the others only for another part of the sum)" : "") +
               ", but the other operands' entries lie in the others too; store " + blocker +
               "'s block rows dense (bsr)";
  }
  if (!program_.iteration.fusions.empty()) return "a fuse";
  for (const sparse::BlockedVar& b : program_.blocked_vars)
    if (b.tensor != blocker && !(gathered && b.tensor == output.tensor)) return b.tensor + " blocks " + b.var + " too";
  // Every loop over blocks visits exactly the blocks of the operands blocked alike (their
  // union), or every block: the rest then skips what they hold.
  const std::vector<std::string> alike = blocked_alike(blocker);
  // (A loop beyond their blocks with no loop over blocks inside: the rest skips the blocks
  // above it, where the output is not gathered in block rows. Beside operands blocked alike,
  // the loop must be such a level of each of them: the rest then skips the blocks above it
  // that any of them stores, as the block loops visited those whole.)
  const int ungated = ungated_merge_level(blocker);
  std::string not_ungated;  // an operand blocked alike whose level at that loop is not so
  if (ungated >= 0)
    for (const std::string& tensor : alike) {
      int level = ungated_merge_level(blocker, tensor);
      // (One whose only sparse levels are its blocks, its columns dense, needs none: the rest
      // skips where its blocks are found, which is its block rows.)
      bool only_blocks_sparse = true;
      for (int id : program_.buffer(tensor).axes)
        only_blocks_sparse &= program_.axes[id].kind == sparse::AxisKind::DenseFixed || program_.axes[id].block_part == BlockPart::Block;
      if (level < 0 ? !only_blocks_sparse
                    : program_.axes[program_.buffer(tensor).axes[static_cast<size_t>(level)]].index_var !=
                          program_.axes[program_.buffer(blocker).axes[static_cast<size_t>(ungated)]].index_var)
        not_ungated = tensor;
    }
  if (ungated >= 0 && (gathered || !not_ungated.empty())) {
    const sparse::Axis& axis = program_.axes[program_.buffer(blocker).axes[static_cast<size_t>(ungated)]];
    return "the loop over " + axis.mode_var + " visits other operands' coordinates too, and no loop over " + blocker +
           "'s blocks inside it keeps to " + blocker + "'s" +
           (gathered ? ", which a block-row workspace of the output needs"
                     : ", which " + not_ungated + ", blocked alike, needs too: it has sparse levels besides its blocks, but none at that loop with only dense levels below it");
  }
  for (const std::string& tensor : alike)
    for (int id : program_.buffer(tensor).axes) {
      const sparse::Axis& axis = program_.axes[id];
      if (axis.kind == sparse::AxisKind::DenseFixed || axis.blocked_apart()) continue;  // (apart: located in the block row)
      // (An unblocked sparse level, DCSR-like rows above column blocks, is located by the rest
      // as its blocks are: its loop too must visit exactly their union, or every coordinate,
      // or merge other operands' coordinates above a loop that visits exactly the union: where
      // only the others are stored, the tensor is absent and that loop below visits nothing.)
      int depth = program_.depth_of(axis.index_var);
      if (!visits_every_coordinate(depth) && !union_of_alike(depth, alike, tensor) &&
          !(axis.block_part == BlockPart::None && union_of_alike(depth, alike, tensor, true) && gated_below(axis, alike)) &&
          !(ungated >= 0 && axis.level == ungated_merge_level(blocker, tensor) && !gathered))
        return std::string("the loop over ") + (axis.block_part == BlockPart::Block ? "the blocks of " : "") + axis.mode_var +
               (alike.size() == 1 ? " visits other operands' " + std::string(axis.block_part == BlockPart::Block ? "blocks" : "coordinates") + " too"
                                  : " visits other blocks than those of " + names(alike) + " (other operands' blocks)") +
               (axis.block_part == BlockPart::None ? ", and no loop over " + tensor + "'s blocks inside it keeps to " + tensor + "'s" : "");
    }
  // The rest reads the operands blocked alike as zero: each term that holds one must lie
  // inside the blocks visited (A .* B within the blocks A and B both store).
  for (const Conjunction& term : tensor_terms(*program_.iteration.body)) {
    bool holds_alike = std::any_of(term.begin(), term.end(), [&](const std::string& t) { return std::count(alike.begin(), alike.end(), t) > 0; });
    if (holds_alike && !inside_blocks_visited(term, blocker))
      return "the term of " + names(std::vector<std::string>(term.begin(), term.end())) +
             " has entries outside the blocks that the loops visit, which the rest would read as zero";
  }
  // Several operands blocked otherwise (B 4x4, D 3x3 beside A 2x2): the first gives the rest
  // its loops, and the others, located inside its blocks, follow in the rest's own rest.
  return "";
}

bool BlockedAnalysis::union_of_alike(int depth, const std::vector<std::string>& alike, const std::string& tensor, bool among_others) const {
  const IterationSpace& space = plans_[depth].space;
  auto of_alike = [&](const Conjunction& c) {
    return !c.empty() && std::all_of(c.begin(), c.end(), [&](const std::string& t) { return std::count(alike.begin(), alike.end(), t) > 0; });
  };
  bool holds = std::any_of(space.begin(), space.end(), [&](const Conjunction& c) { return c.count(tensor) > 0 && of_alike(c); });
  return holds && (among_others || std::all_of(space.begin(), space.end(), of_alike));
}

int BlockedAnalysis::ungated_merge_level(const std::string& blocker, const std::string& tensor) const {
  const std::vector<std::string> alike = blocked_alike(blocker);
  const std::string& of = tensor.empty() ? blocker : tensor;
  const std::vector<int>& levels = program_.buffer(of).axes;
  for (size_t l = 0; l < levels.size(); ++l) {
    const sparse::Axis& axis = program_.axes[levels[l]];
    if (axis.kind == sparse::AxisKind::DenseFixed || axis.block_part != BlockPart::None) continue;
    int depth = program_.depth_of(axis.index_var);
    if (depth < 0) continue;  // (a part of a scoped sum without this loop)
    bool beyond_theirs = visits_every_coordinate(depth) ||
                         (!union_of_alike(depth, alike, of) && union_of_alike(depth, alike, of, true));
    if (!beyond_theirs) continue;
    bool blocks_above = false, sparse_below = false;
    for (size_t above = 0; above < l; ++above)
      blocks_above |= program_.axes[levels[above]].block_part == BlockPart::Block;
    for (size_t below = l + 1; below < levels.size(); ++below)
      sparse_below |= program_.axes[levels[below]].kind != sparse::AxisKind::DenseFixed;
    return blocks_above && !sparse_below ? static_cast<int>(l) : -1;
  }
  return -1;
}

bool BlockedAnalysis::gated_below(const sparse::Axis& axis, const std::vector<std::string>& alike) const {
  const std::vector<int>& levels = program_.buffer(axis.tensor).axes;
  int depth = program_.depth_of(axis.index_var);
  for (size_t l = static_cast<size_t>(axis.level) + 1; l < levels.size(); ++l) {
    const sparse::Axis& below = program_.axes[levels[l]];
    if (below.kind == sparse::AxisKind::DenseFixed || below.blocked_apart()) continue;
    int deeper = program_.depth_of(below.index_var);
    if (deeper > depth && !visits_every_coordinate(deeper) && union_of_alike(deeper, alike, axis.tensor)) return true;
  }
  return false;
}

std::string BlockedAnalysis::blocked_otherwise(const std::vector<std::string>& alike) const {
  ast::ExprPtr rest = program_.iteration.body;
  for (const std::string& tensor : alike) rest = rest ? without(rest, tensor) : nullptr;
  std::set<std::string> read;
  if (rest)
    for (const ast::Access* access : ast::collect_accesses(*rest)) read.insert(access->tensor);
  for (const sparse::Axis& axis : program_.axes)
    if (axis.blocked_apart() && read.count(axis.tensor) && !std::count(alike.begin(), alike.end(), axis.tensor))
      return axis.tensor;
  return "";
}

bool BlockedAnalysis::reads(const std::string& tensor) const {
  for (const ast::Access* access : ast::collect_accesses(*program_.iteration.body))
    if (access->tensor == tensor) return true;
  return false;
}

int BlockedAnalysis::gathered_row_depth() const {
  const sparse::SparseBuffer& output = program_.output();
  int depth = -1;
  for (int level = 0; level < output.gathered_level; ++level)
    depth = std::max(depth, program_.depth_of(program_.axes[output.axes[level]].index_var));
  return depth;
}

std::string BlockedAnalysis::stored_as(const sparse::Axis& axis) const {
  LevelKind kind = program_.buffer(axis.tensor).format.levels[static_cast<size_t>(axis.level)];
  if (axis.blocked_apart())
    return std::string("in a ") + level_kind_name(kind) + " level blocked by " + std::to_string(axis.block);
  return kind == LevelKind::Compressed ? "compressed" : std::string("in a ") + level_kind_name(kind) + " level";
}

bool BlockedAnalysis::visits_every_coordinate(int depth) const {
  if (depth < 0) return true;
  return plans_[depth].kind == LoopKind::Dense || (plans_[depth].kind == LoopKind::Merge && plans_[depth].dense_universe) ||
         plans_[depth].driven_over_every_coordinate;
}

std::string BlockedAnalysis::blocked_entries_reason(const sparse::SparseBuffer& output) const {
  if (output.format.is_blocked() && !output.listed_blocks) return "";  // appended in the block loops, or gathered
  // (The body of a scoped sum is blocked only by its own operands, listed_part_program; the
  // whole sum's blocks decide.)
  const sparse::Program& blocking = whole_ ? *whole_ : program_;
  if (output.parts_listed) return "the parts of the sum cannot share one loop nest, so each lists its entries in a nest of its own";
  for (int id : output.axes) {
    const std::string& var = program_.axes[id].mode_var;
    if (const sparse::BlockedVar* blocked = blocking.blocked(var); blocked && blocked->tensor != output.tensor)
      return blocked->tensor + " splits index " + var + " into blocks, so its entries arrive a block at a time";
  }
  if (const sparse::SparseBuffer* apart = blocking.ordered_apart_buffer())
    return apart->tensor + "'s storage order conflicts with the other operands', so its part of the sum is a nest of its own";
  return "";
}

}  // namespace spgen::lowering
