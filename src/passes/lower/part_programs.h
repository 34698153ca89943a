// Stage I rewrites that the lowering of a scoped sum's parts needs: whether each part lists the
// output's entries in a nest of its own, and that part as a program of its own.
#pragma once

#include "frontend/config.h"
#include "ir/sparse_ir.h"

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
sparse::Program listed_part_program(const sparse::Program& whole, const ast::ExprPtr& terms, const Config& config);

// The expression without the terms that read `tensor` (null where none is left): the rest of a
// union beside a blocked operand reads the others only.
ast::ExprPtr without(const ast::ExprPtr& expr, const std::string& tensor);

}  // namespace spgen::lowering
