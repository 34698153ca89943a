// Stage II cleanup (CPU): loop unswitching. `for v { declarations; if (c) S }`, where `c` reads
// no array and neither `v` nor the loop's own declarations, becomes `if (c) for v { declarations;
// S }`. An ELL slot's padding test (`0 <= j`) then sits outside the column loop of a register
// tile, whose body becomes straight-line code that passes/explicit_vectors can turn into vectors.
#pragma once

#include "ir/loop_ir.h"

namespace spgen {

void unswitch_loops(loops::LoweredFunc& func);

}  // namespace spgen
