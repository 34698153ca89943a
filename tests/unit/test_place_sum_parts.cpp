// Tests of a sum whose terms sum over different indices into an assembled sparse output
// (passes/place_sum_parts.cpp, and the added parts' nests of passes/lower_to_loops.cpp): one
// loop nest, the stage I and stage II dumps, `+=` through C_prev, and every refusal by its
// message. The numbers are checked by the e2e cases (spgemm_bias_*, spgemm_acc_*,
// spgemm_three_*, spmv_bias_*sv_out, spmv_three_sv_out; listed: spgemm_transposed_bias_*,
// spgemm_transposed_acc_csr, spgemm_bias_csc_out, spgemm_three_csc_out, sddmm_plus_csc_out;
// beside a blocked operand: spgemm_bias_bsr_csr_to_*, spgemm_bias_dense_bsr_to_csr,
// spgemm_acc_bsr_csr, spgemm_three_bsr_bsr_to_csr, and their cuda configs; a part's own blocked
// operand in the block rows of a bsr output: spgemm_bias_csr_csr_bsr_to_bsr,
// spgemm_bias_bsr_csr_bsr_to_bsr, spgemm_bias_csr_csr_block_dcsr_to_bsr, spgemm_acc_bsr_out,
// spgemm_three_csr_bsr_to_bsr, spgemm_bias_sum_bsr_csr_to_bsr, spgemm_bias_bsr_csr_block_dcsr_to_bsr,
// and their cuda configs; the body's block rows compressed: spgemm_bias_block_dcsr_csr_to_bsr,
// spgemm_acc_block_dcsr_csr_to_bsr, spgemm_bias_sum_block_dcsr_bsr_csr_to_bsr,
// spgemm_bias_cuda_block_dcsr_csr_to_bsr; a part's term without its blocked operand:
// spgemm_bias_sum_*, spgemm_rest_bias_*; listed into a blocked output:
// spgemm_bias_csr_csr_bsr_to_bsr3x3, spgemm_bias_bsr_csr_bsr3x2_to_bsr2x3,
// spgemm_bias_dense_bsr*_to_bsr_listed, spgemm_acc_bsr_dense_to_bsr,
// spgemm_bias_block_dcsr_csr_block_dcsr_to_bsr, sddmm_bias_bsr1x1_to_bsr_listed,
// acc_add_bsr2x1_to_bsr, acc_add_bsr_to_bsr2x1, acc_add_csr_to_row_blocks, acc_add_sum_bsr2x1_csr_to_bsr,
// spgemm_acc_block_dcsr3x1_block_dcsr1x2_to_block_dcsr, and their cuda configs).
#include <doctest/doctest.h>

#include <string>

#include "compile_helpers.h"

using namespace spgen_test;

namespace {

const char* const kSpgemmBias = "C(i,j) = A(i,k) * B(k,j) + D(i,j)";

std::string csr_all(const std::string& output_format = R"("csr")", const std::string& schedule = "") {
  return R"({"name": "k", "tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "D": {"format": "csr"}, "C": {"format": )" +
         output_format + "}}, \"schedule\": [" + schedule + "]}";
}

}  // namespace

TEST_CASE("place sum parts: SpGEMM plus a bias is one loop nest, the bias added into the row workspace outside k") {
  spgen::Compilation c = compile(kSpgemmBias, csr_all());
  CHECK(c.parts.empty());
  CHECK(c.assemble.size() == 1);
  CHECK(contains(c.stage1_dump, "sparse_iteration k over [i: spatial, k: reduction, j: spatial]:\n"
                                "  C(i,j) = A(i,k) * B(k,j) + D(i,j)\n"
                                "  one loop nest: A(i,k) * B(k,j) over [i, k, j]\n"
                                "  + D(i,j) (no summed index): inside [i], then over [j], into the same output entries\n"));
  // The fill: D's row after the k loop, into the same workspace, before the row is appended.
  CHECK(contains(c.stage2_dump, "          C_row[j] += A_vals[pA1] * B_vals[pB1]\n"
                                "      # + D(i,j) (no summed index), into the row workspace of C\n"
                                "      for j at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])) sequential:\n"
                                "        let j: int64 = int64(D_crd1[pD1])\n"
                                "        if C_seen[j] != i:\n"
                                "          C_seen[j] = i\n"
                                "          C_touched[C_ntouched] = j\n"
                                "          C_ntouched += 1\n"
                                "          C_row[j] = 0\n"
                                "        C_row[j] += D_vals[pD1]\n"
                                "      sort C_touched[0, C_ntouched)\n"));
  // The count: the row's columns are the union of both parts'.
  CHECK(contains(c.stage2_dump, "            C_pos1[i + 1] += 1\n"
                                "      # + D(i,j) (no summed index), into the row workspace of C\n"
                                "      for j at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])) sequential:\n"
                                "        let j: int64 = int64(D_crd1[pD1])\n"
                                "        if C_seen[j] != i:\n"
                                "          C_seen[j] = i\n"
                                "          C_pos1[i + 1] += 1\n"));
}

TEST_CASE("place sum parts: `+=` into SpGEMM's assembled C adds C_prev into the row workspace") {
  spgen::Compilation c = compile("C(i,j) += A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "dcsr"}}})");
  CHECK(c.program.spec_text == "C(i,j) = C_prev(i,j) + A(i,k) * B(k,j)");
  CHECK(contains(c.stage1_dump, "  one loop nest: A(i,k) * B(k,j) over [i, k, j]\n"
                                "  + C_prev(i,j) (no summed index): inside [i], then over [j], into the same output entries\n"));
  // C's rows: those of C_prev (dcsr) or of A (csr: all), the workspace's first touch raising the row's flag.
  // Each nest runs where its terms are stored.
  CHECK(contains(c.stage2_dump, "      # + C_prev(i,j) (no summed index), into the row workspace of C\n"
                                "      if inC_prev:\n"
                                "        for j at pC_prev1 in [inC_prev ? int64(C_prev_pos1[pC_prev0]) : 0, "
                                "inC_prev ? int64(C_prev_pos1[pC_prev0 + 1]) : 0) sequential:\n"));
  CHECK(contains(c.stage2_dump, "          C0_nonempty = true\n"));
}

TEST_CASE("place sum parts: an entry summed in a scalar gets the bias after the summed loop, with its sign") {
  spgen::Compilation c =
      compile("y(i) = A(i,j) * x(j) - b(i)", R"({"name": "k", "tensors": {"A": {"format": "dcsr"}, "b": {"format": "sv"}, "y": {"format": "sv"}}})");
  CHECK(contains(c.stage1_dump, "  one loop nest: A(i,j) * x(j) over [i, j]\n"
                                "  - b(i) (no summed index): inside [i], no loops of its own, into the same output entries\n"));
  // y's entries: the union of A's rows and b's entries (a two-finger merge).
  CHECK(contains(c.stage2_dump, "  # co-iterate i: two-finger merge of A, b\n"));
  // A's loop only where A has the row; b after it.
  CHECK(contains(c.stage2_dump, "    var acc: float32 = 0\n"
                                "    if inA:\n"
                                "      for j at pA1 in [inA ? int64(A_pos1[pA0]) : 0, inA ? int64(A_pos1[pA0 + 1]) : 0):\n"
                                "        let j: int64 = int64(A_crd1[pA1])\n"
                                "        acc += (inA ? A_vals[pA1] : 0) * x_vals[j]\n"
                                "    # - b(i) (no summed index), into the sum acc\n"
                                "    acc += -(inb ? b_vals[pb0] : 0)\n"
                                "    y_crd0[py0] = int32(i)\n"
                                "    y_vals[py0] = acc\n"));
}

TEST_CASE("place sum parts: what one loop nest cannot do is refused") {
  // Ops name no parts: the sum has none.
  CHECK(contains(error_of("y(i) = A(i,j) * x(j) + b(i)", R"({"tensors": {"A": {"format": "csr"}, "y": {"format": "sv"}},
      "schedule": [{"op": "parallel", "var": "i", "part": "part1"}]})"),
                 "c.json: /schedule/0/part: error: parallel: the sum is one loop nest, as y (sv) is a sparse output the "
                 "kernel assembles, so it has no parts to name; leave out \"part\""));
  // A loop over j in both nests: an op on j cannot tell them apart.
  CHECK(contains(error_of(kSpgemmBias, csr_all(R"("csr")", R"({"op": "split", "var": "j", "factor": 4})")),
                 "c.json: /schedule/0: error: split: there are several loops over j (the terms of the sum that sum over "
                 "different indices each have theirs, inside the loops outside the first summed index, or in nests of their "
                 "own where the output's entries are listed), which no schedule op can tell apart; schedule the loops they share, or j where only one part has it"));
  const std::string block_dcsr = R"({"levels": [{"kind": "compressed", "floordiv": 2}, {"kind": "compressed", "floordiv": 2},
      {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 0, 1]})";
  // The body's term without its blocked operand follows the blocks (see the tests below), but
  // where the body's own loop visits only the blocker's block rows (E block-DCSR, A dcsr located
  // in them), the shared loop visiting the others for D's sake only, the parts list C's entries
  // each in a nest of their own: A B + E B over E's blocks then A B outside them, and D.
  spgen::Compilation listed = compile("C(i,j) = A(i,k) * B(k,j) + E(i,k) * B(k,j) + D(i,j)",
                                      R"({"tensors": {"A": {"format": "dcsr"}, "B": {"format": "csr"}, "D": {"format": "csr"},
                              "E": {"format": )" + block_dcsr + R"(}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(listed.stage1_dump,
                 "  each part lists the entries of C, to be sorted and packed into its blocks:\n"
                 "  A(i,k) * B(k,j) + E(i,k) * B(k,j) (summed over k_blk, k_in): a nest of its own over [i_blk, k_blk, i_in, "
                 "k_in, j], into the list of C's entries\n"
                 "  + D(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"));
  CHECK(contains(listed.stage2_dump,
                 "    # + D(i,j) (no summed index), into the list of C's entries\n"
                 "    for i in [0, dim_i) sequential:\n"));
  CHECK(contains(listed.stage2_dump,
                 "    # the other operands outside E's blocks, where E is zero, into the list of C's entries: A(i,k) * B(k,j)\n"
                 "    for i at pA0_2 in [int64(A_pos0[0]), int64(A_pos0[1])) sequential:\n"));
}

TEST_CASE("place sum parts: into bsr, a part's own blocked operand gives its loops in the block rows the parts share") {
  // D's blocks would split the loops of A B, which does not read D: each part is blocked by its
  // own operands, and they share only C's block rows (i_blk), each adding into its workspace.
  spgen::Compilation c = compile(kSpgemmBias, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
      "D": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(c.stage1_dump, "  one loop nest: A(i,k) * B(k,j) over [i_blk, i_in, k, j], blocked by its own operands\n"
                                "  + D(i,j) (no summed index): inside [i_blk], then over [j_blk, i_in, j_in] blocked by its own "
                                "operands, into the same block rows of C\n"));
  CHECK(contains(c.stage2_dump, "    for i_blk in [0, (dim_i + 1) / 2):\n"
                                "      var pC1: int64 = int64(C_pos1[i_blk])\n"
                                "      # gather each block row of C by j / 2 in a workspace of whole blocks (the parts of the sum "
                                "gather into it, each blocked only by its own operands); append them sorted\n"
                                "      var C_ntouched: int64 = 0\n"
                                "      for i_in in [0, min(2, dim_i - i_blk * 2)) sequential:\n"
                                "        let i: int64 = i_blk * 2 + i_in\n"
                                "        for k at pA1 in [int64(A_pos1[i]), int64(A_pos1[i + 1])) sequential:\n"));
  CHECK(contains(c.stage2_dump, "            C_blocks[j_blk_2 * 4 + (i_in * 2 + j % 2)] += A_vals[pA1] * B_vals[pB1]\n"
                                "      # + D(i,j) (no summed index), into the block row workspace of C\n"
                                "      for j_blk at pD1 in [int64(D_pos1[i_blk]), int64(D_pos1[i_blk + 1])) sequential:\n"
                                "        let j_blk: int64 = int64(D_crd1[pD1])\n"
                                "        for i_in in [0, min(2, dim_i - i_blk * 2)) sequential:\n"
                                "          let pD2: int64 = pD1 * 2 + i_in\n"
                                "          for j_in in [0, min(2, dim_j - j_blk * 2)) sequential:\n"
                                "            let pD3: int64 = pD2 * 2 + j_in\n"
                                "            if C_seen[j_blk] != i_blk:\n"));
  CHECK(contains(c.stage2_dump, "            C_blocks[j_blk * 4 + (i_in * 2 + j_in)] += D_vals[pD3]\n"
                                "      sort C_touched[0, C_ntouched)\n"));
  // The count: both parts mark the block row's blocks.
  CHECK(contains(c.stage2_dump, "          for j_in in [0, min(2, dim_j - j_blk * 2)) sequential:\n"
                                "            if C_seen[j_blk] != i_blk:\n"
                                "              C_seen[j_blk] = i_blk\n"
                                "              C_pos1[i_blk + 1] += 1\n"
                                "  # prefix sum: counts become positions\n"));
  // `+=`: C_prev, read blocked as C is, is such a part.
  spgen::Compilation acc = compile("C(i,j) += A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
      "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(acc.stage2_dump, "      # + C_prev(i,j) (no summed index), into the block row workspace of C\n"
                                  "      for j_blk at pC_prev1 in [int64(C_prev_pos1[i_blk]), int64(C_prev_pos1[i_blk + 1])) sequential:\n"));
  // A part with a term without its blocked operand (E beside D's blocks) follows D's blocks in the
  // same block row, outside them.
  spgen::Compilation rest = compile("C(i,j) = A(i,k) * B(k,j) + D(i,j) + E(i,j)",
                                    R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "D": {"format": "bsr", "block": [2, 2]},
                                        "E": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(rest.stage2_dump, "      # the other operands outside D's blocks, where D is zero, into the same block row: E(i,j)\n"
                                   "      for i_in_2 in [0, min(2, dim_i - i_blk * 2)) sequential:\n"));
  // The body's block rows stored compressed (A block-DCSR): the block-row loop visits every block
  // row, with a cursor into A's, as D's rows lie in any.
  spgen::Compilation compressed_rows = compile(kSpgemmBias, R"({"tensors": {"A": {"format": {"levels": [
      {"kind": "compressed", "floordiv": 2}, {"kind": "compressed", "floordiv": 2}, {"kind": "dense", "mod": 2},
      {"kind": "dense", "mod": 2}], "order": [0, 1, 0, 1]}}, "B": {"format": "csr"}, "D": {"format": "csr"},
      "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(compressed_rows.stage2_dump, "    # co-iterate i_blk: every coordinate, with cursors into A\n"));
  CHECK(contains(compressed_rows.stage2_dump, "      if inA:\n"
                                              "        for k_blk at pA1 in [inA ? int64(A_pos1[pA0]) : 0, inA ? int64(A_pos1[pA0 + 1]) : 0) sequential:\n"));
  CHECK(contains(compressed_rows.stage2_dump, "      # + D(i,j) (no summed index), into the block row workspace of C\n"
                                              "      for i_in in [0, min(2, dim_i - i_blk * 2)) sequential:\n"));
  // The block-row loops are shared, so an op on i_in names loops of two parts.
  CHECK(contains(error_of(kSpgemmBias, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
      "D": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 2]}}, "schedule": [{"op": "parallel", "var": "i_in"}]})"),
                 "c.json: /schedule/0: error: parallel: there are several loops over i_in"));
}

TEST_CASE("place sum parts: beside a blocked operand, an unblocked output's parts each list their entries") {
  // A's blocks give C's entries a block at a time: A B lists them over A's blocks, D over its own
  // rows (no block loops: D is not blocked).
  spgen::Compilation c = compile(kSpgemmBias, R"({"tensors": {"A": {"format": "bsr", "block": [2, 3]}, "B": {"format": "csr"},
      "D": {"format": "csr"}, "C": {"format": "csr"}}})");
  CHECK(contains(c.stage2_dump, "    # A(i,k) * B(k,j) (summed over k_blk, k_in), into the list of C's entries\n"
                                "    for i_blk in [0, (dim_i + 1) / 2) sequential:\n"));
  CHECK(contains(c.stage2_dump, "    # + D(i,j) (no summed index), into the list of C's entries\n"
                                "    for i in [0, dim_i) sequential:\n"
                                "      for j at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])) sequential:\n"
                                "        let j: int64 = int64(D_crd1[pD1])\n"
                                "        C_keys[C_listed] = i * dim_j + j\n"
                                "        C_entries[C_listed] = D_vals[pD1]\n"
                                "        C_listed += 1\n"
                                "    # sort the list by key and sum the repeats of each key\n"));
  // The listed nests append to one list: sequential; D's loop over its rows is no loop of the
  // program's (A's blocks split i), so no op names it.
  const std::string blocked_csr = R"({"tensors": {"A": {"format": "bsr", "block": [2, 3]}, "B": {"format": "csr"},
      "D": {"format": "csr"}, "C": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": ")";
  CHECK(contains(error_of(kSpgemmBias, blocked_csr + R"(i_blk"}]})"),
                 "c.json: /schedule/0: error: parallel: cannot parallelize i_blk: it appends to the list of C's entries"));
  CHECK(contains(error_of(kSpgemmBias, blocked_csr + R"(i"}]})"),
                 "c.json: /schedule/0: error: parallel: loop i iterates a part of the sum whose terms sum over different "
                 "indices unsplit by the blocks of another part's operand, a nest of its own that schedule ops do not "
                 "transform; schedule the loops of the main nest: i_blk, k_blk, i_in, k_in, j, j"));
  // Into bsr, A's dense block rows drive C's: D adds into each block row's workspace.
  spgen::Compilation into_blocks = compile(kSpgemmBias, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]},
      "B": {"format": "csr"}, "D": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(into_blocks.stage2_dump, "      # + D(i,j) (no summed index), into the block row workspace of C\n"
                                          "      for i_in in [0, min(2, dim_i - i_blk * 2)) sequential:\n"
                                          "        let i: int64 = i_blk * 2 + i_in\n"
                                          "        for j at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])) sequential:\n"));
}

TEST_CASE("place sum parts: the body's term without its blocked operand follows the blocks") {
  const std::string formats = R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}, "B": {"format": "csr"},
      "D": {"format": "csr"}, "E": {"format": "csr"}, "C": {"format": )";
  // Into bsr: in each block row, after the added part D, E B outside A's blocks.
  spgen::Compilation into_blocks = compile("C(i,j) = A(i,k) * B(k,j) + E(i,k) * B(k,j) + D(i,j)",
                                           formats + R"("bsr", "block": [2, 2]}}})");
  CHECK(contains(into_blocks.stage2_dump, "          C_blocks[j_blk * 4 + (i_in * 2 + j % 2)] += D_vals[pD1]\n"
                                          "      # the other operands outside A's blocks, where A is zero, into the same block "
                                          "row: E(i,k) * B(k,j)\n"));
  // Into a listed csr: after every part's nest, into the same list.
  spgen::Compilation listed = compile("C(i,j) = A(i,k) * B(k,j) + E(i,k) * B(k,j) + D(i,j)", formats + R"("csr"}}})");
  CHECK(contains(listed.stage2_dump, "    # + D(i,j) (no summed index), into the list of C's entries\n"));
  CHECK(contains(listed.stage2_dump, "    # the other operands outside A's blocks, where A is zero, into the list of C's entries: "
                                     "E(i,k) * B(k,j)\n"));
}

TEST_CASE("place sum parts: into a listed output, a part's term without its blocked operand lists after the part") {
  // D + E, D bsr: D's blocks (E located in them), then E's entries outside them, into the list.
  spgen::Compilation c = compile("C(i,j) = A(i,k) * B(k,j) + D(i,j) + E(i,j)",
                                 R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "D": {"format": "bsr", "block": [2, 2]},
                                     "E": {"format": "csr"}, "C": {"format": "csr"}}})");
  CHECK(contains(c.stage2_dump, "            C_entries[C_listed] = D_vals[pD3] + (pE1_found ? E_vals[pE1] : 0)\n"
                                "            C_listed += 1\n"
                                "    # the other operands outside D's blocks, where D is zero, into the list of C's entries: E(i,j)\n"
                                "    for i in [0, dim_i) sequential:\n"));
  CHECK(contains(c.stage2_dump, "        if pD1_2_found == false:\n"
                                "          C_keys[C_listed] = i * dim_j + j\n"
                                "          C_entries[C_listed] = E_vals[pE1_2]\n"
                                "          C_listed += 1\n"
                                "    # sort the list by key and sum the repeats of each key\n"));
}

TEST_CASE("place sum parts: into a listed output, each part lists its entries in a nest of its own") {
  // j is summed outside C's rows: the entries arrive out of order, so they are listed, each
  // part's by its own whole nest, then sorted once and packed.
  spgen::Compilation c = compile("C(i,k) = A(j,i) * B(j,k) - D(i,k)", csr_all());
  CHECK(contains(c.stage2_dump, "    var C_listed: int64 = 0\n"
                                "    # A(j,i) * B(j,k) (summed over j), into the list of C's entries\n"
                                "    for j in [0, dim_j) sequential:\n"
                                "      for i at pA1 in [int64(A_pos1[j]), int64(A_pos1[j + 1])) sequential:\n"
                                "        let i: int64 = int64(A_crd1[pA1])\n"
                                "        for k at pB1 in [int64(B_pos1[j]), int64(B_pos1[j + 1])) sequential:\n"
                                "          let k: int64 = int64(B_crd1[pB1])\n"
                                "          C_keys[C_listed] = i * dim_k + k\n"
                                "          C_entries[C_listed] = A_vals[pA1] * B_vals[pB1]\n"
                                "          C_listed += 1\n"
                                "    # - D(i,k) (no summed index), into the list of C's entries\n"
                                "    for i in [0, dim_i) sequential:\n"
                                "      for k at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])) sequential:\n"
                                "        let k: int64 = int64(D_crd1[pD1])\n"
                                "        C_keys[C_listed] = i * dim_k + k\n"
                                "        C_entries[C_listed] = -D_vals[pD1]\n"
                                "        C_listed += 1\n"
                                "    # sort the list by key and sum the repeats of each key\n"
                                "    sort C_keys[0, C_listed) with C_entries\n"));
  // The assemble phase lists the keys the same way.
  CHECK(contains(c.stage2_dump, "    # - D(i,k) (no summed index), into the list of C's entries\n"
                                "    for i in [0, dim_i) sequential:\n"
                                "      for k at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])) sequential:\n"
                                "        let k: int64 = int64(D_crd1[pD1])\n"
                                "        C_keys[C_listed] = i * dim_k + k\n"
                                "        C_listed += 1\n"));
  // The loops append to one list: parallel is refused, and a loop over k in both nests cannot be named.
  CHECK(contains(error_of("C(i,k) = A(j,i) * B(j,k) - D(i,k)", csr_all(R"("csr")", R"({"op": "parallel", "var": "j"})")),
                 "it appends to the list of C's entries"));
  CHECK(contains(error_of("C(i,k) = A(j,i) * B(j,k) - D(i,k)", csr_all(R"("csr")", R"({"op": "split", "var": "k", "factor": 4})")),
                 "split: there are several loops over k"));
}

TEST_CASE("place sum parts: into a listed output on cuda, each part's nest lists through the same atomic cursor") {
  const std::string cuda = std::string(csr_all()).insert(1, R"("target": "cuda", )");
  spgen::Compilation c = compile("C(i,k) = A(j,i) * B(j,k) - D(i,k)", cuda);
  // The body's nest as the cuda listing's (unbound here); D's in kernels of its own, its rows
  // over the grid; every entry takes its slot of the one list atomically.
  CHECK(contains(c.stage2_dump, "    var C_listed: int64 = 0\n"
                                "    # A(j,i) * B(j,k) (summed over j), into the list of C's entries\n"
                                "    for j in [0, dim_j):\n"
                                "      for i at pA1 in [int64(A_pos1[j]), int64(A_pos1[j + 1])):\n"
                                "        let i: int64 = int64(A_crd1[pA1])\n"
                                "        for k at pB1 in [int64(B_pos1[j]), int64(B_pos1[j + 1])):\n"
                                "          let k: int64 = int64(B_crd1[pB1])\n"
                                "          atomic C_listed += 1\n"
                                "          C_keys[C_listed - 1] = i * dim_k + k\n"
                                "          C_entries[C_listed - 1] = A_vals[pA1] * B_vals[pB1]\n"
                                "    # - D(i,k) (no summed index), into the list of C's entries\n"
                                "    for i in [0, dim_i) bind(grid, 256 threads):\n"
                                "      for k at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])):\n"
                                "        let k: int64 = int64(D_crd1[pD1])\n"
                                "        atomic C_listed += 1\n"
                                "        C_keys[C_listed - 1] = i * dim_k + k\n"
                                "        C_entries[C_listed - 1] = -D_vals[pD1]\n"
                                "    # sort the list by key and sum the repeats of each key\n"
                                "    sort C_keys[0, C_listed) with C_entries\n"));
  // The host counts with each nest's kernel, then lists with each, then sorts and packs once.
  const std::string& source = c.files[1].text;
  const size_t count = source.find("k_count_entries<<<1, 1, 0, stream>>>("), count_d = source.find("k_count_entries_2<<<");
  const size_t list = source.find("k_list_entries<<<1, 1, 0, stream>>>("), list_d = source.find("k_list_entries_2<<<");
  const size_t sort = source.find("status = spgen_sort_entries(C_keys, C_entries,"), pack = source.find("k_pack_the_entries_of_C<<<");
  CHECK(count < count_d);
  CHECK(count_d < list);
  CHECK(list < list_d);
  CHECK(list_d < sort);
  CHECK(sort < pack);
  CHECK(pack != std::string::npos);
  CHECK(contains(source, "  int64_t C_listed = 0;\n"
                         "  // - D(i,k) (no summed index), into the list of C's entries\n"
                         "  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < dim_i; i += (int64_t)gridDim.x * blockDim.x) {"));
  // Ops schedule the body's nest; D's loops are no op's.
  CHECK(contains(compile("C(i,k) = A(j,i) * B(j,k) - D(i,k)", std::string(csr_all(R"("csr")",
                     R"({"op": "bind", "var": "j", "to": "threadIdx.x", "reduction": "atomic"})")).insert(1, R"("target": "cuda", )")).stage2_dump,
                 "    for j in [0, dim_j) bind(threadIdx.x, 32 threads, atomic):\n"));
  // Where a part's nest loops over the body's outer index (i, both), neither can be named: the
  // body's nest lists in kernels of its own too, its rows over the grid, and `auto` leaves both.
  spgen::Compilation both = compile(kSpgemmBias, std::string(csr_all(R"("csc")")).insert(1, R"("target": "cuda", )"));
  CHECK(contains(both.stage2_dump, "    # A(i,k) * B(k,j) (summed over k), into the list of C's entries\n"
                                   "    for i in [0, dim_i) bind(grid, 256 threads):\n"));
  CHECK(contains(both.stage2_dump, "    # + D(i,j) (no summed index), into the list of C's entries\n"
                                   "    for i in [0, dim_i) bind(grid, 256 threads):\n"));
  CHECK(contains(error_of(kSpgemmBias, std::string(csr_all(R"("csc")", R"({"op": "bind", "var": "k", "to": "threadIdx.x"})"))
                                           .insert(1, R"("target": "cuda", )")),
                 "c.json: /schedule/0: error: bind: loop k is in a nest that lists entries of C in kernels of its own, its "
                 "outer loop spread over the grid (an added part of the sum, or the first term's nest where a part has a "
                 "loop of its outer loop's label), which no op binds"));
  // A part whose outer loop merges (D coo: a cursor over its runs of rows) lists in one thread.
  CHECK(contains(compile("C(i,k) = A(j,i) * B(j,k) + D(i,k)", R"({"target": "cuda", "tensors": {"A": {"format": "csr"},
      "B": {"format": "csr"}, "D": {"format": "coo"}, "C": {"format": "csr"}}})").stage2_dump,
                 "    # + D(i,k) (no summed index), into the list of C's entries\n"
                 "    for one thread at once in [0, 1) bind(grid, 256 threads):\n"));
}

TEST_CASE("place sum parts: into a dense or ragged last level below the summed loop, each part adds into the located entries") {
  // k is summed outside C's dense last level: no workspace, the entries are located (row
  // position * dim_j + j); D's nest locates them again after the k loop.
  spgen::Compilation c = compile(kSpgemmBias, csr_all(R"({"levels": ["compressed", "dense"]})"));
  CHECK(contains(c.stage2_dump, "        let pC1: int64 = pC0 * dim_j + j\n"
                                "        C_crd0[pC0] = int32(i)\n"
                                "        C0_nonempty = true\n"
                                "        C_vals[pC1] += A_vals[pA1] * B_vals[pB1]\n"
                                "    # + D(i,j) (no summed index), into the entries of C\n"
                                "    for j at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])) sequential:\n"
                                "      let j: int64 = int64(D_crd1[pD1])\n"
                                "      let pC1_2: int64 = pC0 * dim_j + j\n"
                                "      C_crd0[pC0] = int32(i)\n"
                                "      C0_nonempty = true\n"
                                "      C_vals[pC1_2] += D_vals[pD1]\n"
                                "    pC0 += int64(C0_nonempty)\n"));
  // A ragged C: the assemble phase takes each row's length from both parts' columns.
  spgen::Compilation ragged = compile(kSpgemmBias, csr_all(R"("ragged")"));
  CHECK(contains(ragged.stage2_dump, "    # + D(i,j) (no summed index), into the entries of C\n"
                                     "    for j at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])) sequential:\n"
                                     "      let j: int64 = int64(D_crd1[pD1])\n"
                                     "      C_pos1[i + 1] = max(C_pos1[i + 1], int32(j + 1))\n"));
  // A sum over l inside the rows and over k outside them: D goes into the row workspace, not
  // into the scalar that sums over l inside the k loop (it once did, out of that scalar's scope).
  spgen::Compilation chain = compile("C(i,j) = A(i,k) * T(k,j,l) * x(l) + D(i,j)",
                                     R"({"tensors": {"A": {"format": "csr"}, "T": {"format": "csf"}, "D": {"format": "csr"}, "C": {"format": "csr"}}})");
  CHECK(contains(chain.stage2_dump, "      # + D(i,j) (no summed index), into the row workspace of C\n"));
  CHECK(!contains(chain.stage2_dump, "into the sum acc"));
}

TEST_CASE("place sum parts: into a blocked output, each part scatters into the block row's workspace of whole blocks") {
  spgen::Compilation c = compile(kSpgemmBias, csr_all(R"("bsr", "block": [2, 2])"));
  CHECK(contains(c.stage1_dump, "  one loop nest: A(i,k) * B(k,j) over [i_blk, i_in, k, j]\n"
                                "  + D(i,j) (no summed index): inside [i_blk, i_in], then over [j], into the same output entries\n"));
  CHECK(contains(c.stage2_dump, "            C_blocks[j_blk * 4 + (i_in * 2 + j % 2)] += A_vals[pA1] * B_vals[pB1]\n"
                                "        # + D(i,j) (no summed index), into the block row workspace of C\n"
                                "        for j at pD1 in [int64(D_pos1[i]), int64(D_pos1[i + 1])) sequential:\n"
                                "          let j: int64 = int64(D_crd1[pD1])\n"
                                "          let j_blk: int64 = j / 2\n"
                                "          if C_seen[j_blk] != i_blk:\n"));
  // An operand located inside the blocks by the shared loops (D dcsr: a binary search per row):
  // its nest runs only where the row was found.
  spgen::Compilation dcsr = compile(kSpgemmBias, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
      "D": {"format": "dcsr"}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(dcsr.stage2_dump, "        # + D(i,j) (no summed index), into the block row workspace of C\n"
                                   "        if pD0_found:\n"));
}

TEST_CASE("place sum parts: found by fuzzing, refused precisely instead of crashing") {
  // An added part that holds none of a blocked operand's loops (B blocks the summed k and j; the
  // part D(i,j) has no k loop): accepted, each part in its own nest.
  spgen::Compilation bias = compile("C(i,j) = A(i,k) * B(k,j) + D(i,j)",
                                    R"({"tensors": {"C": {"format": "bsr", "block": [3, 1]}, "A": {"format": "dcsr"},
                                        "B": {"format": "bsr", "block": [3, 1]}, "D": {"format": "coo"}}})");
  CHECK(contains(bias.stage2_dump, "# + D(i,j)"));
  // An output blocked otherwise than the operands, whose entries are listed into its blocks (it
  // was refused): each part lists them in a nest of its own.
  spgen::Compilation sddmm = compile("Y(i,j) = X(i,j) * A(i,k) * B(j,k) - 0.5 * X(i,j) * C(i,j)",
                                     R"({"tensors": {"Y": {"format": "bsr", "block": [2, 2]}, "X": {"format": "bsr", "block": [1, 1]},
                                         "A": {"format": "csr"}, "B": {"format": "ragged"}, "C": {"format": "bsr", "block": [1, 1]}}})");
  CHECK(contains(sddmm.stage1_dump, "  each part lists the entries of Y, to be sorted and packed into its blocks:\n"
                                    "  X(i,j) * A(i,k) * B(j,k) (summed over k): a nest of its own over [i_blk, j_blk, i_in, j_in, k], "
                                    "into the list of Y's entries\n"
                                    "  - 0.5 * X(i,j) * C(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], "
                                    "into the list of Y's entries\n"));
  // An inferred output in the structure of an unblocked operand takes no block loops: the loops
  // are ordered afresh (they kept i_blk, j_blk and crashed).
  spgen::Compilation inferred = compile("C(i,j) = A(i,j) * (B(i,j) + D(i,j))",
                                        R"({"tensors": {"A": {"format": "dcsr"}, "B": {"format": "bsr", "block": [3, 1]}, "D": {"format": "csr"}}})");
  CHECK(contains(inferred.stage1_dump, "over [i: spatial, j: spatial]"));
  CHECK(contains(inferred.stage1_dump, "format dcsr (inferred"));
}

TEST_CASE("place sum parts: into a blocked output that no shared nest can build, each part lists its entries into its blocks") {
  // D's block loops would drive C's blocks, but A B (A and B dense) does not read D (it was
  // refused): C's entries are listed, A B over i, k, j, D over its own blocks, then packed into
  // C's 2x2 blocks.
  spgen::Compilation c = compile(kSpgemmBias, R"({"tensors": {"A": {"format": "dense"}, "B": {"format": "dense"},
      "D": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(c.stage1_dump, "format bsr, mode order (0,1,0,1), values C_vals, output, entries listed, sorted and packed into its blocks\n"));
  CHECK(contains(c.stage1_dump, "  each part lists the entries of C, to be sorted and packed into its blocks:\n"
                                "  A(i,k) * B(k,j) (summed over k): a nest of its own over [i, k, j], into the list of C's entries\n"
                                "  + D(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"));
  CHECK(contains(c.stage2_dump, "    # A(i,k) * B(k,j) (summed over k), into the list of C's entries\n"
                                "    for i in [0, dim_i) sequential:\n"));
  CHECK(contains(c.stage2_dump, "          C_keys[C_listed] = ((i / 2 * ((dim_j + 1) / 2) + j / 2) * 2 + i % 2) * 2 + j % 2\n"));
  CHECK(contains(c.stage2_dump, "    # + D(i,j) (no summed index), into the list of C's entries\n"
                                "    for i_blk in [0, (dim_i + 1) / 2) sequential:\n"
                                "      for j_blk at pD1 in [int64(D_pos1[i_blk]), int64(D_pos1[i_blk + 1])) sequential:\n"));
  CHECK(contains(c.stage2_dump, "    # store the entries level by level, in storage order\n"));
  // `+=` into bsr reads C_prev blocked alike, which A B does not read: the same.
  spgen::Compilation acc = compile("C(i,j) += A(i,k) * B(k,j)", R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(acc.stage1_dump, "  A(i,k) * B(k,j) (summed over k): a nest of its own over [i, k, j], into the list of C's entries\n"
                                  "  + C_prev(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"));
  // Block rows stored compressed in the body's operand and in every other part's (A and D
  // block-DCSR): a shared loop would visit only the block rows they store; each part lists over
  // its own blocks instead.
  const std::string block_dcsr = R"({"levels": [{"kind": "compressed", "floordiv": 2}, {"kind": "compressed", "floordiv": 2},
      {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 0, 1]})";
  spgen::Compilation dcsr = compile(kSpgemmBias, R"({"tensors": {"A": {"format": )" + block_dcsr + R"(}, "B": {"format": "csr"},
      "D": {"format": )" + block_dcsr + R"(}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(dcsr.stage1_dump, "  A(i,k) * B(k,j) (summed over k_blk, k_in): a nest of its own over [i_blk, k_blk, i_in, k_in, j], into the list of C's entries\n"
                                   "  + D(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"));
  CHECK(contains(dcsr.stage2_dump, "    for i_blk at pD0 in [int64(D_pos0[0]), int64(D_pos0[1])) sequential:\n"));
  // Into an output blocked otherwise than the operands (C bsr 3x3 beside D bsr 2x2): keyed by
  // C's blocks.
  spgen::Compilation other = compile(kSpgemmBias, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
      "D": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [3, 3]}}})");
  CHECK(contains(other.stage2_dump, "          C_keys[C_listed] = ((i / 3 * ((dim_j + 2) / 3) + j / 3) * 3 + i % 3) * 3 + j % 3\n"
                                    "          C_entries[C_listed] = A_vals[pA1] * B_vals[pB1]\n"));
  // On cuda every nest lists through the one atomic cursor, A B's (whose loops no op names) in
  // kernels of its own over the grid.
  spgen::Compilation cuda = compile(kSpgemmBias, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
      "D": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [3, 3]}}, "schedule": "auto"})");
  CHECK(contains(cuda.stage2_dump, "    for i in [0, dim_i) bind(grid, 256 threads):\n"));
  CHECK(contains(cuda.stage2_dump, "atomic C_listed += 1"));
  // A part's own blocks, apart in the whole (B block-DCSR 1x2 beside C_prev's 3x1: found by
  // fuzzing), order its nest's loops by its own tensors' levels: k_blk before B's j_blk.
  const auto block_dcsr_of = [](int r, int c) {
    return R"({"format": {"levels": [{"kind": "compressed", "floordiv": )" + std::to_string(r) + R"(}, {"kind": "compressed", "floordiv": )" +
           std::to_string(c) + R"(}, {"kind": "dense", "mod": )" + std::to_string(r) + R"(}, {"kind": "dense", "mod": )" +
           std::to_string(c) + R"(}], "order": [0, 1, 0, 1]}})";
  };
  spgen::Compilation own = compile("C(i,j) += A(i,k) * B(k,j)", R"({"tensors": {"A": )" + block_dcsr_of(3, 1) + R"(, "B": )" +
                                                                     block_dcsr_of(1, 2) + R"(, "C": )" + block_dcsr_of(3, 1) + "}}");
  CHECK(contains(own.stage1_dump, "  A(i,k) * B(k,j) (summed over k_blk, k_in): a nest of its own over [i_blk, k_blk, j_blk, i_in, k_in, j_in], "
                                  "into the list of C's entries\n"));
  // Listing the parts does not run them in parallel on the cpu: they append to one list.
  CHECK(contains(error_of(kSpgemmBias, R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
      "D": {"format": "bsr", "block": [2, 2]}, "C": {"format": "bsr", "block": [3, 3]}}, "schedule": [{"op": "parallel", "var": "i_blk"}]})"),
                 "parallel: cannot parallelize i_blk: it appends to the list of C's entries"));
}

TEST_CASE("`+=` into an output blocked otherwise than the operand: C_prev and the operand list in their own orders") {
  // C bsr 2x2 += A bsr 2x1: A's 1-wide blocks of j would be located inside C_prev's, and the two
  // order i_in and j against each other (it was refused): C_prev is a part of its own.
  spgen::Compilation c = compile("C(i,j) += A(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 1]}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(c.stage1_dump, "values C_prev_vals, a part of the sum of its own, iterated in its own storage order\n"));
  CHECK(contains(c.stage1_dump, "  A(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"
                                "  + C_prev(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"));
  CHECK(contains(c.stage2_dump, "          for j_in in [0, min(1, dim_j - j_blk)) sequential:\n"));
  CHECK(contains(c.stage2_dump, "          for j_in in [0, min(2, dim_j - j_blk * 2)) sequential:\n"));
  // C += A + B, B csr: A + B over A's blocks, B's entries outside them after, skipping A's
  // blocks only (C_prev, another part's operand, is no blocker of this one).
  spgen::Compilation sum = compile("C(i,j) += A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "bsr", "block": [2, 1]},
      "B": {"format": "csr"}, "C": {"format": "bsr", "block": [2, 2]}}})");
  CHECK(contains(sum.stage2_dump, "    # the other operands outside A's blocks, where A is zero, into the list of C's entries: B(i,j)\n"));
  // B alike with A on i but blocked otherwise on j (block-DCSR 2x3 beside A bsr 2x2, column-major
  // blocks) is no operand alike: its entries outside A's blocks list after them (found by
  // fuzzing: they were dropped, in `C = A + B` into csr too).
  const std::string column_major = R"({"format": {"levels": [{"kind": "dense", "floordiv": 2}, {"kind": "compressed", "floordiv": 2},
      {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 1, 0]}})";
  const std::string block_dcsr = R"({"format": {"levels": [{"kind": "compressed", "floordiv": 2}, {"kind": "compressed", "floordiv": 3},
      {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 3}], "order": [0, 1, 0, 1]}})";
  spgen::Compilation apart = compile("C(i,j) += A(i,j) + B(i,j)", R"({"tensors": {"A": )" + column_major + R"(, "B": )" + block_dcsr +
                                                                      R"(, "C": )" + block_dcsr + "}}");
  CHECK(contains(apart.stage2_dump, "    # the other operands outside A's blocks, where A is zero, into the list of C's entries: B(i,j)\n"));
  spgen::Compilation add = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": )" + column_major + R"(, "B": )" + block_dcsr +
                                                                   R"(, "C": {"format": "csr"}}})");
  CHECK(contains(add.stage2_dump, "    # the other operands outside A's blocks, where A is zero, into the list of C's entries: B(i,j)\n"));
  // The conflict is still refused where listing cannot serve: an unblocked output's operands.
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csc"}, "C": {"format": "bsr", "block": [2, 2]}}})"),
                 "no loop order can iterate both A"));
}

// Terms whose storage orders conflict (or one without a blocked operand that cannot follow the
// blocks): each a nest of its own in its own order. The numbers are checked by the e2e cases
// sparse_add_csr_csc_to_dense, sparse_sub_cuda_dcsr_dcsc_to_dense, add_csr_csc_dcsr_to_dense,
// mix_dense_csr_csc_to_dense, mix_dense_ell_dcsc_to_dense (dense outputs: a part per term, adding
// in place); sparse_add_csr_csc_to_csr_out, sparse_sub_dcsr_dcsc_to_dcsc_out,
// sparse_add_cuda_csr_csc_to_csr_out, add_csr_csc_coo_to_coo_out, mix_dense_csr_csc_to_csr_out,
// sparse_add_bsr_csc_to_bsr_out, sparse_add_csr_csc_to_ell_out, acc_add_csc_to_csr_out,
// acc_add_cuda_csc_to_dcsr_out (assembled outputs: the parts list its entries).
TEST_CASE("terms that cannot share one loop nest each get a nest of their own") {
  const char* const add = "C(i,j) = A(i,j) + B(i,j)";
  auto config = [](const std::string& output) {
    return R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csc"}, "C": {"format": ")" + output + R"("}}})";
  };
  // Into a dense output: a part per term, the second adding in place in B's column order.
  spgen::Compilation dense = compile(add, config("dense"));
  CHECK(contains(dense.stage2_dump, "// part2 of 2 of the sum: C(i,j) += B(i,j) (no summed index)\n"));
  CHECK(contains(dense.stage2_dump, "  for j in [0, dim_j):\n    for i at pB1 in [int64(B_pos1[j]), int64(B_pos1[j + 1])):\n"));
  CHECK(contains(dense.stage2_dump, "      C_vals[pC1] += B_vals[pB1]\n"));
  CHECK(contains(dense.files[1].text, "t_part2("));  // the executor calls each part in turn
  // Into an assembled output: each term lists C's entries in its own order.
  for (const char* output : {"csr", "dcsc", "coo"}) {
    CAPTURE(output);
    spgen::Compilation listed = compile(add, config(output));
    CHECK(contains(listed.stage1_dump, "B(i,j): float32[B.0, B.1] format csc, mode order (1,0), values B_vals, a part of the sum of its own, "
                                       "iterated in its own storage order\n"));
    CHECK(contains(listed.stage1_dump, "  each part lists the entries of C, to be sorted and packed:\n"
                                       "  A(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"
                                       "  + B(i,j) (no summed index): a nest of its own over [j, i], into the list of C's entries\n"));
    CHECK(contains(listed.stage2_dump, "sort C_keys[0, C_listed) with C_entries\n"));
  }
  // A product of sums is multiplied out: A .* B by rows, A .* D by columns.
  spgen::Compilation mix = compile("C(i,j) = A(i,j) * (B(i,j) - D(i,j))",
                                   R"({"tensors": {"A": {"format": "dense"}, "B": {"format": "csr"}, "D": {"format": "csc"}, "C": {"format": "csr"}}})");
  CHECK(contains(mix.stage1_dump, "  A(i,j) * B(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"
                                  "  - A(i,j) * D(i,j) (no summed index): a nest of its own over [j, i], into the list of C's entries\n"));
  // `+=` into csr from csc: C_prev and A list C's entries apart.
  spgen::Compilation acc = compile("C(i,j) += A(i,j)", R"({"tensors": {"A": {"format": "csc"}, "C": {"format": "csr"}}})");
  CHECK(contains(acc.stage1_dump, "  A(i,j) (no summed index): a nest of its own over [j, i], into the list of C's entries\n"
                                  "  + C_prev(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"));
  // An intersection cannot be split: refused, naming the pair.
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j)", config("csr")),
                 "c.json: /tensors/B/format: error: no loop order can iterate both A (which stores j inside i) and B (which stores i inside j)"));
  // A term that conflicts within itself: the part's error, with a note naming the part.
  CHECK(contains(error_of("C(i,j) = A(i,j) * (B(i,j) + D(i,j))",
                          R"({"tensors": {"A": {"format": "ell", "width": 4}, "B": {"format": "csr"}, "D": {"format": "dcsc"}, "C": {"format": "dense"}}})"),
                 "c.json: /tensors/D/format: error: no loop order can iterate both A (which stores j inside i) and D (which stores i inside j) "
                 "through their compressed levels; store one of them in the other mode order (e.g. csr instead of csc) or dense\n"
                 "t.spg: note: in part2 of 2 of the sum: C(i,j) += A(i,j) * D(i,j) (no summed index) (the terms cannot share one loop "
                 "nest, so each has its own, adding into the dense output C)\n"));
}

// Found by fuzzing (wrong numbers before): beside A block-DCSR 3x2, B bsr 2x2 is blocked alike
// with A on k, but the loop over k's blocks visits only A's (B's level there is dense). E B, E
// located in A's blocks, was served in A's nest as though B's blocks were visited, and lost its
// entries in the blocks A lacks. Now each term has a nest of its own, the scoped sum's too. The
// numbers are checked by the e2e cases spgemm_pair_bias_*_apart.
TEST_CASE("a term whose blocked-alike operand's blocks the loops do not visit gets a nest of its own") {
  const char* const pair = "C(i,j) = A(i,k) * B(k,j) + E(i,k) * B(k,j) + D(i,j)";
  const std::string block_dcsr = R"({"levels": [{"kind": "compressed", "floordiv": 3}, {"kind": "compressed", "floordiv": 2},
      {"kind": "dense", "mod": 3}, {"kind": "dense", "mod": 2}], "order": [0, 1, 0, 1]})";
  auto config = [&](const std::string& a, const std::string& e, const std::string& c) {
    return R"({"tensors": {"A": {"format": )" + a + R"(}, "B": {"format": "bsr", "block": [2, 2]}, "D": {"format": "dense"},
        "E": {"format": )" + e + R"(}, "C": {"format": )" + c + "}}}";
  };
  // Into an assembled output: each term lists C's entries, E B over B's blocks.
  spgen::Compilation bsr = compile(pair, config(block_dcsr, R"("ragged")", R"("bsr", "block": [2, 2])"));
  CHECK(contains(bsr.stage1_dump,
                 "  A(i,k) * B(k,j) (summed over k_blk, k_in): a nest of its own over [i_blk, k_blk, i_in, j_blk, k_in, j_in], into the list of C's entries\n"
                 "  + E(i,k) * B(k,j) (summed over k): a nest of its own over [k_blk, i, j_blk, k_in, j_in], into the list of C's entries\n"
                 "  + D(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"));
  spgen::Compilation csr = compile(pair, config(block_dcsr, R"("csr")", R"("csr")"));
  CHECK(contains(csr.stage2_dump, "    # + E(i,k) * B(k,j) (summed over k), into the list of C's entries\n"
                                  "    for k_blk in [0, (dim_k + 1) / 2) sequential:\n"));
  // Into a dense output: a kernel part per term, adding in place (A bsr 3x2 alike).
  for (const std::string& a : {block_dcsr, std::string(R"("bsr", "block": [3, 2])")}) {
    CAPTURE(a);
    spgen::Compilation dense = compile(pair, config(a, R"("ragged")", R"("dense")"));
    CHECK(contains(dense.stage2_dump, "// part2 of 3 of the sum: C(i,j) += E(i,k) * B(k,j) (summed over k)\n"));
    CHECK(contains(dense.stage2_dump, "// part3 of 3 of the sum: C(i,j) += D(i,j) (no summed index)\n"));
  }
  // Blocked alike with A (E bsr 3x2), E's blocks are visited beside A's: one nest still.
  spgen::Compilation alike = compile(pair, config(block_dcsr, R"("bsr", "block": [3, 2])", R"("dense")"));
  CHECK(!contains(alike.stage2_dump, "part2 of 3"));
}

// The retries that give terms or parts nests of their own where one nest cannot serve them (the
// numbers: spgemm_pair_bias_cuda_dcsc_csc_dcsr_ragged_to_coo, spgemm_pair_bias_csc_ell_ell_csc_to_coo_auto,
// spgemm_bias_acc_block_dcsr_ell_to_block_dcsr, spgemm_pair_bias_row_blocks_block_dcsr_dcsr_coo_to_ell_out,
// spgemm_transposed_bsr1x2_dcsr_to_row_blocks, spgemm_transposed_bias_cuda_bsr1x2_dcsr_ragged_to_row_blocks,
// mttkrp_bias_coo_dcsc_row_blocks_dcsr_to_ragged).
TEST_CASE("parts that cannot share one nest: every term apart, entries listed") {
  const char* const pair = "C(i,j) = A(i,k) * B(k,j) + E(i,k) * B(k,j) + D(i,j)";
  // A and E conflict inside the group A B + E B: every term a part of its own, in its own order.
  spgen::Compilation terms = compile(pair, R"({"tensors": {"C": {"format": "coo"}, "A": {"format": "dcsr"}, "B": {"format": "csr"},
                                              "E": {"format": "dcsc"}, "D": {"format": "csr"}}})");
  CHECK(contains(terms.stage1_dump, "  A(i,k) * B(k,j) (summed over k): a nest of its own over [i, k, j], into the list of C's entries\n"
                                    "  + E(i,k) * B(k,j) (summed over k): a nest of its own over [k, i, j], into the list of C's entries\n"
                                    "  + D(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"));
  // `C += A B + D` with C block-DCSR and D ELL: C_prev + D cannot share a nest (D lies outside
  // C_prev's blocks), so C_prev, A B and D are parts of their own.
  const std::string block_dcsr = R"({"format": {"levels": [{"kind": "compressed", "floordiv": 2}, {"kind": "compressed", "floordiv": 2},
      {"kind": "dense", "mod": 2}, {"kind": "dense", "mod": 2}], "order": [0, 1, 0, 1]}})";
  spgen::Compilation acc = compile("C(i,j) += A(i,k) * B(k,j) + D(i,j)", R"({"tensors": {"A": )" + block_dcsr + R"(, "B": )" + block_dcsr +
                                                                             R"(, "D": {"format": "ell", "width": 4}, "C": )" + block_dcsr + "}}");
  CHECK(contains(acc.stage1_dump, "  C_prev(i,j) (no summed index): a nest of its own over [i_blk, j_blk, i_in, j_in], into the list of C's entries\n"));
  CHECK(contains(acc.stage1_dump, "  + D(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"));
  // k summed outside the block rows of C (A bsr 1x2 read transposed): listed into C's blocks.
  const std::string row_blocks = R"({"format": {"levels": [{"kind": "dense", "floordiv": 2}, "compressed", {"kind": "dense", "mod": 2}], "order": [0, 1, 0]}})";
  spgen::Compilation transposed = compile("C(i,j) = A(k,i) * B(k,j)", R"({"tensors": {"A": {"format": "bsr", "block": [1, 2]}, "B": {"format": "dcsr"}, "C": )" +
                                                                          row_blocks + "}}");
  CHECK(contains(transposed.stage1_dump, "values C_vals, output, entries listed, sorted and packed into its blocks\n"));
  // An unblocked output beside a blocked operand, whose shared loop over i visits only B's rows:
  // each part lists the entries.
  spgen::Compilation mttkrp = compile("C(i,j) = B(i,k,l) * E(k,j) * F(l,j) + D(i,j)",
                                      R"({"tensors": {"C": {"format": "ragged"}, "B": {"format": "coo"}, "E": {"format": "dcsc"}, "F": )" + row_blocks +
                                          R"(, "D": {"format": "dcsr"}}})");
  CHECK(contains(mttkrp.stage1_dump, "values C_vals, output, entries listed by each part, sorted and packed\n"));
  CHECK(contains(mttkrp.stage1_dump, "  + D(i,j) (no summed index): a nest of its own over [i, j], into the list of C's entries\n"));
  CHECK(contains(mttkrp.stage2_dump, "sort C_keys[0, C_listed) with C_entries\n"));
}
