// The passes, observed through the IR dumps after each stage and through their errors.
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "frontend/config_writer.h"
#include "passes/output_fill.h"
#include "ir/loop_ir_printer.h"
#include "lower.h"
#include "frontend/parser.h"
#include "passes/build_sparse_ir.h"
#include "passes/infer_loop_order.h"
#include "passes/sparse_fuse.h"
#include "passes/sparse_reorder.h"

using namespace spgen_test;

TEST_CASE("default loop order follows storage order (concordant traversal)") {
  CHECK(contains(compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}})").stage1_dump,
                 "over [i: spatial, j: reduction, k: spatial]"));
  CHECK(contains(compile(kSpmv, R"({"tensors": {"A": {"format": "csc"}}})").stage1_dump,
                 "over [j: reduction, i: spatial]"));
  CHECK(contains(compile(kMttkrp, R"({"tensors": {"B": {"format": "csf"}}})").stage1_dump,
                 "over [i: spatial, k: reduction, l: reduction, j: spatial]"));
  // A dense operand read column-major pulls its column index outward when nothing forbids it.
  CHECK(contains(compile("y(j) = A(i,j) * x(i)", R"({"tensors": {"A": {"format": {"levels": ["dense", "dense"], "order": [1, 0]}}}})").stage1_dump,
                 "over [j: spatial, i: reduction]"));
}

TEST_CASE("operands stored in conflicting orders are rejected with advice") {
  std::string e = error_of("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csc"}}})");
  CHECK(contains(e, "c.json: /tensors/B/format: error: no loop order can iterate both A"));
  CHECK(contains(e, "store one of them in the other mode order"));
}

TEST_CASE("stage I reorder respects axis dependencies") {
  CHECK(contains(compile(kMttkrp, R"({"tensors": {"B": {"format": "csf"}}, "schedule": [{"op": "reorder", "order": ["j", "k", "l"]}]})").stage1_dump,
                 "over [i: spatial, j: spatial, k: reduction, l: reduction]"));
  std::string e = error_of(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "reorder", "order": ["j", "i"]}]})");
  CHECK(contains(e, "c.json: /schedule/0: error: reorder: this order puts j outside i, but A (csr) stores j in a level below i"));
  CHECK(contains(error_of(kSpmv, R"({"schedule": [{"op": "reorder", "order": ["i", "i"]}]})"), "loop i is named twice"));
}

TEST_CASE("stage I ops give their error as a value (a plan tried after a conflict then tries the next)") {
  auto stage_one = [](const std::string& text, const std::string& config_text) {
    spgen::ast::Spec spec = spgen::parse_spec("t.spg", text);
    spgen::Config config = spgen::read_config("c.json", config_text, spec, "t");
    spgen::sparse::Program program = spgen::build_sparse_ir(spec, config);
    spgen::infer_loop_order(program, config);
    return std::make_pair(program, config);
  };
  auto [spmv, spmv_config] = stage_one(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "reorder", "order": ["j", "i"]}]})");
  CHECK(contains(spgen::apply_sparse_reorder(spmv, spmv_config, spmv_config.schedule[0]),
                 "c.json: /schedule/0: error: reorder: this order puts j outside i"));
  auto [in_order, in_order_config] = stage_one(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "reorder", "order": ["i", "j"]}]})");
  CHECK(spgen::apply_sparse_reorder(in_order, in_order_config, in_order_config.schedule[0]).empty());
  auto [fused, fuse_config] = stage_one(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "i"}]})");
  CHECK(contains(spgen::apply_sparse_fuse(fused, fuse_config, fuse_config.schedule[0]), "the name i is already in use"));
  CHECK(fused.iteration.fusions.empty());
}

TEST_CASE("lowering: a reduction inside all output loops sums into a scalar and overwrites") {
  std::string s2 = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}})").stage2_dump;
  CHECK(contains(s2, "var acc: float32 = 0"));
  CHECK(contains(s2, "acc += A_vals[pA1] * x_vals[j]"));
  CHECK(contains(s2, "y_vals[i] = acc"));
  CHECK(!contains(s2, "zero y"));  // every row is written exactly once
  CHECK(!contains(s2, "let pA0"));  // trivial copies are propagated
}

TEST_CASE("lowering: outputs that some loop skips or adds into are zeroed first") {
  std::string dcsr = compile(kSpmv, R"({"tensors": {"y": {"format": "dense"}, "A": {"format": "dcsr"}}})").stage2_dump;
  CHECK(contains(dcsr, "for zero y at p in [0, dim_i):"));
  CHECK(contains(dcsr, "for i at pA0 in [int64(A_pos0[0]), int64(A_pos0[1])):"));
  std::string csc = compile(kSpmv, R"({"types": {"index": "int64"}, "tensors": {"y": {"format": "dense"}, "A": {"format": "csc"}}})").stage2_dump;
  CHECK(contains(csc, "zero y"));
  CHECK(contains(csc, "y_vals[i] += A_vals[pA1] * x_vals[j]"));
  std::string spmm = compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}})").stage2_dump;
  CHECK(contains(spmm, "for zero C at p in [0, dim_i * dim_k):"));
  CHECK(contains(spmm, "C_vals[pC1] += A_vals[pA1] * B_vals[pB1]"));
  // `+=` never zeroes: the caller's values are kept.
  std::string acc = compile("y(i) += A(i,j) * x(j)", R"({"tensors": {"A": {"format": "dcsr"}}})").stage2_dump;
  CHECK(!contains(acc, "zero y"));
  CHECK(contains(acc, "y_vals[i] += acc"));
  // An output in A's structure, where the loops visit only what A and B both store: A's other
  // entries are zeroed (they used to keep whatever the caller's array held).
  std::string shared = compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}}})").stage2_dump;
  CHECK(contains(shared, "  # zero C: the loops below skip entries that must be zero\n  for zero C at p in [0, int64(A_pos1[dim_i])):\n"));
  // ... as where A's block levels merge with those of B blocked alike.
  std::string shared_blocks = compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 2]}}})").stage2_dump;
  CHECK(contains(shared_blocks, "  for zero C at p in [0, int64(A_pos1[(dim_i + 1) / 2]) * 2 * 2):\n"));
  // Where A's entries are all visited (B located inside, or a union), nothing is zeroed.
  CHECK(!contains(compile("C(i,j) = A(i,j) * (B(i,j) + D(i,j))", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "bsr", "block": [2, 2]}, "D": {"format": "csr"}, "C": {"format": "csr"}}})").stage2_dump, "zero C"));
  CHECK(!contains(compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}}})").stage2_dump, "zero Y"));
  // ... and where a dense level of A is looped over another operand's stored coordinates (k of B).
  std::string dense_level_followed = compile("C(i,j,k) = A(i,j,k) * B(i,k)", R"({"tensors": {"A": {"format": {"levels": ["dense", "compressed", "dense"]}}, "B": {"format": "csr"}, "C": {"format": {"levels": ["dense", "compressed", "dense"]}}}})").stage2_dump;
  CHECK(contains(dense_level_followed, "  for zero C at p in [0, int64(A_pos1[dim_i]) * dim_k):\n"));
  CHECK(contains(dense_level_followed, "      for k at pB1 in [int64(B_pos1[i]), int64(B_pos1[i + 1])):\n"));
}

TEST_CASE("lowering: SDDMM writes into the structure it shares and applies X once per entry") {
  spgen::Compilation c = compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}}})");
  CHECK(contains(c.stage1_dump, "Y(i,j): float32[X.0, X.1] format csr"));
  CHECK(contains(c.stage1_dump, "shares the structure of X"));
  CHECK(contains(c.stage2_dump, "acc += A_vals[pA1] * B_vals[pB1]"));
  CHECK(contains(c.stage2_dump, "Y_vals[pX1] = X_vals[pX1] * acc"));
  CHECK(!contains(c.stage2_dump, "Y_pos"));  // Y passes values only
}

TEST_CASE("lowering: unsupported combinations are errors, not wrong code") {
  CHECK(contains(error_of("C(i,j) = B(i,j) / A(i,j)", R"({"tensors": {"A": {"format": "csr"}}})"),
                 "dividing by A"));
  CHECK(contains(error_of("y(i) = A(i,j) * x(j) * A(j,i)", "{}"), "t.spg:1:24: error: tensor A is accessed as A(j,i)"));
}

TEST_CASE("co-iteration: an intersection is a two-finger merge guarded by both operands") {
  std::string s2 = compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"C": {"format": "dense"}, "A": {"format": "csr"}, "B": {"format": "csr"}}})").stage2_dump;
  CHECK(contains(s2, "# co-iterate j: two-finger merge of A, B"));
  CHECK(contains(s2, "while j (pA1 < pA1_end && pB1 < pB1_end):"));
  CHECK(contains(s2, "let j: int64 = min(jA, jB)"));
  CHECK(contains(s2, "if inA && inB:"));
  CHECK(contains(s2, "C_vals[pC1] = A_vals[pA1] * B_vals[pB1]"));  // both are present inside the guard
  CHECK(contains(s2, "pA1 += int64(inA)"));
  CHECK(contains(s2, "for zero C"));  // entries outside the intersection stay zero
}

TEST_CASE("co-iteration: a union visits every stored coordinate and reads absent operands as zero") {
  std::string s2 = compile("C(i,j) = A(i,j) - B(i,j)", R"({"tensors": {"A": {"format": "dcsr"}, "B": {"format": "dcsr"}}})").stage2_dump;
  CHECK(contains(s2, "while i (pA0 < pA0_end || pB0 < pB0_end):"));
  CHECK(contains(s2, "var pA1: int64 = inA ? int64(A_pos1[pA0]) : 0"));  // an absent row has no entries
  CHECK(contains(s2, "(inA && inA_2 ? A_vals[pA1] : 0) - (inB && inB_2 ? B_vals[pB1] : 0)"));
  CHECK(!contains(s2, "if "));  // the least coordinate is always in some operand
}

TEST_CASE("co-iteration: a sparse operand beside a dense term gets a cursor in a dense loop") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"C": {"format": "dense"}, "A": {"format": "csr"}}})");
  CHECK(contains(c.stage2_dump, "# co-iterate j: every coordinate, with cursors into A"));
  CHECK(contains(c.stage2_dump, "for j in [0, dim_j) sequential:"));
  CHECK(contains(c.stage2_dump, "let inA: bool = pA1 < pA1_end && int64(A_crd1[pA1]) == j"));
  CHECK(!contains(c.stage2_dump, "zero C"));  // every entry is written
  CHECK(contains(error_of("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"C": {"format": "dense"}, "A": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "j"}]})"),
                 "/schedule/0: error: parallel: cannot parallelize j: it advances co-iteration cursors into A"));
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}}, "schedule": [{"op": "split", "var": "j", "factor": 4}]})"),
                 "/schedule/0: error: split: loop j co-iterates several sparse operands (a two-finger merge)"));
  // The outer loop of a merge is an ordinary loop: it can still run in parallel.
  CHECK(contains(compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "i"}]})").stage2_dump,
                 "for i in [0, dim_i) parallel(static):"));
}

TEST_CASE("lowering: a sum of terms that all contain the sparse operand iterates it") {
  std::string s2 = compile("y(i) = A(i,j) * x(j) - 2 * A(i,j)", R"({"tensors": {"A": {"format": "csr"}}})").stage2_dump;
  CHECK(contains(s2, "acc += A_vals[pA1] * x_vals[j] - 2 * A_vals[pA1]"));
}

TEST_CASE("split divides a loop, keeps the remainder, and hoists memory bounds") {
  std::string dense = compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "split", "var": "i", "factor": 32, "into": ["i0", "i1"]}]})").stage2_dump;
  CHECK(contains(dense, "for i0 in [0, (dim_i + 31) / 32):"));
  CHECK(contains(dense, "for i1 in [0, min(32, dim_i - i0 * 32)):"));
  CHECK(contains(dense, "let i: int64 = i0 * 32 + i1"));
  std::string sparse = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "split", "var": "j", "factor": 4}]})").stage2_dump;
  CHECK(contains(sparse, "let pA1_begin: int64 = int64(A_pos1[i])"));
  CHECK(contains(sparse, "for j0 in [0, (pA1_end - pA1_begin + 3) / 4):"));
  CHECK(contains(sparse, "let pA1: int64 = pA1_begin + j0 * 4 + j1"));
  CHECK(contains(error_of(kSpmv, R"({"schedule": [{"op": "split", "var": "i", "factor": 4, "into": ["j", "i1"]}]})"),
                 "/schedule/0: error: split: the name j is already in use"));
}

TEST_CASE("stage II reorder moves loops whose bounds allow it") {
  std::string s2 = compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [
      {"op": "split", "var": "k", "factor": 8}, {"op": "reorder", "order": ["k0", "j"]}]})").stage2_dump;
  CHECK(s2.find("for k0 in") < s2.find("for j at pA1"));
  CHECK(s2.find("for j at pA1") < s2.find("for k1 in"));
  std::string e = error_of(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [
      {"op": "split", "var": "i", "factor": 8}, {"op": "reorder", "order": ["j", "i1"]}]})");
  CHECK(contains(e, "/schedule/1: error: reorder: loop j cannot move there: its bounds depend on a loop"));
}

TEST_CASE("parallel refuses races and nesting; names unknown loops") {
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"y": {"format": "dense"}, "A": {"format": "csc"}}, "schedule": [{"op": "parallel", "var": "j"}]})"),
                 "/schedule/0: error: parallel: cannot parallelize j: it iterates the reduction index j, so threads would race on the same entries of y"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "parallel", "var": "i"}, {"op": "parallel", "var": "k"}]})"),
                 "/schedule/1: error: parallel: loop k is inside parallel loop i"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "parallel", "var": "q"}]})"),
                 "/schedule/0: error: parallel: no loop named q (the loops are: i, j, k)"));
  std::string s2 = compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "i", "schedule": "guided", "chunk": 4}]})").stage2_dump;
  CHECK(contains(s2, "for i in [0, dim_i) parallel(guided, 4):"));
  CHECK(contains(s2, "for zero C at p in [0, dim_i * dim_k) parallel(static):"));
}

TEST_CASE("vectorize: innermost only, sums get a reduction clause, shared targets are refused") {
  std::string s2 = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j"}]})").stage2_dump;
  CHECK(contains(s2, "vectorized +acc"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "vectorize", "var": "j"}]})"), "loop j is not innermost"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "split", "var": "i", "factor": 2}, {"op": "reorder", "order": ["k", "j"]}, {"op": "vectorize", "var": "j"}]})"),
                 "/schedule/2: error: vectorize: cannot vectorize j: it iterates the reduction index j and every iteration adds into the same entry of C"));
}

namespace {
std::vector<std::string> described(const spgen::Compilation& c) {
  std::vector<std::string> out;
  for (const spgen::ScheduleOp& op : c.schedule) out.push_back(spgen::describe_schedule_op(op));
  return out;
}
}  // namespace

TEST_CASE("auto schedule: SpMM keeps the output's row in register tiles across the sparse sum") {
  spgen::Compilation spmm = compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})");
  CHECK(described(spmm) == std::vector<std::string>{"reorder(i, k, j)", "parallel(i, dynamic, 128)", "tile(k, 32 -> k0, k1)",
                                                     "precompute(k1)", "vectorize(k1)"});
  CHECK(contains(spmm.stage1_dump, "over [i: spatial, k: spatial, j: reduction]"));
  CHECK(contains(spmm.stage2_dump, "allocate local acc_tile: float32 vectors[32 / SPGEN_LANES_F32] = 0:"));
  // Each choice is listed in the header with its reason.
  CHECK(contains(spmm.files[0].text, "//   auto, chose:\n//   reorder(i, k, j): k outside the sum over j, for a register tile"));
  CHECK(contains(spmm.files[0].text, "//   precompute(k1): their sums stay in registers across the sum\n"));
  // float64: tiles of 16; a size fixed smaller than the tile narrows it, and one below 4 leaves
  // the loops alone (the inner loop vectorized as before).
  CHECK(described(compile(kSpmm, R"({"types": {"value": "float64"}, "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})"))[2] ==
        "tile(k, 16 -> k0, k1)");
  CHECK(described(compile(kSpmm, R"({"sizes": {"k": 12}, "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})"))[2] ==
        "tile(k, 8 -> k0, k1)");
  CHECK(described(compile(kSpmm, R"({"sizes": {"k": 3}, "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})")) ==
        std::vector<std::string>{"parallel(i, dynamic, 128)", "vectorize(k)"});
  // A dense A: a dense contraction, its tile kept across the dense sum over j.
  CHECK(described(compile(kSpmm, R"({"schedule": "auto"})")) ==
        std::vector<std::string>{"reorder(i, k, j)", "parallel(i, dynamic, 128)", "tile(k, 32 -> k0, k1)", "precompute(k1)", "vectorize(k1)"});
  // cuda keeps its own mapping (no stage I reorder).
  CHECK(!contains(described(compile(kSpmm, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})")).front(),
                  "reorder"));
}

TEST_CASE("auto schedule: MTTKRP's row leaves the innermost sparse sum, C(k,j) multiplying the tile once per walk") {
  spgen::Compilation csf = compile(kMttkrp, R"({"tensors": {"B": {"format": "csf"}}, "schedule": "auto"})");
  CHECK(described(csf) == std::vector<std::string>{"reorder(i, k, j, l)", "parallel(i, dynamic, 128)", "tile(j, 32 -> j0, j1)",
                                                    "precompute(j1)", "vectorize(j1)"});
  CHECK(contains(csf.files[0].text, "reorder(i, k, j, l): j outside the sum over l, for a register tile of the output's row "
                                    "(the factors of the outer sums' indices then multiply the tile once per walk over l)"));
  // The walk over l adds B * D into the tile; C(k, j) multiplies it once, after the walk.
  CHECK(contains(csf.stage2_dump, "acc_tile[j1_vec] += B_vals[pB2] * D_vals[pD1 +: lanes]"));
  CHECK(contains(csf.stage2_dump, "A_vals[pA1 +: lanes] += C_vals[pC1 +: lanes] * acc_tile[j1_store_vec]"));
  // A sum over a dense level among them (B dense in k): no reorder.
  CHECK(!contains(described(compile(kMttkrp, R"({"tensors": {"B": {"format": {"levels": ["compressed", "dense", "compressed"]}}}, "schedule": "auto"})")).front(),
                  "reorder"));
}

TEST_CASE("auto schedule: a dot product over a dense inner loop sums in vector lanes") {
  CHECK(described(compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}}, "schedule": "auto"})")) ==
        std::vector<std::string>{"parallel(i, dynamic, 128)", "vectorize(k, 16 lanes)", "prefetch(B at j, 8 ahead)", "batch(j)"});
  CHECK(described(compile(kSddmm, R"({"types": {"value": "float64"}, "tensors": {"X": {"format": "csr"}}, "schedule": "auto"})")) ==
        std::vector<std::string>{"parallel(i, dynamic, 128)", "vectorize(k, 8 lanes)", "prefetch(B at j, 8 ahead)", "batch(j)"});
  // (B's rows are prefetched: test_input_stats.cpp.)
}

TEST_CASE("auto schedule: SDDMM's stored entries batched by the length of their dot products") {
  // Each kernel per width batches as its width says: 4 entries up to 128 bytes, 2 above.
  const std::string floats = compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}}, "schedule": "auto"})").files[1].text;
  auto groups_of = [](const std::string& text, const std::string& kernel) {
    const size_t at = text.find("static void " + kernel + "(");
    REQUIRE(at != std::string::npos);
    const size_t groups = text.find("_groups = ", at);
    REQUIRE(groups != std::string::npos);
    return text.substr(text.find(" - pX1_first) / ", groups) + 16, 1);
  };
  CHECK(groups_of(floats, "t_k16") == "4");
  CHECK(groups_of(floats, "t_k32") == "4");
  CHECK(groups_of(floats, "t_k64") == "2");
  CHECK(groups_of(floats, "t_k128") == "2");
  CHECK(groups_of(floats, "t_generic") == "4");  // k known only when it runs
  const std::string doubles =
      compile(kSddmm, R"({"types": {"value": "float64"}, "tensors": {"X": {"format": "csr"}}, "schedule": "auto"})").files[1].text;
  CHECK(groups_of(doubles, "t_k16") == "4");
  CHECK(groups_of(doubles, "t_k32") == "2");
  // Only where X's rows hold 16 entries or more on average (read on each call); rows of 4-5 ran
  // slower batched.
  CHECK(contains(floats, "const int64_t pX1_groups = 16 * dim_i <= (int64_t)X_pos1[dim_i] ? ((int64_t)X_pos1[i + 1] - pX1_first) / 4 : 0;"));
  // An explicit factor stands whatever the length; written out, auto's batch has none.
  CHECK(contains(compile(kSddmm, R"({"sizes": {"k": 128}, "tensors": {"X": {"format": "csr"}}, "schedule": [
          {"op": "vectorize", "var": "k", "lanes": 16}, {"op": "batch", "var": "j", "factor": 4}]})").files[1].text,
                 "const int64_t pX1_groups = ((int64_t)X_pos1[i + 1] - pX1_first) / 4;"));
  CHECK(spgen::schedule_json(compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}}, "schedule": "auto"})").explicit_schedule).back() ==
        nlohmann::json{{"op", "batch"}, {"var", "j"}});
  // Not where the walk's iterations add into one scalar (SpMV's row sum has no dot product in lanes).
  for (const std::string& op : described(compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})")))
    CHECK(op.find("batch") == std::string::npos);
}

TEST_CASE("auto schedule: rows that are one sparse walk (SpMV) are shared in large chunks, heavier rows in small ones") {
  // ... and its row sums in 8 lanes (floats and doubles alike), the rest of a row and a short row in one masked sum.
  // (Without statistics, static or dynamic is chosen on each call from the row positions: even_rows.)
  CHECK(described(compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})")) ==
        std::vector<std::string>{"parallel(i, even_rows, 512)", "vectorize(j, 8 lanes, masked tail)"});
  CHECK(described(compile(kSpmv, R"({"types": {"value": "float64"}, "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})")) ==
        std::vector<std::string>{"parallel(i, even_rows, 512)", "vectorize(j, 8 lanes, masked tail)"});
  // dcsr's rows are no dense loop: a masked tail cannot bound its reads, and auto gives none.
  CHECK(described(compile(kSpmv, R"({"tensors": {"y": {"format": "dense"}, "A": {"format": "dcsr"}}, "schedule": "auto"})")) ==
        std::vector<std::string>{"parallel(i, dynamic, 512)"});
  CHECK(described(compile("C(i,j) = A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
                                                        "schedule": "auto"})")) == std::vector<std::string>{"parallel(i, dynamic, 128)"});
}

TEST_CASE("parallel even_rows: static or dynamic chosen on each call from the rows' positions") {
  spgen::Compilation c = compile(kSpmv, R"({"name": "k", "tensors": {"A": {"format": "csr"}}, "schedule": [
      {"op": "parallel", "var": "i", "schedule": "even_rows", "chunk": 256}]})");
  CHECK(contains(c.stage2_dump, "for i in [0, dim_i) parallel(static if the rows of A_pos1 are even, else dynamic, 256):"));
  const std::string& src = c.files[1].text;
  CHECK(contains(src, "struct spgen_even_rows_schedule {"));
  CHECK(contains(src, "  {\n  #ifdef _OPENMP\n    const spgen_even_rows_schedule spgen_rows_schedule(A_pos1, dim_i, 256);\n  #endif\n"
                      "    #pragma omp parallel for schedule(runtime)\n    for (int64_t i = 0; i < dim_i; i++) {"));
  // The dynamic fallback's chunk defaults to 512.
  CHECK(contains(compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "i", "schedule": "even_rows"}]})")
                     .files[1].text,
                 "spgen_rows_schedule(A_pos1, dim_i, 512);"));
  // Only a loop over a csr-like operand's rows has positions to read; not with balance or private copies.
  const char* const refused = "even_rows: loop i does not run over the rows of a csr-like operand (a dense top level over a "
                              "compressed one), whose row positions would tell how evenly its rows hold their entries";
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"y": {"format": "dense"}, "A": {"format": "dcsr"}}, "schedule": [
      {"op": "parallel", "var": "i", "schedule": "even_rows"}]})"), refused));
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [
      {"op": "split", "var": "i", "factor": 4, "into": ["i0", "i1"]}, {"op": "parallel", "var": "i0", "schedule": "even_rows"}]})"),
                 "even_rows: loop i0 does not run over the rows"));
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [
      {"op": "parallel", "var": "i", "schedule": "even_rows", "balance": "nonzeros"}]})"),
                 "even_rows: loop i already has its iterations shared by balance"));
}

TEST_CASE("auto schedule parallelizes a spatial outer loop and vectorizes a dense inner one") {
  // (B dense in k: j stays innermost. In CSF, j leaves the sum over l for a register tile.)
  CHECK(described(compile(kMttkrp, R"({"tensors": {"B": {"format": {"levels": ["compressed", "dense", "compressed"]}}}, "schedule": "auto"})")) ==
        std::vector<std::string>{"parallel(i, dynamic, 128)", "vectorize(j)"});
  spgen::Compilation csc = compile(kSpmv, R"({"tensors": {"A": {"format": "csc"}}, "schedule": "auto"})");
  CHECK(csc.schedule.empty());  // j is a reduction (no parallel); i is a position loop (no vectorize)
  // Several loops over i (a sum's parts, each in a nest of its own): no op can name one, so auto
  // leaves them alone (it chose parallel i and failed; found by fuzzing).
  spgen::Compilation parts = compile("C(i,j) = A(k,i) * B(k,j) + D(i,j)",
                                     R"({"tensors": {"A": {"format": "coo"}, "B": {"format": "ell", "width": 4}, "D": {"format": "ell", "width": 4},
                                         "C": {"format": "ragged"}}, "schedule": "auto"})");
  CHECK(parts.schedule.empty());
  CHECK(contains(parts.stage2_dump, "+ D(i,j)"));
}

TEST_CASE("the C++ backend prints OpenMP pragmas, typed literals and the ABI") {
  spgen::Compilation c = compile("y(i) = 2 * A(i,j) * x(j)", R"({"name": "k", "tensors": {"A": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "i", "schedule": "dynamic", "chunk": 8}, {"op": "split", "var": "j", "factor": 8},
                   {"op": "vectorize", "var": "j1"}, {"op": "unroll", "var": "j0", "factor": 4}]})");
  REQUIRE(c.files.size() == 2);
  CHECK(c.files[0].name == "k.h");
  CHECK(c.files[1].name == "k.cpp");
  const std::string& src = c.files[1].text;
  CHECK(contains(src, "#pragma omp parallel for schedule(dynamic, 8)\n  for (int64_t i = 0; i < dim_i; i++) {"));
  CHECK(contains(src, "#pragma GCC unroll 4\n    for (int64_t j0 = 0;"));
  CHECK(contains(src, "#pragma omp simd reduction(+:acc)\n      for (int64_t j1 = 0;"));
  CHECK(contains(src, "y_vals[i] = 2.0f * acc;"));  // the literal is applied once, after the sum
  CHECK(contains(src, "extern \"C\" void k("));
  const std::string& header = c.files[0].text;
  CHECK(contains(header, "#ifndef SPGEN_K_H"));
  CHECK(contains(header, "//   A_pos1  const int32_t*  A level 1 (compressed, index j, mode 1)"));
  CHECK(contains(header, "length dim_i + 1"));
  CHECK(contains(header, "y_vals  float*          output y(i), dense in storage order; overwritten; length dim_i"));
}

TEST_CASE("COO: one loop over entries, singleton coordinates, and adds into a zeroed output") {
  std::string s2 = compile(kSpmv, R"({"tensors": {"y": {"format": "dense"}, "A": {"format": "coo"}}})").stage2_dump;
  CHECK(contains(s2, "for i at pA0 in [int64(A_pos0[0]), int64(A_pos0[1])) sequential:"));
  CHECK(contains(s2, "let j: int64 = int64(A_crd1[pA0])"));  // no loop for the singleton level
  CHECK(contains(s2, "for zero y"));
  CHECK(contains(s2, "y_vals[i] += acc"));  // rows repeat, so their sums add up
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"y": {"format": "dense"}, "A": {"format": "coo"}}, "schedule": [{"op": "parallel", "var": "i"}]})"),
                 "/schedule/0: error: parallel: cannot parallelize i: its coordinates repeat (a non-unique level of A)"));
  spgen::Compilation c = compile(kSpmv, R"({"tensors": {"y": {"format": "dense"}, "A": {"format": "coo"}}})");
  CHECK(contains(c.files[0].text, "A_crd1  const int32_t*  A level 1 (singleton, index j, mode 1): the coordinate of each entry, one per parent position; length A_pos0[1]"));
}

TEST_CASE("ELL: a fixed number of slots per row, padding skipped") {
  spgen::Compilation c = compile(kSpmv, R"({"tensors": {"A": {"format": "ell", "width": 8}}})");
  CHECK(contains(c.stage1_dump, "A.1 = sparse_fixed(j, parent=A.0, length=dim_j, crd=A_crd1, width=8)"));
  CHECK(contains(c.stage2_dump, "for j at pA1 in [i * 8, i * 8 + 8):"));
  CHECK(contains(c.stage2_dump, "if 0 <= j:"));
  CHECK(contains(c.files[0].text, "increasing, then padding marked -1; length dim_i * 8"));
  CHECK(!contains(c.files[0].text, "A_pos1"));  // ELL has no positions array
}

TEST_CASE("ragged: coordinates are positions within the row") {
  spgen::Compilation c = compile(kSpmm, R"({"tensors": {"A": {"format": "ragged"}}})");
  CHECK(contains(c.stage1_dump, "A.1 = dense_variable(j, parent=A.0, length=dim_j, pos=A_pos1)"));
  CHECK(contains(c.stage2_dump, "let j: int64 = pA1 - int64(A_pos1[i])"));
  CHECK(!contains(c.files[0].text, "A_crd1"));
}

TEST_CASE("co-iteration: an ELL row is a merge cursor that stops at the padding") {
  std::string s2 = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"C": {"format": "dense"}, "A": {"format": "ell", "width": 4}, "B": {"format": "csr"}}})").stage2_dump;
  CHECK(contains(s2, "# co-iterate j: two-finger merge of A (ELL slots, up to the padding), B"));
  CHECK(contains(s2, "var pA1: int64 = i * 4"));
  CHECK(contains(s2, "let jA: int64 = pA1 < pA1_end && 0 <= int64(A_crd1[pA1]) ? int64(A_crd1[pA1]) : 9223372036854775807"));
  CHECK(contains(s2, "while j ((pA1 < pA1_end && 0 <= int64(A_crd1[pA1])) || pB1 < pB1_end):"));
}

TEST_CASE("co-iteration: a ragged level is looked up directly where another operand drives, streamed in a union") {
  const char* config = R"({"tensors": {"C": {"format": "dense"}, "A": {"format": "ragged"}, "B": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "i"}]})";
  std::string product = compile("C(i,j) = A(i,j) * B(i,j)", config).stage2_dump;
  CHECK(contains(product, "# co-iterate j: the entries of B, with direct lookup into A (ragged: position A_pos1[parent] + coordinate)"));
  CHECK(contains(product, "for j at pB1 in [int64(B_pos1[i]), int64(B_pos1[i + 1])):"));
  CHECK(contains(product, "let pA1: int64 = pA1_begin + j"));
  CHECK(contains(product, "let inA: bool = pA1 < pA1_end"));
  CHECK(contains(product, "if inA:"));
  CHECK(!contains(product, "while"));
  std::string sum = compile("C(i,j) = A(i,j) + B(i,j)", config).stage2_dump;
  CHECK(contains(sum, "# co-iterate j: two-finger merge of A (ragged: coordinates 0 .. n-1), B"));
  CHECK(contains(sum, "let jA: int64 = pA1 < pA1_end ? pA1 - pA1_begin : 9223372036854775807"));
  // Two ragged operands: one of them has to stream.
  CHECK(contains(compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "ragged"}, "B": {"format": "ragged"}}})").stage2_dump,
                 "# co-iterate j: the entries of A (ragged: coordinates 0 .. n-1), with direct lookup into B"));
  // Beside a dense term: every coordinate, and no cursor, so the loop may run in parallel.
  std::string dense = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"C": {"format": "dense"}, "A": {"format": "ragged"}}, "schedule": [{"op": "parallel", "var": "j"}]})").stage2_dump;
  CHECK(contains(dense, "# co-iterate j: every coordinate, with direct lookup into A"));
  CHECK(contains(dense, "for j in [0, dim_j) parallel(static):"));
}

TEST_CASE("co-iteration: a COO level merges a run of equal coordinates at a time") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"C": {"format": "dense"}, "A": {"format": "coo"}, "B": {"format": "csr"}}})");
  CHECK(contains(c.stage2_dump, "# co-iterate i: every coordinate, with cursors into A (runs of equal coordinates)"));
  CHECK(contains(c.stage2_dump, "while run of pA0 (inA && pA0_run_end < pA0_end && int64(A_crd0[pA0_run_end]) == i):"));
  CHECK(contains(c.stage2_dump, "pA0 = pA0_run_end"));
  CHECK(contains(c.stage2_dump, "# co-iterate j: two-finger merge of A (the entries of the run above), B"));
  CHECK(contains(c.stage2_dump, "var pA1: int64 = inA ? pA0 : 0"));
  CHECK(contains(c.stage2_dump, "C_vals[pC1] = (inA && inA_2 ? A_vals[pA1] : 0) + (inB ? B_vals[pB1] : 0)"));  // once per entry
  CHECK(contains(c.files[0].text, "strictly increasing among entries that agree on the levels above"));
  // Driving alone, the rows still go by runs when the level below is merged.
  std::string product = compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"C": {"format": "dense"}, "A": {"format": "coo"}, "B": {"format": "csr"}}})").stage2_dump;
  CHECK(contains(product, "# co-iterate i: a cursor over A (runs of equal coordinates)"));
  CHECK(contains(product, "while i (pA0 < pA0_end):"));
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "coo"}, "B": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "i"}]})"),
                 "/schedule/0: error: parallel: loop i co-iterates several sparse operands (a two-finger merge)"));
  // Alone, COO is still one loop over its entries, adding into the output.
  std::string spmv = compile(kSpmv, R"({"tensors": {"A": {"format": "coo"}, "y": {"format": "dense"}}})").stage2_dump;
  CHECK(!contains(spmv, "run of"));
  CHECK(contains(spmv, "y_vals[i] += "));
}

TEST_CASE("assembled sparse output: count and prefix sum, then fill through a cursor per row") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)", R"({"name": "add", "tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "i"}]})");
  REQUIRE(c.assemble.size() == 1);
  std::string assemble = spgen::loops::dump_stage2(c.assemble.front());
  CHECK(contains(assemble, "kernel add_assemble("));
  CHECK(contains(assemble, "C_pos1: mut int32[]"));
  CHECK(!contains(assemble, "C_crd1"));
  CHECK(contains(assemble, "for i in [0, dim_i) parallel(static):"));  // the schedule applies here too
  CHECK(contains(assemble, "C_pos1[i + 1] += 1"));
  CHECK(contains(assemble, "C_pos1[p_2 + 1] += C_pos1[p_2]"));
  CHECK(contains(c.stage2_dump, "var pC1: int64 = int64(C_pos1[i])"));
  CHECK(contains(c.stage2_dump, "C_crd1[pC1] = int32(j)"));
  CHECK(contains(c.stage2_dump, "pC1 += 1"));
  const std::string& header = c.files[0].text;
  CHECK(contains(header, "// First call add_assemble(...), which builds the output's positions:"));
  CHECK(header.find("\nvoid add_assemble(") < header.find("\nvoid add("));
  CHECK(contains(c.files[1].text, "(void)A_vals;"));  // counting reads no values
}

TEST_CASE("assembled sparse output: summed loops are skipped when counting, and their ops too") {
  spgen::Compilation c = compile("A(i,j) = B(i,j,k) * c(k)", R"({"tensors": {"B": {"format": {"levels": ["dense", "compressed", "dense"]}}, "A": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "i"}, {"op": "vectorize", "var": "k"}]})");
  REQUIRE(c.assemble.size() == 1);
  std::string assemble = spgen::loops::dump_stage2(c.assemble.front());
  CHECK(!contains(assemble, "for k"));
  CHECK(contains(c.stage2_dump, "for k in [0, dim_k) vectorized +acc:"));
  CHECK(contains(c.stage2_dump, "A_vals[pA1] = acc"));
}

TEST_CASE("assembled sparse output: a scattered row under a compressed level (SpGEMM into dcsr)") {
  spgen::Compilation c = compile("C(i,j) = A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "dcsr"}}})");
  REQUIRE(c.assemble.size() == 2);
  // Counting rows needs no workspace: a row holds an entry once anything is written under it.
  std::string rows = spgen::loops::dump_stage2(c.assemble[0]);
  CHECK(!contains(rows, "allocate"));
  CHECK(contains(rows, "C0_nonempty = true"));
  CHECK(contains(rows, "C_pos0[pC0 + 1] += int32(int64(C0_nonempty))"));
  // Counting a row's entries: the row's marker is the cursor of its compressed level.
  std::string entries = spgen::loops::dump_stage2(c.assemble[1]);
  CHECK(contains(entries, "if C_seen[j] != pC0:"));
  CHECK(contains(entries, "C_pos1[pC0 + 1] += 1"));
  CHECK(contains(entries, "pC0 += int64(C0_nonempty)"));
  // Filling: the first touch of a coordinate stores the row's coordinate and opens the row.
  CHECK(contains(c.stage2_dump, "          if C_seen[j] != pC0:\n"
                                "            C_seen[j] = pC0\n"
                                "            C_crd0[pC0] = int32(i)\n"
                                "            C0_nonempty = true\n"));
  CHECK(contains(c.stage2_dump, "for append C at t in [0, C_ntouched):"));
}

TEST_CASE("assembled sparse output: a COO output appends each entry's coordinates at one cursor") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "coo"}}})");
  REQUIRE(c.assemble.size() == 1);
  CHECK(c.assemble[0].name == "t_assemble");
  std::string count = spgen::loops::dump_stage2(c.assemble[0]);
  CHECK(contains(count, "C_pos0[pC0 + 1] += 1"));
  CHECK(!contains(count, "C_crd"));
  CHECK(contains(c.stage2_dump, "      C_crd0[pC0] = int32(i)\n"
                                "      C_crd1[pC0] = int32(j)\n"
                                "      C_vals[pC0] = (inA ? A_vals[pA1] : 0) + (inB ? B_vals[pB1] : 0)\n"
                                "      pC0 += 1\n"));
  // Scattered (SpGEMM): rows gathered in a workspace, marked by their number, appended with i.
  spgen::Compilation spgemm = compile("C(i,j) = A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "coo"}}})");
  REQUIRE(spgemm.assemble.size() == 1);
  std::string spgemm_count = spgen::loops::dump_stage2(spgemm.assemble[0]);
  CHECK(contains(spgemm_count, "allocate C_rows: int64[1] = 0, C_seen: int64[dim_j] = -1:"));
  CHECK(contains(spgemm_count, "if C_seen[j] != C_rows[0]:"));
  CHECK(contains(spgemm_count, "C_pos0[pC0 + 1] += 1"));
  CHECK(contains(spgemm.stage2_dump, "        C_crd0[pC0] = int32(i)\n"
                                     "        C_crd1[pC0] = int32(j_out)\n"
                                     "        C_vals[pC0] = C_row[j_out]\n"
                                     "        pC0 += 1\n"
                                     "      C_rows[0] += 1\n"));
  // A summed loop outside the rows cannot finish a row before the next begins: the entries are listed.
  spgen::Compilation transposed = compile("C(i,j) = A(k,i) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "coo"}}})");
  CHECK(contains(transposed.stage2_dump, "C_keys[C_listed] = i * dim_j + j"));
  CHECK(contains(transposed.stage2_dump, "      C_crd0[qC0] = int32(C_key / dim_j % dim_i)\n"
                                         "      qC0 += 1\n"
                                         "      let pC0: int64 = qC0 - 1\n"
                                         "      C_crd1[pC0] = int32(C_key / C_stride1 % dim_j)\n"));
  // A dense level above the COO segment: entries are counted per row, which may be parallel.
  spgen::Compilation rows = compile("C(i,j,k) = A(i,j,k) + B(i,j,k)",
                                    R"({"tensors": {"A": {"format": {"levels": ["dense", "compressed", "compressed"]}}, "B": {"format": {"levels": ["dense", "compressed", "compressed"]}},
                                        "C": {"format": {"levels": ["dense", "compressed-nonunique", "singleton"]}}},
                                        "schedule": [{"op": "parallel", "var": "i"}]})");
  CHECK(contains(rows.stage2_dump, "for i in [0, dim_i) parallel(static):\n    var pC1: int64 = int64(C_pos1[i])"));
  CHECK(contains(rows.stage2_dump, "C_crd2[pC1] = int32(k)"));
}

TEST_CASE("assembled sparse output: levels below a COO segment hang under a position per distinct coordinates of the segment") {
  // COO rows (i,j) of dense k fibres: the segment is opened like a compressed level above the last
  // (a flag raised by the entries below, its coordinates stored at its cursor), k located under it.
  spgen::Compilation dense = compile("C(i,j,k) = A(i,j) * X(j,k)",
                                     R"({"tensors": {"A": {"format": "csr"}, "X": {"format": "dense"},
                                         "C": {"format": {"levels": ["compressed-nonunique", "singleton", "dense"]}}}})");
  REQUIRE(dense.assemble.size() == 1);
  CHECK(contains(spgen::loops::dump_stage2(dense.assemble[0]), "C_pos0[pC0 + 1] += int32(int64(C0_nonempty))"));
  CHECK(contains(dense.stage2_dump, "for zero C at p in [0, int64(C_pos0[1]) * dim_k):"));
  CHECK(contains(dense.stage2_dump, "      var C0_nonempty: bool = false\n"
                                    "      for k in [0, dim_k) sequential:\n"
                                    "        let pC2: int64 = pC0 * dim_k + k\n"));
  CHECK(contains(dense.stage2_dump, "        C_crd0[pC0] = int32(i)\n"
                                    "        C_crd1[pC0] = int32(j)\n"
                                    "        C0_nonempty = true\n"
                                    "        C_vals[pC2] = A_vals[pA1] * X_vals[pX1]\n"
                                    "      pC0 += int64(C0_nonempty)\n"));
  // Compressed l fibres under the (i,j) positions, scattered over k: a phase per level, the
  // workspace's rows marked by the segment's position.
  spgen::Compilation ttm = compile("C(i,j,l) = A(i,j,k) * B(k,l)",
                                   R"({"tensors": {"A": {"format": "csf"}, "B": {"format": "csr"},
                                       "C": {"format": {"levels": ["compressed-nonunique", "singleton", "compressed"]}}}})");
  REQUIRE(ttm.assemble.size() == 2);
  CHECK(ttm.assemble[0].name == "t_assemble_level0");
  CHECK(ttm.assemble[1].name == "t_assemble_level2");
  CHECK(contains(ttm.stage2_dump, "if C_seen[l] != pC0:"));
  CHECK(contains(ttm.stage2_dump, "        var pC2: int64 = int64(C_pos2[pC0])\n"));
  // Out of order (A csc: j outside i): listed, the segment's position advancing where (i,j) changes.
  spgen::Compilation listed = compile("C(i,j,k) = A(i,j) * X(j,k)",
                                      R"({"tensors": {"A": {"format": "csc"}, "X": {"format": "dense"},
                                          "C": {"format": {"levels": ["compressed-nonunique", "singleton", "dense"]}}}})");
  CHECK(contains(listed.stage2_dump, "      if u == 0 || C_key / dim_k != C_previous / dim_k:\n"
                                     "        C_crd0[qC0] = int32(C_key / C_stride0 % dim_i)\n"
                                     "        qC0 += 1\n"
                                     "      let pC0: int64 = qC0 - 1\n"
                                     "      C_crd1[pC0] = int32(C_key / dim_k % dim_j)\n"));
  // A summed loop between the segment's indices (reordered i, k, j... here k outside j) repeats
  // (i,j) coordinates: listed too.
  spgen::Compilation summed = compile("C(i,j,l) = A(i,k) * B(k,j,l)",
                                      R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csf"},
                                          "C": {"format": {"levels": ["compressed-nonunique", "singleton", "dense"]}}}})");
  CHECK(contains(summed.stage2_dump, "it is summed over k outside its COO segment's level 1 (index j)"));
}

TEST_CASE("assembled sparse output: a ragged row's length is its largest coordinate + 1, and it is located, not appended") {
  spgen::Compilation c = compile("C(i,j) = A(k,i) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "ragged"}}})");
  REQUIRE(c.assemble.size() == 1);
  // Lengths are maxima, so k may be summed outside the rows, and no workspace is needed.
  std::string count = spgen::loops::dump_stage2(c.assemble[0]);
  CHECK(contains(count, "C_pos1[i + 1] = max(C_pos1[i + 1], int32(j + 1))"));
  CHECK(!contains(c.stage2_dump, "allocate"));
  CHECK(contains(c.stage2_dump, "  # zero C: the loops below add into it\n"));
  CHECK(contains(c.stage2_dump, "let pC1: int64 = int64(C_pos1[i]) + j\n"));
  CHECK(contains(c.stage2_dump, "C_vals[pC1] += A_vals[pA1] * B_vals[pB1]"));
  CHECK(contains(c.files[0].text, "C_pos1  int32_t*        output C level 1 (dense-variable, index j): positions, written here (each row's "
                                  "largest coordinate + 1, then summed)"));
  // The rows have no private copies: a summed loop around them stays sequential.
  CHECK(contains(error_of("C(i,j) = A(k,i) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "ragged"}},
      "schedule": [{"op": "parallel", "var": "k", "reduction": "atomic"}]})"),
                 "c.json: /schedule/0: error: parallel: cannot parallelize k: it adds into the rows of C, which are assembled, not privatized"));
}

TEST_CASE("assembled sparse output: an ELL row is counted for the width check, then filled slot by slot over padding") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "ell", "width": 4}}})");
  REQUIRE(c.assemble.size() == 1);
  std::string count = spgen::loops::dump_stage2(c.assemble[0]);
  CHECK(contains(count, "      C_pos1[i + 1] += 1\n"));
  CHECK(contains(count, "C_pos1[p_2 + 1] += C_pos1[p_2]"));
  CHECK(contains(c.stage2_dump, "  # zero C: every slot starts as padding\n"
                                "  for zero C at p in [0, dim_i * 4):\n"
                                "    C_vals[p] = 0\n"
                                "    C_crd1[p] = -1\n"));
  CHECK(contains(c.stage2_dump, "    var pC1: int64 = i * 4\n"));
  CHECK(contains(c.stage2_dump, "      if pC1 < (i + 1) * 4:\n        C_crd1[pC1] = int32(j)\n"));
  CHECK(!contains(spgen::loops::dump_stage2(c.func), "C_pos1"));  // the fill needs no positions
  // A scattered row (SpGEMM) is gathered in a workspace, then sorted into the row's slots.
  spgen::Compilation spgemm = compile("C(i,j) = A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "ell", "width": 4}}})");
  CHECK(contains(spgemm.stage2_dump, "      for append C at t in [0, C_ntouched):\n"
                                     "        if pC1 < (i + 1) * 4:\n"
                                     "          let j_out: int64 = C_touched[t]\n"));
  CHECK(contains(c.files[0].text + c.files[1].text,
                 "parent position p gets C_pos1[p+1]-C_pos1[p] entries, which must be at most 4 (the width) before " +
                     c.func.name + " is called: it stores only the first 4 of a longer row"));
}

TEST_CASE("assembled sparse output: a ragged level above the last is sized by its largest coordinate that holds entries, then located") {
  const char* tensor_add = "C(i,j,k) = A(i,j,k) + B(i,j,k)";
  spgen::Compilation c = compile(tensor_add, R"({"tensors": {"A": {"format": {"levels": ["dense", "compressed", "compressed"]}},
      "B": {"format": {"levels": ["dense", "compressed", "compressed"]}}, "C": {"format": {"levels": ["dense", "dense-variable", "compressed"]}}},
      "schedule": [{"op": "parallel", "var": "i"}]})");
  REQUIRE(c.assemble.size() == 2);
  // The ragged level: a flag per j, raised by the entries below; the row takes the largest j that has one.
  std::string lengths = spgen::loops::dump_stage2(c.assemble[0]);
  CHECK(contains(lengths, "      var C1_nonempty: bool = false\n"));
  CHECK(contains(lengths, "      if C1_nonempty:\n        C_pos1[i + 1] = max(C_pos1[i + 1], int32(j + 1))\n"));
  CHECK(contains(lengths, "for i in [0, dim_i) parallel(static):"));
  // The level below counts under the located position pos[i] + j, of which there are C_pos1[dim_i].
  std::string counts = spgen::loops::dump_stage2(c.assemble[1]);
  CHECK(contains(counts, "for zero C at p in [0, int64(C_pos1[dim_i]) + 1) parallel(static):"));
  CHECK(contains(counts, "      let pC1: int64 = int64(C_pos1[i]) + j\n"));
  CHECK(contains(counts, "C_pos2[pC1 + 1] += 1"));
  // (a j past the row's largest one that holds entries has no position: the cursor reads nothing there)
  CHECK(contains(c.stage2_dump, "      let pC1: int64 = int64(C_pos1[i]) + j\n"
                                "      var pC2: int64 = pC1 < int64(C_pos1[dim_i]) ? int64(C_pos2[pC1]) : 0\n"));
  CHECK(!contains(c.stage2_dump, "# zero C"));  // gaps hold no entries below
  // A dense level below a ragged one stores every coordinate under its positions: zeroed first.
  spgen::Compilation dense_below = compile(tensor_add, R"({"tensors": {"A": {"format": "csf"}, "C": {"format": {"levels": ["dense-variable", "dense", "compressed"]}}}})");
  CHECK(contains(dense_below.stage2_dump, "# zero C: the loops below skip entries that must be zero"));
}

TEST_CASE("assembled sparse output: ELL rows under a compressed level are counted per stored row, then filled from the row's first slot") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "dcsr"},
      "C": {"format": {"levels": ["compressed", {"kind": "sparse-fixed", "width": 4}]}}}})");
  REQUIRE(c.assemble.size() == 2);
  std::string count = spgen::loops::dump_stage2(c.assemble[1]);
  CHECK(contains(count, "for zero C at p in [0, int64(C_pos0[1]) + 1):"));
  CHECK(contains(count, "C_pos1[pC0 + 1] += 1"));
  CHECK(contains(count, "pC0 += int64(C0_nonempty)"));
  CHECK(contains(c.stage2_dump, "  for zero C at p in [0, int64(C_pos0[1]) * 4):\n    C_vals[p] = 0\n    C_crd1[p] = -1\n"));
  CHECK(contains(c.stage2_dump, "    var pC1: int64 = pC0 * 4\n"));
  CHECK(contains(c.stage2_dump, "if pC1 < (pC0 + 1) * 4:\n"));
  CHECK(contains(c.files[0].text, "C_crd1  int32_t*        output C level 1 (sparse-fixed, index j): coordinates, written here: 4 per parent "
                                  "position, increasing, then padding marked -1; length C_pos0[1] * 4"));
}

TEST_CASE("assembled sparse output: a dense level under an absent parent adds no entries") {
  // E's j level is dense under its compressed i: the j loop visits every coordinate, but where E lacks row i only
  // B's entries are in the iteration space, so the output's entry is counted and written only where some term is.
  const char* ttv_sum = "A(i,j) = (B(i,j,k) + E(i,j,k)) * c(k)";
  const std::string operands = R"("B": {"format": {"levels": ["dense", "compressed", "compressed"]}},
      "E": {"format": {"levels": ["compressed", "dense", "compressed"]}}, "c": {"format": "dense"})";
  spgen::Compilation csr = compile(ttv_sum, R"({"tensors": {"A": {"format": "csr"}, )" + operands + "}}");
  REQUIRE(csr.assemble.size() == 1);
  std::string count = spgen::loops::dump_stage2(csr.assemble[0]);
  CHECK(contains(count, "    for j in [0, dim_j) sequential:\n      let inB: bool = pB1 < pB1_end && int64(B_crd1[pB1]) == j\n"
                        "      if inB || inE:\n        A_pos1[i + 1] += 1\n"));
  CHECK(contains(csr.stage2_dump, "      let pE1: int64 = pE0 * dim_j + j\n      if inB || inE:\n"));
  // A dense output stores every coordinate anyway: its loops are not guarded.
  spgen::Compilation dense = compile(ttv_sum, R"({"tensors": {"A": {"format": "dense"}, )" + operands + "}}");
  CHECK(!contains(dense.stage2_dump, "if inB || inE:"));
}

TEST_CASE("assembled sparse output: entries that arrive out of order are listed, sorted, summed and packed") {
  // C = A^T B with A csr: the loop order is k, i, j, so k is summed outside both levels of a dcsr C.
  const char* transposed = "C(i,j) = A(k,i) * B(k,j)";
  spgen::Compilation dcsr = compile(transposed, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "dcsr"}}})");
  REQUIRE(dcsr.assemble.size() == 2);
  // Each phase lists the entries' keys; level 0 counts the distinct rows, level 1 each row's entries.
  std::string rows = spgen::loops::dump_stage2(dcsr.assemble[0]);
  CHECK(contains(rows, "  allocate growable C_keys: int64[0] = 0:\n"));
  CHECK(contains(rows, "# list the entries of C as the loops produce them (out of order: it is summed over k outside its compressed "
                       "level 0 (index i)), keyed by their coordinates in storage order"));
  CHECK(contains(rows, "    for k in [0, dim_k):\n"));
  CHECK(contains(rows, "          C_keys[C_listed] = i * dim_j + j\n          C_listed += 1\n"));
  CHECK(contains(rows, "    sort C_keys[0, C_listed)\n"));
  CHECK(contains(rows, "      if u == 0 || C_key / dim_j != C_previous / dim_j:\n        C_pos0[1] += 1\n"));
  std::string entries = spgen::loops::dump_stage2(dcsr.assemble[1]);
  CHECK(contains(entries, "      let pC0: int64 = qC0 - 1\n      C_pos1[pC0 + 1] += 1\n"));
  // The fill sorts the values with their keys, sums repeats, then stores each level's coordinates.
  CHECK(contains(dcsr.stage2_dump, "allocate growable C_keys: int64[0] = 0, growable C_entries: float32[0] = 0:"));
  CHECK(contains(dcsr.stage2_dump, "          C_entries[C_listed] = A_vals[pA1] * B_vals[pB1]\n"));
  CHECK(contains(dcsr.stage2_dump, "    sort C_keys[0, C_listed) with C_entries\n"));
  CHECK(contains(dcsr.stage2_dump, "      else:\n        C_entries[C_distinct - 1] += C_entries[e]\n"));
  CHECK(contains(dcsr.stage2_dump, "        C_crd0[qC0] = int32(C_key / dim_j % dim_i)\n"));
  CHECK(contains(dcsr.stage2_dump, "      C_vals[pC1] = C_entries[u]\n"));
  CHECK(contains(dcsr.files[1].text, "spgen_sort_entries(C_keys.data(), C_entries.data(), C_listed);"));
  CHECK(contains(dcsr.files[1].text, "if (C_listed >= static_cast<int64_t>(C_keys.size())) C_keys.resize(2 * C_listed + 64);"));
  // The outer loop may run in parallel: each thread lists its static range of k, and the parts
  // join in thread order (the loop's order), so no reduction and no other schedule.
  spgen::Compilation parallel = compile(transposed, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "k"}]})");
  CHECK(contains(parallel.stage2_dump, "    allocate growable C_keys_thread: int64[0] = 0, growable C_entries_thread: float32[0] = 0, "
                                       "local C_listed_thread: int64[1] = 0:\n      for k in [0, dim_k) parallel(static):\n"));
  CHECK(contains(parallel.stage2_dump, "            C_keys_thread[C_listed_thread[0]] = i * dim_j + j\n"
                                       "            C_entries_thread[C_listed_thread[0]] = A_vals[pA1] * B_vals[pB1]\n"
                                       "            C_listed_thread[0] += 1\n"));
  CHECK(contains(parallel.stage2_dump, "      for join C at t in [0, C_listed_thread[0]) in thread order:\n"
                                       "        C_keys[C_listed] = C_keys_thread[t]\n"
                                       "        C_entries[C_listed] = C_entries_thread[t]\n        C_listed += 1\n"));
  CHECK(contains(parallel.files[1].text, "    #pragma omp parallel\n    {\n      std::vector<int64_t> C_keys_thread(0, 0);\n"));
  CHECK(contains(parallel.files[1].text, "      #ifdef _OPENMP\n      #pragma omp for ordered schedule(static, 1)\n"
                                         "      for (int spgen_thread = 0; spgen_thread < omp_get_num_threads(); spgen_thread++)\n"
                                         "      #pragma omp ordered\n      #endif\n"
                                         "      for (int64_t t = 0; t < C_listed_thread[0]; t++) {\n"));
  CHECK(contains(parallel.files[1].text, "#ifdef _OPENMP\n#include <omp.h>\n#endif\n"));
  CHECK(!contains(dcsr.files[1].text, "omp.h"));  // sequential: the list as before
  CHECK(contains(spgen::loops::dump_stage2(parallel.assemble[0]), "for k in [0, dim_k) parallel(static):"));
  // auto leaves it sequential (the lists' join costs more than the loop saves, the sort being sequential).
  CHECK(contains(compile("C(i,j) = A(k,i) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "dcsc"}},
      "schedule": "auto"})").stage2_dump, "    for k in [0, dim_k):\n"));
  CHECK(contains(error_of(transposed, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "k", "reduction": "atomic"}]})"),
                 "c.json: /schedule/0: error: parallel: cannot parallelize k with a reduction: it lists the entries of C"));
  CHECK(contains(error_of(transposed, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "k", "schedule": "dynamic", "chunk": 4}]})"),
                 "cannot parallelize k with a schedule other than static without chunk: it lists the entries of C"));
  // Inner loops, and the halves of a split outer loop, append to the thread's list: sequential.
  CHECK(contains(error_of(transposed, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "i"}]})"),
                 "c.json: /schedule/0: error: parallel: cannot parallelize i: it appends to the list of C's entries"));
  CHECK(contains(error_of(transposed, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "split", "var": "k", "factor": 8}, {"op": "parallel", "var": "k0"}]})"),
                 "cannot parallelize k0: it appends to the list of C's entries, which each thread keeps for the whole outermost loop only"));
  // A summed loop that a reorder forces outside the rows of a csr C.
  spgen::Compilation reordered = compile("C(i,j) = A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "dense"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "reorder", "order": ["k", "i", "j"]}]})");
  CHECK(contains(reordered.stage2_dump, "(out of order: it is summed over k outside its rows (index i))"));
  // Dense or ragged levels are located: no list where only they get coordinates out of order.
  CHECK(!contains(compile(transposed, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": {"levels": ["dense-variable", "dense"]}}}})").stage2_dump,
                  "C_keys"));
}

TEST_CASE("assembled sparse output: on cuda, entries that arrive out of order are counted, listed through an atomic cursor, sorted on the device and packed") {
  const char* transposed = "C(i,j) = A(k,i) * B(k,j)";
  const std::string operands = R"("A": {"format": "csr"}, "B": {"format": "csr"})";
  spgen::Compilation c = compile(transposed, R"({"target": "cuda", "tensors": {)" + operands + R"(, "C": {"format": "dcsr"}}, "schedule": "auto"})");
  REQUIRE(c.assemble.size() == 2);
  // An entry takes its slot first (the count advances: on the device, atomically), then fills it.
  CHECK(contains(c.stage2_dump, "            atomic C_listed += 1\n            C_keys[C_listed - 1] = i * dim_j + j\n"
                                "            C_entries[C_listed - 1] = A_vals[pA1] * B_vals[pB1]\n"));
  // The loops may run on threads: the auto schedule spreads the summed k over blocks and threads.
  CHECK(contains(c.stage2_dump, "for k0 in [0, (dim_k + 127) / 128) bind(blockIdx.x, atomic):"));
  // The sum of repeats and the packing, after the sort, are no part of the bound nest: loops of
  // their own over the grid, and scans by one block (the marks' running sums).
  CHECK(contains(c.stage2_dump, "    sort C_keys[0, C_listed) with C_entries\n"
                                "    # mark each sorted entry that starts a new key; the marks' running sums give each key its slot\n"
                                "    for mark keys of C at e in [0, C_listed) bind(grid, 256 threads):\n"
                                "      C_heads[e + 1] = (e == 0 || C_keys[e] != C_keys[e - 1]) ? 1 : 0\n"
                                "    for slot keys of C at p in [0, C_listed) bind(scan, 1024 threads):\n"
                                "      C_heads[p + 1] += C_heads[p]\n"));
  // Each key's first entry sums its run in sorted order, as one thread would (the same bits).
  CHECK(contains(c.stage2_dump, "        var sum: float32 = C_entries[e]\n"
                                "        var r: int64 = e + 1\n"
                                "        while repeats of C (r < C_listed && C_keys[r] == C_keys[e]):\n"
                                "          sum += C_entries[r]\n"
                                "          r += 1\n"
                                "        C_sums[slot] = sum\n"
                                "    let C_distinct: int64 = C_heads[C_listed]\n"));
  // A compressed level above the last: its positions are the running sums of its marks.
  CHECK(contains(c.stage2_dump, "    for positions of level 0 of C at p in [0, C_distinct) bind(scan, 1024 threads):\n"
                                "      C_new0[p + 1] += C_new0[p]\n"
                                "    # store the entries level by level, in storage order\n"
                                "    for pack the entries of C at u in [0, C_distinct) bind(grid, 256 threads):\n"));
  const std::string& source = c.files[1].text;
  // The loops run twice: counting the entries, then listing them at their slots.
  CHECK(contains(source, "static __global__ void __launch_bounds__(128) t_count_entries("));
  CHECK(contains(source, "        atomicAdd(reinterpret_cast<unsigned long long*>(spgen_C_listed), 1ull);\n"));
  CHECK(contains(source, "C_listed = (int64_t)atomicAdd(reinterpret_cast<unsigned long long*>(spgen_C_listed), 1ull) + 1;"));
  // The host reads the count back and allocates the list at that length, then sorts it on the device.
  CHECK(contains(source, "status = cudaMemcpyAsync(&C_listed, spgen_C_listed, sizeof(int64_t), cudaMemcpyDeviceToHost, stream);\n"
                         "    if (status == cudaSuccess) status = cudaStreamSynchronize(stream);\n"
                         "    if (status == cudaSuccess) status = spgen_list_alloc(&C_keys, C_listed, stream);\n"));
  CHECK(contains(source, "status = spgen_sort_entries(C_keys, C_entries, spgen_C_keys_spare, spgen_C_entries_spare, C_listed, stream);"));
  CHECK(contains(source, "status = spgen_sort_entries(C_keys, static_cast<float*>(nullptr), spgen_C_keys_spare, "
                         "static_cast<float*>(nullptr), C_listed, stream);"));  // an assemble phase's keys
  CHECK(contains(source, "static __global__ void __launch_bounds__(256) spgen_merge_entries("));
  // The header says that the function waits for the stream (for the count).
  CHECK(contains(c.files[0].text, "at a length it counts first: it waits\n//   for the stream there (cudaStreamSynchronize)"));
  // The grid's threads sum the repeats and pack; the marks' arrays are one longer than the list.
  CHECK(contains(source, "    if (status == cudaSuccess) status = spgen_list_alloc(&C_heads, C_listed + 1, stream);\n"));
  CHECK(contains(source, "t_slot_keys_of_C<<<1, 1024, 0, stream>>>(C_heads, C_listed);"));
  CHECK(contains(source, "t_pack_the_entries_of_C<<<spgen_grid_dim(blocks_x, 2147483647), 256, 0, stream>>>(dim_i, dim_j, C_crd0, "
                         "C_crd1, C_vals, C_heads, C_distinct_keys, C_sums, C_new0, C_listed);"));
  // An ELL level is packed by the grid too: an entry's slot is its rank among the distinct
  // coordinates under its parent (the last level's entries are distinct: the entry's index less
  // its parent's first), from scans of the marks; nothing is stored past a parent's W slots.
  const spgen::Compilation ell_compiled = compile(transposed, R"({"target": "cuda", "tensors": {)" + operands + R"(, "C": {"format": "ell", "width": 64}}})");
  const std::string& ell = ell_compiled.files[1].text;
  CHECK(!contains(ell, "t_pack_entries"));
  CHECK(contains(ell, "t_sum_repeats_of_C<<<"));
  CHECK(contains(ell, "t_number_parents_of_level_1_of_C<<<1, 1024, 0, stream>>>(C_heads, C_parents1, C_listed);"));
  CHECK(contains(ell, "t_pack_the_entries_of_C<<<spgen_grid_dim(blocks_x, 2147483647), 256, 0, stream>>>("));
  CHECK(contains(ell_compiled.stage2_dump, "    for start slots of level 1 of C at m_2 in [0, C_distinct) bind(grid, 256 threads):\n"
                                           "      let C_key_3: int64 = C_distinct_keys[m_2]\n"
                                           "      let C_previous_3: int64 = 0 < m_2 ? C_distinct_keys[m_2 - 1] : -1\n"
                                           "      if m_2 == 0 || C_key_3 / dim_j != C_previous_3 / dim_j:\n"
                                           "        C_starts1[C_parents1[m_2 + 1] - 1] = m_2\n"));
  CHECK(contains(ell_compiled.stage2_dump, "      let rC1: int64 = u - C_starts1[C_parents1[u + 1] - 1]\n"
                                           "      if rC1 < 64:\n"
                                           "        C_crd1[pC0 * 64 + rC1] = int32(C_key / C_stride1 % dim_j)\n"));
  // ELL rows above compressed ones: the rows' ranks are the running sums of their marks, and the
  // compressed level below counts only the entries of the rows kept.
  const std::string ell_above = compile(transposed, R"({"target": "cuda", "tensors": {)" + operands +
                                                        R"(, "C": {"format": {"levels": [{"kind": "sparse-fixed", "width": 40}, "compressed"]}}}})")
                                    .stage2_dump;
  CHECK(contains(ell_above, "    for count coordinates of level 0 of C at p in [0, C_distinct) bind(scan, 1024 threads):\n"
                            "      C_distinct0[p + 1] += C_distinct0[p]\n"));
  CHECK(contains(ell_above, "      C_new1[m_2 + 1] = C_distinct0[m_2 + 1] - 1 < 40 ? 1 : 0\n"));
  CHECK(contains(ell_above, "      let rC0: int64 = C_distinct0[u + 1] - 1\n"));
  // A bind of the summed loop is accepted (the cpu refuses to parallelize it, above).
  CHECK(contains(compile(transposed, R"({"target": "cuda", "tensors": {)" + operands + R"(, "C": {"format": "csr"}},
      "schedule": [{"op": "bind", "var": "k", "to": "threadIdx.x", "reduction": "atomic"}]})").stage2_dump, "bind(threadIdx.x"));
  // A shuffle has nothing to combine where each entry takes its own slot.
  CHECK(contains(error_of(transposed, R"({"target": "cuda", "tensors": {)" + operands + R"(, "C": {"format": "csr"}},
      "schedule": [{"op": "bind", "var": "k", "to": "warp", "reduction": "shuffle"}]})"),
                 "c.json: /schedule/0: error: bind: loop k lists the entries of C (they arrive out of order), one slot each, and "
                 "sums into no scalar, so a shuffle reduction has nothing to combine (use \"reduction\": \"atomic\")"));
  // A level order against the operands' (csc from csr) and an ELL level above the last are listed too.
  CHECK(contains(compile("C(i,j) = A(i,j) + B(i,j)", R"({"target": "cuda", "tensors": {"A": {"format": "csr"}, "C": {"format": "dcsc"}}})").stage2_dump,
                 "(out of order: it stores index i in a level below index j, whose loop is inside i's)"));
  CHECK(contains(compile("C(i,j) = A(i,j) + B(i,j)", R"({"target": "cuda", "tensors": {"A": {"format": "csr"},
      "C": {"format": {"levels": [{"kind": "sparse-fixed", "width": 4}, "compressed"]}}}})").stage2_dump,
                 "(out of order: it stores index i in an ELL level above its last one)"));
  // Terms summed over different indices into a listed output: each part's nest lists into the
  // same list (tests/unit/test_place_sum_parts.cpp has the dump).
  CHECK(contains(compile("C(i,k) = A(j,i) * B(j,k) + D(i,k)", R"({"target": "cuda", "tensors": {"A": {"format": "csr"},
      "B": {"format": "csr"}, "D": {"format": "csr"}, "C": {"format": "csr"}}})").stage2_dump,
                 "    # + D(i,k) (no summed index), into the list of C's entries\n"
                 "    for i in [0, dim_i) bind(grid, 256 threads):\n"));
}

TEST_CASE("assembled sparse output: an ELL level above the last keeps each parent's first W distinct coordinates") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"},
      "C": {"format": {"levels": [{"kind": "sparse-fixed", "width": 4}, "compressed"]}}}})");
  REQUIRE(c.assemble.size() == 2);
  CHECK(contains(c.stage2_dump, "(out of order: it stores index i in an ELL level above its last one)"));
  // Its rows are counted for the width check; the level below counts under W slots per parent.
  std::string slots = spgen::loops::dump_stage2(c.assemble[0]);
  CHECK(contains(slots, "      if u == 0 || C_key / dim_j != C_previous / dim_j:\n        C_pos0[1] += 1\n"));
  std::string below = spgen::loops::dump_stage2(c.assemble[1]);
  CHECK(contains(below, "for zero C at p in [0, 4 + 1):"));
  // The fill pads the slots, restarts at a parent's first slot, and stores nothing past its W slots.
  CHECK(contains(c.stage2_dump, "    for pad C at p in [0, 4):\n      C_crd0[p] = -1\n"));
  CHECK(contains(c.stage2_dump, "      if u == 0:\n        qC0 = 0\n"));
  CHECK(contains(c.stage2_dump, "        if qC0 < 4:\n          C_crd0[qC0] = int32(C_key / dim_j % dim_i)\n"));
  CHECK(contains(c.stage2_dump, "      if qC0 - 1 < 4:\n"));
  CHECK(contains(c.files[0].text, "C_pos0  int32_t*        output C level 0 (sparse-fixed, index i): positions, written here"));
  // A dense level below an ELL one stores every coordinate under a slot: zeroed first.
  spgen::Compilation dense_below = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"},
      "C": {"format": {"levels": [{"kind": "sparse-fixed", "width": 4}, "dense"]}}}})");
  CHECK(contains(dense_below.stage2_dump, "# zero C: the loops below skip entries that must be zero"));
}

TEST_CASE("assembled sparse output: what cannot be appended is refused") {
  // Below a COO segment (a position per distinct coordinates of its levels) only dense and
  // compressed levels may follow.
  CHECK(contains(error_of("C(i,j,k) = A(i,j,k) + B(i,j,k)", R"({"tensors": {"A": {"format": "csf"}, "C": {"format": {"levels": ["compressed-nonunique", "singleton", "dense-variable"]}}}})"),
                 "/tensors/C/format/levels/2: error: only dense and compressed levels may lie below a COO segment"));

  // A loop moved above the output's cursor would restart it (stage II reorder after a split).
  CHECK(contains(error_of("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"C": {"format": "csr"}},
      "schedule": [{"op": "split", "var": "j", "factor": 4}, {"op": "reorder", "order": ["j0", "i"]}]})"),
                 "c.json: /schedule/1: error: reorder: the loops j0, i cannot be reordered: i declares pC1, which the loops inside it advance"));
  // A level stored against the loop order cannot be appended to: the entries are listed (the
  // operands' order wins; on cuda too, above).
  CHECK(contains(compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "dcsc"}}})").stage2_dump,
                 "(out of order: it stores index i in a level below index j, whose loop is inside i's)"));
  CHECK(contains(compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"C": {"format": "dcsr"}}, "schedule": [{"op": "reorder", "order": ["j", "i"]}]})").stage2_dump,
                 "(out of order: it stores index j in a level below index i, whose loop is inside j's)"));
  CHECK(contains(compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"C": {"format": "dcsr"}}})").stage2_dump, "for i in [0, dim_i)"));
  CHECK(contains(compile("C(i,j) = A(i,j) + B(i,j)", R"({"target": "cuda", "tensors": {"C": {"format": "dcsr"}}, "schedule": [{"op": "reorder", "order": ["j", "i"]}]})").stage2_dump,
                 "(out of order: it stores index j in a level below index i, whose loop is inside j's)"));
  // `+=` into an assembled output adds its previous value as a term without the summed index: one
  // loop nest (test_place_sum_parts.cpp).
  CHECK(compile("C(i,j) += A(i,k) * B(k,j)", R"({"tensors": {"C": {"format": "csr"}}})").assemble.size() == 1);
}

TEST_CASE("`+=` into an assembled sparse output reads its previous value as the input C_prev") {
  spgen::Compilation c = compile("C(i,j) += A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "dcsr"}, "C": {"format": "csr"}}})");
  CHECK(c.program.spec_text == "C(i,j) = C_prev(i,j) + A(i,j) * B(i,j)");
  REQUIRE(c.program.buffers.size() == 4);
  CHECK(c.program.buffers[1].tensor == "C_prev");
  CHECK(c.program.buffers[1].previous_output);
  CHECK(c.program.buffers[1].format.name == "csr");
  CHECK_FALSE(c.program.iteration.accumulate);  // C is assembled anew
  REQUIRE(c.assemble.size() == 1);
  CHECK(contains(c.stage2_dump, "two-finger merge of A, C_prev"));
  // A name the spec already uses is not taken.
  spgen::Compilation named = compile("C(i,j) += A(i,j) * C_prev(i,j)", R"({"tensors": {"A": {"format": "dcsr"}, "C": {"format": "csr"}}})");
  CHECK(named.program.buffers[1].tensor == "C_prev2");
  // An output that shares an input's structure still adds into its values in place.
  spgen::Compilation shared = compile("C(i,j) += A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "csr"}}})");
  CHECK(shared.program.iteration.accumulate);
  CHECK(shared.program.buffers.size() == 3);
}

TEST_CASE("assembled sparse output with several compressed levels: one assemble phase per level, top down") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) * B(i,j)", R"({"name": "mul", "tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "dcsr"}}})");
  REQUIRE(c.assemble.size() == 2);
  std::string level0 = spgen::loops::dump_stage2(c.assemble[0]), level1 = spgen::loops::dump_stage2(c.assemble[1]);
  CHECK(contains(level0, "kernel mul_assemble_level0("));
  CHECK(!contains(level0, "C_pos1"));
  // A row is counted once, and only where the loops below it produce an entry.
  CHECK(contains(level0, "var C0_nonempty: bool = false"));
  CHECK(contains(level0, "C0_nonempty = true"));
  CHECK(contains(level0, "C_pos0[pC0 + 1] += int32(int64(C0_nonempty))"));
  CHECK(contains(level1, "kernel mul_assemble_level1("));
  CHECK(contains(level1, "C_pos0: int32[]"));
  CHECK(contains(level1, "C_pos1: mut int32[]"));
  CHECK(contains(level1, "C_pos1[pC0 + 1] += 1"));
  CHECK(contains(level1, "pC0 += int64(C0_nonempty)"));
  CHECK(contains(c.stage2_dump, "C_crd0[pC0] = int32(i)"));
  CHECK(contains(c.stage2_dump, "C_crd1[pC1] = int32(j)"));
  const std::string& header = c.files[0].text;
  CHECK(contains(header, "// First call mul_assemble_level0(...), which writes the positions of one output level (marked \"written here\"):"));
  CHECK(contains(header, "and call mul_assemble_level1(...)"));
  // The row cursor is shared by every row: i stays sequential.
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "dcsr"}},
      "schedule": [{"op": "parallel", "var": "i"}]})"), "cannot parallelize i: it appends the entries of C under one parent position"));
  // ... and so do the halves of a split.
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "dcsr"}},
      "schedule": [{"op": "split", "var": "i", "factor": 4}, {"op": "parallel", "var": "i0"}]})"),
                 "/schedule/1: error: parallel: cannot parallelize i0: it appends the entries of C under one parent position"));
}

TEST_CASE("assembled sparse output with a dense level below a compressed one: zeroed, then added into") {
  spgen::Compilation c = compile(kMttkrp, R"({"tensors": {"B": {"format": "csf"}, "A": {"format": {"levels": ["compressed", "dense"]}}}})");
  REQUIRE(c.assemble.size() == 1);
  CHECK(contains(c.stage2_dump, "A_vals[p] = 0"));
  CHECK(contains(c.stage2_dump, "A_vals[pA1] += "));
  CHECK(contains(spgen::loops::dump_stage2(c.assemble[0]), "A_pos0[pA0 + 1] += int32(int64(A0_nonempty))"));
}

namespace {
// The output's line of --emit=stage1.
std::string output_line(const std::string& spec, const std::string& config) {
  std::string dump = compile(spec, config).stage1_dump;
  size_t end = dump.find(", output");
  REQUIRE(end != std::string::npos);
  size_t begin = dump.rfind('\n', end) + 1;
  return dump.substr(begin, dump.find('\n', end) - begin);
}
}  // namespace

TEST_CASE("output fill: sparse where a product's factor stores the index sparsely, dense where a sum unions every fibre") {
  auto fill = [](const std::string& spec, const std::string& config) {
    const spgen::Compilation c = compile(spec, config);
    return spgen::describe_fill(c.spec, spgen::expected_fill(c.spec, c.config));
  };
  // A sum over every i of A's rows fills nearly every j (the issue's y = A^T x).
  CHECK(fill("y(j) = A(i,j) * x(i)", R"({"tensors": {"A": {"format": "csr"}}})") ==
        "j dense: the sum over i unions A's fibres of every i, which fills nearly every j");
  // ... unless another operand selects the rows: x sparse (SpMSpV), or A's row in SpGEMM.
  CHECK(fill("y(j) = A(i,j) * x(i)", R"({"tensors": {"A": {"format": "csr"}, "x": {"format": "sv"}}})") == "j sparse: stored sparsely by A");
  CHECK(fill("C(i,j) = A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}}})") ==
        "i dense: no operand stores it sparsely; j sparse: stored sparsely by B");
  // A sum is sparse only where every term is; a product where any factor is.
  CHECK(fill("C(i,j) = A(i,j) + D(i,j)", R"({"tensors": {"A": {"format": "dcsr"}}})") ==
        "i dense: a term of the sum holds every i; j dense: a term of the sum holds every j");
  CHECK(fill("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "dcsr"}, "B": {"format": "csr"}}})") ==
        "i dense: a term of the sum holds every i; j sparse: stored sparsely by A and B");
  CHECK(fill(kSddmm, R"({"tensors": {"X": {"format": "csr"}}})") == "i dense: no operand stores it sparsely; j sparse: stored sparsely by X");
  CHECK(fill("A(i,j) = B(i,j,k) * c(k)", R"({"tensors": {"B": {"format": "csf"}}})") ==
        "i sparse: stored sparsely by B; j sparse: stored sparsely by B");  // (k is summed below j: a sampling)
}

TEST_CASE("output format inference: compressed where an operand stores the index sparsely, levels in loop order") {
  // csr + csr: i is dense in both, j compressed.
  CHECK(contains(output_line("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}}})"),
                 "C(i,j): float32[C.0, C.1] format csr (inferred from the operands: dense i, compressed j), mode order (0,1)"));
  CHECK(contains(output_line("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "dcsr"}, "B": {"format": "dcsr"}, "C": {"format": "auto"}}})"),
                 "format dcsr (inferred from the operands: compressed i, compressed j)"));
  // The levels follow the loop order: CSC operands make a CSC output.
  CHECK(contains(output_line("C(i,j) = A(i,j) - B(i,j)", R"({"tensors": {"A": {"format": "csc"}, "B": {"format": "csc"}}})"),
                 "format csc (inferred from the operands: dense j, compressed i), mode order (1,0)"));
  CHECK(contains(output_line("A(i,j) = B(i,j,k) * c(k)", R"({"tensors": {"B": {"format": "csf"}}})"),
                 "format dcsr (inferred from the operands: compressed i, compressed j)"));
  // No compressed level above a dense one: MTTKRP's j is dense, so i is dense too.
  CHECK(contains(output_line(kMttkrp, R"({"tensors": {"B": {"format": "csf"}}})"),
                 "format dense (inferred from the operands: dense i, dense j)"));
  CHECK(contains(output_line(kSpmv, R"({"tensors": {"A": {"format": "csr"}}})"), "format dense (inferred from the operands: dense i)"));
  CHECK(contains(output_line(kSpmm, R"({"tensors": {"A": {"format": "csr"}}})"), "format dense (inferred from the operands: dense i, dense k)"));
  CHECK(contains(output_line("C(i,j) = A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}}})"),
                 "format csr (inferred from the operands: dense i, compressed j)"));
  // An inferred output equal to a factor's format shares its structure (SDDMM).
  CHECK(contains(output_line(kSddmm, R"({"tensors": {"X": {"format": "csr"}}})"), "format csr (inferred from the operands: dense i, compressed j)"));
  CHECK(contains(output_line(kSddmm, R"({"tensors": {"X": {"format": "csr"}}})"), "shares the structure of X"));
  // A stage I reorder comes first: the output follows the reordered loops.
  CHECK(contains(output_line("C(i,j) = A(i,j) + B(i,j)", R"({"schedule": [{"op": "reorder", "order": ["j", "i"]}]})"),
                 "format custom (inferred from the operands: dense j, dense i), mode order (1,0)"));
  // Given formats and `+=` outputs are not inferred.
  CHECK(!contains(output_line(kSpmv, R"({"tensors": {"A": {"format": "csc"}, "y": {"format": "dense"}}})"), "inferred"));
  CHECK(!contains(output_line("y(i) += A(i,j) * x(j)", R"({"tensors": {"A": {"format": "csc"}}})"), "inferred"));
  // The header lists it too.
  CHECK(contains(compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}})").files[0].text, "y: dense (levels dense i), inferred from the operands"));
}

TEST_CASE("output format inference: a COO operand's rows go by runs into an inferred or given compressed row level") {
  // TTV of a COO tensor infers dcsr: B's rows go by runs, so A's compressed i is appended once per row.
  spgen::Compilation ttv = compile("A(i,j) = B(i,j,k) * c(k)", R"({"tensors": {"B": {"format": "coo"}}})");
  CHECK(contains(ttv.stage2_dump, "# co-iterate i: a cursor over B (runs of equal coordinates)"));
  CHECK(contains(ttv.stage2_dump, "A_crd0[pA0] = int32(i)"));
  // MTTKRP infers dense (j is dense, so i is too); given (compressed, dense), B's rows go by runs too.
  CHECK(contains(output_line(kMttkrp, R"({"tensors": {"B": {"format": "coo"}}})"), "format dense (inferred"));
  spgen::Compilation mttkrp = compile(kMttkrp, R"({"tensors": {"B": {"format": "coo"}, "A": {"format": {"levels": ["compressed", "dense"]}}}})");
  CHECK(contains(mttkrp.stage2_dump, "# co-iterate i: a cursor over B (runs of equal coordinates)"));
}

TEST_CASE("SpGEMM: a scattered sparse output is gathered per row in a workspace") {
  spgen::Compilation c = compile("C(i,j) = A(i,k) * B(k,j)", R"({"name": "spgemm", "tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "i", "schedule": "dynamic", "chunk": 16}]})");
  REQUIRE(c.assemble.size() == 1);
  std::string assemble = spgen::loops::dump_stage2(c.assemble.front());
  CHECK(contains(assemble, "allocate C_seen: int64[dim_j] = -1:"));
  CHECK(contains(assemble, "if C_seen[j] != i:"));
  CHECK(contains(assemble, "C_pos1[i + 1] += 1"));
  CHECK(contains(c.stage2_dump, "allocate C_seen: int64[dim_j] = -1, C_touched: int64[dim_j] = 0, C_row: float32[dim_j] = 0:"));
  CHECK(contains(c.stage2_dump, "C_row[j] += A_vals[pA1] * B_vals[pB1]"));
  CHECK(contains(c.stage2_dump, "sort C_touched[0, C_ntouched)"));
  CHECK(contains(c.stage2_dump, "C_vals[pC1] = C_row[j_out]"));
  // Each thread owns a workspace: the parallel loop opens the region that declares them.
  const std::string& src = c.files[1].text;
  CHECK(contains(src, "#pragma omp parallel\n  {\n    std::vector<int64_t> C_seen(dim_j, -1);"));
  CHECK(contains(src, "#pragma omp for schedule(dynamic, 16)"));
  CHECK(contains(src, "spgen_sort_coordinates(C_touched.data(), C_ntouched);"));
  CHECK(contains(src, "static void spgen_sort_coordinates(T* a, int64_t n)"));  // the helper, from templates/cpu_sort.cpp.in
  // Loops inside a row share its workspace.
  CHECK(contains(error_of("C(i,j) = A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "j"}]})"), "cannot parallelize j: it adds into the row workspace of C"));
  CHECK(contains(error_of("C(i,j) = A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
      "schedule": [{"op": "split", "var": "i", "factor": 4}, {"op": "parallel", "var": "i1"}]})"), "the kernel keeps a row workspace"));
}

TEST_CASE("unroll is refused beside an OpenMP pragma on the same loop (compilers reject the pair)") {
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j"}, {"op": "unroll", "var": "j", "factor": 4}]})"),
                 "/schedule/1: error: unroll: loop j cannot be both unrolled and vectorized"));
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "unroll", "var": "i", "factor": 2}, {"op": "parallel", "var": "i"}]})"),
                 "/schedule/1: error: parallel: loop i cannot be both unrolled and parallel"));
}

TEST_CASE("vectorize with lanes: partial sums in a local array, a serial remainder, a tree sum in registers") {
  spgen::Compilation c = compile(kSddmm, R"({"name": "k", "tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}},
      "schedule": [{"op": "vectorize", "var": "k", "lanes": 8}]})");
  // 8 floats are one 32-byte vector, kept in a register (as an array, GCC kept it on the stack).
  CHECK(contains(c.stage2_dump,
                 "      allocate local acc_lanes: float32 vectors of 8[1] = 0:\n"
                 "        let k_groups: int64 = dim_k / 8\n"
                 "        for k_group in [0, k_groups):\n"
                 "          for k_lane at k_lane_vec in [0, 1):\n"
                 "            let k: int64 = k_group * 8 + k_lane_vec * 8\n"));
  CHECK(contains(c.stage2_dump, "            acc_lanes[k_lane_vec] += A_vals[pA1 +: 8] * B_vals[pB1 +: 8]\n"
                                "        for k_rest at k in [k_groups * 8, dim_k):\n"));
  // The partial sums are added pairwise in vector registers (spgen_sum_lanes_f32), not through the array.
  CHECK(contains(c.stage2_dump, "          acc += A_vals[pA1] * B_vals[pB1]\n"
                                "        acc += sum(acc_lanes[0:8])\n"));
  const std::string& src = c.files[1].text;
  CHECK(contains(src, "spgen_v8f32 acc_lanes[1] = {};"));
  CHECK(contains(src, "acc_lanes[k_lane_vec] += spgen_load_v8f32(&A_vals[pA1]) * spgen_load_v8f32(&B_vals[pB1]);"));
  CHECK(contains(src, "acc += spgen_sum_lanes_f32(acc_lanes, 8);"));
  CHECK(contains(src, "static inline float spgen_reduce_f32(spgen_vf32 v) {"));
  CHECK(!contains(src, "reduction(+:"));
  // A position loop: its bounds are read once.
  std::string spmv = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 4}]})").stage2_dump;
  CHECK(contains(spmv, "let pA1_begin: int64 = int64(A_pos1[i])"));
  CHECK(contains(spmv, "let j_groups: int64 = (pA1_end - pA1_begin) / 4"));
  CHECK(contains(spmv, "for j_rest at pA1 in [pA1_begin + j_groups * 4, pA1_begin + (pA1_end - pA1_begin)):"));
}

TEST_CASE("vectorize with lanes over a sparse level: native vectors, x gathered lane by lane through crd") {
  spgen::Compilation c = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 16}]})");
  CAPTURE(c.stage2_dump);
  // The values are consecutive: one vector load. x is read through crd: a gather, its index
  // computed per lane, and j (which only the gather read) is no longer declared in the loop.
  CHECK(contains(c.stage2_dump, "allocate local acc_lanes: float32 vectors[16 / SPGEN_LANES_F32] = 0:"));
  CHECK(contains(c.stage2_dump,
                 "          let pA1: int64 = pA1_begin + j_group * 16 + j_lane_vec * SPGEN_LANES_F32\n"
                 "          acc_lanes[j_lane_vec] += A_vals[pA1 +: lanes] * gather(x_vals[int64(A_crd1[pA1 + lane])] for lane in lanes)\n"));
  const std::string& src = c.files[1].text;
  CHECK(contains(src, "spgen_gather_f32([&](int64_t lane) { return x_vals[(int64_t)A_crd1[pA1 + lane]]; })"));
  CHECK(contains(src, "static inline spgen_vf32 spgen_gather_f32(Lane lane) {"));
  // The rest of the row, one entry at a time, still reads j.
  CHECK(contains(c.stage2_dump, "        let j: int64 = int64(A_crd1[pA1])\n        acc += A_vals[pA1] * x_vals[j]\n"));
  // Kernels without gathers do not carry the helper.
  CHECK(!contains(compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}}, "schedule": "auto"})").files[1].text, "spgen_gather_f32"));
}

TEST_CASE("vectorize with lanes and a masked tail: the rest of a row in one masked sum where the arrays reach past it") {
  spgen::Compilation c = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 16, "tail": "masked"}]})");
  CAPTURE(c.stage2_dump);
  // A row shorter than the lanes is one masked sum of its value (j substituted) where A's arrays
  // (A_pos1[dim_i] long) reach 16 past its start. Else whole groups in vector lanes as without a
  // tail, then the rest in one masked sum where the arrays reach, else the scalar loop.
  CHECK(contains(c.stage2_dump, "acc_lanes[j_lane_vec] += A_vals[pA1 +: lanes] * gather(x_vals[int64(A_crd1[pA1 + lane])] for lane in lanes)"));
  CHECK(contains(c.stage2_dump,
                 "    if pA1_end - pA1_begin < 16 && pA1_begin + 16 <= int64(A_pos1[dim_i]):\n"
                 "      acc += masked_sum(j_tail < pA1_end - pA1_begin of 16: A_vals[pA1_begin + j_tail] * x_vals[int64(A_crd1[pA1_begin + j_tail])])\n"
                 "    else:\n"
                 "      allocate local acc_lanes: float32 vectors[16 / SPGEN_LANES_F32] = 0:\n"));
  CHECK(contains(c.stage2_dump,
                 "        let j_left: int64 = pA1_end - pA1_begin - j_groups * 16\n"
                 "        if pA1_begin + j_groups * 16 + 16 <= int64(A_pos1[dim_i]):\n"
                 "          acc += masked_sum(j_tail < j_left of 16: A_vals[pA1_begin + j_groups * 16 + j_tail] * "
                 "x_vals[int64(A_crd1[pA1_begin + j_groups * 16 + j_tail])])\n"
                 "        else:\n"
                 "          for j_rest at pA1 in"));
  const std::string& src = c.files[1].text;
  // A's values, consecutive along the row, are passed as a pointer and loaded a vector at a
  // time; x's, gathered, lane by lane.
  CHECK(contains(src, "acc += spgen_masked_dot_f32<16>(j_left, &A_vals[pA1_begin + j_groups * 16], [&](int64_t j_tail) { return "
                      "x_vals[(int64_t)A_crd1[pA1_begin + j_groups * 16 + j_tail]]; });"));
  CHECK(contains(src, "acc += spgen_masked_dot_f32<16>(pA1_end - pA1_begin, &A_vals[pA1_begin], "));
  CHECK(contains(src, "static inline float spgen_masked_dot_f32(int64_t count, const float* row, Lane lane) {"));
  // A value whose first factor is no consecutive read keeps the per-lane form.
  CHECK(contains(compile("y(i) = x(j) * A(i,j)", R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 16, "tail": "masked"}]})")
                     .files[1]
                     .text,
                 "acc += spgen_masked_sum_f32<16>(j_left, [&](int64_t j_tail) { return x_vals[(int64_t)A_crd1[pA1_begin + j_groups * 16 + j_tail]] * "
                 "A_vals[pA1_begin + j_groups * 16 + j_tail]; });"));
  // Lanes of 2 floats still read 4 past the rest (the half-width step): the check says so.
  CHECK(contains(compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 2, "tail": "masked"}]})").stage2_dump,
                 "if pA1_end - pA1_begin < 2 && pA1_begin + 4 <= int64(A_pos1[dim_i]):"));
  // Doubles: the f64 helper; a scalar tail is the default, written out or not.
  CHECK(contains(compile(kSpmv, R"({"types": {"value": "float64"}, "tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 8, "tail": "masked"}]})").files[1].text,
                 "spgen_masked_dot_f64<8>(j_left, &A_vals[pA1_begin + j_groups * 8], "));
  CHECK(compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 8, "tail": "scalar"}]})").stage2_dump ==
        compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 8}]})").stage2_dump);
}

TEST_CASE("a masked tail is refused where it would read past arrays it cannot bound") {
  // dcsr: the rows' level is compressed, not dense; its row count is no dimension.
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"y": {"format": "dense"}, "A": {"format": "dcsr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 8, "tail": "masked"}]})"),
                 "/schedule/0: error: vectorize: a masked tail needs a loop over the entries of a row of a compressed level under a dense one (csr's j)"));
  // A dense loop has no positions to read past.
  CHECK(contains(error_of(kSddmm, R"({"tensors": {"X": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "k", "lanes": 8, "tail": "masked"}]})"),
                 "error: vectorize: a masked tail needs a loop over the entries of a row"));
}

TEST_CASE("vectorize with lanes is refused where there is no sum to keep in lanes") {
  CHECK(contains(error_of(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "k", "lanes": 16}]})"),
                 "/schedule/0: error: vectorize: lanes keep partial sums of a reduction, and loop k sums into no scalar"));
  // The loop is gone once it is in lanes: its parts have new names.
  CHECK(contains(error_of(kSddmm, R"({"tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "k", "lanes": 16}, {"op": "unroll", "var": "k", "factor": 2}]})"),
                 "/schedule/1: error: unroll: no loop named k (the loops are: i, j, k_group, k_lane, k_rest)"));
}

TEST_CASE("tile: whole groups with a constant inner trip count, then a remainder") {
  std::string s2 = compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "tile", "var": "k", "factor": 8, "into": ["k0", "k1"]}]})").stage2_dump;
  CHECK(contains(s2, "      let k_groups: int64 = dim_k / 8\n"
                     "      for k0 in [0, k_groups):\n"
                     "        for k1 in [0, 8):\n"
                     "          let k: int64 = k0 * 8 + k1\n"));
  CHECK(contains(s2, "      for k_rest at k in [k_groups * 8, dim_k):\n"));
  // A position loop: its bounds are read once; the remainder is a loop over positions too.
  std::string spmv = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "tile", "var": "j", "factor": 4}]})").stage2_dump;
  CHECK(contains(spmv, "let j_groups: int64 = (pA1_end - pA1_begin) / 4"));
  CHECK(contains(spmv, "let pA1: int64 = pA1_begin + j0 * 4 + j1"));
  CHECK(contains(spmv, "for j_rest at pA1 in [pA1_begin + j_groups * 4, pA1_begin + (pA1_end - pA1_begin)):"));
  // The parts are loops like any other: later ops name them.
  CHECK(contains(compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "tile", "var": "j", "factor": 4}, {"op": "unroll", "var": "j1", "factor": 4}, {"op": "parallel", "var": "i"}]})").stage2_dump,
                 "for j1 in [0, 4) unroll(4):"));
}

TEST_CASE("tile errors") {
  const char* csr = R"("tensors": {"A": {"format": "csr"}})";
  CHECK(contains(error_of(kSpmv, std::string("{") + csr + R"(, "schedule": [{"op": "tile", "var": "q", "factor": 4}]})"),
                 "/schedule/0: error: tile: no loop named q (the loops are: i, j)"));
  CHECK(contains(error_of(kSpmv, std::string("{") + csr + R"(, "schedule": [{"op": "tile", "var": "j", "factor": 4, "into": ["i", "j1"]}]})"),
                 "/schedule/0: error: tile: the name i is already in use; choose another"));
  CHECK(contains(error_of(kSpmv, std::string("{") + csr + R"(, "schedule": [{"op": "parallel", "var": "i"}, {"op": "tile", "var": "i", "factor": 4}]})"),
                 "/schedule/1: error: tile: tile i before making it parallel or vectorized"));
}

TEST_CASE("precompute: the sums of a tile in a local array across the summing loop, written once") {
  spgen::Compilation c = compile(kSpmm, R"({"name": "k", "tensors": {"A": {"format": "csr"}}, "schedule": [
      {"op": "reorder", "order": ["i", "k", "j"]}, {"op": "tile", "var": "k", "factor": 16, "into": ["k0", "k1"]},
      {"op": "precompute", "var": "k1"}, {"op": "vectorize", "var": "k1"}]})");
  // A tile of 16 floats is a whole number of vectors on every target: it becomes registers.
  CHECK(contains(c.stage2_dump, "    for k0 in [0, k_groups):\n"
                                "      allocate local acc_tile: float32 vectors[16 / SPGEN_LANES_F32] = 0:\n"
                                "        for j at pA1 in [int64(A_pos1[i]), int64(A_pos1[i + 1])):\n"
                                "          let j: int64 = int64(A_crd1[pA1])\n"
                                "          for k1 at k1_vec in [0, 16 / SPGEN_LANES_F32):\n"
                                "            let k: int64 = k0 * 16 + k1_vec * SPGEN_LANES_F32\n"
                                "            let pB1: int64 = j * dim_k + k\n"
                                "            acc_tile[k1_vec] += A_vals[pA1] * B_vals[pB1 +: lanes]\n"
                                "        for k1_store at k1_store_vec in [0, 16 / SPGEN_LANES_F32):\n"
                                "          let k: int64 = k0 * 16 + k1_store_vec * SPGEN_LANES_F32\n"
                                "          let pC1: int64 = i * dim_k + k\n"
                                "          C_vals[pC1 +: lanes] = acc_tile[k1_store_vec]\n"));
  CHECK(!contains(c.stage2_dump, "zero C"));  // every entry is written once
  const std::string& src = c.files[1].text;
  CHECK(contains(src, "typedef float spgen_vf32 __attribute__((vector_size(SPGEN_VECTOR_BYTES)));\n"));
  CHECK(contains(src, "        spgen_vf32 acc_tile[16 / SPGEN_LANES_F32] = {};\n"));
  CHECK(contains(src, "            acc_tile[k1_vec] += A_vals[pA1] * spgen_load_f32(&B_vals[pB1]);\n"));
  CHECK(contains(src, "          spgen_store_f32(&C_vals[pC1], acc_tile[k1_store_vec]);\n"));

  // 8 floats are not a whole number of AVX-512 vectors, but one of 32 bytes on every target.
  spgen::Compilation small = compile(kSpmm, R"({"name": "k", "tensors": {"A": {"format": "csr"}}, "schedule": [
      {"op": "reorder", "order": ["i", "k", "j"]}, {"op": "tile", "var": "k", "factor": 8, "into": ["k0", "k1"]},
      {"op": "precompute", "var": "k1"}, {"op": "vectorize", "var": "k1"}]})");
  CHECK(contains(small.stage2_dump, "      allocate local acc_tile: float32 vectors of 8[1] = 0:\n"));
  CHECK(contains(small.files[1].text, "        spgen_v8f32 acc_tile[1] = {};\n"));
  CHECK(contains(small.files[1].text, "spgen_store_v8f32(&C_vals[pC1], acc_tile[k1_store_vec]);"));
  // 12 floats are neither: the tile stays an array.
  spgen::Compilation odd = compile(kSpmm, R"({"name": "k", "tensors": {"A": {"format": "csr"}}, "schedule": [
      {"op": "reorder", "order": ["i", "k", "j"]}, {"op": "tile", "var": "k", "factor": 12, "into": ["k0", "k1"]},
      {"op": "precompute", "var": "k1"}, {"op": "vectorize", "var": "k1"}]})");
  CHECK(contains(odd.files[1].text, "        float acc_tile[12] = {};\n"));
  CHECK(!contains(odd.files[1].text, "spgen_vf32"));
  // Without vectorize the loops keep their scalar form too.
  spgen::Compilation scalar = compile(kSpmm, R"({"name": "k", "tensors": {"A": {"format": "csr"}}, "schedule": [
      {"op": "reorder", "order": ["i", "k", "j"]}, {"op": "tile", "var": "k", "factor": 16, "into": ["k0", "k1"]},
      {"op": "precompute", "var": "k1"}]})");
  CHECK(contains(scalar.stage2_dump, "      allocate local acc_tile: float32[16] = 0:\n"));
}

TEST_CASE("precompute errors") {
  const char* csr = R"({"tensors": {"A": {"format": "csr"}}, "schedule": [)";
  // Not a constant trip count.
  CHECK(contains(error_of(kSpmm, std::string(csr) + R"({"op": "reorder", "order": ["i", "k", "j"]}, {"op": "precompute", "var": "k"}]})"),
                 "/schedule/1: error: precompute: loop k needs a constant trip count, so that its sums fit a local array: tile it first"));
  // The default order adds into C inside k: there is no sum over an inner loop.
  CHECK(contains(error_of(kSpmm, std::string(csr) + R"({"op": "tile", "var": "k", "factor": 8}, {"op": "precompute", "var": "k1"}]})"),
                 "/schedule/1: error: precompute: loop k1 does not hold a sum over an inner loop into one scalar"));
  // A reduction loop.
  CHECK(contains(error_of(kSpmv, R"({"schedule": [{"op": "tile", "var": "j", "factor": 8}, {"op": "precompute", "var": "j1"}]})"),
                 "/schedule/1: error: precompute: cannot precompute over j1: it iterates the reduction index j"));
  CHECK(contains(error_of(kSpmm, std::string(csr) + R"({"op": "reorder", "order": ["i", "k", "j"]}, {"op": "tile", "var": "k", "factor": 2048}, {"op": "precompute", "var": "k1"}]})"),
                 "/schedule/2: error: precompute: loop k1 runs 2048 times; a local array holds at most 1024 sums"));
  CHECK(contains(error_of(kSpmm, std::string(csr) + R"({"op": "reorder", "order": ["i", "k", "j"]}, {"op": "tile", "var": "k", "factor": 8}, {"op": "unroll", "var": "k1", "factor": 2}, {"op": "precompute", "var": "k1"}]})"),
                 "/schedule/3: error: precompute: precompute k1 before scheduling it further"));
}

TEST_CASE("bsr: block loops i_blk, j_blk, i_in, j_in, with dense operands at the combined coordinate") {
  spgen::Compilation c = compile(kSpmv, R"({"tensors": {"A": {"format": "bsr", "block": [2, 3]}},
      "schedule": [{"op": "parallel", "var": "i_blk"}, {"op": "vectorize", "var": "j_in"}]})");
  CHECK(contains(c.stage1_dump, "A.1 = sparse_variable(j_blk, parent=A.0, length=dim_j, pos=A_pos1, crd=A_crd1, j floordiv 3)"));
  CHECK(contains(c.stage1_dump, "A.2 = dense_fixed(i_in, parent=A.1, length=dim_i, i mod 2)"));
  CHECK(contains(c.stage1_dump, "over [i_blk: spatial, j_blk: reduction, i_in: spatial, j_in: reduction]"));
  CHECK(contains(c.stage2_dump, "for i_blk in [0, (dim_i + 1) / 2) parallel(static):"));
  CHECK(contains(c.stage2_dump, "let i: int64 = i_blk * 2 + i_in"));
  CHECK(contains(c.stage2_dump, "acc += A_vals[pA3] * x_vals[j]"));
  CHECK(contains(c.stage2_dump, "y_vals_held[i_in] += acc"));  // the block columns add into y's held rows
  CHECK(contains(c.stage2_dump, "y_vals[i] += y_vals_held[i_in]"));
  CHECK(contains(c.files[0].text, "ceil(dim_i / 2) + 1"));  // A_pos1's documented length
}

TEST_CASE("bsr into a dense output: a row of blocks sums in a held array, whole blocks in loops of constant length") {
  const std::string source = compile(kSpmv, R"({"tensors": {"A": {"format": "bsr", "block": [3, 3]}}, "schedule": "auto"})").files[1].text;
  // y's three rows held across the walk over the row's blocks, added into y after it.
  CHECK(contains(source, "float y_vals_held[3] = {};"));
  CHECK(contains(source, "y_vals_held[i_in] += acc;"));
  CHECK(contains(source, "y_vals[i] += y_vals_held[i_in];"));
  // A whole row of blocks tested once per row, a whole block once per block; the edge's loops stop there.
  CHECK(contains(source, "if (3 <= dim_i - i_blk * 3) {"));
  CHECK(contains(source, "if (3 <= dim_j - j_blk * 3) {"));
  CHECK(contains(source, "for (int64_t j_in = 0; j_in < 3; j_in++) {"));
  CHECK(contains(source, "for (int64_t j_in = 0; j_in < std::min<int64_t>(3, dim_j - j_blk * 3); j_in++) {"));
  // auto no longer tiles the block's 3 rows by 32 (a tile never filled).
  CHECK(!contains(source, "tile(i_in"));
  CHECK(!contains(source, "acc_tile"));
  // A sparse output's assembly keeps one copy of its loops; its values are no held sums.
  const std::string sparse_out = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]},
      "B": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 2]}}})").files[1].text;
  CHECK(!contains(sparse_out, "_held["));
  CHECK(!contains(sparse_out, "if (2 <= dim_j - j_blk * 2)"));
}

TEST_CASE("bsr: other operands located inside the blocks, by level kind") {
  const char* ewise = "C(i,j) = A(i,j) * B(i,j)";
  auto beside_bsr = [](const std::string& b) {
    return R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": )" + b + R"(, "C": {"format": "dense"}}})";
  };
  // Ragged: direct lookup, present below the row's end.
  spgen::Compilation ragged = compile(ewise, beside_bsr(R"({"format": "ragged"})"));
  CHECK(contains(ragged.stage2_dump, "# locate j in B by direct lookup at B_pos1[parent] + j (A splits j into blocks, so no cursor can follow it)\n"));
  CHECK(contains(ragged.stage2_dump, "let pB1: int64 = int64(B_pos1[i]) + j\n"));
  CHECK(contains(ragged.stage2_dump, "let pB1_found: bool = pB1 < pB1_end\n"));
  // ELL: a binary search in the row's slots, whose padding (-1) sorts last.
  spgen::Compilation ell = compile(ewise, beside_bsr(R"({"format": "ell", "width": 4})"));
  CHECK(contains(ell.stage2_dump, "# locate j in B by binary search in its 4 ELL slots, up to the padding (A splits j"));
  CHECK(contains(ell.stage2_dump, "if 0 <= int64(B_crd1[pB1_mid]) && int64(B_crd1[pB1_mid]) < j:\n"));
  // COO: the run of row i (a lower and an upper bound), then j inside it.
  spgen::Compilation coo = compile(ewise, beside_bsr(R"({"format": "coo"})"));
  CHECK(contains(coo.stage2_dump, "# locate i in B by binary search for its run of equal coordinates (A splits i"));
  CHECK(contains(coo.stage2_dump, "while run of i in B (pB0_run_end < pB0_high):\n"));
  CHECK(contains(coo.stage2_dump, "let pB0_found: bool = pB0 < pB0_run_end\n"));
  CHECK(contains(coo.stage2_dump, "# locate j in B by binary search in the run above (A splits j"));
  CHECK(contains(coo.stage2_dump, "let pB1_end: int64 = pB0_found ? pB0_run_end : 0\n"));
  // Other blocks: the loops follow A's; B's block is found at j / 4, the entry at i % 4, j % 4.
  spgen::Compilation other_blocks = compile(ewise, beside_bsr(R"({"format": "bsr", "block": [4, 4]})"));
  CHECK(contains(other_blocks.stage1_dump, "over [i_blk: spatial, j_blk: spatial, i_in: spatial, j_in: spatial]"));
  CHECK(contains(other_blocks.stage2_dump, "let pB0: int64 = i / 4\n"));
  CHECK(contains(other_blocks.stage2_dump, "# locate j / 4 in B by binary search (A splits j into blocks, so no cursor can follow it)\n"));
  CHECK(contains(other_blocks.stage2_dump, "let pB2: int64 = pB1 * 4 + i % 4\n"));
  CHECK(contains(other_blocks.stage2_dump, "let pB3: int64 = pB2 * 4 + j % 4\n"));
  // B blocks k itself: its block loops over k wait for j (found by fuzzing).
  spgen::Compilation blocks_below = compile(kSpmm, R"({"tensors": {"A": {"format": "bsr", "block": [3, 1]}, "B": {"format": "bsr", "block": [4, 4]}, "C": {"format": "dense"}}})");
  CHECK(contains(blocks_below.stage1_dump, "over [i_blk: spatial, j_blk: reduction, i_in: spatial, j_in: reduction, k_blk: spatial, k_in: spatial]"));
  CHECK(contains(blocks_below.stage2_dump, "for k_blk at pB1 in [int64(B_pos1[pB0]), int64(B_pos1[pB0 + 1])):\n"));
  // A COO row run located inside the blocks, whose singleton k drives its own loop.
  spgen::Compilation run = compile(kSpmm, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "coo"}, "C": {"format": "dense"}}})");
  CHECK(contains(run.stage2_dump, "for k at pB1 in [pB0_found ? pB0 : 0, pB0_found ? pB0_run_end : 0):\n"));
  CHECK(contains(run.files[1].text, "pB1 < (pB0_found ? pB0_run_end : 0); pB1++"));  // printed with its parentheses
}

TEST_CASE("blocks of rows beside a csr operand are lowered as bsr r x 1") {
  // Blocks of rows (dense i / 2, compressed j, dense i % 2) store j outside the rows of a block,
  // a csr operand i outside j: no loop order iterates both. Lowered with j in blocks of 1 (the
  // same arrays), the csr operand is located inside the blocks, and the rest follows them.
  const char* row_blocks = R"({"format": {"levels": [{"kind": "dense", "floordiv": 2}, "compressed", {"kind": "dense", "mod": 2}], "order": [0, 1, 0]}})";
  spgen::Compilation sum = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + row_blocks + R"(, "B": {"format": "csr"}, "C": {"format": "dense"}}})");
  CHECK(contains(sum.stage1_dump, "A.1 = sparse_variable(j_blk, parent=A.0, length=dim_j, pos=A_pos1, crd=A_crd1, j floordiv 1)\n"));
  CHECK(contains(sum.stage2_dump, "    for j_blk at pA1 in [int64(A_pos1[i_blk]), int64(A_pos1[i_blk + 1])):\n"));
  CHECK(contains(sum.stage2_dump, "          # locate j in B by binary search (A splits j into blocks, so no cursor can follow it)\n"));
  CHECK(contains(sum.stage2_dump, "  # the other operands outside A's blocks, where A is zero: B(i,j)\n"));
  CHECK(contains(sum.files[0].text, "//   A: custom, its levels between the blocks in blocks of 1 (bsr r x 1: the same arrays) (levels dense i floordiv 2, "
                                    "compressed j floordiv 1, dense i mod 2, dense j mod 1)\n"));
  // A product into csr, on cuda (C shares B's structure: A located at B's entries); an output in
  // blocks of rows is lowered so too (a block-row workspace).
  spgen::Compilation product = compile("C(i,j) = A(i,j) * B(i,j)", std::string(R"({"tensors": {"A": )") + row_blocks + R"(, "B": {"format": "csr"}, "C": {"format": "csr"}}, "target": "cuda"})");
  CHECK(contains(product.stage2_dump, "# locate j in A by binary search (the loops follow the entries of B, whose structure C shares)\n"));
  spgen::Compilation gathered = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + row_blocks + R"(, "B": {"format": "csr"}, "C": )" + row_blocks + "}}");
  CHECK(contains(gathered.stage2_dump, "# gather each block row of C by j_blk in a workspace of whole blocks (A's blocks, and the other operands' entries outside them); append them sorted\n"));
  // Blocks of rows that need no such split keep their own loops (i_blk, j, i_in).
  CHECK(contains(compile("y(i) = A(i,j) * x(j)", std::string(R"({"tensors": {"A": )") + row_blocks + "}}").stage2_dump, "for j at pA1 in"));
  // A level between the blocks that cannot be blocked by 1 (ELL) beside a csr operand in a
  // product is refused, saying what would do.
  const char* ell_row_blocks = R"({"format": {"levels": [{"kind": "compressed", "floordiv": 2}, {"kind": "sparse-fixed", "width": 3}, {"kind": "dense", "mod": 2}], "order": [0, 1, 0]}})";
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j)", std::string(R"({"tensors": {"A": )") + ell_row_blocks + R"(, "B": {"format": "csr"}, "C": {"format": "dense"}}})"),
                 "c.json: /tensors/B/format: error: no loop order can iterate both A (which stores i_in inside j) and B (which stores j inside i_in) "
                 "through their compressed levels; A stores j in a sparse-fixed level between its block levels (blocks of rows), which cannot be "
                 "split into blocks of 1 (as a dense or compressed level there can: A is then lowered as BSR r x 1, the other operands located "
                 "inside its blocks); make that level compressed, or store A unblocked (csr) or dense"));
  // In a sum each term has a nest of its own in its own order: adding into a dense output in
  // place, or listing an assembled output's entries.
  spgen::Compilation ell_dense = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + ell_row_blocks + R"(, "B": {"format": "csr"}, "C": {"format": "dense"}}})");
  CHECK(contains(ell_dense.stage1_dump, "// part2 of 2 of the sum: C(i,j) += B(i,j) (no summed index)\n"));
  spgen::Compilation ell_csr = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + ell_row_blocks + R"(, "B": {"format": "csr"}, "C": {"format": "csr"}}})");
  CHECK(contains(ell_csr.stage1_dump, "  each part lists the entries of C, to be sorted and packed:\n"
                                      "  A(i,j) (no summed index): a nest of its own over [i_blk, j, i_in], into the list of C's entries\n"
                                      "  + B(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"));
  // Where the order still fails, the error names a pair that the split does not reconcile (B dcsc
  // and D dcsr in one product), not the blocks of rows.
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j) * D(i,j)", std::string(R"({"tensors": {"A": )") + row_blocks + R"(, "B": {"format": "dcsc"}, "D": {"format": "dcsr"}, "C": {"format": "dense"}}})"),
                 "c.json: /tensors/D/format: error: no loop order can iterate both B (which stores i_in inside j) and D (which stores j inside "
                 "i_in) through their compressed levels; store one of them in the other mode order (e.g. csr instead of csc) or dense"));
  // `+=` into an output blocked otherwise (bsr 2x2): C_prev conflicts in loop order with A (bsr
  // 2x1), so C_prev and A .* B are parts of their own, each listing C's entries in its order.
  spgen::Compilation listed = compile("C(i,j) += A(i,j) * B(i,j)", std::string(R"({"tensors": {"A": )") + row_blocks + R"(, "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(listed.stage1_dump, "  each part lists the entries of C, to be sorted and packed into its blocks:\n"
                                     "  A(i,j) * B(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"
                                     "  + C_prev(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"));
  // ... also where C_prev shares its group of summed indices with an operand (D, in `C += A B +
  // D`): C_prev is then a part of its own beside D's (it used to be refused: the conflict).
  spgen::Compilation previous_apart_from_d = compile("C(i,j) += A(i,k) * B(k,j) + D(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "D": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 1]}}})");
  CHECK(contains(previous_apart_from_d.stage1_dump, "  each part lists the entries of C, to be sorted and packed into its blocks:\n"
                                                    "  A(i,k) * B(k,j) (summed over k): a nest of its own over [i, k, j], into the list of C's entries\n"
                                                    "  + D(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"
                                                    "  + C_prev(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"));
}

TEST_CASE("bsr: what is refused, with what works") {
  // The rest outside B's blocks follows D's (compressed block rows of 3 over dense columns), but
  // not in D's level order, which would iterate A's columns before A's row is known (found by
  // fuzzing: the code did not compile): its loops keep the places they held.
  spgen::Compilation rest_order = compile("C(i,j) = A(i,j) * (B(i,j) + D(i,j))", R"({"tensors": {"A": {"format": "csr"},
      "B": {"format": "bsr", "block": [2, 2]}, "D": {"format": {"levels": [{"kind": "compressed", "floordiv": 3}, "dense",
      {"kind": "dense", "mod": 3}], "order": [0, 1, 0]}}, "C": {"format": "dense"}}})");
  CHECK(contains(rest_order.stage2_dump, "    let i_blk_2: int64 = int64(D_crd0[pD0_2])\n"
                                         "    for i_in_2 in [0, min(3, dim_i - i_blk_2 * 3)):\n"
                                         "      let i: int64 = i_blk_2 * 3 + i_in_2\n"));
  CHECK(contains(rest_order.stage2_dump, "      for j at pA1_2 in [int64(A_pos1[i]), int64(A_pos1[i + 1])):\n"));
  // A term without the blocked operand: its entries outside the blocks follow the blocks.
  spgen::Compilation rest = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "ragged"}, "C": {"format": "dense"}}})");
  CHECK(contains(rest.stage2_dump, "C_vals[pC1] = A_vals[pA3] + (pB1_found ? B_vals[pB1] : 0)\n"));
  CHECK(contains(rest.stage2_dump, "# the other operands outside A's blocks, where A is zero: B(i,j)\n"));
  CHECK(contains(rest.stage2_dump, "# locate j / 2 in A by binary search (to skip the blocks of A, done above)\n"));
  CHECK(contains(rest.stage2_dump, "if pA1_2_found == false:\n"));
  CHECK(contains(rest.stage2_dump, "C_vals[pC1_2] += B_vals[pB1_2]\n"));
  // The rest's loops are a nest of their own that no op schedules (a split of its i once failed
  // inside the scheduler: the main nest has i_blk and i_in, no i).
  CHECK(contains(error_of("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "ragged"}, "C": {"format": "dense"}},
      "schedule": [{"op": "split", "var": "i", "factor": 4}]})"),
                 "c.json: /schedule/0: error: split: loop i iterates the terms outside a blocked operand's blocks, a nest of its "
                 "own that schedule ops do not transform; schedule the loops of the main nest: i_blk, j_blk, i_in, j_in"));
  // ... unless a dense term makes the block loops visit every block (B is then found everywhere).
  spgen::Compilation everywhere = compile("C(i,j) = A(i,j) + B(i,j) + D(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "D": {"format": "dense"}, "C": {"format": "dense"}}})");
  CHECK(contains(everywhere.stage2_dump, "# co-iterate j_blk: every coordinate, with cursors into A\n"));
  CHECK(!contains(everywhere.stage2_dump, "outside A's blocks"));
  // On cuda the rest is a kernel of its own, a row per thread of the grid.
  spgen::Compilation on_gpu = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "C": {"format": "dense"}}, "target": "cuda"})");
  CHECK(contains(on_gpu.stage2_dump, "  # the other operands outside A's blocks, where A is zero: B(i,j)\n  for i in [0, dim_i) bind(grid, 256 threads):\n"));
  CHECK(contains(on_gpu.files[1].text, "// every thread of the grid over i\n"));
  // A blocked operand with an unblocked sparse level (compressed rows above column blocks): the
  // rest locates its row too, and skips where both its row and its block are found.
  const char* col_blocks = R"({"format": {"levels": ["compressed", {"kind": "compressed", "floordiv": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 1]}})";
  spgen::Compilation rows_located = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + col_blocks + R"(, "B": {"format": "csr"}, "C": {"format": "dense"}}})");
  CHECK(contains(rows_located.stage2_dump, "    # locate i in A by binary search (to skip the blocks of A, done above)\n"));
  CHECK(contains(rows_located.stage2_dump, "      if (pA0_2_found && pA1_2_found) == false:\n        C_vals[pC1_2] += B_vals[pB1_2]\n"));
  // ... also where the block loops' row loop merges B's rows (B dcsr): where A's row is absent,
  // the loop over A's blocks inside it visits nothing.
  spgen::Compilation rows_merged = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + col_blocks + R"(, "B": {"format": "dcsr"}, "C": {"format": "dense"}}})");
  CHECK(contains(rows_merged.stage2_dump, "  # co-iterate i: two-finger merge of A, B\n"));
  CHECK(contains(rows_merged.stage2_dump, "    for j_blk at pA1 in [inA ? int64(A_pos1[pA0]) : 0, inA ? int64(A_pos1[pA0 + 1]) : 0):\n"));
  CHECK(contains(rows_merged.stage2_dump, "      if (pA0_2_found && pA1_2_found) == false:\n        C_vals[pC1_2] += B_vals[pB1_2]\n"));
  // ... but into an output gathered in A's rows (C stored as A is), whose loop over rows visits
  // only A's while B's lie in others too, the union's terms cannot share one nest: each is a part
  // of its own, listing C's entries (it used to be refused).
  spgen::Compilation union_parts = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + col_blocks + R"(, "B": {"format": "dcsr"}, "C": )" + col_blocks + "}}");
  CHECK(contains(union_parts.stage1_dump, "  each part lists the entries of C, to be sorted and packed into its blocks:\n"
                                          "  A(i,j) (no summed index): a nest of its own over [i, j_blk, j_in], into the list of C's entries\n"
                                          "  + B(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"));
  CHECK(contains(union_parts.stage2_dump, "    # + B(i,j) (no summed index), into the list of C's entries\n"
                                          "    for i at pB0 in [int64(B_pos0[0]), int64(B_pos0[1])) sequential:\n"));
  // An unblocked level below a block level (A: block rows of 2, compressed j, rows inside) whose
  // loop merges B's columns (dcsc) has no loop over A's blocks inside it: inside A's block rows
  // the rows run for B's columns too, so the rest takes B's entries in the other block rows only.
  const char* row_blocks_above_columns = R"({"format": {"levels": [{"kind": "compressed", "floordiv": 2}, "compressed", {"kind": "dense", "mod": 2}], "order": [0, 1, 0]}})";
  spgen::Compilation block_rows_skipped = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + row_blocks_above_columns + R"(, "B": {"format": "dcsc"}, "C": {"format": "dense"}}})");
  CHECK(contains(block_rows_skipped.stage2_dump, "    # co-iterate j: two-finger merge of A, B\n"));
  CHECK(contains(block_rows_skipped.stage2_dump, "      if pA0_2_found == false:\n        C_vals[pC1_2] += B_vals[pB1_2]\n"));
  CHECK(!contains(block_rows_skipped.stage2_dump, "pA1_2"));  // (A's columns are not located)
  // ... as into a listed output (C csr): its rest used to skip only where A's column was found
  // too, listing B's entries in A's block rows twice (summed by the pack).
  spgen::Compilation listed_rows_skipped = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + row_blocks_above_columns + R"(, "B": {"format": "dcsc"}, "C": {"format": "csr"}}})");
  CHECK(contains(listed_rows_skipped.stage2_dump, "        if pA0_2_found == false:\n          C_keys[C_listed] = i * dim_j + j\n"));
  CHECK(!contains(listed_rows_skipped.stage2_dump, "pA1_2"));
  // Beside an operand blocked alike whose level at that loop is such a level too (it used to be
  // refused): the rest skips the block rows that either stores.
  const char* compressed_row_blocks = R"({"format": {"levels": [{"kind": "compressed", "floordiv": 2}, "compressed", {"kind": "dense", "mod": 2}], "order": [0, 1, 0]}})";
  spgen::Compilation alike_rows_skipped = compile("C(i,j) = A(i,j) + B(i,j) - 3 * D(i,j)", std::string(R"({"tensors": {"A": )") + compressed_row_blocks + R"(, "B": )" + compressed_row_blocks + R"(, "D": {"format": "dcsc"}, "C": {"format": "dense"}}})");
  CHECK(contains(alike_rows_skipped.stage2_dump, "    # co-iterate j: two-finger merge of A, B, D\n"));
  CHECK(contains(alike_rows_skipped.stage2_dump, "      if ((pA0_2_found || (pA0_2_found && pB0_2_found)) || pB0_2_found) == false:\n        C_vals[pC1_2] += -(3 * D_vals[pD1_2])\n"));
  CHECK(!contains(alike_rows_skipped.stage2_dump, "pA1_2"));
  CHECK(!contains(alike_rows_skipped.stage2_dump, "pB1_2"));
  // ... also where that operand's only sparse levels are its blocks (B's columns dense: the loop
  // over j visits every column).
  const char* dense_columns_row_blocks = R"({"format": {"levels": [{"kind": "compressed", "floordiv": 2}, "dense", {"kind": "dense", "mod": 2}], "order": [0, 1, 0]}})";
  spgen::Compilation dense_columns_alike = compile("C(i,j) = A(i,j) + B(i,j) - 3 * D(i,j)", std::string(R"({"tensors": {"A": )") + compressed_row_blocks + R"(, "B": )" + dense_columns_row_blocks + R"(, "D": {"format": "dcsc"}, "C": {"format": "dense"}}})");
  CHECK(contains(dense_columns_alike.stage2_dump, "    # co-iterate j: every coordinate, with cursors into A, D\n"));
  CHECK(contains(dense_columns_alike.stage2_dump, "      if (pA0_2_found || pB0_2_found) == false:\n"));
  // Into an output gathered in block rows (here A's and B's, stored compressed), the loop over
  // block rows visits every one (D's entries lie in any), with cursors into A's and B's, and the
  // loop over j merges D's columns in each (it used to be refused: that loop visited only A's or
  // B's block rows).
  spgen::Compilation gathered_every_block_row = compile("C(i,j) = A(i,j) + B(i,j) - 3 * D(i,j)", std::string(R"({"tensors": {"A": )") + compressed_row_blocks + R"(, "B": )" + compressed_row_blocks + R"(, "D": {"format": "dcsc"}, "C": )" + compressed_row_blocks + "}}");
  CHECK(contains(gathered_every_block_row.stage2_dump, "    # co-iterate i_blk: every coordinate, with cursors into A, B\n"));
  CHECK(contains(gathered_every_block_row.stage2_dump, "      # co-iterate j: two-finger merge of A, B, D\n"));
  CHECK(contains(gathered_every_block_row.stage2_dump, "          # locate i in D by binary search (A splits i into blocks, so no cursor can follow it)\n"));
  CHECK(contains(gathered_every_block_row.stage2_dump,
                 "          C_blocks[j * 2 + i_in] += (inA && inA_2 ? A_vals[pA2] : 0) + (inB && inB_2 ? B_vals[pB2] : 0) - 3 * (inD && pD1_found ? D_vals[pD1] : 0)\n"));
  CHECK(!contains(gathered_every_block_row.stage2_dump, "outside A's"));  // (the block loops visit all of D's entries: no rest)
  // ... and where the rest follows in each block row (block-DCSR A + dcsr B into block-DCSR).
  const char* block_dcsr = R"({"format": {"levels": [{"kind": "compressed", "floordiv": 2}, {"kind": "compressed", "floordiv": 2}, {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 0, 1]}})";
  spgen::Compilation rest_every_block_row = compile("C(i,j) = A(i,j) + B(i,j)", std::string(R"({"tensors": {"A": )") + block_dcsr + R"(, "B": {"format": "dcsr"}, "C": )" + block_dcsr + "}}");
  CHECK(contains(rest_every_block_row.stage2_dump, "    # co-iterate i_blk: every coordinate, with cursors into A\n"));
  CHECK(contains(rest_every_block_row.stage2_dump, "      # the other operands outside A's blocks, where A is zero, into the same block row: B(i,j)\n"));
  // ... as where that loop visits every column (D csc): the rest used to skip only where A's
  // column was found too, adding D's entries in A's block rows twice.
  spgen::Compilation every_column = compile("C(i,j) = A(i,j) + B(i,j) - 3 * D(i,j)", std::string(R"({"tensors": {"A": )") + row_blocks_above_columns + R"(, "B": {"format": "dcsc"}, "D": {"format": "csc"}, "C": {"format": "dense"}}})");
  CHECK(contains(every_column.stage2_dump, "    # co-iterate j: every coordinate, with cursors into A, B\n"));
  CHECK(contains(every_column.stage2_dump, "      if pA0_2_found == false:\n"));
  // A rest whose rows repeat (COO) adds atomically; one whose rows would merge cursors visits
  // every row, each thread locating its row in every operand.
  spgen::Compilation repeats = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "coo"}, "C": {"format": "dense"}}, "target": "cuda"})");
  CHECK(contains(repeats.stage2_dump, "  for i at pB0_2 in [int64(B_pos0[0]), int64(B_pos0[1])) sequential bind(grid, 256 threads, atomic):\n"));
  CHECK(contains(repeats.files[1].text, "atomicAdd(&C_vals[pC1_2], B_vals[pB0_2]);"));
  spgen::Compilation rows_located_on_gpu = compile("C(i,j) = A(i,j) + B(i,j) - 3 * D(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "dcsr"}, "D": {"format": "dcsr"}, "C": {"format": "dense"}}, "target": "cuda"})");
  CHECK(contains(rows_located_on_gpu.stage2_dump, "  for i in [0, dim_i) bind(grid, 256 threads):\n    let pA0_2: int64 = i / 2\n"
                                                  "    # locate i in B by binary search (each thread takes its own coordinates of i, so no cursor can follow them)\n"));
  CHECK(contains(rows_located_on_gpu.stage2_dump, "    var pD1_2: int64 = pD0_2_found ? int64(D_pos1[pD0_2]) : 0\n"));
  CHECK(contains(rows_located_on_gpu.stage2_dump, "      if pA1_2_found == false:\n"
                                                  "        C_vals[pC1_2] += (inB && pB0_2_found ? B_vals[pB1_2] : 0) - 3 * (inD && pD0_2_found ? D_vals[pD1_2] : 0)\n"));
  // The rest's loop over k is named apart from A's, so that a split of k transforms A's loop alone
  // (it used to replace the rest's loop with a copy of A's).
  spgen::Compilation split_k = compile("C(i,k) = (A(i,j) + B(i,j)) * X(j,k)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "X": {"format": "dense"}, "C": {"format": "dense"}},
      "schedule": [{"op": "split", "var": "k", "factor": 4, "into": ["k0", "k1"]}]})");
  CHECK(contains(split_k.stage2_dump, "        for k_2 at k in [0, dim_k):\n          let pC1_2: int64 = i * dim_k + k\n"));
  CHECK(contains(split_k.stage2_dump, "C_vals[pC1_2] += B_vals[pB1_2] * X_vals[pX1_2]\n"));
  // Blocked otherwise: the rest follows B's own blocks (loops of their own names), A located and skipped.
  spgen::Compilation otherwise = compile("C(i,j) = A(i,j) - B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [4, 4]}, "C": {"format": "dense"}}})");
  CHECK(contains(otherwise.stage2_dump, "  # the other operands outside A's blocks, where A is zero: -B(i,j)\n  for i_blk_2 in [0, (dim_i + 3) / 4):\n"));
  CHECK(contains(otherwise.stage2_dump, "        let i: int64 = i_blk_2 * 4 + i_in_2\n        let pA0_2: int64 = i / 2\n"));
  CHECK(contains(otherwise.stage2_dump, "          if pA1_2_found == false:\n            C_vals[pC1_2] += -B_vals[pB3_2]\n"));
  // ... in B's own level order where its block levels lie otherwise (block columns outermost).
  spgen::Compilation by_columns = compile("C(i,j) = A(i,j) - B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": {"levels": [{"kind": "compressed", "floordiv": 4}, {"kind": "compressed", "floordiv": 4}, {"kind": "dense", "mod": 4}, {"kind": "dense", "mod": 4}], "order": [1, 0, 0, 1]}}, "C": {"format": "dense"}}})");
  CHECK(contains(by_columns.stage2_dump, "  # the other operands outside A's blocks, where A is zero: -B(i,j)\n"
                                         "  for j_blk_2 at pB0_2 in [int64(B_pos0[0]), int64(B_pos0[1])):\n"));
  CHECK(contains(by_columns.stage2_dump, "    for i_blk_2 at pB1_2 in [int64(B_pos1[pB0_2]), int64(B_pos1[pB0_2 + 1])):\n"));
  CHECK(contains(by_columns.stage2_dump, "      for i_in_2 in [0, min(4, dim_i - i_blk_2 * 4)):\n"));
  CHECK(contains(by_columns.stage2_dump, "        for j_in_2 in [0, min(4, dim_j - j_blk_2 * 4)):\n"));
  // An output in the structure of a blocked operand B beside A blocked otherwise (it used to be
  // refused: B was located inside A's blocks, and its entries outside them went unwritten): B's
  // blocks give the block loops, and A is reached apart inside them, so every entry of B is written.
  spgen::Compilation shares_blocked = compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [4, 4]}, "C": {"format": "bsr", "block": [4, 4]}}})");
  CHECK(contains(shares_blocked.stage2_dump, "  for i_blk in [0, (dim_i + 3) / 4):\n    for j_blk at pB1 in [int64(B_pos1[i_blk]), int64(B_pos1[i_blk + 1])):\n"));
  CHECK(contains(shares_blocked.stage2_dump, "        let pA0: int64 = i / 2\n"));
  CHECK(contains(shares_blocked.stage2_dump, "          # locate j / 2 in A by binary search (B splits j into blocks, so no cursor can follow it)\n"));
  CHECK(contains(shares_blocked.stage2_dump, "          C_vals[pB3] = (pA1_found ? A_vals[pA3] : 0) * B_vals[pB3]\n"));
  // ... and B in blocks of rows (j unblocked) beside A bsr: A gives no loop over j either, its
  // block column located at j / 2 in B's rows.
  const char* row_blocks4 = R"({"format": {"levels": [{"kind": "dense", "floordiv": 4}, "compressed", {"kind": "dense", "mod": 4}], "order": [0, 1, 0]}})";
  spgen::Compilation shares_row_blocks = compile("C(i,j) = A(i,j) * B(i,j)", std::string(R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": )") + row_blocks4 + R"(, "C": )" + row_blocks4 + "}}");
  CHECK(contains(shares_row_blocks.stage2_dump, "    for j at pB1 in [int64(B_pos1[i_blk]), int64(B_pos1[i_blk + 1])):\n"));
  CHECK(contains(shares_row_blocks.stage2_dump, "# locate j / 2 in A by binary search"));
  CHECK(contains(error_of("C(i,j) = A(i,j) / B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "C": {"format": "dense"}}})"),
                 "dividing by B, which stores index j compressed, is not supported"));
  spgen::Compilation located = compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "C": {"format": "dense"}}})");
  CHECK(contains(located.stage2_dump, "# locate j in B by binary search (A splits j into blocks, so no cursor can follow it)\n"));
  CHECK(contains(located.stage2_dump, "let pB1_found: bool = pB1 < pB1_end && int64(B_crd1[pB1]) == j\n"));
  CHECK(contains(located.stage2_dump, "C_vals[pC1] = A_vals[pA3] * (pB1_found ? B_vals[pB1] : 0)"));
  // An output blocked otherwise than A (2x3 beside 2x2) gets its entries a block of A at a time:
  // listed, keyed by its own level coordinates (i / 2, j / 3, i % 2, j % 3), packed into its blocks.
  spgen::Compilation other_blocks = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 3]}}})");
  CHECK(contains(other_blocks.stage1_dump, "output, entries listed, sorted and packed into its blocks\n"));
  CHECK(contains(other_blocks.stage2_dump, "C_keys[C_listed] = ((i / 2 * ((dim_j + 2) / 3) + j / 3) * 2 + i % 2) * 3 + j % 3\n"));
  CHECK(contains(other_blocks.stage2_dump, "      let pC3: int64 = pC2 * 3 + C_key / C_stride3 % 3\n      C_vals[pC3] = C_entries[u]\n"));
  // An output in an unblocked operand's structure (found by fuzzing: inside A's blocks, B's
  // entries outside them went unwritten): the loops follow B, and A gives no block loops.
  spgen::Compilation shared = compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 3]}, "B": {"format": "dcsr"}, "C": {"format": "dcsr"}}})");
  CHECK(contains(shared.stage2_dump, "  for i at pB0 in [int64(B_pos0[0]), int64(B_pos0[1])):\n"));
  CHECK(contains(shared.stage2_dump, "    let pA0: int64 = i / 2\n"));
  CHECK(contains(shared.stage2_dump, "      # locate j / 3 in A by binary search (the loops follow the entries of B, whose structure C shares)\n"));
  CHECK(contains(shared.stage2_dump, "C_vals[pB1] = (pA1_found ? A_vals[pA3] : 0) * B_vals[pB1]\n"));
  // Blocked alike: the block levels merge.
  spgen::Compilation alike = compile("C(i,j) = A(i,j) + B(i,j)",
                                     R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [2, 2]}, "C": {"format": "dense"}}})");
  CHECK(contains(alike.stage2_dump, "# co-iterate j_blk: two-finger merge of A, B\n"));
  // An output unblocked on the blocked indices gets its entries a block at a time: listed.
  CHECK(contains(compile("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "C": {"format": "csr"}}})").stage2_dump,
                 "# list the entries of C as the loops produce them (out of order: A splits index i into blocks, so its "
                 "entries arrive a block at a time), keyed by their coordinates in storage order\n"));
  // Beside a term without A, B's entries outside A's blocks join the list before its sort, in a
  // nest of their own that skips A's blocks.
  spgen::Compilation listed_rest = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "C": {"format": "csr"}}})");
  CHECK(contains(listed_rest.stage2_dump, "    # the other operands outside A's blocks, where A is zero, into the list of C's entries: B(i,j)\n"
                                          "    for i in [0, dim_i) sequential:\n"));
  CHECK(contains(listed_rest.stage2_dump, "        if pA1_2_found == false:\n          C_keys[C_listed] = i * dim_j + j\n"
                                          "          C_entries[C_listed] = B_vals[pB1_2]\n          C_listed += 1\n"
                                          "    # sort the list by key and sum the repeats of each key\n"));
  // On cuda the rest lists in a kernel of its own, a row per thread of the grid.
  CHECK(contains(compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "C": {"format": "csr"}}, "target": "cuda"})").stage2_dump,
                 "    # the other operands outside A's blocks, where A is zero, into the list of C's entries: B(i,j)\n"
                 "    for i in [0, dim_i) bind(grid, 256 threads):\n"));
  // ... blocked on i alike but not on j: listed too, into its row blocks.
  CHECK(contains(compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"},
      "C": {"format": {"levels": [{"kind": "dense", "floordiv": 2}, "compressed", {"kind": "dense", "mod": 2}], "order": [0, 1, 0]}}}})").stage2_dump,
                 "C_keys[C_listed] = (i / 2 * dim_j + j) * 2 + i % 2\n"));
  // Blocked alike, an assembled output: its blocks are counted and appended in the block loops.
  spgen::Compilation assembled = compile("C(i,j) = A(i,j) + B(i,j)",
      R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 2]}}})");
  // Every block column the merge visits gets a whole block: it is marked once, before the
  // in-block loops, which share no cursor and may be vectorized.
  CHECK(contains(assembled.stage2_dump, "      C_pos1[i_blk + 1] += 1\n      pA1 += int64(inA)\n"));
  CHECK(contains(assembled.stage2_dump, "      C_crd1[pC1] = int32(j_blk)\n      for i_in in"));
  CHECK(contains(assembled.stage2_dump, "      pC1 += 1\n"));
  CHECK(!contains(assembled.stage2_dump, "nonempty"));
  spgen::Compilation vectorized = compile("C(i,j) = A(i,j) + B(i,j)",
      R"({"tensors": {"A": {"format": "bsr", "block": [2, 4]}, "B": {"format": "bsr", "block": [2, 4]}, "C": {"format": "bsr", "block": [2, 4]}},
          "schedule": [{"op": "vectorize", "var": "j_in"}]})");
  CHECK(contains(vectorized.stage2_dump, "for j_in in [0, min(4, dim_j - j_blk * 4)) vectorize"));
  CHECK(contains(assembled.stage2_dump, "for zero C at p in [0, int64(C_pos1[(dim_i + 1) / 2]) * 2 * 2)"));
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}}, "schedule": [{"op": "reorder", "order": ["j", "i"]}]})"),
                 "c.json: /schedule/0: error: reorder: index j is split into the loops j_blk and j_in by the blocked format of A"));
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}}, "schedule": [{"op": "reorder", "order": ["i_in", "i_blk"]}]})"),
                 "this order puts j_blk outside i_blk, but A (bsr) stores j_blk in a level below i_blk"));
  CHECK(contains(error_of("y(i) = A(i,i_blk) * x(i_blk)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}}})"),
                 "the block loops of index i are named i_blk and i_in, but the spec already uses i_blk as an index variable"));
}

TEST_CASE("bsr output beside a term without the blocked operand: A's blocks and the rest share a block-row workspace") {
  const char* add = "C(i,j) = A(i,j) + B(i,j)";
  spgen::Compilation c = compile(add, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}},
                                          "schedule": [{"op": "parallel", "var": "i_blk"}]})");
  // A's block loops drive; C's blocks are gathered by A's block column.
  CHECK(contains(c.stage1_dump, "output, blocks gathered by level 1 in a block-row workspace\n"));
  CHECK(contains(c.stage1_dump, "over [i_blk: spatial, j_blk: spatial, i_in: spatial, j_in: spatial]"));
  CHECK(contains(c.stage2_dump, "# gather each block row of C by j_blk in a workspace of whole blocks (A's blocks, and the other "
                                "operands' entries outside them); append them sorted\n"));
  CHECK(contains(c.stage2_dump, "C_blocks[j_blk * 4 + (i_in * 2 + j_in)] += A_vals[pA3] + (pB1_found ? B_vals[pB1] : 0)\n"));
  // Then, in the same block row, B's entries outside A's blocks (A located at j / 2), into the same workspace.
  CHECK(contains(c.stage2_dump, "      # the other operands outside A's blocks, where A is zero, into the same block row: B(i,j)\n"
                                "      for i_in_2 in [0, min(2, dim_i - i_blk * 2)) sequential:\n"));
  CHECK(contains(c.stage2_dump, "# locate j / 2 in A by binary search (to skip the blocks of A, done above)\n"));
  CHECK(contains(c.stage2_dump, "          if pA1_2_found == false:\n            let j_blk_3: int64 = j / 2\n"
                                "            if C_seen[j_blk_3] != i_blk:\n"));
  CHECK(contains(c.stage2_dump, "C_blocks[j_blk_3 * 4 + (i_in_2 * 2 + j % 2)] += B_vals[pB1_2]\n"));
  CHECK(contains(c.stage2_dump, "      sort C_touched[0, C_ntouched)\n"));
  // The count phase skips A's blocks too (they were counted by A's loops).
  size_t count_phase = c.stage2_dump.find("kernel sparse_add(");
  CHECK(contains(c.stage2_dump.substr(0, count_phase), "if pA1_2_found == false:\n"));
  // Operands that block only some of the output's blocked indices: A gives the block rows, a
  // workspace keyed by j / 3 the block columns.
  spgen::Compilation rows = compile(add, R"({"tensors": {"A": {"format": {"levels": [{"kind": "dense", "floordiv": 2}, "compressed", {"kind": "dense", "mod": 2}], "order": [0, 1, 0]}},
      "B": {"format": {"levels": [{"kind": "dense", "floordiv": 2}, "compressed", {"kind": "dense", "mod": 2}], "order": [0, 1, 0]}}, "C": {"format": "bsr", "block": [2, 3]}}})");
  CHECK(contains(rows.stage1_dump, "over [i_blk: spatial, j: spatial, i_in: spatial]"));
  CHECK(contains(rows.stage2_dump, "# gather each block row of C by j / 3 in a workspace of whole blocks (the operands give only "
                                   "some of C's blocked indices); append them sorted\n"));
  CHECK(contains(rows.stage2_dump, "C_blocks[j_blk * 6 + (i_in * 3 + j % 3)] += (inA ? A_vals[pA2] : 0) + (inB ? B_vals[pB2] : 0)\n"));
  // Blocked alike with no term outside the blocks: the block loops still append C's blocks in order.
  spgen::Compilation alike = compile(add, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(!contains(alike.stage2_dump, "workspace"));
  // Operands blocked alike: the rest lies outside the union of their blocks.
  spgen::Compilation alike_rest = compile("C(i,j) = A(i,j) + B(i,j) - 3 * D(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 3]}, "B": {"format": "bsr", "block": [2, 3]}, "D": {"format": "coo"}, "C": {"format": "bsr", "block": [2, 3]}}})");
  CHECK(contains(alike_rest.stage2_dump, "# gather each block row of C by j_blk in a workspace of whole blocks (A's and B's blocks, and the other operands' entries outside them)"));
  CHECK(contains(alike_rest.stage2_dump, "# the other operands outside A's and B's blocks, where A and B are zero, into the same block row: -(3 * D(i,j))\n"));
  CHECK(contains(alike_rest.stage2_dump, "if (pA1_2_found || pB1_2_found) == false:\n"));
  // Operands blocked alike whose product the block loops visit: the rest lies outside the blocks
  // both store, and skips where both do.
  spgen::Compilation product_rest = compile("C(i,j) = A(i,j) * B(i,j) + D(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [2, 2]}, "D": {"format": "csr"}, "C": {"format": "dense"}}})");
  CHECK(contains(product_rest.stage2_dump, "  # the other operands outside the blocks A and B both store, where A .* B is zero: D(i,j)\n"));
  CHECK(contains(product_rest.stage2_dump, "      if (pA1_2_found && pB1_2_found) == false:\n        C_vals[pC1_2] += D_vals[pD1_2]\n"));
  spgen::Compilation product_gathered = compile("C(i,j) = A(i,j) * B(i,j) + D(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [2, 2]}, "D": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(product_gathered.stage2_dump, "# the other operands outside the blocks A and B both store, where A .* B is zero, into the same block row: D(i,j)\n"));
  // Compressed block rows (block-DCSR): the loop over block rows visits every one, with a cursor into A's.
  spgen::Compilation block_dcsr = compile(add, R"({"tensors": {"A": {"format": {"levels": [{"kind": "compressed", "floordiv": 2}, {"kind": "compressed", "floordiv": 2}, {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 0, 1]}},
      "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(block_dcsr.stage2_dump, "# co-iterate i_blk: every coordinate, with cursors into A\n"));
  CHECK(contains(block_dcsr.stage2_dump, "if (pA0_2_found && pA1_2_found) == false:\n"));
  // Block rows stored compressed (block-DCSR): the rest runs inside each block row in every
  // phase, raising the flag that stores the block row at the owner's cursor.
  spgen::Compilation into_block_dcsr = compile(add, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"},
      "C": {"format": {"levels": [{"kind": "compressed", "floordiv": 2}, {"kind": "compressed", "floordiv": 2}, {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 0, 1]}}}})");
  const size_t level1 = into_block_dcsr.stage2_dump.find("kernel sparse_add_assemble_level1(");
  const std::string level0_phase = into_block_dcsr.stage2_dump.substr(0, level1);
  CHECK(contains(level0_phase, "    # the other operands outside A's blocks, where A is zero, into the same block row: B(i,j)\n"
                               "    for i_in_2 in [0, min(2, dim_i - i_blk * 2)) sequential:\n"));
  CHECK(contains(level0_phase, "        if pA1_2_found == false:\n          C0_nonempty = true\n    C_pos0[pC0 + 1] += int32(int64(C0_nonempty))\n"));
  CHECK(contains(into_block_dcsr.stage2_dump, "            if C_seen[j_blk_3] != pC0:\n              C_seen[j_blk_3] = pC0\n"
                                              "              C_crd0[pC0] = int32(i_blk)\n              C0_nonempty = true\n"));
  CHECK(!contains(into_block_dcsr.stage2_dump, "pC0_2"));
  // An operand blocked otherwise: in each block row, its own block loops over the block columns,
  // its rows located at i / 4 and i % 4, scattered at j / 2.
  spgen::Compilation otherwise = compile(add, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [4, 4]}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(otherwise.stage2_dump, "      # the other operands outside A's blocks, where A is zero, into the same block row: B(i,j)\n"
                                        "      for i_in_2 in [0, min(2, dim_i - i_blk * 2)) sequential:\n"
                                        "        let i: int64 = i_blk * 2 + i_in_2\n"));
  CHECK(contains(otherwise.stage2_dump, "        for j_blk_3 at pB1_2 in [int64(B_pos1[pB0_2]), int64(B_pos1[pB0_2 + 1])) sequential:\n"));
  CHECK(contains(otherwise.stage2_dump, "          let pB2_2: int64 = pB1_2 * 4 + i % 4\n"
                                        "          for j_in_2 in [0, min(4, dim_j - j_blk_3 * 4)) sequential:\n"));
  CHECK(contains(otherwise.stage2_dump, "              C_blocks[j_blk_4 * 4 + (i_in_2 * 2 + j % 2)] += B_vals[pB3_2]\n"));
  // ... and the rest of that rest (outside both) in the same block row.
  spgen::Compilation otherwise_three = compile("C(i,j) = A(i,j) + B(i,j) - 3 * D(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 3]}, "B": {"format": "bsr", "block": [3, 2]}, "D": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 3]}}})");
  CHECK(contains(otherwise_three.stage2_dump, "# the other operands outside B's blocks, where B is zero, into the same block row: -(3 * D(i,j))\n"));
  CHECK(contains(otherwise_three.stage2_dump, "          if (pA1_3_found || pB1_3_found) == false:\n"));
  // Two operands blocked otherwise: the first's blocks, then the second's outside both.
  spgen::Compilation two_otherwise = compile("C(i,j) = A(i,j) + B(i,j) - 3 * D(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "bsr", "block": [4, 4]}, "D": {"format": "bsr", "block": [3, 3]}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(two_otherwise.stage2_dump, "      # the other operands outside B's blocks, where B is zero, into the same block row: -(3 * D(i,j))\n"));
  CHECK(contains(two_otherwise.stage2_dump, "        for j_blk_3_2 at pD1_3 in [int64(D_pos1[pD0_3]), int64(D_pos1[pD0_3 + 1])) sequential:\n"));
  // Blocked otherwise than A (2x3 beside 2x2): no workspace keyed by A's block columns serves;
  // listed, B's entries outside A's blocks joining the list.
  spgen::Compilation listed = compile(add, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 3]}}})");
  CHECK(!contains(listed.stage2_dump, "workspace"));
  CHECK(contains(listed.stage2_dump, "# the other operands outside A's blocks, where A is zero, into the list of C's entries: B(i,j)\n"));
}

TEST_CASE("bsr output that no operand blocks: a block-row workspace gathers whole blocks") {
  const char* add = "C(i,j) = A(i,j) + B(i,j)";
  spgen::Compilation c = compile(add, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 3]}},
                                          "schedule": [{"op": "parallel", "var": "i_blk"}]})");
  // The output splits i into block-row loops; j stays one loop, C's levels on it reached at j / 3 and j % 3.
  CHECK(contains(c.stage1_dump, "  C.1 = sparse_variable(j, parent=C.0, length=dim_j, pos=C_pos1, crd=C_crd1, j floordiv 3)\n"));
  CHECK(contains(c.stage1_dump, "  C.2 = dense_fixed(i_in, parent=C.1, length=dim_i, i mod 2)\n"));
  CHECK(contains(c.stage1_dump, "output, blocks gathered by level 1 in a block-row workspace\n"));
  CHECK(contains(c.stage1_dump, "over [i_blk: spatial, i_in: spatial, j: spatial]"));
  // Count phase: distinct block columns per block row.
  CHECK(contains(c.stage2_dump, "          let j_blk: int64 = j / 3\n"
                                "          if C_seen[j_blk] != i_blk:\n"
                                "            C_seen[j_blk] = i_blk\n"
                                "            C_pos1[i_blk + 1] += 1\n"));
  // Fill: a block zeroed at its first touch, each entry added at its place in the block, the
  // touched block columns sorted and the blocks copied whole.
  CHECK(contains(c.stage2_dump, "C_blocks: float32[(dim_j + 2) / 3 * 6] = 0:\n    for i_blk in [0, (dim_i + 1) / 2) parallel(static):\n"));
  CHECK(contains(c.stage2_dump, "# gather each block row of C by j / 3 in a workspace of whole blocks (no operand gives C's blocks); append them sorted\n"));
  CHECK(contains(c.stage2_dump, "      for i_in in [0, min(2, dim_i - i_blk * 2)) sequential:\n        let i: int64 = i_blk * 2 + i_in\n"));
  CHECK(contains(c.stage2_dump, "            for zero C block at z in [0, 6):\n              C_blocks[j_blk * 6 + z] = 0\n"
                                "          C_blocks[j_blk * 6 + (i_in * 3 + j % 3)] += (inA ? A_vals[pA1] : 0) + (inB ? B_vals[pB1] : 0)\n"));
  CHECK(contains(c.stage2_dump, "      sort C_touched[0, C_ntouched)\n      for append C at t in [0, C_ntouched):\n"
                                "        let j_blk_out: int64 = C_touched[t]\n        C_crd1[pC1] = int32(j_blk_out)\n"
                                "        for copy C block at z in [0, 6):\n          C_vals[pC1 * 6 + z] = C_blocks[j_blk_out * 6 + z]\n"));
  CHECK(!contains(c.stage2_dump, "zero C at p in [0, int64(C_pos1"));  // the blocks are copied whole: nothing to zero first
  // A DCSR operand's rows are found inside the block rows; a compressed block-row level opens
  // where the workspace gets a block.
  spgen::Compilation dcsr = compile(add, R"({"tensors": {"A": {"format": "dcsr"}, "B": {"format": "csr"},
      "C": {"format": {"levels": [{"kind": "compressed", "floordiv": 2}, {"kind": "compressed", "floordiv": 2}, {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 0, 1]}}}})");
  CHECK(contains(dcsr.stage2_dump, "# locate i in A by binary search (C splits i into blocks, so no cursor can follow it)\n"));
  CHECK(contains(dcsr.stage2_dump, "            C_seen[j_blk] = pC0\n            C_crd0[pC0] = int32(i_blk)\n            C0_nonempty = true\n"));
  CHECK(contains(dcsr.stage2_dump, "      pC0 += int64(C0_nonempty)\n"));
  // Rows blocked only (blocks of 4 rows sharing a column pattern): keyed by the column, 4 values each.
  spgen::Compilation rows = compile(add, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
      "C": {"format": {"levels": [{"kind": "dense", "floordiv": 4}, "compressed", {"kind": "dense", "mod": 4}], "order": [0, 1, 0]}}}})");
  CHECK(contains(rows.stage2_dump, "C_blocks[j * 4 + i_in] +="));
  CHECK(contains(rows.stage2_dump, "C_crd1[pC1] = int32(j_key_out)\n"));
  // SpGEMM transposed: the sum over k lies inside the block row, so the workspace gathers it.
  spgen::Compilation transposed = compile("C(i,j) = A(k,i) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(transposed.stage1_dump, "over [i_blk: spatial, k: reduction, i_in: spatial, j: spatial]"));
  // A level located inside the blocks under a merge cursor that did not find its row (it may sit
  // past the end) searches nothing (found by fuzzing block-CSC outputs; operands' column blocks too).
  spgen::Compilation absent = compile(add, R"({"tensors": {"A": {"format": {"levels": ["dense", {"kind": "compressed", "floordiv": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 1]}},
      "B": {"format": "dcsr"}, "C": {"format": "dense"}}})");
  CHECK(contains(absent.stage2_dump, "var pB1: int64 = inB ? int64(B_pos1[pB0]) : 0\n"));
  CHECK(contains(absent.stage2_dump, "let pB1_end: int64 = inB ? int64(B_pos1[pB0 + 1]) : 0\n"));
  // Refused: a sum outside the block rows, a row loop inside the workspace, a schedule that
  // would split a block row over threads.
  CHECK(error_of("C(i,j) = A(k,i) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}},
                 "schedule": [{"op": "reorder", "order": ["k", "i_blk"]}]})") ==
        "c.json: /tensors: error: sparse output C is summed over k outside its block rows, so no block row can be finished "
        "before the next begins; make C dense, or reorder so its row loops are outermost\n");
  CHECK(contains(error_of(add, R"({"tensors": {"A": {"format": "dense"}, "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}},
                 "schedule": [{"op": "reorder", "order": ["j", "i_blk"]}]})"),
                 "c.json: /schedule/0: error: reorder: this order puts j outside i_blk, but C (bsr) stores j in a level below i_blk"));
  CHECK(error_of(add, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}},
                 "schedule": [{"op": "parallel", "var": "i_in"}]})") ==
        "c.json: /schedule/0: error: parallel: cannot parallelize i_in: it adds into the row workspace of C\n");
}

TEST_CASE("unswitch: an ELL slot's padding test moves out of a register tile's loop, which becomes vectors") {
  spgen::Compilation c = compile(kSpmm, R"({"tensors": {"A": {"format": "ell", "width": 4}, "C": {"format": "dense"}},
    "schedule": [{"op": "reorder", "order": ["i", "k", "j"]}, {"op": "tile", "var": "k", "factor": 16, "into": ["k0", "k1"]},
                 {"op": "precompute", "var": "k1"}, {"op": "vectorize", "var": "k1"}]})");
  CHECK(contains(c.stage2_dump, "          if 0 <= j:\n"
                                "            for k1 at k1_vec in [0, 16 / SPGEN_LANES_F32):\n"));
  CHECK(contains(c.stage2_dump, "allocate local acc_tile: float32 vectors[16 / SPGEN_LANES_F32] = 0:"));
  // A test that reads the loop's own variables stays inside it.
  CHECK(contains(c.stage2_dump, "        let pB1: int64 = j * dim_k + k\n        if 0 <= j:\n"));
}

TEST_CASE("auto: a dense contraction gets the register tile over its free index, two dense sums fused into one loop") {
  const spgen::Compilation two = spgen_test::compile("Y(i,l) = T(r,i,k) * W(r,k,l)",
                                                     R"({"tensors": {"T": {"format": {"levels": ["dense", "dense", "dense"], "order": [1, 0, 2]}}}, "schedule": "auto"})");
  std::vector<std::string> ops;
  for (const spgen::ScheduleOp& op : two.schedule) ops.push_back(spgen::describe_schedule_op(op));
  CHECK(ops == std::vector<std::string>{"reorder(i, l, r, k)", "parallel(i, dynamic, 128)", "fuse(r, k -> rk)", "tile(l, 32 -> l0, l1)",
                                        "precompute(l1)", "vectorize(l1)"});
  const spgen::Compilation one = spgen_test::compile("C(i,l) = A(i,k) * B(k,l)", R"({"schedule": "auto"})");
  CHECK(spgen_test::contains(spgen::loops::dump_stage2(one.parts.empty() ? one.func : one.parts.back()), "acc_tile"));
  // Three dense sums: no tile (the fused loop would divide by two sizes).
  const spgen::Compilation three = spgen_test::compile("Y(i,l) = T(r,i,k,m) * W(r,k,m,l)", R"({"schedule": "auto"})");
  CHECK(!spgen_test::contains(three.stage2_dump, "acc_tile"));
}
