// The spgen command line as users and Makefiles see it: exit codes, error messages on stderr,
// files written all-or-nothing, and bad input files rejected by `spgen run`.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "process.h"

using namespace spgen_test;

namespace {

std::string spec(const std::string& name) { return source_root() + "/specs/" + name; }

// For `spgen run` calls that check what a run reports or writes, not the kernel's speed: the
// driver compiles at -O0 (the -O3 default cost these tests most of their time).
const std::string kQuickBuild = "--cxxflags=-O0";

ProcessResult spgen(std::vector<std::string> args) {
  args.insert(args.begin(), spgen_binary());
  return run_process(args);
}

// Kernel NAME in `dir`: NAME.cpp compiles with -Wall -Wextra -Werror, and NAME.h as plain C.
void check_compiles_warning_free(const TempDir& dir, const std::string& name) {
  ProcessResult cxx = run_process({"c++", "-std=c++17", "-O2", "-fopenmp", "-Wall", "-Wextra", "-Werror", "-c",
                                   dir.file(name + ".cpp"), "-o", dir.file("k.o")});
  INFO(cxx.err);
  CHECK(cxx.exit_code == 0);
  write_text(dir.file("use.c"), "#include \"" + name + ".h\"\nint main(void) { return 0; }\n");
  ProcessResult cc = run_process({"cc", "-std=c99", "-Wall", "-Werror", "-I", dir.path(), "-c", dir.file("use.c"),
                                  "-o", dir.file("use.o")});
  INFO(cc.err);
  CHECK(cc.exit_code == 0);
}

}  // namespace

TEST_CASE("gen writes NAME.h and NAME.cpp, and rewriting identical output leaves files untouched") {
  TempDir dir;
  ProcessResult r = spgen({"gen", spec("spmm.spg"), "--config", spec("spmm_csr.json"), "-o", dir.path()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  REQUIRE(std::filesystem::exists(dir.file("spmm_csr.h")));
  REQUIRE(std::filesystem::exists(dir.file("spmm_csr.cpp")));
  CHECK(read_text(dir.file("spmm_csr.cpp")).find("#pragma omp parallel for schedule(dynamic, 1)") != std::string::npos);
  auto stamp = std::filesystem::last_write_time(dir.file("spmm_csr.cpp"));
  std::filesystem::last_write_time(dir.file("spmm_csr.cpp"), stamp - std::chrono::hours(1));
  auto old_stamp = std::filesystem::last_write_time(dir.file("spmm_csr.cpp"));
  REQUIRE(spgen({"gen", spec("spmm.spg"), "--config", spec("spmm_csr.json"), "-o", dir.path()}).exit_code == 0);
  CHECK(std::filesystem::last_write_time(dir.file("spmm_csr.cpp")) == old_stamp);
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
  CHECK(files == 2);
}

TEST_CASE("the generated kernel compiles warning-free as C++ and its header as plain C") {
  TempDir dir;
  REQUIRE(spgen({"gen", spec("mttkrp.spg"), "--config", spec("mttkrp_csf.json"), "-o", dir.path()}).exit_code == 0);
  check_compiles_warning_free(dir, "mttkrp_csf");
}

TEST_CASE("a bsr output gathered in block-row workspaces (parallel, float64, int64) compiles warning-free") {
  TempDir dir;
  std::string cases = source_root() + "/tests/e2e/cases/";
  REQUIRE(spgen({"gen", cases + "sparse_add.spg", "--config", cases + "sparse_add_csr_to_bsr_out_parallel.json", "-o",
                 dir.path()}).exit_code == 0);
  check_compiles_warning_free(dir, "sparse_add");
}

TEST_CASE("two generated kernels link into one program") {
  TempDir dir;
  REQUIRE(spgen({"gen", spec("spmv.spg"), "--config", spec("spmv_csr.json"), "-o", dir.path()}).exit_code == 0);
  REQUIRE(spgen({"gen", spec("spmv.spg"), "--config", spec("spmv_csc.json"), "-o", dir.path()}).exit_code == 0);
  write_text(dir.file("main.cpp"),
             "#include \"spmv_csr.h\"\n#include \"spmv_csc.h\"\n"
             "int main() {\n"
             "  const int32_t pos[] = {0, 1, 2}; const int32_t crd[] = {1, 0}; const float a[] = {2, 3};\n"
             "  const float x[] = {5, 7}; float y[2];\n"
             "  spmv_csr(2, 2, y, pos, crd, a, x);\n"
             "  const int64_t pos64[] = {0, 1, 2}; const int64_t crd64[] = {1, 0}; const double a64[] = {2, 3};\n"
             "  const double x64[] = {5, 7}; double y64[2];\n"
             "  spmv_csc(2, 2, y64, pos64, crd64, a64, x64);\n"
             "  // csr: y = [2*7, 3*5]; csc (columns): y[1] += 2*5, y[0] += 3*7\n"
             "  return (y[0] == 14 && y[1] == 15 && y64[0] == 21 && y64[1] == 10) ? 0 : 1;\n"
             "}\n");
  ProcessResult build = run_process({"c++", "-std=c++17", "-O1", "-fopenmp", "-I", dir.path(), "-o", dir.file("prog"),
                                     dir.file("main.cpp"), dir.file("spmv_csr.cpp"), dir.file("spmv_csc.cpp")});
  INFO(build.err);
  REQUIRE(build.exit_code == 0);
  CHECK(run_process({dir.file("prog")}).exit_code == 0);
}

TEST_CASE("the cpu kernels' coordinate sort (templates/cpu_sort.cpp.in) orders like std::sort") {
  TempDir dir;
  write_text(dir.file("sort.cpp"),
             "#include <algorithm>\n#include <cstdint>\n#include <random>\n#include <vector>\n"
             "#include \"" + source_root() + "/templates/cpu_sort.cpp.in\"\n"
             "template <class T> int check(int64_t n, uint64_t range, unsigned seed) {\n"
             "  std::mt19937_64 rng(seed);\n"
             "  std::vector<T> a(static_cast<size_t>(n));\n"
             "  for (T& v : a) v = static_cast<T>(1000 + rng() % range);\n"
             "  std::vector<T> want = a;\n"
             "  std::sort(want.begin(), want.end());\n"
             "  spgen_sort_coordinates(a.data(), n);\n"
             "  return a == want ? 0 : 1;\n"
             "}\n"
             "int main() {\n"
             "  int failed = 0;\n"
             "  for (int64_t n : {0, 1, 2, 63, 64, 65, 100, 257, 1000, 5000})\n"
             "    for (uint64_t range : {1ull, 7ull, 255ull, 256ull, 65539ull, 1ull << 33})\n"
             "      failed += check<int64_t>(n, range, static_cast<unsigned>(n + range)) +\n"
             "                (range < (1ull << 30) ? check<int32_t>(n, range, static_cast<unsigned>(n * 3 + range)) : 0);\n"
             "  return failed;\n"
             "}\n");
  ProcessResult build = run_process({"c++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-o", dir.file("sort"), dir.file("sort.cpp")});
  INFO(build.err);
  REQUIRE(build.exit_code == 0);
  CHECK(run_process({dir.file("sort")}).exit_code == 0);
}

TEST_CASE("examples/gnn_aggregate: its Makefile generates the kernel, builds the program, and the program checks itself") {
  TempDir dir;
  std::string example = source_root() + "/examples/gnn_aggregate";
  ProcessResult make = run_process({"make", "-C", example, "SPGEN=" + spgen_binary(), "SPEC=" + spec("spmm.spg"),
                                    "OUT=" + dir.path(), "CXXFLAGS=-O1", "run"});
  INFO(make.out);
  INFO(make.err);
  REQUIRE(make.exit_code == 0);
  CHECK(make.out.find("max relative error") != std::string::npos);
  CHECK(make.out.find(": ok") != std::string::npos);
  // The register tile is in the kernel the Makefile generated.
  CHECK(read_text(dir.file("gnn_aggregate.cpp")).find("spgen_vf32 acc_tile[32 / SPGEN_LANES_F32] = {};") !=
        std::string::npos);
}

TEST_CASE("examples/gat: one kernel of five statements (functions, a max reduction, structures, temporaries) gives a GAT layer's attention") {
  TempDir dir;
  std::string example = source_root() + "/examples/gat";
  ProcessResult make = run_process({"make", "-C", example, "SPGEN=" + spgen_binary(), "OUT=" + dir.path(), "CXXFLAGS=-O1", "run"});
  INFO(make.out);
  INFO(make.err);
  REQUIRE(make.exit_code == 0);
  CHECK(make.out.find(": ok") != std::string::npos);
  const std::string kernel = read_text(dir.file("gat.cpp"));
  CHECK(kernel.find("-INFINITY") != std::string::npos);
  // Fused: the logits and numerators a row at a time in each thread's workspace, m (an output) read
  // once per row.
  CHECK(kernel.find("spgen_exp_f32(S_row[pS1 - A_row_start] - m_i)") != std::string::npos);
  CHECK(kernel.find("std::unique_ptr<float[]> S_row(new float[longest_row + 128]);") != std::string::npos);
  CHECK(kernel.find("S_vals") == std::string::npos);
}

TEST_CASE("examples/sparse_attention: attention over a banded mask as one kernel of five statements") {
  TempDir dir;
  std::string example = source_root() + "/examples/sparse_attention";
  ProcessResult make = run_process({"make", "-C", example, "SPGEN=" + spgen_binary(), "OUT=" + dir.path(), "CXXFLAGS=-O1"});
  INFO(make.out);
  INFO(make.err);
  REQUIRE(make.exit_code == 0);
  ProcessResult run = run_process({dir.file("attention_example"), "1000", "16"});
  INFO(run.out);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find(": ok") != std::string::npos);
}

TEST_CASE("examples/rgcn: one statement and its two-statement factoring give the same relational layer") {
  TempDir dir;
  std::string example = source_root() + "/examples/rgcn";
  // (A smaller graph than the example's default: the plain loop's check dominates at -O1.)
  ProcessResult make = run_process({"make", "-C", example, "SPGEN=" + spgen_binary(), "OUT=" + dir.path(), "CXXFLAGS=-O1"});
  INFO(make.out);
  INFO(make.err);
  REQUIRE(make.exit_code == 0);
  ProcessResult run = run_process({dir.file("rgcn_example"), "2000", "16"});
  INFO(run.out);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find(": ok") != std::string::npos);
  CHECK(read_text(dir.file("rgcn_factored.cpp")).find("std::unique_ptr<float[]> T_vals") != std::string::npos);
}

TEST_CASE("a malformed spec is reported as file:line:col with a caret, exit 1, and nothing is written") {
  TempDir dir;
  write_text(dir.file("bad.spg"), "# comment\ny(i) = A(i,j) *\n");
  write_text(dir.file("bad.json"), "{}");
  ProcessResult r = spgen({"gen", dir.file("bad.spg"), "--config", dir.file("bad.json"), "-o", dir.path()});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(dir.file("bad.spg") + ":2:16: error: expected a tensor, a number or '('") == 0);
  CHECK(!std::filesystem::exists(dir.file("bad.h")));
  CHECK(!std::filesystem::exists(dir.file("bad.cpp")));
}

TEST_CASE("config errors name the JSON path; an existing output is not modified") {
  TempDir dir;
  REQUIRE(spgen({"gen", spec("spmm.spg"), "--config", spec("spmm_csr.json"), "-o", dir.path()}).exit_code == 0);
  std::string before = read_text(dir.file("spmm_csr.cpp"));
  write_text(dir.file("spmm_csr.json"), R"({"name": "spmm_csr", "tensors": {"A": {"format": "cssr"}}})");
  ProcessResult r = spgen({"gen", spec("spmm.spg"), "--config", dir.file("spmm_csr.json"), "-o", dir.path()});
  CHECK(r.exit_code == 1);
  CHECK(r.err == dir.file("spmm_csr.json") + ": /tensors/A/format: error: unknown format \"cssr\" (expected dense, csr, "
                 "csc, dcsr, dcsc, csf, sv, coo, ell, ragged, bsr, sell, or {\"levels\": [...], \"order\": [...]})\n");
  CHECK(read_text(dir.file("spmm_csr.cpp")) == before);
}

TEST_CASE("an illegal schedule names the op by its index") {
  TempDir dir;
  write_text(dir.file("c.json"), R"({"tensors": {"A": {"format": "csr"}},
    "schedule": [{"op": "vectorize", "var": "k"}, {"op": "parallel", "var": "j"}]})");
  ProcessResult r = spgen({"gen", spec("spmm.spg"), "--config", dir.file("c.json"), "--emit", "stage2"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(dir.file("c.json") + ": /schedule/1: error: parallel: cannot parallelize j") == 0);
  CHECK(r.out.empty());
}

TEST_CASE("functions and max reductions: the kernels compile warning-free; what is not supported yet is refused by name") {
  TempDir dir;
  write_text(dir.file("softmax_parts.spg"), "E(i,j) = A(i,j) * max(u(i) + v(j), 0.2 * (u(i) + v(j))) + exp(A(i,j)) - sqrt(abs(A(i,j)))\n");
  write_text(dir.file("csr.json"), R"({"tensors": {"A": {"format": "csr"}, "E": {"format": "csr"}}, "schedule": "auto"})");
  REQUIRE(spgen({"gen", dir.file("softmax_parts.spg"), "--config", dir.file("csr.json"), "-o", dir.path()}).exit_code == 0);
  CHECK(read_text(dir.file("softmax_parts.cpp")).find("#include <cmath>") != std::string::npos);
  check_compiles_warning_free(dir, "softmax_parts");
  write_text(dir.file("row_max.spg"), "m(i) = max(j: S(i,j))\n");
  write_text(dir.file("rm.json"), R"({"types": {"value": "float64"}, "tensors": {"S": {"format": "csr"}}, "schedule": "auto"})");
  REQUIRE(spgen({"gen", dir.file("row_max.spg"), "--config", dir.file("rm.json"), "-o", dir.path()}).exit_code == 0);
  CHECK(read_text(dir.file("row_max.cpp")).find("-INFINITY") != std::string::npos);
  check_compiles_warning_free(dir, "row_max");

  // An operand stored with padding under a call: exp(0) would be computed in its empty slots.
  write_text(dir.file("ell.json"), R"({"tensors": {"A": {"format": "ell", "width": 4}, "E": {"format": "dense"}}})");
  ProcessResult padded = spgen({"gen", dir.file("softmax_parts.spg"), "--config", dir.file("ell.json"), "--emit", "stage2"});
  CHECK(padded.exit_code == 1);
  CHECK(padded.err.find(dir.file("ell.json") + ": /tensors/A/format: error: the function call max(u(i) + v(j), 0.2 * (u(i) + v(j))) reads") ==
        std::string::npos);  // (u and v are dense: the first call that reads A is exp's)
  CHECK(padded.err.find(dir.file("ell.json") + ": /tensors/A/format: error: the function call exp(A(i,j)) reads A, whose format (ell) stores padding") == 0);
  // A max reduction with an op that adds partial results, and into a sparse output.
  write_text(dir.file("vec.json"), R"({"tensors": {"S": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j", "lanes": 8}]})");
  ProcessResult vectorized = spgen({"gen", dir.file("row_max.spg"), "--config", dir.file("vec.json"), "--emit", "stage2"});
  CHECK(vectorized.exit_code == 1);
  CHECK(vectorized.err.find(dir.file("vec.json") + ": /schedule/0: error: vectorize: its lanes would combine partial results by adding them, "
                            "which a max reduction does not take (yet) (a plain vectorize takes the max)") == 0);
  // A plain simd loop takes the max with OpenMP's reduction clause.
  write_text(dir.file("simd.json"), R"({"tensors": {"S": {"format": "csr"}}, "schedule": [{"op": "vectorize", "var": "j"}]})");
  REQUIRE(spgen({"gen", dir.file("row_max.spg"), "--config", dir.file("simd.json"), "-o", dir.path()}).exit_code == 0);
  CHECK(read_text(dir.file("row_max.cpp")).find("#pragma omp simd reduction(max:acc)") != std::string::npos);
  write_text(dir.file("par.json"), R"({"tensors": {"S": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "j", "reduction": "atomic"}]})");
  ProcessResult parallel = spgen({"gen", dir.file("row_max.spg"), "--config", dir.file("par.json"), "--emit", "stage2"});
  CHECK(parallel.exit_code == 1);
  CHECK(parallel.err.find(dir.file("par.json") + ": /schedule/0: error: parallel: its threads would combine partial results") == 0);
  write_text(dir.file("sv.json"), R"({"tensors": {"S": {"format": "csr"}, "m": {"format": "sv"}}})");
  ProcessResult sparse = spgen({"gen", dir.file("row_max.spg"), "--config", dir.file("sv.json"), "--emit", "stage2"});
  CHECK(sparse.exit_code == 1);
  CHECK(sparse.err.find(dir.file("sv.json") + ": /tensors/m: error: a max reduction is supported into a dense output") == 0);
  write_text(dir.file("csc.json"), R"({"tensors": {"S": {"format": "csc"}}})");
  ProcessResult outside = spgen({"gen", dir.file("row_max.spg"), "--config", dir.file("csc.json"), "--emit", "stage2"});
  CHECK(outside.exit_code == 1);
  CHECK(outside.err.find("a reduced loop is outside m's") != std::string::npos);
}

TEST_CASE("several statements: one kernel that compiles warning-free, every stage dumped per statement; tune refuses a pinned \"fuse\"") {
  TempDir dir;
  const std::string attention = source_root() + "/tests/e2e/statements/attention.spg";
  const std::string config = source_root() + "/tests/e2e/statements/attention_csr.json";
  ProcessResult gen = spgen({"gen", attention, "--config", config, "-o", dir.path()});
  INFO(gen.err);
  REQUIRE(gen.exit_code == 0);
  const std::string header = read_text(dir.file("attention.h"));
  CHECK(header.find("//   S: temporary, written by statement 1 and held by the kernel: csr, one value per stored entry of M") != std::string::npos);
  CHECK(header.find("//   statement 2, m(i) = max(j: S(i,j)): no ops") != std::string::npos);
  check_compiles_warning_free(dir, "attention");
  ProcessResult stage1 = spgen({"gen", attention, "--config", config, "--emit", "stage1"});
  CHECK(stage1.out.find("// statement 5: O(i,d) = E(i,j) * V(j,d) / l(i)") != std::string::npos);
  ProcessResult stage2 = spgen({"gen", attention, "--config", config, "--emit", "stage2"});
  CHECK(stage2.out.find("// executor") != std::string::npos);
  ProcessResult tune = spgen({"tune", attention, "--config", source_root() + "/tests/e2e/statements/attention_outputs_auto.json", "-o",
                              dir.file("t.json"), "--input", "M=" + source_root() + "/tests/e2e/statements/attention.spg"});
  CHECK(tune.exit_code == 1);
  CHECK(tune.err.find("attention_outputs_auto.json: \"fuse\" is pinned: nothing to tune") != std::string::npos);
  // One statement that auto factors on the inputs given: tune would lose the factoring.
  std::string entries;  // 2 relations x 2 nodes, each with 8 edges: factoring pays
  for (int r = 1; r <= 2; ++r)
    for (int i = 1; i <= 2; ++i)
      for (int j = 1; j <= 8; ++j) entries += std::to_string(r) + " " + std::to_string(i) + " " + std::to_string(j) + " 1.5\n";
  write_text(dir.file("a.tns"), entries);
  ProcessResult factored = spgen({"tune", source_root() + "/tests/e2e/cases/rgcn_single.spg", "--config",
                                  source_root() + "/tests/e2e/cases/rgcn_single_auto.json", "-o", dir.file("t.json"), "--input",
                                  "A=" + dir.file("a.tns"), "--input", "X=random", "--input", "W=random"});
  CHECK(factored.exit_code == 1);
  CHECK(factored.err.find("auto factors the statement into 2") != std::string::npos);
}

TEST_CASE("an output's structure: named by the config, checked, and shown in stage I") {
  TempDir dir;
  write_text(dir.file("sm.spg"), "E(i,j) = exp(S(i,j) - m(i))\n");
  auto gen = [&](const std::string& config) {
    write_text(dir.file("c.json"), config);
    return spgen({"gen", dir.file("sm.spg"), "--config", dir.file("c.json"), "--emit", "stage1"});
  };
  ProcessResult ok = gen(R"({"tensors": {"S": {"format": "csr"}, "E": {"structure": "S"}}})");
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("E(i,j) = pattern(S(i,j)) * exp(S(i,j) - m(i))") != std::string::npos);
  CHECK(ok.out.find("shares the structure of S") != std::string::npos);
  const std::string c = dir.file("c.json") + ": ";
  CHECK(gen(R"({"tensors": {"S": {"format": "csr"}, "m": {"structure": "S"}}})").err ==
        c + "/tensors/m/structure: error: \"structure\" belongs to the output, E\n");
  CHECK(gen(R"({"tensors": {"S": {"format": "csr"}, "E": {"structure": "m"}}})").err.find(
            c + "/tensors/E/structure: error: m must be read with the output's indices (E(i,j))") == 0);
  CHECK(gen(R"({"tensors": {"S": {"format": "csr"}, "E": {"structure": "Q"}}})").err.find(
            c + "/tensors/E/structure: error: Q is not an input of the spec") == 0);
  CHECK(gen(R"({"tensors": {"E": {"structure": "S"}}})").err.find(
            c + "/tensors/E/structure: error: S is stored dense: every entry would be evaluated") == 0);
  CHECK(gen(R"({"tensors": {"S": {"format": "ell", "width": 2}, "E": {"structure": "S"}}})").err.find(
            c + "/tensors/E/structure: error: S stores padding (ell)") == 0);
  // (a dense level under a sparse one holds zeros the coordinates do not list, as ELL's slots do)
  CHECK(gen(R"({"tensors": {"S": {"format": {"levels": ["compressed", "dense"]}}, "E": {"structure": "S"}}})").err.find(
            c + "/tensors/E/structure: error: S stores padding (custom)") == 0);
  CHECK(gen(R"({"tensors": {"S": {"format": "csr"}, "E": {"format": "csc", "structure": "S"}}})").err.find(
            c + "/tensors/E/format: error: E has the structure of S, so its format must be S's (csr), or left out") == 0);
  CHECK(gen(R"({"tensors": {"S": {"format": "csr"}, "E": {"structure": 3}}})").err.find(
            c + "/tensors/E/structure: error: expected the name of a sparse input") == 0);
}

TEST_CASE("missing files, unknown flags and a missing output directory fail cleanly") {
  TempDir dir;
  ProcessResult missing = spgen({"gen", dir.file("nope.spg"), "--config", spec("spmm_csr.json")});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("nope.spg: error: cannot open file") != std::string::npos);
  ProcessResult flag = spgen({"gen", spec("spmm.spg"), "--config", spec("spmm_csr.json"), "--bogus"});
  CHECK(flag.exit_code != 0);
  ProcessResult no_dir = spgen({"gen", spec("spmm.spg"), "--config", spec("spmm_csr.json"), "-o", dir.file("absent")});
  CHECK(no_dir.exit_code == 1);
  CHECK(no_dir.err.find("output directory does not exist") != std::string::npos);
  CHECK(spgen({}).exit_code != 0);
  ProcessResult version = spgen({"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.find("spgen 0.") != std::string::npos);
}

TEST_CASE("--emit prints each IR stage and writes nothing") {
  TempDir dir;
  ProcessResult s1 = spgen({"gen", spec("sddmm.spg"), "--config", spec("sddmm_csr.json"), "--emit", "stage1", "-o", dir.path()});
  REQUIRE(s1.exit_code == 0);
  CHECK(s1.out.find("sparse_iteration sddmm_csr over [i: spatial, j: spatial, k: reduction]") != std::string::npos);
  CHECK(s1.out.find("Y(i,j): float32[X.0, X.1] format csr") != std::string::npos);
  ProcessResult s2 = spgen({"gen", spec("sddmm.spg"), "--config", spec("sddmm_csr.json"), "--emit", "stage2"});
  REQUIRE(s2.exit_code == 0);
  CHECK(s2.out.find("for k in [0, dim_k) vectorized +acc:") != std::string::npos);
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("--target replaces the config's target; ops that do not fit it are named") {
  TempDir dir;
  write_text(dir.file("plain.json"), R"({"tensors": {"A": {"format": "csr"}}})");
  ProcessResult cuda = spgen({"gen", spec("spmv.spg"), "--config", dir.file("plain.json"), "--target", "cuda", "-o", dir.path()});
  REQUIRE(cuda.exit_code == 0);
  CHECK(std::filesystem::exists(dir.file("spmv.cu")));
  CHECK(!std::filesystem::exists(dir.file("spmv.cpp")));
  ProcessResult cpu = spgen({"gen", spec("spmv.spg"), "--config", spec("spmv_csr_cuda.json"), "--target", "cpu", "--emit", "source"});
  CHECK(cpu.exit_code == 1);
  CHECK(cpu.err.find("spmv_csr_cuda.json: /schedule/1: error: bind: bind is for the cuda target") != std::string::npos);
  ProcessResult bad = spgen({"run", spec("spmv.spg"), "--config", spec("spmv_csr.json"), "--target", "gpu"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("--target: gpu not in {cpu,cuda}") != std::string::npos);
}

TEST_CASE("spgen run rejects corrupt and out-of-range Matrix Market files without output") {
  TempDir dir;
  write_text(dir.file("corrupt.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n1 x 2.0\n");
  write_text(dir.file("range.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 1 2.0\n");
  for (const char* file : {"corrupt.mtx", "range.mtx"}) {
    CAPTURE(file);
    ProcessResult r = spgen({"run", spec("spmv.spg"), "--config", spec("spmv_csr.json"), "--input",
                             std::string("A=") + dir.file(file), "--input", "x=random", "--output",
                             "y=" + dir.file("y.mtx")});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(dir.file(file) + ":4:") != std::string::npos);
    CHECK(!std::filesystem::exists(dir.file("y.mtx")));
  }
}

TEST_CASE("spgen run reports a missing input and inconsistent sizes") {
  TempDir dir;
  write_text(dir.file("a.mtx"), "%%MatrixMarket matrix coordinate real general\n3 4 1\n1 2 1.0\n");
  write_text(dir.file("x.mtx"), "%%MatrixMarket matrix array real general\n3 1\n1\n2\n3\n");
  ProcessResult missing = spgen({"run", spec("spmv.spg"), "--config", spec("spmv_csr.json"), "--input",
                                 "A=" + dir.file("a.mtx")});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("missing input x") != std::string::npos);
  ProcessResult sizes = spgen({"run", spec("spmv.spg"), "--config", spec("spmv_csr.json"), "--input",
                               "A=" + dir.file("a.mtx"), "--input", "x=" + dir.file("x.mtx")});
  CHECK(sizes.exit_code == 1);
  CHECK(sizes.err.find("size of index j") != std::string::npos);
}

TEST_CASE("spgen run prints the median time and writes the output") {
  TempDir dir;
  write_text(dir.file("a.mtx"), "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n");
  ProcessResult r = spgen({"run", spec("spmm.spg"), "--config", spec("spmm_csr.json"), "--input", "A=" + dir.file("a.mtx"),
                           "--input", "B=random", "--dim", "k=5", "--save-input", "B=" + dir.file("b.mtx"), "--output",
                           "C=" + dir.file("c.mtx"), "--repeat", "5"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("time_ms median=") != std::string::npos);
  CHECK(r.out.find("runs=5") != std::string::npos);
  std::string c = read_text(dir.file("c.mtx"));
  CHECK(c.rfind("%%MatrixMarket matrix array real general", 0) == 0);
  CHECK(c.find("\n3 5\n") != std::string::npos);
}

// C = A + B (matadd.spg) with C's ELL level `ell_level` (a JSON format) as narrow as `narrow` slots:
// spgen run stops with `error` and writes nothing; with `narrow + 1` slots C holds every entry (the
// padding of the shorter parents is not an entry). Row 2 of A + B has three entries, and three rows
// hold entries. `target` "cuda" runs the kernel on the CUDA emulator (tests/cuda_emu).
static void check_ell_width_overflow(const std::function<std::string(int)>& format, int narrow, const std::string& error,
                                     const std::string& target = "cpu") {
  TempDir dir;
  write_text(dir.file("a.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1.0\n2 1 2.0\n2 3 3.0\n");
  write_text(dir.file("b.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 2\n2 2 4.0\n3 3 5.0\n");
  auto run_with_width = [&](int width) {
    write_text(dir.file("ell.json"),
               R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": )" + format(width) + "}}");
    std::vector<std::string> env;
    if (target == "cuda") env = {"NVCC=" + source_root() + "/tests/cuda_emu/nvcc-emu", "CXX=g++"};
    return run_process({spgen_binary(), "run", spec("matadd.spg"), "--config", dir.file("ell.json"), "--target", target, "--input",
                        "A=" + dir.file("a.mtx"), "--input", "B=" + dir.file("b.mtx"), "--output", "C=" + dir.file("c.mtx"), kQuickBuild},
                       env);
  };
  ProcessResult r = run_with_width(narrow);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(error) != std::string::npos);
  CHECK(!std::filesystem::exists(dir.file("c.mtx")));
  ProcessResult fits = run_with_width(narrow + 1);
  INFO(fits.err);
  REQUIRE(fits.exit_code == 0);
  CHECK(read_text(dir.file("c.mtx")) ==
        "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1\n2 1 2\n2 2 4\n2 3 3\n3 3 5\n");
}

TEST_CASE("spgen run refuses an ELL output whose row needs more slots than its width, writing nothing") {
  check_ell_width_overflow([](int width) { return R"({"format": "ell", "width": )" + std::to_string(width) + "}"; }, 2,
                           "output C: parent position 1 of level 1 gets 3 entries, more than the ELL width 2; give C a wider "
                           "ELL format (or csr)");
}

TEST_CASE("spgen run refuses an ELL level above the last whose parent needs more slots than its width") {
  // ELL slots over the rows (level 0), each row compressed: three rows for two slots.
  check_ell_width_overflow(
      [](int width) {
        return R"({"format": {"levels": [{"kind": "sparse-fixed", "width": )" + std::to_string(width) + R"(}, "compressed"]}})";
      },
      2, "output C: parent position 0 of level 0 gets 3 entries, more than the ELL width 2");
}

TEST_CASE("on cuda (emulated), an ELL level above the last whose parent needs more slots than its width is refused alike") {
  // The grid packs the slots by rank under each parent; the third row is dropped on the device
  // (nothing written past the two slots) and counted, so that the host refuses the output.
  check_ell_width_overflow(
      [](int width) {
        return R"({"format": {"levels": [{"kind": "sparse-fixed", "width": )" + std::to_string(width) + R"(}, "compressed"]}})";
      },
      2, "output C: parent position 0 of level 0 gets 3 entries, more than the ELL width 2", "cuda");
}

TEST_CASE("on cuda (emulated), a parent with more distinct coordinates than its ELL width gets its first W, and nothing is written past") {
  // The kernels called as a program would, ignoring the width check that `spgen run` makes: C = A + B
  // into ELL rows of width 2 above compressed ones, with 3 rows. The grid gives rows 0 and 1 the two
  // slots by rank and drops row 2; the arrays are followed by canaries (-7) that must stay.
  TempDir dir;
  write_text(dir.file("ell.json"),
             R"({"target": "cuda", "tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
                 "C": {"format": {"levels": [{"kind": "sparse-fixed", "width": 2}, "compressed"]}}}})");
  ProcessResult gen = spgen({"gen", spec("matadd.spg"), "--config", dir.file("ell.json"), "-o", dir.path()});
  INFO(gen.err);
  REQUIRE(gen.exit_code == 0);
  write_text(dir.file("main.cu"), R"(#include "matadd.h"
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
template <class T> T* dev(const std::vector<T>& h) {
  T* d = nullptr; cudaMalloc(&d, h.size() * sizeof(T));
  cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice); return d;
}
template <class T> std::vector<T> host(const T* d, size_t n) {
  std::vector<T> h(n); cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost); return h;
}
int main() {
  // A = [[1,0,0],[2,0,3],[0,0,0]], B = [[0,0,0],[0,4,0],[0,0,5]]: C = A + B has 3 rows, ELL width 2.
  int32_t *Ap = dev<int32_t>({0, 1, 3, 3}), *Ac = dev<int32_t>({0, 0, 2});
  float* Av = dev<float>({1, 2, 3});
  int32_t *Bp = dev<int32_t>({0, 0, 1, 2}), *Bc = dev<int32_t>({1, 2});
  float* Bv = dev<float>({4, 5});
  const int K = 8;  // canaries after each array
  int32_t* pos0 = dev<int32_t>(std::vector<int32_t>(2 + K, -7));
  if (matadd_assemble_level0(3, 3, pos0, Ap, Ac, Av, Bp, Bc, Bv, 0)) return 2;
  auto p0 = host(pos0, 2 + K);
  printf("pos0 %d %d (row count, the host refuses > 2)\n", p0[0], p0[1]);
  int32_t* pos1 = dev<int32_t>(std::vector<int32_t>(3 + K, -7));
  if (matadd_assemble_level1(3, 3, pos0, pos1, Ap, Ac, Av, Bp, Bc, Bv, 0)) return 2;
  auto p1 = host(pos1, 3 + K);
  printf("pos1 %d %d %d\n", p1[0], p1[1], p1[2]);
  int n = p1[2];
  int32_t* crd0 = dev<int32_t>(std::vector<int32_t>(2 + K, -7));
  int32_t* crd1 = dev<int32_t>(std::vector<int32_t>(n + K, -7));
  float* vals = dev<float>(std::vector<float>(n + K, -7));
  if (matadd(3, 3, crd0, pos1, crd1, vals, Ap, Ac, Av, Bp, Bc, Bv, 0)) return 2;
  auto c0 = host(crd0, 2 + K); auto c1 = host(crd1, n + K); auto v = host(vals, n + K);
  int bad = 0;
  printf("crd0:"); for (int k = 0; k < 2 + K; ++k) { printf(" %d", c0[k]); bad += k >= 2 && c0[k] != -7; }
  printf("\ncrd1:"); for (int k = 0; k < n + K; ++k) { printf(" %d", c1[k]); bad += k >= n && c1[k] != -7; }
  printf("\nvals:"); for (int k = 0; k < n + K; ++k) { printf(" %g", v[k]); bad += k >= n && v[k] != -7; }
  for (int k = 2; k < 3 + K; ++k) bad += k >= 3 && p1[k] != -7;
  printf("\nwritten past the arrays: %d\n", bad);
  return bad ? 1 : 0;
}
)");
  ProcessResult build = run_process({source_root() + "/tests/cuda_emu/nvcc-emu", "-std=c++17", "-O1", "-o", dir.file("prog"),
                                     dir.file("main.cu"), dir.file("matadd.cu")},
                                    {"CXX=g++"});
  INFO(build.err);
  REQUIRE(build.exit_code == 0);
  ProcessResult run = run_process({dir.file("prog")});
  INFO(run.out);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "pos0 0 3 (row count, the host refuses > 2)\npos1 0 1 4\ncrd0: 0 1 -7 -7 -7 -7 -7 -7 -7 -7\n"
                   "crd1: 0 0 1 2 -7 -7 -7 -7 -7 -7 -7 -7\nvals: 1 2 4 3 -7 -7 -7 -7 -7 -7 -7 -7\nwritten past the arrays: 0\n");
}

TEST_CASE("spgen run refuses a listed output whose flattened coordinates would not fit in 63 bits") {
  // C = A^T B into dcsr lists its entries keyed by i * dim_j + j: 3037000500^2 exceeds 2^63 - 1.
  TempDir dir;
  const std::string huge = "%%MatrixMarket matrix coordinate real general\n2 3037000500 1\n1 3037000500 2.0\n";
  write_text(dir.file("a.mtx"), huge);
  write_text(dir.file("b.mtx"), huge);
  write_text(dir.file("c.json"), R"({"tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "dcsr"}},
                                    "types": {"index": "int64"}})");
  const std::string spec_file = source_root() + "/tests/e2e/cases/spgemm_transposed.spg";
  ProcessResult r = spgen({"run", spec_file, "--config", dir.file("c.json"), "--input", "A=" + dir.file("a.mtx"), "--input",
                           "B=" + dir.file("b.mtx"), "--output", "C=" + dir.file("c.mtx"), kQuickBuild});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("output C (3037000500 x 3037000500): the kernel lists its entries keyed by their coordinates flattened "
                   "into one int64, but the product of its dimensions exceeds 2^63 - 1") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.file("c.mtx")));
  // One column fewer fits: the entry comes back.
  const std::string fits = "%%MatrixMarket matrix coordinate real general\n2 3037000499 1\n1 3037000499 2.0\n";
  write_text(dir.file("a.mtx"), fits);
  write_text(dir.file("b.mtx"), fits);
  ProcessResult ok = spgen({"run", spec_file, "--config", dir.file("c.json"), "--input", "A=" + dir.file("a.mtx"), "--input",
                            "B=" + dir.file("b.mtx"), "--output", "C=" + dir.file("c.mtx"), kQuickBuild});
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);
  CHECK(read_text(dir.file("c.mtx")) ==
        "%%MatrixMarket matrix coordinate real general\n3037000499 3037000499 1\n3037000499 3037000499 4\n");
}

TEST_CASE("an assembled output stores only the coordinates some term stores, not those of a dense level under an absent parent") {
  TempDir dir;
  // E's j level is dense under its compressed rows: E stores rows 2 and 4 whole, B stores (1,1) and (4,3). A row
  // E lacks holds only B's entries, though the j loop visits every coordinate there for E's term.
  std::string cases = source_root() + "/tests/e2e/cases/";
  std::string ttv_sum = cases + "ttv_sum.spg";
  write_text(dir.file("b.tns"), "1 1 1 1.0\n4 3 2 2.0\n");
  write_text(dir.file("e.tns"), "2 3 2 3.0\n4 1 1 1.5\n");
  write_text(dir.file("c.mtx"), "%%MatrixMarket matrix array real general\n2 1\n1\n10\n");
  const std::string expected = "%%MatrixMarket matrix coordinate real general\n4 3 7\n1 1 1\n2 1 0\n2 2 0\n2 3 30\n4 1 1.5\n4 2 0\n4 3 20\n";
  // csr, and ELL rows of width 3 above compressed ones (the rows 1, 2 and 4 fit; every row would not).
  for (const char* config : {"ttv_sum_dense_under_compressed_csr_out.json", "ttv_sum_dense_under_compressed_ell3_out.json"}) {
    CAPTURE(config);
    std::string json = cases + config;
    if (std::string(config).find("ell3") != std::string::npos) {
      json = dir.file(config);
      write_text(json, R"({"tensors": {"A": {"format": {"levels": [{"kind": "sparse-fixed", "width": 3}, "compressed"]}},
          "B": {"format": {"levels": ["dense", "compressed", "compressed"]}},
          "E": {"format": {"levels": ["compressed", "dense", "compressed"]}}, "c": {"format": "dense"}}})");
    }
    ProcessResult r = spgen({"run", ttv_sum, "--config", json, "--input", "B=" + dir.file("b.tns"), "--input",
                             "E=" + dir.file("e.tns"), "--input", "c=" + dir.file("c.mtx"), "--output", "A=" + dir.file("a.mtx"),
                             kQuickBuild});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(read_text(dir.file("a.mtx")) == expected);
    // Empty operands: no entries at all.
    ProcessResult empty = spgen({"run", ttv_sum, "--config", json, "--input", "B=random", "--input", "E=random", "--input",
                                 "c=random", "--dim", "i=37", "--dim", "j=29", "--dim", "k=5", "--density", "0", "--output",
                                 "A=" + dir.file("empty.mtx"), kQuickBuild});
    INFO(empty.err);
    REQUIRE(empty.exit_code == 0);
    CHECK(read_text(dir.file("empty.mtx")) == "%%MatrixMarket matrix coordinate real general\n37 29 0\n");
  }
}

TEST_CASE("spgen run keeps the compiled driver runtime, the pack algorithm and the kernel's standard headers precompiled in SPGEN_RUN_CACHE and reuses them; off keeps nothing") {
  TempDir dir;
  std::vector<std::string> run = {spgen_binary(), "run", spec("spmv.spg"), "--config", spec("spmv_csr.json"), "--input",
                                  "A=random", "--input", "x=random", "--dim", "i=20", "--dim", "j=10", "-v"};
  // The cached objects: the runtime and the pack algorithm, once each.
  auto runtimes = [&] {
    int count = 0;
    if (std::filesystem::exists(dir.file("cache")))
      for (const auto& entry : std::filesystem::directory_iterator(dir.file("cache")))
        count += entry.path().extension() == ".o";
    return count;
  };
  ProcessResult first = run_process(run, {"SPGEN_RUN_CACHE=" + dir.file("cache")});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.err.find("spgen_run_runtime_instance.cpp") != std::string::npos);  // compiled here
  CHECK(first.err.find("-x c++-header") != std::string::npos);                    // header precompiled here
  CHECK(first.err.find("spgen_run_pack.cpp") != std::string::npos);               // the pack algorithm too
  CHECK(runtimes() == 2);
  ProcessResult second = run_process(run, {"SPGEN_RUN_CACHE=" + dir.file("cache")});
  REQUIRE(second.exit_code == 0);
  CHECK(second.err.find("spgen_run_runtime_instance.cpp") == std::string::npos);  // reused
  CHECK(second.err.find("-x c++-header") == std::string::npos);
  CHECK(second.err.find("spgen_run_pack.cpp") == std::string::npos);
  CHECK(second.err.find(dir.file("cache") + "/runtime-") != std::string::npos);   // linked from the cache
  CHECK(second.err.find(dir.file("cache") + "/pack-") != std::string::npos);
  CHECK(second.err.find("spmv_csr_for_driver.cpp") != std::string::npos);         // the kernel without its copy
  CHECK(second.err.find("-include " + dir.file("cache") + "/pchk-") != std::string::npos);  // the kernel's
  // The glue includes only spgen_run_glue.hpp: nothing to precompile.
  const size_t glue_end = second.err.find("run_driver.cpp -o");
  REQUIRE(glue_end != std::string::npos);
  const size_t glue_start = second.err.rfind('\n', glue_end) + 1;
  CHECK(second.err.substr(glue_start, glue_end - glue_start).find("-include") == std::string::npos);
  CHECK(runtimes() == 2);
  std::filesystem::remove_all(dir.file("cache"));
  ProcessResult off = run_process(run, {"SPGEN_RUN_CACHE=off"});
  REQUIRE(off.exit_code == 0);
  CHECK(off.err.find("-include") == std::string::npos);
  CHECK(runtimes() == 0);
  CHECK(!std::filesystem::exists(dir.file("cache")));
}

TEST_CASE("spgen run with clang++ reuses the precompiled header it built (clang refuses a moved one)") {
  if (!std::filesystem::exists("/usr/bin/clang++")) {
    MESSAGE("skipped: /usr/bin/clang++ not found");
    return;
  }
  TempDir dir;
  std::vector<std::string> run = {spgen_binary(), "run", spec("spmv.spg"), "--config", spec("spmv_csr.json"), "--input",
                                  "A=random", "--input", "x=random", "--dim", "i=20", "--dim", "j=10", "--cxxflags=-O0", "-v"};
  const std::vector<std::string> env = {"SPGEN_RUN_CACHE=" + dir.file("cache"), "CXX=/usr/bin/clang++"};
  ProcessResult first = run_process(run, env);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(first.err.find("-x c++-header") != std::string::npos);
  ProcessResult second = run_process(run, env);
  INFO(second.err);
  CHECK(second.exit_code == 0);
  CHECK(second.err.find("-x c++-header") == std::string::npos);
  CHECK(second.err.find("-include " + dir.file("cache") + "/pchk-") != std::string::npos);
  CHECK(second.out.find("time_ms median=") != std::string::npos);
}

TEST_CASE("a kernel specialized by --size returns SPGEN_ERR_DIM and writes nothing when called with another size") {
  TempDir dir;
  ProcessResult gen = spgen({"gen", spec("sddmm.spg"), "--config", spec("sddmm_csr.json"), "--size", "k=3", "-o", dir.path()});
  INFO(gen.err);
  REQUIRE(gen.exit_code == 0);
  check_compiles_warning_free(dir, "sddmm_csr");
  CHECK(read_text(dir.file("sddmm_csr.h")).find("int sddmm_csr(") != std::string::npos);
  // X = [[2, 0], [0, 5]] (csr); Y(i,j) = X(i,j) * dot(A row i, B row j) over k = 3.
  write_text(dir.file("main.cpp"),
             "#include \"sddmm_csr.h\"\n"
             "int main() {\n"
             "  const int32_t pos[] = {0, 1, 2}; const int32_t crd[] = {0, 1}; const float x[] = {2, 5};\n"
             "  const float a[] = {1, 2, 3, 4, 5, 6}; const float b[] = {1, 1, 1, 0, 1, 0};\n"
             "  float y[2] = {-1, -1};\n"
             "  if (sddmm_csr(2, 2, 4, y, pos, crd, x, a, b) != SPGEN_ERR_DIM) return 1;\n"
             "  if (y[0] != -1 || y[1] != -1) return 2;  // untouched\n"
             "  if (sddmm_csr(2, 2, 3, y, pos, crd, x, a, b) != SPGEN_OK) return 3;\n"
             "  return (y[0] == 2 * 6 && y[1] == 5 * 5) ? 0 : 4;\n"
             "}\n");
  ProcessResult build = run_process({"c++", "-std=c++17", "-O1", "-fopenmp", "-I", dir.path(), "-o", dir.file("prog"),
                                     dir.file("main.cpp"), dir.file("sddmm_csr.cpp")});
  INFO(build.err);
  REQUIRE(build.exit_code == 0);
  CHECK(run_process({dir.file("prog")}).exit_code == 0);
}

TEST_CASE("spgen run: a specialized kernel takes its fixed size as the default and refuses another, naming both") {
  TempDir dir;
  write_text(dir.file("x.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n3 1 2.0\n");
  ProcessResult ok = spgen({"run", spec("sddmm.spg"), "--config", spec("sddmm_csr.json"), "--size", "k=5", kQuickBuild,
                            "--input", "X=" + dir.file("x.mtx"), "--input", "A=random", "--input", "B=random",
                            "--save-input", "A=" + dir.file("a.mtx")});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.err.find("not fixed by any input") == std::string::npos);  // k is the kernel's
  CHECK(read_text(dir.file("a.mtx")).find("\n3 5\n") != std::string::npos);
  ProcessResult other = spgen({"run", spec("sddmm.spg"), "--config", spec("sddmm_csr.json"), "--size", "k=5", kQuickBuild,
                               "--input", "X=" + dir.file("x.mtx"), "--input", "A=random", "--input", "B=random", "--dim", "k=6"});
  CHECK(other.exit_code == 1);
  CHECK(other.err.find("size of index k: the kernel is specialized for k = 5 but --dim sets 6") != std::string::npos);
  ProcessResult bad = spgen({"gen", spec("sddmm.spg"), "--config", spec("sddmm_csr.json"), "--size", "k", "--emit", "stage2"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err == "spgen: error: --size k: expected VAR=N with N a positive integer\n");
  ProcessResult unknown = spgen({"gen", spec("sddmm.spg"), "--config", spec("sddmm_csr.json"), "--size", "q=4", "--emit", "stage2"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err == "spgen: error: --size q=4: no index variable q in the spec (its index variables are: i, j, k)\n");
}

TEST_CASE("gen --stats NAME=FILE: auto reads the input's structure, the header names it; spgen run reads its --input files") {
  TempDir dir;
  write_text(dir.file("auto.json"), R"({"tensors": {"X": {"format": "csr"}}, "schedule": "auto"})");
  // A tridiagonal matrix (rows of B read near one another) and one whose entries lie ~1300 rows
  // from the diagonal (far apart).
  std::string band = "%%MatrixMarket matrix coordinate real general\n4000 4000 11998\n";
  std::string far = "%%MatrixMarket matrix coordinate real general\n4000 4000 4000\n";
  for (int i = 1; i <= 4000; ++i) {
    for (int j = std::max(1, i - 1); j <= std::min(4000, i + 1); ++j) band += std::to_string(i) + " " + std::to_string(j) + " 1\n";
    far += std::to_string(i) + " " + std::to_string((i * 1999) % 4000 + 1) + " 1\n";
  }
  write_text(dir.file("band.mtx"), band);
  write_text(dir.file("far.mtx"), far);
  auto header = [&](const std::string& stats) {
    return spgen({"gen", spec("sddmm.spg"), "--config", dir.file("auto.json"), "--size", "k=32", "--stats", stats, "--emit", "header"});
  };
  ProcessResult near = header("X=" + dir.file("band.mtx"));
  INFO(near.err);
  REQUIRE(near.exit_code == 0);
  CHECK(near.out.find("//   auto, from the statistics of\n//     X (band.mtx: 4000 x 4000, 11998 entries, 3.0 per row (at most 3), "
                      "mean |i - j| 1, equal row blocks within 1.00x of even)\n//   chose:\n") != std::string::npos);
  CHECK(near.out.find("prefetch") == std::string::npos);
  ProcessResult apart = header("X=" + dir.file("far.mtx"));
  REQUIRE(apart.exit_code == 0);
  CHECK(apart.out.find("//   prefetch(B at j, 8 ahead): the rows of B read at X's coordinates lie far apart") != std::string::npos);
  // Bad flags and files: precise errors, exit 1.
  ProcessResult form = header("X");
  CHECK(form.exit_code == 1);
  CHECK(form.err == "spgen: error: --stats X: expected NAME=FILE (a .mtx or .tns file of input NAME)\n");
  ProcessResult missing = header("X=" + dir.file("none.mtx"));
  CHECK(missing.exit_code == 1);
  CHECK(missing.err == "spgen: error: --stats X=" + dir.file("none.mtx") + ": " + dir.file("none.mtx") + ":0: cannot open file\n");
  write_text(dir.file("bad.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 9 1\n");
  ProcessResult corrupt = header("X=" + dir.file("bad.mtx"));
  CHECK(corrupt.exit_code == 1);
  CHECK(corrupt.err.rfind("spgen: error: --stats X=" + dir.file("bad.mtx") + ": " + dir.file("bad.mtx") + ":3: ", 0) == 0);
  ProcessResult dense = header("B=" + dir.file("band.mtx"));
  CHECK(dense.exit_code == 1);
  CHECK(dense.err.find("B is stored dense (dense): statistics describe the structure of a sparse input") != std::string::npos);
  // spgen run: the kernel it builds is auto's for these inputs, and still right.
  ProcessResult run = spgen({"run", spec("sddmm.spg"), "--config", dir.file("auto.json"), kQuickBuild, "--keep", dir.file("kept"),
                             "--input", "X=" + dir.file("band.mtx"), "--input", "A=random", "--input", "B=random", "--dim", "k=32",
                             "--output", "Y=" + dir.file("y.mtx")});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::string kept = read_text(dir.file("kept") + "/sddmm.h");
  CHECK(kept.find("//     X (band.mtx: 4000 x 4000, 11998 entries") != std::string::npos);
  CHECK(kept.find("prefetch") == std::string::npos);
}

TEST_CASE("gen --check writes nothing: exit 0 when the files are what gen writes, else a unified diff and exit 1") {
  TempDir dir;
  const std::vector<std::string> gen = {"gen", spec("spmv.spg"), "--config", spec("spmv_csr.json"), "-o", dir.path()};
  std::vector<std::string> check = gen;
  check.push_back("--check");
  ProcessResult missing = spgen(check);
  CHECK(missing.exit_code == 1);
  CHECK(missing.out == "missing: " + dir.file("spmv_csr.h") + "\nmissing: " + dir.file("spmv_csr.cpp") + "\n");
  CHECK(!std::filesystem::exists(dir.file("spmv_csr.h")));  // nothing written
  REQUIRE(spgen(gen).exit_code == 0);
  ProcessResult same = spgen(check);
  CHECK(same.exit_code == 0);
  CHECK(same.out.empty());
  std::string source = read_text(dir.file("spmv_csr.cpp"));
  const std::string pragma = "schedule(dynamic, 64)";
  REQUIRE(source.find(pragma) != std::string::npos);
  source.replace(source.find(pragma), pragma.size(), "schedule(static)");
  write_text(dir.file("spmv_csr.cpp"), source);
  ProcessResult changed = spgen(check);
  CHECK(changed.exit_code == 1);
  CHECK(changed.out.find("--- " + dir.file("spmv_csr.cpp") + "\n+++ " + dir.file("spmv_csr.cpp") + " (generated)\n@@ ") == 0);
  CHECK(changed.out.find("\n-  #pragma omp parallel for schedule(static)\n+  #pragma omp parallel for schedule(dynamic, 64)\n") !=
        std::string::npos);
  CHECK(read_text(dir.file("spmv_csr.cpp")) == source);  // still as edited
  CHECK(spgen({"gen", spec("spmv.spg"), "--config", spec("spmv_csr.json"), "--check", "--emit", "stage2"}).exit_code != 0);
}

// spgen tune refuses what it cannot tune before measuring anything: exit 1, one precise line, no
// tuned config written.
TEST_CASE("tune: bad budgets, pinned schedules, inputs that do not fit the spec, unwritable output") {
  TempDir dir;
  const std::string out = dir.file("tuned.json");
  const std::string cases = source_root() + "/tests/e2e/cases/";
  auto tune = [&](std::vector<std::string> extra, const std::string& config = "") {
    std::vector<std::string> args = {"tune", spec("spmv.spg"), "-c", config.empty() ? cases + "spmv_auto_csr.json" : config,
                                     "--db", "off"};
    args.insert(args.end(), extra.begin(), extra.end());
    return spgen(args);
  };
  auto refused = [&](const ProcessResult& r, const std::string& message) {
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(!std::filesystem::exists(out));
  };
  refused(tune({"--input", "A=random", "--input", "x=random", "--budget", "soon", "-o", out}),
          "spgen tune: error: --budget soon: expected a positive duration such as 60s, 2m or 90 (seconds)\n");
  refused(tune({"--input", "A=random", "--input", "x=random", "--budget", "-5s", "-o", out}), "--budget -5s: expected a positive duration");
  refused(tune({"--input", "A=random", "--input", "x=random", "-o", out}, spec("spmv_csr.json")),
          "the schedule is pinned: nothing to tune (write \"schedule\": \"auto\"");
  refused(tune({"--input", "A=random", "-o", out}), "spgen tune: error: no --input for x (give NAME=FILE, or NAME=random");
  refused(tune({"--input", "A=random", "--input", "x=random", "--input", "Q=random", "-o", out}),
          "spgen tune: error: --input Q=random: the spec has no input \"Q\"");
  refused(tune({"--input", "A=" + dir.file("missing.mtx"), "--input", "x=random", "-o", out}), "no such file: " + dir.file("missing.mtx"));
  refused(tune({"--input", "A=random", "--input", "x=random", "--dim", "j=zero", "-o", out}), "--dim j=zero: expected a positive size");
  refused(tune({"--input", "A=random", "--input", "x=random", "-o", dir.file("no/such/dir/tuned.json")}), "cannot write into");
  refused(tune({"--input", "A=random", "--input", "x=random", "--target", "cuda", "-o", out}), "the cuda target is not tuned yet");
  // A corrupt matrix: auto's own run fails, and says why.
  write_text(dir.file("bad.mtx"), "%%MatrixMarket matrix coordinate real general\n3 3 1\n4 1 1.0\n");
  ProcessResult r = tune({"--input", "A=" + dir.file("bad.mtx"), "--input", "x=random", "--budget", "5s", "-o", out});
  refused(r, "spgen tune: error: auto's kernel failed on these inputs: the driver failed");
}
