// The harness of the hand-written SpMV experiments (spmv_row_sums.cpp, spmv_short_rows.cpp,
// spmv_sell.cpp): a
// Matrix Market reader (random values), the plain loops they are measured against, and a timer
// that runs every kernel interleaved (medians of 60 rounds of 20 calls), each checked against a
// float64 sum. Not part of the build.
#pragma once
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
struct Csr { int64_t n, cols = 0; std::vector<int32_t> pos, crd; std::vector<float> val; };
Csr read(const char* path) {
  std::ifstream in(path); std::string line; std::getline(in, line);
  while (std::getline(in, line) && line[0] == '%') {}
  int64_t r, c, nnz; std::istringstream(line) >> r >> c >> nnz;
  std::vector<std::pair<int32_t,int32_t>> e(nnz);
  for (auto& [i, j] : e) { std::getline(in, line); std::istringstream s(line); s >> i >> j; --i; --j; }
  std::sort(e.begin(), e.end());
  Csr m; m.n = r; m.cols = c; m.pos.assign(r + 1, 0); m.crd.resize(nnz); m.val.resize(nnz);
  std::mt19937 g(1); std::uniform_real_distribution<float> d(0.5f, 1.5f);
  for (int64_t k = 0; k < nnz; ++k) { m.pos[e[k].first + 1]++; m.crd[k] = e[k].second; m.val[k] = d(g); }
  for (int64_t i = 0; i < r; ++i) m.pos[i + 1] += m.pos[i];
  return m;
}
#define ROW1 float acc = 0; for (int64_t p = P[i]; p < P[i+1]; p++) acc += V[p] * X[C[p]]; Y[i] = acc;
#define ARGS int64_t n, const int32_t* __restrict__ P, const int32_t* __restrict__ C, const float* __restrict__ V, const float* __restrict__ X, float* __restrict__ Y
// The plain row loop, as `auto` generated it before session 24, dynamic and static.
void dyn512(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) { ROW1 } }
void stat(ARGS) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; i++) { ROW1 } }
typedef float vf8 __attribute__((vector_size(32)));
typedef float vf4 __attribute__((vector_size(16)));
static inline float hsum8(vf8 v) { vf4 lo = {v[0], v[1], v[2], v[3]}, hi = {v[4], v[5], v[6], v[7]}; vf4 s = lo + hi; return (s[0] + s[2]) + (s[1] + s[3]); }
#define LANES 8
template <class Lane> static inline vf8 gather8(Lane lane) { vf8 v; for (int l = 0; l < LANES; l++) v[l] = lane(l); return v; }
#define ROWV16L { int64_t p = P[i], e = P[i+1]; vf8 acc[2] = {}; float tail = 0; int64_t groups = (e - p) / 16; \
  for (int64_t g = 0; g < groups; g++) for (int64_t v = 0; v < 2; v++) { const int64_t q = p + g * 16 + v * 8; \
    vf8 vv; __builtin_memcpy(&vv, V + q, sizeof vv); acc[v] += vv * gather8([&](int64_t l) { return X[(int64_t)C[q + l]]; }); } \
  for (int64_t q = p + groups * 16; q < e; q++) tail += V[q]*X[C[q]]; Y[i] = tail + hsum8(acc[0] + acc[1]); }
// Session 23's long-row kernel: groups of 16 in two vectors, the rest one by one.
void v16l_dyn(ARGS) {
#pragma omp parallel for schedule(dynamic, 512)
  for (int64_t i = 0; i < n; i++) ROWV16L }
typedef void (*K)(ARGS);
struct Named { const char* name; K k; };
// The columns of the matrix being timed (ARGS has the rows only): for kernels that take both.
static int64_t harness_columns = 0;
// Times the kernels on each matrix file; the first is the base of the ratios printed.
static int run_all(int argc, char** argv, const Named* ks, int K_) {
  for (int a = 1; a < argc; ++a) {
    Csr m = read(argv[a]);
    harness_columns = m.cols;
    std::vector<float> x(m.cols), y(m.n), ref(m.n);
    for (int64_t i = 0; i < m.cols; ++i) x[i] = (i % 7) * 0.1f + 0.3f;
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
  }  return 0;
}
