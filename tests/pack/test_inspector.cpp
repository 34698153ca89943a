// The inspector and executor of decomposed kernels (the `decompose` op), tested by compiling them:
// seven SpMM kernels whose A is split into hyb (2 partitions, buckets 1 2 4), ell+coo (width 3),
// bsr+csr (2x3 blocks), bsr alone (2x3, every occupied block) and sell (slices of 4, sorted in windows of 8) parts, and the first two
// with interleaved ELL slots, are generated, compiled warning-free with AddressSanitizer
// together with tests/pack/inspector_fixture.cpp, and run. The fixture checks, for inputs with
// empty rows, a single dense row and rows longer than the widest bucket, that the parts hold
// every entry once in the shape each part promises, that the executor matches a plain loop, and
// that every bad input gets its error code with nothing written.
#include <doctest/doctest.h>

#include <string>

#include "process.h"

using namespace spgen_test;

namespace {

struct Generated {
  std::string name, types, decompose;
};

}  // namespace

TEST_CASE("the inspector splits CSR into each decomposition's parts, and the executor runs them") {
  TempDir dir;
  write_text(dir.file("spmm.spg"), "C(i,k) = A(i,j) * B(j,k)\n");
  const Generated kernels[] = {
      {"insp_hyb", R"({"index": "int32", "value": "float32"})",
       R"({"op": "decompose", "tensor": "A", "format": "hyb", "partitions": 2, "buckets": [1, 2, 4]},
          {"op": "parallel", "var": "i", "part": "p0_b4", "reduction": "atomic"})"},
      {"insp_ell", R"({"index": "int64", "value": "float64"})",
       R"({"op": "decompose", "tensor": "A", "format": "ell+coo", "width": 3},
          {"op": "parallel", "var": "i", "part": "ell"})"},
      {"insp_hyb_il", R"({"index": "int32", "value": "float32"})",
       R"({"op": "decompose", "tensor": "A", "format": "hyb", "partitions": 2, "buckets": [1, 2, 4], "interleave": 4},
          {"op": "tile", "var": "i", "factor": 4, "into": ["i_o", "i_i"]},
          {"op": "parallel", "var": "i_o", "part": "p0_b4", "reduction": "atomic"})"},
      {"insp_ell_il", R"({"index": "int64", "value": "float64"})",
       R"({"op": "decompose", "tensor": "A", "format": "ell+coo", "width": 3, "interleave": 4},
          {"op": "parallel", "var": "i", "part": "ell"})"},
      {"insp_sell", R"({"index": "int32", "value": "float32"})",
       R"({"op": "decompose", "tensor": "A", "format": "sell", "interleave": 4, "sigma": 8},
          {"op": "tile", "var": "i", "factor": 4, "into": ["i_o", "i_i"]},
          {"op": "parallel", "var": "i_o"})"},
      {"insp_bsr", R"({"index": "int32", "value": "float64"})",
       R"({"op": "decompose", "tensor": "A", "format": "bsr+csr", "block": [2, 3], "fill": 0.5},
          {"op": "parallel", "var": "i", "part": "csr"})"},
      {"insp_bsr_only", R"({"index": "int64", "value": "float32"})",
       R"({"op": "decompose", "tensor": "A", "format": "bsr", "block": [2, 3]},
          {"op": "parallel", "var": "i_blk"})"},
  };
  std::vector<std::string> build = {"c++", "-std=c++17", "-O1", "-g", "-fsanitize=address,undefined",
                                     "-fno-omit-frame-pointer", "-fopenmp", "-Wall", "-Wextra", "-Werror",
                                     "-I", dir.path(), "-o", dir.file("fixture"),
                                     source_root() + "/tests/pack/inspector_fixture.cpp"};
  for (const Generated& k : kernels) {
    CAPTURE(k.name);
    const std::string config = dir.file(k.name + ".json");
    write_text(config, "{\"name\": \"" + k.name + "\", \"types\": " + k.types +
                           ", \"tensors\": {\"A\": {\"format\": \"csr\"}, \"C\": {\"format\": \"dense\"}}, \"schedule\": [" +
                           k.decompose + "]}");
    ProcessResult gen = run_process({spgen_binary(), "gen", dir.file("spmm.spg"), "--config", config, "-o", dir.path()});
    INFO(gen.err);
    REQUIRE(gen.exit_code == 0);
    build.push_back(dir.file(k.name + ".cpp"));
  }
  ProcessResult compile = run_process(build);
  INFO(compile.err);
  REQUIRE(compile.exit_code == 0);
  ProcessResult run = run_process({dir.file("fixture")});
  INFO(run.out << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("ok: 0 failures") != std::string::npos);
}
