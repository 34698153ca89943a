// Fuzz target of the generated conversion routines (the kernels of fuzz/kernels/, generated at
// build time): arbitrary packed arrays given to unpack, arbitrary entries given to pack. Each
// must return an error code or stay within the arrays it was given (AddressSanitizer in the
// libFuzzer build), and a status that is neither SPGEN_OK nor a documented error is a finding.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz_targets.h"
#include "unpack_bsr.h"
#include "unpack_coo.h"
#include "unpack_csf.h"
#include "unpack_csr.h"
#include "unpack_dcsr.h"
#include "unpack_ell.h"
#include "unpack_sell.h"

namespace spgen_fuzz {

namespace {

using UnpackFn = int (*)(const int64_t* dims, const int32_t* const* a, const float* vals, const int64_t* lengths,
                         int64_t* nnz, int64_t* coords, float* out);
using SizesFn = int (*)(int64_t nnz, const int64_t* coords, const int64_t* dims, int64_t* lengths);
using PackFn = int (*)(int64_t nnz, const int64_t* coords, const float* vals, const int64_t* dims, int32_t* const* a,
                       float* out, const int64_t* lengths);

// One kernel's routines for its sparse tensor, with its order and its pos/crd array count.
struct Routines {
  int order;
  int arrays;
  UnpackFn unpack;
  SizesFn sizes;
  PackFn pack;
};

const Routines kRoutines[] = {
    {2, 2,
     [](const int64_t* d, const int32_t* const* a, const float* v, const int64_t* l, int64_t* n, int64_t* c, float* o) {
       return unpack_csr_unpack_A(d, a[0], a[1], v, l, n, c, o);
     },
     unpack_csr_pack_A_sizes,
     [](int64_t n, const int64_t* c, const float* v, const int64_t* d, int32_t* const* a, float* o, const int64_t* l) {
       return unpack_csr_pack_A(n, c, v, d, a[0], a[1], o, l);
     }},
    {2, 3,
     [](const int64_t* d, const int32_t* const* a, const float* v, const int64_t* l, int64_t* n, int64_t* c, float* o) {
       return unpack_coo_unpack_A(d, a[0], a[1], a[2], v, l, n, c, o);
     },
     unpack_coo_pack_A_sizes,
     [](int64_t n, const int64_t* c, const float* v, const int64_t* d, int32_t* const* a, float* o, const int64_t* l) {
       return unpack_coo_pack_A(n, c, v, d, a[0], a[1], a[2], o, l);
     }},
    {2, 2,
     [](const int64_t* d, const int32_t* const* a, const float* v, const int64_t* l, int64_t* n, int64_t* c, float* o) {
       return unpack_bsr_unpack_A(d, a[0], a[1], v, l, n, c, o);
     },
     unpack_bsr_pack_A_sizes,
     [](int64_t n, const int64_t* c, const float* v, const int64_t* d, int32_t* const* a, float* o, const int64_t* l) {
       return unpack_bsr_pack_A(n, c, v, d, a[0], a[1], o, l);
     }},
    {2, 1,
     [](const int64_t* d, const int32_t* const* a, const float* v, const int64_t* l, int64_t* n, int64_t* c, float* o) {
       return unpack_ell_unpack_A(d, a[0], v, l, n, c, o);
     },
     unpack_ell_pack_A_sizes,
     [](int64_t n, const int64_t* c, const float* v, const int64_t* d, int32_t* const* a, float* o, const int64_t* l) {
       return unpack_ell_pack_A(n, c, v, d, a[0], o, l);
     }},
    {2, 4,
     [](const int64_t* d, const int32_t* const* a, const float* v, const int64_t* l, int64_t* n, int64_t* c, float* o) {
       return unpack_dcsr_unpack_A(d, a[0], a[1], a[2], a[3], v, l, n, c, o);
     },
     unpack_dcsr_pack_A_sizes,
     [](int64_t n, const int64_t* c, const float* v, const int64_t* d, int32_t* const* a, float* o, const int64_t* l) {
       return unpack_dcsr_pack_A(n, c, v, d, a[0], a[1], a[2], a[3], o, l);
     }},
    {3, 6,
     [](const int64_t* d, const int32_t* const* a, const float* v, const int64_t* l, int64_t* n, int64_t* c, float* o) {
       return unpack_csf_unpack_B(d, a[0], a[1], a[2], a[3], a[4], a[5], v, l, n, c, o);
     },
     unpack_csf_pack_B_sizes,
     [](int64_t n, const int64_t* c, const float* v, const int64_t* d, int32_t* const* a, float* o, const int64_t* l) {
       return unpack_csf_pack_B(n, c, v, d, a[0], a[1], a[2], a[3], a[4], a[5], o, l);
     }},
    {2, 4,  // SELL-4-8: its own routines (rows listed once, slices' first slots, slot-major columns)
     [](const int64_t* d, const int32_t* const* a, const float* v, const int64_t* l, int64_t* n, int64_t* c, float* o) {
       return unpack_sell_unpack_A(d, a[0], a[1], a[2], a[3], v, l, n, c, o);
     },
     unpack_sell_pack_A_sizes,
     [](int64_t n, const int64_t* c, const float* v, const int64_t* d, int32_t* const* a, float* o, const int64_t* l) {
       return unpack_sell_pack_A(n, c, v, d, a[0], a[1], a[2], a[3], o, l);
     }},
};

// The input, read a byte at a time (zeros once it is used up).
struct Bytes {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  uint8_t next() { return at < size ? data[at++] : 0; }
  // Small numbers, a few negative, now and then a large one: where structures are nearly valid.
  int64_t number() {
    const uint8_t b = next();
    if (b == 255) return int64_t{1} << 40;
    if (b == 254) return 2147483647;
    return static_cast<int8_t>(b) % 24;
  }
};

// SPGEN_OK or one of the SPGEN_ERR_* codes the header documents.
void check_status(int status) {
  if (status < SPGEN_OK || status > SPGEN_ERR_NOT_IN_STRUCTURE) {
    std::fprintf(stderr, "spgen fuzz: a conversion routine returned %d\n", status);
    std::abort();
  }
}

void unpack_arbitrary(const Routines& r, Bytes& in) {
  std::vector<int64_t> dims(static_cast<size_t>(r.order));
  for (int64_t& d : dims) d = 1 + in.next() % 9;
  std::vector<std::vector<int32_t>> arrays(static_cast<size_t>(r.arrays));
  std::vector<int64_t> lengths;
  for (std::vector<int32_t>& a : arrays) {
    a.resize(in.next() % 14);
    lengths.push_back(static_cast<int64_t>(a.size()));
  }
  std::vector<float> vals(in.next() % 40);
  lengths.push_back(static_cast<int64_t>(vals.size()));
  // A length that lies about its array is the caller's bug, not the routine's: the lengths are
  // the arrays' own, and the contents arbitrary.
  for (std::vector<int32_t>& a : arrays)
    for (int32_t& x : a) x = static_cast<int32_t>(in.number());
  for (float& v : vals) v = static_cast<float>(in.next());
  std::vector<const int32_t*> pointers;
  for (const std::vector<int32_t>& a : arrays) pointers.push_back(a.data());
  int64_t nnz = 0;
  const int status = r.unpack(dims.data(), pointers.data(), vals.data(), lengths.data(), &nnz, nullptr, nullptr);
  check_status(status);
  if (status != 0) return;
  if (nnz < 0 || nnz > static_cast<int64_t>(vals.size()) * 4 + 1024) {
    std::fprintf(stderr, "spgen fuzz: unpack counted %lld entries from %zu values\n", static_cast<long long>(nnz), vals.size());
    std::abort();
  }
  std::vector<int64_t> coords(static_cast<size_t>(nnz) * dims.size() + 1);
  std::vector<float> out(static_cast<size_t>(nnz) + 1);
  int64_t again = 0;
  check_status(r.unpack(dims.data(), pointers.data(), vals.data(), lengths.data(), &again, coords.data(), out.data()));
  if (again != nnz) std::abort();
}

void pack_arbitrary(const Routines& r, Bytes& in) {
  std::vector<int64_t> dims(static_cast<size_t>(r.order));
  // Small dims, some zero or negative: a dense level of a huge dim makes pack allocate that many
  // counts, which fails with SPGEN_ERR_ALLOC (std::bad_alloc caught) but AddressSanitizer
  // reports as an error of its own. Coordinates may be anything.
  for (int64_t& d : dims) d = static_cast<int8_t>(in.next()) % 13;
  const int64_t nnz = in.next() % 24;
  std::vector<int64_t> coords(static_cast<size_t>(nnz) * dims.size() + 1);
  for (int64_t& c : coords) c = in.number();
  std::vector<float> vals(static_cast<size_t>(nnz) + 1);
  for (float& v : vals) v = static_cast<float>(in.next());
  std::vector<int64_t> lengths(static_cast<size_t>(r.arrays) + 1);
  const int status = r.sizes(nnz, coords.data(), dims.data(), lengths.data());
  check_status(status);
  if (status != 0) return;
  // Sizes of what was accepted: within what the dims allow, so allocate and pack.
  if (std::any_of(lengths.begin(), lengths.end(), [](int64_t n) { return n < 0 || n > (int64_t{1} << 20); })) return;
  std::vector<std::vector<int32_t>> arrays;
  for (int k = 0; k < r.arrays; ++k) arrays.emplace_back(static_cast<size_t>(lengths[static_cast<size_t>(k)]));
  std::vector<float> out(static_cast<size_t>(lengths.back()));
  std::vector<int32_t*> pointers;
  for (std::vector<int32_t>& a : arrays) pointers.push_back(a.data());
  check_status(r.pack(nnz, coords.data(), vals.data(), dims.data(), pointers.data(), out.data(), lengths.data()));
}

}  // namespace

int unpack_routines(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  const Routines& r = kRoutines[in.next() % (sizeof kRoutines / sizeof *kRoutines)];
  if (in.next() % 2) pack_arbitrary(r, in);
  else unpack_arbitrary(r, in);
  return 0;
}

}  // namespace spgen_fuzz
