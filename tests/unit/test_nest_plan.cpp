// passes/nest_plan: each plan's stage I options, and the operands a conflicting union orders apart.
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "frontend/config.h"
#include "frontend/parser.h"
#include "passes/nest_plan.h"

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
