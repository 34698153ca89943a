// passes/lower/level_access: each level kind answers lowering's questions on its own, and the
// factory picks the class by kind. (The corpus shows the lowering prints the same with them.)
#include <doctest/doctest.h>

#include "frontend/config.h"
#include "ir/loop_ir_printer.h"
#include "ir/loop_ir.h"
#include "passes/lower/level_access.h"

using namespace spgen;
using namespace spgen::lowering;

namespace {

sparse::Axis axis(sparse::AxisKind kind, int level = 1) {
  sparse::Axis a;
  a.kind = kind;
  a.tensor = "A";
  a.level = level;
  a.index_var = a.mode_var = "j";
  a.length = "dim_j";
  a.pos = "A_pos" + std::to_string(level);
  a.crd = "A_crd" + std::to_string(level);
  return a;
}

std::string print(const loops::Expr& e) { return loops::ExprPrinter().print(e); }

const loops::ScalarType kIndex = loops::ScalarType::Int32;

}  // namespace

TEST_CASE("level access: the number of positions, in prose and as an expression, per kind") {
  sparse::Axis dense = axis(sparse::AxisKind::DenseFixed), csr = axis(sparse::AxisKind::SparseVariable),
               ragged = axis(sparse::AxisKind::DenseVariable), ell = axis(sparse::AxisKind::SparseFixed),
               single = axis(sparse::AxisKind::Singleton);
  ell.width = 4;
  CHECK(level_access(dense)->size_prose("1") == "dim_j");
  CHECK(level_access(dense)->size_prose("dim_i") == "dim_i * dim_j");
  CHECK(level_access(csr)->size_prose("dim_i") == "A_pos1[dim_i]");
  CHECK(level_access(ragged)->size_prose("dim_i") == "A_pos1[dim_i]");
  CHECK(level_access(ell)->size_prose("1") == "4");
  CHECK(level_access(ell)->size_prose("dim_i") == "dim_i * 4");
  CHECK(level_access(single)->size_prose("A_pos0[1]") == "A_pos0[1]");
  const loops::Expr rows = loops::var("dim_i");
  CHECK(print(level_access(dense)->size(rows, kIndex)) == "dim_i * dim_j");
  CHECK(print(level_access(ell)->size(rows, kIndex)) == "dim_i * 4");
  CHECK(print(level_access(single)->size(rows, kIndex)) == "dim_i");
  CHECK(print(level_access(csr)->size(rows, kIndex)).find("A_pos1[dim_i]") != std::string::npos);
  // A blocked dense level counts blocks (the last one padded), or the places in one.
  sparse::Axis blocks = dense, in_block = dense;
  blocks.block_part = BlockPart::Block;
  blocks.block = 3;
  in_block.block_part = BlockPart::InBlock;
  in_block.block = 3;
  CHECK(level_access(blocks)->size_prose("1") == "ceil(dim_j / 3)");
  CHECK(level_access(in_block)->size_prose("x") == "x * 3");
  CHECK(print(axis_length(blocks)) == "(dim_j + 2) / 3");
}

TEST_CASE("level access: streamed ranges, coordinates and the end of a cursor, per kind") {
  sparse::Axis csr = axis(sparse::AxisKind::SparseVariable), ragged = axis(sparse::AxisKind::DenseVariable),
               ell = axis(sparse::AxisKind::SparseFixed), single = axis(sparse::AxisKind::Singleton);
  ell.width = 4;
  const loops::Expr p = loops::var("p");
  auto range = [&](const sparse::Axis& a, const std::string& run_end = "") {
    auto [begin, end] = level_access(a)->positions_under(p, run_end, kIndex);
    return print(begin) + " .. " + print(end);
  };
  CHECK(range(csr) == "int64(A_pos1[p]) .. int64(A_pos1[p + 1])");
  CHECK(range(ragged) == range(csr));
  CHECK(range(ell) == "p * 4 .. p * 4 + 4");
  CHECK(range(single) == "p .. p + 1");              // the parent's one entry
  CHECK(range(single, "run_end") == "p .. run_end");  // or its run
  CHECK(print(level_access(csr)->coordinate_at("q", nullptr, kIndex)) == "int64(A_crd1[q])");
  CHECK(print(level_access(ragged)->coordinate_at("q", loops::var("q_begin"), kIndex)) == "q - q_begin");
  // Capabilities.
  CHECK(level_access(single)->one_per_parent());
  CHECK(!level_access(csr)->one_per_parent());
  CHECK(level_access(ragged)->coordinate_is_offset());
  CHECK(level_access(ragged)->locatable());
  CHECK(!level_access(csr)->locatable());
  CHECK(!level_access(ell)->coordinate_is_offset());
  const loops::Expr c = level_access(ell)->coordinate_at("q", nullptr, kIndex);
  CHECK(print(level_access(csr)->not_done("q", "q_end", c)) == "q < q_end");
  CHECK(print(level_access(ell)->not_done("q", "q_end", c)) == "q < q_end && 0 <= int64(A_crd1[q])");  // the padding ends it too
}

TEST_CASE("level access: the prose of comments and of the ABI, per kind") {
  sparse::Axis csr = axis(sparse::AxisKind::SparseVariable), coo = axis(sparse::AxisKind::SparseVariable, 0),
               ragged = axis(sparse::AxisKind::DenseVariable), ell = axis(sparse::AxisKind::SparseFixed),
               single = axis(sparse::AxisKind::Singleton);
  coo.unique = false;
  ell.width = 4;
  CHECK(level_access(csr)->locate_strategy(true) == "binary search");
  CHECK(level_access(coo)->locate_strategy(true) == "binary search for its run of equal coordinates");
  CHECK(level_access(ragged)->locate_strategy(true) == "direct lookup at A_pos1[parent] + j");
  CHECK(level_access(ell)->locate_strategy(true) == "binary search in its 4 ELL slots, up to the padding");
  CHECK(level_access(single)->locate_strategy(true) == "binary search in the run above");
  CHECK(level_access(single)->locate_strategy(false) == "a check of its parent's one entry");
  CHECK(level_access(csr)->describe(false, false) == "A");
  CHECK(level_access(coo)->describe(true, false) == "A (runs of equal coordinates)");
  CHECK(level_access(single)->describe(false, true) == "A (the entries of the run above)");
  CHECK(level_access(ell)->describe(false, false) == "A (ELL slots, up to the padding)");
  CHECK(level_access(ragged)->pos_prose() == ": positions; parent position p stores coordinates 0 .. A_pos1[p+1]-A_pos1[p]-1 at positions A_pos1[p] ...");
  CHECK(level_access(csr)->pos_prose() == ": positions; the entries under parent position p are A_pos1[p] .. A_pos1[p+1]-1");
  Format coo_format;
  coo_format.levels = {LevelKind::CompressedNonUnique, LevelKind::Singleton};
  CHECK(level_access(coo)->crd_prose(coo_format, false, false) == ": coordinates, non-decreasing; one position per entry (coordinates repeat)");
  CHECK(level_access(csr)->crd_prose(coo_format, false, true) == ": coordinates, strictly increasing under each parent");
  CHECK(level_access(single)->crd_prose(coo_format, true, true) ==
        ": the coordinate of each entry, one per parent position; strictly increasing among entries that agree on the levels above");
  CHECK(level_access(ell)->crd_prose(coo_format, false, false) == ": coordinates, 4 per parent position, increasing, then padding marked -1");
}

TEST_CASE("level access: a level blocked apart is read at its coordinate / or % its block") {
  sparse::Axis b = axis(sparse::AxisKind::SparseVariable);
  b.block_part = BlockPart::Block;
  b.block = 4;
  CHECK(level_coordinate_prose(b) == "j / 4");
  CHECK(print(level_coordinate(b)) == "j / 4");
  b.block_part = BlockPart::InBlock;
  CHECK(level_coordinate_prose(b) == "j % 4");
  b.block = 1;
  CHECK(print(level_coordinate(b)) == "0");
  b.index_var = "j_in";  // blocked alike: the loops' own block loop
  CHECK(level_coordinate_prose(b) == "j_in");
}

namespace {

// The statements a level's locate declares, as stage II prints them.
std::string located(const sparse::Axis& a, bool in_run, const std::string& run_end = "") {
  const SearchNames names = {"q", "q_end", "q_high", "q_mid", "q_found", run_end, run_end.empty() ? "" : "q_run_mid"};
  const loops::Expr parent = loops::var("p");
  auto [begin, last] = level_access(a)->positions_under(parent, in_run ? "p_run_end" : "", kIndex);
  loops::LoweredFunc f;
  f.name = "f";
  f.body = loops::block(level_access(a)->locate(names, parent, begin, last, nullptr, loops::var("j"), in_run, kIndex));
  return loops::dump_stage2(f);
}

}  // namespace

TEST_CASE("level access: locating a coordinate without a cursor, per kind") {
  sparse::Axis csr = axis(sparse::AxisKind::SparseVariable), ragged = axis(sparse::AxisKind::DenseVariable),
               ell = axis(sparse::AxisKind::SparseFixed), single = axis(sparse::AxisKind::Singleton),
               coo = axis(sparse::AxisKind::SparseVariable);
  ell.width = 4;
  coo.unique = false;
  // Ragged: a direct lookup, found below the row's end.
  const std::string direct = located(ragged, false);
  CHECK(direct.find("let q: int64 = int64(A_pos1[p]) + j") != std::string::npos);
  CHECK(direct.find("let q_found: bool = q < q_end") != std::string::npos);
  CHECK(direct.find("while") == std::string::npos);
  // Compressed: a binary search in the parent's range, found where the coordinate is j.
  const std::string search = located(csr, false);
  CHECK(search.find("search j in A") != std::string::npos);
  CHECK(search.find("int64(A_crd1[q_mid]) < j") != std::string::npos);
  CHECK(search.find("let q_found: bool = q < q_end && int64(A_crd1[q]) == j") != std::string::npos);
  // ELL: the padding (-1) sorts last.
  CHECK(located(ell, false).find("0 <= int64(A_crd1[q_mid]) && int64(A_crd1[q_mid]) < j") != std::string::npos);
  // A singleton under one entry checks it; under a run it searches the run.
  const std::string check = located(single, false);
  CHECK(check.find("let q: int64 = p") != std::string::npos);
  CHECK(check.find("let q_found: bool = int64(A_crd1[p]) == j") != std::string::npos);
  CHECK(located(single, true).find("search j in A") != std::string::npos);
  // COO by runs: the run of j ends at the first coordinate above it.
  const std::string run = located(coo, false, "q_run_end");
  CHECK(run.find("run of j in A") != std::string::npos);
  CHECK(run.find("int64(A_crd1[q_run_mid]) <= j") != std::string::npos);
  CHECK(run.find("let q_found: bool = q < q_run_end") != std::string::npos);
}

TEST_CASE("level access: only ELL guards its padding") {
  sparse::Axis csr = axis(sparse::AxisKind::SparseVariable), ell = axis(sparse::AxisKind::SparseFixed);
  ell.width = 4;
  const loops::Stmt inner = std::make_shared<loops::Comment>("body");
  CHECK(level_access(csr)->only_stored("j", inner) == inner);
  const loops::Stmt guarded = level_access(ell)->only_stored("j", inner);
  REQUIRE(guarded->kind == loops::StmtKind::If);
  CHECK(loops::ExprPrinter().print(static_cast<const loops::If&>(*guarded).cond) == "0 <= j");
}

TEST_CASE("level access: an interleaved ELL level is walked by slots, each at its group, slot and lane") {
  sparse::Axis ell = axis(sparse::AxisKind::SparseFixed), plain = ell;
  ell.width = plain.width = 4;
  ell.interleave = 8;
  CHECK_FALSE(level_access(plain)->walks_slots());
  CHECK(level_access(plain)->slot_position(loops::var("p"), loops::int64(0), loops::var("s"), loops::ScalarType::Int32) == nullptr);
  REQUIRE(level_access(ell)->walks_slots());
  // Whole groups of 8 parents: the last one padded.
  CHECK(level_access(ell)->size_prose("A_pos0[1]") == "ceil(A_pos0[1] / 8) * 8 * 4");
  CHECK(print(level_access(ell)->size(loops::var("n"), kIndex)) == "(n + 7) / 8 * 32");
  CHECK(print(level_access(ell)->slot_position(loops::var("p"), loops::int64(0), loops::var("s"), loops::ScalarType::Int32)) ==
        "p / 8 * 32 + s * 8 + p % 8");
  CHECK(print(level_access(ell)->slot_position(loops::var("p"), loops::var("b"), loops::var("s"), kIndex)) ==
        "(p - b) / 8 * 32 + s * 8 + (p - b) % 8");
  CHECK(print(level_access(ell)->slot_count(loops::var("p"), loops::int64(0), kIndex)) == "4");
}

TEST_CASE("level access: a sliced ELL level (SELL-C-sigma) takes each group's slots from its pos array") {
  sparse::Axis sell = axis(sparse::AxisKind::SparseFixed);
  sell.interleave = 8;
  sell.sliced = true;
  sell.pos = "A_pos1";
  auto level = level_access(sell);
  REQUIRE(level->walks_slots());
  CHECK(print(level->slot_count(loops::var("p"), loops::int64(0), kIndex)) == "int64(A_pos1[p / 8 + 1]) - int64(A_pos1[p / 8])");
  CHECK(print(level->slot_position(loops::var("p"), loops::var("b"), loops::var("s"), kIndex)) ==
        "(int64(A_pos1[(p - b) / 8]) + s) * 8 + (p - b) % 8");
  // Slots of whole slices: the last one padded.
  CHECK(level->size_prose("n") == "A_pos1[ceil(n / 8)] * 8");
  CHECK(print(level->size(loops::var("n"), kIndex)) == "int64(A_pos1[(n + 7) / 8]) * 8");
  CHECK(level->pos_size_prose("n") == "ceil(n / 8) + 1");
  CHECK(level->describe(false, false).find("SELL slices of 8 rows") != std::string::npos);
}
