// Pass 7: tidies declarations for readable output. A declaration that only copies another
// variable (`let pA0 = i`) is replaced by that variable, and declarations nobody reads (a
// coordinate the body never uses) are dropped, so kernels compile without unused-variable warnings.
#pragma once

#include "ir/loop_ir.h"

namespace spgen {

void simplify_declares(loops::LoweredFunc& func);

}  // namespace spgen
