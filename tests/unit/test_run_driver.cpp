// codegen/run_driver: the kernel as `spgen run`'s driver builds it, with the pack algorithm linked
// from one shared object instead of compiled with every kernel. (The e2e and cli tests build and
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
