// bench_kernels: spgen's generated SpMV, SpMM, SDDMM, SpGEMM and sparse-add kernels against Eigen 3, SuiteSparse:
// GraphBLAS 7 (and Intel MKL when the build found it), on the matrices of ../shared/data plus a
// large synthetic matrix, float32 values, int32 indices for spgen/Eigen/MKL (GraphBLAS stores
// int64), the same number of threads for everyone, all in one run. Also STREAM triad.
//
// Run from the repository root: ./build/bench/bench_kernels [options]; --help lists them.
// Each figure is the median of >= --runs timed calls (after warm-up calls), each call timed
// alone; every peer's output is checked against spgen's once per matrix and operation, and
// spgen's against an fp64 reference on a sample of rows.
#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

extern "C" {
#include <GraphBLAS.h>
}
#ifdef BENCH_HAVE_MKL
#include <mkl.h>
#include <mkl_spblas.h>
#endif

#include "spgen_run_runtime.hpp"
#include "hyb_adapters.h"
#include "tuned_kernels.h"

// The generated kernels (bench/configs/*.json, generated at build time by bench/meson.build).
#include "add_b_dyn64.h"
#include "sddmm_b_auto.h"
#include "sddmm_b_auto_pf8.h"
#include "sddmm_b_auto_pf8_nnz.h"
#include "sddmm_b_dyn128.h"
#include "sddmm_b_dyn16.h"
#include "sddmm_b_dyn16_novec.h"
#include "sddmm_b_dyn64.h"
#include "sddmm_b_dyn2.h"
#include "sddmm_b_guided.h"
#include "sddmm_b_k128_lanes16.h"
#include "sddmm_b_k128_lanes32.h"
#include "sddmm_b_k32_lanes16.h"
#include "sddmm_b_k32_lanes32.h"
#include "sddmm_b_k128_pf16.h"
#include "sddmm_b_k128_pf4.h"
#include "sddmm_b_k128_pf8.h"
#include "sddmm_b_k32_pf16.h"
#include "sddmm_b_k32_pf4.h"
#include "sddmm_b_k32_pf8.h"
#include "sddmm_b_lanes16.h"
#include "sddmm_b_static.h"
#include "spgemm_b_dyn64.h"
#include "spmm_b_auto.h"
#include "spmm_b_dyn128.h"
#include "spmm_b_dyn16.h"
#include "spmm_b_dyn16_novec.h"
#include "spmm_b_dyn16_unroll4.h"
#include "spmm_b_guided.h"
#include "spmm_b_pre16.h"
#include "spmm_b_pre32.h"
#include "spmm_b_pre32_n128.h"
#include "spmm_b_pre32_n32.h"
#include "spmm_b_pre32_n128_pf8.h"
#include "spmm_b_pre32_n32_pf8.h"
#include "spmm_b_split32.h"
#include "spmm_b_static.h"
#include "spmm_b_tile16.h"
#include "spmm_b_tile32.h"
#include "spmv_b_auto.h"
#include "spmv_b_auto_static.h"
#include "spmv_b_auto_nnz.h"
#include "spmv_b_auto_lanes8.h"
#include "spmv_b_auto_lanes4.h"
#include "spmv_b_auto_lanes8_static.h"
#include "spmv_b_auto_lanes8_nnz.h"
#include "spmv_b_serial_lanes8.h"
#include "spmv_b_dyn512.h"
#include "spmv_b_dyn512_unroll4.h"
#include "spmv_b_dyn512_vec.h"
#include "spmv_b_dyn64.h"
#include "spmv_b_guided.h"
#include "spmv_b_static.h"
#include "spmv_b_static_lanes8.h"
#include "spmv_b_static_vec.h"

namespace {

using Clock = std::chrono::steady_clock;

// ---- kernel variants ------------------------------------------------------------------------

using SpmvFn = void (*)(int64_t, int64_t, float*, const int32_t*, const int32_t*, const float*, const float*);
using SpmmFn = void (*)(int64_t, int64_t, int64_t, float*, const int32_t*, const int32_t*, const float*, const float*);
using SddmmFn = void (*)(int64_t, int64_t, int64_t, float*, const int32_t*, const int32_t*, const float*, const float*,
                         const float*);
// Kernels specialized for one width ("sizes" in their configs) return a status; a variant of
// them dispatches on the width to the kernel generated for it (32 or 128).
void check_sized(int status, int64_t width) {
  if (status == 0) return;
  std::fprintf(stderr, "bench_kernels: no kernel specialized for width %lld (status %d)\n", static_cast<long long>(width), status);
  std::exit(2);
}
using SizedSpmmFn = int (*)(int64_t, int64_t, int64_t, float*, const int32_t*, const int32_t*, const float*, const float*);
using SizedSddmmFn = int (*)(int64_t, int64_t, int64_t, float*, const int32_t*, const int32_t*, const float*, const float*,
                             const float*);
template <SizedSpmmFn n32, SizedSpmmFn n128>
void spmm_by_width(int64_t n, int64_t N, int64_t m, float* C, const int32_t* pos, const int32_t* crd, const float* a, const float* B) {
  check_sized(N == 32 ? n32(n, N, m, C, pos, crd, a, B) : N == 128 ? n128(n, N, m, C, pos, crd, a, B) : -1, N);
}
template <SizedSddmmFn k32, SizedSddmmFn k128>
void sddmm_by_width(int64_t n, int64_t m, int64_t K, float* Y, const int32_t* pos, const int32_t* crd, const float* x,
                    const float* A, const float* B) {
  check_sized(K == 32 ? k32(n, m, K, Y, pos, crd, x, A, B) : K == 128 ? k128(n, m, K, Y, pos, crd, x, A, B) : -1, K);
}

template <class F>
struct Variant {
  const char* name;
  F fn;
};

// The first entry of each list is the schedule used in the peer comparison (chosen from a
// --sweep run over all matrices; see bench/RESULTS.md). --spmv/--spmm/--sddmm override it.
const std::vector<Variant<SpmvFn>> kSpmv = {
    {"spmv_b_static", spmv_b_static},
    {"spmv_b_dyn64", spmv_b_dyn64},
    {"spmv_b_dyn512", spmv_b_dyn512},
    {"spmv_b_guided", spmv_b_guided},
    {"spmv_b_dyn512_vec", spmv_b_dyn512_vec},
    {"spmv_b_static_vec", spmv_b_static_vec},
    {"spmv_b_dyn512_unroll4", spmv_b_dyn512_unroll4},
    {"spmv_b_static_lanes8", spmv_b_static_lanes8},
    {"spmv_b_hyb", spmv_b_hyb_csr},
    {"spmv_b_hyb_il16", spmv_b_hyb_il16_csr},
    {"spmv_b_sell8", spmv_b_sell8_csr},
    {"spmv_b_sell16", spmv_b_sell16_csr},
    {"spmv_b_ell4_il16", spmv_b_ell4_il16_csr},
    {"spmv_b_bsr3", spmv_b_bsr3_csr},
    {"spmv_b_auto_formats", spmv_b_auto_formats_csr},
    {"spmv_b_auto", spmv_b_auto},
    {"spmv_b_auto_static", spmv_b_auto_static},
    {"spmv_b_auto_nnz", spmv_b_auto_nnz},
    {"spmv_b_auto_lanes8", spmv_b_auto_lanes8},
    {"spmv_b_auto_lanes4", spmv_b_auto_lanes4},
    {"spmv_b_auto_lanes8_static", spmv_b_auto_lanes8_static},
    {"spmv_b_auto_lanes8_nnz", spmv_b_auto_lanes8_nnz},
    {"spmv_b_serial_lanes8", spmv_b_serial_lanes8},
};
const std::vector<Variant<SpmmFn>> kSpmm = {
    {"spmm_b_pre32_sized", spmm_by_width<spmm_b_pre32_n32, spmm_b_pre32_n128>},
    {"spmm_b_pre32", spmm_b_pre32},
    {"spmm_b_guided", spmm_b_guided},
    {"spmm_b_dyn16", spmm_b_dyn16},
    {"spmm_b_split32", spmm_b_split32},
    {"spmm_b_dyn128", spmm_b_dyn128},
    {"spmm_b_static", spmm_b_static},
    {"spmm_b_dyn16_novec", spmm_b_dyn16_novec},
    {"spmm_b_dyn16_unroll4", spmm_b_dyn16_unroll4},
    {"spmm_b_tile16", spmm_b_tile16},
    {"spmm_b_tile32", spmm_b_tile32},
    {"spmm_b_pre16", spmm_b_pre16},
    {"spmm_b_hyb", spmm_b_hyb_csr},
    {"spmm_b_auto", spmm_b_auto},
    {"spmm_b_pre32_sized_pf8", spmm_by_width<spmm_b_pre32_n32_pf8, spmm_b_pre32_n128_pf8>},
};
const std::vector<Variant<SddmmFn>> kSddmm = {
    {"sddmm_b_sized_pf8", sddmm_by_width<sddmm_b_k32_pf8, sddmm_b_k128_pf8>},
    {"sddmm_b_sized", sddmm_by_width<sddmm_b_k32_lanes16, sddmm_b_k128_lanes32>},  // the sweep's best lanes per width
    {"sddmm_b_lanes16", sddmm_b_lanes16},
    {"sddmm_b_guided", sddmm_b_guided},
    {"sddmm_b_dyn16", sddmm_b_dyn16},
    {"sddmm_b_dyn2", sddmm_b_dyn2},
    {"sddmm_b_dyn128", sddmm_b_dyn128},
    {"sddmm_b_static", sddmm_b_static},
    {"sddmm_b_dyn16_novec", sddmm_b_dyn16_novec},
    {"sddmm_b_dyn64", sddmm_b_dyn64},
    {"sddmm_b_sized_lanes16", sddmm_by_width<sddmm_b_k32_lanes16, sddmm_b_k128_lanes16>},
    {"sddmm_b_sized_lanes32", sddmm_by_width<sddmm_b_k32_lanes32, sddmm_b_k128_lanes32>},
    {"sddmm_b_auto", sddmm_b_auto},
    {"sddmm_b_auto_pf8", sddmm_b_auto_pf8},
    {"sddmm_b_auto_pf8_nnz", sddmm_b_auto_pf8_nnz},
    {"sddmm_b_sized_pf4", sddmm_by_width<sddmm_b_k32_pf4, sddmm_b_k128_pf4>},
    {"sddmm_b_sized_pf16", sddmm_by_width<sddmm_b_k32_pf16, sddmm_b_k128_pf16>},
};

template <class F>
const Variant<F>& pick(const std::vector<Variant<F>>& list, const std::string& name) {
  if (name.empty()) return list.front();
  for (const Variant<F>& v : list)
    if (name == v.name) return v;
  std::fprintf(stderr, "bench_kernels: no variant %s\n", name.c_str());
  std::exit(2);
}

// ---- options ---------------------------------------------------------------------------------

struct Options {
  std::string data_dir;
  std::vector<std::string> matrices;  // empty: all
  bool synthetic = true;
  int64_t synthetic_rows = 4'000'000;
  int synthetic_min_row = 5, synthetic_max_row = 15;  // uniform row lengths: mean 10
  int64_t synthetic_band = 0;  // > 0: columns within this many of the diagonal (x read nearly in order)
  bool spmv = true, spmm = true, sddmm = true, spgemm = true, add = true;
  int runs = 10;          // at least this many timed calls
  double min_time = 0.3;  // and at least this many seconds of them (small matrices)
  int max_runs = 400;
  int threads = 2;
  bool sweep = false;  // time every spgen variant instead of comparing with peers
  bool stream = true;
  double wait_idle_s = 0;  // before each matrix, wait up to this long for other load to stop
  std::string spmv_variant, spmm_variant, sddmm_variant;
  std::vector<int64_t> widths = {32, 128};
  std::string tuned_dir;  // --tuned: kernels tuned per matrix (tuned_kernels.h), timed beside the rest
};

void usage() {
  std::printf(
      "usage: bench_kernels [options]\n"
      "  --data DIR            matrices (*.mtx); default ../shared/data, else <source>/../shared/data\n"
      "  --matrices a,b,...    only these (file stems; 'synthetic' is the generated one)\n"
      "  --no-synthetic        skip the large synthetic matrix\n"
      "  --synthetic-rows N    rows (= columns) of the synthetic matrix (default 4000000, 5..15 per row)\n"
      "  --synthetic-band B    its columns within B of the diagonal instead of anywhere: x read nearly in order,\n"
      "                        to tell the cost of its random gathers from the bandwidth (named synthetic-bandB)\n"
      "  --ops spmv,spmm,sddmm,spgemm,add   which operations (default all; spgemm is A*A, add is A+A^T)\n"
      "  --widths 32,128       dense widths N (SpMM) and K (SDDMM)\n"
      "  --runs N              minimum timed calls per measurement (default 10)\n"
      "  --min-time S          minimum seconds of timed calls per measurement (default 0.3)\n"
      "  --threads N           threads for everyone (default 2)\n"
      "  --sweep               time every spgen schedule variant (no peers)\n"
      "  --tuned DIR           also time the kernel spgen tune chose for each matrix and op, where DIR has\n"
      "                        it (DIR/spmv-M.so, spmm32-M.so, sddmm128-M.so, ...: bench/build_tuned.py)\n"
      "  --no-stream           skip STREAM triad\n"
      "  --wait-idle S         before each matrix, wait up to S s until other processes use < 0.1 core\n"
      "  --spmv V --spmm V --sddmm V   spgen variant for the peer comparison\n");
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    auto value = [&]() -> std::string {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "bench_kernels: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (arg == "--data") o.data_dir = value();
    else if (arg == "--matrices") o.matrices = split_list(value());
    else if (arg == "--no-synthetic") o.synthetic = false;
    else if (arg == "--synthetic-rows") o.synthetic_rows = std::atoll(value().c_str());
    else if (arg == "--synthetic-band") o.synthetic_band = std::max<int64_t>(0, std::atoll(value().c_str()));
    else if (arg == "--ops") {
      std::vector<std::string> ops = split_list(value());
      auto has = [&](const char* n) { return std::find(ops.begin(), ops.end(), n) != ops.end(); };
      o.spmv = has("spmv"), o.spmm = has("spmm"), o.sddmm = has("sddmm"), o.spgemm = has("spgemm"), o.add = has("add");
    } else if (arg == "--widths") {
      o.widths.clear();
      for (const std::string& w : split_list(value())) o.widths.push_back(std::atoll(w.c_str()));
    } else if (arg == "--runs") o.runs = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--min-time") o.min_time = std::atof(value().c_str());
    else if (arg == "--threads") o.threads = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--sweep") o.sweep = true;
    else if (arg == "--no-stream") o.stream = false;
    else if (arg == "--wait-idle") o.wait_idle_s = std::atof(value().c_str());
    else if (arg == "--spmv") o.spmv_variant = value();
    else if (arg == "--spmm") o.spmm_variant = value();
    else if (arg == "--sddmm") o.sddmm_variant = value();
    else if (arg == "--tuned") o.tuned_dir = value();
    else if (arg == "--help" || arg == "-h") usage(), std::exit(0);
    else {
      usage();
      std::exit(2);
    }
  }
  if (o.data_dir.empty()) {
    o.data_dir = "../shared/data";
    if (!std::filesystem::is_directory(o.data_dir)) o.data_dir = std::string(SPGEN_BENCH_SOURCE_ROOT) + "/../shared/data";
  }
  return o;
}

// ---- memory and data ---------------------------------------------------------------------------

// 64-byte aligned array, filled in parallel (first touch) by whoever creates it.
template <class T>
struct Array {
  T* p = nullptr;
  size_t n = 0;
  Array() = default;
  explicit Array(size_t count) : n(count) {
    size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
    p = static_cast<T*>(std::aligned_alloc(64, bytes ? bytes : 64));
    if (!p) {
      std::fprintf(stderr, "bench_kernels: out of memory (%zu bytes)\n", bytes);
      std::exit(3);
    }
  }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
  Array(Array&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr, o.n = 0; }
  Array& operator=(Array&& o) noexcept {
    std::swap(p, o.p), std::swap(n, o.n);
    return *this;
  }
  ~Array() { std::free(p); }
  T& operator[](size_t i) { return p[i]; }
  const T& operator[](size_t i) const { return p[i]; }
};

uint64_t mix(uint64_t z) {  // splitmix64 finalizer
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
float unit(uint64_t seed, uint64_t i) { return static_cast<float>(mix(seed * 0x100000001b3ULL + i) >> 40) / 16777216.0f; }

Array<float> random_array(size_t n, uint64_t seed, float lo = 0.0f, float hi = 1.0f) {
  Array<float> a(n);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) a[static_cast<size_t>(i)] = lo + (hi - lo) * unit(seed, static_cast<uint64_t>(i));
  return a;
}

struct Csr {
  std::string name;
  int64_t rows = 0, cols = 0;
  Array<int32_t> pos, crd;
  Array<float> vals;
  int64_t nnz() const { return pos[static_cast<size_t>(rows)]; }
};

// Values are replaced by random ones in [0.5, 1.5) (the graphs are patterns: all ones), so the
// checks compare real sums; positive inputs keep relative errors meaningful.
Csr load_mtx(const std::string& path) {
  spgen_run::Coo coo = spgen_run::read_tensor(path);
  if (coo.order() != 2) throw std::runtime_error(path + ": not a matrix");
  auto packed = spgen_run::pack<int32_t, float>(coo, {spgen_run::Level::Dense, spgen_run::Level::Compressed}, {0, 1});
  Csr m;
  m.name = std::filesystem::path(path).stem().string();
  m.rows = coo.dims[0], m.cols = coo.dims[1];
  m.pos = Array<int32_t>(packed.pos[1].size());
  m.crd = Array<int32_t>(packed.crd[1].size());
  m.vals = Array<float>(packed.vals.size());
  std::copy(packed.pos[1].begin(), packed.pos[1].end(), m.pos.p);
  std::copy(packed.crd[1].begin(), packed.crd[1].end(), m.crd.p);
  for (size_t e = 0; e < m.vals.n; ++e) m.vals[e] = 0.5f + unit(7, e);
  return m;
}

// rows x rows, row lengths uniform in [lo, hi], columns uniform at random (distinct, sorted), or
// with `band` > 0 uniform in [i - band, i + band] (wrapped around).
Csr synthetic(int64_t rows, int lo, int hi, int64_t band) {
  Csr m;
  m.name = band > 0 ? "synthetic-band" + std::to_string(band) : "synthetic";
  m.rows = m.cols = rows;
  m.pos = Array<int32_t>(static_cast<size_t>(rows) + 1);
  auto row_len = [&](int64_t i) { return lo + static_cast<int>(mix(0xabcdefULL + static_cast<uint64_t>(i)) % static_cast<uint64_t>(hi - lo + 1)); };
  // Prefix sum in two passes over per-thread blocks.
  int nt = omp_get_max_threads();
  std::vector<int64_t> block_sum(static_cast<size_t>(nt) + 1, 0);
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
    int64_t b = rows * t / nt, e = rows * (t + 1) / nt, s = 0;
    for (int64_t i = b; i < e; ++i) s += row_len(i);
    block_sum[static_cast<size_t>(t) + 1] = s;
#pragma omp barrier
#pragma omp single
    for (int k = 0; k < nt; ++k) block_sum[static_cast<size_t>(k) + 1] += block_sum[static_cast<size_t>(k)];
    int64_t run = block_sum[static_cast<size_t>(t)];
    for (int64_t i = b; i < e; ++i) {
      m.pos[static_cast<size_t>(i)] = static_cast<int32_t>(run);
      run += row_len(i);
    }
    if (t == nt - 1) m.pos[static_cast<size_t>(rows)] = static_cast<int32_t>(run);
  }
  const int64_t nnz = m.pos[static_cast<size_t>(rows)];
  m.crd = Array<int32_t>(static_cast<size_t>(nnz));
  m.vals = Array<float>(static_cast<size_t>(nnz));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    int32_t* c = m.crd.p + m.pos[static_cast<size_t>(i)];
    const int len = m.pos[static_cast<size_t>(i) + 1] - m.pos[static_cast<size_t>(i)];
    for (uint64_t attempt = 0;; ++attempt) {
      for (int k = 0; k < len; ++k) {
        const uint64_t draw = mix((static_cast<uint64_t>(i) << 20) ^ (attempt << 8) ^ static_cast<uint64_t>(k));
        c[k] = band > 0 ? static_cast<int32_t>((i - band + static_cast<int64_t>(draw % static_cast<uint64_t>(2 * band + 1)) + rows) % rows)
                        : static_cast<int32_t>(draw % static_cast<uint64_t>(rows));
      }
      std::sort(c, c + len);
      if (std::adjacent_find(c, c + len) == c + len) break;  // duplicates: draw again
    }
    for (int k = 0; k < len; ++k)
      m.vals[static_cast<size_t>(m.pos[static_cast<size_t>(i)] + k)] = 0.5f + unit(7, static_cast<uint64_t>(m.pos[static_cast<size_t>(i)] + k));
  }
  return m;
}

// CPU time used by other processes: busy jiffies of the whole machine (/proc/stat) minus this
// process's own (/proc/self/stat). Two cores, so other load directly steals from the benchmark.
struct CpuSample {
  double wall = 0, busy = 0, self = 0;  // seconds
};
CpuSample cpu_sample() {
  CpuSample c;
  c.wall = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  if (std::FILE* f = std::fopen("/proc/stat", "r")) {
    unsigned long long v[10] = {};
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
      c.busy = static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
    std::fclose(f);
  }
  if (std::FILE* f = std::fopen("/proc/self/stat", "r")) {
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    std::fclose(f);
    const char* q = std::strrchr(buf, ')');  // fields after the command name; utime, stime are 14, 15
    unsigned long long ut = 0, st = 0;
    if (q && std::sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
      c.self = static_cast<double>(ut + st) / hz;
  }
  return c;
}
// Average number of cores other processes kept busy between two samples.
double other_load(const CpuSample& a, const CpuSample& b) {
  double wall = b.wall - a.wall;
  return wall > 0 ? std::max(0.0, (b.busy - a.busy) - (b.self - a.self)) / wall : 0.0;
}
// Waits (at most max_s) until other processes use < 0.1 core over three 1-second windows.
void wait_idle(double max_s) {
  auto start = Clock::now();
  int quiet = 0;
  while (quiet < 3 && std::chrono::duration<double>(Clock::now() - start).count() < max_s) {
    CpuSample a = cpu_sample();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    quiet = other_load(a, cpu_sample()) < 0.1 ? quiet + 1 : 0;
  }
  double waited = std::chrono::duration<double>(Clock::now() - start).count();
  if (waited > 3.5) std::printf("  (waited %.0f s for the machine to be idle%s)\n", waited, quiet < 3 ? ", gave up" : "");
}

// ---- timing ----------------------------------------------------------------------------------

struct Stats {
  double median_ms = 0, min_ms = 0;
  int runs = 0;
};

struct Contender {
  std::string name;
  std::function<void()> call;
};

// Times the contenders interleaved: every round calls each one once, each call timed alone, so
// a burst of other load on the machine hits them all alike; the order changes from round to round. Warm-up first (one call for slow
// kernels, a few for fast ones); then rounds until there are >= o.runs of them and the fastest
// contender has run for >= o.min_time seconds (or o.max_runs rounds). Median per contender.
std::vector<Stats> time_interleaved_once(const Options& o, const std::vector<Contender>& cs);

// A measurement during which other processes kept more than 0.2 cores busy is repeated (after
// waiting for the machine to be idle, up to --wait-idle seconds) up to twice; the last one counts.
double g_last_other_load = 0;
std::vector<Stats> time_interleaved(const Options& o, const std::vector<Contender>& cs) {
  for (int attempt = 0;; ++attempt) {
    CpuSample a = cpu_sample();
    std::vector<Stats> st = time_interleaved_once(o, cs);
    g_last_other_load = other_load(a, cpu_sample());
    if (g_last_other_load <= 0.2 || attempt == 2 || o.wait_idle_s <= 0) return st;
    std::printf("    (other processes kept %.2f cores busy: measuring again)\n", g_last_other_load);
    wait_idle(o.wait_idle_s);
  }
}

std::vector<Stats> time_interleaved_once(const Options& o, const std::vector<Contender>& cs) {
  const size_t k = cs.size();
  double slowest = 0;
  for (const Contender& c : cs) {
    auto t0 = Clock::now();
    c.call();
    slowest = std::max(slowest, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const int warm = slowest > 200 ? 0 : slowest > 20 ? 1 : 5;
  for (int w = 0; w < warm; ++w)
    for (const Contender& c : cs) c.call();
  std::vector<std::vector<double>> ms(k);
  std::vector<double> total(k, 0.0);
  std::mt19937 shuffle_rng(12345);
  for (int r = 0;; ++r) {
    double min_total = *std::min_element(total.begin(), total.end());
    double max_total = *std::max_element(total.begin(), total.end());
    if (r >= o.max_runs || (r >= o.runs && (min_total >= o.min_time * 1e3 || max_total >= 4 * o.min_time * 1e3))) break;
    // Each round calls the contenders in an order of its own (a seeded shuffle), so that each
    // runs after each other one about equally often: a contender that always ran right after
    // another one's pass over the same arrays would find them in cache, and one that always
    // followed GraphBLAS (or a hyb kernel's other arrays) would not. (Rotating one fixed order
    // kept each contender behind the same predecessor: in session 25's SpMM sweep `spmm_b_auto`,
    // always after `spmm_b_hyb`, measured 1.2-1.4x slower than the same kernel timed by hand.)
    std::vector<size_t> order(k);
    for (size_t c = 0; c < k; ++c) order[c] = c;
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    for (size_t step = 0; step < k; ++step) {
      const size_t c = order[step];
      auto t0 = Clock::now();
      cs[c].call();
      double t = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      ms[c].push_back(t);
      total[c] += t;
    }
  }
  std::vector<Stats> out(k);
  for (size_t c = 0; c < k; ++c) {
    std::vector<double>& v = ms[c];
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    out[c].median_ms = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    out[c].min_ms = v.front();
    out[c].runs = static_cast<int>(n);
  }
  return out;
}

// max over entries of |a - b| / max(|a|, |b|) (0 where both are 0).
double max_rel_err(const float* a, const float* b, size_t n) {
  double worst = 0;
#pragma omp parallel for reduction(max : worst) schedule(static)
  for (int64_t k = 0; k < static_cast<int64_t>(n); ++k) {
    double x = a[k], y = b[k], d = std::fabs(x - y), s = std::max(std::fabs(x), std::fabs(y));
    double r = s > 0 ? d / s : (d > 0 ? INFINITY : 0.0);
    if (!(r <= worst)) worst = std::isnan(r) ? INFINITY : r;
  }
  return worst;
}

constexpr double kTolerance = 1e-3;  // float32 sums of positive terms: ~1e-6 expected

// Rows of the fp64 reference check: all of them for small matrices, a strided sample otherwise.
int64_t ref_stride(const Csr& m) { return std::max<int64_t>(1, m.rows / 20000); }

// ---- GraphBLAS ---------------------------------------------------------------------------------

void gb_check(GrB_Info info, const char* what) {
  if (info != GrB_SUCCESS && info != GrB_NO_VALUE) {
    std::fprintf(stderr, "GraphBLAS error %d in %s\n", static_cast<int>(info), what);
    std::exit(4);
  }
}
#define GBX(call) gb_check((call), #call)

template <class T>
T* malloc_copy(const T* src, size_t n) {
  T* p = static_cast<T*>(std::malloc(std::max<size_t>(1, n) * sizeof(T)));
  std::memcpy(p, src, n * sizeof(T));
  return p;
}

GrB_Matrix gb_csr(const Csr& m) {
  size_t np = static_cast<size_t>(m.rows) + 1, nz = static_cast<size_t>(m.nnz());
  auto* ap = static_cast<GrB_Index*>(std::malloc(np * sizeof(GrB_Index)));
  auto* aj = static_cast<GrB_Index*>(std::malloc(std::max<size_t>(1, nz) * sizeof(GrB_Index)));
  for (size_t i = 0; i < np; ++i) ap[i] = static_cast<GrB_Index>(m.pos[i]);
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < static_cast<int64_t>(nz); ++e) aj[e] = static_cast<GrB_Index>(m.crd[static_cast<size_t>(e)]);
  void* ax = malloc_copy(m.vals.p, nz);
  GrB_Matrix A = nullptr;
  GBX(GxB_Matrix_import_CSR(&A, GrB_FP32, static_cast<GrB_Index>(m.rows), static_cast<GrB_Index>(m.cols), &ap, &aj, &ax,
                           np * sizeof(GrB_Index), std::max<size_t>(1, nz) * sizeof(GrB_Index), std::max<size_t>(1, nz) * 4,
                           false, false, nullptr));
  return A;
}

GrB_Matrix gb_full(const float* x, int64_t rows, int64_t cols) {
  size_t n = static_cast<size_t>(rows * cols);
  void* ax = malloc_copy(x, n);
  GrB_Matrix A = nullptr;
  GBX(GxB_Matrix_import_FullR(&A, GrB_FP32, static_cast<GrB_Index>(rows), static_cast<GrB_Index>(cols), &ax, n * 4, false,
                             nullptr));
  return A;
}

// The dense values of C (rows x cols, row-major); entries GraphBLAS left out are 0.
std::vector<float> gb_dense(GrB_Matrix C, int64_t rows, int64_t cols) {
  std::vector<float> out(static_cast<size_t>(rows * cols), 0.0f);
  GrB_Index nvals = 0;
  GBX(GrB_Matrix_nvals(&nvals, C));
  if (nvals == static_cast<GrB_Index>(rows * cols)) {
    void* cx = nullptr;
    GrB_Index size = 0;
    bool iso = false;
    GBX(GxB_Matrix_unpack_FullR(C, &cx, &size, &iso, nullptr));
    const float* f = static_cast<const float*>(cx);
    if (iso) std::fill(out.begin(), out.end(), f[0]);
    else std::memcpy(out.data(), f, out.size() * 4);
    std::free(cx);
    return out;
  }
  std::vector<GrB_Index> I(nvals), J(nvals);
  std::vector<float> X(nvals);
  GBX(GrB_Matrix_extractTuples_FP32(I.data(), J.data(), X.data(), &nvals, C));
  for (GrB_Index k = 0; k < nvals; ++k) out[static_cast<size_t>(I[k] * static_cast<GrB_Index>(cols) + J[k])] = X[k];
  return out;
}

// ---- Eigen -------------------------------------------------------------------------------------

using EigenCsr = Eigen::SparseMatrix<float, Eigen::RowMajor, int32_t>;
using EigenRowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Eigen::Map<const EigenCsr> eigen_view(const Csr& m) {
  return Eigen::Map<const EigenCsr>(m.rows, m.cols, m.nnz(), m.pos.p, m.crd.p, m.vals.p);
}

// ---- reporting -----------------------------------------------------------------------------------

struct Row {
  std::string matrix;
  int64_t nnz = 0;
  std::string spgen_variant;
  double spgen = 0;
  std::vector<std::pair<std::string, double>> peers;  // name, ms (NaN: not run)
  double gflop = 0;                                    // per call
  double bytes = 0;                                    // SpMV only
  double other_load = 0;                               // cores other processes used meanwhile
  double tuned = std::nan("");                         // ms of the kernel spgen tune chose (NaN: none)
};

std::map<std::string, std::vector<Row>> g_rows;  // table name -> rows
std::vector<std::string> g_table_order;

void add_row(const std::string& table, const Row& r) {
  if (!g_rows.count(table)) g_table_order.push_back(table);
  g_rows[table].push_back(r);
}

double g_stream_triad = 0, g_stream_read = 0;

void print_check(const char* who, double err) {
  std::printf("    check %-22s max rel err %.2e %s\n", who, err, err <= kTolerance ? "ok" : "FAIL");
}

// ---- the three operations ----------------------------------------------------------------------

// Times the contenders and records one table row (or, with --sweep, one row per variant).
// cs: spgen's kernel, then (`tuned`) the kernel tuned for this matrix, then the peers.
void record(const Options& o, const std::string& table, const Csr& m, const std::vector<Contender>& cs, double gflop,
            double bytes, bool tuned = false) {
  std::vector<Stats> st = time_interleaved(o, cs);
  if (o.sweep) {
    for (size_t c = 0; c < cs.size(); ++c) {
      std::printf("    %-24s %10.4f ms  %7.2f GFLOP/s", cs[c].name.c_str(), st[c].median_ms, gflop / (st[c].median_ms * 1e-3));
      if (bytes > 0) std::printf(" %7.2f GB/s", bytes * 1e-9 / (st[c].median_ms * 1e-3));
      std::printf("  (%d runs)\n", st[c].runs);
      add_row("sweep " + table, Row{m.name, m.nnz(), cs[c].name, st[c].median_ms, {}, gflop, bytes, g_last_other_load});
    }
    return;
  }
  Row row{m.name, m.nnz(), cs[0].name, st[0].median_ms, {}, gflop, bytes, g_last_other_load};
  std::printf("    (other processes kept %.2f cores busy during this measurement)\n", g_last_other_load);
  std::printf("    %-24s %10.4f ms  %7.2f GFLOP/s  (%d runs)\n", cs[0].name.c_str(), st[0].median_ms, gflop / (st[0].median_ms * 1e-3), st[0].runs);
  if (tuned) row.tuned = st[1].median_ms;
  for (size_t c = 1; c < cs.size(); ++c) {
    if (c > 1 || !tuned) row.peers.push_back({cs[c].name, st[c].median_ms});
    std::printf("    %-24s %10.4f ms  %7.2f GFLOP/s  (%d runs)\n", cs[c].name.c_str(), st[c].median_ms, gflop / (st[c].median_ms * 1e-3), st[c].runs);
  }
  add_row(table, row);
}

// The kernel spgen tune chose for this matrix (--tuned, tuned_kernels.h), as the second
// contender after spgen's, where DIR has one and its result matches spgen's (`error`, after one
// call through `run`): a wrong result is not timed.
template <class Fn, class Run, class Error>
bool add_tuned(const Options& o, const std::string& stem, std::vector<Contender>& cs, Run run, Error error) {
  const auto fn = reinterpret_cast<Fn>(load_tuned_kernel(o.tuned_dir, stem));
  if (!fn) return false;
  run(fn);
  const double err = error();
  print_check("tuned vs spgen", err);
  if (!(err <= kTolerance)) return false;
  cs.push_back({"tuned", [run, fn] { run(fn); }});
  return true;
}

#ifdef BENCH_HAVE_MKL
struct MklCsr {
  sparse_matrix_t A = nullptr;
  matrix_descr d{SPARSE_MATRIX_TYPE_GENERAL, SPARSE_FILL_MODE_FULL, SPARSE_DIAG_NON_UNIT};
  explicit MklCsr(const Csr& m) {
    sparse_status_t st = mkl_sparse_s_create_csr(&A, SPARSE_INDEX_BASE_ZERO, static_cast<MKL_INT>(m.rows), static_cast<MKL_INT>(m.cols),
                                                 const_cast<MKL_INT*>(m.pos.p), const_cast<MKL_INT*>(m.pos.p + 1),
                                                 const_cast<MKL_INT*>(m.crd.p), const_cast<float*>(m.vals.p));
    if (st != SPARSE_STATUS_SUCCESS) std::fprintf(stderr, "mkl_sparse_s_create_csr failed: %d\n", static_cast<int>(st)), std::exit(4);
  }
  void optimize() {
    sparse_status_t st = mkl_sparse_optimize(A);
    if (st != SPARSE_STATUS_SUCCESS) std::fprintf(stderr, "mkl_sparse_optimize: status %d\n", static_cast<int>(st));
  }
  ~MklCsr() { mkl_sparse_destroy(A); }
};
#endif

void bench_spmv(const Options& o, const Csr& m, GrB_Matrix Agb) {
  const int64_t n = m.rows;
  Array<float> x = random_array(static_cast<size_t>(m.cols), 11);
  Array<float> y(static_cast<size_t>(n));
  const double gflop = 2.0 * static_cast<double>(m.nnz()) * 1e-9;
  const double bytes = 8.0 * static_cast<double>(m.nnz()) + 4.0 * static_cast<double>(n + 1) + 4.0 * static_cast<double>(m.cols) + 4.0 * static_cast<double>(n);
  auto run_spgen = [&](SpmvFn fn) { fn(n, m.cols, y.p, m.pos.p, m.crd.p, m.vals.p, x.p); };
  const Variant<SpmvFn>& chosen = pick(kSpmv, o.spmv_variant);
  run_spgen(chosen.fn);
  double ref_err = 0;
  for (int64_t i = 0; i < n; i += ref_stride(m)) {
    double s = 0;
    for (int32_t p = m.pos[static_cast<size_t>(i)]; p < m.pos[static_cast<size_t>(i) + 1]; ++p)
      s += static_cast<double>(m.vals[static_cast<size_t>(p)]) * x[static_cast<size_t>(m.crd[static_cast<size_t>(p)])];
    float r = static_cast<float>(s);
    ref_err = std::max(ref_err, max_rel_err(&r, y.p + i, 1));
  }
  std::printf("  SpMV  %s\n", m.name.c_str());
  print_check(("spgen " + std::string(chosen.name) + " vs fp64 ref").c_str(), ref_err);
  std::vector<float> ref(y.p, y.p + n);
  std::vector<Contender> cs;
  if (o.sweep) {
    for (const auto& v : kSpmv) {
      run_spgen(v.fn);
      if (double e = max_rel_err(y.p, ref.data(), ref.size()); e > kTolerance) print_check(v.name, e);
      cs.push_back({v.name, [&, fn = v.fn] { run_spgen(fn); }});
    }
    record(o, "SpMV", m, cs, gflop, bytes);
    return;
  }
  cs.push_back({chosen.name, [&] { run_spgen(chosen.fn); }});
  const bool tuned = add_tuned<SpmvFn>(o, "spmv-" + m.name, cs, run_spgen, [&] { return max_rel_err(y.p, ref.data(), ref.size()); });

  // Eigen: y = A x, Eigen's OpenMP row loop (it stays serial below 20000 nonzeros)
  auto A = eigen_view(m);
  Eigen::Map<const Eigen::VectorXf> xv(x.p, m.cols);
  Eigen::VectorXf ye(n);
  ye.noalias() = A * xv;
  print_check("Eigen vs spgen", max_rel_err(ye.data(), ref.data(), ref.size()));
  cs.push_back({"Eigen", [&] { ye.noalias() = A * xv; }});

  // GraphBLAS: y += A x over PLUS_TIMES_FP32, x and y full: accumulating into a full output is
  // the form GraphBLAS computes in place (a fresh output is a new sparse vector each call). The
  // timed calls keep adding into y; its values do not change the time.
  void* xx = malloc_copy(x.p, static_cast<size_t>(m.cols));
  GrB_Vector xg = nullptr, yg = nullptr;
  GBX(GxB_Vector_import_Full(&xg, GrB_FP32, static_cast<GrB_Index>(m.cols), &xx, static_cast<GrB_Index>(m.cols) * 4, false, nullptr));
  auto full_zero_y = [&] {
    void* yx = std::calloc(static_cast<size_t>(std::max<int64_t>(n, 1)), 4);
    GBX(GxB_Vector_import_Full(&yg, GrB_FP32, static_cast<GrB_Index>(n), &yx, static_cast<GrB_Index>(n) * 4, false, nullptr));
  };
  full_zero_y();
  auto gb_call = [&] {
    GBX(GrB_mxv(yg, nullptr, GrB_PLUS_FP32, GrB_PLUS_TIMES_SEMIRING_FP32, Agb, xg, nullptr));
    GBX(GrB_Vector_wait(yg, GrB_MATERIALIZE));
  };
  gb_call();
  {
    GrB_Index nv = 0;
    GBX(GrB_Vector_nvals(&nv, yg));
    std::vector<GrB_Index> I(nv);
    std::vector<float> X(nv), dense(static_cast<size_t>(n), 0.0f);
    GBX(GrB_Vector_extractTuples_FP32(I.data(), X.data(), &nv, yg));
    for (GrB_Index k = 0; k < nv; ++k) dense[I[k]] = X[k];
    print_check("GraphBLAS vs spgen", max_rel_err(dense.data(), ref.data(), ref.size()));
  }
  cs.push_back({"GraphBLAS", gb_call});

#ifdef BENCH_HAVE_MKL
  // MKL inspector-executor: mkl_sparse_s_mv after mkl_sparse_optimize (the inspection is not timed)
  MklCsr mk(m);
  mkl_sparse_set_mv_hint(mk.A, SPARSE_OPERATION_NON_TRANSPOSE, mk.d, 1000);
  mk.optimize();
  Array<float> ym(static_cast<size_t>(n));
  auto mkl_call = [&] { mkl_sparse_s_mv(SPARSE_OPERATION_NON_TRANSPOSE, 1.0f, mk.A, mk.d, x.p, 0.0f, ym.p); };
  mkl_call();
  print_check("MKL vs spgen", max_rel_err(ym.p, ref.data(), ref.size()));
  cs.push_back({"MKL", mkl_call});
#endif
  record(o, "SpMV", m, cs, gflop, bytes, tuned);
  GrB_Vector_free(&xg);
  GrB_Vector_free(&yg);
}

void bench_spmm(const Options& o, const Csr& m, GrB_Matrix Agb, int64_t N) {
  const int64_t n = m.rows;
  const size_t total = static_cast<size_t>(n * N);
  Array<float> B = random_array(static_cast<size_t>(m.cols * N), 13);
  Array<float> C(total);  // written by spgen, Eigen and MKL in turn (each overwrites all of it)
  const double gflop = 2.0 * static_cast<double>(m.nnz()) * static_cast<double>(N) * 1e-9;
  auto run_spgen = [&](SpmmFn fn) { fn(n, N, m.cols, C.p, m.pos.p, m.crd.p, m.vals.p, B.p); };
  const Variant<SpmmFn>& chosen = pick(kSpmm, o.spmm_variant);
  run_spgen(chosen.fn);
  double ref_err = 0;
  {
    std::vector<double> acc(static_cast<size_t>(N));
    std::vector<float> accf(static_cast<size_t>(N));
    for (int64_t i = 0; i < n; i += ref_stride(m)) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int32_t p = m.pos[static_cast<size_t>(i)]; p < m.pos[static_cast<size_t>(i) + 1]; ++p) {
        const float* b = B.p + static_cast<int64_t>(m.crd[static_cast<size_t>(p)]) * N;
        for (int64_t k = 0; k < N; ++k) acc[static_cast<size_t>(k)] += static_cast<double>(m.vals[static_cast<size_t>(p)]) * b[k];
      }
      for (int64_t k = 0; k < N; ++k) accf[static_cast<size_t>(k)] = static_cast<float>(acc[static_cast<size_t>(k)]);
      ref_err = std::max(ref_err, max_rel_err(accf.data(), C.p + i * N, static_cast<size_t>(N)));
    }
  }
  std::printf("  SpMM  N=%lld  %s\n", static_cast<long long>(N), m.name.c_str());
  print_check(("spgen " + std::string(chosen.name) + " vs fp64 ref").c_str(), ref_err);
  Array<float> ref(total);
  std::memcpy(ref.p, C.p, total * 4);
  const std::string table = "SpMM N=" + std::to_string(N);
  std::vector<Contender> cs;
  if (o.sweep) {
    for (const auto& v : kSpmm) {
      run_spgen(v.fn);
      if (double e = max_rel_err(C.p, ref.p, total); e > kTolerance) print_check(v.name, e);
      cs.push_back({v.name, [&, fn = v.fn] { run_spgen(fn); }});
    }
    record(o, table, m, cs, gflop, 0);
    return;
  }
  cs.push_back({chosen.name, [&] { run_spgen(chosen.fn); }});
  const bool tuned = add_tuned<SpmmFn>(o, "spmm" + std::to_string(N) + "-" + m.name, cs, run_spgen, [&] { return max_rel_err(C.p, ref.p, total); });

  // Eigen: C = A * B, row-major sparse and dense, Eigen's OpenMP row loop
  auto A = eigen_view(m);
  Eigen::Map<const EigenRowMat> Bm(B.p, m.cols, N);
  Eigen::Map<EigenRowMat> Cm(C.p, n, N);
  std::memset(C.p, 0xff, total * 4);  // NaNs: the check sees whether Eigen wrote everything
  Cm.noalias() = A * Bm;
  print_check("Eigen vs spgen", max_rel_err(C.p, ref.p, total));
  cs.push_back({"Eigen", [&] { Cm.noalias() = A * Bm; }});

  // GraphBLAS: C += A * B over PLUS_TIMES_FP32, B and C full (held by row): accumulating into a
  // full output is the form GraphBLAS computes in place (without the accumulator it builds a new
  // result each call, 4-7x slower). The timed calls keep adding into C; the values do not change
  // the time.
  const std::vector<float> zeros(total, 0.0f);
  GrB_Matrix Bg = gb_full(B.p, m.cols, N), Cg = gb_full(zeros.data(), n, N);
  auto gb_call = [&] {
    GBX(GrB_mxm(Cg, nullptr, GrB_PLUS_FP32, GrB_PLUS_TIMES_SEMIRING_FP32, Agb, Bg, nullptr));
    GBX(GrB_Matrix_wait(Cg, GrB_MATERIALIZE));
  };
  gb_call();
  {
    std::vector<float> dense = gb_dense(Cg, n, N);  // empties Cg: start again from zeros
    print_check("GraphBLAS vs spgen", max_rel_err(dense.data(), ref.p, total));
    GrB_Matrix_free(&Cg);
    Cg = gb_full(zeros.data(), n, N);
  }
  cs.push_back({"GraphBLAS", gb_call});

#ifdef BENCH_HAVE_MKL
  MklCsr mk(m);
  mkl_sparse_set_mm_hint(mk.A, SPARSE_OPERATION_NON_TRANSPOSE, mk.d, SPARSE_LAYOUT_ROW_MAJOR, static_cast<MKL_INT>(N), 1000);
  mk.optimize();
  auto mkl_call = [&] {
    mkl_sparse_s_mm(SPARSE_OPERATION_NON_TRANSPOSE, 1.0f, mk.A, mk.d, SPARSE_LAYOUT_ROW_MAJOR, B.p, static_cast<MKL_INT>(N),
                    static_cast<MKL_INT>(N), 0.0f, C.p, static_cast<MKL_INT>(N));
  };
  std::memset(C.p, 0xff, total * 4);
  mkl_call();
  print_check("MKL vs spgen", max_rel_err(C.p, ref.p, total));
  cs.push_back({"MKL", mkl_call});
#endif
  record(o, table, m, cs, gflop, 0, tuned);
  GrB_Matrix_free(&Bg);
  GrB_Matrix_free(&Cg);
}

void bench_sddmm(const Options& o, const Csr& m, GrB_Matrix Xgb, int64_t K) {
  const int64_t n = m.rows, nnz = m.nnz();
  Array<float> A = random_array(static_cast<size_t>(n * K), 17), B = random_array(static_cast<size_t>(m.cols * K), 19);
  Array<float> Y(static_cast<size_t>(nnz));
  const double gflop = (2.0 * static_cast<double>(nnz) * static_cast<double>(K) + static_cast<double>(nnz)) * 1e-9;
  auto run_spgen = [&](SddmmFn fn) { fn(n, m.cols, K, Y.p, m.pos.p, m.crd.p, m.vals.p, A.p, B.p); };
  const Variant<SddmmFn>& chosen = pick(kSddmm, o.sddmm_variant);
  run_spgen(chosen.fn);
  double ref_err = 0;
  for (int64_t i = 0; i < n; i += ref_stride(m))
    for (int32_t p = m.pos[static_cast<size_t>(i)]; p < m.pos[static_cast<size_t>(i) + 1]; ++p) {
      const int64_t j = m.crd[static_cast<size_t>(p)];
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += static_cast<double>(A[static_cast<size_t>(i * K + k)]) * B[static_cast<size_t>(j * K + k)];
      float r = static_cast<float>(s * m.vals[static_cast<size_t>(p)]);
      ref_err = std::max(ref_err, max_rel_err(&r, Y.p + p, 1));
    }
  std::printf("  SDDMM K=%lld  %s\n", static_cast<long long>(K), m.name.c_str());
  print_check(("spgen " + std::string(chosen.name) + " vs fp64 ref").c_str(), ref_err);
  std::vector<float> ref(Y.p, Y.p + nnz);
  const std::string table = "SDDMM K=" + std::to_string(K);
  std::vector<Contender> cs;
  if (o.sweep) {
    for (const auto& v : kSddmm) {
      run_spgen(v.fn);
      if (double e = max_rel_err(Y.p, ref.data(), ref.size()); e > kTolerance) print_check(v.name, e);
      cs.push_back({v.name, [&, fn = v.fn] { run_spgen(fn); }});
    }
    record(o, table, m, cs, gflop, 0);
    return;
  }
  cs.push_back({chosen.name, [&] { run_spgen(chosen.fn); }});
  const bool tuned = add_tuned<SddmmFn>(o, "sddmm" + std::to_string(K) + "-" + m.name, cs, run_spgen, [&] { return max_rel_err(Y.p, ref.data(), ref.size()); });

  // Eigen has no SDDMM: the idiomatic loop, one Eigen row dot product per stored entry, OpenMP
  auto X = eigen_view(m);
  Eigen::Map<const EigenRowMat> Am(A.p, n, K), Bm(B.p, m.cols, K);
  Array<float> Ye(static_cast<size_t>(nnz));
  float* out = Ye.p;
  auto eigen_call = [&] {
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t i = 0; i < n; ++i) {
      auto ai = Am.row(i);
      int64_t p = m.pos[static_cast<size_t>(i)];
      for (Eigen::Map<const EigenCsr>::InnerIterator it(X, i); it; ++it, ++p) out[p] = it.value() * ai.dot(Bm.row(it.index()));
    }
  };
  eigen_call();
  print_check("Eigen vs spgen", max_rel_err(Ye.p, ref.data(), ref.size()));
  cs.push_back({"Eigen", eigen_call});

  // GraphBLAS: T<X, structural> = A * B' (PLUS_TIMES_FP32: masked dot products), Y = X .* T
  GrB_Matrix Ag = gb_full(A.p, n, K), Bg = gb_full(B.p, m.cols, K), T = nullptr, Yg = nullptr;
  GBX(GrB_Matrix_new(&T, GrB_FP32, static_cast<GrB_Index>(n), static_cast<GrB_Index>(m.cols)));
  GBX(GrB_Matrix_new(&Yg, GrB_FP32, static_cast<GrB_Index>(n), static_cast<GrB_Index>(m.cols)));
  auto gb_call = [&] {
    GBX(GrB_mxm(T, Xgb, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, Ag, Bg, GrB_DESC_ST1));
    GBX(GrB_Matrix_eWiseMult_BinaryOp(Yg, nullptr, nullptr, GrB_TIMES_FP32, Xgb, T, nullptr));
    GBX(GrB_Matrix_wait(Yg, GrB_MATERIALIZE));
  };
  gb_call();
  {
    GrB_Index *yp = nullptr, *yj = nullptr, yp_size = 0, yj_size = 0, yx_size = 0;
    void* yx = nullptr;
    bool iso = false;
    GBX(GxB_Matrix_unpack_CSR(Yg, &yp, &yj, &yx, &yp_size, &yj_size, &yx_size, &iso, nullptr, nullptr));
    bool same_pattern = true;
    for (int64_t i = 0; i <= n && same_pattern; ++i) same_pattern = yp[i] == static_cast<GrB_Index>(m.pos[static_cast<size_t>(i)]);
    for (int64_t e = 0; e < nnz && same_pattern; ++e) same_pattern = yj[e] == static_cast<GrB_Index>(m.crd[static_cast<size_t>(e)]);
    double err = same_pattern ? max_rel_err(static_cast<const float*>(yx), ref.data(), ref.size()) : INFINITY;
    print_check("GraphBLAS vs spgen", err);
    if (!same_pattern) std::printf("    (GraphBLAS result has a different pattern)\n");
    std::free(yp), std::free(yj), std::free(yx);
  }
  cs.push_back({"GraphBLAS", gb_call});
  record(o, table, m, cs, gflop, 0, tuned);
  GrB_Matrix_free(&Ag), GrB_Matrix_free(&Bg), GrB_Matrix_free(&T), GrB_Matrix_free(&Yg);
}

// ---- sparse outputs: SpGEMM (C = A A) and sparse add (C = A + A^T) ------------------------------

// A CSR result: positions, then coordinates and values sized by them.
struct CsrResult {
  std::vector<int32_t> pos;
  std::unique_ptr<int32_t[]> crd;
  std::unique_ptr<float[]> vals;
  int64_t nnz() const { return pos.empty() ? 0 : pos.back(); }
};

// spgen's two calls: the assemble phase counts and prefix-sums C's rows into pos, the caller
// allocates crd and vals (uninitialized, as a library would), the kernel fills them.
template <class Assemble, class Fill>
void run_assembled(CsrResult& c, int64_t rows, Assemble assemble, Fill fill) {
  c.pos.assign(static_cast<size_t>(rows) + 1, 0);
  assemble(c.pos.data());
  c.crd.reset(new int32_t[static_cast<size_t>(std::max<int64_t>(1, c.nnz()))]);
  c.vals.reset(new float[static_cast<size_t>(std::max<int64_t>(1, c.nnz()))]);
  fill(c.pos.data(), c.crd.get(), c.vals.get());
}

// Max relative error of `b` against `a` when both store the same pattern with sorted rows;
// INFINITY when the patterns differ.
double csr_rel_err(const std::vector<int32_t>& ap, const int32_t* aj, const float* ax, const int64_t* bp, const int64_t* bj,
                   const float* bx) {
  for (size_t i = 0; i < ap.size(); ++i)
    if (bp[i] != ap[i]) return INFINITY;
  for (int64_t e = 0; e < ap.back(); ++e)
    if (bj[e] != aj[e]) return INFINITY;
  return max_rel_err(ax, bx, static_cast<size_t>(ap.back()));
}

// A^T in CSR (the column lists of A, each sorted since A's rows are visited in order).
Csr transposed(const Csr& m) {
  Csr t;
  t.name = m.name + "^T";
  t.rows = m.cols, t.cols = m.rows;
  t.pos = Array<int32_t>(static_cast<size_t>(m.cols) + 1);
  t.crd = Array<int32_t>(static_cast<size_t>(m.nnz()));
  t.vals = Array<float>(static_cast<size_t>(m.nnz()));
  std::fill(t.pos.p, t.pos.p + m.cols + 1, 0);
  for (int64_t e = 0; e < m.nnz(); ++e) ++t.pos[static_cast<size_t>(m.crd[static_cast<size_t>(e)]) + 1];
  for (int64_t j = 0; j < m.cols; ++j) t.pos[static_cast<size_t>(j) + 1] += t.pos[static_cast<size_t>(j)];
  std::vector<int32_t> next(t.pos.p, t.pos.p + m.cols);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int32_t p = m.pos[static_cast<size_t>(i)]; p < m.pos[static_cast<size_t>(i) + 1]; ++p) {
      const int32_t at = next[static_cast<size_t>(m.crd[static_cast<size_t>(p)])]++;
      t.crd[static_cast<size_t>(at)] = static_cast<int32_t>(i);
      t.vals[static_cast<size_t>(at)] = m.vals[static_cast<size_t>(p)];
    }
  return t;
}

// The peers' results, checked against spgen's C: Eigen's (compressed, sorted rows).
double eigen_rel_err(const CsrResult& c, const EigenCsr& e) {
  std::vector<int64_t> p(e.outerIndexPtr(), e.outerIndexPtr() + e.outerSize() + 1), j(e.innerIndexPtr(), e.innerIndexPtr() + e.nonZeros());
  return csr_rel_err(c.pos, c.crd.get(), c.vals.get(), p.data(), j.data(), e.valuePtr());
}

double graphblas_rel_err(const CsrResult& c, GrB_Matrix C) {
  GrB_Index *cp = nullptr, *cj = nullptr, cp_size = 0, cj_size = 0, cx_size = 0;
  void* cx = nullptr;
  bool iso = false;
  GBX(GrB_Matrix_wait(C, GrB_MATERIALIZE));
  // (jumbled null: the rows come back sorted)
  GBX(GxB_Matrix_unpack_CSR(C, &cp, &cj, &cx, &cp_size, &cj_size, &cx_size, &iso, nullptr, nullptr));
  std::vector<int64_t> p(cp, cp + c.pos.size()), j(cj, cj + static_cast<int64_t>(cp[c.pos.size() - 1]));
  double err = iso ? INFINITY : csr_rel_err(c.pos, c.crd.get(), c.vals.get(), p.data(), j.data(), static_cast<const float*>(cx));
  std::free(cp), std::free(cj), std::free(cx);
  return err;
}

#ifdef BENCH_HAVE_MKL
// MKL's result handle, its rows sorted first (mkl_sparse_order: outside the timed calls).
double mkl_rel_err(const CsrResult& c, sparse_matrix_t C) {
  mkl_sparse_order(C);
  sparse_index_base_t base;
  MKL_INT rows = 0, cols = 0, *rs = nullptr, *re = nullptr, *cj = nullptr;
  float* cx = nullptr;
  if (mkl_sparse_s_export_csr(C, &base, &rows, &cols, &rs, &re, &cj, &cx) != SPARSE_STATUS_SUCCESS) return INFINITY;
  std::vector<int64_t> p(static_cast<size_t>(rows) + 1), j;
  for (MKL_INT i = 0; i < rows; ++i) p[static_cast<size_t>(i)] = rs[i] - rs[0], p[static_cast<size_t>(i) + 1] = re[i] - rs[0];
  j.assign(cj, cj + p.back());
  return csr_rel_err(c.pos, c.crd.get(), c.vals.get(), p.data(), j.data(), cx);
}
#endif

// A GraphBLAS contender whose result is a sparse n x n matrix: `compute` writes it into C (made
// here, freed by the caller), materialized; checked against spgen's result once before timing.
GrB_Matrix add_graphblas_sparse_result(std::vector<Contender>& cs, const CsrResult& c, int64_t n,
                                       std::function<void(GrB_Matrix)> compute) {
  GrB_Matrix C = nullptr;
  GBX(GrB_Matrix_new(&C, GrB_FP32, static_cast<GrB_Index>(n), static_cast<GrB_Index>(n)));
  auto call = [C, compute] {
    compute(C);
    GBX(GrB_Matrix_wait(C, GrB_MATERIALIZE));
  };
  call();
  print_check("GraphBLAS vs spgen", graphblas_rel_err(c, C));  // leaves C empty
  cs.push_back({"GraphBLAS", call});
  return C;
}

#ifdef BENCH_HAVE_MKL
// An MKL contender whose `compute` returns a new handle (destroyed after each call, as a caller
// that keeps only spgen-shaped arrays would); checked against spgen's result once before timing.
void add_mkl_sparse_result(std::vector<Contender>& cs, const CsrResult& c, const char* name,
                           std::function<sparse_matrix_t()> compute) {
  sparse_matrix_t C = compute();
  print_check((std::string(name) + " vs spgen").c_str(), mkl_rel_err(c, C));
  mkl_sparse_destroy(C);
  cs.push_back({name, [compute] { mkl_sparse_destroy(compute()); }});
}
#endif

void bench_spgemm(const Options& o, const Csr& m, GrB_Matrix Agb) {
  if (m.rows != m.cols) return;
  const int64_t n = m.rows;
  double flops = 0;  // 2 per product A(i,k) A(k,j)
  for (int64_t e = 0; e < m.nnz(); ++e) {
    const size_t k = static_cast<size_t>(m.crd[static_cast<size_t>(e)]);
    flops += 2.0 * (m.pos[k + 1] - m.pos[k]);
  }
  CsrResult c;
  auto run_spgen = [&] {
    run_assembled(
        c, n, [&](int32_t* pos) { spgemm_b_dyn64_assemble(n, n, n, pos, m.pos.p, m.crd.p, m.vals.p, m.pos.p, m.crd.p, m.vals.p); },
        [&](const int32_t* pos, int32_t* crd, float* vals) {
          spgemm_b_dyn64(n, n, n, pos, crd, vals, m.pos.p, m.crd.p, m.vals.p, m.pos.p, m.crd.p, m.vals.p);
        });
  };
  run_spgen();
  double ref_err = 0;  // fp64 rows of the sample, by a dense accumulator
  std::vector<double> acc(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; i += ref_stride(m)) {
    for (int32_t p = m.pos[static_cast<size_t>(i)]; p < m.pos[static_cast<size_t>(i) + 1]; ++p) {
      const size_t k = static_cast<size_t>(m.crd[static_cast<size_t>(p)]);
      for (int32_t q = m.pos[k]; q < m.pos[k + 1]; ++q)
        acc[static_cast<size_t>(m.crd[static_cast<size_t>(q)])] += static_cast<double>(m.vals[static_cast<size_t>(p)]) * m.vals[static_cast<size_t>(q)];
    }
    for (int32_t e = c.pos[static_cast<size_t>(i)]; e < c.pos[static_cast<size_t>(i) + 1]; ++e) {
      float r = static_cast<float>(acc[static_cast<size_t>(c.crd[static_cast<size_t>(e)])]);
      ref_err = std::max(ref_err, max_rel_err(&r, c.vals.get() + e, 1));
      acc[static_cast<size_t>(c.crd[static_cast<size_t>(e)])] = 0;
    }
    if (std::any_of(acc.begin(), acc.end(), [](double v) { return v != 0.0; })) ref_err = INFINITY;  // an entry spgen missed
  }
  std::printf("  SpGEMM A*A  %s (C has %lld entries)\n", m.name.c_str(), static_cast<long long>(c.nnz()));
  print_check("spgen spgemm_b_dyn64 vs fp64 ref", ref_err);
  std::vector<Contender> cs;
  cs.push_back({"spgemm_b_dyn64", run_spgen});

  // Eigen: C = A * A (conservative sparse product: sorted rows, one thread)
  EigenCsr A = eigen_view(m), Ce;
  Ce = A * A;
  print_check("Eigen vs spgen", eigen_rel_err(c, Ce));
  cs.push_back({"Eigen", [&] { Ce = A * A; }});

  // GraphBLAS: C = A * A over PLUS_TIMES_FP32 (its own choice of Gustavson or hash), materialized
  GrB_Matrix Cg = add_graphblas_sparse_result(cs, c, n, [Agb](GrB_Matrix C) {
    GBX(GrB_mxm(C, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, Agb, Agb, nullptr));
  });

#ifdef BENCH_HAVE_MKL
  // MKL: mkl_sparse_spmm (its rows may be unsorted) ...
  MklCsr mk(m);
  auto product = [&mk] {
    sparse_matrix_t C = nullptr;
    mkl_sparse_spmm(SPARSE_OPERATION_NON_TRANSPOSE, mk.A, mk.A, &C);
    return C;
  };
  add_mkl_sparse_result(cs, c, "MKL", product);
  // ... and with its rows sorted, as spgen's, Eigen's and GraphBLAS's are
  add_mkl_sparse_result(cs, c, "MKL+order", [product] {
    sparse_matrix_t C = product();
    mkl_sparse_order(C);
    return C;
  });
#endif
  record(o, "SpGEMM A*A", m, cs, flops * 1e-9, 0);
  GrB_Matrix_free(&Cg);
}

void bench_add(const Options& o, const Csr& m, GrB_Matrix Agb) {
  if (m.rows != m.cols) return;
  const int64_t n = m.rows;
  Csr t = transposed(m);
  CsrResult c;
  auto run_spgen = [&] {
    run_assembled(
        c, n, [&](int32_t* pos) { add_b_dyn64_assemble(n, n, pos, m.pos.p, m.crd.p, m.vals.p, t.pos.p, t.crd.p, t.vals.p); },
        [&](const int32_t* pos, int32_t* crd, float* vals) {
          add_b_dyn64(n, n, pos, crd, vals, m.pos.p, m.crd.p, m.vals.p, t.pos.p, t.crd.p, t.vals.p);
        });
  };
  run_spgen();
  double ref_err = 0;  // every row, by a dense accumulator
  std::vector<double> acc(static_cast<size_t>(n), 0.0);
  std::vector<char> stored(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    for (const Csr* x : {&m, static_cast<const Csr*>(&t)})
      for (int32_t p = x->pos[static_cast<size_t>(i)]; p < x->pos[static_cast<size_t>(i) + 1]; ++p) {
        acc[static_cast<size_t>(x->crd[static_cast<size_t>(p)])] += x->vals[static_cast<size_t>(p)];
        stored[static_cast<size_t>(x->crd[static_cast<size_t>(p)])] = 1;
      }
    int64_t count = 0;
    for (int32_t e = c.pos[static_cast<size_t>(i)]; e < c.pos[static_cast<size_t>(i) + 1]; ++e, ++count) {
      const size_t j = static_cast<size_t>(c.crd[static_cast<size_t>(e)]);
      float r = static_cast<float>(acc[j]);
      ref_err = std::max(ref_err, stored[j] ? max_rel_err(&r, c.vals.get() + e, 1) : INFINITY);
      acc[j] = 0, stored[j] = 0;
    }
    if (std::any_of(stored.begin(), stored.end(), [](char s) { return s != 0; })) {
      ref_err = INFINITY;  // an entry spgen missed
      std::fill(stored.begin(), stored.end(), 0);
    }
  }
  const double gflop = static_cast<double>(m.nnz() + t.nnz()) * 1e-9;  // one add or copy per input entry
  std::printf("  add A+A^T  %s (C has %lld entries)\n", m.name.c_str(), static_cast<long long>(c.nnz()));
  print_check("spgen add_b_dyn64 vs fp64 ref", ref_err);
  std::vector<Contender> cs;
  cs.push_back({"add_b_dyn64", run_spgen});

  // Eigen: C = A + T (a sorted merge per row, one thread)
  EigenCsr A = eigen_view(m), T = eigen_view(t), Ce;
  Ce = A + T;
  print_check("Eigen vs spgen", eigen_rel_err(c, Ce));
  cs.push_back({"Eigen", [&] { Ce = A + T; }});

  // GraphBLAS: C = A + T (eWiseAdd, PLUS_FP32), materialized
  GrB_Matrix Tgb = gb_csr(t);
  GrB_Matrix Cg = add_graphblas_sparse_result(cs, c, n, [Agb, Tgb](GrB_Matrix C) {
    GBX(GrB_Matrix_eWiseAdd_BinaryOp(C, nullptr, nullptr, GrB_PLUS_FP32, Agb, Tgb, nullptr));
  });

#ifdef BENCH_HAVE_MKL
  // MKL: mkl_sparse_s_add
  MklCsr mk(m), mt(t);
  add_mkl_sparse_result(cs, c, "MKL", [&mk, &mt] {
    sparse_matrix_t C = nullptr;
    mkl_sparse_s_add(SPARSE_OPERATION_NON_TRANSPOSE, mk.A, 1.0f, mt.A, &C);
    return C;
  });
#endif
  record(o, "add A+A^T", m, cs, gflop, 0);
  GrB_Matrix_free(&Cg);
  GrB_Matrix_free(&Tgb);
}

// ---- STREAM --------------------------------------------------------------------------------------

void stream(int threads) {
  const size_t n = size_t{1} << 25;  // 3 x 256 MiB of doubles, far above the 32 MiB L3
  Array<double> a(n), b(n), c(n);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) a[i] = 0, b[i] = 1.0 + i % 7, c[i] = 2.0 + i % 5;
  const double s = 3.0;
  double best_triad = 1e30, best_read = 1e30;
  double sink = 0;
  for (int r = 0; r < 11; ++r) {
    auto t0 = Clock::now();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) a[i] = b[i] + s * c[i];
    double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) best_triad = std::min(best_triad, t);
    double sum = 0;
    t0 = Clock::now();
#pragma omp parallel for schedule(static) num_threads(threads) reduction(+ : sum)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) sum += b[i] + c[i];
    t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) best_read = std::min(best_read, t);
    sink += sum + a[static_cast<size_t>(r)];
  }
  g_stream_triad = 3.0 * 8.0 * static_cast<double>(n) / best_triad * 1e-9;
  g_stream_read = 2.0 * 8.0 * static_cast<double>(n) / best_read * 1e-9;
  std::printf("STREAM triad a[i] = b[i] + s*c[i] (double, 3 x 256 MiB, %d threads, best of 10): %.2f GB/s\n", threads, g_stream_triad);
  std::printf("read-only sum b[i] + c[i] (same arrays, best of 10): %.2f GB/s   (sink %g)\n", g_stream_read, sink > 0 ? 1.0 : 0.0);
}

// Other processes on this small machine skew every figure: the run prints the load it saw.
std::string load_average() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  char buf[128] = "?\n";
  if (f) {
    if (!std::fgets(buf, sizeof buf, f)) std::strcpy(buf, "?\n");
    std::fclose(f);
  }
  return buf;
}

// ---- summary -------------------------------------------------------------------------------------

void print_tables(const Options& o) {
  for (const std::string& table : g_table_order) {
    const std::vector<Row>& rows = g_rows[table];
    if (table.rfind("sweep ", 0) == 0) {
      // rows: matrix x variant; print per-variant time relative to the fastest variant per matrix
      std::vector<std::string> variants, matrices;
      std::map<std::pair<std::string, std::string>, double> ms;
      for (const Row& r : rows) {
        if (std::find(variants.begin(), variants.end(), r.spgen_variant) == variants.end()) variants.push_back(r.spgen_variant);
        if (std::find(matrices.begin(), matrices.end(), r.matrix) == matrices.end()) matrices.push_back(r.matrix);
        ms[{r.matrix, r.spgen_variant}] = r.spgen;
      }
      std::printf("\n### %s: median ms per variant (fastest variant per matrix = 1.00x)\n\n| variant |", table.c_str());
      for (const auto& mname : matrices) std::printf(" %s |", mname.c_str());
      std::printf(" geomean slowdown vs per-matrix best |\n|---|");
      for (size_t k = 0; k <= matrices.size(); ++k) std::printf("---:|");
      std::printf("\n");
      for (const auto& v : variants) {
        std::printf("| %s |", v.c_str());
        double logsum = 0;
        for (const auto& mname : matrices) {
          double best = 1e30;
          for (const auto& w : variants) best = std::min(best, ms[{mname, w}]);
          double t = ms[{mname, v}];
          logsum += std::log(t / best);
          std::printf(" %.4g (%.2fx) |", t, t / best);
        }
        std::printf(" %.3fx |\n", std::exp(logsum / static_cast<double>(matrices.size())));
      }
      continue;
    }
    bool spmv = table == "SpMV";
    std::printf("\n### %s (spgen schedule: %s; median ms of >= %d timed calls; %d threads each)\n\n", table.c_str(),
                rows.empty() ? "-" : rows.front().spgen_variant.c_str(), o.runs, o.threads);
    std::printf("| matrix | nnz | spgen ms |");
    for (const auto& p : rows.front().peers) std::printf(" %s ms |", p.first.c_str());
    const bool has_tuned = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !std::isnan(r.tuned); });
    std::printf(" spgen GFLOP/s | best peer GFLOP/s | spgen / best peer |%s%s other load |\n",
                has_tuned ? " tuned ms | tuned / spgen | tuned / best peer |" : "", spmv ? " spgen GB/s | % of STREAM triad |" : "");
    std::printf("|---|---:|---:|");
    for (size_t k = 0; k < rows.front().peers.size(); ++k) std::printf("---:|");
    std::printf("---:|---:|---:|%s%s---:|\n", has_tuned ? "---:|---:|---:|" : "", spmv ? "---:|---:|" : "");
    double log_tuned_vs_peer = 0, log_tuned_vs_spgen = 0, worst_tuned = 1e30;
    int tuned_rows = 0;
    double log_speedup = 0, worst = 1e30;
    std::vector<double> log_vs_peer(rows.front().peers.size(), 0.0);
    for (const Row& r : rows) {
      double best = 1e30;
      for (const auto& p : r.peers) best = std::min(best, p.second);
      double speedup = best / r.spgen;
      log_speedup += std::log(speedup);
      worst = std::min(worst, speedup);
      std::printf("| %s | %lld | %.4g |", r.matrix.c_str(), static_cast<long long>(r.nnz), r.spgen);
      for (size_t k = 0; k < r.peers.size(); ++k) {
        std::printf(" %.4g |", r.peers[k].second);
        log_vs_peer[k] += std::log(r.peers[k].second / r.spgen);
      }
      std::printf(" %.2f | %.2f | %.2fx |", r.gflop / (r.spgen * 1e-3), r.gflop / (best * 1e-3), speedup);
      if (has_tuned && std::isnan(r.tuned)) std::printf(" - | - | - |");
      if (has_tuned && !std::isnan(r.tuned)) {
        std::printf(" %.4g | %.2fx | %.2fx |", r.tuned, r.spgen / r.tuned, best / r.tuned);
        log_tuned_vs_peer += std::log(best / r.tuned);
        log_tuned_vs_spgen += std::log(r.spgen / r.tuned);
        worst_tuned = std::min(worst_tuned, best / r.tuned);
        ++tuned_rows;
      }
      if (spmv) {
        double gbs = r.bytes * 1e-9 / (r.spgen * 1e-3);
        std::printf(" %.1f | %.0f%% |", gbs, g_stream_triad > 0 ? 100.0 * gbs / g_stream_triad : 0.0);
      }
      std::printf(" %.2f |\n", r.other_load);
    }
    double k = static_cast<double>(rows.size());
    std::printf("\n%s geomean spgen / best peer: %.2fx (worst matrix %.2fx)", table.c_str(), std::exp(log_speedup / k), worst);
    for (size_t p = 0; p < log_vs_peer.size(); ++p)
      std::printf("; vs %s %.2fx", rows.front().peers[p].first.c_str(), std::exp(log_vs_peer[p] / k));
    if (tuned_rows > 0)
      std::printf("\n%s geomean over the %d tuned matrices: tuned / best peer %.2fx (worst %.2fx), tuned / spgen %.2fx", table.c_str(),
                  tuned_rows, std::exp(log_tuned_vs_peer / tuned_rows), worst_tuned, std::exp(log_tuned_vs_spgen / tuned_rows));
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows when redirected to a file
  Options o = parse(argc, argv);
  omp_set_num_threads(o.threads);
  omp_set_dynamic(0);
  Eigen::setNbThreads(o.threads);
  GBX(GrB_init(GrB_NONBLOCKING));
  GBX(GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, o.threads));
#ifdef BENCH_HAVE_MKL
  mkl_set_num_threads(o.threads);
  mkl_set_dynamic(0);
  MKLVersion mv;
  mkl_get_version(&mv);
  std::printf("peers: Eigen %d.%d.%d, SuiteSparse:GraphBLAS %d.%d.%d, MKL %d.%d.%d; threads %d\n", EIGEN_WORLD_VERSION,
              EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, GxB_IMPLEMENTATION_MAJOR, GxB_IMPLEMENTATION_MINOR,
              GxB_IMPLEMENTATION_SUB, mv.MajorVersion, mv.MinorVersion, mv.UpdateVersion, o.threads);
#else
  std::printf("peers: Eigen %d.%d.%d, SuiteSparse:GraphBLAS %d.%d.%d (MKL not built in); threads %d\n", EIGEN_WORLD_VERSION,
              EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, GxB_IMPLEMENTATION_MAJOR, GxB_IMPLEMENTATION_MINOR,
              GxB_IMPLEMENTATION_SUB, o.threads);
#endif
  auto start = Clock::now();
  std::printf("load average at start: %s", load_average().c_str());
  if (o.stream && !o.sweep) {
    if (o.wait_idle_s > 0) wait_idle(o.wait_idle_s);
    CpuSample a = cpu_sample();
    stream(o.threads);
    std::printf("(other processes kept %.2f cores busy during STREAM)\n\n", other_load(a, cpu_sample()));
  }

  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(o.data_dir))
    if (e.path().extension() == ".mtx") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  auto wanted = [&](const std::string& name) {
    return o.matrices.empty() || std::find(o.matrices.begin(), o.matrices.end(), name) != o.matrices.end();
  };
  std::vector<std::string> names;
  for (const auto& p : paths)
    if (wanted(std::filesystem::path(p).stem().string())) names.push_back(p);
  if (o.synthetic && wanted("synthetic")) names.push_back("synthetic");

  CpuSample run_start = cpu_sample();
  for (const std::string& path : names) {
    if (o.wait_idle_s > 0) wait_idle(o.wait_idle_s);
    CpuSample matrix_start = cpu_sample();
    auto t0 = Clock::now();
    Csr m = path == "synthetic" ? synthetic(o.synthetic_rows, o.synthetic_min_row, o.synthetic_max_row, o.synthetic_band) : load_mtx(path);
    double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("%s: %lld x %lld, nnz %lld (%.2f per row), CSR %.1f MiB, loaded/generated in %.2f s\n", m.name.c_str(),
                static_cast<long long>(m.rows), static_cast<long long>(m.cols), static_cast<long long>(m.nnz()),
                static_cast<double>(m.nnz()) / static_cast<double>(m.rows),
                (8.0 * static_cast<double>(m.nnz()) + 4.0 * static_cast<double>(m.rows + 1)) / (1 << 20), load_s);
    GrB_Matrix Agb = o.sweep ? nullptr : gb_csr(m);
    if (o.spmv) bench_spmv(o, m, Agb);
    for (int64_t w : o.widths)
      if (o.spmm) bench_spmm(o, m, Agb, w);
    for (int64_t w : o.widths)
      if (o.sddmm) bench_sddmm(o, m, Agb, w);
    // Sparse outputs: one spgen schedule each, so nothing to sweep; not on the synthetic matrix
    // (its square alone is ~4 GB).
    if (!o.sweep && path != "synthetic") {
      if (o.spgemm) bench_spgemm(o, m, Agb);
      if (o.add) bench_add(o, m, Agb);
    }
    if (Agb) GrB_Matrix_free(&Agb);
    std::printf("  %s: other processes kept %.2f cores busy on average during it\n", m.name.c_str(), other_load(matrix_start, cpu_sample()));
    std::fflush(stdout);
  }
  print_tables(o);
  std::printf("\nother processes kept %.2f cores busy on average during the run\n", other_load(run_start, cpu_sample()));
  std::printf("\ntotal benchmark time %.1f s; load average at end: %s", std::chrono::duration<double>(Clock::now() - start).count(),
              load_average().c_str());
  GrB_finalize();
  return 0;
}
