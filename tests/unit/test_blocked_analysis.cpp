// passes/lower/blocked_analysis: questions about blocked operands, asked of a program and loop
// plans without a lowering.
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "passes/lower/blocked_analysis.h"

using namespace spgen_test;
using spgen::lowering::BlockedAnalysis;
using spgen::lowering::LoopKind;
using spgen::lowering::LoopPlan;

TEST_CASE("blocked analysis: operands blocked alike, read, stored, and an output's entries a block at a time") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) * B(i,j) + D(i,j)",
                                 R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [2, 2]},
                                     "D": {"format": "csr"}, "C": {"format": "dense"}}})");
  const std::vector<LoopPlan> no_plans;
  BlockedAnalysis a(c.program, no_plans, false, nullptr);
  const std::string blocker = c.program.blocked_vars.front().tensor;
  CHECK(blocker == "A");
  CHECK(a.blocked_alike("A") == std::vector<std::string>{"A", "B"});
  CHECK(a.reads("D"));
  CHECK(!a.reads("E"));
  CHECK(a.blocked_otherwise({"A", "B"}).empty());
  for (const spgen::sparse::Axis& axis : c.program.axes)
    if (axis.tensor == "D" && axis.level == 1) CHECK(a.stored_as(axis) == "compressed");
  CHECK(spgen::lowering::names({"A", "B", "D"}) == "A, B and D");
  CHECK(spgen::lowering::names({"A"}) == "A");
}

TEST_CASE("blocked analysis: an unblocked sparse output beside a blocked operand gets its entries a block at a time") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)",
                                 R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "C": {"format": "csr"}}})");
  const std::vector<LoopPlan> no_plans;
  BlockedAnalysis a(c.program, no_plans, true, nullptr);
  CHECK(c.program.output().shares_structure_with.empty());
  CHECK(a.blocked_entries_reason(c.program.output()) == "A splits index i into blocks, so its entries arrive a block at a time");
  // An output blocked as the operand is appended in its block loops: no reason.
  spgen::Compilation alike = compile("C(i,j) = A(i,j) + B(i,j)",
                                     R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [2, 2]},
                                         "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(BlockedAnalysis(alike.program, no_plans, true, nullptr).blocked_entries_reason(alike.program.output()).empty());
}

TEST_CASE("blocked analysis: a loop visits every coordinate where it is dense or merges with a dense term") {
  spgen::Compilation c = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}})");
  std::vector<LoopPlan> plans(3);
  plans[0].kind = LoopKind::Dense;
  plans[1].kind = LoopKind::Driven;
  plans[2].kind = LoopKind::Merge;
  plans[2].dense_universe = true;
  BlockedAnalysis a(c.program, plans, false, nullptr);
  CHECK(a.visits_every_coordinate(-1));  // (no loop: the coordinate is fixed)
  CHECK(a.visits_every_coordinate(0));
  CHECK(!a.visits_every_coordinate(1));
  CHECK(a.visits_every_coordinate(2));
  plans[2].dense_universe = false;
  CHECK(!a.visits_every_coordinate(2));
}
