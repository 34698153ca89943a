// `auto`'s factorization of one statement (issue #22; TACO's precompute, Scorch's contraction
// order): a product of one sparse operand S and two dense ones costs, as one nest, S's entries
// times the sizes of every index only the dense operands have (RGCN's `Y(i,l) = A(r,i,j) *
// X(j,k) * W(r,k,l)`: nnz·K·L). Contracting S with one dense operand first, over the indices only
// they share, into a dense temporary T costs S's entries times that operand's own sizes, plus
// the dense product of T with the other (`T(r,i,k) = A(r,i,j) * X(j,k)`, then `Y(i,l) = T(r,i,k)
// * W(r,k,l)`: nnz·K + R·N·K·L). Where S's statistics are known (spgen run's inputs, --stats),
// `auto` compares the two and rewrites the statement into the cheaper form's two statements
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

// Nothing where the statement is not such a product, `auto` does not schedule it, or the config
// says `"factor": false`; unless it says `"factor": true` (then the cheapest form, sizes assumed
// where unknown), also nothing where S's statistics are unknown or one nest costs no more.
std::optional<Factoring> factor_product(const ast::Spec& spec, const Config& config, const std::string& config_text);

}  // namespace spgen
