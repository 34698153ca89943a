// An output with a config "structure" (the output has exactly the stored entries of an input S,
// and the right-hand side is evaluated there only), in the reference's own terms: the spec with
// its right-hand side multiplied by a pattern of S, an input that is 1 at each of S's entries.
// Products distribute over the sum before each term is scoped, so `Y = P * (X*A*B + b)` still adds
// b once. Shares nothing with src/ but this directory.
#pragma once

#include <map>
#include <string>

#include "ref_tensor.h"

namespace spgen_ref {

// `OUT(idx) = pattern(idx) * (rhs)` for the spec `OUT(idx) = rhs` (comments dropped); throws
// std::runtime_error where the text has no `=`.
std::string restricted_to_entries(const std::string& spec_text, const std::string& pattern);

// 1 at each distinct coordinate `tensor` stores (explicit zeros included).
Tensor pattern_of(const Tensor& tensor);

// The spec to evaluate for an output whose structure is the input `structure` (none: `spec_text`
// as it is): restricted_to_entries with that input's pattern, which joins `inputs` as
// "spgen_structure".
std::string on_entries_of(const std::string& spec_text, const std::string& structure, std::map<std::string, Tensor>& inputs);

}  // namespace spgen_ref
