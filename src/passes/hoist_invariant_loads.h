// Stage II cleanup (CPU), for kernels that read an array they also write (statements fused into
// one loop: the attention's m(i), written by one statement's row and read by the next's): a
// floating-point value read from such an array at an index a loop does not change is read once,
// before the loop. The C compiler cannot prove that the loop leaves it alone (OpenMP's outlined
// region drops the pointers' restrict), so it reloads it in every iteration and gives up
// vectorizing the loop (`E[p] = exp(S[p] - m[i])`: a scalar exp per entry). Only reads safe
// before a loop that might run no iteration move (passes/loop_invariance.h).
#pragma once

#include "ir/loop_ir.h"

namespace spgen {

void hoist_invariant_loads(loops::LoweredFunc& func);

}  // namespace spgen
