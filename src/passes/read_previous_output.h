// Pass 1c: `+=` into a sparse output that the kernel assembles. Its structure is built anew from
// the operands, so the kernel cannot add into the arrays in place: it reads the output's value
// before the call as one more input, `C_prev`, stored in C's format, and computes
// `C(i,j) = C_prev(i,j) + (right-hand side)`, a union like any sparse add.
#pragma once

#include "frontend/ast.h"
#include "frontend/config.h"

namespace spgen {

// Rewrites `spec` (and gives the new input C's format in `config`) when its `+=` output is
// assembled; leaves it alone otherwise (dense outputs and outputs that share an input's
// structure add into their values in place).
void read_previous_output(ast::Spec& spec, Config& config);

}  // namespace spgen
