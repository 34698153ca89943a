// spgen's CUDA kernels against cuSPARSE, on real matrices: SpMM (N = 32 and 128) and SDDMM
// (K = 32 and 128). Each spgen kernel's result is checked against a double-precision CPU
// reference before it is timed; cuSPARSE's too. Times are medians of CUDA-event timings over
// `kRuns` runs after `kWarmup` untimed ones, kernels only (the data stays on the GPU).
//
// Built and run by bench/gpu/run.sh on a machine with a GPU, after bench/gpu/prepare.sh has
// generated the kernels (bench/gpu/configs/*.json) into the directory given to both. Prints a
// Markdown table on stdout.
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sddmm_gpu_cache.h"
#include "sddmm_gpu_warp.h"
#include "spgen_run_runtime.hpp"
#include "spmm_gpu_float4.h"
#include "spmm_gpu_hyb.h"
#include "spmm_gpu_warp.h"

namespace {

constexpr int kWarmup = 3;
constexpr int kRuns = 21;

#define CHECK_CUDA(call)                                                                              \
  do {                                                                                                \
    cudaError_t status_ = (call);                                                                     \
    if (status_ != cudaSuccess) throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(status_)); \
  } while (0)
#define CHECK_CUSPARSE(call)                                                                          \
  do {                                                                                                \
    cusparseStatus_t status_ = (call);                                                                \
    if (status_ != CUSPARSE_STATUS_SUCCESS)                                                           \
      throw std::runtime_error(std::string(#call) + ": " + cusparseGetErrorString(status_));          \
  } while (0)

struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int32_t> pos, crd;
  std::vector<float> vals;
};

// Entries sorted by row, then column; repeated coordinates summed.
Csr to_csr(const spgen_run::Coo& coo) {
  std::vector<int64_t> order(static_cast<size_t>(coo.nnz()));
  for (size_t e = 0; e < order.size(); ++e) order[e] = static_cast<int64_t>(e);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::make_pair(coo.coord(a, 0), coo.coord(a, 1)) < std::make_pair(coo.coord(b, 0), coo.coord(b, 1));
  });
  Csr a;
  a.rows = coo.dims[0];
  a.cols = coo.dims[1];
  a.pos.assign(static_cast<size_t>(a.rows + 1), 0);
  int64_t last_row = -1, last_col = -1;
  for (int64_t e : order) {
    int64_t r = coo.coord(e, 0), c = coo.coord(e, 1);
    float v = static_cast<float>(coo.vals[static_cast<size_t>(e)]);
    if (r == last_row && c == last_col) {
      a.vals.back() += v;
      continue;
    }
    a.crd.push_back(static_cast<int32_t>(c));
    a.vals.push_back(v);
    a.pos[static_cast<size_t>(r + 1)]++;
    last_row = r;
    last_col = c;
  }
  for (size_t r = 0; r < static_cast<size_t>(a.rows); ++r) a.pos[r + 1] += a.pos[r];
  return a;
}

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> m(static_cast<size_t>(rows * cols));
  for (float& x : m) x = dist(rng);
  return m;
}

template <class T>
struct DeviceArray {
  T* ptr = nullptr;
  size_t count = 0;
  explicit DeviceArray(const std::vector<T>& host) : count(host.size()) {
    CHECK_CUDA(cudaMalloc(&ptr, std::max<size_t>(count, 1) * sizeof(T)));
    CHECK_CUDA(cudaMemcpy(ptr, host.data(), count * sizeof(T), cudaMemcpyHostToDevice));
  }
  explicit DeviceArray(size_t n) : count(n) { CHECK_CUDA(cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T))); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(ptr); }
  std::vector<T> download() const {
    std::vector<T> host(count);
    CHECK_CUDA(cudaMemcpy(host.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
};

// The median of kRuns timings of `launch`, in milliseconds, after kWarmup untimed calls.
double median_ms(const std::function<void()>& launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int w = 0; w < kWarmup; ++w) launch();
  std::vector<double> times;
  for (int r = 0; r < kRuns; ++r) {
    CHECK_CUDA(cudaEventRecord(start));
    launch();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Largest |got - want| / (1 + |want|).
double max_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::fabs(got[k] - want[k]) / (1.0 + std::fabs(want[k])));
  return worst;
}

struct Row {
  std::string matrix, op;
  int64_t width;
  std::string kernel;
  double ms, error;
};

// `peer_ms`: the best cuSPARSE time of the same op, or 0 for cuSPARSE's own rows.
void print_row(const Row& r, double flops, double peer_ms) {
  char speedup[32] = "-";
  if (peer_ms > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", peer_ms / r.ms);
  std::printf("| %s | %s | %lld | %s | %.4f | %.1f | %s | %.1e %s |\n", r.matrix.c_str(), r.op.c_str(),
              static_cast<long long>(r.width), r.kernel.c_str(), r.ms, flops / (r.ms * 1e6), speedup, r.error,
              r.error < 1e-3 ? "ok" : "WRONG");
  std::fflush(stdout);
}

void bench_spmm(const std::string& name, const Csr& a, int64_t n, cusparseHandle_t handle) {
  std::vector<float> b = random_matrix(a.cols, n, 7);
  std::vector<double> want(static_cast<size_t>(a.rows * n), 0.0);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int32_t p = a.pos[static_cast<size_t>(i)]; p < a.pos[static_cast<size_t>(i + 1)]; ++p)
      for (int64_t k = 0; k < n; ++k)
        want[static_cast<size_t>(i * n + k)] += static_cast<double>(a.vals[static_cast<size_t>(p)]) *
                                                b[static_cast<size_t>(a.crd[static_cast<size_t>(p)] * n + k)];
  DeviceArray<int32_t> pos(a.pos), crd(a.crd);
  DeviceArray<float> vals(a.vals), db(b), dc(static_cast<size_t>(a.rows * n));
  const double flops = 2.0 * static_cast<double>(a.vals.size()) * static_cast<double>(n);
  std::vector<Row> rows;

  // cuSPARSE: the faster of its CSR SpMM algorithms.
  cusparseSpMatDescr_t ma;
  cusparseDnMatDescr_t mb, mc;
  CHECK_CUSPARSE(cusparseCreateCsr(&ma, a.rows, a.cols, static_cast<int64_t>(a.vals.size()), pos.ptr, crd.ptr, vals.ptr,
                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  CHECK_CUSPARSE(cusparseCreateDnMat(&mb, a.cols, n, n, db.ptr, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  CHECK_CUSPARSE(cusparseCreateDnMat(&mc, a.rows, n, n, dc.ptr, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  const float one = 1.0f, zero = 0.0f;
  double peer = 0;
  for (cusparseSpMMAlg_t alg : {CUSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_CSR_ALG2}) {
    size_t bytes = 0;
    CHECK_CUSPARSE(cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                           ma, mb, &zero, mc, CUDA_R_32F, alg, &bytes));
    DeviceArray<char> buffer(bytes);
    auto launch = [&] {
      CHECK_CUSPARSE(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, ma, mb,
                                  &zero, mc, CUDA_R_32F, alg, buffer.ptr));
    };
    launch();
    CHECK_CUDA(cudaDeviceSynchronize());
    double error = max_error(dc.download(), want);
    double ms = median_ms(launch);
    std::string label = alg == CUSPARSE_SPMM_ALG_DEFAULT ? "cuSPARSE (default)" : "cuSPARSE (CSR_ALG2)";
    rows.push_back({name, "SpMM", n, label, ms, error});
    if (peer == 0 || ms < peer) peer = ms;
  }
  cusparseDestroySpMat(ma);
  cusparseDestroyDnMat(mb);
  cusparseDestroyDnMat(mc);

  auto spgen_kernel = [&](const std::string& label, const std::function<int()>& call) {
    CHECK_CUDA(cudaMemset(dc.ptr, 0xff, dc.count * sizeof(float)));  // NaNs: every entry must be written
    CHECK_CUDA(static_cast<cudaError_t>(call()));
    CHECK_CUDA(cudaDeviceSynchronize());
    double error = max_error(dc.download(), want);
    rows.push_back({name, "SpMM", n, label, median_ms([&] { CHECK_CUDA(static_cast<cudaError_t>(call())); }), error});
  };
  spgen_kernel("spgen warp per row", [&] {
    return spmm_gpu_warp(a.rows, n, a.cols, dc.ptr, pos.ptr, crd.ptr, vals.ptr, db.ptr, nullptr);
  });
  spgen_kernel("spgen float4 tile", [&] {
    return spmm_gpu_float4(a.rows, n, a.cols, dc.ptr, pos.ptr, crd.ptr, vals.ptr, db.ptr, nullptr);
  });

  // hyb: the inspector splits A on the host once; the parts go to the GPU.
  std::vector<int64_t> lengths(24);
  if (spmm_gpu_hyb_decompose_A_sizes(a.rows, a.cols, a.pos.data(), a.crd.data(), lengths.data()) != 0)
    throw std::runtime_error("spmm_gpu_hyb_decompose_A_sizes failed");
  std::vector<std::vector<int32_t>> index_parts;
  std::vector<std::vector<float>> value_parts;
  for (int k = 0; k < 24; ++k)
    if (k % 4 == 3) value_parts.emplace_back(static_cast<size_t>(lengths[static_cast<size_t>(k)]));
    else index_parts.emplace_back(static_cast<size_t>(lengths[static_cast<size_t>(k)]));
  auto ip = [&](int part, int array) { return index_parts[static_cast<size_t>(part * 3 + array)].data(); };
  auto vp = [&](int part) { return value_parts[static_cast<size_t>(part)].data(); };
  if (spmm_gpu_hyb_decompose_A(a.rows, a.cols, a.pos.data(), a.crd.data(), a.vals.data(), ip(0, 0), ip(0, 1), ip(0, 2), vp(0),
                               ip(1, 0), ip(1, 1), ip(1, 2), vp(1), ip(2, 0), ip(2, 1), ip(2, 2), vp(2), ip(3, 0), ip(3, 1),
                               ip(3, 2), vp(3), ip(4, 0), ip(4, 1), ip(4, 2), vp(4), ip(5, 0), ip(5, 1), ip(5, 2), vp(5),
                               lengths.data()) != 0)
    throw std::runtime_error("spmm_gpu_hyb_decompose_A failed");
  std::vector<std::unique_ptr<DeviceArray<int32_t>>> di;
  std::vector<std::unique_ptr<DeviceArray<float>>> dv;
  for (const auto& p : index_parts) di.push_back(std::make_unique<DeviceArray<int32_t>>(p));
  for (const auto& p : value_parts) dv.push_back(std::make_unique<DeviceArray<float>>(p));
  auto gi = [&](int part, int array) { return di[static_cast<size_t>(part * 3 + array)]->ptr; };
  auto gv = [&](int part) { return dv[static_cast<size_t>(part)]->ptr; };
  spgen_kernel("spgen hyb (6 buckets)", [&] {
    return spmm_gpu_hyb(a.rows, n, a.cols, dc.ptr, gi(0, 0), gi(0, 1), gi(0, 2), gv(0), gi(1, 0), gi(1, 1), gi(1, 2), gv(1),
                        gi(2, 0), gi(2, 1), gi(2, 2), gv(2), gi(3, 0), gi(3, 1), gi(3, 2), gv(3), gi(4, 0), gi(4, 1), gi(4, 2),
                        gv(4), gi(5, 0), gi(5, 1), gi(5, 2), gv(5), db.ptr, nullptr);
  });
  for (const Row& r : rows) print_row(r, flops, r.kernel.rfind("cuSPARSE", 0) == 0 ? 0 : peer);
}

void bench_sddmm(const std::string& name, const Csr& x, int64_t k, cusparseHandle_t handle) {
  std::vector<float> a = random_matrix(x.rows, k, 11), b = random_matrix(x.cols, k, 13);
  std::vector<double> want(x.vals.size());
  for (int64_t i = 0; i < x.rows; ++i)
    for (int32_t p = x.pos[static_cast<size_t>(i)]; p < x.pos[static_cast<size_t>(i + 1)]; ++p) {
      double dot = 0;
      for (int64_t c = 0; c < k; ++c)
        dot += static_cast<double>(a[static_cast<size_t>(i * k + c)]) * b[static_cast<size_t>(x.crd[static_cast<size_t>(p)] * k + c)];
      want[static_cast<size_t>(p)] = dot * x.vals[static_cast<size_t>(p)];
    }
  DeviceArray<int32_t> pos(x.pos), crd(x.crd);
  DeviceArray<float> xv(x.vals), da(a), db(b), dy(x.vals.size());
  const double flops = 2.0 * static_cast<double>(x.vals.size()) * static_cast<double>(k);
  std::vector<Row> rows;

  // cuSPARSE computes (A B^T) at X's pattern, without X's values: the same work but one multiply
  // per entry. Its result is checked against the reference divided by X's values.
  std::vector<double> want_pattern(x.vals.size());
  for (size_t p = 0; p < want.size(); ++p) want_pattern[p] = x.vals[p] != 0 ? want[p] / x.vals[p] : 0;
  cusparseDnMatDescr_t ma, mb;
  cusparseSpMatDescr_t my;
  CHECK_CUSPARSE(cusparseCreateDnMat(&ma, x.rows, k, k, da.ptr, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  CHECK_CUSPARSE(cusparseCreateDnMat(&mb, x.cols, k, k, db.ptr, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  CHECK_CUSPARSE(cusparseCreateCsr(&my, x.rows, x.cols, static_cast<int64_t>(x.vals.size()), pos.ptr, crd.ptr, dy.ptr,
                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  const float one = 1.0f, zero = 0.0f;
  size_t bytes = 0;
  CHECK_CUSPARSE(cusparseSDDMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_TRANSPOSE, &one, ma, mb,
                                          &zero, my, CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, &bytes));
  DeviceArray<char> buffer(bytes);
  auto peer_launch = [&] {
    CHECK_CUSPARSE(cusparseSDDMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_TRANSPOSE, &one, ma, mb, &zero, my,
                                 CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, buffer.ptr));
  };
  peer_launch();
  CHECK_CUDA(cudaDeviceSynchronize());
  double peer_error = max_error(dy.download(), want_pattern);
  double peer = median_ms(peer_launch);
  rows.push_back({name, "SDDMM", k, "cuSPARSE (default)", peer, peer_error});
  cusparseDestroyDnMat(ma);
  cusparseDestroyDnMat(mb);
  cusparseDestroySpMat(my);

  auto spgen_kernel = [&](const std::string& label, const std::function<int()>& call) {
    CHECK_CUDA(cudaMemset(dy.ptr, 0xff, dy.count * sizeof(float)));
    CHECK_CUDA(static_cast<cudaError_t>(call()));
    CHECK_CUDA(cudaDeviceSynchronize());
    double error = max_error(dy.download(), want);
    rows.push_back({name, "SDDMM", k, label, median_ms([&] { CHECK_CUDA(static_cast<cudaError_t>(call())); }), error});
  };
  spgen_kernel("spgen warp per nonzero", [&] {
    return sddmm_gpu_warp(x.rows, x.cols, k, dy.ptr, pos.ptr, crd.ptr, xv.ptr, da.ptr, db.ptr, nullptr);
  });
  spgen_kernel("spgen block per row, A row cached", [&] {
    return sddmm_gpu_cache(x.rows, x.cols, k, dy.ptr, pos.ptr, crd.ptr, xv.ptr, da.ptr, db.ptr, nullptr);
  });
  for (const Row& r : rows) print_row(r, flops, r.kernel.rfind("cuSPARSE", 0) == 0 ? 0 : peer);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    cudaDeviceProp prop{};
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    std::printf("Device: %s (%d SMs). Medians of %d runs after %d warm-up runs; GFLOP/s counts 2 flops per "
                "entry and column.\n\n",
                prop.name, prop.multiProcessorCount, kRuns, kWarmup);
    std::printf("| matrix | op | N or K | kernel | median ms | GFLOP/s | speedup vs best cuSPARSE | max error |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    cusparseHandle_t handle;
    CHECK_CUSPARSE(cusparseCreate(&handle));
    for (int m = 1; m < argc; ++m) {
      std::string path = argv[m];
      std::string name = path.substr(path.find_last_of('/') + 1);
      spgen_run::Coo coo = spgen_run::read_tensor(path);
      if (coo.order() != 2) throw std::runtime_error(path + ": not a matrix");
      Csr a = to_csr(coo);
      for (int64_t n : {32, 128}) bench_spmm(name, a, n, handle);
      for (int64_t k : {32, 128}) bench_sddmm(name, a, k, handle);
    }
    cusparseDestroy(handle);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
