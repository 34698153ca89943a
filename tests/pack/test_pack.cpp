// The pack/unpack routines spgen writes into every CPU kernel, tested by compiling them: kernels
// for CSR, CSC, DCSR, COO, ELL, ragged, CSF, order-3 COO, BSR, a dense-suffix format, a column-major
// dense tensor, SDDMM (an output sharing an input's structure) and assembled CSR, DCSR, COO,
// ragged, (ragged, compressed) and (compressed, ELL) outputs, and SELL-C-sigma inputs (checked against an
// independent construction of their arrays) are generated, compiled warning-free into one shared library (which also checks that they link
// together) and loaded with dlopen. Their routines are called through their exact C types:
//   - round trips on random and edge inputs (empty, single entry, duplicates, unsorted, empty
//     rows, a zero-size mode): pack's arrays equal those of the runtime's independent packer
//     (templates/spgen_run_runtime.hpp), and unpack gives back the canonical entries (sorted,
//     duplicates summed) in storage order;
//   - every error code on the input that should trigger it;
//   - no access past a buffer: every array handed to a routine ends at an inaccessible page, so a
//     read or write one element past its length crashes the test; pack with one length too
//     small fails with SPGEN_ERR_LENGTH and leaves every buffer untouched.
#include <doctest/doctest.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <utility>

#include "process.h"
#include "spgen_run_runtime.hpp"

using namespace spgen_test;

namespace {

// The status codes the headers document.
constexpr int kOk = 0, kCoordRange = 1, kPosNotMonotone = 2, kLength = 3, kCrdOrder = 4, kEllOverflow = 5, kDim = 6,
              kAlloc = 7, kNull = 8, kNotInStructure = 9;

using Level = spgen_run::Level;
constexpr Level D = Level::Dense, C = Level::Compressed, NU = Level::CompressedNonUnique, S = Level::Singleton,
                DV = Level::DenseVariable, SF = Level::SparseFixed;

// One generated kernel and the tensor whose routines are tested.
struct Case {
  std::string kernel;
  std::string spec;     // the spec file's text
  std::string tensors;  // the config's "tensors" object
  std::string tensor;   // tensor under test
  std::vector<Level> levels;
  std::vector<int> mode_order;
  int64_t width = 0;  // of a sparse-fixed level
  bool index64 = false, value64 = false;
  std::vector<int64_t> dims;  // of the random inputs
  std::string shares;         // output case: the input whose structure it shares, or ""
  std::vector<int64_t> block = {};  // bsr: the block's rows and columns (levels: see bsr_case)
  std::vector<int64_t> sell = {};   // sell: {C, sigma} (level 1 has a pos array: the slices' first slots)
};

const char* const kSpmv = "y(i) = A(i,j) * x(j)\n";
const char* const kSpmm = "C(i,k) = A(i,j) * B(j,k)\n";
const char* const kTtv = "A(i,j) = B(i,j,k) * c(k)\n";
const char* const kSddmm = "Y(i,j) = X(i,j) * A(i,k) * B(j,k)\n";
const char* const kAdd = "C(i,j) = A(i,j) + B(i,j)\n";

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"pk_csr", kSpmv, R"({"y": {"format": "dense"}, "A": {"format": "csr"}})", "A", {D, C}, {0, 1}, 0, false, false, {7, 9}, ""},
      {"pk_csc", kSpmv, R"({"y": {"format": "dense"}, "A": {"format": "csc"}})", "A", {D, C}, {1, 0}, 0, true, true, {7, 9}, ""},
      {"pk_dcsr", kSpmv, R"({"y": {"format": "dense"}, "A": {"format": "dcsr"}})", "A", {C, C}, {0, 1}, 0, false, true, {8, 6}, ""},
      {"pk_coo", kSpmv, R"({"y": {"format": "dense"}, "A": {"format": "coo"}})", "A", {NU, S}, {0, 1}, 0, true, false, {7, 9}, ""},
      {"pk_ell", kSpmv, R"({"y": {"format": "dense"}, "A": {"format": "ell", "width": 3}})", "A", {D, SF}, {0, 1}, 3, false, false, {7, 9}, ""},
      {"pk_ragged", kSpmm, R"({"C": {"format": "dense"}, "A": {"format": "ragged"}})", "A", {D, DV}, {0, 1}, 0, false, true, {7, 9}, ""},
      {"pk_csf", kTtv, R"({"A": {"format": "dense"}, "B": {"format": "csf"}})", "B", {C, C, C}, {0, 1, 2}, 0, true, false, {5, 6, 4}, ""},
      {"pk_coo3", kTtv, R"({"A": {"format": "dense"}, "B": {"format": "coo"}})", "B", {NU, S, S}, {0, 1, 2}, 0, false, false, {5, 6, 4}, ""},
      // COO rows (i,j) of dense or compressed k fibres: a position per distinct (i,j).
      {"pk_coo_rows_dense", kTtv, R"({"A": {"format": "dense"}, "B": {"format": {"levels": ["compressed-nonunique", "singleton", "dense"]}}})", "B",
       {NU, S, D}, {0, 1, 2}, 0, false, true, {5, 6, 4}, ""},
      {"pk_coo_rows_compressed", kTtv, R"({"A": {"format": "dense"}, "B": {"format": {"levels": ["compressed-nonunique", "singleton", "compressed"]}}})", "B",
       {NU, S, C}, {0, 1, 2}, 0, true, false, {5, 6, 4}, ""},
      {"pk_dense_suffix", kTtv, R"({"A": {"format": "dense"}, "B": {"format": {"levels": ["dense", "compressed", "dense"]}}})", "B", {D, C, D},
       {0, 1, 2}, 0, false, true, {4, 6, 3}, ""},
      {"pk_dense_cm", kSpmv, R"({"y": {"format": "dense"}, "A": {"format": {"levels": ["dense", "dense"], "order": [1, 0]}}})", "A", {D, D},
       {1, 0}, 0, false, false, {4, 5}, ""},
      {"pk_sddmm", kSddmm, R"({"X": {"format": "csr"}, "Y": {"format": "csr"}})", "X", {D, C}, {0, 1}, 0, false,
       false, {7, 9}, ""},
      {"pk_add_out", kAdd, R"({"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}})", "C", {D, C},
       {0, 1}, 0, false, false, {7, 9}, ""},
      // Blocks that do not divide the dimensions (the last block row and column are padded).
      {"pk_bsr", kSpmv, R"({"A": {"format": "bsr", "block": [2, 3]}})", "A", {D, C, D, D}, {0, 1, 0, 1}, 0, false,
       false, {7, 8}, "", {2, 3}},
      {"pk_bsr_int64", kSpmm, R"({"A": {"format": "bsr", "block": [4, 1]}})", "A", {D, C, D, D}, {0, 1, 0, 1}, 0, true,
       true, {8, 5}, "", {4, 1}},
      {"pk_add_dcsr_out", kAdd, R"({"A": {"format": "dcsr"}, "B": {"format": "dcsr"}, "C": {"format": "dcsr"}})", "C",
       {C, C}, {0, 1}, 0, true, false, {8, 6}, ""},
      {"pk_add_coo_out", kAdd, R"({"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "coo"}})", "C",
       {NU, S}, {0, 1}, 0, false, true, {7, 9}, ""},
      {"pk_add_ragged_out", kAdd, R"({"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "ragged"}})", "C",
       {D, DV}, {0, 1}, 0, true, false, {7, 9}, ""},
      {"pk_add_ragged_compressed_out", kAdd, R"({"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": {"levels": ["dense-variable", "compressed"]}}})", "C",
       {DV, C}, {0, 1}, 0, false, false, {7, 9}, ""},
      // SELL-C-sigma: 7 rows in slices of 4 (the last slice one row short), in order / sorted in
      // windows of 4 rows.
      {"pk_sell", kSpmv, R"({"A": {"format": "sell", "interleave": 4}})", "A", {C, SF}, {0, 1}, 0, false, false, {7, 9},
       "", {}, {4, 1}},
      {"pk_sell_sorted", kSpmm, R"({"A": {"format": "sell", "interleave": 2, "sigma": 4}})", "A", {C, SF}, {0, 1}, 0,
       true, true, {7, 9}, "", {}, {2, 4}},
      {"pk_add_compressed_ell_out", kAdd, R"({"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": {"levels": ["compressed", {"kind": "sparse-fixed", "width": 3}]}}})", "C",
       {C, SF}, {0, 1}, 3, false, true, {7, 9}, ""},
  };
  return all;
}

const Case& case_named(const std::string& kernel) {
  for (const Case& c : cases())
    if (c.kernel == kernel) return c;
  throw std::logic_error("no case " + kernel);
}

// ---- the kernels, generated and built once into one shared library ----

class Library {
 public:
  Library() {
    std::vector<std::string> objects;
    for (const Case& c : cases()) {
      write_text(dir_.file(c.kernel + ".spg"), c.spec);
      write_text(dir_.file(c.kernel + ".json"), std::string("{\"name\": \"") + c.kernel + "\", \"types\": {\"index\": \"" +
                                                    (c.index64 ? "int64" : "int32") + "\", \"value\": \"" +
                                                    (c.value64 ? "float64" : "float32") + "\"}, \"tensors\": " +
                                                    c.tensors + "}");
      ProcessResult gen = run_process({spgen_binary(), "gen", dir_.file(c.kernel + ".spg"), "--config",
                                       dir_.file(c.kernel + ".json"), "-o", dir_.path()});
      if (gen.exit_code != 0) fail("spgen gen " + c.kernel + ": " + gen.err);
      objects.push_back(dir_.file(c.kernel + ".o"));
    }
    // Compile in parallel; warnings are errors.
    std::atomic<size_t> next{0};
    std::vector<std::string> errors(cases().size());
    auto worker = [&] {
      for (size_t i = next++; i < cases().size(); i = next++) {
        const std::string& k = cases()[i].kernel;
        ProcessResult r = run_process({"c++", "-std=c++17", "-O1", "-fPIC", "-fopenmp", "-Wall", "-Wextra", "-Werror",
                                       "-c", dir_.file(k + ".cpp"), "-o", objects[i]});
        if (r.exit_code != 0) errors[i] = k + ".cpp: " + r.err;
      }
    };
    const unsigned threads = std::max(2u, std::min(8u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (std::thread& t : pool) t.join();
    for (const std::string& e : errors)
      if (!e.empty()) fail(e);
    std::vector<std::string> link = {"c++", "-shared", "-fopenmp", "-o", dir_.file("libkernels.so")};
    link.insert(link.end(), objects.begin(), objects.end());
    ProcessResult r = run_process(link);
    if (r.exit_code != 0) fail("link: " + r.err);
    handle_ = dlopen(dir_.file("libkernels.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) fail(std::string("dlopen: ") + dlerror());
  }

  void* symbol(const std::string& name) const { return handle_ ? dlsym(handle_, name.c_str()) : nullptr; }
  const std::string& error() const { return error_; }
  const TempDir& dir() const { return dir_; }

 private:
  void fail(const std::string& message) {
    if (error_.empty()) error_ = message;
  }

  TempDir dir_;
  void* handle_ = nullptr;
  std::string error_;
};

const Library& library() {
  static Library lib;
  REQUIRE_MESSAGE(lib.error().empty(), lib.error());
  return lib;
}

// ---- buffers that end at an inaccessible page ----

template <class T>
class Guarded {
 public:
  explicit Guarded(size_t n, T fill = T(0)) : n_(n) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t bytes = n * sizeof(T), pages = (bytes + page - 1) / page;
    total_ = (pages + 1) * page;
    void* base = mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(base != MAP_FAILED);
    base_ = static_cast<char*>(base);
    REQUIRE(mprotect(base_ + pages * page, page, PROT_NONE) == 0);
    data_ = reinterpret_cast<T*>(base_ + pages * page - bytes);
    std::fill(data_, data_ + n, fill);
  }
  ~Guarded() { munmap(base_, total_); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;

  T* data() { return data_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return data_[i]; }
  std::vector<T> copy() const { return std::vector<T>(data_, data_ + n_); }

 private:
  size_t n_, total_ = 0;
  char* base_ = nullptr;
  T* data_ = nullptr;
};

template <class T>
std::unique_ptr<Guarded<T>> guarded(const std::vector<T>& values) {
  auto g = std::make_unique<Guarded<T>>(values.size());
  std::copy(values.begin(), values.end(), g->data());
  return g;
}

// ---- the routines of one tensor, called through their exact C types ----

template <class T, size_t>
using Repeat = T;

template <class I, class V>
struct Routines {
  std::string prefix;   // NAME_pack_T / NAME_unpack_T without the prefix
  size_t arrays = 0;    // index arrays
  void* sizes_fn = nullptr;
  void* pack_fn = nullptr;
  void* unpack_fn = nullptr;
  void* strerror_fn = nullptr;
  bool shared = false;  // pack takes the structure read-only (an output sharing an input's)

  Routines(const std::string& kernel, const std::string& tensor, size_t index_arrays, bool shares) {
    const Library& lib = library();
    arrays = index_arrays;
    shared = shares;
    sizes_fn = lib.symbol(kernel + "_pack_" + tensor + "_sizes");
    pack_fn = lib.symbol(kernel + "_pack_" + tensor);
    unpack_fn = lib.symbol(kernel + "_unpack_" + tensor);
    strerror_fn = lib.symbol(kernel + "_pack_strerror");
    REQUIRE(pack_fn);
    REQUIRE(unpack_fn);
    REQUIRE(strerror_fn);
    REQUIRE((sizes_fn != nullptr) == !shared);
  }

  int sizes(int64_t nnz, const int64_t* coords, const int64_t* dims, int64_t* lengths) const {
    using F = int (*)(int64_t, const int64_t*, const int64_t*, int64_t*);
    return reinterpret_cast<F>(sizes_fn)(nnz, coords, dims, lengths);
  }

  template <size_t... K>
  int pack_n(int64_t nnz, const int64_t* coords, const V* vals, const int64_t* dims, I* const* a, V* out,
             const int64_t* lengths, std::index_sequence<K...>) const {
    using F = int (*)(int64_t, const int64_t*, const V*, const int64_t*, Repeat<I*, K>..., V*, const int64_t*);
    return reinterpret_cast<F>(pack_fn)(nnz, coords, vals, dims, a[K]..., out, lengths);
  }
  template <size_t... K>
  int pack_shared_n(int64_t nnz, const int64_t* coords, const V* vals, const int64_t* dims, I* const* a, V* out,
                    const int64_t* lengths, std::index_sequence<K...>) const {
    using F = int (*)(int64_t, const int64_t*, const V*, const int64_t*, Repeat<const I*, K>..., V*, const int64_t*);
    return reinterpret_cast<F>(pack_fn)(nnz, coords, vals, dims, a[K]..., out, lengths);
  }
  template <size_t... K>
  int unpack_n(const int64_t* dims, I* const* a, const V* vals, const int64_t* lengths, int64_t* nnz, int64_t* coords,
               V* vals_out, std::index_sequence<K...>) const {
    using F = int (*)(const int64_t*, Repeat<const I*, K>..., const V*, const int64_t*, int64_t*, int64_t*, V*);
    return reinterpret_cast<F>(unpack_fn)(dims, a[K]..., vals, lengths, nnz, coords, vals_out);
  }

#define SPGEN_TEST_DISPATCH(CALL, ...)                                                   \
  switch (arrays) {                                                                      \
    case 0: return CALL(__VA_ARGS__, std::make_index_sequence<0>());                     \
    case 1: return CALL(__VA_ARGS__, std::make_index_sequence<1>());                     \
    case 2: return CALL(__VA_ARGS__, std::make_index_sequence<2>());                     \
    case 3: return CALL(__VA_ARGS__, std::make_index_sequence<3>());                     \
    case 4: return CALL(__VA_ARGS__, std::make_index_sequence<4>());                     \
    case 5: return CALL(__VA_ARGS__, std::make_index_sequence<5>());                     \
    case 6: return CALL(__VA_ARGS__, std::make_index_sequence<6>());                     \
  }                                                                                      \
  throw std::logic_error("too many arrays")

  // `a` holds the index arrays in order (pointers into caller buffers).
  int pack(int64_t nnz, const int64_t* coords, const V* vals, const int64_t* dims, I* const* a, V* out,
           const int64_t* lengths) const {
    if (shared) {
      SPGEN_TEST_DISPATCH(pack_shared_n, nnz, coords, vals, dims, a, out, lengths);
    }
    SPGEN_TEST_DISPATCH(pack_n, nnz, coords, vals, dims, a, out, lengths);
  }
  int unpack(const int64_t* dims, I* const* a, const V* vals, const int64_t* lengths, int64_t* nnz, int64_t* coords,
             V* vals_out) const {
    SPGEN_TEST_DISPATCH(unpack_n, dims, a, vals, lengths, nnz, coords, vals_out);
  }
#undef SPGEN_TEST_DISPATCH

  std::string message(int code) const {
    using F = const char* (*)(int);
    return reinterpret_cast<F>(strerror_fn)(code);
  }
};

// ---- inputs and the reference ----

// Entries in the tensor's mode order; any order, duplicates allowed.
struct Input {
  std::vector<int64_t> dims;
  std::vector<int64_t> coords;
  std::vector<double> vals;
  int64_t nnz() const { return static_cast<int64_t>(vals.size()); }
  void add(std::vector<int64_t> c, double v) {
    coords.insert(coords.end(), c.begin(), c.end());
    vals.push_back(v);
  }
};

spgen_run::Coo to_coo(const Input& in) { return spgen_run::Coo{in.dims, in.coords, in.vals}; }

// What unpack must give back, in storage order: entries sorted by level-order coordinates,
// duplicates summed.
std::map<std::vector<int64_t>, double> canonical(const Input& in, const std::vector<int>& mode_order) {
  std::map<std::vector<int64_t>, double> out;
  const size_t order = in.dims.size();
  for (size_t e = 0; e < in.vals.size(); ++e) {
    std::vector<int64_t> key;
    for (int m : mode_order) key.push_back(in.coords[e * order + static_cast<size_t>(m)]);
    out[key] += in.vals[e];
  }
  return out;
}

// Random entries with small integer values (sums are exact), at most `width` distinct
// coordinates under each parent of a sparse-fixed level 1.
Input random_input(const Case& c, std::mt19937_64& rng, int64_t max_nnz) {
  Input in;
  in.dims = c.dims;
  const int64_t nnz = std::uniform_int_distribution<int64_t>(0, max_nnz)(rng);
  for (int64_t e = 0; e < nnz; ++e) {
    std::vector<int64_t> coord;
    for (int64_t d : in.dims) coord.push_back(std::uniform_int_distribution<int64_t>(0, d - 1)(rng));
    in.add(coord, static_cast<double>(std::uniform_int_distribution<int>(-4, 4)(rng)));
  }
  if (c.width > 0) {  // ELL: drop what overflows a row (the rows are mode mode_order[0])
    Input kept;
    kept.dims = in.dims;
    std::map<int64_t, std::vector<int64_t>> columns;
    const int row_mode = c.mode_order[0], col_mode = c.mode_order[1];
    for (size_t e = 0; e < in.vals.size(); ++e) {
      const int64_t row = in.coords[2 * e + static_cast<size_t>(row_mode)];
      const int64_t col = in.coords[2 * e + static_cast<size_t>(col_mode)];
      std::vector<int64_t>& seen = columns[row];
      if (std::find(seen.begin(), seen.end(), col) == seen.end()) {
        if (static_cast<int64_t>(seen.size()) == c.width) continue;
        seen.push_back(col);
      }
      kept.add({in.coords[2 * e], in.coords[2 * e + 1]}, in.vals[e]);
    }
    in = kept;
  }
  return in;
}

std::vector<Input> edge_inputs(const Case& c) {
  std::vector<Input> out;
  const size_t order = c.dims.size();
  std::vector<int64_t> last, first(order, 0);
  for (int64_t d : c.dims) last.push_back(d - 1);
  Input empty{c.dims, {}, {}};
  out.push_back(empty);
  Input single{c.dims, {}, {}};  // at the far corner
  single.add(last, 2.5);
  out.push_back(single);
  Input duplicates{c.dims, {}, {}};  // one coordinate three times, summing to 0 (stored)
  duplicates.add(first, 1);
  duplicates.add(first, 2);
  duplicates.add(first, -3);
  duplicates.add(last, 4);
  duplicates.add(last, 0.5);
  out.push_back(duplicates);
  Input reversed{c.dims, {}, {}};  // unsorted: the last row first, decreasing coordinates
  for (int64_t k = 0; k < 3; ++k) {
    std::vector<int64_t> coord = last;
    coord.back() = std::max<int64_t>(0, last.back() - 2 * k);
    reversed.add(coord, static_cast<double>(k + 1));
    std::vector<int64_t> other = first;
    other.back() = std::min<int64_t>(c.dims.back() - 1, k);
    reversed.add(other, -static_cast<double>(k + 1));
  }
  out.push_back(reversed);
  Input one_row{c.dims, {}, {}};  // every other row empty
  for (int64_t j = 0; j < std::min<int64_t>(c.dims.back(), c.width ? c.width : c.dims.back()); ++j) {
    std::vector<int64_t> coord = last;
    coord.back() = j;
    one_row.add(coord, static_cast<double>(j) - 1.5);
  }
  out.push_back(one_row);
  Input zero_mode{c.dims, {}, {}};  // a mode of size 0: nothing can be stored
  zero_mode.dims[0] = 0;
  out.push_back(zero_mode);
  return out;
}

size_t index_arrays(const Case& c) {
  size_t n = c.sell.empty() ? 0 : 1;  // (SELL's slot level has a pos array)
  for (Level l : c.levels) n += spgen_run::level_has_pos(l) + spgen_run::level_has_crd(l);
  return n;
}

// The runtime's arrays in the routines' order: for each level its pos, then its crd.
template <class I>
std::vector<std::vector<I>> runtime_arrays(const Case& c, const spgen_run::Packed<I, double>& p) {
  std::vector<std::vector<I>> out;
  for (size_t l = 0; l < c.levels.size(); ++l) {
    if (spgen_run::level_has_pos(c.levels[l])) out.push_back(p.pos[l]);
    if (spgen_run::level_has_crd(c.levels[l])) out.push_back(p.crd[l]);
  }
  return out;
}

std::vector<int64_t> widths(const Case& c) {
  std::vector<int64_t> w(c.levels.size(), 0);
  for (size_t l = 0; l < c.levels.size(); ++l)
    if (c.levels[l] == SF) w[l] = c.width;
  return w;
}

// A packed tensor: its arrays in guarded buffers of exactly their lengths.
template <class I, class V>
struct Packed {
  std::vector<std::unique_ptr<Guarded<I>>> arrays;
  std::unique_ptr<Guarded<V>> vals;
  std::vector<int64_t> lengths;
  std::vector<I*> pointers() const {
    std::vector<I*> out;
    for (const auto& a : arrays) out.push_back(a->data());
    out.push_back(nullptr);  // never empty
    return out;
  }
};

template <class I, class V>
Packed<I, V> allocate(const std::vector<int64_t>& lengths, I index_fill = I(0), V value_fill = V(0)) {
  Packed<I, V> p;
  p.lengths = lengths;
  for (size_t k = 0; k + 1 < lengths.size(); ++k)
    p.arrays.push_back(std::make_unique<Guarded<I>>(static_cast<size_t>(lengths[k]), index_fill));
  p.vals = std::make_unique<Guarded<V>>(static_cast<size_t>(lengths.back()), value_fill);
  return p;
}

template <class V>
std::vector<V> values_of(const Input& in) {
  std::vector<V> v;
  for (double x : in.vals) v.push_back(static_cast<V>(x));
  return v;
}

// Packs `in`; REQUIREs success.
template <class I, class V>
Packed<I, V> pack(const Routines<I, V>& r, const Case& c, const Input& in) {
  std::vector<int64_t> lengths(index_arrays(c) + 1, -7);
  const std::unique_ptr<Guarded<int64_t>> coords = guarded(in.coords);
  const std::unique_ptr<Guarded<V>> vals = guarded(values_of<V>(in));
  REQUIRE(r.sizes(in.nnz(), coords->data(), in.dims.data(), lengths.data()) == kOk);
  Packed<I, V> p = allocate<I, V>(lengths);
  REQUIRE(r.pack(in.nnz(), coords->data(), vals->data(), in.dims.data(), p.pointers().data(), p.vals->data(),
                 lengths.data()) == kOk);
  return p;
}

struct Unpacked {
  std::vector<int64_t> coords;
  std::vector<double> vals;
};

template <class I, class V>
int unpack(const Routines<I, V>& r, const std::vector<int64_t>& dims, Packed<I, V>& p, Unpacked& out) {
  int64_t nnz = -1;
  const int status = r.unpack(dims.data(), p.pointers().data(), p.vals->data(), p.lengths.data(), &nnz, nullptr, nullptr);
  if (status != kOk) return status;
  Guarded<int64_t> coords(static_cast<size_t>(nnz) * dims.size());
  Guarded<V> vals(static_cast<size_t>(nnz));
  int64_t room = nnz;
  // A zero-size buffer still has an address (the guard page): not a size query.
  const int again = r.unpack(dims.data(), p.pointers().data(), p.vals->data(), p.lengths.data(), &room, coords.data(),
                             vals.data());
  if (again != kOk) return again;
  CHECK(room == nnz);
  out.coords = coords.copy();
  out.vals.clear();
  for (V v : vals.copy()) out.vals.push_back(static_cast<double>(v));
  return kOk;
}

// Packs `in`, CHECKing that the arrays and values are `arrays` and `vals`.
template <class I, class V>
Packed<I, V> pack_as(const Routines<I, V>& r, const Case& c, const Input& in, const std::vector<std::vector<I>>& arrays,
                     const std::vector<double>& vals) {
  CAPTURE(in.nnz());
  Packed<I, V> p = pack(r, c, in);
  REQUIRE(p.arrays.size() == arrays.size());
  for (size_t k = 0; k < arrays.size(); ++k) {
    CAPTURE(k);
    CHECK(p.arrays[k]->copy() == arrays[k]);
  }
  std::vector<double> packed_vals;
  for (V v : p.vals->copy()) packed_vals.push_back(static_cast<double>(v));
  CHECK(packed_vals == vals);
  return p;
}

// pack -> arrays as the runtime packs them -> unpack -> the canonical entries in storage order.
template <class I, class V>
void round_trip(const Routines<I, V>& r, const Case& c, const Input& in) {
  const spgen_run::Packed<I, double> ref = spgen_run::pack<I, double>(to_coo(in), c.levels, c.mode_order, widths(c));
  Packed<I, V> p = pack_as(r, c, in, runtime_arrays(c, ref), ref.vals);
  Unpacked u;
  REQUIRE(unpack(r, in.dims, p, u) == kOk);
  const size_t order = in.dims.size();
  const std::map<std::vector<int64_t>, double> expected = canonical(in, c.mode_order);
  std::vector<int64_t> previous;
  size_t found = 0;
  for (size_t e = 0; e < u.vals.size(); ++e) {
    std::vector<int64_t> key;
    for (int m : c.mode_order) key.push_back(u.coords[e * order + static_cast<size_t>(m)]);
    CHECK((e == 0 || previous < key));  // storage order, each coordinate once
    previous = key;
    auto it = expected.find(key);
    if (it == expected.end()) {
      CHECK(u.vals[e] == 0.0);  // an explicit zero of the format (dense level, ragged gap)
    } else {
      CHECK(u.vals[e] == it->second);
      ++found;
    }
  }
  CHECK(found == expected.size());
  // Only a dense or dense-variable last level stores zeros of its own: other formats give back
  // exactly the canonical entries.
  if (c.levels.back() != D && c.levels.back() != DV) CHECK(u.vals.size() == expected.size());
  // The same entries as the runtime's unpack.
  const spgen_run::Coo ref_entries = spgen_run::unpack(ref, c.levels, c.mode_order, widths(c));
  CHECK(u.coords == ref_entries.coords);
  CHECK(u.vals == ref_entries.vals);
}

// BSR, independently: block (bi, bj) = (i / r, j / c) is stored when an entry falls in it;
// pos over block rows, crd the block columns, and each block's r x c values row-major with
// zeros where nothing (or the padding past the dimensions) is.
template <class I>
struct BsrArrays {
  std::vector<I> pos, crd;
  std::vector<double> vals;
};

template <class I>
BsrArrays<I> bsr_reference(const Case& c, const Input& in) {
  const int64_t r = c.block[0], cb = c.block[1];
  const int64_t block_rows = (in.dims[0] + r - 1) / r;
  std::map<std::pair<int64_t, int64_t>, std::vector<double>> blocks;
  for (size_t e = 0; e < in.vals.size(); ++e) {
    const int64_t i = in.coords[2 * e], j = in.coords[2 * e + 1];
    std::vector<double>& b = blocks[{i / r, j / cb}];
    b.resize(static_cast<size_t>(r * cb), 0.0);
    b[static_cast<size_t>((i % r) * cb + j % cb)] += in.vals[e];
  }
  BsrArrays<I> out;
  out.pos.assign(static_cast<size_t>(block_rows) + 1, I(0));
  for (const auto& [at, values] : blocks) {
    out.pos[static_cast<size_t>(at.first) + 1] += 1;
    out.crd.push_back(static_cast<I>(at.second));
    out.vals.insert(out.vals.end(), values.begin(), values.end());
  }
  for (size_t p = 1; p < out.pos.size(); ++p) out.pos[p] += out.pos[p - 1];
  return out;
}

template <class I, class V>
Routines<I, V> routines_of(const Case& c) {
  return Routines<I, V>(c.kernel, c.tensor, index_arrays(c), !c.shares.empty());
}

// A copy of `good` whose arrays a test may corrupt (`lengths` too).
template <class I, class V>
Packed<I, V> copy_of(const Packed<I, V>& good) {
  Packed<I, V> p;
  p.lengths = good.lengths;
  for (const auto& a : good.arrays) p.arrays.push_back(guarded(a->copy()));
  p.vals = guarded(good.vals->copy());
  return p;
}

// Unpack into room for one entry too few: SPGEN_ERR_LENGTH, the entries needed, nothing written.
// Returns that count.
template <class I, class V>
int64_t check_unpack_room(const Routines<I, V>& r, const std::vector<int64_t>& dims, const Packed<I, V>& good) {
  int64_t nnz = 0;
  REQUIRE(r.unpack(dims.data(), good.pointers().data(), good.vals->data(), good.lengths.data(), &nnz, nullptr, nullptr) ==
          kOk);
  REQUIRE(nnz > 0);
  Guarded<int64_t> coords(static_cast<size_t>(nnz - 1) * dims.size(), -9);
  Guarded<V> vals(static_cast<size_t>(nnz - 1), V(-9));
  int64_t room = nnz - 1;
  CHECK(r.unpack(dims.data(), good.pointers().data(), good.vals->data(), good.lengths.data(), &room, coords.data(),
                 vals.data()) == kLength);
  CHECK(room == nnz);
  for (int64_t x : coords.copy()) CHECK(x == -9);
  return nnz;
}

// Unpack with a null nnz, values or lengths: SPGEN_ERR_NULL.
template <class I, class V>
void check_unpack_nulls(const Routines<I, V>& r, const std::vector<int64_t>& dims, const Packed<I, V>& good) {
  CHECK(r.unpack(dims.data(), good.pointers().data(), good.vals->data(), good.lengths.data(), nullptr, nullptr, nullptr) ==
        kNull);
  int64_t nnz = 0;
  CHECK(r.unpack(dims.data(), good.pointers().data(), nullptr, good.lengths.data(), &nnz, nullptr, nullptr) == kNull);
  CHECK(r.unpack(dims.data(), good.pointers().data(), good.vals->data(), nullptr, &nnz, nullptr, nullptr) == kNull);
}

// For a format the runtime does not pack (bsr, sell): pack gives exactly `arrays` and `vals`, as
// an independent construction of them says, and unpack gives back `coords` and `entries`.
template <class I, class V>
void check_round_trip(const Routines<I, V>& r, const Case& c, const Input& in, const std::vector<std::vector<I>>& arrays,
                      const std::vector<double>& vals, const std::vector<int64_t>& coords, const std::vector<double>& entries) {
  Packed<I, V> p = pack_as(r, c, in, arrays, vals);
  Unpacked u;
  REQUIRE(unpack(r, in.dims, p, u) == kOk);
  CHECK(u.coords == coords);
  CHECK(u.vals == entries);
}

// pack -> the reference's BSR arrays -> unpack -> every stored entry inside the dimensions, in
// storage order (block by block, each row-major), with the padding left out.
template <class I, class V>
void bsr_round_trip(const Routines<I, V>& r, const Case& c, const Input& in) {
  const BsrArrays<I> want = bsr_reference<I>(c, in);
  std::vector<int64_t> coords;
  std::vector<double> entries;
  const int64_t rows = c.block[0], cols = c.block[1];
  for (size_t bi = 0; bi + 1 < want.pos.size(); ++bi)
    for (I q = want.pos[bi]; q < want.pos[bi + 1]; ++q)
      for (int64_t ii = 0; ii < rows; ++ii)
        for (int64_t jj = 0; jj < cols; ++jj) {
          const int64_t i = static_cast<int64_t>(bi) * rows + ii, j = static_cast<int64_t>(want.crd[q]) * cols + jj;
          if (i >= in.dims[0] || j >= in.dims[1]) continue;
          coords.insert(coords.end(), {i, j});
          entries.push_back(want.vals[static_cast<size_t>(q * rows * cols + ii * cols + jj)]);
        }
  check_round_trip<I, V>(r, c, in, {want.pos, want.crd}, want.vals, coords, entries);
}

// SELL-C-sigma, independently: each row's entries (sorted, repeats summed), the rows listed in
// order, then each window of sigma rows stably sorted by decreasing length; slice g (listed rows
// [g*C, g*C + C)) as wide as its longest row; slot s of listed row r at (first[r/C] + s)*C + r%C.
template <class I>
struct SellArrays {
  std::vector<I> pos0, listed, first, crd;
  std::vector<double> vals;
};

template <class I>
SellArrays<I> sell_reference(const Case& c, const Input& in) {
  const int64_t rows = in.dims[0], lanes = c.sell[0], sigma = c.sell[1];
  std::vector<std::vector<std::pair<int64_t, double>>> row(static_cast<size_t>(rows));
  for (const auto& [key, value] : canonical(in, c.mode_order)) row[static_cast<size_t>(key[0])].push_back({key[1], value});
  SellArrays<I> out;
  out.pos0 = {I(0), static_cast<I>(rows)};
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) order[static_cast<size_t>(r)] = r;
  for (int64_t w = 0; w < rows; w += sigma)
    std::stable_sort(order.begin() + w, order.begin() + std::min(rows, w + sigma),
                     [&](int64_t a, int64_t b) { return row[static_cast<size_t>(a)].size() > row[static_cast<size_t>(b)].size(); });
  for (int64_t r : order) out.listed.push_back(static_cast<I>(r));
  const int64_t slices = (rows + lanes - 1) / lanes;
  out.first.push_back(I(0));
  for (int64_t g = 0; g < slices; ++g) {
    size_t widest = 0;
    for (int64_t r = g * lanes; r < std::min(rows, g * lanes + lanes); ++r) widest = std::max(widest, row[static_cast<size_t>(order[static_cast<size_t>(r)])].size());
    out.first.push_back(static_cast<I>(out.first.back() + static_cast<I>(widest)));
  }
  const size_t slots = static_cast<size_t>(out.first.back()) * static_cast<size_t>(lanes);
  out.crd.assign(slots, I(-1));
  out.vals.assign(slots, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const auto& entries = row[static_cast<size_t>(order[static_cast<size_t>(r)])];
    for (size_t s = 0; s < entries.size(); ++s) {
      const size_t at = (static_cast<size_t>(out.first[static_cast<size_t>(r / lanes)]) + s) * static_cast<size_t>(lanes) +
                        static_cast<size_t>(r % lanes);
      out.crd[at] = static_cast<I>(entries[s].first);
      out.vals[at] = entries[s].second;
    }
  }
  return out;
}

// pack -> the reference's SELL arrays -> unpack -> the entries row by row in listed order.
template <class I, class V>
void sell_round_trip(const Routines<I, V>& r, const Case& c, const Input& in) {
  const SellArrays<I> want = sell_reference<I>(c, in);
  std::vector<int64_t> coords;
  std::vector<double> entries;
  const int64_t lanes = c.sell[0];
  for (size_t k = 0; k < want.listed.size(); ++k) {
    const int64_t g = static_cast<int64_t>(k) / lanes, lane = static_cast<int64_t>(k) % lanes;
    for (int64_t slot = want.first[static_cast<size_t>(g)]; slot < want.first[static_cast<size_t>(g) + 1]; ++slot) {
      const size_t at = static_cast<size_t>(slot * lanes + lane);
      if (want.crd[at] < 0) break;
      coords.insert(coords.end(), {static_cast<int64_t>(want.listed[k]), static_cast<int64_t>(want.crd[at])});
      entries.push_back(want.vals[at]);
    }
  }
  check_round_trip<I, V>(r, c, in, {want.pos0, want.listed, want.first, want.crd}, want.vals, coords, entries);
}

// Unpack's checks of SELL's arrays, on corrupt copies of a valid tensor: {pos0, rows, first, crd}.
template <class I, class V>
void check_sell_unpack_errors(const Case& c) {
  const Routines<I, V> r = routines_of<I, V>(c);
  Input in{c.dims, {}, {}};  // rows of 3, 0, 1, 2, 0, 3, 1 entries
  const std::vector<std::vector<int64_t>> rows = {{0, 4, 8}, {}, {2}, {1, 5}, {}, {3, 6, 7}, {0}};
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t j : rows[i]) in.add({static_cast<int64_t>(i), j}, static_cast<double>(j + 1));
  Packed<I, V> good = pack(r, c, in);
  auto copy = [&]() { return copy_of(good); };
  auto status_with = [&](int array, size_t at, I value) {
    Packed<I, V> p = copy();
    (*p.arrays[static_cast<size_t>(array)])[at] = value;
    Unpacked u;
    return unpack(r, in.dims, p, u);
  };
  {
    Packed<I, V> p = copy();
    Unpacked u;
    REQUIRE(unpack(r, in.dims, p, u) == kOk);
  }
  const int64_t lanes = c.sell[0];
  const std::vector<I> listed = good.arrays[1]->copy(), first = good.arrays[2]->copy(), crd = good.arrays[3]->copy();
  auto slot = [&](int64_t listed_row, int64_t s) { return static_cast<size_t>((first[static_cast<size_t>(listed_row / lanes)] + s) * lanes + listed_row % lanes); };
  size_t long_row = 0;  // the listed row of input row 0 (3 entries)
  while (listed[long_row] != 0) ++long_row;

  SUBCASE("wrong lengths") {
    for (size_t k = 0; k < good.lengths.size(); ++k) {
      CAPTURE(k);
      Packed<I, V> p = copy();
      p.lengths[k] -= 1;
      Unpacked u;
      CHECK(unpack(r, in.dims, p, u) == kLength);
    }
    CHECK(status_with(0, 1, I(6)) == kLength);  // pos0 = {0, rows}
  }
  SUBCASE("pos arrays that do not start at 0 or decrease") {
    CHECK(status_with(0, 0, I(1)) == kPosNotMonotone);
    CHECK(status_with(2, 0, I(1)) == kPosNotMonotone);
    CHECK(status_with(2, 1, static_cast<I>(first.back() + 1)) == kPosNotMonotone);
  }
  SUBCASE("rows: out of range, listed twice, out of order where sigma is 1") {
    CHECK(status_with(1, 0, I(7)) == kCoordRange);
    CHECK(status_with(1, 0, I(-1)) == kCoordRange);
    CHECK(status_with(1, 0, listed[1]) == kCrdOrder);
    Packed<I, V> p = copy();
    std::swap((*p.arrays[1])[0], (*p.arrays[1])[1]);
    Unpacked u;
    CHECK(unpack(r, in.dims, p, u) == (c.sell[1] == 1 ? kCrdOrder : kOk));
  }
  SUBCASE("columns: out of range, decreasing, after padding, in a missing row of the last slice") {
    CHECK(status_with(3, slot(static_cast<int64_t>(long_row), 0), I(9)) == kCoordRange);
    CHECK(status_with(3, slot(static_cast<int64_t>(long_row), 0), I(-2)) == kCoordRange);
    CHECK(status_with(3, slot(static_cast<int64_t>(long_row), 1), I(0)) == kCrdOrder);   // 0, 0, 8
    CHECK(status_with(3, slot(static_cast<int64_t>(long_row), 1), I(-1)) == kCrdOrder);  // 0, pad, 8
    const int64_t slices = static_cast<int64_t>(first.size()) - 1;
    const bool missing_row_has_slots = slices * lanes > 7 && first[static_cast<size_t>(slices)] > first[static_cast<size_t>(slices) - 1];
    CHECK(missing_row_has_slots == (c.sell[1] == 1));  // (sorted, the last slice holds an empty row)
    if (missing_row_has_slots) CHECK(status_with(3, slot(7, 0), I(0)) == kCrdOrder);  // listed row 7 does not exist
  }
  SUBCASE("too little room, and null pointers") {
    CHECK(check_unpack_room(r, in.dims, good) == 10);
    check_unpack_nulls(r, in.dims, good);
  }
}

template <class I, class V>
void check_round_trips(const Case& c) {
  const Routines<I, V> r = routines_of<I, V>(c);
  if (!c.sell.empty()) {
    for (const Input& in : edge_inputs(c)) sell_round_trip(r, c, in);
    std::mt19937_64 rng(0x5e11 + c.kernel.size());
    for (int trial = 0; trial < 40; ++trial)
      sell_round_trip(r, c, random_input(c, rng, trial < 20 ? c.dims[0] * c.dims[1] / 4 : 3 * c.dims[0] * c.dims[1]));
    return;
  }
  if (!c.block.empty()) {
    for (const Input& in : edge_inputs(c)) bsr_round_trip(r, c, in);
    std::mt19937_64 rng(0x5eed + c.kernel.size());
    for (int trial = 0; trial < 40; ++trial)
      bsr_round_trip(r, c, random_input(c, rng, trial < 20 ? c.dims[0] * c.dims[1] / 4 : 3 * c.dims[0] * c.dims[1]));
    return;
  }
  for (const Input& in : edge_inputs(c)) round_trip(r, c, in);
  std::mt19937_64 rng(0x5eed + c.kernel.size());
  int64_t cells = 1;
  for (int64_t d : c.dims) cells *= d;
  for (int trial = 0; trial < 40; ++trial) round_trip(r, c, random_input(c, rng, trial < 20 ? cells / 4 : 3 * cells));
}

// An input with several entries under one parent at every level (so there is something to
// corrupt everywhere) and an empty parent.
Input structured_input(const Case& c) {
  Input in;
  in.dims = c.dims;
  const size_t order = c.dims.size();
  for (int64_t k = 0; k < 3; ++k) {
    std::vector<int64_t> coord(order, 0);
    for (size_t m = 0; m < order; ++m) coord[m] = (k + 1) % std::max<int64_t>(1, c.dims[m]);
    coord[static_cast<size_t>(c.mode_order.back())] = (2 * k) % c.dims[static_cast<size_t>(c.mode_order.back())];
    in.add(coord, static_cast<double>(k + 1));
    coord[static_cast<size_t>(c.mode_order.front())] = 1;
    in.add(coord, static_cast<double>(10 + k));
  }
  return in;
}

// Every error code of pack and pack_sizes on the input that triggers it, with buffers left as
// they were.
template <class I, class V>
void check_pack_errors(const Case& c) {
  const Routines<I, V> r = routines_of<I, V>(c);
  const Input in = structured_input(c);
  const size_t order = in.dims.size();
  std::vector<int64_t> lengths(index_arrays(c) + 1);
  REQUIRE(r.sizes(in.nnz(), in.coords.data(), in.dims.data(), lengths.data()) == kOk);
  const std::vector<V> vals = values_of<V>(in);

  // Runs pack with these arguments into sentinel-filled buffers of `sizes` and returns its status,
  // CHECKing that it wrote nothing.
  auto pack_untouched = [&](const Input& input, const std::vector<int64_t>& sizes, const std::vector<int64_t>& passed) {
    Packed<I, V> p = allocate<I, V>(sizes, I(77), V(77));
    const int status = r.pack(input.nnz(), input.coords.data(), values_of<V>(input).data(), input.dims.data(),
                              p.pointers().data(), p.vals->data(), passed.data());
    for (const auto& a : p.arrays)
      for (I x : a->copy()) CHECK(x == I(77));
    for (V x : p.vals->copy()) CHECK(x == V(77));
    return status;
  };

  SUBCASE("a coordinate out of range") {
    for (size_t m = 0; m < order; ++m)
      for (int64_t bad : {in.dims[m], int64_t(-1)}) {
        Input wrong = in;
        wrong.coords[order * 2 + m] = bad;
        int64_t scratch[16];
        CHECK(r.sizes(wrong.nnz(), wrong.coords.data(), wrong.dims.data(), scratch) == kCoordRange);
        CHECK(pack_untouched(wrong, lengths, lengths) == kCoordRange);
      }
  }
  SUBCASE("one length too small or too large") {
    for (size_t k = 0; k < lengths.size(); ++k) {
      CAPTURE(k);
      std::vector<int64_t> smaller = lengths;
      if (smaller[k] > 0) {
        --smaller[k];
        CHECK(pack_untouched(in, smaller, smaller) == kLength);  // the buffer ends where the length says
      }
      std::vector<int64_t> larger = lengths;
      ++larger[k];
      CHECK(pack_untouched(in, larger, larger) == kLength);
    }
    int64_t scratch[16];
    CHECK(r.sizes(-1, in.coords.data(), in.dims.data(), scratch) == kLength);
    const std::vector<I*> none(lengths.size(), nullptr);
    CHECK(r.pack(-1, in.coords.data(), vals.data(), in.dims.data(), none.data(), nullptr, lengths.data()) == kLength);
  }
  SUBCASE("a negative dimension or one too large for the index type") {
    int64_t scratch[16];
    std::vector<int64_t> dims = in.dims;
    dims[0] = -1;
    CHECK(r.sizes(0, nullptr, dims.data(), scratch) == kDim);
    if (!c.index64) {
      for (size_t l = 0; l < c.levels.size(); ++l)
        if (spgen_run::level_has_crd(c.levels[l])) {
          dims = in.dims;
          // A block level's extent is the dimension divided by the block size.
          const int64_t block = c.block.empty() ? 1 : c.block[static_cast<size_t>(c.mode_order[l])];
          dims[static_cast<size_t>(c.mode_order[l])] = ((int64_t(1) << 31) + 1) * block;
          CHECK(r.sizes(0, nullptr, dims.data(), scratch) == kDim);
        }
    }
  }
  SUBCASE("out of memory") {
    // A top dense level with more positions than a vector can hold.
    int64_t scratch[16];
    if (c.levels[0] == D && std::any_of(c.levels.begin(), c.levels.end(), [](Level l) { return l != D; })) {
      std::vector<int64_t> dims = in.dims;
      dims[static_cast<size_t>(c.mode_order[0])] = int64_t(1) << 62;
      CHECK(r.sizes(0, nullptr, dims.data(), scratch) == kAlloc);
    }
  }
  SUBCASE("null pointers") {
    int64_t scratch[16];
    CHECK(r.sizes(in.nnz(), nullptr, in.dims.data(), scratch) == kNull);
    CHECK(r.sizes(in.nnz(), in.coords.data(), nullptr, scratch) == kNull);
    CHECK(r.sizes(in.nnz(), in.coords.data(), in.dims.data(), nullptr) == kNull);
    const std::vector<I*> none(lengths.size(), nullptr);
    CHECK(r.pack(in.nnz(), in.coords.data(), nullptr, in.dims.data(), none.data(), nullptr, lengths.data()) == kNull);
    Packed<I, V> p = allocate<I, V>(lengths);
    CHECK(r.pack(in.nnz(), in.coords.data(), vals.data(), in.dims.data(), p.pointers().data(), nullptr,
                 lengths.data()) == kNull);
    std::vector<I*> pointers = p.pointers();
    if (!p.arrays.empty()) {
      pointers[0] = nullptr;
      CHECK(r.pack(in.nnz(), in.coords.data(), vals.data(), in.dims.data(), pointers.data(), p.vals->data(),
                   lengths.data()) == kNull);
    }
  }
  SUBCASE("the messages") {
    for (int code = kOk; code <= kNotInStructure; ++code) CHECK(!r.message(code).empty());
    CHECK(r.message(kEllOverflow) != r.message(kLength));
  }
}

// Unpack's checks, on corrupt copies of a valid tensor.
template <class I, class V>
void check_unpack_errors(const Case& c) {
  const Routines<I, V> r = routines_of<I, V>(c);
  const Input in = structured_input(c);
  Packed<I, V> good = pack(r, c, in);
  auto copy = [&]() { return copy_of(good); };
  auto status_of = [&](Packed<I, V>& p, const std::vector<int64_t>& dims) {
    Unpacked u;
    return unpack(r, dims, p, u);
  };
  // Which array holds level l's pos / crd.
  std::vector<int> pos_slot(c.levels.size(), -1), crd_slot(c.levels.size(), -1);
  int slot = 0;
  for (size_t l = 0; l < c.levels.size(); ++l) {
    if (spgen_run::level_has_pos(c.levels[l])) pos_slot[l] = slot++;
    if (spgen_run::level_has_crd(c.levels[l])) crd_slot[l] = slot++;
  }
  {
    Packed<I, V> p = copy();
    REQUIRE(status_of(p, in.dims) == kOk);
  }

  SUBCASE("wrong lengths") {
    for (size_t k = 0; k < good.lengths.size(); ++k) {
      CAPTURE(k);
      if (good.lengths[k] > 0) {  // one less than the buffer holds
        Packed<I, V> p = copy();
        p.lengths[k] -= 1;
        CHECK(status_of(p, in.dims) == kLength);
      }
      Packed<I, V> p = copy();  // a buffer one longer, and its length
      if (k + 1 < good.lengths.size()) {
        std::vector<I> longer = good.arrays[k]->copy();
        longer.push_back(longer.empty() ? I(0) : longer.back());
        p.arrays[k] = guarded(longer);
      } else {
        std::vector<V> longer = good.vals->copy();
        longer.push_back(V(0));
        p.vals = guarded(longer);
      }
      p.lengths[k] += 1;
      CHECK(status_of(p, in.dims) == kLength);
    }
  }
  SUBCASE("a pos array that does not start at 0 or decreases") {
    for (size_t l = 0; l < c.levels.size(); ++l) {
      if (pos_slot[l] < 0) continue;
      CAPTURE(l);
      Guarded<I>& original = *good.arrays[static_cast<size_t>(pos_slot[l])];
      {
        Packed<I, V> p = copy();
        (*p.arrays[static_cast<size_t>(pos_slot[l])])[0] = 1;
        CHECK(status_of(p, in.dims) == kPosNotMonotone);
      }
      if (original.size() >= 3) {
        Packed<I, V> p = copy();
        Guarded<I>& pos = *p.arrays[static_cast<size_t>(pos_slot[l])];
        pos[1] = static_cast<I>(pos[pos.size() - 1] + 1);  // above the end, then down again
        CHECK(status_of(p, in.dims) == kPosNotMonotone);
      }
    }
  }
  SUBCASE("a crd value out of range") {
    for (size_t l = 0; l < c.levels.size(); ++l) {
      if (crd_slot[l] < 0 || good.arrays[static_cast<size_t>(crd_slot[l])]->size() == 0) continue;
      CAPTURE(l);
      const int64_t dim = in.dims[static_cast<size_t>(c.mode_order[l])];
      for (int64_t bad : {dim, int64_t(-2)}) {
        Packed<I, V> p = copy();
        (*p.arrays[static_cast<size_t>(crd_slot[l])])[0] = static_cast<I>(bad);
        CHECK(status_of(p, in.dims) == kCoordRange);
      }
    }
    for (size_t l = 0; l < c.levels.size(); ++l) {
      if (c.levels[l] != DV) continue;
      std::vector<int64_t> dims = in.dims;  // a row longer than its dimension
      dims[static_cast<size_t>(c.mode_order[l])] = 1;
      Packed<I, V> p = copy();
      CHECK(status_of(p, dims) == kCoordRange);
    }
  }
  SUBCASE("crd values out of order under a parent") {
    bool tried = false;
    for (size_t l = 0; l < c.levels.size(); ++l) {
      if (crd_slot[l] < 0 || c.levels[l] == S) continue;
      CAPTURE(l);
      Guarded<I>& crd = *good.arrays[static_cast<size_t>(crd_slot[l])];
      // Two neighbours under the same parent, the first smaller.
      for (size_t q = 0; q + 1 < crd.size(); ++q) {
        bool same_parent = true;
        if (pos_slot[l] >= 0) {
          Guarded<I>& pos = *good.arrays[static_cast<size_t>(pos_slot[l])];
          for (size_t p = 0; p < pos.size(); ++p)
            if (static_cast<size_t>(pos[p]) == q + 1) same_parent = false;
        } else if (c.levels[l] == SF) {
          same_parent = (q + 1) % static_cast<size_t>(c.width) != 0;
        }
        if (!same_parent || crd[q] < 0 || crd[q + 1] <= crd[q]) continue;
        Packed<I, V> p = copy();
        Guarded<I>& bad = *p.arrays[static_cast<size_t>(crd_slot[l])];
        std::swap(bad[q], bad[q + 1]);
        CHECK(status_of(p, in.dims) == kCrdOrder);
        if (c.levels[l] == SF) {  // a coordinate after padding
          Packed<I, V> padded = copy();
          (*padded.arrays[static_cast<size_t>(crd_slot[l])])[q] = I(-1);
          CHECK(status_of(padded, in.dims) == kCrdOrder);
        }
        if (c.levels[l] == C) {  // a repeat: fine for a nonunique level only
          Packed<I, V> repeated = copy();
          Guarded<I>& rep = *repeated.arrays[static_cast<size_t>(crd_slot[l])];
          rep[q + 1] = rep[q];
          CHECK(status_of(repeated, in.dims) == kCrdOrder);
        }
        tried = true;
        break;
      }
    }
    const bool ordered_level = std::any_of(c.levels.begin(), c.levels.end(), [](Level l) { return l == C || l == NU || l == SF; });
    CHECK(tried == ordered_level);
  }
  SUBCASE("too little room for the entries") { check_unpack_room(r, in.dims, good); }
  SUBCASE("null pointers") { check_unpack_nulls(r, in.dims, good); }
}

template <class I, class V>
void check_everything(const Case& c) {
  SUBCASE("round trips") { check_round_trips<I, V>(c); }
  SUBCASE("pack errors") { check_pack_errors<I, V>(c); }
  SUBCASE("unpack errors") {
    if (c.sell.empty()) check_unpack_errors<I, V>(c);
    else check_sell_unpack_errors<I, V>(c);
  }
}

void check_case(const std::string& kernel) {
  const Case& c = case_named(kernel);
  if (c.index64 && c.value64) check_everything<int64_t, double>(c);
  else if (c.index64) check_everything<int64_t, float>(c);
  else if (c.value64) check_everything<int32_t, double>(c);
  else check_everything<int32_t, float>(c);
}

}  // namespace

TEST_CASE("csr") { check_case("pk_csr"); }
TEST_CASE("csc: int64 indices, float64 values, coordinates in mode order (i, j)") { check_case("pk_csc"); }
TEST_CASE("dcsr") { check_case("pk_dcsr"); }
TEST_CASE("coo") { check_case("pk_coo"); }
TEST_CASE("ell (width 3)") { check_case("pk_ell"); }
TEST_CASE("ragged: the gaps of a row are explicit zeros") { check_case("pk_ragged"); }
TEST_CASE("csf of order 3") { check_case("pk_csf"); }
TEST_CASE("coo of order 3") { check_case("pk_coo3"); }
TEST_CASE("COO rows of dense fibres: a position per distinct (i,j), its fibre's zeros explicit") { check_case("pk_coo_rows_dense"); }
TEST_CASE("COO rows of compressed fibres: int64 indices") { check_case("pk_coo_rows_compressed"); }
TEST_CASE("dense, compressed, dense: a dense suffix of explicit zeros") { check_case("pk_dense_suffix"); }
TEST_CASE("column-major dense") { check_case("pk_dense_cm"); }
TEST_CASE("sddmm's sparse input") { check_case("pk_sddmm"); }
TEST_CASE("an output the kernel assembles has its own routines") { check_case("pk_add_out"); }
TEST_CASE("bsr 2x3 on 7x8: partial blocks padded with zeros, the padding left out by unpack") { check_case("pk_bsr"); }
TEST_CASE("bsr 4x1: int64 indices, float64 values") { check_case("pk_bsr_int64"); }
TEST_CASE("an assembled output of several compressed levels has its own routines") { check_case("pk_add_dcsr_out"); }
TEST_CASE("an assembled COO output has its own routines") { check_case("pk_add_coo_out"); }
TEST_CASE("an assembled ragged output has its own routines") { check_case("pk_add_ragged_out"); }
TEST_CASE("an assembled output with a ragged level above a compressed one has its own routines") { check_case("pk_add_ragged_compressed_out"); }
TEST_CASE("an assembled output of ELL rows under a compressed level has its own routines") { check_case("pk_add_compressed_ell_out"); }

TEST_CASE("sell 4-1: rows in order, the last slice one row short") { check_case("pk_sell"); }
TEST_CASE("sell 2-4: rows sorted by length in windows of 4; int64 indices, float64 values") { check_case("pk_sell_sorted"); }

TEST_CASE("ell: a row with more coordinates than the width fails to pack") {
  const Case& c = case_named("pk_ell");
  const Routines<int32_t, float> r = routines_of<int32_t, float>(c);
  Input in{c.dims, {}, {}};
  for (int64_t j : {5, 1, 3, 1, 7}) in.add({2, j}, 1.0);  // 4 distinct columns in row 2
  int64_t lengths[3] = {-1, -1, -1};
  CHECK(r.sizes(in.nnz(), in.coords.data(), in.dims.data(), lengths) == kEllOverflow);
  Packed<int32_t, float> p = allocate<int32_t, float>({7 * 3, 7 * 3}, 5, 5.0f);
  const std::vector<int64_t> room = {21, 21};
  const std::vector<float> vals = values_of<float>(in);
  CHECK(r.pack(in.nnz(), in.coords.data(), vals.data(), in.dims.data(), p.pointers().data(), p.vals->data(),
               room.data()) == kEllOverflow);
  for (int32_t x : p.arrays[0]->copy()) CHECK(x == 5);
  in.coords.resize(in.coords.size() - 2);  // without the last: 3 distinct columns, repeats summed
  in.vals.pop_back();
  round_trip(r, c, in);
}

TEST_CASE("sddmm: the output's routines work on the input's structure") {
  const Case& x_case = case_named("pk_sddmm");
  const Routines<int32_t, float> x = routines_of<int32_t, float>(x_case);
  Case y_case = x_case;
  y_case.tensor = "Y";
  y_case.shares = "X";
  const Routines<int32_t, float> y = routines_of<int32_t, float>(y_case);  // REQUIREs: no Y _sizes
  Input xin{x_case.dims, {}, {}};
  for (auto [i, j] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 4}, {3, 0}, {3, 8}, {6, 2}}) xin.add({i, j}, 1.0);
  Packed<int32_t, float> xs = pack(x, x_case, xin);

  // Y's values at X's positions: repeats summed, an explicit zero allowed outside.
  Input yin{x_case.dims, {}, {}};
  yin.add({3, 8}, 2);
  yin.add({0, 1}, -1);
  yin.add({3, 8}, 0.5);
  yin.add({5, 5}, 0);  // not stored by X, but zero
  std::vector<int32_t*> structure = xs.pointers();
  std::vector<int64_t> lengths = xs.lengths;  // {X_pos1, X_crd1, Y_vals}: Y_vals as long as X_vals
  Guarded<float> yvals(static_cast<size_t>(lengths.back()), 9.0f);
  const std::vector<float> vals = values_of<float>(yin);
  REQUIRE(y.pack(yin.nnz(), yin.coords.data(), vals.data(), yin.dims.data(), structure.data(), yvals.data(),
                 lengths.data()) == kOk);
  CHECK(yvals.copy() == std::vector<float>{-1, 0, 0, 2.5f, 0});
  int64_t nnz = 0;
  REQUIRE(y.unpack(yin.dims.data(), structure.data(), yvals.data(), lengths.data(), &nnz, nullptr, nullptr) == kOk);
  CHECK(nnz == 5);
  Guarded<int64_t> coords(10);
  Guarded<float> out(5);
  REQUIRE(y.unpack(yin.dims.data(), structure.data(), yvals.data(), lengths.data(), &nnz, coords.data(), out.data()) ==
          kOk);
  CHECK(coords.copy() == std::vector<int64_t>{0, 1, 0, 4, 3, 0, 3, 8, 6, 2});
  CHECK(out.copy() == std::vector<float>{-1, 0, 0, 2.5f, 0});

  SUBCASE("a nonzero X does not store") {
    Input outside = yin;
    outside.add({5, 5}, 1);
    Guarded<float> untouched(static_cast<size_t>(lengths.back()), 9.0f);
    const std::vector<float> v = values_of<float>(outside);
    CHECK(y.pack(outside.nnz(), outside.coords.data(), v.data(), outside.dims.data(), structure.data(),
                 untouched.data(), lengths.data()) == kNotInStructure);
    for (float f : untouched.copy()) CHECK(f == 9.0f);
  }
  SUBCASE("X's arrays are checked like unpack checks them") {
    std::vector<int64_t> wrong = lengths;
    wrong[2] -= 1;
    CHECK(y.pack(yin.nnz(), yin.coords.data(), vals.data(), yin.dims.data(), structure.data(), yvals.data(),
                 wrong.data()) == kLength);
    const int32_t saved = (*xs.arrays[0])[1];
    (*xs.arrays[0])[1] = 100;
    CHECK(y.pack(yin.nnz(), yin.coords.data(), vals.data(), yin.dims.data(), structure.data(), yvals.data(),
                 lengths.data()) == kPosNotMonotone);
    (*xs.arrays[0])[1] = saved;
  }
}

TEST_CASE("the headers compile as C99, all of them in one file") {
  const Library& lib = library();
  std::string source;
  for (const Case& c : cases()) source += "#include \"" + c.kernel + ".h\"\n";
  source +=
      "int main(void) {\n"
      "  const char* message = pk_csr_pack_strerror(SPGEN_ERR_LENGTH);\n"
      "  return message[0] != 0 && SPGEN_OK == 0 && SPGEN_ERR_NOT_IN_STRUCTURE == 9 ? 0 : 1;\n"
      "}\n";
  write_text(lib.dir().file("all.c"), source);
  ProcessResult cc = run_process({"cc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I", lib.dir().path(),
                                  "-c", lib.dir().file("all.c"), "-o", lib.dir().file("all.o")});
  INFO(cc.err);
  CHECK(cc.exit_code == 0);
}

TEST_CASE("the guard pages catch an access one past a buffer") {
  // The premise of the "nothing past a buffer" checks: touching the element after a buffer faults.
  Guarded<int32_t> g(5);
  g[4] = 1;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGSEGV, SIG_DFL);  // not doctest's handler
    std::signal(SIGBUS, SIG_DFL);
    volatile int32_t* past = g.data() + 5;
    *past = 1;
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
}
