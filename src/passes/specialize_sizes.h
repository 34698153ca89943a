// Pass 5c: specializes a kernel for the sizes its config fixes (`"sizes": {"k": 32}`, TACO's
// `bound(..., MaxExact)`). Every read of a fixed size parameter becomes the constant; integer
// arithmetic on constants is folded, through the immutable declarations it defines (a tile's
// group count), and loops left with no iteration (the remainder of a tile that divides the
// size) are dropped. The C compiler then sees constant trip counts, so it unrolls and vectorizes
// dot products and row tiles fully. The size parameters stay in the ABI: the function records
// them in `fixed_sizes`, and the backends check them on entry.
#pragma once

#include <map>
#include <string>

#include "ir/loop_ir.h"

namespace spgen {

// `sizes`: index variable -> its fixed size. Size parameters of other index variables are left
// alone; a function without any is unchanged. Idempotent.
void specialize_sizes(loops::LoweredFunc& func, const std::map<std::string, int64_t>& sizes);

}  // namespace spgen
