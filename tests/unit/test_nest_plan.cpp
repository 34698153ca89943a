// passes/nest_plan: each plan's stage I options, the operands a conflicting union orders apart,
// the lowering's refusals as data and the plan that answers each.
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "frontend/config.h"
#include "frontend/parser.h"
#include "passes/build_sparse_ir.h"
#include "passes/infer_loop_order.h"
#include "passes/lower_to_loops.h"
#include "passes/nest_plan.h"
#include "passes/place_sum_parts.h"

using spgen::NestPlan;

TEST_CASE("nest plans: the options each sets") {
  const std::set<std::string> apart = {"B"};
  auto options = [&](NestPlan plan, bool previous = false) { return spgen::options_for(plan, previous, apart); };
  spgen::StageOneOptions one = options(NestPlan::OneNest, true);
  CHECK(!one.list_output);
  CHECK(!one.previous_apart);
  CHECK(!one.union_apart);
  CHECK(one.apart.empty());
  CHECK(options(NestPlan::PreviousApart).previous_apart);  // C_prev apart whatever the spec says
  CHECK(options(NestPlan::TermsApartByGroups, true).apart == apart);
  CHECK(!options(NestPlan::TermsApartByGroups, true).union_apart);
  CHECK(options(NestPlan::TermsApartByGroups, true).previous_apart);
  CHECK(!options(NestPlan::TermsApartByGroups, false).previous_apart);
  CHECK(options(NestPlan::EveryTermApartOf).union_apart);
  CHECK(options(NestPlan::EveryTermApartOf).apart == apart);
  CHECK(options(NestPlan::EveryTermApart).union_apart);
  CHECK(options(NestPlan::EveryTermApart).apart.empty());
  CHECK(options(NestPlan::PartsListed).parts_listed);
  CHECK(!options(NestPlan::PartsListedIntoBlocks).parts_listed);
  CHECK(options(NestPlan::UnionPartsListed).union_apart);
  CHECK(!options(NestPlan::UnionPartsListed, true).previous_apart);
  // Every plan but one nest lists the output's entries.
  for (NestPlan plan : {NestPlan::PreviousApart, NestPlan::TermsApartByGroups, NestPlan::EveryTermApartOf, NestPlan::PartsListedIntoBlocks,
                        NestPlan::PartsListed, NestPlan::UnionPartsListed, NestPlan::EveryTermApart})
    CHECK(options(plan).list_output);
}

TEST_CASE("nest plans: a union whose terms' orders conflict orders apart only the operands that must") {
  auto apart_of = [](const std::string& text, const std::string& config_text) {
    spgen::ast::Spec spec = spgen::parse_spec("t.spg", text);
    spgen::Config config = spgen::read_config("c.json", config_text, spec, "t");
    return spgen::operands_apart(spec, config);
  };
  // B csc conflicts with A csr; D csr agrees with A and joins it again.
  CHECK(apart_of("C(i,j) = A(i,j) + B(i,j) + D(i,j)",
                 R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csc"}, "D": {"format": "csr"}, "C": {"format": "csr"}}})") ==
        std::set<std::string>{"B"});
  CHECK(spgen::apart_by_groups(spgen::parse_spec("t.spg", "C(i,j) = A(i,k) * B(k,j) + D(i,j)")));
  CHECK(!spgen::apart_by_groups(spgen::parse_spec("t.spg", "C(i,j) = A(i,j) + B(i,j)")));
}

namespace {

// Stage I of `text` under `config_text` as `plan` builds it (lower_iteration's stage_one, less
// the schedule).
struct StageOne {
  spgen::ast::Spec spec;
  spgen::Config config;
  spgen::sparse::Program program;
};
StageOne stage_one(const std::string& text, const std::string& config_text, NestPlan plan) {
  StageOne s;
  s.spec = spgen::parse_spec("t.spg", text);
  s.config = spgen::read_config("c.json", config_text, s.spec, "t");
  const spgen::StageOneOptions options = spgen::options_for(plan, false);
  s.program = spgen::build_sparse_ir(s.spec, s.config, options.list_output, options.previous_apart, options.apart);
  spgen::infer_loop_order(s.program, s.config);
  spgen::place_sum_parts(s.program, s.spec, options.union_apart);
  if (options.parts_listed) s.program.buffers.front().parts_listed = true;
  return s;
}

// The kind of refusal of the compute phase's nest, or "none".
std::string refusal_of(const StageOne& s) {
  const spgen::LoweredNest nest = spgen::lower_to_loops(s.program, s.config);
  if (!nest.refusal) return "none";
  CHECK(nest.func.body == nullptr);  // a refused lowering gives no nest
  CHECK(!nest.refusal->message.empty());
  switch (nest.refusal->kind) {
    case spgen::NestRefusal::Kind::SharedBlocks: return "shared blocks";
    case spgen::NestRefusal::Kind::UnionNest: return "union nest";
    case spgen::NestRefusal::Kind::LoopOrder: return "loop order";
  }
  return "?";
}

const char* const kProductPlusBlocked = "C(i,j) = A(i,k) * B(k,j) + D(i,j)";
const char* const kBlockedUnion = "C(i,j) = A(i,j) + B(i,j)";
const char* const kDenseProductBsrBias =
    R"({"tensors": {"A": {"format": "dense"}, "B": {"format": "dense"}, "D": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 2]}}})";
const char* const kDenseProductBsrBiasIntoCsr =
    R"({"tensors": {"A": {"format": "dense"}, "B": {"format": "dense"}, "D": {"format": "bsr", "block": [2, 2]}, "C": {"format": "csr"}}})";
// A in compressed rows above column blocks of 2, B dcsr, C stored as A is.
const char* const kBlocksPlusDcsr =
    R"({"tensors": {"A": {"format": {"levels": ["compressed", {"kind": "compressed", "floordiv": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 1]}},
                    "B": {"format": "dcsr"},
                    "C": {"format": {"levels": ["compressed", {"kind": "compressed", "floordiv": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 1]}}}})";

}  // namespace

TEST_CASE("nest plans: the lowering refuses a plan as data, and the plan that answers it lowers") {
  // D bsr splits the shared loops into blocks that the product does not read: the parts list
  // into C's blocks instead.
  StageOne into_blocks = stage_one(kProductPlusBlocked, kDenseProductBsrBias, NestPlan::OneNest);
  CHECK(refusal_of(into_blocks) == "shared blocks");
  CHECK(refusal_of(stage_one(kProductPlusBlocked, kDenseProductBsrBias, NestPlan::PartsListedIntoBlocks)) == "none");
  // The loop over C's rows would visit only A's: B's entries elsewhere cannot follow it.
  CHECK(refusal_of(stage_one(kBlockedUnion, kBlocksPlusDcsr, NestPlan::OneNest)) == "union nest");
  CHECK(refusal_of(stage_one(kBlockedUnion, kBlocksPlusDcsr, NestPlan::UnionPartsListed)) == "none");
}

TEST_CASE("nest plans: the plan that answers each refusal") {
  using Kind = spgen::NestRefusal::Kind;
  auto after = [](const StageOne& s, Kind kind, NestPlan tried) {
    return spgen::plan_after_refusal({kind, "refused"}, tried, s.program, s.spec);
  };
  const StageOne into_blocks = stage_one(kProductPlusBlocked, kDenseProductBsrBias, NestPlan::OneNest);
  CHECK(after(into_blocks, Kind::SharedBlocks, NestPlan::OneNest) == NestPlan::PartsListedIntoBlocks);
  CHECK(after(into_blocks, Kind::SharedBlocks, NestPlan::PreviousApart) == NestPlan::PartsListedIntoBlocks);
  // A plan that answered a refusal is not answered again.
  CHECK(!after(into_blocks, Kind::SharedBlocks, NestPlan::PartsListedIntoBlocks));
  CHECK(!after(into_blocks, Kind::SharedBlocks, NestPlan::EveryTermApart));
  // An unblocked output: each part lists its entries.
  const StageOne into_csr = stage_one(kProductPlusBlocked, kDenseProductBsrBiasIntoCsr, NestPlan::OneNest);
  CHECK(after(into_csr, Kind::SharedBlocks, NestPlan::OneNest) == NestPlan::PartsListed);
  // A union (no added parts) into an assembled output: a part per term.
  const StageOne union_parts = stage_one(kBlockedUnion, kBlocksPlusDcsr, NestPlan::OneNest);
  CHECK(after(union_parts, Kind::UnionNest, NestPlan::OneNest) == NestPlan::UnionPartsListed);
  CHECK(!after(union_parts, Kind::UnionNest, NestPlan::UnionPartsListed));
  // A union's terms into a dense output: no plan; the caller gives each term a nest.
  const StageOne dense_union = stage_one(kBlockedUnion, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "dcsr"}, "C": {"format": "dense"}}})",
                                         NestPlan::OneNest);
  CHECK(!after(dense_union, Kind::UnionNest, NestPlan::OneNest));
  CHECK(!after(dense_union, Kind::SharedBlocks, NestPlan::OneNest));  // a dense output lists nothing
  // A listed part's own loop-order conflict is never answered by another plan.
  CHECK(!after(into_blocks, Kind::LoopOrder, NestPlan::OneNest));
  // The plans stage I starts from, and those that answer refusals.
  CHECK(spgen::is_first_plan(NestPlan::TermsApartByGroups));
  CHECK(!spgen::is_first_plan(NestPlan::PartsListed));
}
