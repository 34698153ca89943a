// Pass 5: stage I → stage II. Each iterator becomes a loop: a position loop over the compressed
// level that drives it, or a dense loop over its dimension. Dense levels are reached by
// coordinate arithmetic, reductions that sit inside all output loops go into a scalar, and a
// dense output is zeroed first only when some of its entries would otherwise go unwritten.
#pragma once

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

// A sparse output that does not share an input's structure is built in two phases: `Assemble`
// counts the entries under each parent position and prefix-sums them into the output's pos
// array; `Compute` then appends coordinates and values through a cursor per parent.
enum class LoweringPhase { Compute, Assemble };

// True when the output's structure is built by the kernels (an assemble phase is needed).
bool output_is_assembled(const sparse::Program& program);

loops::LoweredFunc lower_to_loops(const sparse::Program& program, const Config& config,
                                  LoweringPhase phase = LoweringPhase::Compute);

loops::ScalarType value_scalar_type(ValueType type);
loops::ScalarType index_scalar_type(IndexType type);

}  // namespace spgen
