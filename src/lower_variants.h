// Steps 5d and 5e of compile(): a kernel's variants per size and per row length (lower.cpp).
#pragma once

#include <functional>

#include "lower.h"

namespace spgen {

// Stages 1b-5 of one kernel (lower.cpp's lower_kernel), which each variant runs again.
using LowerKernel = std::function<void(Compilation&)>;

// 5d. A kernel compiled for each listed size of one index variable ("specialize", or `auto`'s
// widths), and `c.func` becomes the entry point choosing among them; the generic kernel runs any
// other size. `read`: the spec and config as read, before lowering changed them.
void add_size_variants(Compilation& c, const Compilation& read, const LowerKernel& lower_kernel);

// 5e. Kernels scheduled otherwise for rows of at least so many stored entries on average
// ("variants"), chosen on entry by pos[dim] >= N * dim.
void add_row_length_variants(Compilation& c, const Compilation& read, const LowerKernel& lower_kernel);

}  // namespace spgen
