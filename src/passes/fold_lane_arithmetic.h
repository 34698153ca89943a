// Stage II: index arithmetic that divides a position into groups and lanes folded away where
// the loops make the split plain. An interleaved ELL level (decompose's "interleave") reads
// slot s of parent position p at (p - first) / C * C * W + s * C + (p - first) % C; once a
// `tile` by C writes p = first + p_o * C + p_i (p_i in [0, C)), that is p_o * C * W + s * C +
// p_i, which a compiler loads contiguously across the lanes p_i (it cannot see through the
// division itself). Index quantities are non-negative, so truncating division is floor.
#pragma once

#include "ir/loop_ir.h"

namespace spgen {

void fold_lane_arithmetic(loops::LoweredFunc& func);

// `expr`, read at loop `at` inside `body` (the values declared and the loop ranges around it),
// folded the same way: a SELL slice's slot count, pos[(p - first) / C + 1] - pos[(p - first) /
// C], is the group's alone once a tile gives p = first + g * C + lane. `expr` itself if `at`
// is not in `body`.
loops::Expr fold_lane_arithmetic_at(const loops::Stmt& body, const loops::For* at, const loops::Expr& expr);

}  // namespace spgen
