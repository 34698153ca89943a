// Compiled by tests/pack/test_inspector.cpp with seven generated SpMM kernels whose A is
// decomposed (insp_hyb: hyb, 2 partitions, buckets 1 2 4, int32/float; insp_ell: ell+coo, width 3,
// int64/double; insp_bsr: bsr+csr, 2x3 blocks, fill 0.5, int32/double; insp_bsr_only: bsr,
// 2x3 blocks, int64/float; insp_hyb_il and
// insp_ell_il: the first two with their ELL slots interleaved by 4 rows; insp_sell: sell, slices
// of 4 rows sorted in windows of 8, int32/float), under AddressSanitizer.
// For each kernel and each input (random skewed rows with empty rows and a dense row, an empty
// matrix, a single dense row, rows longer than the widest bucket) it checks that the inspector's
// parts hold every entry once and have the shape each part promises, and that the executor
// matches a plain loop; then that each bad input gets its error code and nothing is written.
// Prints one line per failure and exits 1 if there was any.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "insp_bsr.h"
#include "insp_bsr_only.h"
#include "insp_ell.h"
#include "insp_ell_il.h"
#include "insp_hyb.h"
#include "insp_hyb_il.h"
#include "insp_sell.h"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::printf("FAIL: %s\n", what.c_str());
}

struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> pos{0};
  std::vector<int64_t> crd;
  std::vector<double> vals;
};

// Rows of the given lengths, with sorted distinct random columns and nonzero values.
Csr make_csr(int64_t cols, const std::vector<int64_t>& lengths, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Csr a;
  a.rows = static_cast<int64_t>(lengths.size());
  a.cols = cols;
  for (int64_t len : lengths) {
    std::vector<int64_t> row(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c) row[static_cast<size_t>(c)] = c;
    std::shuffle(row.begin(), row.end(), rng);
    row.resize(static_cast<size_t>(len));
    std::sort(row.begin(), row.end());
    for (int64_t c : row) {
      a.crd.push_back(c);
      a.vals.push_back(static_cast<double>(rng() % 17) + 1.0);  // small integers: exact sums
    }
    a.pos.push_back(static_cast<int64_t>(a.crd.size()));
  }
  return a;
}

struct Input {
  std::string label;
  Csr a;
};

std::vector<Input> inputs() {
  std::vector<Input> all;
  std::mt19937_64 rng(7);
  std::vector<int64_t> skewed;
  for (int r = 0; r < 40; ++r) skewed.push_back(r % 5 == 0 ? 0 : static_cast<int64_t>(rng() % 3 == 0 ? rng() % 12 : rng() % 3));
  skewed[17] = 50;  // a dense row
  all.push_back({"skewed rows, empty rows and a dense row", make_csr(50, skewed, 1)});
  all.push_back({"an empty 0x0 matrix", make_csr(0, {}, 2)});
  all.push_back({"a 5x7 matrix with no entries", make_csr(7, {0, 0, 0, 0, 0}, 3)});
  all.push_back({"a single dense row", make_csr(50, {50}, 4)});
  all.push_back({"rows longer than the widest bucket", make_csr(9, {9, 5, 0, 8, 1}, 5)});
  return all;
}

// Dense copy of the matrix, from the CSR input.
std::vector<double> dense_of(const Csr& a) {
  std::vector<double> d(static_cast<size_t>(a.rows * a.cols), 0.0);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t e = a.pos[static_cast<size_t>(r)]; e < a.pos[static_cast<size_t>(r) + 1]; ++e)
      d[static_cast<size_t>(r * a.cols + a.crd[static_cast<size_t>(e)])] += a.vals[static_cast<size_t>(e)];
  return d;
}

// What a part array holds, by kernel (the order the header lists them).
enum Array { kIndex, kValue };

// One kernel: typed calls through its inspector and executor.
template <class I, class V>
struct Kernel {
  std::string name;
  std::vector<Array> arrays;
  std::function<int(int64_t, int64_t, const I*, const I*, int64_t*)> sizes;
  std::function<int(int64_t, int64_t, const I*, const I*, const V*, void* const*, const int64_t*)> fill;
  std::function<void(int64_t, int64_t, int64_t, V*, void* const*, const V*)> run;
  // Checks the parts' shapes and adds every stored entry into `dense`; returns the entry count.
  std::function<int64_t(const Csr&, void* const*, const std::vector<int64_t>&, std::vector<double>&, const std::string&)> walk;
};

// The parts, each in a buffer of exactly its length (AddressSanitizer catches an access past it).
struct Parts {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<void*> pointers;
};

template <class I, class V>
Parts allocate(const Kernel<I, V>& k, const std::vector<int64_t>& lengths, unsigned char fill = 0xAB) {
  Parts p;
  for (size_t n = 0; n < k.arrays.size(); ++n) {
    size_t element = k.arrays[n] == kIndex ? sizeof(I) : sizeof(V);
    p.bytes.emplace_back(static_cast<size_t>(lengths[n]) * element, fill);
  }
  for (auto& b : p.bytes) p.pointers.push_back(b.empty() ? nullptr : b.data());
  return p;
}

template <class I, class V>
void check_input(const Kernel<I, V>& k, const Input& in) {
  const std::string where = k.name + ", " + in.label;
  const Csr& a = in.a;
  std::vector<I> pos(a.pos.begin(), a.pos.end()), crd(a.crd.begin(), a.crd.end());
  std::vector<V> vals(a.vals.begin(), a.vals.end());
  std::vector<int64_t> lengths(k.arrays.size(), -1);
  expect(k.sizes(a.rows, a.cols, pos.data(), crd.data(), lengths.data()) == SPGEN_OK, where + ": sizes");
  Parts parts = allocate(k, lengths);
  int status = k.fill(a.rows, a.cols, pos.data(), crd.data(), vals.data(), parts.pointers.data(), lengths.data());
  expect(status == SPGEN_OK, where + ": fill returned " + std::to_string(status));
  if (status != SPGEN_OK) return;
  std::vector<double> got(static_cast<size_t>(a.rows * a.cols), 0.0);
  int64_t stored = k.walk(a, parts.pointers.data(), lengths, got, where);
  expect(stored == a.pos.back(), where + ": the parts store " + std::to_string(stored) + " entries, the input " +
                                     std::to_string(a.pos.back()));
  expect(got == dense_of(a), where + ": the parts do not add up to the input");

  // The executor against a plain loop.
  const int64_t n = 3;
  std::vector<V> b(static_cast<size_t>(a.cols * n)), c(static_cast<size_t>(a.rows * n), V(-99));
  for (size_t e = 0; e < b.size(); ++e) b[e] = static_cast<V>(static_cast<double>(e % 7) - 3.0);
  k.run(a.rows, n, a.cols, c.data(), parts.pointers.data(), b.data());
  std::vector<double> want(static_cast<size_t>(a.rows * n), 0.0);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t e = a.pos[static_cast<size_t>(r)]; e < a.pos[static_cast<size_t>(r) + 1]; ++e)
      for (int64_t j = 0; j < n; ++j)
        want[static_cast<size_t>(r * n + j)] += a.vals[static_cast<size_t>(e)] * static_cast<double>(b[static_cast<size_t>(a.crd[static_cast<size_t>(e)] * n + j)]);
  for (size_t e = 0; e < want.size(); ++e)
    expect(std::fabs(static_cast<double>(c[e]) - want[e]) <= 1e-4 * (1.0 + std::fabs(want[e])),
           where + ": C[" + std::to_string(e) + "] = " + std::to_string(static_cast<double>(c[e])) + ", want " +
               std::to_string(want[e]));
}

template <class I, class V>
void check_errors(const Kernel<I, V>& k) {
  const Csr a = make_csr(9, {3, 0, 9, 2}, 11);
  auto attempt = [&](const std::string& what, int want, const std::function<void(std::vector<I>&, std::vector<I>&, int64_t&)>& corrupt,
                     int length_change) {
    std::vector<I> pos(a.pos.begin(), a.pos.end()), crd(a.crd.begin(), a.crd.end());
    std::vector<V> vals(a.vals.begin(), a.vals.end());
    std::vector<int64_t> lengths(k.arrays.size());
    expect(k.sizes(a.rows, a.cols, pos.data(), crd.data(), lengths.data()) == SPGEN_OK, k.name + ": sizes of the valid input");
    int64_t cols = a.cols;
    corrupt(pos, crd, cols);
    Parts parts = allocate(k, lengths);
    const std::vector<std::vector<unsigned char>> before = parts.bytes;
    std::vector<int64_t> given = lengths;
    given[0] += length_change;
    int status = k.fill(a.rows, cols, pos.data(), crd.data(), vals.data(), parts.pointers.data(), given.data());
    expect(status == want, k.name + ", " + what + ": fill returned " + std::to_string(status) + ", want " + std::to_string(want));
    expect(parts.bytes == before, k.name + ", " + what + ": fill wrote to the parts although it failed");
    if (length_change == 0) {
      std::vector<int64_t> out(k.arrays.size());
      status = k.sizes(a.rows, cols, pos.data(), crd.data(), out.data());
      expect(status == want, k.name + ", " + what + ": sizes returned " + std::to_string(status));
    }
  };
  auto none = [](std::vector<I>&, std::vector<I>&, int64_t&) {};
  attempt("pos not starting at 0", SPGEN_ERR_POS_NOT_MONOTONE, [](std::vector<I>& p, std::vector<I>&, int64_t&) { p[0] = 1; }, 0);
  attempt("pos decreasing", SPGEN_ERR_POS_NOT_MONOTONE, [](std::vector<I>& p, std::vector<I>&, int64_t&) { p[2] = p[1] - 1; }, 0);
  attempt("a column past the end", SPGEN_ERR_COORD_RANGE, [](std::vector<I>&, std::vector<I>& c, int64_t& cols) { c[4] = static_cast<I>(cols); }, 0);
  attempt("a negative column", SPGEN_ERR_COORD_RANGE, [](std::vector<I>&, std::vector<I>& c, int64_t&) { c[0] = -1; }, 0);
  attempt("a negative dimension", SPGEN_ERR_DIM, [](std::vector<I>&, std::vector<I>&, int64_t& cols) { cols = -1; }, 0);
  attempt("a length one too long", SPGEN_ERR_LENGTH, none, 1);
  attempt("a length one too short", SPGEN_ERR_LENGTH, none, -1);
  std::vector<I> pos(a.pos.begin(), a.pos.end()), crd(a.crd.begin(), a.crd.end());
  expect(k.sizes(a.rows, a.cols, pos.data(), crd.data(), nullptr) == SPGEN_ERR_NULL, k.name + ": sizes without lengths");
  std::vector<int64_t> lengths(k.arrays.size());
  expect(k.sizes(a.rows, a.cols, nullptr, crd.data(), lengths.data()) == SPGEN_ERR_NULL, k.name + ": sizes without pos");
}

// ---- the three kernels, and what each part promises ----

template <class I, class V>
I* index_array(void* const* a, size_t k) { return static_cast<I*>(a[k]); }
template <class I, class V>
V* value_array(void* const* a, size_t k) { return static_cast<V*>(a[k]); }

// Where an ELL part keeps slot q of its row s: row by row, or interleaved by `lanes` rows.
int64_t slot_at(int64_t s, int64_t q, int64_t w, int64_t lanes) { return lanes ? (s / lanes) * lanes * w + q * lanes + s % lanes : s * w + q; }
// The slots of `rows` rows of width w: interleaved ones fill whole groups.
int64_t slot_count(int64_t rows, int64_t w, int64_t lanes) { return (lanes ? (rows + lanes - 1) / lanes * lanes : rows) * w; }

template <int64_t kLanes>
Kernel<int32_t, float> hyb_kernel() {
  using I = int32_t;
  using V = float;
  Kernel<I, V> k;
  k.name = kLanes ? "insp_hyb_il" : "insp_hyb";
  for (int p = 0; p < 6; ++p) k.arrays.insert(k.arrays.end(), {kIndex, kIndex, kIndex, kValue});
  k.sizes = kLanes ? insp_hyb_il_decompose_A_sizes : insp_hyb_decompose_A_sizes;
  k.fill = [](int64_t r, int64_t c, const I* pos, const I* crd, const V* vals, void* const* a, const int64_t* n) {
#define PART(k) index_array<I, V>(a, 4 * k), index_array<I, V>(a, 4 * k + 1), index_array<I, V>(a, 4 * k + 2), value_array<I, V>(a, 4 * k + 3)
    return (kLanes ? insp_hyb_il_decompose_A : insp_hyb_decompose_A)(r, c, pos, crd, vals, PART(0), PART(1), PART(2), PART(3), PART(4), PART(5), n);
  };
  k.run = [](int64_t i, int64_t kk, int64_t j, V* c, void* const* a, const V* b) {
    (kLanes ? insp_hyb_il : insp_hyb)(i, kk, j, c, PART(0), PART(1), PART(2), PART(3), PART(4), PART(5), b);
#undef PART
  };
  k.walk = [](const Csr& in, void* const* a, const std::vector<int64_t>& n, std::vector<double>& dense, const std::string& where) {
    const int64_t widths[] = {1, 2, 4};
    const int64_t span = in.cols == 0 ? 1 : (in.cols + 1) / 2;  // columns per partition
    int64_t stored = 0;
    for (int part = 0; part < 6; ++part) {
      const int64_t w = widths[part % 3], partition = part / 3;
      const std::string at = where + ", part " + std::to_string(part);
      const I* pos = index_array<I, V>(a, 4 * part);
      const I* rows = index_array<I, V>(a, 4 * part + 1);
      const I* cols = index_array<I, V>(a, 4 * part + 2);
      const V* vals = value_array<I, V>(a, 4 * part + 3);
      expect(n[4 * part] == 2 && pos[0] == 0 && pos[1] == n[4 * part + 1], at + ": pos is not {0, rows}");
      expect(n[4 * part + 2] == slot_count(n[4 * part + 1], w, kLanes) && n[4 * part + 3] == n[4 * part + 2], at + ": ELL lengths");
      // An interleaved last group's missing rows are all padding.
      for (int64_t s = n[4 * part + 1]; s < slot_count(n[4 * part + 1], 1, kLanes); ++s)
        for (int64_t q = 0; q < w; ++q)
          expect(cols[slot_at(s, q, w, kLanes)] == -1 && vals[slot_at(s, q, w, kLanes)] == V(0), at + ": a missing row is not padding");
      for (int64_t s = 0; s < n[4 * part + 1]; ++s) {
        const int64_t r = rows[s];
        expect(r >= 0 && r < in.rows, at + ": a row out of range");
        if (s > 0) expect(w == 4 ? rows[s - 1] <= r : rows[s - 1] < r, at + ": rows not increasing (or repeated below the widest bucket)");
        int64_t count = 0;
        bool padded = false;
        for (int64_t q = 0; q < w; ++q) {
          const int64_t col = cols[slot_at(s, q, w, kLanes)];
          if (col < 0) {
            padded = true;
            expect(vals[slot_at(s, q, w, kLanes)] == V(0), at + ": padding with a nonzero value");
            continue;
          }
          expect(!padded, at + ": an entry after padding");
          expect(col / span == partition, at + ": a column outside the partition");
          dense[static_cast<size_t>(r * in.cols + col)] += static_cast<double>(vals[slot_at(s, q, w, kLanes)]);
          ++count;
        }
        // The narrowest bucket that fits: more entries than the next narrower one holds.
        if (w > 1 && (w < 4 || s == 0 || rows[s - 1] != r)) {
          int64_t total = count;
          for (int64_t t = s + 1; w == 4 && t < n[4 * part + 1] && rows[t] == r; ++t) total += w;
          expect(total > w / 2, at + ": row " + std::to_string(r) + " fits a narrower bucket");
        }
        expect(count > 0, at + ": an empty row is listed");
        stored += count;
      }
    }
    return stored;
  };
  return k;
}

template <int64_t kLanes>
Kernel<int64_t, double> ell_kernel() {
  using I = int64_t;
  using V = double;
  Kernel<I, V> k;
  k.name = kLanes ? "insp_ell_il" : "insp_ell";
  k.arrays = {kIndex, kValue, kIndex, kIndex, kIndex, kValue};
#define ARRAYS index_array<I, V>(a, 0), value_array<I, V>(a, 1), index_array<I, V>(a, 2), index_array<I, V>(a, 3), index_array<I, V>(a, 4), value_array<I, V>(a, 5)
  k.sizes = kLanes ? insp_ell_il_decompose_A_sizes : insp_ell_decompose_A_sizes;
  k.fill = [](int64_t r, int64_t c, const I* pos, const I* crd, const V* vals, void* const* a, const int64_t* n) {
    return (kLanes ? insp_ell_il_decompose_A : insp_ell_decompose_A)(r, c, pos, crd, vals, ARRAYS, n);
  };
  k.run = [](int64_t i, int64_t kk, int64_t j, V* c, void* const* a, const V* b) { (kLanes ? insp_ell_il : insp_ell)(i, kk, j, c, ARRAYS, b); };
#undef ARRAYS
  k.walk = [](const Csr& in, void* const* a, const std::vector<int64_t>& n, std::vector<double>& dense, const std::string& where) {
    const int64_t w = 3;
    int64_t stored = 0;
    const I* ell = index_array<I, V>(a, 0);
    const V* ell_vals = value_array<I, V>(a, 1);
    expect(n[0] == slot_count(in.rows, w, kLanes) && n[1] == n[0], where + ": ELL lengths");
    for (int64_t r = in.rows; r < slot_count(in.rows, 1, kLanes); ++r)
      for (int64_t q = 0; q < w; ++q)
        expect(ell[slot_at(r, q, w, kLanes)] == -1 && ell_vals[slot_at(r, q, w, kLanes)] == 0, where + ": a missing row is not padding");
    for (int64_t r = 0; r < in.rows; ++r) {
      const int64_t len = in.pos[static_cast<size_t>(r) + 1] - in.pos[static_cast<size_t>(r)];
      for (int64_t q = 0; q < w; ++q) {
        const int64_t col = ell[slot_at(r, q, w, kLanes)];
        expect((col >= 0) == (q < len), where + ": ELL row " + std::to_string(r) + " does not hold its first entries");
        if (col < 0) continue;
        expect(col == in.crd[static_cast<size_t>(in.pos[static_cast<size_t>(r)] + q)], where + ": ELL entry out of order");
        dense[static_cast<size_t>(r * in.cols + col)] += ell_vals[slot_at(r, q, w, kLanes)];
        ++stored;
      }
    }
    const I* pos = index_array<I, V>(a, 2);
    const I *rows = index_array<I, V>(a, 3), *cols = index_array<I, V>(a, 4);
    const V* vals = value_array<I, V>(a, 5);
    expect(n[2] == 2 && pos[0] == 0 && pos[1] == n[3], where + ": COO pos");
    for (int64_t e = 0; e < n[3]; ++e) {
      if (e > 0) expect(rows[e - 1] <= rows[e], where + ": COO rows decrease");
      dense[static_cast<size_t>(rows[e] * in.cols + cols[e])] += vals[e];
      ++stored;
    }
    return stored;
  };
  return k;
}

// The BSR part of 2x3 blocks in arrays `first` .. `first` + 2: every entry of a block added into
// `dense` and marked in `in_block`, each block holding at least `min_fill` of them; returns the
// entry count.
template <class I, class V>
int64_t walk_bsr_part(const Csr& in, void* const* a, const std::vector<int64_t>& n, std::vector<double>& dense, const std::string& where,
                      int64_t min_fill, std::vector<bool>& in_block) {
  const int64_t br = 2, bc = 3;
  const int64_t block_rows = (in.rows + br - 1) / br;
  const I* pos = index_array<I, V>(a, 0);
  const I* crd = index_array<I, V>(a, 1);
  const V* vals = value_array<I, V>(a, 2);
  int64_t stored = 0;
  expect(n[0] == block_rows + 1 && pos[0] == 0 && pos[block_rows] == n[1] && n[2] == n[1] * br * bc, where + ": BSR lengths");
  in_block.assign(static_cast<size_t>(in.rows * in.cols), false);
  for (int64_t g = 0; g < block_rows; ++g)
    for (int64_t p = pos[g]; p < pos[g + 1]; ++p) {
      if (p > pos[g]) expect(crd[p - 1] < crd[p], where + ": block columns not increasing");
      int64_t count = 0;
      for (int64_t x = 0; x < br; ++x)
        for (int64_t y = 0; y < bc; ++y) {
          const int64_t r = g * br + x, c = int64_t{crd[p]} * bc + y;
          const double v = static_cast<double>(vals[(p * br + x) * bc + y]);
          if (r >= in.rows || c >= in.cols) {
            expect(v == 0, where + ": padding of a partial block is not zero");
            continue;
          }
          in_block[static_cast<size_t>(r * in.cols + c)] = true;
          dense[static_cast<size_t>(r * in.cols + c)] += v;
          count += v != 0;
        }
      expect(count >= min_fill, where + ": a block with fewer entries than the fill asks");
      stored += count;
    }
  return stored;
}

Kernel<int32_t, double> bsr_kernel() {
  using I = int32_t;
  using V = double;
  Kernel<I, V> k;
  k.name = "insp_bsr";
  k.arrays = {kIndex, kIndex, kValue, kIndex, kIndex, kValue};
#define ARRAYS index_array<I, V>(a, 0), index_array<I, V>(a, 1), value_array<I, V>(a, 2), index_array<I, V>(a, 3), index_array<I, V>(a, 4), value_array<I, V>(a, 5)
  k.sizes = insp_bsr_decompose_A_sizes;
  k.fill = [](int64_t r, int64_t c, const I* pos, const I* crd, const V* vals, void* const* a, const int64_t* n) {
    return insp_bsr_decompose_A(r, c, pos, crd, vals, ARRAYS, n);
  };
  k.run = [](int64_t i, int64_t kk, int64_t j, V* c, void* const* a, const V* b) { insp_bsr(i, kk, j, c, ARRAYS, b); };
#undef ARRAYS
  k.walk = [](const Csr& in, void* const* a, const std::vector<int64_t>& n, std::vector<double>& dense, const std::string& where) {
    std::vector<bool> in_block;
    int64_t stored = walk_bsr_part<I, V>(in, a, n, dense, where, 3, in_block);  // (fill 0.5 of 6)
    const I* rest_pos = index_array<I, V>(a, 3);
    const I* rest_crd = index_array<I, V>(a, 4);
    const V* rest_vals = value_array<I, V>(a, 5);
    expect(n[3] == in.rows + 1 && rest_pos[0] == 0 && rest_pos[in.rows] == n[4], where + ": CSR lengths");
    for (int64_t r = 0; r < in.rows; ++r)
      for (int64_t e = rest_pos[r]; e < rest_pos[r + 1]; ++e) {
        expect(!in_block[static_cast<size_t>(r * in.cols + rest_crd[e])], where + ": a CSR entry inside a BSR block");
        dense[static_cast<size_t>(r * in.cols + rest_crd[e])] += rest_vals[e];
        ++stored;
      }
    return stored;
  };
  return k;
}

// bsr alone, 2x3 blocks (int64/float): every occupied block, so every entry in one.
Kernel<int64_t, float> bsr_only_kernel() {
  using I = int64_t;
  using V = float;
  Kernel<I, V> k;
  k.name = "insp_bsr_only";
  k.arrays = {kIndex, kIndex, kValue};
#define ARRAYS index_array<I, V>(a, 0), index_array<I, V>(a, 1), value_array<I, V>(a, 2)
  k.sizes = insp_bsr_only_decompose_A_sizes;
  k.fill = [](int64_t r, int64_t c, const I* pos, const I* crd, const V* vals, void* const* a, const int64_t* n) {
    return insp_bsr_only_decompose_A(r, c, pos, crd, vals, ARRAYS, n);
  };
  k.run = [](int64_t i, int64_t kk, int64_t j, V* c, void* const* a, const V* b) { insp_bsr_only(i, kk, j, c, ARRAYS, b); };
#undef ARRAYS
  k.walk = [](const Csr& in, void* const* a, const std::vector<int64_t>& n, std::vector<double>& dense, const std::string& where) {
    std::vector<bool> in_block;
    return walk_bsr_part<I, V>(in, a, n, dense, where, 1, in_block);
  };
  return k;
}

// sell, slices of 4 rows, sorted by length within windows of 8 (int32/float).
Kernel<int32_t, float> sell_kernel() {
  using I = int32_t;
  using V = float;
  Kernel<I, V> k;
  k.name = "insp_sell";
  k.arrays = {kIndex, kIndex, kIndex, kIndex, kValue};
#define ARRAYS index_array<I, V>(a, 0), index_array<I, V>(a, 1), index_array<I, V>(a, 2), index_array<I, V>(a, 3), value_array<I, V>(a, 4)
  k.sizes = insp_sell_decompose_A_sizes;
  k.fill = [](int64_t r, int64_t c, const I* pos, const I* crd, const V* vals, void* const* a, const int64_t* n) {
    return insp_sell_decompose_A(r, c, pos, crd, vals, ARRAYS, n);
  };
  k.run = [](int64_t i, int64_t kk, int64_t j, V* c, void* const* a, const V* b) { insp_sell(i, kk, j, c, ARRAYS, b); };
#undef ARRAYS
  k.walk = [](const Csr& in, void* const* a, const std::vector<int64_t>& n, std::vector<double>& dense, const std::string& where) {
    const int64_t c = 4, sigma = 8, slices = (in.rows + c - 1) / c;
    const I* pos = index_array<I, V>(a, 0);
    const I* rows = index_array<I, V>(a, 1);
    const I* first = index_array<I, V>(a, 2);
    const I* cols = index_array<I, V>(a, 3);
    const V* vals = value_array<I, V>(a, 4);
    auto length = [&](int64_t r) { return in.pos[static_cast<size_t>(r) + 1] - in.pos[static_cast<size_t>(r)]; };
    expect(n[0] == 2 && pos[0] == 0 && pos[1] == in.rows && n[1] == in.rows, where + ": not every row is listed");
    expect(n[2] == slices + 1 && first[0] == 0 && n[3] == int64_t{first[slices]} * c && n[4] == n[3], where + ": SELL lengths");
    // Each window of sigma rows holds its own rows, longest first, ties in row order.
    for (int64_t s = 0; s < in.rows; ++s) {
      expect(rows[s] / sigma == s / sigma, where + ": a row outside its window");
      if (s % sigma > 0)
        expect(length(rows[s - 1]) > length(rows[s]) || (length(rows[s - 1]) == length(rows[s]) && rows[s - 1] < rows[s]),
               where + ": a window not sorted by decreasing length");
    }
    int64_t stored = 0;
    for (int64_t g = 0; g < slices; ++g) {
      int64_t widest = 0;
      for (int64_t s = g * c; s < std::min(in.rows, g * c + c); ++s) widest = std::max(widest, length(rows[s]));
      expect(first[g + 1] - first[g] == widest, where + ": slice " + std::to_string(g) + " is not as wide as its longest row");
      for (int64_t lane = 0; lane < c; ++lane) {
        const int64_t s = g * c + lane, len = s < in.rows ? length(rows[s]) : 0;
        for (int64_t q = 0; q < first[g + 1] - first[g]; ++q) {
          const int64_t at = (first[g] + q) * c + lane;
          if (q >= len) {
            expect(cols[at] == -1 && vals[at] == V(0), where + ": a slot past a row's entries is not padding");
            continue;
          }
          const int64_t e = in.pos[static_cast<size_t>(rows[s])] + q;
          expect(cols[at] == in.crd[static_cast<size_t>(e)], where + ": a row's entries out of CSR order");
          dense[static_cast<size_t>(rows[s] * in.cols + cols[at])] += static_cast<double>(vals[at]);
          ++stored;
        }
      }
    }
    return stored;
  };
  return k;
}

template <class K>
void check_kernel(const K& k) {
  for (const Input& in : inputs()) check_input(k, in);
  check_errors(k);
}

}  // namespace

int main() {
  check_kernel(hyb_kernel<0>());
  check_kernel(ell_kernel<0>());
  check_kernel(hyb_kernel<4>());
  check_kernel(ell_kernel<4>());
  check_kernel(bsr_kernel());
  check_kernel(bsr_only_kernel());
  check_kernel(sell_kernel());
  std::printf("%s: %d failures\n", failures ? "FAILED" : "ok", failures);
  return failures ? 1 : 0;
}
