// Which index variables of an output whose format the config leaves open the output is expected
// to hold sparsely, from the expression and the operands' formats (Scorch's output-format
// inference, weighing the fill): a product holds a coordinate only where each factor does, so
// one factor that stores the variable sparsely makes the term sparse along it; a sum holds the
// union of its terms, sparse only if every term is. A factor's sparse fibres count only where
// they are not unioned over a summed variable that nothing selects: `y(j) = A(i,j) * x(i)` sums
// A's rows over every i, which fills nearly every j (y dense), while SpGEMM's `A(i,k) * B(k,j)`
// unions only the rows of B that A's row i selects (C sparse).
#pragma once

#include <map>
#include <string>

#include "frontend/ast.h"
#include "frontend/config.h"

namespace spgen {

struct OutputFill {
  std::map<std::string, bool> sparse;         // by output index variable
  std::map<std::string, std::string> reason;  // a few words for each, for the generated header
};

OutputFill expected_fill(const ast::Spec& spec, const Config& config);

// The reasons in the output's mode order, for the header: "i: ...; j: ...".
std::string describe_fill(const ast::Spec& spec, const OutputFill& fill);

}  // namespace spgen
