// Independent reference evaluator of TACO-style index notation, used to check generated kernels.
// It has its own parser and shares nothing with src/ on purpose.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ref_tensor.h"

namespace spgen_ref {

// Evaluates one assignment such as "C(i,k) = A(i,j) * B(j,k)" or "y(i) += A(i,j) * x(j)".
//
// Language: `=` or `+=`; operators + - * /, unary minus, parentheses, numeric literals, function
// calls; '#' starts a comment running to the end of the line; a scalar is written `a` or `a()`.
//   primary := NUMBER | access | '(' expr ')' | F '(' expr ')' | ('max' | 'min') '(' expr ',' expr ')'
// with F one of exp, log, sqrt, abs. A name followed by '(' is a call when it is one of these six,
// otherwise a tensor access; the output may not bear one of these names. A wrong number of
// arguments is a malformed spec.
// The whole right-hand side may instead be an explicit reduction:
//   rhs := ('sum' | 'max' | 'min') '(' IDENT (',' IDENT)* ':' expr ')' | expr
// (identifiers and a colon: `max(j, k: e)`; `max(a, b)` is the function). Anywhere else, or
// followed by anything, it is a malformed spec; so is a listed variable that is repeated, is an
// index of the output or does not occur in e. (A tensor may still be named `sum`.)
// Semantics (einsum): out(lhs vars) = sum over the variables that are only on the right, in
// double precision; a missing entry of an input is 0. Products are distributed over + and -
// first, and each product term is summed over its own variables that the output lacks (TACO's
// scoped reductions: `y(i) = A(i,j)*x(j) + b(i)` adds b(i) once). `+=` adds to *initial_output
// (or to 0); `=` ignores it.
// Function calls (exp, log, sqrt, abs as std::exp/log/sqrt/fabs, max and min as std::fmax/fmin):
//  - A call's argument is evaluated pointwise over the index variables it uses; nothing is summed
//    inside a call (sums stay outermost): `y(i) = exp(A(i,j)*x(j))` is sum_j exp(A(i,j) x(j)).
//  - A call has a value only at its points: those its argument visits, by the rule `*` intersects
//    the stored entries (an explicit zero is stored), `+` and `-` unite them (broadcasting over
//    variables a side lacks), a constant term or a fully stored input is everywhere, a quotient
//    has its numerator's points. max and min take the union of their arguments' points, but an
//    argument that reads no tensor adds none: `max(x(i), 0)` only where x is stored. A call that
//    reads no tensor is a constant (`exp(0)` is 1).
//  - At a point, the value is the function of its arguments' values, a part without a point
//    there reading 0 (`max(A(i,j), B(i,j))` where only B is stored is max(0, B(i,j))).
//  - A product term is evaluated only where each call in it has a point, whether the call is a
//    factor or inside a denominator (so `1/(1+exp(-x(i)))` only where x is stored); elsewhere it
//    adds nothing, even where another factor is Inf or NaN. With calls, every input's stored
//    entries count exactly; a sparse input is never taken as stored everywhere.
// Explicit reductions:
//  - `out(...) = sum(j: e)` (or `+=`) is exactly `out(...) = e`: the listed variables need not be the
//    only summed ones.
//  - `out(...) = max(j, k: e)` / `min(...)`: the listed variables must be exactly e's variables that
//    the output lacks, every top-level term of e (an operand of its outermost + and -) must use
//    them all, and `+=` is not allowed (else malformed). For each output coordinate, the result is
//    std::fmax (fmin) of e's values over the points e visits with the output's and the listed
//    variables bound, e evaluated pointwise as a call's argument is (points and values as above:
//    `*` intersects the stored entries, explicit zeros included, `+`/`-` unite with an absent part
//    reading 0, a fully stored input and a constant are everywhere, a call is present at its
//    points): `m(i) = max(j: S(i,j))` is the largest stored entry of row i, negative if they all
//    are. Where e visits nothing the result is -inf (max) or +inf (min). The result holds every
//    coordinate of the output's index space, row-major, whatever the inputs.
// Sizes of index variables come from the inputs (they must agree), then from initial_output,
// then from extra_dims (they must agree too). An input of order n+k whose last k dims are 1 may
// be used with n indices (so an n x 1 Matrix Market file works as a vector).
// The result holds every entry the evaluation reached, sorted, possibly with explicit zeros (for
// max and min: every output coordinate).
// Throws std::runtime_error on a malformed spec ("spec:line:column: ..."), a missing input or
// inconsistent sizes; std::invalid_argument on an input with coordinates outside its dims.
Tensor evaluate(const std::string& spec_text, const std::map<std::string, Tensor>& inputs,
                const std::map<std::string, int64_t>& extra_dims = {}, const Tensor* initial_output = nullptr);

// The same evaluation with every input and coefficient replaced by its absolute value (and `-`
// by `+`): per output entry, the sum of the magnitudes of what was added, which bounds the
// rounding error a float sum of those terms can make in any order (|error| <= n u sum|terms|).
// A function call counts as |f(argument)|, its argument evaluated on the real values.
// Entries match evaluate()'s one for one. (A divisor is evaluated on absolute values too, which
// bounds nothing where it subtracts: such specs should not rely on it.) For a max or min
// reduction: per output coordinate, the largest such magnitude of e at a point it visits (the
// scale of the values compared), 0 where it visits none.
Tensor evaluate_magnitude(const std::string& spec_text, const std::map<std::string, Tensor>& inputs,
                          const std::map<std::string, int64_t>& extra_dims = {});

struct Comparison {
    bool ok = false;
    std::string message;  // empty when ok
};

// Compares dense-in-meaning: an entry missing on one side counts as 0; duplicates are summed.
// An entry passes when |got - want| <= atol + rtol * |want|; NaN or Inf in `got` fails, except
// that a wanted +Inf or -Inf (a max or min over no point) is matched by exactly the same infinity
// and by nothing else.
// Dims must be equal once trailing dims of 1 are dropped (a vector read back from an n x 1 .mtx
// file equals the vector). The message names up to five failing coordinates (1-based) and the
// number of failures.
Comparison compare(const Tensor& got, const Tensor& want, double rtol, double atol);
// The same, each entry also allowed `mtol` times its entry of `magnitude` (evaluate_magnitude's
// result for the same inputs): for float kernels on inputs whose sums cancel (a stiffness matrix
// such as bcsstk16), where rtol of the result alone asks more than float can give.
Comparison compare(const Tensor& got, const Tensor& want, double rtol, double atol, const Tensor& magnitude, double mtol);

}  // namespace spgen_ref
