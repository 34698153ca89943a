// The nest plans: how stage I is built so that the lowering can give the iteration loop nests.
// One nest serves most kernels (OneNest). Where the operands' storage orders conflict (checked
// on stage I before lowering), a plan orders C_prev or terms apart. Where the lowering's plan
// phase refuses a plan (a NestRefusal, data: a blocked operand whose blocks the sum's parts or
// a union's terms cannot share), plan_after_refusal names the plan that answers it, and
// lower.cpp's lower_iteration builds stage I by that one. Each plan is one set of options of
// build_sparse_ir and place_sum_parts.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "frontend/ast.h"
#include "frontend/config.h"
#include "ir/sparse_ir.h"
#include "passes/lower_to_loops.h"

namespace spgen {

enum class NestPlan {
  OneNest,                // one nest for the whole iteration
  PreviousApart,          // `+=` whose C_prev's storage order conflicts: C_prev a part alone, in its own order
  TermsApartByGroups,     // a union whose terms' orders conflict: the operands apart, each group of terms a part
  EveryTermApartOf,       // ... every term a part of its own
  PartsListedIntoBlocks,  // the parts of a sum cannot share a blocked output's nest: each lists into its blocks
  PartsListed,            // ... an unblocked output beside blocked operands: each part lists its entries
  UnionPartsListed,       // a union's terms cannot share one nest beside a blocked operand: each term a part
  EveryTermApart,         // a part's own terms cannot share its nest: every term a part, C_prev's in its own order
};

// What a plan sets: build_sparse_ir's `list_output`, `previous_apart` and `apart`,
// place_sum_parts' `union_apart`, and whether every part of the (unblocked) output lists its
// entries (SparseBuffer::parts_listed).
struct StageOneOptions {
  bool list_output = false;
  bool previous_apart = false;
  bool union_apart = false;
  bool parts_listed = false;
  std::set<std::string> apart;
};

// Whether a plan is one stage I starts from (one nest, or one after a loop-order conflict),
// rather than one that answers a refusal of the lowering.
bool is_first_plan(NestPlan plan);

// The plan that answers `refusal` of `program`, which `tried` built from `spec`, or none (the
// refusal is then the caller's: a union's one nest may still be a nest per term, else it is the
// user's error):
//   SharedBlocks of a first plan:  the parts list into the output's blocks, where it is blocked
//                                  (PartsListedIntoBlocks), or list its entries, where they
//                                  are added parts into an assembled output (PartsListed);
//   UnionNest of a first plan:     a part per term listing its entries (UnionPartsListed),
//                                  where the union has no added parts; else as below;
//   UnionNest of a first or listed plan: every term a part (EveryTermApart), where the parts'
//                                  own terms beside a blocked operand give more parts.
std::optional<NestPlan> plan_after_refusal(const NestRefusal& refusal, NestPlan tried, const sparse::Program& program,
                                           const ast::Spec& spec);

// `has_previous_output`: the spec is `+=` read as C_prev (read_previous_output); `apart`: the
// operands ordered apart (operands_apart), for the plans that take them.
StageOneOptions options_for(NestPlan plan, bool has_previous_output, const std::set<std::string>& apart = {});

// After a loop-order conflict of a union, the operands ordered apart: those the first term
// (not C_prev's) does not read, less those whose order agrees with the others' (in spec order),
// so that as few nests as possible order their own loops.
std::set<std::string> operands_apart(const ast::Spec& spec, const Config& config);

// Whether the union apart goes by groups of terms that sum over the same indices (else every
// term is a part of its own).
bool apart_by_groups(const ast::Spec& spec);

}  // namespace spgen
