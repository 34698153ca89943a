// SpMV's parallel balances in one process (bench/RESULTS.md, session 35): the rows in 8 lanes
// with a masked tail, parallel by "balance": "nonzeros" (rows whole) and "merge_path" (rows cut),
// and `auto`'s kernel, on a matrix with one hub row (hub_matrix.py) and on any others given.
// Build and run, from the repository root:
//   mkdir -p /tmp/hub && bench/balance/hub_matrix.py /tmp/hub/hub20m.mtx && bench/balance/hub_matrix.py /tmp/hub/hub1m.mtx --columns 1000000
//   build/src/spgen gen specs/spmv.spg --config bench/configs/spmv_b_auto_lanes8_nnz.json -o /tmp/hub
//   build/src/spgen gen specs/spmv.spg --config bench/balance/spmv_lanes8_merge_path.json -o /tmp/hub
//   build/src/spgen gen specs/spmv.spg --config bench/configs/spmv_b_auto.json -o /tmp/hub
//   g++ -O3 -march=native -fopenmp -Ibench/handmade -I/tmp/hub -o /tmp/hub/hub_rows bench/balance/hub_rows.cpp /tmp/hub/*.cpp
//   OMP_NUM_THREADS=2 /tmp/hub/hub_rows /tmp/hub/hub20m.mtx /tmp/hub/hub1m.mtx
#include "spmv_harness.hpp"
#include "spmv_b_auto.h"
#include "spmv_b_auto_lanes8_nnz.h"
#include "spmv_lanes8_merge_path.h"
// (The harness's matrices may be rectangular: x's length is the columns'.)
void nonzeros(ARGS) { spmv_b_auto_lanes8_nnz(n, harness_columns, Y, P, C, V, X); }
void merge_path(ARGS) { spmv_lanes8_merge_path(n, harness_columns, Y, P, C, V, X); }
void auto_kernel(ARGS) { spmv_b_auto(n, harness_columns, Y, P, C, V, X); }
int main(int argc, char** argv) {
  Named ks[] = {{"nonzeros", nonzeros}, {"merge_path", merge_path}, {"auto", auto_kernel}};
  return run_all(argc, argv, ks, 3);
}
