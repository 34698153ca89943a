// The decomposed (hyb) variants behind the signature every other variant has: CSR in. Each
// runs the kernel's inspector the first time it sees a matrix, keeps the parts, and from then on
// runs only the executor, so the timed calls measure the kernel, as mkl_sparse_optimize's are.
#pragma once

#include <cstdint>

void spmm_b_hyb_csr(int64_t dim_i, int64_t dim_k, int64_t dim_j, float* C, const int32_t* pos, const int32_t* crd,
                    const float* vals, const float* B);
void spmv_b_hyb_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                    const float* x);
// SELL-C-sigma (bench/configs/spmv_b_sell8.json, spmv_b_sell16.json): one part of five arrays.
void spmv_b_sell8_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                      const float* x);
void spmv_b_sell16_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                       const float* x);
// ELL of width 4 interleaved by 16 rows, the rest COO (bench/configs/spmv_b_ell4_il16.json).
void spmv_b_ell4_il16_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                          const float* x);
// Every occupied 3x3 block as BSR, made from CSR by the inspector (bench/configs/spmv_b_bsr3.json).
void spmv_b_bsr3_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                     const float* x);
// What `spgen gen --stats A=FILE` writes for SpMV when A's format is "auto"
// (passes/choose_input_format.cpp): BSR of 3x3 blocks (spmv_b_bsr3) where those blocks
// are at least 90 % full and read the fewest bytes an entry, at most 2/3 of csr's (another
// block size falls back to csr, with a note); else SELL-8-512 (spmv_b_sell8) where A's rows average at most 8
// entries with a coefficient of variation of at least 0.5; else ELL of the longest row's width
// interleaved by 16 where that is at most 8 and pads at most a quarter of the slots (the bench
// has the kernel of width 4, spmv_b_ell4_il16: another width falls back to csr, with a note);
// else `auto`'s csr (spmv_b_auto). The choice is made once per matrix, as spgen makes it once per
// generated kernel.
void spmv_b_auto_formats_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                             const float* x);
void spmv_b_hyb_il16_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                         const float* x);
