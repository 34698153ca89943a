// The output strategies of passes/lower, asked of a program without a lowering: row_workspace and
// block_row_workspace (rows, or block rows, gathered before they are appended) and listed_output
// (entries listed, sorted, summed and packed).
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "ir/loop_ir_printer.h"
#include "passes/lower/block_row_workspace.h"
#include "passes/lower/listed_output.h"
#include "passes/lower/open_levels.h"
#include "passes/lower/output_strategy.h"
#include "passes/lower/part_programs.h"
#include "passes/lower/row_workspace.h"

using namespace spgen_test;
using namespace spgen::lowering;

namespace {

// The output's positions as a lowering names them: level 0 known in loop 0, level 1 in loop 2.
std::vector<LevelPosition> spgemm_positions() {
  std::vector<LevelPosition> positions(2);
  positions[0].name = "pC0";
  positions[0].ready_depth = 0;
  positions[1].name = "pC1";
  positions[1].ready_depth = 2;
  return positions;
}

std::string dump(spgen::loops::Stmt stmt) {
  spgen::loops::LoweredFunc func;
  func.name = "probe";
  func.body = std::move(stmt);
  return spgen::loops::dump_stage2(func);
}

FreshName counter_names() {
  auto used = std::make_shared<int>(0);
  return [used](const std::string& wanted) { return wanted + std::to_string((*used)++); };
}

}  // namespace

TEST_CASE("row workspace: SpGEMM's rows gather in a workspace the width of C's columns, marked by the row") {
  spgen::Compilation c = compile("C(i,j) = A(i,k) * B(k,j)",
                                 R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}}})");
  const std::vector<LevelPosition> positions = spgemm_positions();
  const OutputContext computing{c.program, c.config, positions, false, -1, false,
                            spgen::loops::ScalarType::Float32, spgen::loops::ScalarType::Int32};
  std::vector<spgen::loops::Workspace> workspaces;
  const RowWorkspace rows = plan_row_workspace(computing, counter_names(), workspaces);
  CHECK(rows.row_depth == 0);  // a row is known in the loop over i
  CHECK(rows.values == "C_row0");
  CHECK(rows.seen == "C_seen1");
  CHECK(rows.list == "C_touched2");
  CHECK(rows.count == "C_ntouched3");
  REQUIRE(workspaces.size() == 3);  // seen, list, values
  CHECK(workspaces[0].name == rows.seen);
  CHECK(workspaces[2].type == spgen::loops::ScalarType::Float32);
  // Counting needs only the markers.
  const OutputContext counting{c.program, c.config, positions, true, 1, false,
                           spgen::loops::ScalarType::Float32, spgen::loops::ScalarType::Int32};
  std::vector<spgen::loops::Workspace> counting_workspaces;
  plan_row_workspace(counting, counter_names(), counting_workspaces);
  CHECK(counting_workspaces.size() == 1);
  // The write marks the coordinate's first touch by the row, lists it and clears its sum.
  const std::string write = dump(scatter_into_row(computing, rows, spgen::loops::var("x"), {}, nullptr));
  CHECK(write.find("C_seen1[j] != pC0") != std::string::npos);
  CHECK(write.find("C_touched2[C_ntouched3] = j") != std::string::npos);
  CHECK(write.find("C_row0[j] += x") != std::string::npos);
  // Around the row's loops: the list sorted, then appended at C's cursor.
  const std::string append = dump(append_row(computing, rows, nullptr, counter_names()));
  INFO(append);
  CHECK(append.find("sort C_touched2[0, C_ntouched3)") != std::string::npos);
  CHECK(append.find("C_crd1[pC1] = int32(j_out1)") != std::string::npos);
  CHECK(append.find("pC1 += 1") != std::string::npos);
}

TEST_CASE("row workspace: a sum outside the output's rows is refused, naming the variable") {
  spgen::Compilation c = compile("C(i,j) = A(i,k) * B(k,j)",
                                 R"({"tensors": {"A": {"format": "csc"}, "B": {"format": "csr"}, "C": {"format": "csr"}}})");
  // (the loops k, i, j: the rows of C are inside the sum over k)
  REQUIRE(c.program.iteration.iterators.front().var == "k");
  std::vector<LevelPosition> positions = spgemm_positions();
  positions[0].ready_depth = 1;
  const OutputContext output{c.program, c.config, positions, false, -1, false,
                         spgen::loops::ScalarType::Float32, spgen::loops::ScalarType::Int32};
  std::vector<spgen::loops::Workspace> workspaces;
  CHECK_THROWS_WITH_AS(plan_row_workspace(output, counter_names(), workspaces),
                       doctest::Contains("is summed over k outside its rows"), spgen::CompileError);
}

TEST_CASE("block-row workspace: C bsr = A csr + B csr gathers whole 2x2 blocks per block column") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)",
                                 R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
                                                 "C": {"format": "bsr", "block": [2, 2]}}})");
  const spgen::sparse::SparseBuffer& out = c.program.output();
  REQUIRE(out.gathered_level == 1);  // the block columns
  std::vector<LevelPosition> positions(4);
  for (size_t l = 0; l < positions.size(); ++l) {
    positions[l].name = "pC" + std::to_string(l);
    positions[l].ready_depth = static_cast<int>(l);
  }
  const OutputContext output{c.program, c.config, positions, false, -1, false,
                         spgen::loops::ScalarType::Float32, spgen::loops::ScalarType::Int32};
  std::vector<spgen::loops::Workspace> workspaces;
  RowWorkspace rows;
  BlockRows blocks;
  plan_block_row_workspace(output, counter_names(), workspaces, nullptr, rows, blocks);
  CHECK(rows.row_depth == 0);  // a block row is known where the block rows' level is
  CHECK(blocks.offset == "z0");
  CHECK(blocks.key == "j_blk1");
  CHECK(rows.values == "C_blocks2");
  REQUIRE(workspaces.size() == 3);
  const std::string write = dump(scatter_into_block(output, rows, blocks, spgen::loops::var("x"), {}));
  INFO(write);
  CHECK(write.find("for zero C block at z0") != std::string::npos);  // a block zeroed at its first touch
  CHECK(write.find("C_seen3[j_blk1] != pC0") != std::string::npos);
  const std::string append = dump(append_block_row(output, rows, blocks, nullptr, "no operand gives C's blocks", counter_names()));
  INFO(append);
  CHECK(append.find("(no operand gives C's blocks); append them sorted") != std::string::npos);
  CHECK(append.find("for copy C block at z0") != std::string::npos);
  // A rest inside another lowering's block row writes into the owner's workspace: no arrays of its own.
  std::vector<spgen::loops::Workspace> none;
  RowWorkspace rest_rows;
  BlockRows rest_blocks;
  plan_block_row_workspace(output, counter_names(), none, &rows, rest_rows, rest_blocks);
  CHECK(none.empty());
  CHECK(rest_rows.values == rows.values);
  CHECK(rest_rows.seen == rows.seen);
}

TEST_CASE("listed output: C csc = A csr lists each entry keyed by (j, i), then sorts, sums repeats and packs") {
  spgen::Compilation c = compile("C(i,j) = A(i,j)", R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "csc"}}})");
  std::vector<LevelPosition> positions(2);
  const OutputContext output{c.program, c.config, positions, false, -1, false,
                             spgen::loops::ScalarType::Float64, spgen::loops::ScalarType::Int32};
  const EntryList list{"C_keys", "C_entries", "C_listed"};
  const std::string entry = dump(list_entry(output, list, spgen::loops::var("x")));
  INFO(entry);
  CHECK(entry.find("C_keys[C_listed] = j * dim_i + i") != std::string::npos);  // storage order: j, then i
  CHECK(entry.find("C_entries[C_listed] = x") != std::string::npos);
  CHECK(entry.find("C_listed += 1") != std::string::npos);
  const std::string packed = dump(list_and_pack(output, list, nullptr, "it stores i below j", counter_names()));
  INFO(packed);
  CHECK(packed.find("(out of order: it stores i below j)") != std::string::npos);
  CHECK(packed.find("sort C_keys[0, C_listed) with C_entries") != std::string::npos);
  CHECK(packed.find("for sum repeats of C") != std::string::npos);
  CHECK(packed.find("for pack C") != std::string::npos);
  // Counting level 1: only keys, and the entries counted per column.
  const OutputContext counting{c.program, c.config, positions, true, 1, false,
                               spgen::loops::ScalarType::Float64, spgen::loops::ScalarType::Int32};
  const std::string counted = dump(list_and_pack(counting, list, nullptr, "it stores i below j", counter_names()));
  INFO(counted);
  CHECK(counted.find("C_entries") == std::string::npos);
  CHECK(counted.find("count the entries of level 1 per parent position") != std::string::npos);
}

TEST_CASE("output strategy: the decision table") {
  OutputFacts dense;
  CHECK(choose_output_strategy(dense) == OutputStrategy::InPlace);
  OutputFacts csr;  // C csr = A csr + B csr: appended through cursors
  csr.assembled = true;
  csr.last_level_gathers = true;
  csr.entry_level = 1;
  CHECK(choose_output_strategy(csr) == OutputStrategy::Appended);
  OutputFacts spgemm = csr;  // C = A B: a sum over k inside each row
  spgemm.reduction_outside = true;
  CHECK(choose_output_strategy(spgemm) == OutputStrategy::RowWorkspace);
  spgemm.counted_level = 1;  // counting the entries: the workspace marks them
  CHECK(choose_output_strategy(spgemm) == OutputStrategy::RowWorkspace);
  OutputFacts dcsr_spgemm = spgemm;  // counting the rows (level 0) of a dcsr output: no workspace
  dcsr_spgemm.counted_level = 0;
  CHECK(choose_output_strategy(dcsr_spgemm) == OutputStrategy::Appended);
  OutputFacts ragged = spgemm;  // a dense or ragged last level adds in place under its row
  ragged.last_level_gathers = false;
  ragged.counted_level = -1;
  CHECK(choose_output_strategy(ragged) == OutputStrategy::Appended);
  OutputFacts bsr = csr;  // C bsr = A csr + B csr: block rows, while computing or counting the gathered level
  bsr.gathered_level = 1;
  bsr.entry_level = 3;
  CHECK(choose_output_strategy(bsr) == OutputStrategy::BlockRowWorkspace);
  bsr.counted_level = 1;
  CHECK(choose_output_strategy(bsr) == OutputStrategy::BlockRowWorkspace);
  bsr.counted_level = 0;
  CHECK(choose_output_strategy(bsr) == OutputStrategy::Appended);
  OutputFacts csc = spgemm;  // out of storage order: listed, whatever else holds
  csc.listed = true;
  CHECK(choose_output_strategy(csc) == OutputStrategy::Listed);
  CHECK(std::string(output_strategy_name(OutputStrategy::BlockRowWorkspace)) == "block-row workspace");
}

TEST_CASE("open levels: an appended dcsr output's row level opens where an entry is written below it") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)",
                                 R"({"tensors": {"A": {"format": "dcsr"}, "B": {"format": "dcsr"}, "C": {"format": "dcsr"}}})");
  std::vector<LevelPosition> positions(2);
  positions[0].name = "pC0";
  positions[1].name = "pC1";
  const OutputContext computing{c.program, c.config, positions, false, -1, false,
                                spgen::loops::ScalarType::Float32, spgen::loops::ScalarType::Int32};
  OpenLevel row;
  row.flag = "C0_nonempty";
  row.cursor = "pC0";
  const std::vector<OpenLevel> opened = {row};
  // Around the row loop's body: a flag, then the cursor advanced by it.
  const std::string around = dump(with_open_flags(computing, opened, 0, spgen::loops::block({}), nullptr));
  INFO(around);
  CHECK(around.find("var C0_nonempty: bool = false") != std::string::npos);
  CHECK(around.find("pC0 += int64(C0_nonempty)") != std::string::npos);
  CHECK(dump(with_open_flags(computing, opened, 1, spgen::loops::block({}), nullptr)).find("C0_nonempty") == std::string::npos);  // (another loop)
  // Each entry below stores the row's coordinate at the cursor and raises the flag.
  const std::string entry = dump(spgen::loops::block(open_levels(computing, opened)));
  INFO(entry);
  CHECK(entry.find("C_crd0[pC0] = int32(i)") != std::string::npos);
  CHECK(entry.find("C0_nonempty = true") != std::string::npos);
  // Counting level 0: the flag adds one to the row count, one slot up.
  OpenLevel counted = row;
  counted.counted = true;
  counted.cursor.clear();
  const OutputContext counting{c.program, c.config, positions, true, 0, false,
                               spgen::loops::ScalarType::Float32, spgen::loops::ScalarType::Int32};
  const std::string count = dump(with_open_flags(counting, {counted}, 0, spgen::loops::block({}), spgen::loops::int64(0)));
  INFO(count);
  CHECK(count.find("C_pos0[1] += int32(int64(C0_nonempty))") != std::string::npos);
}

TEST_CASE("rest of blocks: C = A + B with A bsr is B's entries outside A's blocks, over unblocked loops") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)",
                                 R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"},
                                                 "C": {"format": "dense"}}})");
  std::vector<std::string> loops;
  for (const spgen::sparse::Iterator& it : c.program.iteration.iterators) loops.push_back(it.var);
  CHECK(loops == std::vector<std::string>{"i_blk", "j_blk", "i_in", "j_in"});  // A's block loops
  const std::vector<std::string> blockers = {"A"};
  const RestOfBlocks rest{blockers, false, "", -1, "A's blocks"};
  const spgen::sparse::Program program = rest_program(c.program, c.config, rest, counter_names());
  loops.clear();
  for (const spgen::sparse::Iterator& it : program.iteration.iterators) loops.push_back(it.var);
  CHECK(loops == std::vector<std::string>{"i", "j"});  // B's own loops: A splits none
  CHECK(program.blocked_vars.empty());
  CHECK(tensors_read(program) == std::vector<std::string>{"B"});
  CHECK(program.iteration.accumulate);  // it adds into what A's blocks wrote
}
