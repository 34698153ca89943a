// Tests of sums whose terms sum over different indices (passes/split_sum.cpp, the executor of
// passes/build_executor.cpp and their place in lower.cpp): the parts and their signs, the
// executor's parameters, which ops schedule which part, the header, and every refusal by its
// message. The parts' numbers are checked by the e2e cases (spmv_bias_*, spmm_bias_*,
// spmv_three_*, sddmm_bias_*).
#include <doctest/doctest.h>

#include <string>

#include "compile_helpers.h"

using namespace spgen_test;

namespace {

const char* const kSpmvBias = "y(i) = A(i,j) * x(j) + b(i)";

std::string config_with(const std::string& tensors, const std::string& schedule = "", const std::string& extra = "") {
  return "{\"name\": \"k\", " + extra + "\"tensors\": {" + tensors + "}, \"schedule\": [" + schedule + "]}";
}

}  // namespace

TEST_CASE("split sum: one part per set of summed indices, the first writing, the others adding") {
  spgen::Compilation c = compile(kSpmvBias, config_with(R"("A": {"format": "csr"})"));
  CHECK(contains(c.stage2_dump, "// part1 of 2 of the sum: y(i) = A(i,j) * x(j) (summed over j)\n# stage II: k_part1\n"));
  CHECK(contains(c.stage2_dump, "// part2 of 2 of the sum: y(i) += b(i) (no summed index)\n# stage II: k_part2\n"));
  CHECK(contains(c.stage2_dump, "kernel k_part2(\n    dim_i: int64\n    y_vals: mut float32[]\n    b_vals: float32[]\n):\n"
                                "  for i in [0, dim_i):\n    y_vals[i] += b_vals[i]\n"));
  // The executor takes the whole spec's parameters in its order and passes each part its own.
  CHECK(contains(c.stage2_dump, "// executor\n# stage II: k\nkernel k(\n    dim_i: int64\n    dim_j: int64\n    y_vals: mut float32[]\n"
                                "    A_pos1: int32[]\n    A_crd1: int32[]\n    A_vals: float32[]\n    x_vals: float32[]\n"
                                "    b_vals: float32[]\n):\n"));
  CHECK(contains(c.stage2_dump, "  call k_part1(dim_i, dim_j, y_vals, A_pos1, A_crd1, A_vals, x_vals)\n"));
  CHECK(contains(c.stage2_dump, "  call k_part2(dim_i, y_vals, b_vals)\n"));
  CHECK(contains(c.stage1_dump, "// part2 of 2 of the sum: y(i) += b(i) (no summed index)\n"));
  // One entry point: the parts are static, the header documents the executor.
  const std::string& source = c.files[1].text;
  CHECK(contains(source, "static void k_part1(\n"));
  CHECK(contains(source, "static void k_part2(\n"));
  CHECK(contains(source, "extern \"C\" void k(\n"));
  const std::string& header = c.files[0].text;
  CHECK(contains(header, "//   y(i) = A(i,j) * x(j) + b(i)\n"));
  CHECK(contains(header, "//   y: dense (levels dense i), inferred from the operands (i dense: a term of the sum holds every i)\n"));
  CHECK(contains(header, "// Schedule:\n//   2 loop nests in turn, one per set of summed indices:\n"
                         "//     part1: y(i) = A(i,j) * x(j) (summed over j)\n//     part2: y(i) += b(i) (no summed index)\n"));
  CHECK(contains(header, "// ABI: void k(...)"));
  CHECK(!contains(header, "k_part1"));
}

TEST_CASE("split sum: terms keep their signs and group by their summed indices, in order of their first term") {
  spgen::Compilation c = compile("y(i) = b(i) - A(i,j) * x(j) - 2 * c(i) + B(i,k) * z(k) - (A(i,j) * w(j))",
                                 config_with(R"("A": {"format": "csr"}, "y": {"format": "dense"})"));
  CHECK(contains(c.stage2_dump, "// part1 of 3 of the sum: y(i) = b(i) - 2 * c(i) (no summed index)\n"));
  CHECK(contains(c.stage2_dump, "// part2 of 3 of the sum: y(i) += -(A(i,j) * x(j)) - A(i,j) * w(j) (summed over j)\n"));
  CHECK(contains(c.stage2_dump, "// part3 of 3 of the sum: y(i) += B(i,k) * z(k) (summed over k)\n"));
  CHECK(contains(c.stage2_dump, "  call k_part3(dim_i, dim_k, y_vals, B_vals, z_vals)\n"));
  // `+=` keeps the caller's values in every part; a unary minus over a sum splits too.
  spgen::Compilation acc = compile("y(i) += -(A(i,j) * x(j) - b(i))", config_with(R"("A": {"format": "csr"}, "y": {"format": "dense"})"));
  CHECK(contains(acc.stage2_dump, "// part1 of 2 of the sum: y(i) += -(A(i,j) * x(j)) (summed over j)\n"));
  CHECK(contains(acc.stage2_dump, "// part2 of 2 of the sum: y(i) += b(i) (no summed index)\n"));
  // Terms that sum over the same indices stay one loop nest, as before.
  spgen::Compilation one = compile("y(i) = A(i,j) * x(j) + A(i,j) * w(j)", config_with(R"("A": {"format": "csr"})"));
  CHECK(one.parts.empty());
  CHECK(!contains(one.stage2_dump, "part"));
}

TEST_CASE("split sum: an op schedules every part that has its loops") {
  spgen::Compilation c = compile("Y(i,k) = A(i,j) * X(j,k) + B(i,k)", config_with(R"("A": {"format": "csr"}, "Y": {"format": "dense"})",
      R"({"op": "reorder", "order": ["i", "k", "j"]}, {"op": "parallel", "var": "i"}, {"op": "unroll", "var": "j", "factor": 2})"));
  // The first part has every loop; the second (i, k) gets the parallel rows only.
  CHECK(contains(c.stage2_dump, "# stage II: k_part1\n"));
  const size_t at = c.stage2_dump.find("# stage II: k_part2");
  const std::string part2 = c.stage2_dump.substr(at, c.stage2_dump.find("// executor") - at);
  CHECK(contains(part2, "  for i in [0, dim_i) parallel(static):\n    for k in [0, dim_k):\n"));
  CHECK(!contains(part2, "j"));
  CHECK(contains(c.files[0].text, "//   reorder(i, k, j)\n//   parallel(i"));
  // A reorder of index variables orders a part's own, so a stage I fuse after it applies in every part.
  spgen::Compilation fused = compile("Y(i,j) = X(i,j) * A(i,k) * B(j,k) - X(i,j) * C(i,j)",
      config_with(R"("X": {"format": "csr"}, "Y": {"format": "csr"})",
                  R"({"op": "reorder", "order": ["i", "j", "k"]}, {"op": "fuse", "vars": ["i", "j"], "into": "e"})"));
  CHECK(contains(fused.stage2_dump.substr(fused.stage2_dump.find("# stage II: k_part2")),
                 "  # fuse i, j: one loop over the entries of X\n"));
  CHECK(contains(fused.files[0].text, "//   reorder(i, j, k)\n//   fuse(i, j -> e)\n"));
  // An op that no part has the loops of is still an error.
  CHECK(contains(error_of(kSpmvBias, config_with(R"("A": {"format": "csr"})", R"({"op": "parallel", "var": "q"})")),
                 "c.json: /schedule/0: error: parallel: no part of the sum has the loops it names (the parts' loops: "
                 "A(i,j) * x(j): i, j; b(i): i)"));
  // An error inside one part says which.
  CHECK(contains(error_of(kSpmvBias, config_with(R"("A": {"format": "csr"})", R"({"op": "parallel", "var": "i", "reduction": "atomic"})")),
                 "t.spg: note: in part1 of 2 of the sum: y(i) = A(i,j) * x(j) (summed over j)"));
}

TEST_CASE("split sum: an op with \"part\" schedules that part only, replacing the op for every part there") {
  spgen::Compilation c = compile("Y(i,k) = A(i,j) * X(j,k) + B(i,k)", config_with(R"("A": {"format": "csr"}, "Y": {"format": "dense"})",
      R"({"op": "parallel", "var": "i"}, {"op": "parallel", "var": "i", "part": "part1", "balance": "nonzeros", "parts": 3},
         {"op": "vectorize", "var": "k", "part": "part2"})"));
  const size_t at = c.stage2_dump.find("# stage II: k_part2");
  const std::string part1 = c.stage2_dump.substr(0, at), part2 = c.stage2_dump.substr(at, c.stage2_dump.find("// executor") - at);
  CHECK(contains(part1, "for i_part in [0, 3) parallel(static):"));
  CHECK(!contains(part1, "vectorized"));
  CHECK(contains(part2, "  for i in [0, dim_i) parallel(static):\n    for k in [0, dim_k) vectorized:\n"));
  // A part that does not exist, and an op for a part that lacks its loops.
  CHECK(contains(error_of(kSpmvBias, config_with(R"("A": {"format": "csr"})", R"({"op": "parallel", "var": "i", "part": "bias"})")),
                 "c.json: /schedule/0/part: error: parallel: the sum has no part \"bias\" (its parts: part1 (A(i,j) * x(j)), "
                 "part2 (b(i)))"));
  CHECK(contains(error_of(kSpmvBias, config_with(R"("A": {"format": "csr"})", R"({"op": "unroll", "var": "j", "factor": 2, "part": "part2"})")),
                 "c.json: /schedule/0: error: unroll: "));
  // Without a split sum, "part" still needs a decomposition.
  CHECK(contains(error_of("y(i) = A(i,j) * x(j)", config_with(R"("A": {"format": "csr"})", R"({"op": "parallel", "var": "i", "part": "part1"})")),
                 "\"part\" names a part of a decomposition, but no decompose op comes first"));
}

TEST_CASE("split sum: on cuda, the executor enqueues the parts on the caller's stream") {
  spgen::Compilation c = compile(kSpmvBias, config_with(R"("A": {"format": "csr"}, "y": {"format": "dense"})",
      R"({"op": "bind", "var": "i", "to": "blockIdx.x"}, {"op": "bind", "var": "j", "to": "warp", "reduction": "shuffle"})",
      R"("target": "cuda", )"));
  const std::string& source = c.files[1].text;
  CHECK(contains(source, "static int k_part1(\n"));
  CHECK(contains(source, "static int k_part2(\n"));
  CHECK(contains(source, "extern \"C\" int k(\n"));
  CHECK(contains(source, "  if (const int status = k_part2(\n          dim_i,\n          y_vals,\n          b_vals,\n          stream))\n"));
  CHECK(contains(c.files[0].text, "    cudaStream_t stream);"));
}

TEST_CASE("split sum: a sparse output that shares an input's structure in every part") {
  spgen::Compilation c = compile("Y(i,j) = X(i,j) * A(i,k) * B(j,k) - X(i,j) * C(i,j)",
                                 config_with(R"("X": {"format": "csr"}, "Y": {"format": "csr"})"));
  CHECK(contains(c.files[0].text, "//   Y: csr (levels dense i, compressed j), sharing the structure of X\n"));
  CHECK(contains(c.stage2_dump, "  call k_part2(dim_i, dim_j, Y_vals, X_pos1, X_crd1, X_vals, C_vals)\n"));
}

TEST_CASE("split sum: an output that several loop nests cannot write is one loop nest") {
  // Assembled: one nest (passes/place_sum_parts.cpp, tests in test_place_sum_parts.cpp).
  CHECK(compile(kSpmvBias, config_with(R"("A": {"format": "csr"}, "y": {"format": "sv"})")).parts.empty());
  // Shared in one part only: assembled too.
  spgen::Compilation shared_once =
      compile("Y(i,j) = X(i,j) * A(i,k) * B(j,k) + C(i,j)", config_with(R"("X": {"format": "csr"}, "Y": {"format": "csr"})"));
  CHECK(shared_once.parts.empty());
  CHECK(shared_once.assemble.size() == 1);
  // An inferred format, from the whole spec: sv where every term is sparse in i (A csr's rows
  // selected by x sv, and b sv), assembled in one nest.
  spgen::Compilation inferred =
      compile(kSpmvBias, config_with(R"("A": {"format": "dcsr"}, "x": {"format": "sv"}, "b": {"format": "sv"})"));
  CHECK(inferred.parts.empty());
  CHECK(contains(inferred.files[0].text, "//   y: sv (levels compressed i), inferred from the operands (i sparse: stored sparsely by A and "
                                         "b)\n"));
  // A csc sums its columns over every j, which fills nearly every i: y is dense, a nest per part.
  spgen::Compilation unioned = compile(kSpmvBias, config_with(R"("A": {"format": "csc"}, "b": {"format": "sv"})"));
  CHECK(!unioned.parts.empty());
  CHECK(contains(unioned.files[0].text, "//   y: dense (levels dense i), inferred from the operands (i dense: the sum over j unions A's "
                                        "fibres of every j, which fills nearly every i)\n"));
  // A decomposition stays a sum of one loop nest per part of A.
  CHECK(contains(error_of(kSpmvBias, config_with(R"("A": {"format": "csr"}, "y": {"format": "dense"})",
                                                 R"({"op": "decompose", "tensor": "A", "format": "ell+coo", "width": 4})")),
                 "c.json: /schedule/0: error: decompose: the kernel must be a sum of the parts' kernels"));
}
