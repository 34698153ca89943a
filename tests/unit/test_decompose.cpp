// Tests of the `decompose` op (passes/decompose_operand.cpp, passes/build_executor.cpp and their
// place in lower.cpp): the config it accepts, every refusal by its message, which ops schedule
// which part, and the stage I/II dumps. The parts' numbers are checked by the e2e cases
// (tests/e2e/cases/*_decompose_*) and the inspector by tests/pack/test_inspector.cpp.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "compile_helpers.h"

using namespace spgen_test;

namespace {

std::string config_with(const std::string& schedule, const std::string& tensors = R"("A": {"format": "csr"}, "C": {"format": "dense"})",
                        const std::string& extra = "") {
  return "{\"name\": \"k\", " + extra + "\"tensors\": {" + tensors + "}, \"schedule\": [" + schedule + "]}";
}

const char* const kEllCoo = R"({"op": "decompose", "tensor": "A", "format": "ell+coo", "width": 4})";
const char* const kHyb = R"({"op": "decompose", "tensor": "A", "format": "hyb", "partitions": 2, "buckets": [1, 4]})";

}  // namespace

TEST_CASE("decompose: on cuda, each part is a static host function that the executor calls in turn") {
  spgen::Compilation c = compile(kSpmm, config_with(std::string(kEllCoo) + R"(,
      {"op": "bind", "var": "i", "to": "blockIdx.x"},
      {"op": "bind", "var": "i", "part": "coo", "to": "blockIdx.x", "reduction": "atomic"},
      {"op": "bind", "var": "k", "to": "warp"})", R"("A": {"format": "csr"}, "C": {"format": "dense"})", R"("target": "cuda", )"));
  const std::string& source = c.files[1].text;
  CHECK(c.files[1].name == "k.cu");
  CHECK(contains(source, "static int k_ell(\n"));
  CHECK(contains(source, "static int k_coo(\n"));
  CHECK(contains(source, "extern \"C\" int k(\n"));
  CHECK(contains(source, "  if (const int status = k_ell(\n          dim_i,\n"));
  CHECK(contains(source, "          stream))\n    return status;\n  // part coo"));
  CHECK(contains(source, "atomicAdd(&C_vals[pC1], A_coo_vals[pA_coo0] * B_vals[pB1]);"));
  // Only the first part writes the output: one zero fill.
  CHECK(source.find("_zero_C<<<") == source.rfind("_zero_C<<<"));
  CHECK(contains(source, "extern \"C\" int k_decompose_A("));
  CHECK(contains(c.files[0].text, "    cudaStream_t stream);"));
}

TEST_CASE("decompose: the config's parameters") {
  struct Bad {
    std::string op, path, message;
  };
  const Bad bad[] = {
      {R"({"op": "decompose", "format": "hyb"})", "/schedule/0", "decompose: missing \"tensor\" (the sparse input to decompose)"},
      {R"({"op": "decompose", "tensor": "Z", "format": "hyb"})", "/schedule/0/tensor", "decompose: the spec has no tensor \"Z\""},
      {R"({"op": "decompose", "tensor": "C", "format": "hyb"})", "/schedule/0/tensor",
       "decompose: C is the output; only an input can be decomposed"},
      {R"({"op": "decompose", "tensor": "A"})", "/schedule/0", "decompose: missing \"format\" (hyb, ell+coo, bsr+csr, bsr or sell)"},
      {R"({"op": "decompose", "tensor": "A", "format": "sel"})", "/schedule/0/format",
       "decompose: unknown format \"sel\" (expected hyb, ell+coo, bsr+csr, bsr or sell)"},
      {R"({"op": "decompose", "tensor": "A", "format": "sell"})", "/schedule/0",
       "decompose: format \"sell\" needs \"interleave\": the rows of a slice (a vector's lanes: 8 or 16)"},
      {R"({"op": "decompose", "tensor": "A", "format": "sell", "interleave": 8, "sigma": 0})", "/schedule/0/sigma",
       "expected a positive integer, found 0"},
      {R"({"op": "decompose", "tensor": "A", "format": "sell", "interleave": 8, "width": 4})", "/schedule/0/width",
       "decompose: \"width\" does not apply to format \"sell\""},
      {R"({"op": "decompose", "tensor": "A", "format": "hyb", "sigma": 8})", "/schedule/0/sigma",
       "decompose: \"sigma\" does not apply to format \"hyb\""},
      {R"({"op": "decompose", "tensor": "A", "format": "ell+coo"})", "/schedule/0",
       "decompose: format \"ell+coo\" needs \"width\": the ELL part's entries per row"},
      {R"({"op": "decompose", "tensor": "A", "format": "ell+coo", "width": 4, "buckets": [1]})", "/schedule/0/buckets",
       "decompose: \"buckets\" does not apply to format \"ell+coo\""},
      {R"({"op": "decompose", "tensor": "A", "format": "hyb", "buckets": [1, 3]})", "/schedule/0/buckets/1",
       "decompose: a bucket width must be a power of two up to 4096"},
      {R"({"op": "decompose", "tensor": "A", "format": "hyb", "buckets": [4, 2]})", "/schedule/0/buckets/1",
       "decompose: bucket widths must increase"},
      {R"({"op": "decompose", "tensor": "A", "format": "hyb", "buckets": []})", "/schedule/0/buckets",
       "decompose: \"buckets\" must be a list of 1 to 16 ELL widths, e.g. [1, 2, 4, 8]"},
      {R"({"op": "decompose", "tensor": "A", "format": "hyb", "partitions": 65})", "/schedule/0/partitions",
       "decompose: at most 64 partitions"},
      {R"({"op": "decompose", "tensor": "A", "format": "hyb", "interleave": 0})", "/schedule/0/interleave",
       "expected a positive integer, found 0"},
      {R"({"op": "decompose", "tensor": "A", "format": "hyb", "interleave": 65})", "/schedule/0/interleave",
       "decompose: \"interleave\" groups at most 64 rows (a vector's lanes: 8 or 16)"},
      {R"({"op": "decompose", "tensor": "A", "format": "bsr+csr", "block": [2, 2], "interleave": 8})", "/schedule/0/interleave",
       "decompose: \"interleave\" does not apply to format \"bsr+csr\""},
      {R"({"op": "decompose", "tensor": "A", "format": "bsr+csr"})", "/schedule/0",
       "decompose: format \"bsr+csr\" needs \"block\": [rows, cols]"},
      {R"({"op": "decompose", "tensor": "A", "format": "bsr+csr", "block": [2, 2], "fill": 1.5})", "/schedule/0/fill",
       "decompose: \"fill\" must be in (0, 1]: the share of a block's entries that must be stored for it to go to the BSR part"},
      // bsr alone takes every occupied block: no fill to ask of one.
      {R"({"op": "decompose", "tensor": "A", "format": "bsr", "block": [2, 2], "fill": 0.5})", "/schedule/0/fill",
       "decompose: \"fill\" does not apply to format \"bsr\""},
      {R"({"op": "decompose", "tensor": "A", "format": "bsr", "block": [2]})", "/schedule/0/block",
       "decompose: format \"bsr\" needs \"block\": [rows, cols]"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.op);
    CHECK(error_of(kSpmm, config_with(b.op)) == "c.json: " + b.path + ": error: " + b.message + "\n");
  }
  CHECK(error_of(kSpmm, config_with(std::string(R"({"op": "parallel", "var": "i"}, )") + kEllCoo)) ==
        "c.json: /schedule/1: error: decompose: must be the first schedule op (the ops after it schedule its parts)\n");
  CHECK(error_of(kSpmm, config_with(R"({"op": "parallel", "var": "i", "part": "ell"})")) ==
        "c.json: /schedule/0/part: error: \"part\" names a part of a decomposition, but no decompose op comes first (or of a "
        "sum whose terms sum over different indices, which this right-hand side is not)\n");
}

TEST_CASE("decompose: refused where the sum of the parts is not the kernel") {
  CHECK(error_of(kSpmm, config_with(kEllCoo, R"("A": {"format": "csc"}, "C": {"format": "dense"})")) ==
        "c.json: /schedule/0: error: decompose: the inspector reads A as csr, but its format is csc; give A the format \"csr\"\n");
  CHECK(error_of(kSpmm, config_with(kEllCoo, R"("A": {"format": "csr"}, "C": {"format": "csr"})")) ==
        "c.json: /schedule/0: error: decompose: the parts add into the output, which must be dense: give C the format \"dense\"\n");
  // An output left to inference is dense where its fill says so (SpMM's C), and refused where it is not.
  const spgen::Compilation inferred = compile(kSpmm, config_with(kEllCoo, R"("A": {"format": "csr"})"));
  CHECK(contains(inferred.files[0].text, "//   C: dense (levels dense i, dense k), inferred from the operands (i dense: no operand "
                                         "stores it sparsely; k dense: no operand stores it sparsely)\n"));
  CHECK(error_of("Y(i,j) = A(i,j) * x(i)", config_with(kEllCoo, R"("A": {"format": "csr"})")) ==
        "c.json: /schedule/0: error: decompose: the parts add into the output, which must be dense, but Y would be inferred "
        "sparse in j (stored sparsely by A): give Y the format \"dense\"\n");
  const std::string sum = "C(i,j) = A(i,j) + B(i,j)";
  CHECK(error_of(sum, config_with(kEllCoo, R"("A": {"format": "csr"}, "B": {"format": "dense"}, "C": {"format": "dense"})")) ==
        "c.json: /schedule/0: error: decompose: the kernel must be a sum of the parts' kernels: A must appear once, as a factor "
        "of the whole right-hand side (as in A(i,j) * B(j,k))\n");
  // On cuda, the COO part's rows repeat: binding them needs atomics, and the error names the part.
  std::string unbound = error_of(kSpmm, config_with(std::string(kEllCoo) + R"(, {"op": "bind", "var": "i", "to": "blockIdx.x"})",
                                                     R"("A": {"format": "csr"}, "C": {"format": "dense"})", R"("target": "cuda", )"));
  CHECK(contains(unbound, "c.json: /schedule/1: error: bind: cannot bind i: "));
  CHECK(contains(unbound, "(add \"reduction\": \"atomic\")\nc.json: /schedule/0: note: in part coo of the decomposition"));
  CHECK(error_of("C(i,k) = A_ell(i,j) * A(j,k)", config_with(kEllCoo, R"("A": {"format": "csr"}, "A_ell": {"format": "dense"}, "C": {"format": "dense"})")) ==
        "c.json: /schedule/0: error: decompose: the part ell would be named A_ell, which the spec already uses; rename that tensor\n");
}

TEST_CASE("decompose: ops name parts, and an op for a part replaces the same op for every part there") {
  CHECK(error_of(kSpmm, config_with(std::string(kEllCoo) + R"(, {"op": "parallel", "var": "i", "part": "csr"})")) ==
        "c.json: /schedule/1/part: error: parallel: the decomposition of A has no part \"csr\" (its parts: ell, coo)\n");
  // An op for every part that no part has the loops of.
  CHECK(error_of(kSpmm, config_with(std::string(kEllCoo) + R"(, {"op": "vectorize", "var": "q"})")) ==
        "c.json: /schedule/1: error: vectorize: no part of the decomposition has the loops it names\n");
  // A part's refusal says which part.
  std::string race = error_of(kSpmm, config_with(std::string(kEllCoo) + R"(, {"op": "parallel", "var": "i"})"));
  CHECK(race ==
        "c.json: /schedule/1: error: parallel: cannot parallelize i: its coordinates repeat (a non-unique level of A_coo), so "
        "iterations may write the same entry of C (add \"reduction\": \"atomic\" or \"privatize\", or \"balance\": \"nonzeros\", "
        "whose parts own their runs whole)\n"
        "c.json: /schedule/0: note: in part coo of the decomposition (A_coo, stored as coo)\n");
  // With the coo part's own parallel op, the op for every part schedules only the ell part.
  spgen::Compilation c = compile(kSpmm, config_with(std::string(kEllCoo) +
                                                    R"(, {"op": "parallel", "var": "i"},
                                                         {"op": "parallel", "var": "i", "part": "coo", "reduction": "atomic"})"));
  REQUIRE(c.parts.size() == 2);
  CHECK(contains(c.stage2_dump, "for i in [0, dim_i) parallel(static)"));
  CHECK(contains(c.stage2_dump, "for i at pA_coo0 in [int64(A_coo_pos0[0]), int64(A_coo_pos0[1])) parallel(static)"));
  CHECK(contains(c.stage2_dump, "atomic C_vals[pC1] +="));
  // A bsr part's block loops exist only there: an op for every part that names them schedules it alone.
  spgen::Compilation bsr = compile(kSpmm, config_with(R"({"op": "decompose", "tensor": "A", "format": "bsr+csr", "block": [2, 2]},
                                                         {"op": "parallel", "var": "i_blk"})"));
  CHECK(contains(bsr.stage2_dump, "for i_blk in [0, (dim_i + 1) / 2) parallel(static)"));
}

TEST_CASE("decompose: the dumps show every part, and the executor calls them in turn") {
  spgen::Compilation c = compile(kSpmv, config_with(kHyb, R"("A": {"format": "csr"}, "y": {"format": "dense"})"));
  REQUIRE(c.parts.size() == 4);
  for (const char* part : {"p0_b1", "p0_b4", "p1_b1", "p1_b4"}) {
    CAPTURE(part);
    CHECK(contains(c.stage1_dump, std::string("// part ") + part + " of decompose(A, hyb, partitions 2, buckets 1 4)"));
    CHECK(contains(c.stage2_dump, std::string("call k_") + part + "(dim_i, dim_j, y_vals, A_" + part + "_pos0, A_" + part +
                                      "_crd0, A_" + part + "_crd1, A_" + part + "_vals, x_vals)"));
  }
  // The widest bucket's rows repeat (a long row is cut into pieces); the others' do not.
  CHECK(contains(c.stage1_dump, "A_p0_b1.0 = sparse_variable(i, length=dim_i, pos=A_p0_b1_pos0, crd=A_p0_b1_crd0)\n"));
  CHECK(contains(c.stage1_dump, "A_p0_b4.0 = sparse_variable(i, length=dim_i, pos=A_p0_b4_pos0, crd=A_p0_b4_crd0, nonunique)\n"));
  CHECK(contains(c.stage2_dump, "// executor"));
  // Only the first part writes y; the others add into it.
  CHECK(contains(c.stage1_dump, "y(i) = A_p0_b1(i,j) * x(j)"));
  CHECK(contains(c.stage1_dump, "y(i) += A_p0_b4(i,j) * x(j)"));
  const std::string& header = c.files[0].text;
  CHECK(contains(header, "int k_decompose_A_sizes("));
  CHECK(contains(header, "//   A is decomposed into A_p0_b1: hyb bucket (levels compressed, sparse-fixed)"));
  CHECK(contains(c.files[1].text, "static void k_p0_b1("));
}

TEST_CASE("decompose: a tile of a loop whose rows repeat keeps them sequential; a precompute over it stores one by one") {
  const std::string hyb = R"({"op": "decompose", "tensor": "A", "format": "hyb", "buckets": [2, 4]},
                             {"op": "tile", "var": "i", "factor": 8, "into": ["i_o", "i_i"]})";
  // hyb's widest bucket cuts long rows into pieces that add into one output row: a tile's outer
  // loop over them may not run in parallel without a reduction (it raced before: the tile lost
  // the loop's reason to stay sequential).
  CHECK(error_of(kSpmm, config_with(hyb + R"(, {"op": "parallel", "var": "i_o"})")) ==
        "c.json: /schedule/2: error: parallel: cannot parallelize i_o: its coordinates repeat (a non-unique level of A_p0_b4), "
        "so iterations may write the same entry of C (add \"reduction\": \"atomic\" or \"privatize\")\n"
        "c.json: /schedule/0: note: in part p0_b4 of the decomposition (A_p0_b4, stored as hyb bucket)\n");
  // A precompute of its rows' sums: the lanes add into their own entries of the local array (so
  // they vectorize), but the sums go into C one row at a time (and the narrower bucket's too: its
  // listed rows' y[crd0[p]] would be a scatter, slower than one by one).
  spgen::Compilation c = compile("y(i) = A(i,j) * x(j)", config_with(hyb + R"(, {"op": "precompute", "var": "i_i"},
                                                                             {"op": "vectorize", "var": "i_i"})",
                                                                     R"("A": {"format": "csr"}, "y": {"format": "dense"})"));
  CHECK(contains(c.stage2_dump, "for j at pA_p0_b41_slot in [0, 4):\n        for i_i in [0, 8) vectorized:"));
  CHECK(contains(c.stage2_dump, "for i_i_store at i_i in [0, 8):\n        let pA_p0_b20"));
  CHECK(contains(c.stage2_dump, "for i_i_store at i_i in [0, 8) sequential:\n        let pA_p0_b40"));
}

TEST_CASE("decompose: [decompose, \"auto\"] schedules each part by auto, written out per part") {
  spgen::Compilation c = compile(kSpmm, R"({"name": "k", "tensors": {"A": {"format": "csr"}, "C": {"format": "dense"}},
                                            "specialize": {}, "schedule": [)" + std::string(kEllCoo) + R"(, "auto"]})");
  REQUIRE(c.parts.size() == 2);
  CHECK(c.config.auto_schedule);
  // The ell part gets auto's register tile and parallel rows; the coo part, whose rows repeat,
  // parts of equal entries that each begin at a run (no two threads add into one row).
  CHECK(contains(c.stage2_dump, "for i in [0, dim_i) parallel(dynamic, 128)"));
  int parallel_coo = 0, tiled_ell = 0;
  for (const spgen::ScheduleOp& op : c.explicit_schedule) {
    if (op.part == "coo" && std::holds_alternative<spgen::ParallelOp>(op.op)) ++parallel_coo;
    if (op.part == "ell" && std::holds_alternative<spgen::PrecomputeOp>(op.op)) ++tiled_ell;
  }
  CHECK(parallel_coo == 1);
  CHECK(contains(c.stage2_dump, "each begun at a run of equal i in A_coo_crd0"));
  CHECK(tiled_ell == 1);
  CHECK(std::holds_alternative<spgen::DecomposeOp>(c.explicit_schedule.front().op));
  // "auto" in a list follows a decompose op alone.
  CHECK(error_of(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "i"}, "auto"]})") ==
        "c.json: /schedule/1: error: \"auto\" in a list follows a decompose op alone (each part is then scheduled by auto); "
        "write \"schedule\": \"auto\" for the whole kernel\n");
  CHECK(error_of(kSpmm, config_with(std::string(kEllCoo) + R"(, {"op": "parallel", "var": "i"}, "auto")")) ==
        "c.json: /schedule/2: error: \"auto\" in a list follows a decompose op alone (each part is then scheduled by auto); "
        "write \"schedule\": \"auto\" for the whole kernel\n");
}

TEST_CASE("decompose: under auto, hyb's widest bucket (cut rows repeat) adds each piece's sum atomically in parallel") {
  spgen::Compilation c = compile("y(i) = A(i,j) * x(j)", R"({"name": "k", "tensors": {"A": {"format": "csr"}, "y": {"format": "dense"}},
      "schedule": [{"op": "decompose", "tensor": "A", "format": "hyb", "buckets": [1, 2, 4]}, "auto"]})");
  std::map<std::string, std::string> reduction_of;
  for (const spgen::ScheduleOp& op : c.explicit_schedule)
    if (const auto* p = std::get_if<spgen::ParallelOp>(&op.op)) reduction_of[op.part] = p->reduction;
  CHECK(reduction_of == std::map<std::string, std::string>{{"p0_b1", ""}, {"p0_b2", ""}, {"p0_b4", "atomic"}});
  CHECK(contains(c.stage2_dump, "atomic y_vals[i] += acc"));
}

TEST_CASE("decompose: interleaved ELL slots (SELL-C) are walked slot by slot, in contiguous lanes under a tile of their groups") {
  const std::string spmv = "y(i) = A(i,j) * x(j)";
  auto config = [](const std::string& ops) {
    return R"({"name": "k", "tensors": {"A": {"format": "csr"}, "y": {"format": "dense"}}, "schedule": [)"
           R"({"op": "decompose", "tensor": "A", "format": "hyb", "buckets": [2, 4], "interleave": 8})" + ops + "]}";
  };
  // Alone: each slot's position from the row's group and lane.
  spgen::Compilation plain = compile(spmv, config(""));
  CHECK(contains(plain.stage2_dump, "for j at pA_p0_b21_slot in [0, 2):"));
  CHECK(contains(plain.stage2_dump,
                 "let pA_p0_b21: int64 = (pA_p0_b20 - int64(A_p0_b2_pos0[0])) / 8 * 16 + pA_p0_b21_slot * 8 + (pA_p0_b20 - int64(A_p0_b2_pos0[0])) % 8"));
  CHECK(contains(plain.files[0].text, "stored by groups of 8 parent positions (counted from the level above's first), slot by slot: "
                                      "slot s of position p at (p / 8) * 16 + s * 8 + p % 8; length ceil(A_p0_b2_pos0[1] / 8) * 8 * 2"));
  // A tile of 8 rows is a group: the lanes' positions are consecutive, the padding test a select.
  spgen::Compilation lanes = compile(spmv, config(R"(, {"op": "tile", "var": "i", "factor": 8, "into": ["i_o", "i_i"]},
      {"op": "precompute", "var": "i_i"}, {"op": "vectorize", "var": "i_i"})"));
  CHECK(contains(lanes.stage2_dump, "let pA_p0_b21: int64 = i_o * 16 + pA_p0_b21_slot * 8 + i_i"));
  CHECK(contains(lanes.stage2_dump, "acc_tile[i_i] += 0 <= j ? A_p0_b2_vals[pA_p0_b21] * x_vals[j] : 0"));
  // A tile of 4 rows is half a group, one of 16 two groups: no lane is the storage's.
  for (const char* factor : {"4", "16"}) {
    spgen::Compilation other = compile(spmv, config(std::string(R"(, {"op": "tile", "var": "i", "factor": )") + factor +
                                                    R"(, "into": ["i_o", "i_i"]}, {"op": "precompute", "var": "i_i"})"));
    CHECK(contains(other.stage2_dump, "/ 8 * 16 + pA_p0_b21_slot * 8 +"));
  }
  // auto: the rows in groups of 8 lanes, static; the widest bucket's repeated rows atomically.
  spgen::Compilation chosen = compile(spmv, config(", \"auto\""));
  std::map<std::string, std::string> reduction_of;
  int tiles = 0;
  for (const spgen::ScheduleOp& op : chosen.explicit_schedule) {
    if (const auto* p = std::get_if<spgen::ParallelOp>(&op.op)) reduction_of[op.part] = p->reduction;
    if (const auto* t = std::get_if<spgen::TileOp>(&op.op)) tiles += t->factor == 8 && t->outer == "i_group";
  }
  CHECK(tiles == 2);
  CHECK(reduction_of == std::map<std::string, std::string>{{"p0_b2", ""}, {"p0_b4", "atomic"}});
  CHECK(contains(chosen.stage2_dump, "let pA_p0_b41: int64 = i_group * 32 + pA_p0_b41_slot * 8 + i_lane"));
  // Beside another operand's level no loop walks the slots alone.
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "dense"}},
      "schedule": [{"op": "decompose", "tensor": "A", "format": "hyb", "buckets": [2], "interleave": 8}]})"),
                 "error: the interleaved ELL slots of A_p0_b2 are walked by a loop of their own, but loop j also visits another "
                 "operand's coordinates; decompose without \"interleave\""));
}

TEST_CASE("decompose: sell (SELL-C-sigma) walks each slice's own slots, writes every listed row, and merges no unordered rows") {
  const std::string spmv = "y(i) = A(i,j) * x(j)";
  auto config = [](const std::string& decompose, const std::string& ops, const std::string& tensors = "") {
    return R"({"name": "k", "tensors": {"A": {"format": "csr"}, "y": {"format": "dense"})" + tensors + R"(}, "schedule": [)" +
           decompose + ops + "]}";
  };
  const std::string sell = R"({"op": "decompose", "tensor": "A", "format": "sell", "interleave": 8, "sigma": 64})";
  // The listed rows are every row, once, out of order: no zero fill, and stage I says so.
  spgen::Compilation chosen = compile(spmv, config(sell, ", \"auto\""));
  CHECK(contains(chosen.stage1_dump, "A_sell.0 = sparse_variable(i, length=dim_i, pos=A_sell_pos0, crd=A_sell_crd0, every coordinate, unordered)"));
  CHECK(contains(chosen.stage1_dump, "A_sell.1 = sparse_fixed(j, parent=A_sell.0, length=dim_j, pos=A_sell_pos1, crd=A_sell_crd1, sliced)"));
  CHECK_FALSE(contains(chosen.stage2_dump, "y_vals[p] = 0"));
  CHECK(contains(chosen.stage2_dump, "y_vals[i] = acc_tile[i_lane]"));
  // auto: a tile of 8 rows is a slice; the slot count, read at the group, moves outside the lanes.
  CHECK(contains(chosen.stage2_dump, "for j at pA_sell1_slot in [0, int64(A_sell_pos1[i_group + 1]) - int64(A_sell_pos1[i_group])):"));
  CHECK(contains(chosen.stage2_dump, "let pA_sell1: int64 = (int64(A_sell_pos1[i_group]) + pA_sell1_slot) * 8 + i_lane"));
  // A tile of 4 rows is no slice: the count still depends on the lane, so precompute refuses.
  CHECK(contains(error_of(spmv, config(sell, R"(, {"op": "tile", "var": "i", "factor": 4, "into": ["i_o", "i_i"]}, {"op": "precompute", "var": "i_i"})")),
                 "error: precompute: loop j cannot move outside i_i: its bounds depend on it"));
  // The header documents the slices.
  CHECK(contains(chosen.files[0].text, "slices; group g of 8 parent positions (counted from the level above's first) holds "
                                       "A_sell_pos1[g+1]-A_sell_pos1[g] slots"));
  // Rows sorted by length cannot be merged with another operand's rows; in order (sigma 1) they can.
  const std::string scaled = "y(i) = A(i,j) * x(j) * d(i)";
  CHECK(contains(error_of(scaled, config(sell, "", R"(, "d": {"format": "sv"})")),
                 "error: the rows of A_sell are listed out of order (sell with \"sigma\" above 1 sorts them by length), but loop i "
                 "merges them with another operand's coordinates, which needs them in order; use \"sigma\": 1, or a dense operand on i"));
  spgen::Compilation ordered =
      compile(scaled, config(R"({"op": "decompose", "tensor": "A", "format": "sell", "interleave": 8})", "", R"(, "d": {"format": "sv"})"));
  CHECK(contains(ordered.stage1_dump, "crd=A_sell_crd0, every coordinate)"));
  // Rows that d may skip are no longer all written: zeroed first.
  CHECK(contains(ordered.stage2_dump, "y_vals[p] = 0"));
}
