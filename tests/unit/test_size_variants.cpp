// passes/size_variants: kernels for listed sizes of one index variable, an entry point that
// chooses among them, `auto`'s choice of them, and the config's errors. (That each kernel computes
// what the reference does: tests/e2e, which runs `auto` kernels at every listed size too.)
#include <doctest/doctest.h>

#include "compile_helpers.h"

using namespace spgen_test;

namespace {

const char* const kSpmmCsr = R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})";

// The text of the function `name` in `source`, from its signature to its closing brace.
std::string function_text(const std::string& source, const std::string& name) {
  size_t start = source.find(" " + name + "(\n");
  if (start == std::string::npos) return "";
  start = source.rfind('\n', start) + 1;  // the line's start: its linkage and return type
  size_t end = source.find("\n}\n", start);
  return source.substr(start, end - start);
}

}  // namespace

TEST_CASE("size variants: auto's SpMM gets a kernel per feature width, each with the width as a constant") {
  spgen::Compilation c = compile(kSpmm, kSpmmCsr);
  REQUIRE(c.size_variants);
  CHECK(c.size_variants->var == "k");
  CHECK(c.size_variants->sizes == std::vector<int64_t>{16, 32, 64, 128});
  const std::string& source = c.files[1].text;
  // The entry point chooses; the ABI is the generic kernel's (no status, no size check).
  const std::string entry = function_text(source, "t");
  CAPTURE(entry);
  CHECK(contains(entry, "  if (dim_k == 16) {\n    t_k16(\n"));
  CHECK(contains(entry, "  } else if (dim_k == 128) {\n    t_k128(\n"));
  CHECK(contains(entry, "  } else {\n    t_generic(\n"));
  CHECK(contains(source, "extern \"C\" void t(\n"));
  CHECK(!contains(entry, "SPGEN_ERR_DIM"));
  // Each variant has its width folded in: k = 16 narrows the tile to 16; 64 runs two tiles of 32.
  const std::string k16 = function_text(source, "t_k16"), k64 = function_text(source, "t_k64");
  CHECK(contains(k16, "static void t_k16("));
  CHECK(contains(k16, "spgen_vf32 acc_tile[16 / SPGEN_LANES_F32]"));
  CHECK(contains(k16, "const int64_t pB1 = j * 16 + k;"));
  CHECK(contains(k64, "for (int64_t k0 = 0; k0 < 2; k0++)"));
  CHECK(!contains(k64, "k_rest"));  // whole tiles only
  // The generic one still reads dim_k, and has the remainder loop.
  const std::string generic = function_text(source, "t_generic");
  CHECK(contains(generic, "dim_k / 32"));
  CHECK(contains(generic, "k0 < k_groups"));
  CHECK(contains(c.files[0].text, "//   k: a kernel for each of 16, 32, 64 and 128 (constant trip counts), chosen on entry by dim_k;"));
  CHECK(contains(c.stage2_dump, "// the kernel for k = 64\n"));
  CHECK(contains(c.stage2_dump, "// entry point\n"));
}

TEST_CASE("size variants: auto's SDDMM specializes its dot product; SpMV, fixed sizes and {} get none") {
  spgen::Compilation sddmm = compile(kSddmm, R"({"tensors": {"X": {"format": "csr"}}, "schedule": "auto"})");
  REQUIRE(sddmm.size_variants);
  CHECK(sddmm.size_variants->var == "k");
  CHECK(contains(function_text(sddmm.files[1].text, "t_k32"), "for (int64_t k_group = 0; k_group < 2; k_group++)"));
  // Nothing to tile or sum in lanes over a dense index.
  CHECK(!compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})").size_variants);
  // A fixed size leaves nothing to choose; "specialize": {} turns auto's choice off.
  CHECK(!compile(kSpmm, R"({"sizes": {"k": 32}, "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})").size_variants);
  spgen::Compilation off = compile(kSpmm, R"({"specialize": {}, "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})");
  CHECK(!off.size_variants);
  CHECK(!contains(off.files[1].text, "t_generic"));
  // Nor on cuda, where auto binds loops instead.
  CHECK(!compile(kSpmm, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})").size_variants);
}

TEST_CASE("size variants: \"specialize\" with an explicit schedule, sums of parts, and the header") {
  spgen::Compilation c = compile(kSpmm, R"({"specialize": {"k": [64, 8]}, "tensors": {"A": {"format": "csr"}},
      "schedule": [{"op": "parallel", "var": "i", "schedule": "static"}]})");
  REQUIRE(c.size_variants);
  CHECK(c.size_variants->sizes == std::vector<int64_t>{8, 64});  // ascending
  CHECK(contains(c.files[0].text, "//   k: a kernel for each of 8 and 64 (constant trip counts), chosen on entry by dim_k;"));
  CHECK(contains(c.files[0].text, "any other size runs the generic kernel (\"specialize\")"));
  CHECK(contains(function_text(c.files[1].text, "t_k8"), "for (int64_t k = 0; k < 8; k++)"));
  // A sum of parts (a bias): each variant has its own parts, named after it.
  spgen::Compilation bias = compile("C(i,k) = A(i,j) * B(j,k) + D(i,k)",
                                    R"({"specialize": {"k": [32]}, "tensors": {"A": {"format": "csr"}}})");
  const std::string& source = bias.files[1].text;
  CHECK(contains(source, "static void t_k32_part1("));
  CHECK(contains(source, "static void t_k32_part2("));
  CHECK(contains(source, "static void t_part1("));
  CHECK(contains(function_text(source, "t_k32"), "t_k32_part2("));
}

TEST_CASE("size variants: a tile wider than a fixed size is narrowed to it, and the header says so") {
  spgen::Compilation c = compile(kSpmm, R"({"sizes": {"k": 16}, "tensors": {"A": {"format": "csr"}},
      "schedule": [{"op": "reorder", "order": ["i", "k", "j"]}, {"op": "tile", "var": "k", "factor": 32, "into": ["k0", "k1"]},
                   {"op": "precompute", "var": "k1"}, {"op": "vectorize", "var": "k1"}]})");
  CAPTURE(c.stage2_dump);
  CHECK(contains(c.files[0].text, "tile(k, 16 -> k0, k1): narrowed to the fixed size of k"));
  CHECK(contains(c.files[1].text, "spgen_vf32 acc_tile[16 / SPGEN_LANES_F32]"));
  CHECK(!contains(c.stage2_dump, "k_rest"));
}

TEST_CASE("size variants: config errors name their path") {
  CHECK(contains(error_of(kSpmm, R"({"specialize": {"q": [4]}})"),
                 "c.json: /specialize/q: error: no index variable q in the spec (its index variables are: i, k, j)"));
  CHECK(contains(error_of(kSpmm, R"({"specialize": {"k": []}})"),
                 "c.json: /specialize/k: error: expected a list of 1 to 8 sizes, found a list of 0"));
  CHECK(contains(error_of(kSpmm, R"({"specialize": {"k": 32}})"),
                 "c.json: /specialize/k: error: expected a list of 1 to 8 sizes, found number"));
  CHECK(contains(error_of(kSpmm, R"({"specialize": {"k": [1,2,3,4,5,6,7,8,9]}})"), "found a list of 9"));
  CHECK(contains(error_of(kSpmm, R"({"specialize": {"k": [32, 0]}})"),
                 "c.json: /specialize/k/1: error: expected a positive integer, found 0"));
  CHECK(contains(error_of(kSpmm, R"({"specialize": {"k": [32, 32]}})"),
                 "c.json: /specialize/k/1: error: size 32 is listed twice"));
  CHECK(contains(error_of(kSpmm, R"({"specialize": {"k": [32], "i": [8]}})"),
                 "c.json: /specialize: error: specializes 2 index variables; give one"));
  CHECK(contains(error_of(kSpmm, R"({"sizes": {"k": 32}, "specialize": {"k": [32]}})"),
                 "c.json: /specialize/k: error: k has a fixed size in \"sizes\""));
  CHECK(contains(error_of(kSpmm, R"({"target": "cuda", "specialize": {"k": [32]}})"),
                 "c.json: /specialize: error: the cuda target does not take \"specialize\" yet"));
  CHECK(contains(error_of("C(i,j) = A(i,k) * B(k,j)", R"({"specialize": {"k": [32]}, "tensors": {"A": {"format": "csr"},
                 "B": {"format": "csr"}, "C": {"format": "csr"}}})"),
                 "c.json: /specialize/k: error: the kernel assembles its output C"));
  // --size wins over the config's "specialize" of the same variable: one kernel.
  spgen::Compilation sized = spgen::compile({"t.spg", kSpmm, "c.json", R"({"specialize": {"k": [16, 32]}})", std::nullopt, {{"k", 32}}});
  CHECK(!sized.size_variants);
}

TEST_CASE("row variants: auto's SpMV needs none, its masked tail serving short and long rows alike") {
  spgen::Compilation c = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})");
  CHECK(c.row_variants.empty());
  CHECK(!c.size_variants);  // a sum in lanes over a row's entries: no size of j helps it
  CHECK(!contains(c.files[1].text, "_rows12"));
  CHECK(contains(c.files[0].text, "vectorize(j, 8 lanes, masked tail)"));
  // "variants": [] is still accepted; SpMM (a register tile) and cuda get none.
  CHECK(compile(kSpmv, R"({"variants": [], "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})").row_variants.empty());
  CHECK(compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})").row_variants.empty());
  CHECK(compile(kSpmv, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})").row_variants.empty());
}

TEST_CASE("row variants: explicit \"variants\", largest threshold first, and their errors") {
  spgen::Compilation c = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": [],
      "variants": [{"min_entries_per_row": 8, "schedule": [{"op": "vectorize", "var": "j", "lanes": 16}]},
                   {"min_entries_per_row": 64, "schedule": [{"op": "parallel", "var": "i", "schedule": "static"}]}]})");
  const std::string entry = function_text(c.files[1].text, "t");
  CHECK(contains(entry, "  if (64 * dim_i <= (int64_t)A_pos1[dim_i]) {\n    t_rows64(\n"));
  CHECK(contains(entry, "  } else if (8 * dim_i <= (int64_t)A_pos1[dim_i]) {\n    t_rows8(\n"));
  CHECK(contains(error_of(kSpmv, R"({"variants": {}})"), "c.json: /variants: error: expected a list of at most 4 variants, found object"));
  CHECK(contains(error_of(kSpmv, R"({"variants": [{"schedule": []}]})"), "c.json: /variants/0: error: missing \"min_entries_per_row\""));
  CHECK(contains(error_of(kSpmv, R"({"variants": [{"min_entries_per_row": 4}]})"), "c.json: /variants/0: error: missing \"schedule\""));
  CHECK(contains(error_of(kSpmv, R"({"variants": [{"min_entries_per_row": 4, "schedule": [], "x": 1}]})"),
                 "c.json: /variants/0/x: error: unknown key \"x\""));
  CHECK(contains(error_of(kSpmv, R"({"variants": [{"min_entries_per_row": 4, "schedule": []}, {"min_entries_per_row": 4, "schedule": []}]})"),
                 "c.json: /variants/1/min_entries_per_row: error: another variant has the same threshold"));
  CHECK(contains(error_of(kSpmv, R"({"variants": [{"min_entries_per_row": 4, "schedule": [{"op": "vectorize"}]}]})"),
                 "c.json: /variants/0/schedule/0: error: "));
  CHECK(contains(error_of(kSpmv, R"({"target": "cuda", "variants": [{"min_entries_per_row": 4, "schedule": []}]})"),
                 "c.json: /variants: error: the cuda target does not take \"variants\" yet"));
  // An output the kernel assembles (C csr = A + B): refused, with what to do instead.
  CHECK(contains(error_of("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
                 "C": {"format": "csr"}}, "variants": [{"min_entries_per_row": 4, "schedule": []}]})"),
                 "c.json: /variants: error: the kernel assembles its output C, which variants by row length do not do yet "
                 "(drop \"variants\", or give C a dense format)"));
  // No rows to measure: a dense matrix times a vector.
  CHECK(contains(error_of(kSpmv, R"({"variants": [{"min_entries_per_row": 4, "schedule": []}]})"),
                 "c.json: /variants: error: the kernel has no rows to measure"));
  // An op of a variant that names a loop the kernel lacks is the variant's error, at its path.
  CHECK(contains(error_of(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "variants": [{"min_entries_per_row": 4,
                 "schedule": [{"op": "vectorize", "var": "q"}]}]})"), "c.json: /variants/0/schedule/0: error: "));
}
