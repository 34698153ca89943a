// passes/lower/abi_params: a kernel's parameters and their prose, from the program and the
// lowering's few decisions passed explicitly.
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "passes/lower/abi_params.h"

using namespace spgen_test;

TEST_CASE("abi params: sizes first, then each tensor's arrays in buffer order, documented") {
  spgen::Compilation c = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}})");
  const std::set<int> no_runs;
  std::vector<spgen::loops::Param> params = spgen::lowering::kernel_params({c.program, false, false, -1, false, no_runs});
  std::vector<std::string> names;
  for (const spgen::loops::Param& p : params) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"dim_i", "dim_j", "y_vals", "A_pos1", "A_crd1", "A_vals", "x_vals"});
  // The same as the lowering's own.
  REQUIRE(params.size() == c.func.params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    CHECK(params[i].doc == c.func.params[i].doc);
    CHECK(params[i].length == c.func.params[i].length);
  }
  CHECK(params[3].doc == "A level 1 (compressed, index j, mode 1): positions; the entries under parent position p are A_pos1[p] .. A_pos1[p+1]-1");
  CHECK(params[3].length == "dim_i + 1");
  CHECK(params[4].length == "A_pos1[dim_i]");
  CHECK(params[4].is_const);
  CHECK(!params[2].is_const);
}

TEST_CASE("abi params: an assembled output's arrays, in the phase that counts a level and in the one that fills") {
  spgen::Compilation c = compile("C(i,j) = A(i,j) + B(i,j)", R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}}})");
  const std::set<int> no_runs;
  auto docs = [&](bool counting) {
    std::string all;
    for (const spgen::loops::Param& p : spgen::lowering::kernel_params({c.program, true, counting, 1, false, no_runs}))
      if (p.tensor == "C") all += p.name + (p.is_const ? " (in)" : " (out)") + ": " + p.doc + "\n";
    return all;
  };
  const std::string counting = docs(true), filling = docs(false);
  CHECK(counting.find("C_pos1 (out): output C level 1 (compressed, index j): positions, written here (entries counted, then summed)") != std::string::npos);
  CHECK(counting.find("C_crd1") == std::string::npos);  // the count writes no coordinates
  CHECK(filling.find("C_pos1 (in)") != std::string::npos);
  CHECK(filling.find("C_crd1 (out): output C level 1 (compressed, index j): coordinates, written here in increasing order under each parent") != std::string::npos);
  CHECK(filling.find("C_vals (out)") != std::string::npos);
}
