// `auto`'s factorization of one statement (issue #22; TACO's precompute, Scorch's contraction
// order): a product of three operands, one or two of them sparse, costs as one nest the points
// it visits (RGCN's `Y(i,l) = A(r,i,j) * X(j,k) * W(r,k,l)`: A's entries times K·L; `y(i) =
// A(i,j) * B(j,k) * x(k)`: A's entries times B's entries per row). Contracting a pair first, over
// the indices only they have, into a dense temporary T costs that pair's points plus T's with the
// third (`T(r,i,k) = A(r,i,j) * X(j,k)`, then `Y(i,l) = T(r,i,k) * W(r,k,l)`: nnz·K + R·N·K·L;
// `T(j) = B(j,k) * x(k)`, then `y(i) = T(j) * A(i,j)`: two SpMVs). Where the sparse operands'
// statistics are known (spgen run's inputs, --stats), `auto` takes the cheapest form
// (docs/spec.md).
#pragma once

#include <optional>
#include <string>

#include "frontend/ast.h"
#include "frontend/config.h"

namespace spgen {

struct Factoring {
  std::string spec_text;    // the two statements
  std::string config_text;  // the config, with the temporary and its format
  std::string reason;       // the costs compared, for the header
};

// Nothing where the statement is not such a product into a dense output, `auto` does not schedule
// it, or the config says `"factor": false`; unless it says `"factor": true` (then the cheapest
// two statements, sizes assumed where unknown), also nothing where a sparse operand's statistics
// are unknown or one nest costs no more.
std::optional<Factoring> factor_product(const ast::Spec& spec, const Config& config, const std::string& config_text);

}  // namespace spgen
