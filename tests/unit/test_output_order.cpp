// passes/lower/runs and output_order: COO's runs, and the order an assembled output's entries
// arrive in, asked of the program, config and loop plans without a lowering.
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "passes/lower/output_order.h"
#include "passes/lower/runs.h"

using namespace spgen_test;
using spgen::lowering::LoopPlan;
using spgen::lowering::OutputOrder;
using spgen::lowering::Runs;

TEST_CASE("runs: COO levels, the last level, and which loops visit a coordinate once per entry") {
  spgen::Compilation c = compile("y(i) = A(i,j) * x(j)", R"({"tensors": {"A": {"format": "coo"}}})");
  const spgen::sparse::SparseBuffer& a = c.program.buffer("A");
  const spgen::sparse::Axis& rows = c.program.axes[a.axes[0]];
  const spgen::sparse::Axis& columns = c.program.axes[a.axes[1]];
  CHECK(Runs::is_coo_level(rows));
  CHECK(Runs::is_coo_level(columns));
  const std::set<int> none, by_rows = {a.axes[0]};
  Runs entry_by_entry(c.program, none), run_by_run(c.program, by_rows);
  CHECK(!entry_by_entry.is_last_level(rows));
  CHECK(entry_by_entry.is_last_level(columns));
  CHECK(entry_by_entry.axis_id(rows) == a.axes[0]);
  // Entry by entry, the rows' loop visits a row once per entry; by runs, once.
  CHECK(entry_by_entry.repeats(rows));
  CHECK(!run_by_run.repeats(rows));
  CHECK(!entry_by_entry.iterates_run(columns));
  CHECK(run_by_run.iterates_run(columns));  // the singleton iterates the run above it
}

TEST_CASE("output order: an assembled output stored against the loop order is listed; in order it is appended") {
  const std::vector<LoopPlan> plans(2);
  const std::set<int> none;
  spgen::Compilation against = compile("C(i,j) = A(i,j)", R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "csc"}}})");
  OutputOrder listed(against.program, against.config, plans, none, true, nullptr, false);
  CHECK(listed.out_of_order_reason(against.program.output()) == "it stores index i in a level below index j, whose loop is inside i's");
  spgen::Compilation along = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}}})");
  OutputOrder appended(along.program, along.config, plans, none, true, nullptr, false);
  CHECK(appended.out_of_order_reason(along.program.output()).empty());
  CHECK(!appended.appends_in_order(along.program.output()));  // (no fused loop: appended row by row)
}

TEST_CASE("output order: a fused loop over a csr operand's entries appends dcsr rows in place, in order") {
  const std::vector<LoopPlan> plans(1);
  const std::set<int> none;
  // (as tests/e2e/cases/copy_fused_dcsr_out.json)
  spgen::Compilation c = compile("C(i,j) = A(i,j)",
                                 R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "dcsr"}},
                                     "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})");
  REQUIRE(c.program.iteration.fusions.size() == 1);
  OutputOrder order(c.program, c.config, plans, none, true, nullptr, false);
  CHECK(order.fuses_rows(c.program.iteration.fusions.front()));
  CHECK(order.appends_rows_in_order(c.program.output()));
  CHECK(order.appends_in_order(c.program.output()));
  // Nested in another nest (a part of a sum), it is not appended so.
  CHECK(!OutputOrder(c.program, c.config, plans, none, true, nullptr, true).appends_rows_in_order(c.program.output()));
}
