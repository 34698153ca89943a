// Pass 2: spec + config → stage I IR (axes, buffers, one sparse iteration in spec order).
#pragma once

#include <set>
#include <string>

#include "frontend/ast.h"
#include "frontend/config.h"
#include "ir/sparse_ir.h"

namespace spgen {

// The input whose structure a sparse output reuses: one with the same format and indices that
// multiplies the whole right-hand side (the result is zero wherever it stores nothing), as X
// does in SDDMM. Empty: none.
std::string find_shared_structure(const ast::Spec& spec, const Config& config);

// `list_output`: an assembled blocked output's entries are listed and packed into its blocks
// (sparse::SparseBuffer::listed_blocks) whatever the operands' blocks (lower_to_loops.h:
// NestRefusal::SharedBlocks, may_list_parts_into_blocks).
// `previous_apart` (with `list_output`): C_prev of `+=` is sparse::SparseBuffer::ordered_apart,
// its blocks planned after the other operands' (their block loops are the sum's).
// `apart` (with `list_output`): these operands are ordered_apart too (a union whose terms'
// storage orders conflict: each term a part of its own, in its own order).
sparse::Program build_sparse_ir(const ast::Spec& spec, const Config& config, bool list_output = false,
                                bool previous_apart = false, const std::set<std::string>& apart = {});

}  // namespace spgen
