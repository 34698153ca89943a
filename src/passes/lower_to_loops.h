// Pass 5: stage I → stage II. Each iterator becomes a loop: a position loop over the compressed
// level that drives it, or a dense loop over its dimension. Dense levels are reached by
// coordinate arithmetic, reductions that sit inside all output loops go into a scalar, and a
// dense output is zeroed first only when some of its entries would otherwise go unwritten.
#pragma once

#include <optional>
#include <string>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"
#include "support/diagnostics.h"

namespace spgen {

// A sparse output that does not share an input's structure is built in phases: one `Assemble`
// phase per compressed level (compressed-nonunique and dense-variable ones included), top down,
// counts the entries under each parent position (a ragged row: its largest coordinate + 1) and
// prefix-sums them into that level's pos array; `Compute` then appends coordinates and values
// through a cursor per level.
enum class LoweringPhase { Compute, Assemble };

// True when the output's structure is built by the kernels (an assemble phase is needed).
bool output_is_assembled(const sparse::Program& program);
// True when the output's entries may be listed, sorted and packed where they arrive out of
// storage order (an assembled, unblocked output): its storage order then
// constrains the loop order only where some order satisfies it (passes/infer_loop_order).
bool output_may_be_listed(const sparse::Program& program, const Config& config);
// A refusal of the nest plan (passes/nest_plan.h) a program was built by: not the user's error
// but data that names the plan to build it by instead (plan_after_refusal), and the user's
// error only where no plan is left. The lowering refuses in its plan phase, before it builds
// any loop, or in the plan phase of a part's own lowering.
struct NestRefusal {
  enum class Kind {
    // The loop nest that the parts of a scoped sum share into a blocked output whose blocks the
    // operands' block loops drive or a block-row workspace gathers (an operand that the body
    // does not read blocks its loops: C bsr = A B + D with A, B dense and D bsr, or `C += A B`;
    // or the shared loops visit only the block rows some operands store: A and D block-DCSR).
    // Where may_list_parts_into_blocks, the output's entries are then listed into its blocks
    // instead (build_sparse_ir's `list_output`), each part in a nest of its own. Also a
    // block-row workspace of an output summed outside its block rows (C in blocks of rows =
    // A^T B with A bsr): no block row is finished before the next begins, so its entries are
    // listed.
    SharedBlocks,
    // The one nest of a union's terms beside a blocked operand: a term without it has entries
    // outside its blocks that cannot follow them there (C block-DCSR-like = A + B with B dcsr
    // located in A's blocks, where the loop over C's block rows visits only A's), while each
    // term alone could be lowered. Where may_list_union_parts (an assembled output, no added
    // parts), each term is then a part of its own (place_sum_parts' `union_apart`), listing the
    // output's entries in its own storage order.
    UnionNest,
    // The loops of a part that lists its entries in a nest of its own have no order (its
    // operands' storage orders conflict there): as a loop-order conflict of the whole, a nest
    // per term may still serve.
    LoopOrder,
  };
  Kind kind;
  std::string message;  // the user's error, where no plan answers the refusal
};
// Whether a SharedBlocks refusal may be answered by listing the output's entries into its blocks.
bool may_list_parts_into_blocks(const sparse::Program& program);
// Whether a UnionNest refusal may be answered by a part per term, each listing the output's entries.
bool may_list_union_parts(const sparse::Program& program);
// --emit=stage1's lines for the parts of such a sum listed into a blocked output: each part's
// nest and its loops ("" for any other program).
std::string describe_listed_parts(const sparse::Program& program, const Config& config);
// The output levels that have an assemble phase (those with a pos array), or none.
std::vector<int> assembled_levels(const sparse::Program& program);
// NAME_assemble for one compressed level, NAME_assemble_levelL for each of several.
std::string assemble_function_name(const sparse::Program& program, int level);

// The nest of a lowering, or the refusal of its program's nest plan (then `func` is empty).
struct LoweredNest {
  loops::LoweredFunc func;
  std::optional<NestRefusal> refusal;
};

// `level`: the compressed output level an Assemble phase counts (default: the last).
LoweredNest lower_to_loops(const sparse::Program& program, const Config& config, LoweringPhase phase = LoweringPhase::Compute,
                           int level = -1);

loops::ScalarType value_scalar_type(ValueType type);
loops::ScalarType index_scalar_type(IndexType type);

}  // namespace spgen
