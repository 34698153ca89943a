// Hand-written SpMV row sums, timed interleaved (medians of 60 rounds of 20 calls), each checked
// against a float64 sum: what breaks the row sum's chain of dependent adds (session 23,
// bench/RESULTS.md). Not part of the build:
//   g++ -O3 -march=native -fopenmp -o spmv_row_sums bench/handmade/spmv_row_sums.cpp
//   OMP_NUM_THREADS=2 ./spmv_row_sums ../shared/data/*.mtx
#include "spmv_harness.hpp"
#define ROW4 { int64_t p = P[i], e = P[i+1]; float a0 = 0, a1 = 0, a2 = 0, a3 = 0; \
  for (; p + 4 <= e; p += 4) { a0 += V[p]*X[C[p]]; a1 += V[p+1]*X[C[p+1]]; a2 += V[p+2]*X[C[p+2]]; a3 += V[p+3]*X[C[p+3]]; } \
  for (; p < e; p++) a0 += V[p]*X[C[p]]; Y[i] = (a0 + a1) + (a2 + a3); }
#define ROW2 { int64_t p = P[i], e = P[i+1]; float a0 = 0, a1 = 0; \
  for (; p + 2 <= e; p += 2) { a0 += V[p]*X[C[p]]; a1 += V[p+1]*X[C[p+1]]; } \
  for (; p < e; p++) a0 += V[p]*X[C[p]]; Y[i] = a0 + a1; }
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
#define ROWV16LG { int64_t p = P[i], e = P[i+1]; vf8 acc[2] = {}; float tail = 0; int64_t groups = (e - p) / 16; \
  for (int64_t g = 0; g < groups; g++) for (int64_t v = 0; v < 2; v++) { const int64_t q = p + g * 16 + v * 8; \
    vf8 vv; __builtin_memcpy(&vv, V + q, sizeof vv); acc[v] += vv * gather8([&](int64_t l) { return X[(int64_t)C[q + l]]; }); } \
  for (int64_t q = p + groups * 16; q < e; q++) tail += V[q]*X[C[q]]; if (groups > 0) tail += hsum8(acc[0] + acc[1]); Y[i] = tail; }
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
int main(int argc, char** argv) {
  const Named ks[] = {{"dyn512", dyn512}, {"static", stat}, {"v16_dyn", v16_dyn}, {"v16l_dyn", v16l_dyn}, {"v16lg_dyn", v16lg_dyn}};
  return run_all(argc, argv, ks, sizeof ks / sizeof ks[0]);
}
