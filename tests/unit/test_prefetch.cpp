// passes/prefetch_rows: the `prefetch` op, observed through stage II and its errors.
#include <doctest/doctest.h>

#include "compile_helpers.h"

using namespace spgen_test;

TEST_CASE("prefetch: each stored entry first asks for the row of B read `distance` entries ahead, bounded by pos[rows]") {
  spgen::Compilation c = compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "i"}, {"op": "prefetch", "tensor": "B", "at": "j", "distance": 4}]})");
  CAPTURE(c.stage2_dump);
  CHECK(contains(c.stage2_dump, "    for j at pX1 in [int64(X_pos1[i]), int64(X_pos1[i + 1])):\n"
                                "      # prefetch the row of B read 4 stored entries ahead\n"
                                "      let j_ahead: int64 = int64(X_crd1[min(pX1 + 4, int64(X_pos1[dim_i]) - 1)])\n"
                                "      for prefetch B at q_B in [0, (dim_k + 15) / 16):\n"
                                "        prefetch B_vals[j_ahead * dim_k + q_B * 16]\n"));
  CHECK(contains(c.files[1].text, "__builtin_prefetch(&B_vals[j_ahead * dim_k + q_B * 16]);"));
  CHECK(contains(c.files[0].text, "//   prefetch(B at j, 4 ahead)\n"));
  // float64: 8 per cache line; with the size fixed, a constant number of lines.
  spgen::Compilation sized = compile(kSddmm, R"({"types": {"value": "float64"}, "sizes": {"k": 32}, "tensors": {"X": {"format": "csr"}},
      "schedule": [{"op": "prefetch", "tensor": "B", "at": "j"}]})");
  CHECK(contains(sized.stage2_dump, "min(pX1 + 8, "));  // the default distance
  CHECK(contains(sized.stage2_dump, "for prefetch B at q_B in [0, 4):"));
  CHECK(contains(sized.stage2_dump, "prefetch B_vals[j_ahead * 32 + q_B * 8]"));
}

TEST_CASE("prefetch: errors name the op") {
  auto error = [](const std::string& spec, const std::string& tensors, const std::string& op) {
    return error_of(spec, R"({"tensors": )" + tensors + R"(, "schedule": [)" + op + "]}");
  };
  const std::string csr = R"({"X": {"format": "csr"}})";
  CHECK(contains(error(kSddmm, csr, R"({"op": "prefetch", "tensor": "B", "at": "k"})"),
                 "c.json: /schedule/0: error: prefetch: loop k counts its coordinates"));
  CHECK(contains(error(kSddmm, csr, R"({"op": "prefetch", "tensor": "A", "at": "j"})"),
                 "prefetch: loop j iterates j, but the rows of A (its first level) are indexed by i"));
  CHECK(contains(error(kSddmm, csr, R"({"op": "prefetch", "tensor": "X", "at": "j"})"), "prefetch: X is csr: prefetch fetches rows of a dense input"));
  CHECK(contains(error(kSddmm, csr, R"({"op": "prefetch", "tensor": "Y", "at": "j"})"), "prefetch"));
  CHECK(contains(error(kSddmm, csr, R"({"op": "prefetch", "tensor": "B", "at": "q"})"), "prefetch: no loop named q"));
  CHECK(contains(error(kSddmm, csr, R"({"op": "prefetch", "tensor": "B", "at": "j", "distance": 0})"),
                 "/schedule/0/distance: error: expected a positive integer, found 0"));
  CHECK(contains(error(kSddmm, R"({"X": {"format": "dcsr"}})", R"({"op": "prefetch", "tensor": "B", "at": "j"})"),
                 "prefetch: loop j does not walk a compressed level under a dense root level"));
  CHECK(contains(error_of(kSddmm, R"({"target": "cuda", "tensors": {"X": {"format": "csr"}},
                                      "schedule": [{"op": "prefetch", "tensor": "B", "at": "j"}]})"),
                 "prefetch: prefetch is for the cpu target"));
}
