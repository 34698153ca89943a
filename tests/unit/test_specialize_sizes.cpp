// passes/specialize_sizes: fixed sizes become constants, folded through declarations, and loops
// left with no iteration disappear; observed on hand-built IR and through compile().
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "ir/loop_ir_printer.h"
#include "passes/specialize_sizes.h"

using namespace spgen_test;
using namespace spgen::loops;

namespace {

// for g in [0, dim_k / 16): y[g] = dim_i;  then the rest: for r in [groups * 16, dim_k): y[r] = 1.
LoweredFunc tiled_kernel() {
  LoweredFunc func;
  func.name = "f";
  for (const char* var : {"i", "k"}) {
    Param p;
    p.name = std::string("dim_") + var;
    p.kind = ParamKind::Dim;
    p.type = ScalarType::Int64;
    p.index_var = var;
    func.params.push_back(p);
  }
  Stmt groups = std::make_shared<Declare>("groups", ScalarType::Int64, binary(BinOp::Div, var("dim_k"), int64(16)), false);
  Stmt whole = std::make_shared<For>("g", "g", int64(0), var("groups"), std::make_shared<Store>("y", var("g"), var("dim_i"), false));
  Stmt rest = std::make_shared<For>("r", "r", mul(var("groups"), int64(16)), var("dim_k"),
                                    std::make_shared<Store>("y", var("r"), int64(1), false));
  func.body = block({groups, whole, rest});
  return func;
}

}  // namespace

TEST_CASE("specialize_sizes: a size that the tile divides leaves constant trip counts and no remainder loop") {
  LoweredFunc func = tiled_kernel();
  spgen::specialize_sizes(func, {{"k", 32}});
  std::string dump = dump_stage2(func);
  CAPTURE(dump);
  CHECK(contains(dump, "# specialized for dim_k = 32 (checked on entry)"));
  CHECK(contains(dump, "let groups: int64 = 2"));
  CHECK(contains(dump, "for g in [0, 2):"));
  CHECK(contains(dump, "y[g] = dim_i"));  // i is not fixed
  CHECK(!contains(dump, "for r "));       // [32, 32): gone
  CHECK(!contains(dump.substr(dump.find("(checked on entry)")), "dim_k"));  // the body reads none
  REQUIRE(func.fixed_sizes.size() == 1);
  CHECK(func.fixed_sizes[0] == std::pair<std::string, int64_t>{"dim_k", 32});
  // Once more changes nothing.
  spgen::specialize_sizes(func, {{"k", 32}});
  CHECK(dump_stage2(func) == dump);
}

TEST_CASE("specialize_sizes: a size the tile does not divide keeps a constant remainder; no size, no change") {
  LoweredFunc func = tiled_kernel();
  spgen::specialize_sizes(func, {{"k", 20}});
  std::string dump = dump_stage2(func);
  CHECK(contains(dump, "for g in [0, 1):"));
  CHECK(contains(dump, "for r in [16, 20):"));
  LoweredFunc plain = tiled_kernel();
  const std::string before = dump_stage2(plain);
  spgen::specialize_sizes(plain, {{"j", 8}});  // no parameter sizes j
  CHECK(dump_stage2(plain) == before);
  CHECK(plain.fixed_sizes.empty());
}

TEST_CASE("sizes through compile(): SpMM's register tile over a fixed k, and the header's ABI returns a status") {
  spgen::Compilation c = compile(kSpmm, R"({"sizes": {"k": 64}, "tensors": {"A": {"format": "csr"}},
      "schedule": [{"op": "reorder", "order": ["i", "k", "j"]}, {"op": "tile", "var": "k", "factor": 32, "into": ["k0", "k1"]},
                   {"op": "precompute", "var": "k1"}, {"op": "vectorize", "var": "k1"}]})");
  CAPTURE(c.stage2_dump);
  CHECK(contains(c.stage2_dump, "for k0 in [0, 2):"));
  CHECK(contains(c.stage2_dump, "let pB1: int64 = j * 64 + k"));
  CHECK(!contains(c.stage2_dump, "k_rest"));  // whole tiles only
  const std::string& header = c.files[0].text;
  CHECK(contains(header, "// ABI: int t("));
  CHECK(contains(header, "size of k fixed at 64 (\"sizes\"): constant trip counts, dim_k checked on entry"));
  CHECK(contains(header, "returns SPGEN_ERR_DIM (6), touching nothing, when dim_k is not 64; else SPGEN_OK (0)."));
  CHECK(contains(c.files[1].text, "  if (dim_k != 64) return SPGEN_ERR_DIM;\n"));
  // Without sizes nothing of this appears.
  spgen::Compilation plain = compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}})");
  CHECK(contains(plain.files[0].text, "// ABI: void t("));
  CHECK(!contains(plain.files[1].text, "if (dim_k != "));
}

TEST_CASE("sizes on cuda: the launcher refuses another size before launching anything") {
  spgen::Compilation c = compile(kSddmm, R"({"target": "cuda", "sizes": {"k": 32}, "tensors": {"X": {"format": "csr"}},
      "schedule": [{"op": "bind", "var": "i", "to": "blockIdx.x"}, {"op": "bind", "var": "k", "to": "warp", "reduction": "shuffle"}]})");
  const std::string& source = c.files[1].text;
  CAPTURE(source);
  const size_t check = source.find("  if (dim_k != 32) return (int)cudaErrorInvalidValue;\n");
  REQUIRE(check != std::string::npos);
  CHECK(check < source.find("<<<"));
  CHECK(contains(c.files[0].text, "returns cudaErrorInvalidValue, touching nothing, when dim_k is not 32."));
}

TEST_CASE("config errors of sizes name their path") {
  CHECK(contains(error_of(kSpmm, R"({"sizes": {"q": 4}})"),
                 "c.json: /sizes/q: error: no index variable q in the spec (its index variables are: i, k, j)"));
  CHECK(contains(error_of(kSpmm, R"({"sizes": {"k": -4}})"), "c.json: /sizes/k: error: expected a positive integer, found -4"));
  CHECK(contains(error_of(kSpmm, R"({"sizes": {"k": 4.5}})"), "c.json: /sizes/k: error: expected an integer, found number"));
  CHECK(contains(error_of(kSpmm, R"({"sizes": 4})"), "c.json: /sizes: error: expected an object, found number"));
}
