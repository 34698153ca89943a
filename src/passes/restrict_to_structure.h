// Pass 1a: an output with a "structure" (config: `"structure": "S"`) has exactly S's stored
// entries, and the right-hand side is evaluated there only. Each top-level term t becomes
// `pattern(S(i,j)) * t`: a factor that is 1 where S stores an entry, so the iteration
// intersects S's entries (the same rule as any product) and the output shares S's structure as
// an SDDMM's does. `E(i,j) = exp(S(i,j) - m(i))` then computes exp on S's entries only, although
// the call alone would visit every j (m is dense).
#pragma once

#include "frontend/ast.h"
#include "frontend/config.h"

namespace spgen {

void restrict_to_structure(ast::Spec& spec, const Config& config);

}  // namespace spgen
