// Hand-written SpMV for short rows, timed interleaved (medians of 60 rounds of 20 calls), each
// checked against a float64 sum: masked vector tails instead of the scalar loop that ends each row
// (session 24, bench/RESULTS.md). Builds on spmv_row_sums.cpp's kernels. Not part of the build:
//   g++ -O3 -march=native -fopenmp -o spmv_short_rows bench/handmade/spmv_short_rows.cpp
//   OMP_NUM_THREADS=2 ./spmv_short_rows ../shared/data/*.mtx
// m4t8_dyn: a row of at most 4 entries is one masked 4-lane step (4 loads of x); a longer one is
// groups of 8 in one vector and then one masked 8-lane step. Lanes past the row's end read the
// next rows' entries (inside the arrays, checked against nnz) and are masked out.
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <random>
#include <cmath>
struct Csr { int64_t n; std::vector<int32_t> pos, crd; std::vector<float> val; };
Csr read(const char* path) {
  std::ifstream in(path); std::string line; std::getline(in, line);
  while (std::getline(in, line) && line[0] == '%') {}
  int64_t r, c, nnz; std::istringstream(line) >> r >> c >> nnz;
  std::vector<std::pair<int32_t,int32_t>> e(nnz);
  for (auto& [i, j] : e) { std::getline(in, line); std::istringstream s(line); s >> i >> j; --i; --j; }
  std::sort(e.begin(), e.end());
  Csr m; m.n = r; m.pos.assign(r + 1, 0); m.crd.resize(nnz); m.val.resize(nnz);
  std::mt19937 g(1); std::uniform_real_distribution<float> d(0.5f, 1.5f);
  for (int64_t k = 0; k < nnz; ++k) { m.pos[e[k].first + 1]++; m.crd[k] = e[k].second; m.val[k] = d(g); }
  for (int64_t i = 0; i < r; ++i) m.pos[i + 1] += m.pos[i];
  return m;
}
#define ROW1 float acc = 0; for (int64_t p = P[i]; p < P[i+1]; p++) acc += V[p] * X[C[p]]; Y[i] = acc;
#define ROW4 { int64_t p = P[i], e = P[i+1]; float a0 = 0, a1 = 0, a2 = 0, a3 = 0; \
  for (; p + 4 <= e; p += 4) { a0 += V[p]*X[C[p]]; a1 += V[p+1]*X[C[p+1]]; a2 += V[p+2]*X[C[p+2]]; a3 += V[p+3]*X[C[p+3]]; } \
  for (; p < e; p++) a0 += V[p]*X[C[p]]; Y[i] = (a0 + a1) + (a2 + a3); }
#define ROW2 { int64_t p = P[i], e = P[i+1]; float a0 = 0, a1 = 0; \
  for (; p + 2 <= e; p += 2) { a0 += V[p]*X[C[p]]; a1 += V[p+1]*X[C[p+1]]; } \
  for (; p < e; p++) a0 += V[p]*X[C[p]]; Y[i] = a0 + a1; }
#define ARGS int64_t n, const int32_t* __restrict__ P, const int32_t* __restrict__ C, const float* __restrict__ V, const float* __restrict__ X, float* __restrict__ Y
void dyn512(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) { ROW1 } }
void stat(ARGS) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) { ROW1 } }
void dyn512_acc4(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROW4 }
void dyn512_acc2(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROW2 }
void stat_acc4(ARGS) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) ROW4 }
// Rows split into one contiguous range per thread with equal nonzeros (binary search on P).
void bal_acc4(ARGS) {
#pragma omp parallel
  { int t = omp_get_thread_num(), T = omp_get_num_threads(); int64_t nnz = P[n];
    int64_t b = std::upper_bound(P, P + n, (int32_t)(nnz * t / T)) - P - 1, e = t + 1 == T ? n : std::upper_bound(P, P + n, (int32_t)(nnz * (t + 1) / T)) - P - 1;
    if (t == 0) b = 0;
    for (int64_t i = b; i < e; i++) ROW4 } }
void bal(ARGS) {
#pragma omp parallel
  { int t = omp_get_thread_num(), T = omp_get_num_threads(); int64_t nnz = P[n];
    int64_t b = std::upper_bound(P, P + n, (int32_t)(nnz * t / T)) - P - 1, e = t + 1 == T ? n : std::upper_bound(P, P + n, (int32_t)(nnz * (t + 1) / T)) - P - 1;
    if (t == 0) b = 0;
    for (int64_t i = b; i < e; i++) { ROW1 } } }
#define NOSLP __attribute__((optimize("no-tree-slp-vectorize")))
NOSLP void dyn512_acc4_noslp(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROW4 }
NOSLP void adaptive_dyn512(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) { if (P[i+1] - P[i] >= 8) ROW4 else { ROW1 } } }
NOSLP void adaptive_static(ARGS) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) { if (P[i+1] - P[i] >= 8) ROW4 else { ROW1 } } }
#define ROW8 { int64_t p = P[i], e = P[i+1]; float a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0; \
  for (; p + 8 <= e; p += 8) { a0 += V[p]*X[C[p]]; a1 += V[p+1]*X[C[p+1]]; a2 += V[p+2]*X[C[p+2]]; a3 += V[p+3]*X[C[p+3]]; \
    a4 += V[p+4]*X[C[p+4]]; a5 += V[p+5]*X[C[p+5]]; a6 += V[p+6]*X[C[p+6]]; a7 += V[p+7]*X[C[p+7]]; } \
  for (; p < e; p++) a0 += V[p]*X[C[p]]; Y[i] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)); }
NOSLP void adaptive8_dyn512(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) { if (P[i+1] - P[i] >= 16) ROW8 else if (P[i+1] - P[i] >= 8) ROW4 else { ROW1 } } }
typedef float vf8 __attribute__((vector_size(32)));
typedef float vf4 __attribute__((vector_size(16)));
static inline float hsum8(vf8 v) { vf4 lo = {v[0], v[1], v[2], v[3]}, hi = {v[4], v[5], v[6], v[7]}; vf4 s = lo + hi; return (s[0] + s[2]) + (s[1] + s[3]); }
#define ROWV8 { int64_t p = P[i], e = P[i+1]; vf8 acc = {}; float tail = 0; \
  for (; p + 8 <= e; p += 8) { vf8 xv = {X[C[p]], X[C[p+1]], X[C[p+2]], X[C[p+3]], X[C[p+4]], X[C[p+5]], X[C[p+6]], X[C[p+7]]}; \
    vf8 vv; __builtin_memcpy(&vv, V + p, sizeof vv); acc += vv * xv; } \
  for (; p < e; p++) tail += V[p]*X[C[p]]; Y[i] = hsum8(acc) + tail; }
#define ROWV4 { int64_t p = P[i], e = P[i+1]; vf4 acc = {}; float tail = 0; \
  for (; p + 4 <= e; p += 4) { vf4 xv = {X[C[p]], X[C[p+1]], X[C[p+2]], X[C[p+3]]}; \
    vf4 vv; __builtin_memcpy(&vv, V + p, sizeof vv); acc += vv * xv; } \
  for (; p < e; p++) tail += V[p]*X[C[p]]; Y[i] = ((acc[0] + acc[2]) + (acc[1] + acc[3])) + tail; }
#define ROWV16 { int64_t p = P[i], e = P[i+1]; vf8 acc0 = {}, acc1 = {}; float tail = 0; \
  for (; p + 16 <= e; p += 16) { vf8 x0 = {X[C[p]], X[C[p+1]], X[C[p+2]], X[C[p+3]], X[C[p+4]], X[C[p+5]], X[C[p+6]], X[C[p+7]]}; \
    vf8 x1 = {X[C[p+8]], X[C[p+9]], X[C[p+10]], X[C[p+11]], X[C[p+12]], X[C[p+13]], X[C[p+14]], X[C[p+15]]}; \
    vf8 v0, v1; __builtin_memcpy(&v0, V + p, sizeof v0); __builtin_memcpy(&v1, V + p + 8, sizeof v1); acc0 += v0 * x0; acc1 += v1 * x1; } \
  for (; p < e; p++) tail += V[p]*X[C[p]]; Y[i] = hsum8(acc0 + acc1) + tail; }
#define LANES 8
template <class Lane> static inline vf8 gather8(Lane lane) { vf8 v; for (int l = 0; l < LANES; l++) v[l] = lane(l); return v; }
#define ROWV16L { int64_t p = P[i], e = P[i+1]; vf8 acc[2] = {}; float tail = 0; int64_t groups = (e - p) / 16; \
  for (int64_t g = 0; g < groups; g++) for (int64_t v = 0; v < 2; v++) { const int64_t q = p + g * 16 + v * 8; \
    vf8 vv; __builtin_memcpy(&vv, V + q, sizeof vv); acc[v] += vv * gather8([&](int64_t l) { return X[(int64_t)C[q + l]]; }); } \
  for (int64_t q = p + groups * 16; q < e; q++) tail += V[q]*X[C[q]]; Y[i] = tail + hsum8(acc[0] + acc[1]); }
#define ROWV16LG { int64_t p = P[i], e = P[i+1]; vf8 acc[2] = {}; float tail = 0; int64_t groups = (e - p) / 16; \
  for (int64_t g = 0; g < groups; g++) for (int64_t v = 0; v < 2; v++) { const int64_t q = p + g * 16 + v * 8; \
    vf8 vv; __builtin_memcpy(&vv, V + q, sizeof vv); acc[v] += vv * gather8([&](int64_t l) { return X[(int64_t)C[q + l]]; }); } \
  for (int64_t q = p + groups * 16; q < e; q++) tail += V[q]*X[C[q]]; if (groups > 0) tail += hsum8(acc[0] + acc[1]); Y[i] = tail; }
void v16l_dyn(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWV16L }
void v16lg_dyn(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWV16LG }
void v16_dyn(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWV16 }
void v16_static(ARGS) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) ROWV16 }
void v8_dyn(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWV8 }
void v4_dyn(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWV4 }
void v8_adapt_dyn(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) { if (P[i+1] - P[i] >= 8) ROWV8 else { ROW1 } } }
void v4_adapt_static(ARGS) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) { if (P[i+1] - P[i] >= 4) ROWV4 else { ROW1 } } }
void v8_adapt_static(ARGS) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) { if (P[i+1] - P[i] >= 8) ROWV8 else { ROW1 } } }

typedef int32_t vi8 __attribute__((vector_size(32)));
typedef int32_t vi4 __attribute__((vector_size(16)));
// Rows of at most 8 entries: one masked 8-wide step, no loop (the row-end branch mispredicts no more);
// lanes past the row read the next rows' entries (within the arrays) and are masked out.
#define ROWM8 { int64_t p = P[i], e = P[i+1]; if (e - p <= 8 && p + 8 <= nnz) { \
    vf8 vv; __builtin_memcpy(&vv, V + p, sizeof vv); vf8 xv = gather8([&](int64_t l) { return X[(int64_t)C[p + l]]; }); \
    const vi8 lane = {0, 1, 2, 3, 4, 5, 6, 7}; vi8 m = lane < (int32_t)(e - p); vf8 z = {}; \
    Y[i] = hsum8(m ? vv * xv : z); } else ROW1_ }
#define ROW1_ { float acc = 0; for (int64_t q = P[i]; q < P[i+1]; q++) acc += V[q] * X[C[q]]; Y[i] = acc; }
#define ROWM4 { int64_t p = P[i], e = P[i+1]; if (e - p <= 4 && p + 4 <= nnz) { \
    vf4 vv; __builtin_memcpy(&vv, V + p, sizeof vv); vf4 xv = {X[C[p]], X[C[p+1]], X[C[p+2]], X[C[p+3]]}; \
    const vi4 lane = {0, 1, 2, 3}; vi4 m = lane < (int32_t)(e - p); vf4 z = {}; vf4 s = m ? vv * xv : z; \
    Y[i] = (s[0] + s[2]) + (s[1] + s[3]); } else if (e - p <= 8 && p + 8 <= nnz) { \
    vf8 vv; __builtin_memcpy(&vv, V + p, sizeof vv); vf8 xv = gather8([&](int64_t l) { return X[(int64_t)C[p + l]]; }); \
    const vi8 lane = {0, 1, 2, 3, 4, 5, 6, 7}; vi8 m = lane < (int32_t)(e - p); vf8 z = {}; \
    Y[i] = hsum8(m ? vv * xv : z); } else ROW1_ }
void m8_dyn(ARGS) { const int64_t nnz = P[n];
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWM8 }
void m8_static(ARGS) { const int64_t nnz = P[n];
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) ROWM8 }
void m4_dyn(ARGS) { const int64_t nnz = P[n];
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWM4 }
void dyn512_i32(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int32_t i = 0; i < (int32_t)n; i++) { float acc = 0; const int32_t e = P[i+1]; for (int32_t p = P[i]; p < e; p++) acc += V[p] * X[C[p]]; Y[i] = acc; } }

// Full groups of 4 in vector lanes, then the tail (< 4 entries) as one masked step where the
// arrays reach 4 past it (else scalar).
#define ROWT4 { int64_t p = P[i], e = P[i+1]; vf4 acc = {}; int64_t g = (e - p) / 4; \
  for (int64_t k = 0; k < g; k++, p += 4) { vf4 vv; __builtin_memcpy(&vv, V + p, sizeof vv); vf4 xv = {X[C[p]], X[C[p+1]], X[C[p+2]], X[C[p+3]]}; acc += vv * xv; } \
  if (p + 4 <= nnz) { vf4 vv; __builtin_memcpy(&vv, V + p, sizeof vv); vf4 xv = {X[C[p]], X[C[p+1]], X[C[p+2]], X[C[p+3]]}; \
    const vi4 lane = {0, 1, 2, 3}; vi4 m = lane < (int32_t)(e - p); vf4 z = {}; acc += m ? vv * xv : z; } \
  else for (; p < e; p++) acc[0] += V[p] * X[C[p]]; \
  Y[i] = (acc[0] + acc[2]) + (acc[1] + acc[3]); }
#define ROWT8 { int64_t p = P[i], e = P[i+1]; vf8 acc = {}; int64_t g = (e - p) / 8; \
  for (int64_t k = 0; k < g; k++, p += 8) { vf8 vv; __builtin_memcpy(&vv, V + p, sizeof vv); acc += vv * gather8([&](int64_t l) { return X[(int64_t)C[p + l]]; }); } \
  if (p + 8 <= nnz) { vf8 vv; __builtin_memcpy(&vv, V + p, sizeof vv); vf8 xv = gather8([&](int64_t l) { return X[(int64_t)C[p + l]]; }); \
    const vi8 lane = {0, 1, 2, 3, 4, 5, 6, 7}; vi8 m = lane < (int32_t)(e - p); vf8 z = {}; acc += m ? vv * xv : z; } \
  else for (; p < e; p++) acc[0] += V[p] * X[C[p]]; \
  Y[i] = hsum8(acc); }
void t4_dyn(ARGS) { const int64_t nnz = P[n];
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWT4 }
void t8_dyn(ARGS) { const int64_t nnz = P[n];
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWT8 }

#define ROW_M4T8 { int64_t p = P[i], e = P[i+1]; if (e - p <= 4 && p + 4 <= nnz) { \
    vf4 vv; __builtin_memcpy(&vv, V + p, sizeof vv); vf4 xv = {X[C[p]], X[C[p+1]], X[C[p+2]], X[C[p+3]]}; \
    const vi4 lane = {0, 1, 2, 3}; vi4 m = lane < (int32_t)(e - p); vf4 z = {}; vf4 s = m ? vv * xv : z; \
    Y[i] = (s[0] + s[2]) + (s[1] + s[3]); } else ROWT8 }
#define ROWT16 { int64_t p = P[i], e = P[i+1]; vf8 acc = {}, acc1 = {}; int64_t g = (e - p) / 16; \
  for (int64_t k = 0; k < g; k++, p += 16) { vf8 vv, v1; __builtin_memcpy(&vv, V + p, sizeof vv); __builtin_memcpy(&v1, V + p + 8, sizeof v1); \
    acc += vv * gather8([&](int64_t l) { return X[(int64_t)C[p + l]]; }); acc1 += v1 * gather8([&](int64_t l) { return X[(int64_t)C[p + 8 + l]]; }); } \
  if (e - p >= 8) { vf8 vv; __builtin_memcpy(&vv, V + p, sizeof vv); acc += vv * gather8([&](int64_t l) { return X[(int64_t)C[p + l]]; }); p += 8; } \
  if (p + 8 <= nnz) { vf8 vv; __builtin_memcpy(&vv, V + p, sizeof vv); vf8 xv = gather8([&](int64_t l) { return X[(int64_t)C[p + l]]; }); \
    const vi8 lane = {0, 1, 2, 3, 4, 5, 6, 7}; vi8 m = lane < (int32_t)(e - p); vf8 z = {}; acc += m ? vv * xv : z; } \
  else for (; p < e; p++) acc[0] += V[p] * X[C[p]]; \
  Y[i] = hsum8(acc + acc1); }
void m4t8_dyn(ARGS) { const int64_t nnz = P[n];
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROW_M4T8 }
void t16_dyn(ARGS) { const int64_t nnz = P[n];
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWT16 }
typedef void (*K)(ARGS);
int main(int argc, char** argv) {
  struct { const char* name; K k; } ks[] = {{"dyn512", dyn512}, {"static", stat}, {"m4_dyn", m4_dyn}, {"t8_dyn", t8_dyn}, {"m4t8_dyn", m4t8_dyn}, {"t16_dyn", t16_dyn}, {"v16l_dyn", v16l_dyn}};
  const int K_ = sizeof ks / sizeof ks[0];
  for (int a = 1; a < argc; ++a) {
    Csr m = read(argv[a]);
    std::vector<float> x(m.n), y(m.n), ref(m.n);
    for (int64_t i = 0; i < m.n; ++i) x[i] = (i % 7) * 0.1f + 0.3f;
    for (int64_t i = 0; i < m.n; ++i) { double s = 0; for (int p = m.pos[i]; p < m.pos[i+1]; ++p) s += (double)m.val[p] * x[m.crd[p]]; ref[i] = s; }
    std::vector<std::vector<double>> t(K_);
    for (int r = 0; r < 60; ++r) for (int k = 0; k < K_; ++k) {
      int reps = 20; auto s = std::chrono::steady_clock::now();
      for (int q = 0; q < reps; ++q) ks[k].k(m.n, m.pos.data(), m.crd.data(), m.val.data(), x.data(), y.data());
      t[k].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count() / reps);
      if (r == 0) { double err = 0; for (int64_t i = 0; i < m.n; ++i) err = std::max(err, std::fabs(y[i] - ref[i]) / (std::fabs(ref[i]) + 1e-6)); if (err > 1e-4) printf("%s WRONG %g\n", ks[k].name, err); }
    }
    printf("%-14s", std::string(argv[a]).substr(std::string(argv[a]).rfind('/') + 1).c_str());
    double base = 0;
    for (int k = 0; k < K_; ++k) { std::sort(t[k].begin(), t[k].end()); double med = t[k][t[k].size()/2]; if (!k) base = med; printf(" %s %.4f (%.2fx)", ks[k].name, med, base / med); }
    printf("\n");
  }
}
