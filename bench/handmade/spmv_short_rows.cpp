// Hand-written SpMV for short rows, timed interleaved (medians of 60 rounds of 20 calls), each
// checked against a float64 sum: masked vector tails instead of the scalar loop that ends each row
// (session 24, bench/RESULTS.md). Not part of the build:
//   g++ -O3 -march=native -fopenmp -o spmv_short_rows bench/handmade/spmv_short_rows.cpp
//   OMP_NUM_THREADS=2 ./spmv_short_rows ../shared/data/*.mtx
// m4t8_dyn: a row of at most 4 entries is one masked 4-lane step (4 loads of x); a longer one is
// groups of 8 in one vector and then one masked 8-lane step. Lanes past the row's end read the
// next rows' entries (inside the arrays, checked against nnz) and are masked out.
#include "spmv_harness.hpp"

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
int main(int argc, char** argv) {
  const Named ks[] = {{"dyn512", dyn512}, {"static", stat}, {"m4_dyn", m4_dyn}, {"t8_dyn", t8_dyn}, {"m4t8_dyn", m4t8_dyn}, {"t16_dyn", t16_dyn}, {"v16l_dyn", v16l_dyn}};
  return run_all(argc, argv, ks, sizeof ks / sizeof ks[0]);
}
