// Pass 3b: a sum whose terms sum over different index variables (TACO's scoped sums) into a
// sparse output the kernel assembles, which only one loop nest can build (split_sum leaves such a
// sum whole): `C(i,j) = A(i,k) * B(k,j) + D(i,j)` with C csr, or SpGEMM's `+=` read as
// `C = C_prev + A * B`. The terms whose summed loop comes first stay the iteration's body; the
// others become added parts, which lower_to_loops places inside the loops outside the first
// summed one, after the body's loops there, adding into the same row workspace or scalar sum.
#pragma once

#include "frontend/ast.h"
#include "ir/sparse_ir.h"

namespace spgen {

// Leaves the program alone when every term sums over the same variables, or the output is dense
// or shares an input's structure (split_sum gives those a loop nest per part).
// `union_apart`: a sum whose terms all sum alike (a union) beside a blocked operand, whose terms
// cannot share one nest (NestRefusal::UnionNest, may_list_union_parts): each top-level term becomes a part of its
// own, listing the output's entries in a nest of its own.
void place_sum_parts(sparse::Program& program, const ast::Spec& spec, bool union_apart = false);

}  // namespace spgen
