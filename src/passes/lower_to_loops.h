// Pass 5: stage I → stage II. Each iterator becomes a loop: a position loop over the compressed
// level that drives it, or a dense loop over its dimension. Dense levels are reached by
// coordinate arithmetic, reductions that sit inside all output loops go into a scalar, and a
// dense output is zeroed first only when some of its entries would otherwise go unwritten.
#pragma once

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

loops::LoweredFunc lower_to_loops(const sparse::Program& program, const Config& config);

loops::ScalarType value_scalar_type(ValueType type);
loops::ScalarType index_scalar_type(IndexType type);

}  // namespace spgen
