// What the generated files say of a compilation besides its IR (codegen/generation_context.h):
// where it came from, each tensor's format and why, the sizes fixed, and the schedule with the
// reasons `auto` gave.
#pragma once

#include "codegen/generation_context.h"
#include "lower.h"

namespace spgen {

GenerationContext make_context(const Compilation& c, const CompileInput& input);

}  // namespace spgen
