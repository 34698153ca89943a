// Parallel loops that combine sums (reductions), balance rows by nonzeros, and fuse: the
// stage II dumps they produce and every error they give.
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "lower.h"

using namespace spgen_test;

namespace {

// With SpMV (kSpmv) only: a CSC operand would make an omitted y a sparse vector (inferred).
const char* const kCsc = R"("tensors": {"A": {"format": "csc"}, "y": {"format": "dense"}})";
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

TEST_CASE("parallel balance nonzeros: parts of equal rows plus nonzeros, found by binary search in pos") {
  std::string s2 = compile(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "nonzeros", "parts": 8})")).stage2_dump;
  CHECK(contains(s2, "for i_part in [0, 8) parallel(static):"));
  CHECK(contains(s2, "while search i_begin (i_begin < i_begin_high):"));
  // A row's work: one for the row, one per nonzero (merge-based SpMV's diagonals; rows not cut).
  CHECK(contains(s2, "if int64(A_pos1[i_begin_mid]) - int64(A_pos1[0]) + i_begin_mid < "
                     "(int64(A_pos1[dim_i]) - int64(A_pos1[0]) + dim_i) * i_part / 8:"));
  CHECK(contains(s2, "if i_part + 1 == 8:\n      i_end = dim_i\n    for i in [i_begin, i_end):"));
  // Without "parts": one part per thread, the count read once before the loop (two searches
  // per thread, not per part of 256).
  const std::string per_thread = compile(kSpmm, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "nonzeros"})")).stage2_dump;
  CHECK(contains(per_thread, "let i_parts: int64 = thread_count()\n  for i_part in [0, i_parts) parallel(static):"));
  CHECK(contains(per_thread, "* i_part / i_parts:"));
  CHECK(contains(per_thread, "if i_part + 1 == i_parts:"));
  const spgen::Compilation spmv = compile(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "nonzeros"})"));
  CHECK(contains(spmv.files[1].text, "static inline int64_t spgen_thread_count() { return omp_get_max_threads(); }"));
  CHECK(contains(spmv.files[1].text, "const int64_t i_parts = spgen_thread_count();"));
  CHECK(!contains(compile(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "nonzeros", "parts": 8})")).files[1].text,
                  "spgen_thread_count"));
  // A balanced loop that also reduces (CSC columns).
  std::string csc = compile(kSpmv, with(kCsc, R"({"op": "parallel", "var": "j", "balance": "nonzeros", "reduction": "atomic"})")).stage2_dump;
  CHECK(contains(csc, "for j_part in [0, j_parts) parallel(static):"));
  CHECK(contains(csc, "atomic y_vals[i] +="));
}

TEST_CASE("parallel balance nonzeros over COO's runs: parts begin at a run of equal rows, no atomics") {
  const char* coo = R"({"tensors": {"A": {"format": "coo"}, "y": {"format": "dense"}}, "schedule": [%s]})";
  auto config = [&](const std::string& op) {
    std::string text = coo;
    return text.replace(text.find("%s"), 2, op);
  };
  const std::string s2 = compile(kSpmv, config(R"({"op": "parallel", "var": "i", "balance": "nonzeros"})")).stage2_dump;
  CHECK(contains(s2, "let i_parts: int64 = thread_count()\n  for i_part in [0, i_parts) parallel(static):"));
  // A share's first position moves forward while it is inside a run of equal i.
  CHECK(contains(s2, "var i_begin: int64 = int64(A_pos0[0]) + (int64(A_pos0[1]) - int64(A_pos0[0])) * i_part / i_parts\n"
                     "    while run i_begin (int64(A_pos0[0]) < i_begin && i_begin < int64(A_pos0[1]) && "
                     "int64(A_crd0[i_begin]) == int64(A_crd0[i_begin - 1])):"));
  CHECK(contains(s2, "for i at pA0 in [i_begin, i_end) sequential:"));
  CHECK(!contains(s2, "atomic"));
  CHECK(contains(compile(kSpmv, config(R"({"op": "parallel", "var": "i", "balance": "nonzeros", "parts": 16})")).stage2_dump,
                 "* (i_part + 1) / 16"));
  // Without balance the runs race: the error names the ways out.
  CHECK(contains(error_of(kSpmv, config(R"({"op": "parallel", "var": "i"})")),
                 "(add \"reduction\": \"atomic\" or \"privatize\", or \"balance\": \"nonzeros\", whose parts own their runs whole)"));
  // auto does it for COO into a dense output.
  CHECK(contains(compile(kSpmv, R"({"tensors": {"A": {"format": "coo"}, "y": {"format": "dense"}}, "schedule": "auto"})").files[0].text,
                 "parallel(i, static, balance nonzeros): entries in runs of equal i (a non-unique level)"));
}

TEST_CASE("parallel balance merge_path: rows cut where the merged rows and entries split evenly, carries added after") {
  const spgen::Compilation spmv = compile(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "merge_path", "parts": 4})"));
  const std::string& s2 = spmv.stage2_dump;
  // Each part's start on its diagonal of the merge: the rows that end before it, then entries.
  CHECK(contains(s2, "allocate y_carry: float32[4] = 0, i_carry_row: int64[4] = 0:"));
  CHECK(contains(s2, "let i_begin_diagonal: int64 = (dim_i + A_pos1_entries) * i_part / 4\n"
                     "      var i_begin: int64 = max(0, i_begin_diagonal - A_pos1_entries)\n"
                     "      var i_begin_high: int64 = min(i_begin_diagonal, dim_i)"));
  CHECK(contains(s2, "if int64(A_pos1[i_begin_mid + 1]) - A_pos1_first <= i_begin_diagonal - i_begin_mid - 1:"));
  CHECK(contains(s2, "let i_begin_entry: int64 = A_pos1_first + (i_begin_diagonal - i_begin)"));
  // The first row from the part's first entry, the rows between unclipped, the last row up to
  // the part's last entry into the part's carry.
  CHECK(contains(s2, "for i in [i_begin, min(i_begin + 1, i_end)):\n"
                     "        var acc: float32 = 0\n"
                     "        for j at pA1 in [max(int64(A_pos1[i]), i_begin_entry), int64(A_pos1[i + 1])):"));
  CHECK(contains(s2, "for i in [i_begin + 1, i_end):\n"
                     "        var acc: float32 = 0\n"
                     "        for j at pA1 in [int64(A_pos1[i]), int64(A_pos1[i + 1])):"));
  CHECK(contains(s2, "for i in [i_end, min(i_end + 1, dim_i)):\n"
                     "        var acc: float32 = 0\n"
                     "        for j at pA1 in [max(int64(A_pos1[i]), i_begin_entry), min(int64(A_pos1[i + 1]), i_end_entry)):"));
  CHECK(contains(s2, "y_carry[i_part] = acc"));
  CHECK(contains(s2, "for carry i at i_part_2 in [0, 4):\n      if i_carry_row[i_part_2] < dim_i:\n"
                     "        y_vals[i_carry_row[i_part_2]] += y_carry[i_part_2]"));
  // The carries are shared: allocated before the parallel region, not per thread.
  CHECK(contains(spmv.files[1].text, "    std::vector<float> y_carry(4, 0.0f);\n    std::vector<int64_t> i_carry_row(4, 0);\n"
                                     "    // each part's share of the row it leaves unfinished, added in after the parts\n"
                                     "    #pragma omp parallel for schedule(static)\n"));
  // SpMM: a carry is a whole output row; ops after parallel reach the rows' body before the cut.
  const std::string spmm = compile(kSpmm, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "merge_path"},
                                                         {"op": "vectorize", "var": "k"})")).stage2_dump;
  CHECK(contains(spmm, "allocate C_carry: float32[i_parts * dim_k] = 0, i_carry_row: int64[i_parts] = 0:"));
  CHECK(contains(spmm, "C_carry[pC1 + (i_part - i) * dim_k] += A_vals[pA1] * B_vals[pB1]"));
  CHECK(contains(spmm, "C_vals[i_carry_row[i_part_2] * dim_k + C_entry] += C_carry[i_part_2 * dim_k + C_entry]"));
  CHECK(contains(spmm, "for k in [0, dim_k) vectorized:"));
}

TEST_CASE("parallel balance merge_path refuses rows whose sum does not split") {
  auto refusal = [](const char* spec, const std::string& config) { return error_of(spec, config); };
  const std::string tail = "; use \"balance\": \"nonzeros\", which keeps rows whole";
  CHECK(contains(refusal("y(i) = max(j: A(i,j) * x(j))\n", with(kCsr, R"({"op": "parallel", "var": "i", "balance": "merge_path"})")),
                 "error: parallel: balance merge_path cuts rows, and the rows take a max or a min, not a sum" + tail));
  CHECK(contains(refusal("y(i) = A(i,j) * B(i,j) * x(j)\n",
                         R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "i", "balance": "merge_path"}]})"),
                 "balance merge_path cuts rows, and it co-iterates A with the sparse B" + tail));
  CHECK(contains(refusal("y(i) = exp(A(i,j)) * x(j)\n", with(kCsr, R"({"op": "parallel", "var": "i", "balance": "merge_path"})")),
                 "the right-hand side is not a sum of terms each a product with one entry of A" + tail));
  CHECK(contains(refusal(kSpmv, R"({"tensors": {"A": {"format": "ragged"}}, "schedule": [{"op": "parallel", "var": "i", "balance": "merge_path"}]})"),
                 "balance merge_path cuts rows, and the level under i is not compressed" + tail));
  CHECK(contains(refusal(kSpmv, R"({"tensors": {"A": {"format": "bsr", "block": [2, 2]}}, "schedule": [{"op": "parallel", "var": "i_blk", "balance": "merge_path"}]})"),
                 "balance merge_path cuts rows, and loop i_blk runs over blocks of rows" + tail));
  CHECK(contains(refusal(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "merge_path"}, {"op": "split", "var": "i", "factor": 4})")),
                 "/schedule/0: error: parallel: balance merge_path cuts the loop over rows after the ops that follow it, and one of "
                 "them split, tiled or moved that loop; put the parallel op after the ops on its loop"));
  // A product with a factor of the row alone still splits: y(i) = A(i,j) x(j) b(i).
  CHECK(contains(compile("y(i) = A(i,j) * x(j) * b(i)\n", with(kCsr, R"({"op": "parallel", "var": "i", "balance": "merge_path"})")).stage2_dump,
                 "y_carry[i_part]"));
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
                 "/schedule/0/balance: error: unknown balance \"rows\" (expected nonzeros or merge_path)"));
  CHECK(contains(error_of(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "parts": 4})")),
                 "/schedule/0/parts: error: \"parts\" needs a \"balance\""));
  CHECK(contains(error_of(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i", "balance": "nonzeros", "chunk": 4})")),
                 "/schedule/0/chunk: error: a balanced loop's parts are its chunks: set \"parts\" instead of \"chunk\""));
}

TEST_CASE("stage I fuse of a csr operand: one loop over its entries, rows by binary search") {
  spgen::Compilation c = compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}},
      "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "parallel", "var": "e"}]})");
  CHECK(contains(c.stage1_dump, "  fuse i, j -> e: one loop over the stored entries of X\n"));
  // Each thread keeps its own row cursor, searched for only when an entry lies outside its row.
  CHECK(contains(c.stage2_dump, "  # fuse i, j: one loop over the entries of X\n"
                                "  var e_row: int64 = 0\n"
                                "  for e at pX1 in [int64(X_pos1[0]), int64(X_pos1[dim_i])) parallel(static) private e_row:\n"));
  CHECK(contains(c.stage2_dump, "    if pX1 < int64(X_pos1[e_row]) || int64(X_pos1[e_row + 1]) <= pX1:\n"
                                "      var e_row_low: int64 = 0\n"
                                "      var e_row_high: int64 = dim_i\n"
                                "      while search e_row (e_row_low < e_row_high):\n"
                                "        let e_row_mid: int64 = (e_row_low + e_row_high) / 2\n"
                                "        if int64(X_pos1[e_row_mid]) <= pX1:\n"));
  CHECK(contains(c.stage2_dump, "      e_row = e_row_low - 1\n    let j: int64 = int64(X_crd1[pX1])\n"));
  CHECK(contains(c.stage2_dump, "let pA1: int64 = e_row * dim_k + k"));
  CHECK(contains(c.stage2_dump, "Y_vals[pX1] = X_vals[pX1] * acc"));
  CHECK(contains(c.files[1].text, "#pragma omp parallel for schedule(static) firstprivate(e_row)"));
  // SpMV: the row sum is no longer a scalar; y is zeroed and added into, so parallel needs a reduction.
  std::string spmv = compile(kSpmv, with(kCsr, R"({"op": "fuse", "vars": ["i", "j"], "into": "e"})")).stage2_dump;
  CHECK(contains(spmv, "for zero y at p in [0, dim_i):"));
  CHECK(contains(spmv, "y_vals[e_row] += A_vals[pA1] * x_vals[j]"));
  CHECK(contains(error_of(kSpmm, with(kCsr, R"({"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "parallel", "var": "e"})")),
                 "/schedule/1: error: parallel: cannot parallelize e: it iterates the reduction index j, so threads would race on the same entries of C"));
  CHECK(contains(compile(kSpmm, with(kCsr, R"({"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "parallel", "var": "e", "reduction": "atomic"})")).stage2_dump,
                 "atomic C_vals[pC1] += A_vals[pA1] * B_vals[pB1]"));
  // The cursor is per-thread state, not a sum: no reduction clause for it.
  CHECK(!contains(compile(kSpmm, with(kCsr, R"({"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "parallel", "var": "e", "reduction": "atomic"})")).stage2_dump,
                  "+e_row"));
}

TEST_CASE("stage I fuse of coo levels names the loop over its entries") {
  std::string s2 = compile(kSpmv, R"({"tensors": {"A": {"format": "coo"}, "y": {"format": "dense"}}, "schedule": [
      {"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "parallel", "var": "e", "reduction": "atomic"}]})").stage2_dump;
  CHECK(contains(s2, "for e at pA0 in [int64(A_pos0[0]), int64(A_pos0[1])) parallel(static):\n"
                     "    # fuse i, j: one loop over the entries of A\n"));
  CHECK(contains(s2, "atomic y_vals[i] += acc"));
}

TEST_CASE("stage I fuse errors") {
  CHECK(contains(error_of(kSpmm, with(kCsr, R"({"op": "fuse", "vars": ["j", "i"], "into": "e"})")),
                 "/schedule/0: error: fuse: loop i is not directly inside loop j (the loop order is i, j, k); fuse a "
                 "sparse level's variable with its parent's, in that order"));
  CHECK(contains(error_of("C(i,j) = A(i,j) * B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}},
                          "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})"),
                 "/schedule/0: error: fuse: both A and B store j sparsely; fuse iterates the entries of one tensor "
                 "(fusing levels of several tensors is not supported)"));
  CHECK(contains(error_of("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"}},
                          "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})"),
                 "/schedule/0: error: fuse: index j is co-iterated with other operands (a term without A visits every "
                 "coordinate), but a fused loop visits only the stored entries of A"));
  CHECK(contains(error_of("C(i,j) += A(i,j)", R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "dcsr"}},
                          "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})"),
                 "/schedule/0: error: fuse: both C_prev (the value that += adds into) and A store j sparsely"));
  // Block loops of BSR (found generating wrong sums before it was refused).
  CHECK(contains(error_of(kSpmm, with(R"("tensors": {"A": {"format": "bsr", "block": [2, 2]}})", R"({"op": "fuse", "vars": ["i_blk", "j_blk"], "into": "e"})")),
                 "/schedule/0: error: fuse: loop i_blk is a block loop of A (bsr); fusing the levels of a blocked format "
                 "is not supported"));
  CHECK(contains(error_of(kSpmv, with(R"("tensors": {"A": {"format": "dcsr"}})", R"({"op": "fuse", "vars": ["i", "j"], "into": "e"})")),
                 "/schedule/0: error: fuse: A (dcsr) stores i, j in sparse_variable, sparse_variable levels; fuse supports "
                 "a dense level over a compressed one (csr, csc) and COO's two top levels"));
  CHECK(contains(error_of(kMttkrp, R"({"tensors": {"B": {"format": "csf"}}, "schedule": [{"op": "fuse", "vars": ["k", "l"], "into": "e"}]})"),
                 "/schedule/0: error: fuse: B (csf) stores k below its root level; fuse supports the two top levels of a tensor"));
  CHECK(contains(error_of(kSpmv, with(kCsr, R"({"op": "fuse", "vars": ["i", "j"], "into": "i"})")),
                 "/schedule/0: error: fuse: the name i is already in use; choose another"));
  CHECK(contains(error_of(kSpmv, with(kCsr, R"({"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "reorder", "order": ["i", "j"]})")),
                 "/schedule/1: error: reorder: reorder the index variables before fusing them"));
  // After a loop op, the loops are stage II: a position loop cannot be fused there.
  CHECK(contains(error_of(kSpmv, with(kCsr, R"({"op": "parallel", "var": "i"}, {"op": "fuse", "vars": ["i", "j"], "into": "e"})")),
                 "/schedule/1: error: fuse: loop j iterates the positions of a sparse level; fuse sparse levels by their "
                 "index variables, before any other op (stage I)"));
}

TEST_CASE("stage I fuse into an assembled output: its entries are listed (per thread in parallel), a vector's gathered") {
  const char* copy = "C(i,j) = A(i,j)";
  spgen::Compilation c = compile(copy, R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "dcsr"}},
      "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "parallel", "var": "e", "schedule": "static"}]})");
  CHECK(contains(c.stage2_dump, "# list the entries of C as the loops produce them (out of order: loop e fuses i and j into one "
                                "loop over the entries of A, which closes no row of C)"));
  CHECK(contains(c.stage2_dump, "      for e at pA1 in [int64(A_pos1[0]), int64(A_pos1[dim_i])) parallel(static) private e_row:\n"));
  CHECK(contains(c.stage2_dump, "        C_keys_thread[C_listed_thread[0]] = e_row * dim_j + j\n"));
  // Only the whole fused loop lists per thread; a vectorized or split part of it is refused.
  CHECK(contains(error_of(copy, R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "dcsr"}}, "schedule": [
                          {"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "split", "var": "e", "factor": 8},
                          {"op": "parallel", "var": "e0", "schedule": "static"}]})"),
                 "/schedule/2: error: parallel: cannot parallelize e0: it appends to the list of C's entries, which each "
                 "thread keeps for the whole outermost loop only"));
  // Into coo, a fused csr operand's entries come in order, once each: appended in place through C's cursor.
  std::string in_order = compile(copy, R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "coo"}},
                                       "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})").stage2_dump;
  CHECK(!contains(in_order, "list the entries"));
  CHECK(contains(in_order, "    C_crd0[pC0] = int32(e_row)\n    C_crd1[pC0] = int32(j)\n    C_vals[pC0] = A_vals[pA1]\n    pC0 += 1\n"));
  CHECK(contains(error_of(copy, R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "coo"}}, "schedule": [
                          {"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "parallel", "var": "e", "schedule": "static"}]})"),
                 "/schedule/1: error: parallel: cannot parallelize e: it appends the entries of C under one parent position"));
  // SpMM into coo sums over j inside the fused loop: listed, repeats summed.
  CHECK(contains(compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "coo"}},
                          "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})").stage2_dump,
                 "which closes no row of C"));
  // COO's fused levels visit each entry alone (not by runs of a row): listed, repeats summed.
  CHECK(contains(compile(copy, R"({"tensors": {"A": {"format": "coo"}, "C": {"format": "csr"}},
                          "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})").stage2_dump,
                 "    # sort the list by key and sum the repeats of each key\n"));
  // A sparse vector is gathered whole in its workspace, appended after the loop.
  const char* sv = R"({"tensors": {"A": {"format": "csr"}, "y": {"format": "sv"}}, "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"})";
  std::string gathered = compile(kSpmv, std::string(sv) + "]}").stage2_dump;
  CHECK(!contains(gathered, "list the entries"));
  CHECK(contains(gathered, "y_row[e_row] += A_vals[pA1] * x_vals[j]"));
  CHECK(contains(error_of(kSpmv, std::string(sv) + R"(, {"op": "parallel", "var": "e", "reduction": "atomic"}]})"),
                 "/schedule/1: error: parallel: cannot parallelize e: it adds into the row workspace of y"));
}

TEST_CASE("stage I fuse into an assembled output with rows: appended in place where the entries come in order, once each") {
  const char* copy = "C(i,j) = A(i,j)";
  spgen::Compilation c = compile(copy, R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "dcsr"}},
      "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})");
  CHECK(!contains(c.stage2_dump, "list the entries"));
  CHECK(!contains(c.stage2_dump, "sort"));
  CHECK(contains(c.stage2_dump, "  # its entries come in C's storage order, once each: appended in place\n  var C0_row: int64 = -1\n"));
  // Counting the row level: one more row where the entry's row changes.
  CHECK(contains(c.stage2_dump, "    if e_row != C0_row:\n      C_pos0[pC0 + 1] += 1\n      C0_row = e_row\n"));
  // Counting the columns: the row cursor moves on to the new row.
  CHECK(contains(c.stage2_dump, "    if e_row != C0_row:\n      if 0 <= C0_row:\n        pC0 += 1\n      C0_row = e_row\n"
                                "    C_pos1[pC0 + 1] += 1\n"));
  // Filling: the row's coordinate stored where it opens, the entry at the one cursor through all rows.
  CHECK(contains(c.stage2_dump, "  var pC0: int64 = int64(C_pos0[0])\n  var pC1: int64 = int64(C_pos1[0])\n"));
  CHECK(contains(c.stage2_dump, "      C_crd0[pC0] = int32(e_row)\n      C0_row = e_row\n    let j: int64 = int64(A_crd1[pA1])\n"
                                "    C_crd1[pC1] = int32(j)\n    C_vals[pC1] = A_vals[pA1]\n    pC1 += 1\n"));
  // csr (dense rows), k summed inside: rows counted by the fused loop, then one cursor appends.
  std::string csr = compile("A(i,j) = B(i,j,k) * c(k)", R"({"tensors": {"A": {"format": "csr"},
      "B": {"format": {"levels": ["dense", "compressed", "compressed"]}}},
      "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})").stage2_dump;
  CHECK(!contains(csr, "list the entries"));
  CHECK(contains(csr, "    A_pos1[e_row + 1] += 1\n  # prefix sum: counts become positions\n"));
  CHECK(contains(csr, "  var pA1: int64 = int64(A_pos1[0])\n"));
  CHECK(contains(csr, "    A_crd1[pA1] = int32(j)\n    A_vals[pA1] = acc\n    pA1 += 1\n"));
  // In parallel into csr: each entry of B one entry of A, in order, so each lies at a position
  // computed from the fused position alone (no cursor); the rows are counted atomically.
  const std::string csr_parallel = R"({"tensors": {"A": {"format": "csr"},
      "B": {"format": {"levels": ["dense", "compressed", "compressed"]}}},
      "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "parallel", "var": "e", "schedule": "static"}]})";
  std::string parallel = compile("A(i,j) = B(i,j,k) * c(k)", csr_parallel).stage2_dump;
  CHECK(!contains(parallel, "list the entries"));
  CHECK(!contains(parallel, "sort"));
  CHECK(contains(parallel, "  # its entries come in A's storage order, once each: appended in place, counted atomically "
                           "(threads may share a row)\n  var e_row: int64 = 0\n"
                           "  for e at pB1 in [int64(B_pos1[0]), int64(B_pos1[dim_i])) parallel(static) private e_row:\n"));
  CHECK(contains(parallel, "    atomic A_pos1[e_row + 1] += 1\n  # prefix sum: counts become positions\n"));
  CHECK(contains(parallel, "  # its entries come in A's storage order, once each: appended in place, each at its own position "
                           "(threads write apart)\n"));
  CHECK(contains(parallel, "    let pA1: int64 = int64(A_pos1[0]) + (pB1 - int64(B_pos1[0]))\n"));
  CHECK(contains(parallel, "    A_crd1[pA1] = int32(j)\n    A_vals[pA1] = acc\n"));
  CHECK(!contains(parallel, "var pA1"));
  CHECK(!contains(parallel, "pA1 += 1"));
  // ... under any schedule (no entry depends on the thread that writes it).
  std::string dynamic_schedule = csr_parallel;
  dynamic_schedule.replace(dynamic_schedule.find("\"static\""), 8, "\"dynamic\"");
  std::string dynamic = compile("A(i,j) = B(i,j,k) * c(k)", dynamic_schedule).stage2_dump;
  CHECK(contains(dynamic, "parallel(dynamic) private e_row:\n"));
  CHECK(contains(dynamic, "    let pA1: int64 = int64(A_pos1[0]) + (pB1 - int64(B_pos1[0]))\n"));
  CHECK(!contains(dynamic, "list the entries"));
  // Into dcsr a row's position is the number of non-empty rows before it, which no entry knows
  // alone: a parallel fused loop keeps the list, each thread its own.
  CHECK(contains(compile(copy, R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "dcsr"}}, "schedule": [
                          {"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "parallel", "var": "e", "schedule": "static"}]})").stage2_dump,
                 "which closes no row of C"));
  // A sum fused (SpMM's j) repeats an entry: listed, repeats summed.
  CHECK(contains(compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}, "C": {"format": "csr"}},
                          "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e"}]})").stage2_dump,
                 "which closes no row of C"));
}

TEST_CASE("stage I fuse on cuda: each thread keeps its own row cursor; rows spanning threads add atomically") {
  const char* spmv = R"({"target": "cuda", "tensors": {"A": {"format": "csr"}, "y": {"format": "dense"}}, "schedule": [
      {"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "split", "var": "e", "factor": 128},
      {"op": "bind", "var": "e0", "to": "blockIdx.x", "reduction": "atomic"}, {"op": "bind", "var": "e1", "to": "threadIdx.x", "reduction": "atomic"}]})";
  std::string source = compile(kSpmv, spmv).files[1].text;
  CHECK(contains(source, "  // fuse i, j: one loop over the entries of A\n  int64_t e_row = 0;\n"));
  CHECK(contains(source, "      atomicAdd(&y_vals[e_row], A_vals[pA1] * x_vals[j]);\n"));
  CHECK(contains(error_of(kSpmv, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}, "y": {"format": "dense"}}, "schedule": [
                          {"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "bind", "var": "e", "to": "blockIdx.x"}]})"),
                 "/schedule/1: error: bind: threads would race on y: loop e iterates the reduction index j"));
  CHECK(contains(error_of(kSpmv, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}, "y": {"format": "dense"}}, "schedule": [
                          {"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "bind", "var": "e", "to": "warp", "reduction": "shuffle"}]})"),
                 "/schedule/1: error: bind: loop e adds into y directly, but a shuffle reduction combines sums kept in scalars"));
  // SDDMM: each entry its own output entry, no reduction; a tile of A at a fused row is refused.
  const char* sddmm = R"({"target": "cuda", "tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}}, "schedule": [
      {"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "bind", "var": "e", "to": "blockIdx.x"})";
  CHECK(contains(compile(kSddmm, std::string(sddmm) + "]}").stage2_dump, "Y_vals[pX1] = X_vals[pX1] * acc"));
  CHECK(contains(error_of(kSddmm, std::string(sddmm) + R"(, {"op": "cache", "tensor": "A", "at": "e"}]})"),
                 "/schedule/2: error: cache: A is read at i, the row that fused loop e finds for each entry of X; caching it "
                 "there is not supported"));
  // A vector output is listed on cuda (one thread would own its workspace): an atomic cursor.
  CHECK(contains(compile(kSpmv, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}, "y": {"format": "sv"}}, "schedule": [
                          {"op": "fuse", "vars": ["i", "j"], "into": "e"}, {"op": "bind", "var": "e", "to": "blockIdx.x", "reduction": "atomic"}]})").stage2_dump,
                 "atomic y_listed += 1"));
}

TEST_CASE("stage II fuse of dense loops") {
  std::string s2 = compile(kSpmm, R"({"schedule": [{"op": "reorder", "order": ["i", "k", "j"]},
      {"op": "fuse", "vars": ["i", "k"], "into": "ik"}, {"op": "parallel", "var": "ik"}]})").stage2_dump;
  CHECK(contains(s2, "  for ik in [0, dim_i * dim_k) parallel(static):\n"
                     "    let i: int64 = ik / dim_k\n"
                     "    let k: int64 = ik % dim_k\n"));
  // Fusing a summed loop makes the fused loop sum too.
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "ij"}, {"op": "parallel", "var": "ij"}]})"),
                 "/schedule/1: error: parallel: cannot parallelize ij: it iterates the reduction index j"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "fuse", "vars": ["i", "k"], "into": "ik"}]})"),
                 "/schedule/0: error: fuse: loop k is not directly inside loop i (fuse a loop with the loop just inside it)"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "split", "var": "i", "factor": 4}, {"op": "fuse", "vars": ["i0", "i1"], "into": "ii"}]})"),
                 "/schedule/1: error: fuse: the extent of loop i1 depends on loop i0, so they cannot be fused"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "parallel", "var": "i"}, {"op": "fuse", "vars": ["i", "j"], "into": "ij"}]})"),
                 "/schedule/1: error: fuse: fuse i and j before making them parallel, vectorized, unrolled or bound"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "k"}]})"),
                 "/schedule/0: error: fuse: the name k is already in use; choose another"));
  CHECK(contains(error_of(kSpmm, R"({"target": "cuda", "schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "ij"}]})"),
                 "/schedule/0: error: fuse: fusing loops is supported on the cpu target only for now"));
}

TEST_CASE("config errors of fuse") {
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "fuse", "vars": ["i"], "into": "e"}]})"),
                 "/schedule/0/vars: error: fuse needs \"vars\": two loop names [outer, inner]"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "fuse", "vars": ["i", "i"], "into": "e"}]})"),
                 "/schedule/0/vars: error: fuse needs two different loops"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "fuse", "vars": ["i", "j"]}]})"),
                 "/schedule/0: error: missing \"into\" (the fused loop's name)"));
  CHECK(contains(error_of(kSpmm, R"({"schedule": [{"op": "fuse", "vars": ["i", "j"], "into": "e f"}]})"),
                 "/schedule/0/into: error: \"e f\" is not a valid loop variable name"));
}

TEST_CASE("parallel: a loop that visits every coordinate while appending to a sparse output stays sequential") {
  // i co-iterates ragged A (every row) and a dense-variable B level, and y (sv) appends one entry
  // per i under its one parent position: parallel iterations would race on that cursor (this
  // was accepted once, and the entries came out of order).
  CHECK(contains(error_of("y(i) = (A(i,j) + B(i,j)) * x(j)", R"({"tensors": {"y": {"format": "sv"}, "A": {"format": "ragged"},
      "B": {"format": {"levels": ["dense-variable", "compressed"]}}}, "schedule": [{"op": "parallel", "var": "i"}]})"),
                 "c.json: /schedule/0: error: parallel: cannot parallelize i: it appends the entries of y under one parent position"));
  // ... and so does the same loop in a sum of two summed parts, one loop nest into y.
  CHECK(contains(error_of("y(i) = A(i,j) * x(j) + B(i,k) * z(k)", R"({"tensors": {"y": {"format": "sv"}, "A": {"format": "ragged"},
      "B": {"format": {"levels": ["dense-variable", "compressed"]}}, "z": {"format": "sv"}}, "schedule": [{"op": "parallel", "var": "i"}]})"),
                 "cannot parallelize i: it appends the entries of y under one parent position"));
}
