// The analysis of blocked operands that the lowering asks before it builds a nest: which
// operands are blocked alike with the one whose loops go over blocks, which blocks those loops
// visit, whether the other operands' entries outside them can follow as a rest of their own, and
// why an output's entries arrive a block at a time. Questions about the program and the loop
// plans only: it holds no state of the lowering.
#pragma once

#include <string>
#include <vector>

#include "ir/sparse_ir.h"
#include "passes/lower/iteration_space.h"
#include "passes/lower/loop_plan.h"

namespace spgen::lowering {

// "A", "A and E".
std::string names(const std::vector<std::string>& tensors);

class BlockedAnalysis {
 public:
  // `plans`: the nest's loop plans; `assembled`: the kernel builds the output's structure;
  // `whole`: the scoped sum whose body's nest this is, if any.
  BlockedAnalysis(const sparse::Program& program, const std::vector<LoopPlan>& plans, bool assembled,
                  const sparse::Program* whole)
      : program_(program), plans_(plans), assembled_(assembled), whole_(whole) {}

  // The operands whose blocks the loops of `blocker` visit: it, and those blocked alike, whose
  // block levels merge with its own.
  std::vector<std::string> blocked_alike(const std::string& blocker) const;

  // The blocks that the loops of `blocker` visit, as a union of intersections of the operands
  // blocked alike (A + B: A's or B's; A .* B + D: those A and B both store): a block is visited
  // where each loop over blocks that does not visit every coordinate visits its coordinate, the
  // union of its space's conjunctions.
  IterationSpace blocks_visited(const std::string& blocker) const;

  // The term's entries lie inside the blocks that the loops of `blocker` visit: the operands
  // blocked alike that it multiplies hold a conjunction of blocks_visited (A * B, and E * B
  // where the loops visit E's blocks too). Holding one of them is not enough: beside A
  // block-DCSR 3x2, B bsr 2x2 is blocked alike on k, but the loop over k's blocks visits A's
  // only (B's level there is dense), so E * B with E located in A's blocks would miss its
  // entries in the blocks A lacks.
  bool inside_blocks_visited(const Conjunction& term, const std::string& blocker) const;

  // The block loops of `blocker` visit every block (a term without a stored factor on them).
  bool blocks_visit_every_coordinate(const std::string& blocker) const;

  // visits_every_coordinate as the body's own terms see it: a loop that a scoped sum's parts
  // share may visit every coordinate for another part's sake only (defer_located_terms), which
  // lets no term of the body skip the blocks' rest.
  bool body_visits_every_coordinate(int depth) const;

  // The loops over the gathered output's block rows visit every block row, some only for
  // another part of a scoped sum (defer_located_terms), which the body's rest cannot use.
  bool rows_visited_for_parts_only() const;

  // Why the entries of other operands outside `blocker`'s blocks cannot be lowered after the
  // blocks ("" if they can): the blocks' loops must visit exactly the blocker's blocks (so the
  // rest skips what they did), and the rest must be a plain kernel once the blocker is gone.
  //
  // A dense output is added into by the rest, after the block loops. An output whose blocks a
  // block-row workspace gathers (plan_output_blocks) gets the rest's entries in the same
  // workspace, inside each block row (rest_in_block_row): the loops over block rows must then
  // visit every block row, and the output store no compressed level above its blocks.
  std::string outside_blocks_refusal(const std::string& blocker) const;

  // The loop at `depth` visits exactly a union of intersections of the operands blocked alike,
  // one of them `tensor`'s (`among_others`: some of its conjunctions may hold other operands
  // only).
  bool union_of_alike(int depth, const std::vector<std::string>& alike, const std::string& tensor, bool among_others = false) const;

  // The level of the blocked operand, below its block levels, whose loop merges other operands'
  // coordinates or visits every coordinate with no loop over its blocks inside it (A: block rows
  // of 2 above compressed columns, B dcsc: the loop over j merges A's and B's columns, and the
  // dense rows inside the block row run for B's columns too; beside a csc D, every column), if
  // any (-1): inside A's block rows the block loops then
  // visit every coordinate of the terms, so the rest does only what lies outside A's levels
  // above it (the block rows A stores), and skips where those are found. Every level of A
  // below it is dense.
  // (`tensor`: the same for an operand blocked alike with the blocker, at its own levels.)
  int ungated_merge_level(const std::string& blocker, const std::string& tensor = "") const;

  // A sparse level of `axis`'s tensor below it is visited by a loop deeper than its own that
  // visits exactly a union of the operands blocked alike: where the tensor is absent at
  // `axis`'s coordinate, that loop visits nothing (its range under the absent parent is empty).
  bool gated_below(const sparse::Axis& axis, const std::vector<std::string>& alike) const;

  // The first operand blocked otherwise than the loops (B bsr 4x4 beside A bsr 2x2), if any:
  // its entries outside the blocks are the rest's, which follows its own blocks
  // (lower_outside_blocks); another one (D bsr 3x3) follows in the rest's own rest. The
  // operands blocked alike whose blocks the loops visit are not (a rest into a gathered output
  // locates them in its block rows: A 2x3 + B 3x2 - 3 * D, B's rows in the rest of A), and only
  // an operand that the rest reads gives it loops (A .* B + D, B 4x4: the rest is D alone).
  std::string blocked_otherwise(const std::vector<std::string>& alike) const;

  // The expression reads the tensor (a rest keeps the blocked operands it skips, unread).
  bool reads(const std::string& tensor) const;

  // The depth of the loop that gives a gathered output's block row (its parent position of the
  // gathered level), before plan_output: the deepest variable of the levels above.
  int gathered_row_depth() const;

  // "compressed", "in a dense-variable level", "in a compressed level blocked by 4".
  std::string stored_as(const sparse::Axis& axis) const;

  bool visits_every_coordinate(int depth) const;

  // An output unblocked on every index beside a blocked operand, or blocked otherwise than its
  // block loops (build_sparse_ir's listed_blocks), gets its entries a block of that operand at a
  // time. Returns why, or "".
  std::string blocked_entries_reason(const sparse::SparseBuffer& output) const;

 private:
  const sparse::Program& program_;
  const std::vector<LoopPlan>& plans_;
  bool assembled_;
  const sparse::Program* whole_;
};

}  // namespace spgen::lowering
