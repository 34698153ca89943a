// passes/split_gpu_kernels: the __global__ functions a cuda function launches, as lowering
// states them (the backend prints them and finds none itself).
#include <doctest/doctest.h>

#include <algorithm>

#include "compile_helpers.h"

using namespace spgen;
using namespace spgen_test;

namespace {

std::vector<std::string> kernel_names(const loops::LoweredFunc& func) {
  std::vector<std::string> names;
  for (const loops::GpuKernel& kernel : func.gpu_kernels) names.push_back(kernel.name);
  return names;
}

bool has_param(const loops::GpuKernel& kernel, const std::string& name) {
  return std::any_of(kernel.params.begin(), kernel.params.end(), [&](const loops::Param& p) { return p.name == name; });
}

}  // namespace

TEST_CASE("split_gpu_kernels: a dense output's zero fill, then the main nest, each with the parameters it reads") {
  Compilation c = compile("y(i) = A(i,j) * x(j)", R"({"target": "cuda", "tensors": {"A": {"format": "csc"}},
      "schedule": [{"op": "bind", "var": "j", "to": "blockIdx.x", "reduction": "atomic"},
                   {"op": "bind", "var": "i", "to": "threadIdx.x"}]})");
  REQUIRE(kernel_names(c.func) == std::vector<std::string>{"t_zero_y", "t_main"});
  const loops::GpuKernel& zero = c.func.gpu_kernels[0];
  const loops::GpuKernel& main = c.func.gpu_kernels[1];
  CHECK(zero.bound.count("grid") == 1);  // the fill spreads over the whole grid
  CHECK(has_param(zero, "y_vals"));
  CHECK(!has_param(zero, "A_vals"));
  CHECK(main.bound.count("blockIdx.x") == 1);
  CHECK(main.bound.count("threadIdx.x") == 1);
  CHECK(has_param(main, "A_vals"));
  CHECK(has_param(main, "x_vals"));
  // The parameters keep the ABI's order.
  std::vector<std::string> abi, used;
  for (const loops::Param& p : c.func.params) abi.push_back(p.name);
  for (const loops::Param& p : main.params) used.push_back(p.name);
  CHECK(std::includes(abi.begin(), abi.end(), used.begin(), used.end(),
                      [&](const std::string& a, const std::string& b) {
                        return std::find(abi.begin(), abi.end(), a) < std::find(abi.begin(), abi.end(), b);
                      }));
  // --emit=stage2 ends with them, in launch order.
  CHECK(contains(c.stage2_dump, "// cuda kernels of t, launched in this order:\n"
                                "//   t_zero_y: every thread of the grid over zero y\n"
                                "//   t_main: blockIdx.x over j, threadIdx.x over i\n"));
  // The cpu target has none.
  const Compilation cpu = compile(kSpmv, R"({"tensors": {"A": {"format": "csr"}}})");
  CHECK(cpu.func.gpu_kernels.empty());
  CHECK(!contains(cpu.stage2_dump, "cuda kernels"));
}

TEST_CASE("split_gpu_kernels: entries listed out of order are counted, listed, then packed by kernels of their own") {
  Compilation c = compile("C(i,j) = A(k,i) * B(k,j)", R"({"target": "cuda", "tensors": {"A": {"format": "csr"},
      "B": {"format": "csr"}, "C": {"format": "dcsr"}}, "schedule": "auto"})");
  const std::vector<loops::GpuKernel>& kernels = c.func.gpu_kernels;
  REQUIRE(kernels.size() >= 3);
  CHECK(kernels[0].listing == loops::Listing::Count);
  CHECK(kernels[1].listing == loops::Listing::List);
  // The counting and listing kernels run the same loops, printed two ways.
  CHECK(kernels[0].body.size() == kernels[1].body.size());
  for (size_t k = 2; k < kernels.size(); ++k) {
    CHECK(kernels[k].packs_list);
    CHECK(kernels[k].list == kernels[0].list);  // one list
    CHECK(kernels[k].ends_list == (k + 1 == kernels.size()));
  }
  CHECK(contains(c.stage2_dump, "//   t_count_entries: blockIdx.x over k0, threadIdx.x over k1 (counts C's entries)\n"
                                "//   t_list_entries: blockIdx.x over k0, threadIdx.x over k1 (lists C's entries)\n"));
  REQUIRE(kernels[0].list);
  CHECK(kernels[0].list->tensor == "C");
  CHECK(!kernels[0].list->keys.empty());
  CHECK(!kernels[0].list->count.empty());
}
