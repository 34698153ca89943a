// TACO's scoped reductions: a right-hand side whose top-level terms sum over different index
// variables (`Y(i,k) = A(i,j) * X(j,k) + B(i,k)`: j for the first term, none for the second) is
// a sum of kernels, one per set of summed variables. Each part is a spec of its own
// (`Y(i,k) = A(i,j) * X(j,k)`, then `Y(i,k) += B(i,k)`) that lower.cpp lowers and schedules on
// its own; an executor (passes/build_executor.h) calls them in turn.
#pragma once

#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/config.h"

namespace spgen {

struct SumPart {
  std::string name;                 // "part1": how ops name it ("part"), and its function NAME_part1
  std::vector<std::string> summed;  // the index variables its terms sum over, in spec order
  std::vector<ast::SignedTerm> terms;  // its top-level terms of the spec, in order
  ast::Spec spec;                   // its terms; `+=` after the first part (the first keeps the user's `=` or `+=`)
  Config config;                    // the kernel's, named NAME_part1, with the formats of its tensors and the ops that schedule it

  // One line for comments and --emit headings: "y(i) += b(i) (no summed index)".
  std::string description() const;
};

// The parts, in order of their first term; empty when every term sums over the same variables
// (the kernel is one loop nest). A part gets every op without a "part" and the ops that name it,
// less those one of its own replaces (schedules_part, as for a decomposition). An output format the config leaves to the operands is inferred
// from the whole spec and set in `config`. Empty too when the output is sparse and not in one
// input's structure in every part: the kernel assembles it, which only one loop nest can (passes/
// place_sum_parts.h places the parts in it; `config` is left as it came).
std::vector<SumPart> split_sum(const ast::Spec& spec, Config& config);

// A part per term (ast::distributed_terms: products of sums multiplied out), into a dense output
// whose terms cannot share one loop nest (their operands' storage orders conflict, or a term
// without a blocked operand cannot follow its blocks): each term is a nest of its own in its own
// loop order, the first writing the output, the others adding into it in place. Empty where the
// output is not dense or there are fewer than two terms.
std::vector<SumPart> split_terms(const ast::Spec& spec, Config& config);

}  // namespace spgen
