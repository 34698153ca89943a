// passes/batch_entries: the `batch` op, observed through stage II, the C it prints, and its errors.
#include <doctest/doctest.h>

#include "compile_helpers.h"

using namespace spgen_test;

TEST_CASE("batch: 4 entries of a row at a time, their dot products fused and summed by one tree, then the rest") {
  spgen::Compilation c = compile(kSddmm, R"({"sizes": {"k": 32}, "tensors": {"X": {"format": "csr"}},
      "schedule": [{"op": "vectorize", "var": "k", "lanes": 16}, {"op": "batch", "var": "j", "factor": 4}]})");
  CAPTURE(c.stage2_dump);
  CHECK(contains(c.stage2_dump, "    # 4 iterations of j at a time, then the rest\n"
                                "    let pX1_first: int64 = int64(X_pos1[i])\n"
                                "    let pX1_groups: int64 = (int64(X_pos1[i + 1]) - pX1_first) / 4\n"
                                "    for j at pX1_group in [0, pX1_groups):\n"
                                "      let pX1_0: int64 = pX1_first + pX1_group * 4\n"));
  CHECK(contains(c.stage2_dump, "      let pX1_3: int64 = pX1_first + (pX1_group * 4 + 3)\n"
                                "      let j_0: int64 = int64(X_crd1[pX1_0])\n"));
  // One loop over k's groups holds the four dot products; one tree finishes them.
  CHECK(contains(c.stage2_dump, "        for k_group in [0, 2):\n          for k_lane at k_lane_vec in"));
  CHECK(contains(c.stage2_dump, "        acc_0, acc_1, acc_2, acc_3 += sums(acc_lanes_0[0:16], acc_lanes_1[0:16], acc_lanes_2[0:16], "
                                "acc_lanes_3[0:16])\n"
                                "      Y_vals[pX1_0] = X_vals[pX1_0] * acc_0\n"));
  CHECK(contains(c.stage2_dump, "    for j at pX1 in [pX1_first + pX1_groups * 4, int64(X_pos1[i + 1])):\n"));
  const std::string& source = c.files[1].text;
  CHECK(contains(source, "spgen_sum_lanes_x4_f32(acc_lanes_0, acc_lanes_1, acc_lanes_2, acc_lanes_3, 16, &acc_0, &acc_1, &acc_2, &acc_3);"));
  CHECK(contains(source, "static inline void spgen_sum_lanes_x4_f32("));  // the helpers come along
  CHECK(contains(c.files[0].text, "//   batch(j, 4)\n"));
  // Without batch, the file has no batched helpers.
  spgen::Compilation plain = compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "k", "lanes": 16}]})");
  CHECK(!contains(plain.files[1].text, "spgen_sum_lanes_x4_f32"));
}

TEST_CASE("batch: 8 in two trees of 4; 2 in one of 2; float64; a run-time k's leftover summed per entry") {
  spgen::Compilation eight = compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}},
      "schedule": [{"op": "vectorize", "var": "k", "lanes": 8}, {"op": "batch", "var": "j", "factor": 8}]})");
  CHECK(contains(eight.stage2_dump, "acc_0, acc_1, acc_2, acc_3 += sums("));
  CHECK(contains(eight.stage2_dump, "acc_4, acc_5, acc_6, acc_7 += sums("));
  // The loop over k's leftover (k unknown until run time) is each entry's own.
  CHECK(contains(eight.stage2_dump, "for k_rest at k_7 in [k_groups * 8, dim_k):"));
  spgen::Compilation two = compile(kSddmm, R"({"types": {"value": "float64"}, "tensors": {"X": {"format": "csr"}},
      "schedule": [{"op": "vectorize", "var": "k", "lanes": 4}, {"op": "batch", "var": "j", "factor": 2}]})");
  CHECK(contains(two.files[1].text, "spgen_sum_lanes_x2_f64(acc_lanes_0, acc_lanes_1, 4, &acc_0, &acc_1);"));
}

TEST_CASE("batch: errors name the op") {
  auto error = [](const std::string& spec, const std::string& config) { return error_of(spec, config); };
  const std::string lanes = R"({"op": "vectorize", "var": "k", "lanes": 16})";
  auto sddmm = [&](const std::string& ops, const std::string& extra = "") {
    return error(kSddmm, R"({"tensors": {"X": {"format": "csr"}}, )" + extra + R"("schedule": [)" + ops + "]}");
  };
  CHECK(contains(sddmm(R"({"op": "batch", "var": "j", "factor": 3})"),
                 "/schedule/0/factor: error: batch: the factor must be 2, 4 or 8"));
  CHECK(contains(sddmm(R"({"op": "batch", "var": "j"})"),
                 "c.json: /schedule/0: error: batch: loop j's iterations sum no dot product in lanes: vectorize the loop inside it "
                 "with \"lanes\" first"));
  CHECK(contains(sddmm(lanes + R"(, {"op": "batch", "var": "q"})"), "batch: no loop named q"));
  CHECK(contains(sddmm(R"({"op": "batch", "var": "j"})", R"("target": "cuda", )"), "batch: batch is for the cpu target"));
  CHECK(contains(sddmm(R"({"op": "parallel", "var": "i"}, {"op": "vectorize", "var": "k", "lanes": 16}, {"op": "batch", "var": "i"})"),
                 "batch: loop i is parallel: batch runs its iterations together in one thread; batch a loop inside it"));
  // SpMV's rows: each row's sum runs over that row's entries, a length of its own.
  CHECK(contains(error(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 8},
      {"op": "batch", "var": "i"}]})"),
                 "batch: the dot products of loop i's iterations differ in length (the loop over their lanes depends on the "
                 "iteration)"));
  // Its entries all add into the row's one scalar.
  CHECK(contains(error(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [{"op": "batch", "var": "j"}]})"),
                 "batch: the iterations of loop j add into acc, which they share"));
  // Into COO the entries are appended one after another.
  CHECK(contains(error(kSddmm, R"({"tensors": {"X": {"format": "coo"}}, "schedule": [)" + lanes +
                                   R"(, {"op": "batch", "var": "j"}]})"),
                 "batch: loop j must stay sequential: it appends the entries of Y under one parent position"));
}
