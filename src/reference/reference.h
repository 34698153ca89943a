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
// Language: `=` or `+=`; operators + - * /, unary minus, parentheses, numeric literals; '#' starts
// a comment running to the end of the line; a scalar is written `a` or `a()`.
// Semantics (einsum): out(lhs vars) = sum over every variable that is only on the right of the
// whole right-hand side, in double precision; a missing entry of an input is 0. To stay
// unambiguous, a summed variable must appear in every term once products are distributed over
// + and - (so `y(i) = A(i,j)*x(j) + b(i)` is rejected). `+=` adds to *initial_output (or to 0);
// `=` ignores it.
// Sizes of index variables come from the inputs (they must agree), then from initial_output,
// then from extra_dims (they must agree too). An input of order n+k whose last k dims are 1 may
// be used with n indices (so an n x 1 Matrix Market file works as a vector).
// The result holds every entry the evaluation reached, sorted, possibly with explicit zeros.
// Throws std::runtime_error on a malformed spec ("spec:line:column: ..."), a missing input or
// inconsistent sizes; std::invalid_argument on an input with coordinates outside its dims.
Tensor evaluate(const std::string& spec_text, const std::map<std::string, Tensor>& inputs,
                const std::map<std::string, int64_t>& extra_dims = {}, const Tensor* initial_output = nullptr);

// The same evaluation with every input and coefficient replaced by its absolute value (and `-`
// by `+`): per output entry, the sum of the magnitudes of what was added, which bounds the
// rounding error a float sum of those terms can make in any order (|error| <= n u sum|terms|).
// Entries match evaluate()'s one for one. (A divisor is evaluated on absolute values too, which
// bounds nothing where it subtracts: such specs should not rely on it.)
Tensor evaluate_magnitude(const std::string& spec_text, const std::map<std::string, Tensor>& inputs,
                          const std::map<std::string, int64_t>& extra_dims = {});

struct Comparison {
    bool ok = false;
    std::string message;  // empty when ok
};

// Compares dense-in-meaning: an entry missing on one side counts as 0; duplicates are summed.
// An entry passes when |got - want| <= atol + rtol * |want|; NaN or Inf in `got` always fails.
// Dims must be equal once trailing dims of 1 are dropped (a vector read back from an n x 1 .mtx
// file equals the vector). The message names up to five failing coordinates (1-based) and the
// number of failures.
Comparison compare(const Tensor& got, const Tensor& want, double rtol, double atol);
// The same, each entry also allowed `mtol` times its entry of `magnitude` (evaluate_magnitude's
// result for the same inputs): for float kernels on inputs whose sums cancel (a stiffness matrix
// such as bcsstk16), where rtol of the result alone asks more than float can give.
Comparison compare(const Tensor& got, const Tensor& want, double rtol, double atol, const Tensor& magnitude, double mtol);

}  // namespace spgen_ref
