// The cuda target without a GPU: every cuda config in specs/ generates a .cu that nvcc compiles
// warning-free for sm_90 and sm_80 and a header that plain C and C++ compile; two generated
// kernels link into one program; `spgen run` builds its CUDA driver. Where a GPU is usable, the
// linked program also checks two kernels' results. Without nvcc the nvcc parts are skipped
// (MESSAGE "skipped: nvcc not found") and the test passes.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "frontend/config.h"
#include "frontend/parser.h"
#include "lower.h"
#include "process.h"
#include "spec_pairs.h"
#include "support/files.h"

using namespace spgen_test;

namespace {

// /usr/local/cuda/bin/nvcc, else nvcc from PATH, else "".
std::string find_nvcc() {
  if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((dir + "/nvcc").c_str(), X_OK) == 0) return dir + "/nvcc";
  return "";
}

std::vector<SpecConfigPair> cuda_pairs() {
  std::string root = source_root();
  std::vector<SpecConfigPair> pairs;
  for (const SpecConfigPair& pair : spec_config_pairs({root + "/specs"}, root + "/specs")) {
    spgen::ast::Spec spec = spgen::parse_spec(pair.spec, spgen::read_file(pair.spec));
    if (spgen::read_config(pair.config, spgen::read_file(pair.config), spec, pair.name).target == spgen::Target::Cuda)
      pairs.push_back(pair);
  }
  // Specs of several statements too (tests/e2e/statements), their executors host code.
  const std::string statements = root + "/tests/e2e/statements";
  for (const SpecConfigPair& pair : spec_config_pairs({statements}, statements))
    if (spgen::compile({pair.spec, spgen::read_file(pair.spec), pair.config, spgen::read_file(pair.config), std::nullopt, {}}).config.target ==
        spgen::Target::Cuda)
      pairs.push_back(pair);
  return pairs;
}

SpecConfigPair pair_named(const std::string& name) {
  for (const SpecConfigPair& pair : cuda_pairs())
    if (pair.name == name) return pair;
  FAIL("no cuda config named " << name << " in specs/");
  return {};
}

void generate(const SpecConfigPair& pair, const TempDir& dir) {
  ProcessResult r = run_process({spgen_binary(), "gen", pair.spec, "--config", pair.config, "-o", dir.path()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

// One nvcc run builds the device code for sm_90 and sm_80 (the host code is compiled once).
std::vector<std::string> nvcc_for_both_archs(const std::string& nvcc, const std::string& host_warnings,
                                             const std::string& object, const std::string& source) {
  return {nvcc, "-c", "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_80,code=sm_80",
          "-Xcompiler", host_warnings, "-o", object, source};
}

// Runs the commands two at a time: nvcc is slow, and memory-hungry when many run at once.
std::vector<ProcessResult> run_two_at_a_time(const std::vector<std::vector<std::string>>& commands) {
  std::vector<ProcessResult> results(commands.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < commands.size(); i = next++) results[i] = run_process(commands[i]);
  };
  std::thread first(worker), second(worker);
  first.join();
  second.join();
  return results;
}

std::string joined(const std::vector<std::string>& command) {
  std::string out;
  for (const std::string& word : command) out += (out.empty() ? "" : " ") + word;
  return out;
}

// Exit status 0 and not a single warning.
void check_clean(const std::vector<std::string>& command, const ProcessResult& result) {
  CAPTURE(joined(command));
  INFO(result.out << result.err);
  CHECK(result.exit_code == 0);
  CHECK((result.out + result.err).find("warning") == std::string::npos);
}

}  // namespace

TEST_CASE("every cuda config compiles warning-free for sm_90 and sm_80, and its header as plain C and C++") {
  std::vector<SpecConfigPair> pairs = cuda_pairs();
  REQUIRE(pairs.size() >= 5);
  TempDir dir;
  std::vector<std::vector<std::string>> commands;
  for (const SpecConfigPair& pair : pairs) {
    generate(pair, dir);
    std::string header = dir.file(pair.name + ".h");
    commands.push_back({"c++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-x", "c++", header});
    commands.push_back({"cc", "-std=c99", "-fsyntax-only", "-Wall", "-Wextra", "-x", "c", header});
  }
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) MESSAGE("skipped: nvcc not found");
  else
    for (const SpecConfigPair& pair : pairs)
      commands.push_back(nvcc_for_both_archs(nvcc, "-Wall", dir.file(pair.name + ".o"), dir.file(pair.name + ".cu")));
  std::vector<ProcessResult> results = run_two_at_a_time(commands);
  for (size_t i = 0; i < commands.size(); ++i) check_clean(commands[i], results[i]);
}

TEST_CASE("kernels with row workspaces (SpGEMM, TTM: device workspaces and sort) or entry lists (C = A^T B, csc from csr, A^T B + D: device merge sort, a part's own listing kernels, the parallel packing, ELL slots by rank included) compile warning-free for sm_90 and sm_80") {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) {
    MESSAGE("skipped: nvcc not found");
    return;
  }
  std::string cases = source_root() + "/tests/e2e/cases/";
  TempDir dir;
  std::vector<std::vector<std::string>> commands;
  for (const auto& [spec, config] : {std::pair<std::string, std::string>{source_root() + "/specs/spgemm.spg", "spgemm_cuda_csr_out"},
                                     {cases + "ttm.spg", "ttm_cuda_dense_compressed_compressed_out"},
                                     {cases + "spgemm_transposed.spg", "spgemm_transposed_cuda_dcsr_out"},
                                     {source_root() + "/specs/spgemm.spg", "spgemm_cuda_csr_csr_csc_out"},
                                     {cases + "spgemm_transposed_bias.spg", "spgemm_transposed_bias_cuda_dcsr_out"},
                                     {cases + "spgemm_transposed.spg", "spgemm_transposed_cuda_ell_out"},
                                     {cases + "tensor_add.spg", "tensor_add_cuda_dense_ell_compressed_out"},
                                     {cases + "tensor_add.spg", "tensor_add_cuda_ell_ell_compressed_out"},
                                     {cases + "edge_features.spg", "edge_features_cuda_csc_coo_rows_out"}}) {
    generate({spec, cases + config + ".json", config}, dir);
    commands.push_back(nvcc_for_both_archs(nvcc, "-Wall,-Wextra", dir.file(config + ".o"), dir.file(config + ".cu")));
  }
  std::vector<ProcessResult> results = run_two_at_a_time(commands);
  for (size_t i = 0; i < commands.size(); ++i) check_clean(commands[i], results[i]);
}

TEST_CASE("two generated kernels link into one program (relocatable device code) with their host pack routines, and run where a GPU is") {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) {
    MESSAGE("skipped: nvcc not found");
    return;
  }
  TempDir dir;
  generate(pair_named("spmv_csr_cuda"), dir);
  generate(pair_named("spmv_csc_cuda"), dir);
  // A = [[0, 2], [3, 0]] by rows (float32, int32) and by columns (float64, int64); x = [5, 7].
  // The kernels' own host routines pack A from unsorted COO first (checked with or without a GPU).
  write_text(dir.file("main.cu"),
             "#include \"spmv_csr_cuda.h\"\n#include \"spmv_csc_cuda.h\"\n#include <cuda_runtime.h>\n"
             "template <class T> T* on_device(const T* host, size_t n) {\n"
             "  T* device = nullptr;\n"
             "  if (cudaMalloc(&device, n * sizeof(T)) != cudaSuccess) return nullptr;\n"
             "  return cudaMemcpy(device, host, n * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess ? device : nullptr;\n"
             "}\n"
             "template <class T> bool same(const T* a, const T* b, int n) {\n"
             "  for (int k = 0; k < n; ++k) if (a[k] != b[k]) return false;\n"
             "  return true;\n"
             "}\n"
             "int main() {\n"
             "  const int64_t coords[] = {1, 0, 0, 1}, dims[] = {2, 2}; const float fv[] = {3, 2}; const double dv[] = {3, 2};\n"
             "  int64_t n[3], cn[3];\n"
             "  int32_t pos[3], crd[2]; float a[2]; int64_t cpos[3], ccrd[2]; double ca[2];\n"
             "  if (spmv_csr_cuda_pack_A_sizes(2, coords, dims, n) != SPGEN_OK || n[0] != 3 || n[1] != 2 || n[2] != 2) return 3;\n"
             "  if (spmv_csr_cuda_pack_A(2, coords, fv, dims, pos, crd, a, n) != SPGEN_OK) return 3;\n"
             "  if (spmv_csc_cuda_pack_A_sizes(2, coords, dims, cn) != SPGEN_OK || cn[0] != 3 || cn[1] != 2 || cn[2] != 2) return 3;\n"
             "  if (spmv_csc_cuda_pack_A(2, coords, dv, dims, cpos, ccrd, ca, cn) != SPGEN_OK) return 3;\n"
             "  const int32_t want_pos[] = {0, 1, 2}, want_crd[] = {1, 0}; const float want_a[] = {2, 3};\n"
             "  const int64_t want_cpos[] = {0, 1, 2}, want_ccrd[] = {1, 0}; const double want_ca[] = {3, 2};\n"
             "  if (!same(pos, want_pos, 3) || !same(crd, want_crd, 2) || !same(a, want_a, 2)) return 3;\n"
             "  if (!same(cpos, want_cpos, 3) || !same(ccrd, want_ccrd, 2) || !same(ca, want_ca, 2)) return 3;\n"
             "  const float x[] = {5, 7}, y0[] = {-1, -1}; const double cx[] = {5, 7}, cy0[] = {-1, -1};\n"
             "  int32_t *dpos = on_device(pos, 3), *dcrd = on_device(crd, 2); float *da = on_device(a, 2), *dx = on_device(x, 2);\n"
             "  int64_t *dcpos = on_device(cpos, 3), *dccrd = on_device(ccrd, 2);\n"
             "  double *dca = on_device(ca, 2), *dcx = on_device(cx, 2);\n"
             "  float* dy = on_device(y0, 2); double* dcy = on_device(cy0, 2);\n"
             "  if (!dpos || !dcrd || !da || !dx || !dcpos || !dccrd || !dca || !dcx || !dy || !dcy) return 2;  // no GPU\n"
             "  if (spmv_csr_cuda(2, 2, dy, dpos, dcrd, da, dx, 0) != 0) return 1;\n"
             "  if (spmv_csc_cuda(2, 2, dcy, dcpos, dccrd, dca, dcx, 0) != 0) return 1;\n"
             "  float y[2]; double cy[2];\n"
             "  if (cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;\n"
             "  if (cudaMemcpy(cy, dcy, sizeof cy, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;\n"
             "  return y[0] == 14 && y[1] == 15 && cy[0] == 14 && cy[1] == 15 ? 0 : 1;\n"
             "}\n");
  std::vector<std::string> build = {nvcc, "-arch=sm_80", "-rdc=true", "-Xcompiler", "-Wall", "-I", dir.path(),
                                    "-o", dir.file("prog"), dir.file("main.cu"), dir.file("spmv_csr_cuda.cu"),
                                    dir.file("spmv_csc_cuda.cu")};
  ProcessResult linked = run_process(build);
  check_clean(build, linked);
  REQUIRE(linked.exit_code == 0);
  int status = run_process({dir.file("prog")}).exit_code;
  CHECK(status != 3);  // the pack routines gave other arrays
  if (status == 2) MESSAGE("not run: no usable CUDA device");
  else CHECK(status == 0);
}

TEST_CASE("a BSR kernel's host pack and unpack routines, compiled by nvcc, pack blocks with padding and read them back") {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) {
    MESSAGE("skipped: nvcc not found");
    return;
  }
  TempDir dir;
  generate(pair_named("spmm_bsr_cuda"), dir);
  // A is 5 x 6 in 4x4 blocks (2 x 2 block grid, the last ones partial): (0,0) = 1, (1,2) = 3 + 4
  // (repeated), (4,5) = 2. Stored blocks: (0,0) and (1,1), row-major inside, padding zero.
  write_text(dir.file("main.cu"),
             "#include \"spmm_bsr_cuda.h\"\n"
             "int main() {\n"
             "  const int64_t coords[] = {4, 5, 1, 2, 0, 0, 1, 2}, dims[] = {5, 6}; const float vals[] = {2, 3, 1, 4};\n"
             "  int64_t n[3];\n"
             "  if (spmm_bsr_cuda_pack_A_sizes(4, coords, dims, n) != SPGEN_OK) return 1;\n"
             "  if (n[0] != 3 || n[1] != 2 || n[2] != 32) return 2;\n"
             "  int32_t pos[3], crd[2]; float a[32];\n"
             "  if (spmm_bsr_cuda_pack_A(4, coords, vals, dims, pos, crd, a, n) != SPGEN_OK) return 3;\n"
             "  if (pos[0] != 0 || pos[1] != 1 || pos[2] != 2 || crd[0] != 0 || crd[1] != 1) return 4;\n"
             "  for (int k = 0; k < 32; ++k)\n"
             "    if (a[k] != (k == 0 ? 1.0f : k == 6 ? 7.0f : k == 17 ? 2.0f : 0.0f)) return 5;\n"
             "  // Unpack: the 16 entries of block (0,0), and of block (1,1) the 2 inside the matrix.\n"
             "  int64_t nnz = 0, out[36]; float out_vals[18];\n"
             "  if (spmm_bsr_cuda_unpack_A(dims, pos, crd, a, n, &nnz, nullptr, nullptr) != SPGEN_OK || nnz != 18) return 6;\n"
             "  if (spmm_bsr_cuda_unpack_A(dims, pos, crd, a, n, &nnz, out, out_vals) != SPGEN_OK || nnz != 18) return 7;\n"
             "  if (out[32] != 4 || out[33] != 4 || out[34] != 4 || out[35] != 5 || out_vals[17] != 2) return 8;\n"
             "  crd[1] = 2;  // a block column past the 2 there are\n"
             "  return spmm_bsr_cuda_unpack_A(dims, pos, crd, a, n, &nnz, nullptr, nullptr) == SPGEN_ERR_COORD_RANGE ? 0 : 9;\n"
             "}\n");
  std::vector<std::string> build = {nvcc, "-arch=sm_80", "-Xcompiler", "-Wall", "-I", dir.path(), "-o", dir.file("prog"),
                                    dir.file("main.cu"), dir.file("spmm_bsr_cuda.cu")};
  ProcessResult built = run_process(build);
  check_clean(build, built);
  REQUIRE(built.exit_code == 0);
  CHECK(run_process({dir.file("prog")}).exit_code == 0);  // host code only: runs without a GPU
}

TEST_CASE("spgen run builds the CUDA driver with nvcc, warning-free") {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) {
    MESSAGE("skipped: nvcc not found");
    return;
  }
  // SpMV; SDDMM, whose output shares the structure of X and so its device arrays; BSR SpMM.
  std::vector<std::pair<std::string, std::vector<std::string>>> kernels = {
      {"spmv_csr_cuda", {"--input", "A=random", "--input", "x=random", "--dim", "i=100", "--dim", "j=80"}},
      {"sddmm_csr_cuda", {"--input", "X=random", "--input", "A=random", "--input", "B=random", "--dim", "i=100",
                          "--dim", "j=80", "--dim", "k=32"}},
      // BSR, which only the kernel's own pack routine can pack.
      {"spmm_bsr_cuda", {"--input", "A=random", "--input", "B=random", "--dim", "i=50", "--dim", "j=30", "--dim", "k=32"}},
  };
  TempDir dir;
  std::vector<std::vector<std::string>> runs;
  for (const auto& [name, inputs] : kernels) {
    SpecConfigPair pair = pair_named(name);
    std::vector<std::string> run = {spgen_binary(), "run", pair.spec, "--config", pair.config, "--keep",
                                    dir.file(name), "--repeat", "3"};
    run.insert(run.end(), inputs.begin(), inputs.end());
    runs.push_back(run);
  }
  std::vector<ProcessResult> results = run_two_at_a_time(runs);
  std::vector<std::vector<std::string>> compiles;
  for (size_t k = 0; k < kernels.size(); ++k) {
    CAPTURE(joined(runs[k]));
    INFO(results[k].err);
    std::string kept = dir.file(kernels[k].first);
    REQUIRE(std::filesystem::exists(kept + "/driver"));  // nvcc built it
    const std::string& err = results[k].err;
    bool no_gpu = err.find("CUDA driver") != std::string::npos || err.find("CUDA-capable device") != std::string::npos;
    if (results[k].exit_code == 0) CHECK(results[k].out.find("time_ms median=") != std::string::npos);
    else if (no_gpu) MESSAGE("driver not run: " << err);
    else CHECK(results[k].exit_code == 0);
    compiles.push_back({nvcc, "-std=c++17", "-c", "-arch=sm_80", "-Xcompiler", "-Wall", "-I", kept, "-o",
                        kept + "/driver.o", kept + "/run_driver.cu"});
  }
  std::vector<ProcessResult> compiled = run_two_at_a_time(compiles);
  for (size_t i = 0; i < compiles.size(); ++i) check_clean(compiles[i], compiled[i]);
}

TEST_CASE("bench/gpu: the benchmark against cuSPARSE compiles with the kernels bench/gpu/prepare.sh generates") {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) {
    MESSAGE("skipped: nvcc not found");
    return;
  }
  TempDir dir;
  std::string root = source_root();
  // No matrices: prepare.sh copies them only where the data directory exists.
  ProcessResult prepared = run_process({root + "/bench/gpu/prepare.sh", spgen_binary(), dir.file("gen"), dir.file("no-data")});
  INFO(prepared.err);
  REQUIRE(prepared.exit_code == 0);
  ProcessResult compiled = run_process({nvcc, "-std=c++17", "-arch=sm_90", "-I", dir.file("gen"), "-c",
                                        root + "/bench/gpu/bench_gpu.cu", "-o", dir.file("bench_gpu.o")});
  INFO(compiled.err);
  CHECK(compiled.exit_code == 0);
  CHECK(compiled.err.find("warning") == std::string::npos);
}
