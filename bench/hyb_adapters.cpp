#include "hyb_adapters.h"

#include <cstdio>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "spmm_b_hyb.h"
#include "spmv_b_hyb.h"
#include "spmv_b_hyb_il16.h"
#include "spmv_b_sell16.h"
#include "spmv_b_sell8.h"
#include "spmv_b_ell4_il16.h"
#include "spmv_b_bsr3.h"
#include "spmv_b_auto.h"

namespace {

constexpr int kParts = 12;  // buckets 1 .. 2048 (bench/configs/spmm_b_hyb.json, spmv_b_hyb.json, spmv_b_hyb_il16.json)
constexpr int kArrays = 4 * kParts;

// The part arrays of the last matrix seen (by its arrays and sizes): kArrays of them, those of
// `value_arrays` (a bit per array) float values, the rest int32 indices, each one longer than
// the inspector asks so that an empty one is not null.
template <int kCount>
struct PartArrays {
  explicit PartArrays(uint64_t value_arrays) : value_arrays(value_arrays) {}
  uint64_t value_arrays;
  const int32_t *pos = nullptr, *crd = nullptr;
  const float* vals = nullptr;
  int64_t rows = -1, cols = -1;
  std::vector<int32_t> index[kCount];
  std::vector<float> values[kCount];
  int64_t lengths[kCount] = {};

  bool holds(const int32_t* p, const int32_t* c, const float* v, int64_t r, int64_t n) const {
    return p == pos && c == crd && v == vals && r == rows && n == cols;
  }
  int32_t* i(int k) { return index[k].data(); }
  float* v(int k) { return values[k].data(); }
  void allocate() {
    for (int k = 0; k < kCount; ++k) {
      if (value_arrays >> k & 1) values[k].assign(static_cast<size_t>(lengths[k]) + 1, 0.0f);
      else index[k].assign(static_cast<size_t>(lengths[k]) + 1, 0);
    }
  }
};

// hyb's parts: pos, rows, columns, values each.
struct Parts : PartArrays<kArrays> {
  Parts() : PartArrays(0x888888888888ull) {}  // (array 4k + 3: values)
};

void check(int status, const char* what) {
  if (status == SPGEN_OK) return;
  std::fprintf(stderr, "bench_kernels: %s: %s\n", what, spmm_b_hyb_pack_strerror(status));
  std::exit(4);
}

#define SPGEN_PART(k) p.i(4 * (k)), p.i(4 * (k) + 1), p.i(4 * (k) + 2), p.v(4 * (k) + 3)
#define SPGEN_PARTS                                                                                              \
  SPGEN_PART(0), SPGEN_PART(1), SPGEN_PART(2), SPGEN_PART(3), SPGEN_PART(4), SPGEN_PART(5), SPGEN_PART(6), \
      SPGEN_PART(7), SPGEN_PART(8), SPGEN_PART(9), SPGEN_PART(10), SPGEN_PART(11)

}  // namespace

namespace {

// Runs the inspector (`sizes`, then `fill`) unless `p` holds this matrix's parts already.
template <class PartArrays, class Sizes, class Fill>
void prepare(PartArrays& p, const int32_t* pos, const int32_t* crd, const float* vals, int64_t rows, int64_t cols, Sizes sizes,
             Fill fill) {
  if (p.holds(pos, crd, vals, rows, cols)) return;
  p.pos = pos, p.crd = crd, p.vals = vals, p.rows = rows, p.cols = cols;
  check(sizes(p.lengths), "hyb sizes");
  p.allocate();
  check(fill(), "hyb inspector");
}

}  // namespace

void spmm_b_hyb_csr(int64_t dim_i, int64_t dim_k, int64_t dim_j, float* C, const int32_t* pos, const int32_t* crd,
                    const float* vals, const float* B) {
  static Parts p;
  prepare(
      p, pos, crd, vals, dim_i, dim_j, [&](int64_t* n) { return spmm_b_hyb_decompose_A_sizes(dim_i, dim_j, pos, crd, n); },
      [&] { return spmm_b_hyb_decompose_A(dim_i, dim_j, pos, crd, vals, SPGEN_PARTS, p.lengths); });
  spmm_b_hyb(dim_i, dim_k, dim_j, C, SPGEN_PARTS, B);
}

void spmv_b_hyb_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                    const float* x) {
  static Parts p;
  prepare(
      p, pos, crd, vals, dim_i, dim_j, [&](int64_t* n) { return spmv_b_hyb_decompose_A_sizes(dim_i, dim_j, pos, crd, n); },
      [&] { return spmv_b_hyb_decompose_A(dim_i, dim_j, pos, crd, vals, SPGEN_PARTS, p.lengths); });
  spmv_b_hyb(dim_i, dim_j, y, SPGEN_PARTS, x);
}

namespace {

// A SELL part: pos, rows, slices, columns, values.
struct SellParts : PartArrays<5> {
  SellParts() : PartArrays(1u << 4) {}
};

#define SPGEN_SELL p.i(0), p.i(1), p.i(2), p.i(3), p.v(4)

// One SELL kernel (its inspector's two calls and its executor) behind the CSR signature.
template <class Sizes, class Fill, class Kernel>
void sell_csr(SellParts& p, int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
              const float* x, Sizes sizes, Fill fill, Kernel kernel) {
  prepare(
      p, pos, crd, vals, dim_i, dim_j, [&](int64_t* n) { return sizes(dim_i, dim_j, pos, crd, n); },
      [&] { return fill(dim_i, dim_j, pos, crd, vals, SPGEN_SELL, p.lengths); });
  kernel(dim_i, dim_j, y, SPGEN_SELL, x);
}

}  // namespace

void spmv_b_sell8_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                      const float* x) {
  static SellParts p;
  sell_csr(p, dim_i, dim_j, y, pos, crd, vals, x, spmv_b_sell8_decompose_A_sizes, spmv_b_sell8_decompose_A, spmv_b_sell8);
}

void spmv_b_sell16_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                       const float* x) {
  static SellParts p;
  sell_csr(p, dim_i, dim_j, y, pos, crd, vals, x, spmv_b_sell16_decompose_A_sizes, spmv_b_sell16_decompose_A, spmv_b_sell16);
}

namespace {

// ELL+COO's parts: the ELL part's columns and values, the COO part's pos, rows, columns, values.
struct EllCooParts : PartArrays<6> {
  EllCooParts() : PartArrays(1u << 1 | 1u << 5) {}
};

#define SPGEN_ELL_COO p.i(0), p.v(1), p.i(2), p.i(3), p.i(4), p.v(5)

}  // namespace

void spmv_b_ell4_il16_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                          const float* x) {
  static EllCooParts p;
  prepare(
      p, pos, crd, vals, dim_i, dim_j, [&](int64_t* n) { return spmv_b_ell4_il16_decompose_A_sizes(dim_i, dim_j, pos, crd, n); },
      [&] { return spmv_b_ell4_il16_decompose_A(dim_i, dim_j, pos, crd, vals, SPGEN_ELL_COO, p.lengths); });
  spmv_b_ell4_il16(dim_i, dim_j, y, SPGEN_ELL_COO, x);
}

void spmv_b_bsr3_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                     const float* x) {
  static PartArrays<3> p(1u << 2);  // (the BSR part's pos, columns, values)
  prepare(
      p, pos, crd, vals, dim_i, dim_j, [&](int64_t* n) { return spmv_b_bsr3_decompose_A_sizes(dim_i, dim_j, pos, crd, n); },
      [&] { return spmv_b_bsr3_decompose_A(dim_i, dim_j, pos, crd, vals, p.i(0), p.i(1), p.v(2), p.lengths); });
  spmv_b_bsr3(dim_i, dim_j, y, p.i(0), p.i(1), p.v(2), x);
}

namespace {

// The entries of a CSR matrix over the slots of its occupied r x r blocks (1: every one full).
double block_fill(int64_t rows, int64_t cols, const int32_t* pos, const int32_t* crd, int64_t r) {
  std::vector<int64_t> seen_in(static_cast<size_t>((cols + r - 1) / r), -1);  // the block row that last saw a block column
  int64_t blocks = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int32_t p = pos[i]; p < pos[i + 1]; ++p) {
      int64_t& seen = seen_in[static_cast<size_t>(crd[p] / r)];
      if (seen != i / r) seen = i / r, ++blocks;
    }
  return blocks ? static_cast<double>(pos[rows]) / static_cast<double>(blocks * r * r) : 0;
}

}  // namespace

void spmv_b_auto_formats_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                             const float* x) {
  static const int32_t* seen = nullptr;
  static int64_t seen_rows = -1;
  static bool bsr3 = false, sell = false, ell4 = false;
  if (seen != pos || seen_rows != dim_i) {
    seen = pos;
    seen_rows = dim_i;
    // (the thresholds of passes/choose_input_format.cpp)
    double sum = 0, squares = 0;
    int64_t longest = 0;
    for (int64_t i = 0; i < dim_i; ++i) {
      const double length = pos[i + 1] - pos[i];
      sum += length;
      squares += length * length;
      longest = std::max<int64_t>(longest, pos[i + 1] - pos[i]);
    }
    const double mean = dim_i ? sum / static_cast<double>(dim_i) : 0;
    const double variance = dim_i ? squares / static_cast<double>(dim_i) - mean * mean : 0;
    const double cv = mean > 0 ? std::sqrt(std::max(variance, 0.0)) / mean : 0;
    // The block size of fewest bytes an entry among blocks at least 90 % full, if at most 2/3 of csr's.
    int64_t block = 0;
    double block_bytes = 2.0 / 3.0 * 8.0;
    for (const int64_t r : {2, 3, 4, 8}) {
      const double fill = block_fill(dim_i, dim_j, pos, crd, r);
      const double bytes = (4.0 + 4.0 / static_cast<double>(r * r)) / fill;
      if (fill >= 0.9 && bytes <= block_bytes) block = r, block_bytes = bytes;
    }
    bsr3 = block == 3;
    if (block && !bsr3)
      std::fprintf(stderr, "bench_kernels: spgen would store this matrix's %lldx%lld blocks as BSR; the bench has 3x3 only: csr\n",
                   static_cast<long long>(block), static_cast<long long>(block));
    sell = !block && mean <= 8 && cv >= 0.5;
    const bool ell = !block && !sell && longest > 0 && longest <= 8 && static_cast<double>(longest * dim_i) <= 1.25 * sum;
    ell4 = ell && longest == 4;
    if (ell && !ell4)
      std::fprintf(stderr, "bench_kernels: spgen would store this matrix as ELL of width %lld; the bench has width 4 only: csr\n",
                   static_cast<long long>(longest));
  }
  if (bsr3)
    spmv_b_bsr3_csr(dim_i, dim_j, y, pos, crd, vals, x);
  else if (sell)
    spmv_b_sell8_csr(dim_i, dim_j, y, pos, crd, vals, x);
  else if (ell4)
    spmv_b_ell4_il16_csr(dim_i, dim_j, y, pos, crd, vals, x);
  else
    spmv_b_auto(dim_i, dim_j, y, pos, crd, vals, x);
}

void spmv_b_hyb_il16_csr(int64_t dim_i, int64_t dim_j, float* y, const int32_t* pos, const int32_t* crd, const float* vals,
                         const float* x) {
  static Parts p;
  prepare(
      p, pos, crd, vals, dim_i, dim_j, [&](int64_t* n) { return spmv_b_hyb_il16_decompose_A_sizes(dim_i, dim_j, pos, crd, n); },
      [&] { return spmv_b_hyb_il16_decompose_A(dim_i, dim_j, pos, crd, vals, SPGEN_PARTS, p.lengths); });
  spmv_b_hyb_il16(dim_i, dim_j, y, SPGEN_PARTS, x);
}
