// SELL-8 (slices of 8 rows, column-major in the slice, padded to the slice's longest row; sigma
// = 1, or rows sorted by length inside windows of 64 rows) against spgen's SpMV as auto with
// statistics generates it (8 lanes, masked tail, static), one thread. Hand experiment for issue
// 20 (bench/RESULTS.md, session 26); the SELL arrays are built once per matrix, outside the timing.
// Build, from the repository root:
//   build/src/spgen gen specs/spmv.spg --config bench/configs/spmv_b_auto_lanes8_static.json -o /tmp/sell
//   g++ -O3 -march=native -fopenmp -I/tmp/sell -o /tmp/sell/sell bench/handmade/spmv_sell.cpp /tmp/sell/spmv_b_auto_lanes8_static.cpp
//   OMP_NUM_THREADS=1 taskset -c 0 /tmp/sell/sell ../shared/data/*.mtx
#include "spmv_harness.hpp"
#include <immintrin.h>
#include <numeric>
#include "spmv_b_auto_lanes8_static.h"
struct Sell { const int32_t* key = nullptr; int64_t keyn = -1, keynnz = -1; int64_t slices = 0; std::vector<int64_t> off; std::vector<int32_t> width, col, perm; std::vector<float> val; };
static Sell g_sell[2];
static const Sell& sell_of(int which, int64_t n, const int32_t* P, const int32_t* C, const float* V, int sigma) {
  Sell& s = g_sell[which];
  if (s.key == P && s.keyn == n && s.keynnz == P[n]) return s;
  s = Sell(); s.key = P; s.keyn = n; s.keynnz = P[n]; s.slices = (n + 7) / 8;
  s.perm.resize(n); std::iota(s.perm.begin(), s.perm.end(), 0);
  if (sigma > 1) for (int64_t w = 0; w < n; w += sigma) {
    auto b = s.perm.begin() + w, e = s.perm.begin() + std::min<int64_t>(n, w + sigma);
    std::stable_sort(b, e, [&](int32_t a, int32_t c) { return P[a+1]-P[a] > P[c+1]-P[c]; });
  }
  s.off.push_back(0);
  for (int64_t sl = 0; sl < s.slices; ++sl) {
    int32_t w = 0;
    for (int r = 0; r < 8; ++r) { int64_t i = sl * 8 + r; if (i < n) w = std::max(w, P[s.perm[i]+1] - P[s.perm[i]]); }
    s.width.push_back(w);
    s.off.push_back(s.off.back() + 8 * (int64_t)w);
  }
  s.col.assign(s.off.back(), 0); s.val.assign(s.off.back(), 0.f);
  for (int64_t sl = 0; sl < s.slices; ++sl)
    for (int r = 0; r < 8; ++r) { int64_t i = sl * 8 + r; if (i >= n) continue; int32_t row = s.perm[i];
      for (int32_t k = 0; k < P[row+1]-P[row]; ++k) { s.col[s.off[sl] + 8*k + r] = C[P[row]+k]; s.val[s.off[sl] + 8*k + r] = V[P[row]+k]; } }
  return s;
}
// Each slice's 8 rows summed a column at a time (`step` adds the column's 8 products), written
// through the permutation.
template <class Step>
void walk_slices(const Sell& s, int64_t n, float* Y, Step step) {
#pragma omp parallel for schedule(static)
  for (int64_t sl = 0; sl < s.slices; ++sl) {
    __m256 acc = _mm256_setzero_ps();
    const int32_t* col = s.col.data() + s.off[sl]; const float* val = s.val.data() + s.off[sl];
    for (int32_t k = 0; k < s.width[sl]; ++k)
      acc = step(acc, _mm256_loadu_si256((const __m256i*)(col + 8*k)), _mm256_loadu_ps(val + 8*k));
    alignas(32) float out[8]; _mm256_store_ps(out, acc);
    for (int r = 0; r < 8; ++r) { int64_t i = sl * 8 + r; if (i < n) Y[s.perm[i]] = out[r]; }
  }
}
template <int which, int sigma>
void sell8(ARGS) {
  walk_slices(sell_of(which, n, P, C, V, sigma), n, Y,
              [&](__m256 acc, __m256i idx, __m256 vals) { return _mm256_fmadd_ps(vals, _mm256_i32gather_ps(X, idx, 4), acc); });
}
// As hyb's buckets with rows in lanes would store them (session 27): every row sorted by length
// (sigma = n), each slice padded to a power of two, padding -1 and skipped by a masked gather.
static Sell g_pow2;
void sell8_pow2(ARGS) {
  Sell& s = g_pow2;
  if (!(s.key == P && s.keyn == n && s.keynnz == P[n])) {
    s = Sell(); s.key = P; s.keyn = n; s.keynnz = P[n]; s.slices = (n + 7) / 8;
    s.perm.resize(n); std::iota(s.perm.begin(), s.perm.end(), 0);
    std::stable_sort(s.perm.begin(), s.perm.end(), [&](int32_t a, int32_t c) { return P[a+1]-P[a] > P[c+1]-P[c]; });
    s.off.push_back(0);
    for (int64_t sl = 0; sl < s.slices; ++sl) {
      int32_t w = 0;
      for (int r = 0; r < 8; ++r) { int64_t i = sl * 8 + r; if (i < n) w = std::max(w, P[s.perm[i]+1] - P[s.perm[i]]); }
      int32_t p2 = w == 0 ? 0 : 1; while (p2 < w) p2 *= 2;
      s.width.push_back(p2);
      s.off.push_back(s.off.back() + 8 * (int64_t)p2);
    }
    s.col.assign(s.off.back(), -1); s.val.assign(s.off.back(), 0.f);
    for (int64_t sl = 0; sl < s.slices; ++sl)
      for (int r = 0; r < 8; ++r) { int64_t i = sl * 8 + r; if (i >= n) continue; int32_t row = s.perm[i];
        for (int32_t k = 0; k < P[row+1]-P[row]; ++k) { s.col[s.off[sl] + 8*k + r] = C[P[row]+k]; s.val[s.off[sl] + 8*k + r] = V[P[row]+k]; } }
  }
  walk_slices(s, n, Y, [&](__m256 acc, __m256i idx, __m256 vals) {
    __m256 mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(-1)));
    return _mm256_fmadd_ps(vals, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), X, idx, mask, 4), acc);
  });
}
void spgen_auto(ARGS) { spmv_b_auto_lanes8_static(n, n, Y, P, C, V, X); }
int main(int argc, char** argv) {
  Named ks[] = {{"spgen8s", spgen_auto}, {"sell8", sell8<0, 1>}, {"sell8s64", sell8<1, 64>}, {"stat", stat}, {"sell8p2", sell8_pow2}};
  return run_all(argc, argv, ks, 5);
}
