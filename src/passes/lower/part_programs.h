// Stage I rewrites that the lowering of a scoped sum's parts needs: whether each part lists the
// output's entries in a nest of its own, and that part as a program of its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontend/config.h"
#include "ir/sparse_ir.h"
#include "passes/infer_loop_order.h"
#include "passes/lower/output_context.h"

namespace spgen::lowering {

// A scoped sum into an assembled output unblocked on an index that an operand blocks: its
// entries are listed (out_of_order_reason), each part in a nest of its own (listed_part_program).
// An output blocked otherwise than the operands (listed_blocks) lists every part likewise, each
// entry's key taken from its coordinates / and % the output's blocks.
bool parts_listed_beside_blocks(const sparse::Program& whole);

// One part of a scoped sum into a listed output, as a program of its own: its terms over the
// whole's loops, blocked only by the tensors it reads. A blocked operand of another part (A bsr
// in `A B + D`) splits no loop of this one: its block loops become one loop over the index
// again (D's rows and columns are D's own). A tensor of this part blocked apart from the
// whole's blocker (other blocks) gives the part its block loops (their names kept: the loops
// of the whole's iterators).
// A part that reads a buffer ordered apart (C_prev beside operands stored in a conflicting
// order) orders its loops by that buffer's storage alone.
// Where its loops have no order, the part is refused: its conflict is `conflict` (where given:
// NestRefusal::LoopOrder), else thrown.
sparse::Program listed_part_program(const sparse::Program& whole, const ast::ExprPtr& terms, const Config& config,
                                    std::optional<LoopOrderConflict>* conflict = nullptr);

// The tensors an iteration's body reads, in order of first access.
std::vector<std::string> tensors_read(const sparse::Program& program);

// What the rest beside blocked operands depends on, of the lowering that found it.
struct RestOfBlocks {
  const std::vector<std::string>& blockers;  // the operands blocked alike whose blocks the rest lies outside
  bool gathered = false;  // the output is gathered a block row at a time, and the rest runs in each block row
  std::string otherwise;  // an operand blocked otherwise, whose block loops the rest follows, or empty
  int row_depth = -1;     // gathered: the depth of the block row's loops, which the rest shares
  std::string blocks;     // "A's blocks", for the refusal
};

// The same spec with the blocked operands gone (zero) and their blocks apart from the loops (C
// = A + B, A bsr: B's entries outside A's blocks). A gathered output keeps the block loops of its
// indices that the blocked operand gave (i_blk, i_in, now the output's): they share the block
// row. The block loops the rest keeps get fresh names. A CompileError where no loop order
// iterates every operand's levels inside their parents.
sparse::Program rest_program(const sparse::Program& program, const Config& config, const RestOfBlocks& rest,
                             const FreshName& fresh_name);

// The expression without the terms that read `tensor` (null where none is left): the rest of a
// union beside a blocked operand reads the others only.
ast::ExprPtr without(const ast::ExprPtr& expr, const std::string& tensor);

}  // namespace spgen::lowering
