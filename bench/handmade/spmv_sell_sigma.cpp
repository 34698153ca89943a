// Generated SELL-8 (decompose "sell", auto) with sigma 1, 64, 512, 4096 and every row sorted,
// against auto's CSR SpMV with statistics (8 lanes, masked tail, static), in one process: how
// the sort window trades padding against balance (bench/RESULTS.md, session 34). Build, from the
// repository root (sell_sN.json: bench/configs/spmv_b_sell8.json with "sigma" N and "name"
// sell_sN; sell_s1000000 sorts every row):
//   for s in 1 64 512 4096 1000000; do sed "s/\"sigma\": 512/\"sigma\": $s/; s/\"name\": \"spmv_b_sell8\"/\"name\": \"sell_s$s\"/" \
//     bench/configs/spmv_b_sell8.json > /tmp/sig/sell_s$s.json; build/src/spgen gen specs/spmv.spg --config /tmp/sig/sell_s$s.json -o /tmp/sig; done
//   build/src/spgen gen specs/spmv.spg --config bench/configs/spmv_b_auto_lanes8_static.json -o /tmp/sig
//   g++ -O3 -march=native -fopenmp -Ibench/handmade -I/tmp/sig -o /tmp/sig/sigma bench/handmade/spmv_sell_sigma.cpp /tmp/sig/*.cpp
//   OMP_NUM_THREADS=1 taskset -c 0 /tmp/sig/sigma ../shared/data/*.mtx
#include "spmv_harness.hpp"
#include <vector>
#include "spmv_b_auto_lanes8_static.h"
#include "sell_s1.h"
#include "sell_s64.h"
#include "sell_s512.h"
#include "sell_s4096.h"
#include "sell_s1000000.h"
// The parts of the last matrix seen (the inspector runs outside the timing, as
// mkl_sparse_optimize does), then the executor.
template <class S, class F, class K>
struct Gen { const int32_t* key = nullptr; int64_t kn = -1, knnz = -1; std::vector<int32_t> a[4]; std::vector<float> v; int64_t len[5];
  void run(ARGS, S sizes, F fill, K kernel) {
    if (key != P || kn != n || knnz != P[n]) { key = P; kn = n; knnz = P[n]; sizes(n, n, P, C, len);
      for (int k = 0; k < 4; ++k) a[k].assign(len[k] + 1, 0);
      v.assign(len[4] + 1, 0.f);
      fill(n, n, P, C, V, a[0].data(), a[1].data(), a[2].data(), a[3].data(), v.data(), len); }
    kernel(n, n, Y, a[0].data(), a[1].data(), a[2].data(), a[3].data(), v.data(), X); } };
#define GEN(NAME) void NAME##_k(ARGS) { static Gen<decltype(&NAME##_decompose_A_sizes), decltype(&NAME##_decompose_A), decltype(&NAME)> g; g.run(n, P, C, V, X, Y, NAME##_decompose_A_sizes, NAME##_decompose_A, NAME); }
GEN(sell_s1) GEN(sell_s64) GEN(sell_s512) GEN(sell_s4096) GEN(sell_s1000000)
void spgen_auto(ARGS) { spmv_b_auto_lanes8_static(n, n, Y, P, C, V, X); }
int main(int argc, char** argv) {
  Named ks[] = {{"auto8s", spgen_auto}, {"sell_s1", sell_s1_k}, {"sell_s64", sell_s64_k}, {"sell_s512", sell_s512_k}, {"s4096", sell_s4096_k}, {"sall", sell_s1000000_k}};
  return run_all(argc, argv, ks, 6);
}
