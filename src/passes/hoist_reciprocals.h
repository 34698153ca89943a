// Stage II cleanup (CPU): a floating-point division whose divisor a loop does not change becomes a
// multiplication by its reciprocal, computed once before the loop (as far out as the divisor
// stays the same, never out of a parallel loop). `O(i,d) = E(i,j) * V(j,d) / l(i)` then divides
// once per row instead of once per entry and column: a division costs ten times a multiplication,
// and the compiler may not make this rewrite itself (it rounds differently: at most one unit in
// the last place more).
// A constant divisor is left to the compiler. Only divisors safe to evaluate where the loop might run no iteration are hoisted: those read
// no array, or read one outside any test inside the loop (an If, a Select, a While), since such
// a test may guard the read.
#pragma once

#include "ir/loop_ir.h"

namespace spgen {

void hoist_reciprocals(loops::LoweredFunc& func);

}  // namespace spgen
