// codegen/run_driver: the kernel as `spgen run`'s driver builds it, with the pack algorithm linked
// from one shared object instead of compiled with every kernel, and the driver's glue. (The e2e and cli tests build and
// run such drivers; these check what makes the object shareable and the kernel's copy replaced.)
#include <doctest/doctest.h>

#include "codegen/pack_routines.h"
#include "codegen/run_driver.h"
#include "compile_helpers.h"

using namespace spgen_test;

namespace {

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("linked pack algorithm: the kernel's copy is replaced; the algorithm's text is the same for every kernel of the same types") {
  spgen::Compilation spmv = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}})");
  spgen::Compilation sddmm = compile(kSddmm, R"({"tensors": {"X": {"format": "coo"}}})");
  auto a = spgen::link_pack_algorithm(spmv.files[1], spmv.func.name, spmv.program);
  auto b = spgen::link_pack_algorithm(sddmm.files[1], sddmm.func.name, sddmm.program);
  REQUIRE(a);
  REQUIRE(b);
  // The kernel keeps its tables and wrappers, and reaches the algorithm through the header.
  CHECK(a->kernel.name == spmv.func.name + "_for_driver.cpp");
  CHECK(count(spmv.files[1].text, "int pack_sizes(const Format& f") == 1);
  CHECK(count(a->kernel.text, "int pack_sizes(const Format& f") == 0);
  CHECK(contains(a->kernel.text, "#include \"spgen_run_pack.hpp\""));
  CHECK(contains(a->kernel.text, "namespace " + spmv.func.name + "_pack {\nusing namespace spgen_run_pack;\n}"));
  CHECK(contains(a->kernel.text, "const Format format_A = "));
  CHECK(contains(a->kernel.text, "extern \"C\" int " + spmv.func.name + "_pack_A("));
  // Everything before the conversion routines (the kernel itself) is untouched.
  const std::string before = a->kernel.text.substr(0, a->kernel.text.find("#include \"spgen_run_pack.hpp\""));
  CHECK(contains(before, "void " + spmv.func.name + "("));
  CHECK(spmv.files[1].text.compare(0, before.size(), before) == 0);
  // The shared files name no kernel: one cached object serves both.
  CHECK(a->header.text == b->header.text);
  CHECK(a->source.text == b->source.text);
  CHECK(!contains(a->header.text + a->source.text, spmv.func.name + "_pack"));
  CHECK(contains(a->source.text, "int pack_sizes(const Format& f"));
  CHECK(contains(a->source.text, "#define SPGEN_OK 0"));
  // Other types, other text.
  spgen::Compilation f64 = compile(kSpmv, R"({"types": {"value": "float64"}, "tensors": {"A": {"format": "csr"}}})");
  auto c = spgen::link_pack_algorithm(f64.files[1], f64.func.name, f64.program);
  REQUIRE(c);
  CHECK(c->source.text != a->source.text);
  CHECK(contains(c->header.text, "using Value = double;"));
}

TEST_CASE("linked pack algorithm: nothing to link for a kernel without conversion routines") {
  spgen::Compilation dense = compile("y(i) = A(i,j) * x(j)", R"({"tensors": {"A": {"format": "dense"}}})");
  CHECK(!contains(dense.files[1].text, "int pack_sizes("));
  CHECK(!spgen::link_pack_algorithm(dense.files[1], dense.func.name, dense.program));
}

TEST_CASE("cpu driver glue: only the plain interface (spgen_run_glue.hpp), the kernel described in tables, C-style conversions") {
  spgen::Compilation bsr = compile(kSpmv, R"({"tensors": {"A": {"format": "bsr", "block": [2, 3]}}})");
  spgen::GeneratedFile glue = spgen::emit_run_driver(bsr.func, bsr.program, spgen::Target::Cpu);
  INFO(glue.text);
  CHECK(glue.name == "run_driver.cpp");
  // No template-heavy runtime header, no standard header: that is what makes it compile fast.
  CHECK(contains(glue.text, "#include \"spgen_run_glue.hpp\""));
  CHECK(!contains(glue.text, "spgen_run_runtime.hpp"));
  CHECK(!contains(glue.text, "#include <"));
  CHECK(!contains(glue.text, "std::"));
  // A blocked matrix: two modes, four levels, with their block sizes.
  CHECK(contains(glue.text, "const int kModes1[] = {0, 1};"));
  CHECK(contains(glue.text, "const int kModeOrder1[] = {0, 1, 0, 1};"));
  CHECK(contains(glue.text, "const int64_t kBlocks1[] = {2, 3, 2, 3};"));
  CHECK(contains(glue.text, "{\"A\", false, 2, kModes1, 4, kLevels1, kModeOrder1, -1, nullptr, kBlocks1}"));
  CHECK(contains(glue.text, "int pack_A(const spgen_run_glue::Entries& e) {"));
  CHECK(contains(glue.text, "kernel.pack_strerror = " + bsr.func.name + "_pack_strerror;"));
  CHECK(contains(glue.text, "return spgen_run_glue::main(argc, argv, kernel);"));
  // The cuda driver keeps the full runtime (device arrays), with the same conversion functions.
  spgen::Compilation cuda = compile(kSpmv, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}}})");
  spgen::GeneratedFile cu = spgen::emit_run_driver(cuda.func, cuda.program, spgen::Target::Cuda);
  CHECK(contains(cu.text, "#include \"spgen_run_runtime.hpp\""));
  CHECK(contains(cu.text, "int pack_A(const spgen_run_glue::Entries& e) {"));
  CHECK(contains(cu.text, "spgen_run::Glue<Index, Value>::use_conversions(hooks, kInfo, kPack, kUnpack, "));
}
