// Parallel loops that combine sums (reductions), balance rows by nonzeros, and fuse: the
// stage II dumps they produce and every error they give.
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "lower.h"

using namespace spgen_test;

namespace {

const char* const kCsc = R"("tensors": {"A": {"format": "csc"}})";
const char* const kCsr = R"("tensors": {"A": {"format": "csr"}})";

std::string with(const char* tensors, const std::string& schedule) {
  return std::string("{") + tensors + R"(, "schedule": [)" + schedule + "]}";
}

}  // namespace

TEST_CASE("parallel reduction atomic: the racing stores become atomic adds") {
  std::string s2 = compile(kSpmv, with(kCsc, R"({"op": "parallel", "var": "j", "reduction": "atomic"})")).stage2_dump;
  CHECK(contains(s2, "for j in [0, dim_j) parallel(static):"));
  CHECK(contains(s2, "atomic y_vals[i] += A_vals[pA1] * x_vals[j]"));
  std::string source = compile(kSpmv, with(kCsc, R"({"op": "parallel", "var": "j", "reduction": "atomic"})")).files[1].text;
  CHECK(contains(source, "      #pragma omp atomic\n      y_vals[i] += A_vals[pA1] * x_vals[j];"));
  // A sum kept in a scalar gets OpenMP's reduction clause instead.
  std::string inner = compile(kSpmv, with(kCsr, R"({"op": "parallel", "var": "j", "reduction": "atomic"})")).stage2_dump;
  CHECK(contains(inner, "parallel(static) +acc:"));
  CHECK(contains(compile(kSpmv, with(kCsr, R"({"op": "parallel", "var": "j", "reduction": "privatize"})")).files[1].text,
                 "#pragma omp parallel for schedule(static) reduction(+:acc)"));
}

TEST_CASE("parallel reduction privatize: per-thread copies, added into the output after the loop") {
  spgen::Compilation c = compile(kSpmv, with(kCsc, R"({"op": "parallel", "var": "j", "reduction": "privatize"})"));
  CHECK(contains(c.stage2_dump, "allocate y_private: float32[dim_i] = 0:\n"
                                "    for j in [0, dim_j) parallel(static):"));
  CHECK(contains(c.stage2_dump, "y_private[i] += A_vals[pA1] * x_vals[j]"));
  CHECK(contains(c.stage2_dump, "    for combine y at p_2 in [0, dim_i):\n      atomic y_vals[p_2] += y_private[p_2]"));
  CHECK(contains(c.files[1].text, "  #pragma omp parallel\n  {\n    std::vector<float> y_private(dim_i, 0.0f);\n"
                                  "    #pragma omp for schedule(static)\n"));
}

TEST_CASE("parallel reduction errors") {
  std::string races = error_of(kSpmv, with(kCsc, R"({"op": "parallel", "var": "j"})"));
  CHECK(contains(races, "/schedule/0: error: parallel: cannot parallelize j: it iterates the reduction index j, so "
                        "threads would race on the same entries of y (add \"reduction\": \"atomic\" or \"privatize\""));
  CHECK(contains(error_of(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "reduction": "atomic"})")),
                 "/schedule/0: error: parallel: loop i iterates the spatial index i: its iterations write different "
                 "entries of y, so there is nothing to combine (drop \"reduction\")"));
  CHECK(contains(error_of(kSddmm, R"({"tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}},
                          "schedule": [{"op": "reorder", "order": ["k", "j"]}, {"op": "parallel", "var": "k", "reduction": "atomic"}]})"),
                 "/schedule/1: error: parallel: a reduction combines additions into a dense output, but Y is sparse (csr); "
                 "make Y dense, or parallelize a spatial loop"));
  // A sum kept in a scalar needs no copy of the output, whatever its format.
  std::string sddmm = compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}},
                              "schedule": [{"op": "parallel", "var": "k", "reduction": "privatize"}]})").stage2_dump;
  CHECK(contains(sddmm, "for k in [0, dim_k) parallel(static) +acc:"));
  CHECK(!contains(sddmm, "allocate"));
  CHECK(contains(error_of(kSpmv, with(kCsc, R"({"op": "parallel", "var": "j", "reduction": "sum"})")),
                 "/schedule/0/reduction: error: unknown reduction strategy \"sum\" (expected atomic or privatize)"));
  CHECK(contains(error_of(kSpmv, R"({"target": "cuda", "tensors": {"A": {"format": "csc"}},
                          "schedule": [{"op": "parallel", "var": "j", "reduction": "atomic"}]})"),
                 "error: parallel: parallel is OpenMP's, for the cpu target: use bind on the cuda target"));
}

TEST_CASE("parallel balance nonzeros: parts of equal nonzero counts, found by binary search in pos") {
  std::string s2 = compile(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "nonzeros", "parts": 8})")).stage2_dump;
  CHECK(contains(s2, "for i_part in [0, 8) parallel(static):"));
  CHECK(contains(s2, "while search i_begin (i_begin < i_begin_high):"));
  CHECK(contains(s2, "if int64(A_pos1[i_begin_mid]) < int64(A_pos1[0]) + (int64(A_pos1[dim_i]) - int64(A_pos1[0])) * i_part / 8:"));
  CHECK(contains(s2, "if i_part + 1 == 8:\n      i_end = dim_i\n    for i in [i_begin, i_end):"));
  // The default number of parts, and a balanced loop that also reduces (CSC columns).
  CHECK(contains(compile(kSpmm, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "nonzeros"})")).stage2_dump,
                 "for i_part in [0, 256) parallel(static):"));
  std::string csc = compile(kSpmv, with(kCsc, R"({"op": "parallel", "var": "j", "balance": "nonzeros", "reduction": "atomic"})")).stage2_dump;
  CHECK(contains(csc, "for j_part in [0, 256) parallel(static):"));
  CHECK(contains(csc, "atomic y_vals[i] +="));
}

TEST_CASE("parallel balance errors") {
  CHECK(contains(error_of(kSpmm, with(kCsr, R"({"op": "parallel", "var": "k", "balance": "nonzeros"})")),
                 "/schedule/0: error: parallel: balance nonzeros needs a loop over the rows of a compressed level, but no "
                 "compressed level stores its entries under the rows of k (for csr A(i,j), balance i)"));
  CHECK(contains(error_of(kSpmm, with(kCsr, R"({"op": "split", "var": "i", "factor": 4}, {"op": "parallel", "var": "i1", "balance": "nonzeros"})")),
                 "/schedule/1: error: parallel: balance nonzeros needs a loop over the rows of a compressed level"));
  CHECK(contains(error_of(kSpmv, with(kCsc, R"({"op": "parallel", "var": "i", "balance": "nonzeros", "reduction": "atomic"})")),
                 "/schedule/0: error: parallel: loop i iterates the spatial index i"));
  CHECK(contains(error_of(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "rows"})")),
                 "/schedule/0/balance: error: unknown balance \"rows\" (expected nonzeros)"));
  CHECK(contains(error_of(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "parts": 4})")),
                 "/schedule/0/parts: error: \"parts\" needs \"balance\": \"nonzeros\""));
  CHECK(contains(error_of(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "nonzeros", "chunk": 4})")),
                 "/schedule/0/chunk: error: a balanced loop's parts are its chunks: set \"parts\" instead of \"chunk\""));
}
