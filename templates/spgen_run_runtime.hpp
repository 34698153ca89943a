// spgen_run_runtime.hpp: runtime support for the driver that `spgen run` generates.
//
// Copied verbatim next to a generated kernel, with spgen_run_glue.hpp (the plain interface a cpu
// driver's glue uses), and compiled once per index and value types; it depends on the C++17
// standard library only (plus OpenMP when the compiler enables it). It reads and
// writes tensors (Matrix Market .mtx, FROSTT .tns), makes reproducible random tensors,
// packs them into the kernel's storage levels, and runs and times the kernel.
#ifndef SPGEN_RUN_RUNTIME_HPP
#define SPGEN_RUN_RUNTIME_HPP

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <new>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "spgen_run_glue.hpp"

namespace spgen_run {

// ---------------------------------------------------------------------------------------
// Kernel description (filled in by the generated driver)
// ---------------------------------------------------------------------------------------

// Storage kind of one level. Adding a kind means adding a case to each `switch (level)`
// below: level_has_pos/level_has_crd, detail::build_level (pack), detail::level_walk and
// the loop in unpack, and detail::find_position.
//
// Arrays of level l (the kernel ABI); "parents" is the position count of level l-1 (1 at
// the top), "positions" this level's:
//   Dense                no arrays; parent p's children are positions p*dim .. p*dim+dim-1,
//                        position = p*dim + coordinate.
//   Compressed           pos (parents+1) and crd (positions): the distinct coordinates under
//                        parent p, increasing, at positions pos[p] .. pos[p+1]-1.
//   CompressedNonUnique  pos and crd like Compressed, but one position per stored entry:
//                        a coordinate repeats (non-decreasing under a parent) once per
//                        entry, each repeat starting its own subtree. COO's top level.
//   Singleton            crd only (size parents): one coordinate per parent position;
//                        position = parent position. Only below CompressedNonUnique or
//                        another Singleton. COO of a matrix is {CompressedNonUnique,
//                        Singleton}: pos = {0, nnz}, crd0 = rows, crd1 = columns.
//   DenseVariable        pos only (parents+1), no crd: parent p stores the prefix of
//                        coordinates 0 .. pos[p+1]-pos[p]-1, position = pos[p] + coordinate
//                        (SparseTIR's ragged axis). pack stores (largest coordinate + 1)
//                        per parent, missing coordinates in the prefix as explicit zeros.
//   SparseFixed          crd only (size parents * W, W = TensorInfo::widths[l] >= 1; ELL):
//                        parent p owns positions p*W .. p*W+W-1, its coordinates increasing,
//                        then padding marked by crd = -1 (value 0, whole subtree zero).
//                        pack fails when a parent has more than W distinct coordinates.
enum class Level { Dense, Compressed, CompressedNonUnique, Singleton, DenseVariable, SparseFixed };

struct TensorInfo {
  std::string name;
  bool is_output;
  std::vector<int> modes;        // index-variable id of each tensor mode
  std::vector<Level> levels;     // storage levels, outermost first
  std::vector<int> mode_order;   // levels[l] stores mode mode_order[l]
  int shares_structure_with;     // tensor id whose pos/crd this tensor uses, or -1
  std::vector<int64_t> widths = {};  // per level: the width W of a SparseFixed level; empty: none
  // per level: the block size B of a blocked format's level (BSR), which stores its mode
  // floordiv B (the mode's first level) or mod B (its second); empty: none. The runtime's own
  // pack and unpack do not handle blocked formats: the kernel's routines (Hooks) do.
  std::vector<int64_t> blocks = {};
  // SELL-C-sigma (the "sell" format): level 1 is a SparseFixed level whose width varies by slice,
  // with a pos array of the slices' first slots. Only the kernel's routines (Hooks) pack it.
  bool sliced = false;
};

struct KernelInfo {
  std::string name;
  std::vector<std::string> index_vars;
  std::vector<TensorInfo> tensors;
  bool accumulate;  // the kernel adds into its output (`+=`)
  // The input that holds the output's value before a `+=` kernel that assembles its sparse output
  // anew (`C_prev`): `--input C` fills it, and without one it is empty. -1: none.
  int previous_output = -1;
  // The kernel lists its sparse output's entries keyed by their coordinates flattened into one
  // int64 (entries that arrive out of order): the product of the output's dimensions must fit.
  bool lists_output = false;
};

inline const char* level_name(Level level) {
  switch (level) {
    case Level::Dense: return "dense";
    case Level::Compressed: return "compressed";
    case Level::CompressedNonUnique: return "compressed-nonunique";
    case Level::Singleton: return "singleton";
    case Level::DenseVariable: return "dense-variable";
    case Level::SparseFixed: return "sparse-fixed";
  }
  return "?";
}

// Whether a level of this kind has a pos / crd array among the kernel arguments.
inline bool level_has_pos(Level level) {
  switch (level) {
    case Level::Dense: return false;
    case Level::Compressed: return true;
    case Level::CompressedNonUnique: return true;
    case Level::Singleton: return false;
    case Level::DenseVariable: return true;
    case Level::SparseFixed: return false;
  }
  return false;
}
inline bool level_has_crd(Level level) {
  switch (level) {
    case Level::Dense: return false;
    case Level::Compressed: return true;
    case Level::CompressedNonUnique: return true;
    case Level::Singleton: return true;
    case Level::DenseVariable: return false;
    case Level::SparseFixed: return true;
  }
  return false;
}

inline bool all_dense(const std::vector<Level>& levels) {
  return std::all_of(levels.begin(), levels.end(), [](Level l) { return l == Level::Dense; });
}

// ---------------------------------------------------------------------------------------
// Coordinate-list tensor
// ---------------------------------------------------------------------------------------

// Entries in any order, duplicates allowed. Coordinates are 0-based.
struct Coo {
  std::vector<int64_t> dims;
  std::vector<int64_t> coords;  // nnz * order, row-major by entry
  std::vector<double> vals;

  int order() const { return static_cast<int>(dims.size()); }
  int64_t nnz() const { return static_cast<int64_t>(vals.size()); }
  int64_t coord(int64_t entry, int mode) const {
    return coords[static_cast<size_t>(entry * order() + mode)];
  }
  void add_entry(const int64_t* c, double v) {
    coords.insert(coords.end(), c, c + order());
    vals.push_back(v);
  }
  void add(std::initializer_list<int64_t> c, double v) {
    if (static_cast<int>(c.size()) != order())
      throw std::invalid_argument("Coo::add: coordinate count differs from the order");
    add_entry(c.begin(), v);
  }
};

namespace detail {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// a * b for a, b >= 0; false if it overflows int64.
inline bool mul_fits(int64_t a, int64_t b, int64_t& out) {
  if (a != 0 && b > kInt64Max / a) return false;
  out = a * b;
  return true;
}

inline int64_t checked_product(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t total = 1;
  for (int64_t d : dims)
    if (d < 0 || !mul_fits(total, d, total))
      throw std::runtime_error(what + ": the number of elements overflows a 64-bit integer");
  return total;
}

[[noreturn]] inline void fail_file(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": error: " + what);
}

// Where in an input file we are, for `PATH:LINE: error: WHAT` messages.
struct Where {
  const std::string& path;
  int64_t line;
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path + ":" + std::to_string(line) + ": error: " + what);
  }
};

// A token for an error message: quoted, shortened, unprintable bytes shown as '?'.
inline std::string quoted(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c >= 32 && c < 127) ? static_cast<char>(c) : '?';
  }
  if (s.size() > kMax) out += "...";
  return out + "'";
}

inline std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

inline std::string extension_of(const std::string& path) {
  const size_t slash = path.find_last_of("/\\");
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return lowercase(std::string_view(path).substr(dot));
}

inline std::string join(const std::vector<std::string>& parts, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// ---- buffered text parsing -----------------------------------------------------------

inline std::string read_whole_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail_file(path, std::string("cannot open file: ") + std::strerror(errno));
  std::string data;
  std::vector<char> chunk(1 << 20);
  size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), f)) > 0) data.append(chunk.data(), n);
  const int read_errno = errno;
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) fail_file(path, std::string("cannot read file: ") + std::strerror(read_errno));
  return data;
}

// Hands out the lines of a text one by one, counting them from 1. At the end, line() is
// one past the last line: where the missing entries would have been.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}

  bool next(std::string_view& line) {
    if (ended_) return false;
    ++line_;
    if (offset_ >= text_.size()) {
      ended_ = true;
      return false;
    }
    size_t end = text_.find('\n', offset_);
    if (end == std::string_view::npos) end = text_.size();
    line = text_.substr(offset_, end - offset_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    offset_ = end + 1;
    return true;
  }
  int64_t line() const { return line_; }

 private:
  std::string_view text_;
  size_t offset_ = 0;
  int64_t line_ = 0;
  bool ended_ = false;
};

inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Splits one line at blanks.
class Tokens {
 public:
  explicit Tokens(std::string_view line) : rest_(line) {}
  bool next(std::string_view& token) {
    size_t i = 0;
    while (i < rest_.size() && is_blank(rest_[i])) ++i;
    if (i == rest_.size()) return false;
    size_t j = i;
    while (j < rest_.size() && !is_blank(rest_[j])) ++j;
    token = rest_.substr(i, j - i);
    rest_.remove_prefix(j);
    return true;
  }

 private:
  std::string_view rest_;
};

// Skips blank lines and lines whose first non-blank character is in `comment_chars`.
inline bool next_data_line(LineReader& reader, std::string_view& line, std::string_view comment_chars) {
  while (reader.next(line)) {
    size_t i = 0;
    while (i < line.size() && is_blank(line[i])) ++i;
    if (i < line.size() && comment_chars.find(line[i]) == std::string_view::npos) return true;
  }
  return false;
}

inline std::string_view without_plus(std::string_view t) {
  if (t.size() > 1 && t[0] == '+' && t[1] != '+' && t[1] != '-') t.remove_prefix(1);
  return t;
}

template <class Int>
bool parse_integer(std::string_view token, Int& out) {
  token = without_plus(token);
  const char* end = token.data() + token.size();
  const auto result = std::from_chars(token.data(), end, out);
  return result.ec == std::errc() && result.ptr == end;
}

// strtod on a bounded copy (the token is not NUL-terminated). Locale-dependent, so only
// a fallback.
inline bool parse_real_strtod(std::string_view token, double& out) {
  const std::string copy(token);
  char* end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return !copy.empty() && end == copy.c_str() + copy.size() && !std::isspace(static_cast<unsigned char>(copy[0])) &&
         std::abs(out) != HUGE_VAL;
}

inline bool parse_real(std::string_view token, double& out) {
  token = without_plus(token);
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  const char* end = token.data() + token.size();
  const auto result = std::from_chars(token.data(), end, out);
  if (result.ec == std::errc()) return result.ptr == end;
  // from_chars reports underflow as out of range too; strtod tells it from overflow.
  if (result.ec == std::errc::result_out_of_range && result.ptr == end) return parse_real_strtod(token, out);
  return false;
#else
  return parse_real_strtod(token, out);
#endif
}

// A 1-based index token from a file, returned 0-based. `size` < 0: no upper bound.
inline int64_t parse_file_index(const Where& where, std::string_view token, int64_t size, const char* what) {
  int64_t value = 0;
  if (!parse_integer(token, value)) where.fail(std::string("invalid ") + what + " " + quoted(token));
  if (value < 1) where.fail(std::string(what) + " " + quoted(token) + " is out of range (indices start at 1)");
  if (size >= 0 && value > size)
    where.fail(std::string(what) + " " + std::to_string(value) + " is out of range (size " + std::to_string(size) +
               ")");
  return value - 1;
}

inline double parse_file_value(const Where& where, std::string_view token, bool integer_field) {
  if (integer_field) {
    int64_t value = 0;
    if (!parse_integer(token, value)) where.fail("invalid integer value " + quoted(token));
    return static_cast<double>(value);
  }
  double value = 0;
  if (!parse_real(token, value)) where.fail("invalid value " + quoted(token));
  return value;
}

inline void expect_line_end(const Where& where, Tokens& tokens) {
  std::string_view extra;
  if (tokens.next(extra)) where.fail("unexpected text " + quoted(extra) + " at the end of the line");
}

// ---- Matrix Market -------------------------------------------------------------------

enum class MmField { Real, Integer, Pattern };
enum class MmSymmetry { General, Symmetric, Skew };

struct MmHeader {
  bool array = false;
  MmField field = MmField::Real;
  MmSymmetry symmetry = MmSymmetry::General;
};

inline MmHeader parse_mm_banner(const Where& where, std::string_view line) {
  Tokens tokens(line);
  std::string_view t[6];
  int n = 0;
  while (n < 6 && tokens.next(t[n])) ++n;
  if (n == 0 || lowercase(t[0]) != "%%matrixmarket") where.fail("missing %%MatrixMarket banner");
  if (n != 5) where.fail("garbled banner: expected '%%MatrixMarket matrix FORMAT FIELD SYMMETRY'");
  MmHeader h;
  if (lowercase(t[1]) != "matrix") where.fail("unsupported object " + quoted(t[1]) + " (only 'matrix')");
  const std::string format = lowercase(t[2]), field = lowercase(t[3]), symmetry = lowercase(t[4]);
  if (format == "array") h.array = true;
  else if (format != "coordinate") where.fail("unknown format " + quoted(t[2]) + " (expected coordinate or array)");
  if (field == "real" || field == "double") h.field = MmField::Real;
  else if (field == "integer") h.field = MmField::Integer;
  else if (field == "pattern") h.field = MmField::Pattern;
  else if (field == "complex") where.fail("unsupported field 'complex'");
  else where.fail("unknown field " + quoted(t[3]) + " (expected real, integer or pattern)");
  if (symmetry == "general") h.symmetry = MmSymmetry::General;
  else if (symmetry == "symmetric") h.symmetry = MmSymmetry::Symmetric;
  else if (symmetry == "skew-symmetric") h.symmetry = MmSymmetry::Skew;
  else if (symmetry == "hermitian") where.fail("unsupported symmetry 'hermitian'");
  else where.fail("unknown symmetry " + quoted(t[4]) + " (expected general, symmetric or skew-symmetric)");
  if (h.array && h.field == MmField::Pattern) where.fail("the array format cannot be 'pattern'");
  return h;
}

inline int64_t parse_size_field(const Where& where, std::string_view token, const char* what) {
  int64_t value = 0;
  if (!parse_integer(token, value) || value < 0) where.fail(std::string("invalid ") + what + " " + quoted(token));
  return value;
}

// Reads the size line: rows, cols and (coordinate format) the entry count.
inline void read_mm_sizes(LineReader& reader, const std::string& path, const MmHeader& h, int64_t& rows,
                          int64_t& cols, int64_t& count) {
  std::string_view line;
  if (!next_data_line(reader, line, "%")) Where{path, reader.line()}.fail("missing size line");
  const Where where{path, reader.line()};
  Tokens tokens(line);
  std::string_view t[3];
  const int expected = h.array ? 2 : 3;
  for (int i = 0; i < expected; ++i)
    if (!tokens.next(t[i]))
      where.fail(h.array ? "bad size line: expected 'ROWS COLS'" : "bad size line: expected 'ROWS COLS NNZ'");
  expect_line_end(where, tokens);
  rows = parse_size_field(where, t[0], "row count");
  cols = parse_size_field(where, t[1], "column count");
  if (h.symmetry != MmSymmetry::General && rows != cols)
    where.fail("a symmetric or skew-symmetric matrix must be square (got " + std::to_string(rows) + " x " +
               std::to_string(cols) + ")");
  int64_t cells = 0;
  const bool cells_fit = mul_fits(rows, cols, cells);
  if (h.array) {
    if (!cells_fit) where.fail("the matrix is too large");
    const int64_t n = rows;
    count = h.symmetry == MmSymmetry::General ? cells
            : h.symmetry == MmSymmetry::Symmetric ? n * (n + 1) / 2
                                                  : n * (n - 1) / 2;
    return;
  }
  count = parse_size_field(where, t[2], "entry count");
  if (cells_fit && count > cells)
    where.fail("the entry count " + std::to_string(count) + " exceeds rows x cols");
}

// Caps a reservation by what a file of this many bytes can hold, so a lying size line
// cannot make us allocate.
inline size_t bounded_reserve(int64_t declared, size_t file_bytes, size_t min_bytes_per_item) {
  const size_t cap = file_bytes / min_bytes_per_item + 1;
  return declared < 0 ? 0 : std::min(static_cast<size_t>(declared), cap);
}

inline Coo read_mm_coordinate(LineReader& reader, const std::string& path, const MmHeader& h, int64_t rows,
                              int64_t cols, int64_t count, size_t file_bytes) {
  Coo t;
  t.dims = {rows, cols};
  const bool mirrored = h.symmetry != MmSymmetry::General;
  const size_t reserve = bounded_reserve(count, file_bytes, 4) * (mirrored ? 2 : 1);
  t.coords.reserve(2 * reserve);
  t.vals.reserve(reserve);
  std::string_view line;
  for (int64_t k = 0; k < count; ++k) {
    if (!next_data_line(reader, line, "%"))
      Where{path, reader.line()}.fail("expected " + std::to_string(count) + " entries but found only " +
                                      std::to_string(k));
    const Where where{path, reader.line()};
    Tokens tokens(line);
    std::string_view ti, tj, tv;
    const bool pattern = h.field == MmField::Pattern;
    if (!tokens.next(ti) || !tokens.next(tj) || (!pattern && !tokens.next(tv)))
      where.fail(pattern ? "expected 'ROW COL'" : "expected 'ROW COL VALUE'");
    const int64_t c[2] = {parse_file_index(where, ti, rows, "row index"),
                          parse_file_index(where, tj, cols, "column index")};
    const double v = pattern ? 1.0 : parse_file_value(where, tv, h.field == MmField::Integer);
    expect_line_end(where, tokens);
    if (mirrored && c[1] > c[0])
      where.fail("entry above the diagonal in a symmetric matrix (only the lower triangle is stored)");
    t.add_entry(c, v);
    if (mirrored && c[0] != c[1]) {
      const int64_t m[2] = {c[1], c[0]};
      t.add_entry(m, h.symmetry == MmSymmetry::Skew ? -v : v);
    }
  }
  return t;
}

// Array format: values of the stored part, column by column (column-major).
inline Coo read_mm_array(LineReader& reader, const std::string& path, const MmHeader& h, int64_t rows,
                         int64_t cols, int64_t count, size_t file_bytes) {
  std::vector<double> stored;
  stored.reserve(bounded_reserve(count, file_bytes, 2));
  std::string_view line;
  for (int64_t k = 0; k < count; ++k) {
    if (!next_data_line(reader, line, "%"))
      Where{path, reader.line()}.fail("expected " + std::to_string(count) + " values but found only " +
                                      std::to_string(k));
    const Where where{path, reader.line()};
    Tokens tokens(line);
    std::string_view tv;
    tokens.next(tv);  // a data line has at least one token
    stored.push_back(parse_file_value(where, tv, h.field == MmField::Integer));
    expect_line_end(where, tokens);
  }
  Coo t;
  t.dims = {rows, cols};
  // An empty matrix may still have a dimension of billions: nothing to loop over (found by
  // fuzzing: 0 x 200011030 took seconds).
  if (rows == 0 || cols == 0) return t;
  // All values are read, so rows * cols is backed by the file: safe to allocate.
  std::vector<double> dense(static_cast<size_t>(rows * cols), 0.0);
  size_t k = 0;
  for (int64_t j = 0; j < cols; ++j) {
    const int64_t first_row = h.symmetry == MmSymmetry::General ? 0 : h.symmetry == MmSymmetry::Symmetric ? j : j + 1;
    for (int64_t i = first_row; i < rows; ++i) {
      const double v = stored[k++];
      dense[static_cast<size_t>(i * cols + j)] = v;
      if (h.symmetry != MmSymmetry::General && i != j)
        dense[static_cast<size_t>(j * cols + i)] = h.symmetry == MmSymmetry::Skew ? -v : v;
    }
  }
  t.coords.reserve(2 * dense.size());
  t.vals.reserve(dense.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t c[2] = {i, j};
      t.add_entry(c, dense[static_cast<size_t>(i * cols + j)]);
    }
  return t;
}

inline void expect_no_more_data(LineReader& reader, const std::string& path, int64_t count, const char* what) {
  std::string_view line;
  if (next_data_line(reader, line, "%"))
    Where{path, reader.line()}.fail(std::string("too many ") + what + ": the size line declares " +
                                    std::to_string(count));
}

inline Coo read_mtx(const std::string& path, std::string_view text) {
  LineReader reader(text);
  std::string_view line;
  if (!reader.next(line)) Where{path, 1}.fail("missing %%MatrixMarket banner (empty file)");
  const MmHeader h = parse_mm_banner(Where{path, reader.line()}, line);
  int64_t rows = 0, cols = 0, count = 0;
  read_mm_sizes(reader, path, h, rows, cols, count);
  Coo t = h.array ? read_mm_array(reader, path, h, rows, cols, count, text.size())
                  : read_mm_coordinate(reader, path, h, rows, cols, count, text.size());
  expect_no_more_data(reader, path, count, h.array ? "values" : "entries");
  return t;
}

// ---- FROSTT .tns ---------------------------------------------------------------------

inline size_t count_tokens(std::string_view line) {
  Tokens tokens(line);
  std::string_view t;
  size_t n = 0;
  while (tokens.next(t)) ++n;
  return n;
}

inline Coo read_tns(const std::string& path, std::string_view text) {
  LineReader reader(text);
  std::string_view line;
  Coo t;
  size_t fields = 0;
  int64_t first_line = 0;
  std::vector<int64_t> c;
  while (next_data_line(reader, line, "#%")) {
    const Where where{path, reader.line()};
    if (fields == 0) {  // the first entry fixes the order
      fields = count_tokens(line);
      first_line = reader.line();
      t.dims.assign(fields - 1, 0);
      c.resize(fields - 1);
      t.coords.reserve(bounded_reserve(kInt64Max, text.size(), 4 * fields) * (fields - 1));
    }
    Tokens tokens(line);
    std::string_view token;
    for (size_t m = 0; m + 1 < fields; ++m) {
      if (!tokens.next(token))
        where.fail("expected " + std::to_string(fields) + " fields like line " + std::to_string(first_line));
      c[m] = parse_file_index(where, token, -1, "index");
      t.dims[m] = std::max(t.dims[m], c[m] + 1);
    }
    if (!tokens.next(token))
      where.fail("expected " + std::to_string(fields) + " fields like line " + std::to_string(first_line));
    const double v = parse_file_value(where, token, false);
    if (tokens.next(token))
      where.fail("expected " + std::to_string(fields) + " fields like line " + std::to_string(first_line) +
                 "; unexpected " + quoted(token));
    t.add_entry(c.data(), v);
  }
  if (fields == 0) Where{path, reader.line()}.fail("no entries: cannot tell the order of the tensor");
  return t;
}

}  // namespace detail

// Reads a .mtx (Matrix Market) or .tns (FROSTT) file. Errors: std::runtime_error with
// `PATH:LINE: error: WHAT` (`PATH: error: WHAT` when the file cannot be opened).
inline Coo read_tensor(const std::string& path) {
  const std::string ext = detail::extension_of(path);
  if (ext != ".mtx" && ext != ".tns") detail::fail_file(path, "unknown file extension (expected .mtx or .tns)");
  const std::string text = detail::read_whole_file(path);
  return ext == ".mtx" ? detail::read_mtx(path, text) : detail::read_tns(path, text);
}

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

namespace detail {

inline void check_coo(const Coo& t, const std::string& what) {
  for (int64_t d : t.dims)
    if (d < 0) throw std::runtime_error(what + ": negative dimension");
  if (t.coords.size() != t.vals.size() * t.dims.size())
    throw std::runtime_error(what + ": coordinate count does not match the entry count");
  for (int64_t e = 0; e < t.nnz(); ++e)
    for (int m = 0; m < t.order(); ++m) {
      const int64_t c = t.coord(e, m);
      if (c < 0 || c >= t.dims[static_cast<size_t>(m)])
        throw std::runtime_error(what + ": coordinate " + std::to_string(c) + " of mode " + std::to_string(m + 1) +
                                 " in entry " + std::to_string(e) + " is out of range (size " +
                                 std::to_string(t.dims[static_cast<size_t>(m)]) + ")");
    }
}

inline std::vector<int> identity_order(int n) {
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// Entries with coordinates permuted into storage-level order, sorted, duplicates summed.
struct SortedEntries {
  int order = 0;
  std::vector<int64_t> coords;  // level-order coordinates, size() * order
  std::vector<double> vals;
  int64_t size() const { return static_cast<int64_t>(vals.size()); }
  int64_t coord(int64_t e, int level) const { return coords[static_cast<size_t>(e * order + level)]; }
};

inline SortedEntries sort_and_merge(const Coo& t, const std::vector<int>& mode_order) {
  const int order = t.order();
  const size_t n = static_cast<size_t>(t.nnz()), L = static_cast<size_t>(order);
  std::vector<int64_t> keys(n * L);
  for (size_t e = 0; e < n; ++e)
    for (size_t l = 0; l < L; ++l) keys[e * L + l] = t.coords[e * L + static_cast<size_t>(mode_order[l])];
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  const int64_t* k = keys.data();
  // Ties keep file order, so duplicates are summed in the same order everywhere.
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    const int64_t* ka = k + a * order;
    const int64_t* kb = k + b * order;
    for (int l = 0; l < order; ++l)
      if (ka[l] != kb[l]) return ka[l] < kb[l];
    return a < b;
  });
  SortedEntries out;
  out.order = order;
  out.coords.reserve(n * L);
  out.vals.reserve(n);
  for (int64_t e : perm) {
    const int64_t* key = k + e * order;
    const bool same_as_last =
        !out.vals.empty() && std::equal(key, key + order, out.coords.data() + out.coords.size() - L);
    if (same_as_last) {
      out.vals.back() += t.vals[static_cast<size_t>(e)];
    } else {
      out.coords.insert(out.coords.end(), key, key + order);
      out.vals.push_back(t.vals[static_cast<size_t>(e)]);
    }
  }
  return out;
}

inline void append_int(std::string& out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

inline void append_value(std::string& out, double v, int precision) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  out.append(buf, static_cast<size_t>(std::max(n, 0)));
}

// Row-major dense copy of a tensor, duplicates summed.
inline std::vector<double> dense_values(const Coo& t, const std::string& what) {
  const int64_t total = checked_product(t.dims, what);
  std::vector<double> dense(static_cast<size_t>(total), 0.0);
  for (int64_t e = 0; e < t.nnz(); ++e) {
    int64_t linear = 0;
    for (int m = 0; m < t.order(); ++m) linear = linear * t.dims[static_cast<size_t>(m)] + t.coord(e, m);
    dense[static_cast<size_t>(linear)] += t.vals[static_cast<size_t>(e)];
  }
  return dense;
}

inline std::string mtx_text(const Coo& t, bool dense, int precision, const std::string& path) {
  // Orders 0 and 1 are written as 1 x 1 and n x 1 matrices.
  const int64_t rows = t.order() >= 1 ? t.dims[0] : 1;
  const int64_t cols = t.order() == 2 ? t.dims[1] : 1;
  std::string out;
  if (dense) {
    const std::vector<double> values = dense_values(t, path);
    out += "%%MatrixMarket matrix array real general\n";
    append_int(out, rows);
    out += ' ';
    append_int(out, cols);
    out += '\n';
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i) {
        append_value(out, values[static_cast<size_t>(i * cols + j)], precision);
        out += '\n';
      }
    return out;
  }
  const SortedEntries entries = sort_and_merge(t, identity_order(t.order()));
  out += "%%MatrixMarket matrix coordinate real general\n";
  append_int(out, rows);
  out += ' ';
  append_int(out, cols);
  out += ' ';
  append_int(out, entries.size());
  out += '\n';
  for (int64_t e = 0; e < entries.size(); ++e) {
    append_int(out, t.order() >= 1 ? entries.coord(e, 0) + 1 : 1);
    out += ' ';
    append_int(out, t.order() == 2 ? entries.coord(e, 1) + 1 : 1);
    out += ' ';
    append_value(out, entries.vals[static_cast<size_t>(e)], precision);
    out += '\n';
  }
  return out;
}

inline void append_tns_entry(std::string& out, const int64_t* c, int order, double v, int precision) {
  for (int m = 0; m < order; ++m) {
    append_int(out, c[m] + 1);
    out += ' ';
  }
  append_value(out, v, precision);
  out += '\n';
}

inline std::string tns_text(const Coo& t, bool dense, int precision, const std::string& path) {
  const int order = t.order();
  std::string out;
  std::vector<int64_t> c(static_cast<size_t>(order), 0);
  if (dense) {
    const std::vector<double> values = dense_values(t, path);
    for (size_t linear = 0; linear < values.size(); ++linear) {
      size_t rest = linear;
      for (int m = order - 1; m >= 0; --m) {
        const size_t d = static_cast<size_t>(t.dims[static_cast<size_t>(m)]);
        c[static_cast<size_t>(m)] = static_cast<int64_t>(rest % d);
        rest /= d;
      }
      append_tns_entry(out, c.data(), order, values[linear], precision);
    }
    return out;
  }
  const SortedEntries entries = sort_and_merge(t, identity_order(order));
  for (int64_t e = 0; e < entries.size(); ++e)
    append_tns_entry(out, &entries.coords[static_cast<size_t>(e * order)], order,
                     entries.vals[static_cast<size_t>(e)], precision);
  // A .tns file has no size line; readers take the largest coordinates. An explicit zero
  // at the last coordinate keeps the dimensions through a round trip.
  const bool has_cells = std::all_of(t.dims.begin(), t.dims.end(), [](int64_t d) { return d > 0; });
  for (int m = 0; m < order; ++m) c[static_cast<size_t>(m)] = t.dims[static_cast<size_t>(m)] - 1;
  const bool last_present =
      entries.size() > 0 &&
      std::equal(c.begin(), c.end(), entries.coords.begin() + (entries.size() - 1) * order);
  if (has_cells && order > 0 && !last_present) append_tns_entry(out, c.data(), order, 0.0, precision);
  return out;
}

// Writes to PATH.tmp and renames it, so a failed write never leaves a partial PATH.
inline void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail_file(path, "cannot create " + tmp + ": " + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    fail_file(path, "cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    fail_file(path, std::string("cannot rename the temporary file: ") + std::strerror(err));
  }
}

}  // namespace detail

// Writes a tensor: .mtx for orders 0..2 (dense: `array`, column-major; sparse: `coordinate`
// sorted by row then column), .tns for any order. Duplicates are summed.
inline void write_tensor(const std::string& path, const Coo& t, bool dense, int precision = 9) {
  const std::string ext = detail::extension_of(path);
  if (ext != ".mtx" && ext != ".tns") detail::fail_file(path, "unknown file extension (expected .mtx or .tns)");
  if (ext == ".mtx" && t.order() > 2)
    detail::fail_file(path, "cannot write an order-" + std::to_string(t.order()) +
                                " tensor as Matrix Market (order 2 at most); use a .tns file");
  detail::check_coo(t, path);
  precision = std::clamp(precision, 1, 17);
  detail::write_file_atomically(path, ext == ".mtx" ? detail::mtx_text(t, dense, precision, path)
                                                    : detail::tns_text(t, dense, precision, path));
}

// ---------------------------------------------------------------------------------------
// Reproducible random tensors
// ---------------------------------------------------------------------------------------

// splitmix64: tiny and fully specified, so the same seed gives the same tensor on every
// machine and standard library.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1) on a grid of 2^-52: both steps are exact, so no rounding differs.
  double uniform_pm1() { return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0; }

 private:
  uint64_t state_;
};

namespace detail {

inline void unravel(int64_t linear, const std::vector<int64_t>& dims, int64_t* c) {
  for (size_t m = dims.size(); m-- > 0;) {
    c[m] = linear % dims[m];
    linear /= dims[m];
  }
}

}  // namespace detail

// Every entry, row-major, values uniform in [-1, 1).
inline Coo random_dense(std::vector<int64_t> dims, uint64_t seed) {
  const int64_t total = detail::checked_product(dims, "random tensor");
  SplitMix64 rng(seed);
  Coo t;
  t.dims = std::move(dims);
  t.coords.resize(static_cast<size_t>(total) * t.dims.size());
  t.vals.resize(static_cast<size_t>(total));
  for (int64_t e = 0; e < total; ++e) {
    detail::unravel(e, t.dims, &t.coords[static_cast<size_t>(e) * t.dims.size()]);
    t.vals[static_cast<size_t>(e)] = rng.uniform_pm1();
  }
  return t;
}

// Each entry present with probability `density`, sorted row-major, values uniform in
// [-1, 1). Up to 1e8 cells: one integer coin flip per cell (bit-exact everywhere). Beyond:
// geometric skips between entries, O(nnz), which uses std::log.
inline Coo random_sparse(std::vector<int64_t> dims, double density, uint64_t seed) {
  if (!(density >= 0.0 && density <= 1.0))
    throw std::runtime_error("density must be between 0 and 1, got " + std::to_string(density));
  const int64_t total = detail::checked_product(dims, "random tensor");
  SplitMix64 rng(seed);
  Coo t;
  t.dims = std::move(dims);
  std::vector<int64_t> c(t.dims.size());
  const auto emit = [&](int64_t linear) {
    detail::unravel(linear, t.dims, c.data());
    t.add_entry(c.data(), rng.uniform_pm1());
  };
  if (density == 0.0 || total == 0) return t;
  const double expected = density * static_cast<double>(total);
  t.vals.reserve(static_cast<size_t>(std::min(expected * 1.1 + 16, 1e9)));
  t.coords.reserve(t.vals.capacity() * t.dims.size());
  constexpr int64_t kCoinFlipLimit = 100000000;
  if (total <= kCoinFlipLimit) {
    // density * 2^64 is exact; below 1 it is < 2^64 and converts without overflow.
    const uint64_t threshold = density < 1.0 ? static_cast<uint64_t>(std::ldexp(density, 64)) : 0;
    for (int64_t e = 0; e < total; ++e)
      if (density == 1.0 || rng.next() < threshold) emit(e);
    return t;
  }
  const double log_keep = std::log1p(-density);  // -inf when density == 1
  for (int64_t e = -1;;) {
    const double u = static_cast<double>((rng.next() >> 11) + 1) * 0x1.0p-53;  // (0, 1]
    const double skip = density == 1.0 ? 0.0 : std::floor(std::log(u) / log_keep);
    if (skip >= static_cast<double>(total - 1 - e)) break;
    e += 1 + static_cast<int64_t>(skip);
    emit(e);
  }
  return t;
}

// ---------------------------------------------------------------------------------------
// Packing into storage levels
// ---------------------------------------------------------------------------------------

// pos/crd are indexed by level and empty for levels without such arrays. dims are in the
// tensor's own mode order.
template <class I, class V>
struct Packed {
  std::vector<std::vector<I>> pos, crd;
  std::vector<V> vals;
  std::vector<int64_t> dims;
};

namespace detail {

// The width W of level l (0 when `widths` gives none).
inline int64_t level_width(const std::vector<int64_t>& widths, size_t l) {
  return l < widths.size() ? widths[l] : 0;
}

// Which level kinds may follow which, and the widths SparseFixed levels need.
inline void check_levels(const std::vector<Level>& levels, const std::vector<int64_t>& widths) {
  if (!widths.empty() && widths.size() != levels.size())
    throw std::runtime_error("format has " + std::to_string(levels.size()) + " levels but " +
                             std::to_string(widths.size()) + " widths");
  for (size_t l = 0; l < levels.size(); ++l) {
    if (levels[l] == Level::Singleton &&
        (l == 0 || (levels[l - 1] != Level::CompressedNonUnique && levels[l - 1] != Level::Singleton)))
      throw std::runtime_error("singleton level " + std::to_string(l) +
                               " must be directly below a compressed-nonunique or singleton level (" +
                               (l == 0 ? std::string("it is the top level")
                                       : std::string("it is below a ") + level_name(levels[l - 1]) + " level") +
                               ")");
    if (levels[l] == Level::SparseFixed && level_width(widths, l) < 1)
      throw std::runtime_error("sparse-fixed level " + std::to_string(l) + " needs a width of at least 1 (got " +
                               std::to_string(level_width(widths, l)) + ")");
  }
}

inline void check_format(const std::vector<int64_t>& dims, const std::vector<Level>& levels,
                         const std::vector<int>& mode_order, const std::vector<int64_t>& widths = {}) {
  check_levels(levels, widths);
  const size_t order = dims.size();
  if (levels.size() != order || mode_order.size() != order)
    throw std::runtime_error("format has " + std::to_string(levels.size()) + " levels and " +
                             std::to_string(mode_order.size()) + " mode_order entries for an order-" +
                             std::to_string(order) + " tensor");
  std::vector<bool> seen(order, false);
  for (int m : mode_order) {
    if (m < 0 || static_cast<size_t>(m) >= order || seen[static_cast<size_t>(m)])
      throw std::runtime_error("mode_order is not a permutation of the tensor's modes");
    seen[static_cast<size_t>(m)] = true;
  }
}

template <class I>
void check_fits_index(int64_t value, const char* what) {
  if (value > static_cast<int64_t>(std::numeric_limits<I>::max()))
    throw std::runtime_error(std::string(what) + " " + std::to_string(value) + " does not fit the index type (max " +
                             std::to_string(static_cast<int64_t>(std::numeric_limits<I>::max())) + ")");
}

// Entry ranges per position: position p of the current level covers the sorted entries
// [bounds[p], bounds[p+1]).
using Bounds = std::vector<int64_t>;

// A dense level: every parent position gets `dim` children, empty ones included.
inline Bounds expand_dense_level(const SortedEntries& entries, int level, int64_t dim, const Bounds& parent) {
  const int64_t parents = static_cast<int64_t>(parent.size()) - 1;
  int64_t positions = 0;
  if (!mul_fits(parents, dim, positions))
    throw std::runtime_error("dense level " + std::to_string(level) + ": position count overflows");
  Bounds child(static_cast<size_t>(positions) + 1);
  for (int64_t p = 0; p < parents; ++p) {
    int64_t e = parent[static_cast<size_t>(p)];
    const int64_t end = parent[static_cast<size_t>(p) + 1];
    for (int64_t c = 0; c < dim; ++c) {
      child[static_cast<size_t>(p * dim + c)] = e;
      while (e < end && entries.coord(e, level) == c) ++e;
    }
  }
  child.back() = entries.size();
  return child;
}

// A compressed level in pos/crd: the distinct coordinates under each parent when `unique`, or
// (compressed-nonunique) one position per entry, so a coordinate repeats once per entry below it
// (entries are sorted and merged over all levels); where a compressed-nonunique level starts a
// COO segment (its singletons end at `segment_end`) with levels below, one position per distinct
// coordinates of the segment.
template <class I>
Bounds build_compressed_level(const SortedEntries& entries, int level, int64_t dim, const Bounds& parent,
                              std::vector<I>& pos, std::vector<I>& crd, bool unique, int segment_end) {
  const bool grouped = unique || (segment_end > level && segment_end + 1 < entries.order);
  if (dim > 0) check_fits_index<I>(dim - 1, "coordinate");
  const int64_t parents = static_cast<int64_t>(parent.size()) - 1;
  pos.assign(1, I(0));
  pos.reserve(static_cast<size_t>(parents) + 1);
  Bounds child;
  for (int64_t p = 0; p < parents; ++p) {
    int64_t e = parent[static_cast<size_t>(p)];
    const int64_t end = parent[static_cast<size_t>(p) + 1];
    while (e < end) {
      const int64_t first = e;
      crd.push_back(static_cast<I>(entries.coord(e, level)));
      child.push_back(e);
      ++e;
      const auto same = [&] {
        if (!grouped) return false;
        for (int l = level; l <= segment_end; ++l)
          if (entries.coord(e, l) != entries.coord(first, l)) return false;
        return true;
      };
      while (e < end && same()) ++e;
    }
    check_fits_index<I>(static_cast<int64_t>(crd.size()), "position count");
    pos.push_back(static_cast<I>(crd.size()));
  }
  child.push_back(entries.size());
  return child;
}

// A singleton level: the coordinate of the entries under each parent position (below a
// compressed-nonunique or singleton level, every position holds one entry, or the entries of the
// levels below the COO segment, which share its coordinates).
template <class I>
Bounds build_singleton_level(const SortedEntries& entries, int level, int64_t dim, const Bounds& parent,
                             std::vector<I>& crd) {
  if (dim > 0) check_fits_index<I>(dim - 1, "coordinate");
  const int64_t parents = static_cast<int64_t>(parent.size()) - 1;
  crd.reserve(static_cast<size_t>(parents));
  for (int64_t p = 0; p < parents; ++p) {
    const int64_t e = parent[static_cast<size_t>(p)];
    if (parent[static_cast<size_t>(p) + 1] <= e)
      throw std::logic_error("singleton level " + std::to_string(level) + ": a parent position holds no entry");
    crd.push_back(static_cast<I>(entries.coord(e, level)));
  }
  return parent;
}

// A dense-variable level: parent p stores coordinates 0 .. (its largest coordinate), so
// missing coordinates inside that prefix become explicit zeros. pos only.
template <class I>
Bounds build_dense_variable_level(const SortedEntries& entries, int level, const Bounds& parent,
                                  std::vector<I>& pos) {
  const int64_t parents = static_cast<int64_t>(parent.size()) - 1;
  pos.assign(1, I(0));
  pos.reserve(static_cast<size_t>(parents) + 1);
  Bounds child;
  int64_t positions = 0;
  for (int64_t p = 0; p < parents; ++p) {
    int64_t e = parent[static_cast<size_t>(p)];
    const int64_t end = parent[static_cast<size_t>(p) + 1];
    const int64_t length = end > e ? entries.coord(end - 1, level) + 1 : 0;  // sorted: the last is the largest
    if (positions > kInt64Max - length)
      throw std::runtime_error("dense-variable level " + std::to_string(level) + ": position count overflows");
    positions += length;
    check_fits_index<I>(positions, "position count");
    for (int64_t c = 0; c < length; ++c) {
      child.push_back(e);
      while (e < end && entries.coord(e, level) == c) ++e;
    }
    pos.push_back(static_cast<I>(positions));
  }
  child.push_back(entries.size());
  return child;
}

// A sparse-fixed (ELL) level of width W: parent p owns positions p*W .. p*W+W-1, its
// distinct coordinates increasing, then padding (crd -1, no entries below). crd only.
template <class I>
Bounds build_sparse_fixed_level(const SortedEntries& entries, int level, int64_t dim, int64_t width,
                                const Bounds& parent, std::vector<I>& crd) {
  if (!std::is_signed_v<I>)
    throw std::runtime_error("sparse-fixed level " + std::to_string(level) +
                             ": the index type must be signed (padding is marked by -1)");
  if (dim > 0) check_fits_index<I>(dim - 1, "coordinate");
  const int64_t parents = static_cast<int64_t>(parent.size()) - 1;
  int64_t positions = 0;
  if (!mul_fits(parents, width, positions))
    throw std::runtime_error("sparse-fixed level " + std::to_string(level) + ": position count overflows");
  check_fits_index<I>(positions, "position count");
  crd.reserve(static_cast<size_t>(positions));
  Bounds child;
  child.reserve(static_cast<size_t>(positions) + 1);
  for (int64_t p = 0; p < parents; ++p) {
    const int64_t begin = parent[static_cast<size_t>(p)];
    const int64_t end = parent[static_cast<size_t>(p) + 1];
    int64_t distinct = 0;
    for (int64_t e = begin; e < end; ++e)
      if (e == begin || entries.coord(e, level) != entries.coord(e - 1, level)) ++distinct;
    if (distinct > width)
      throw std::runtime_error("sparse-fixed level " + std::to_string(level) + ": row " + std::to_string(p) +
                               " has " + std::to_string(distinct) + " entries but the ELL width is " +
                               std::to_string(width));
    int64_t e = begin;
    while (e < end) {
      const int64_t c = entries.coord(e, level);
      crd.push_back(static_cast<I>(c));
      child.push_back(e);
      while (e < end && entries.coord(e, level) == c) ++e;
    }
    for (int64_t k = distinct; k < width; ++k) {
      crd.push_back(static_cast<I>(-1));
      child.push_back(end);  // padding: an empty range
    }
  }
  child.push_back(entries.size());
  return child;
}

template <class I>
Bounds build_level(const SortedEntries& entries, int level, Level kind, int64_t dim, int64_t width, int segment_end,
                   const Bounds& parent, std::vector<I>& pos, std::vector<I>& crd) {
  switch (kind) {
    case Level::Dense: return expand_dense_level(entries, level, dim, parent);
    case Level::Compressed: return build_compressed_level(entries, level, dim, parent, pos, crd, true, level);
    case Level::CompressedNonUnique: return build_compressed_level(entries, level, dim, parent, pos, crd, false, segment_end);
    case Level::Singleton: return build_singleton_level(entries, level, dim, parent, crd);
    case Level::DenseVariable: return build_dense_variable_level(entries, level, parent, pos);
    case Level::SparseFixed: return build_sparse_fixed_level(entries, level, dim, width, parent, crd);
  }
  throw std::logic_error("unknown level kind");
}

// The trailing run of dense levels is laid out directly: value position =
// parent * (product of their dims) + their row-major coordinate. This avoids a per-position
// range array for dense data.
template <class V>
void fill_dense_suffix(const SortedEntries& entries, const std::vector<int64_t>& level_dims, int first,
                       const Bounds& parent, std::vector<V>& vals) {
  const int order = static_cast<int>(level_dims.size());
  const std::vector<int64_t> suffix(level_dims.begin() + first, level_dims.end());
  const int64_t block = checked_product(suffix, "dense storage");
  const int64_t parents = static_cast<int64_t>(parent.size()) - 1;
  int64_t total = 0;
  if (!mul_fits(parents, block, total) || static_cast<uint64_t>(total) > vals.max_size())
    throw std::runtime_error("dense storage needs too many values (the count overflows)");
  vals.assign(static_cast<size_t>(total), V(0));
  for (int64_t p = 0; p < parents; ++p)
    for (int64_t e = parent[static_cast<size_t>(p)]; e < parent[static_cast<size_t>(p) + 1]; ++e) {
      int64_t linear = 0;
      for (int l = first; l < order; ++l) linear = linear * level_dims[static_cast<size_t>(l)] + entries.coord(e, l);
      vals[static_cast<size_t>(p * block + linear)] = static_cast<V>(entries.vals[static_cast<size_t>(e)]);
    }
}

inline std::vector<int64_t> level_dims(const std::vector<int64_t>& dims, const std::vector<int>& mode_order) {
  std::vector<int64_t> out;
  for (int m : mode_order) out.push_back(dims[static_cast<size_t>(m)]);
  return out;
}

}  // namespace detail

// Packs a tensor into storage levels: entries sorted by level order, duplicates summed,
// dense levels below a compressed one filled with explicit zeros (likewise the gaps of a
// dense-variable prefix and the subtrees of sparse-fixed padding), values in position
// order. `widths`: per level, the width of a SparseFixed level (see Level).
template <class I, class V>
Packed<I, V> pack(const Coo& t, const std::vector<Level>& levels, const std::vector<int>& mode_order,
                  const std::vector<int64_t>& widths = {}) {
  static_assert(std::is_integral_v<I>, "the index type must be an integer");
  detail::check_format(t.dims, levels, mode_order, widths);
  detail::check_coo(t, "pack");
  const detail::SortedEntries entries = detail::sort_and_merge(t, mode_order);
  const std::vector<int64_t> dims = detail::level_dims(t.dims, mode_order);
  const int order = t.order();
  int dense_suffix = order;
  while (dense_suffix > 0 && levels[static_cast<size_t>(dense_suffix) - 1] == Level::Dense) --dense_suffix;

  Packed<I, V> p;
  p.dims = t.dims;
  p.pos.resize(static_cast<size_t>(order));
  p.crd.resize(static_cast<size_t>(order));
  detail::Bounds bounds = {0, entries.size()};  // the root: one position holding everything
  for (int l = 0; l < dense_suffix; ++l) {
    const size_t ul = static_cast<size_t>(l);
    int segment_end = l;  // a COO segment's last singleton
    while (segment_end + 1 < order && levels[static_cast<size_t>(segment_end) + 1] == Level::Singleton) ++segment_end;
    bounds = detail::build_level(entries, l, levels[ul], dims[ul], detail::level_width(widths, ul), segment_end, bounds,
                                 p.pos[ul], p.crd[ul]);
  }
  detail::fill_dense_suffix(entries, dims, dense_suffix, bounds, p.vals);
  return p;
}

namespace detail {

// How to step from a position of one level to its parent position and coordinate.
template <class I>
struct LevelWalk {
  Level kind = Level::Dense;
  int64_t dim = 0;
  int64_t width = 0;                    // sparse-fixed: W
  const std::vector<I>* pos = nullptr;  // dense-variable
  const std::vector<I>* crd = nullptr;  // compressed, compressed-nonunique, singleton, sparse-fixed
  std::vector<int64_t> parent;          // compressed (-nonunique), dense-variable: each position's parent
};

template <class I>
void check_pos_array(const std::vector<I>& pos, const std::vector<I>& crd, int64_t parents, int level, int64_t dim) {
  const std::string where = "unpack: level " + std::to_string(level) + ": ";
  if (static_cast<int64_t>(pos.size()) != parents + 1 || pos[0] != 0)
    throw std::runtime_error(where + "pos array has the wrong size or does not start at 0");
  for (size_t i = 1; i < pos.size(); ++i)
    if (pos[i] < pos[i - 1]) throw std::runtime_error(where + "pos array decreases");
  if (static_cast<int64_t>(pos.back()) != static_cast<int64_t>(crd.size()))
    throw std::runtime_error(where + "pos array does not end at the crd size");
  for (I c : crd)
    if (c < 0 || static_cast<int64_t>(c) >= dim) throw std::runtime_error(where + "crd value out of range");
}

// The parent position of each position, from a pos array.
template <class I>
std::vector<int64_t> parents_from_pos(const std::vector<I>& pos) {
  std::vector<int64_t> parent(pos.empty() ? 0 : static_cast<size_t>(pos.back()));
  for (size_t q = 0; q + 1 < pos.size(); ++q)
    for (int64_t k = pos[q]; k < static_cast<int64_t>(pos[q + 1]); ++k) parent[static_cast<size_t>(k)] = static_cast<int64_t>(q);
  return parent;
}

// Prepares the walk for one level; `positions` is the parent level's count on entry and
// this level's on exit.
template <class I, class V>
LevelWalk<I> level_walk(const Packed<I, V>& p, int level, Level kind, int64_t dim, int64_t width,
                        int64_t& positions) {
  const size_t ul = static_cast<size_t>(level);
  const std::string where = "unpack: level " + std::to_string(level) + " (" + level_name(kind) + "): ";
  if ((level_has_pos(kind) && ul >= p.pos.size()) || (level_has_crd(kind) && ul >= p.crd.size()))
    throw std::runtime_error(where + "missing pos/crd arrays");
  LevelWalk<I> walk;
  walk.kind = kind;
  walk.dim = dim;
  walk.width = width;
  switch (kind) {
    case Level::Dense:
      if (!mul_fits(positions, dim, positions)) throw std::runtime_error("unpack: position count overflows");
      break;
    case Level::Compressed:
    case Level::CompressedNonUnique: {
      check_pos_array(p.pos[ul], p.crd[ul], positions, level, dim);
      walk.crd = &p.crd[ul];
      walk.parent = parents_from_pos(p.pos[ul]);
      positions = static_cast<int64_t>(p.crd[ul].size());
      break;
    }
    case Level::Singleton: {
      const std::vector<I>& crd = p.crd[ul];
      if (static_cast<int64_t>(crd.size()) != positions)
        throw std::runtime_error(where + "crd array has " + std::to_string(crd.size()) + " entries for " +
                                 std::to_string(positions) + " parent positions");
      for (I c : crd)
        if (c < 0 || static_cast<int64_t>(c) >= dim) throw std::runtime_error(where + "crd value out of range");
      walk.crd = &crd;
      break;
    }
    case Level::DenseVariable: {
      const std::vector<I>& pos = p.pos[ul];
      if (static_cast<int64_t>(pos.size()) != positions + 1 || pos[0] != 0)
        throw std::runtime_error(where + "pos array has the wrong size or does not start at 0");
      for (size_t i = 1; i < pos.size(); ++i) {
        if (pos[i] < pos[i - 1]) throw std::runtime_error(where + "pos array decreases");
        if (static_cast<int64_t>(pos[i]) - static_cast<int64_t>(pos[i - 1]) > dim)
          throw std::runtime_error(where + "a stored prefix is longer than the dimension");
      }
      walk.pos = &pos;
      walk.parent = parents_from_pos(pos);
      positions = static_cast<int64_t>(pos.back());
      break;
    }
    case Level::SparseFixed: {
      const std::vector<I>& crd = p.crd[ul];
      if (width < 1) throw std::runtime_error(where + "needs a width of at least 1");
      if (!mul_fits(positions, width, positions)) throw std::runtime_error("unpack: position count overflows");
      if (static_cast<int64_t>(crd.size()) != positions)
        throw std::runtime_error(where + "crd array has " + std::to_string(crd.size()) + " entries, expected " +
                                 std::to_string(positions) + " (parent positions x width " + std::to_string(width) +
                                 ")");
      for (size_t k = 0; k < crd.size(); ++k) {
        const int64_t c = static_cast<int64_t>(crd[k]);
        if (c < -1 || c >= dim) throw std::runtime_error(where + "crd value out of range");
        if (c >= 0 && k % static_cast<size_t>(width) != 0 && crd[k - 1] < 0)
          throw std::runtime_error(where + "a coordinate follows padding (crd -1) under parent " +
                                   std::to_string(k / static_cast<size_t>(width)));
      }
      walk.crd = &crd;
      break;
    }
  }
  return walk;
}

}  // namespace detail

// Every stored position as an entry (explicit zeros included, sparse-fixed padding left
// out), coordinates in the tensor's own mode order, in storage order. `widths` as in pack.
template <class I, class V>
Coo unpack(const Packed<I, V>& p, const std::vector<Level>& levels, const std::vector<int>& mode_order,
           const std::vector<int64_t>& widths = {}) {
  detail::check_format(p.dims, levels, mode_order, widths);
  const int order = static_cast<int>(p.dims.size());
  std::vector<detail::LevelWalk<I>> walks;
  int64_t positions = 1;
  for (int l = 0; l < order; ++l) {
    const size_t ul = static_cast<size_t>(l);
    walks.push_back(detail::level_walk(p, l, levels[ul], p.dims[static_cast<size_t>(mode_order[ul])],
                                       detail::level_width(widths, ul), positions));
  }
  if (static_cast<int64_t>(p.vals.size()) != positions)
    throw std::runtime_error("unpack: " + std::to_string(p.vals.size()) + " values for " + std::to_string(positions) +
                             " positions");
  Coo out;
  out.dims = p.dims;
  out.coords.reserve(static_cast<size_t>(positions * order));
  out.vals.reserve(static_cast<size_t>(positions));
  std::vector<int64_t> c(static_cast<size_t>(order));
  for (int64_t q = 0; q < positions; ++q) {
    int64_t at = q;
    bool padding = false;
    for (int l = order - 1; l >= 0 && !padding; --l) {
      const detail::LevelWalk<I>& walk = walks[static_cast<size_t>(l)];
      int64_t& coord = c[static_cast<size_t>(mode_order[static_cast<size_t>(l)])];
      switch (walk.kind) {
        case Level::Dense:
          coord = at % walk.dim;
          at /= walk.dim;
          break;
        case Level::Compressed:
        case Level::CompressedNonUnique:
          coord = static_cast<int64_t>((*walk.crd)[static_cast<size_t>(at)]);
          at = walk.parent[static_cast<size_t>(at)];
          break;
        case Level::Singleton:
          coord = static_cast<int64_t>((*walk.crd)[static_cast<size_t>(at)]);  // same position as its parent
          break;
        case Level::DenseVariable: {
          const int64_t parent = walk.parent[static_cast<size_t>(at)];
          coord = at - static_cast<int64_t>((*walk.pos)[static_cast<size_t>(parent)]);
          at = parent;
          break;
        }
        case Level::SparseFixed:
          coord = static_cast<int64_t>((*walk.crd)[static_cast<size_t>(at)]);
          padding = coord < 0;  // padding and everything below it is not stored data
          at /= walk.width;
          break;
      }
    }
    if (!padding) out.add_entry(c.data(), static_cast<double>(p.vals[static_cast<size_t>(q)]));
  }
  return out;
}

namespace detail {

// find_position from level l on: positions lo .. hi-1 of level l-1 all match `c` so far
// (several only below a compressed-nonunique level, where a coordinate repeats).
template <class I, class V>
int64_t find_position_from(const Packed<I, V>& p, const std::vector<Level>& levels, const std::vector<int>& mode_order,
                           const std::vector<int64_t>& widths, const int64_t* c, size_t l, int64_t lo, int64_t hi) {
  for (; l < levels.size(); ++l) {
    if (lo >= hi) return -1;
    const int64_t dim = p.dims[static_cast<size_t>(mode_order[l])];
    const int64_t coord = c[mode_order[l]];
    if (coord < 0 || coord >= dim) return -1;
    const I key = static_cast<I>(coord);
    if (levels[l] == Level::Singleton) {
      // The candidates share all coordinates above, so their crd values are sorted.
      const auto range = std::equal_range(p.crd[l].begin() + static_cast<std::ptrdiff_t>(lo),
                                          p.crd[l].begin() + static_cast<std::ptrdiff_t>(hi), key);
      lo = range.first - p.crd[l].begin();
      hi = range.second - p.crd[l].begin();
      continue;
    }
    if (hi - lo > 1) {  // try the subtree of each candidate
      for (int64_t q = lo; q < hi; ++q) {
        const int64_t at = find_position_from(p, levels, mode_order, widths, c, l, q, q + 1);
        if (at >= 0) return at;
      }
      return -1;
    }
    const size_t at = static_cast<size_t>(lo);
    switch (levels[l]) {
      case Level::Dense:
        lo = lo * dim + coord;
        hi = lo + 1;
        break;
      case Level::Compressed:
      case Level::CompressedNonUnique: {
        const auto first = p.crd[l].begin() + static_cast<std::ptrdiff_t>(p.pos[l][at]);
        const auto last = p.crd[l].begin() + static_cast<std::ptrdiff_t>(p.pos[l][at + 1]);
        const auto range = std::equal_range(first, last, key);
        lo = range.first - p.crd[l].begin();
        hi = levels[l] == Level::Compressed ? std::min<int64_t>(lo + 1, range.second - p.crd[l].begin())
                                            : range.second - p.crd[l].begin();
        break;
      }
      case Level::Singleton: break;  // handled above
      case Level::DenseVariable: {
        const int64_t begin = static_cast<int64_t>(p.pos[l][at]);
        if (coord >= static_cast<int64_t>(p.pos[l][at + 1]) - begin) return -1;  // beyond the stored prefix
        lo = begin + coord;
        hi = lo + 1;
        break;
      }
      case Level::SparseFixed: {
        const int64_t width = level_width(widths, l);
        const int64_t first = lo * width;
        lo = hi = 0;  // not found unless set below
        for (int64_t k = first; k < first + width; ++k) {
          const I x = p.crd[l][static_cast<size_t>(k)];
          if (x < 0 || x > key) break;  // padding, or past it (increasing)
          if (x == key) {
            lo = k;
            hi = k + 1;
            break;
          }
        }
        break;
      }
    }
  }
  return lo < hi ? lo : -1;
}

// The value position of coordinates `c` (tensor mode order) in a packed structure, or -1
// when the structure does not store it (sparse-fixed padding is never a match). Needs crd
// sorted under each parent, as pack makes.
template <class I, class V>
int64_t find_position(const Packed<I, V>& p, const std::vector<Level>& levels, const std::vector<int>& mode_order,
                      const int64_t* c, const std::vector<int64_t>& widths = {}) {
  return find_position_from(p, levels, mode_order, widths, c, 0, 0, 1);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------
// The packed tensors a kernel runs on
// ---------------------------------------------------------------------------------------

// An output with shares_structure_with = s uses tensor s's pos/crd arrays and has as many
// values as s. (Inputs always have structure of their own.)
template <class Index, class Value>
class Run {
 public:
  Run(KernelInfo info, std::vector<int64_t> var_sizes)
      : info_(std::move(info)), sizes_(std::move(var_sizes)), tensors_(info_.tensors.size()) {
    if (sizes_.size() != info_.index_vars.size())
      throw std::runtime_error("Run: one size per index variable is needed");
  }

  int64_t dim(int v) const { return sizes_.at(static_cast<size_t>(v)); }
  Index* pos(int t, int l) { return level_array(t, l, true); }
  Index* crd(int t, int l) { return level_array(t, l, false); }
  Value* values(int t) { return packed(t).vals.data(); }
  // The width W of level l of tensor t's structure (a SparseFixed level), or 0.
  int64_t width(int t, int l) const {
    const TensorInfo& ti = info_.tensors.at(static_cast<size_t>(structure_owner(t)));
    return detail::level_width(ti.widths, static_cast<size_t>(l));
  }

  Packed<Index, Value>& packed(int t) { return tensors_.at(static_cast<size_t>(t)); }
  const Packed<Index, Value>& packed(int t) const { return tensors_.at(static_cast<size_t>(t)); }
  const KernelInfo& info() const { return info_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }

  // The tensor whose pos/crd arrays tensor t uses.
  int structure_owner(int t) const {
    int owner = t;
    for (size_t hops = 0; hops <= info_.tensors.size(); ++hops) {
      const TensorInfo& ti = info_.tensors.at(static_cast<size_t>(owner));
      if (!ti.is_output || ti.shares_structure_with < 0) return owner;
      owner = ti.shares_structure_with;
    }
    throw std::runtime_error("shares_structure_with forms a cycle at tensor " +
                             info_.tensors.at(static_cast<size_t>(t)).name);
  }

 private:
  Index* level_array(int t, int l, bool want_pos) {
    const int owner = structure_owner(t);
    const TensorInfo& ti = info_.tensors.at(static_cast<size_t>(owner));
    const Level kind = ti.levels.at(static_cast<size_t>(l));
    // An assembled ELL output's level also has positions: its rows' counts (the width check).
    // SELL's slot level has them too: each slice's first slot row.
    const bool counted_ell = want_pos && (ti.is_output || ti.sliced) && kind == Level::SparseFixed;
    if (!(want_pos ? level_has_pos(kind) || counted_ell : level_has_crd(kind))) return nullptr;
    std::vector<std::vector<Index>>& arrays = want_pos ? packed(owner).pos : packed(owner).crd;
    if (static_cast<size_t>(l) >= arrays.size()) throw std::runtime_error("tensor " + ti.name + " is not packed yet");
    return arrays[static_cast<size_t>(l)].data();
  }

  KernelInfo info_;
  std::vector<int64_t> sizes_;
  std::vector<Packed<Index, Value>> tensors_;
};

// The positions of the first `levels` levels of an output the kernel assembles (dense and
// compressed levels, possibly ending in a COO segment or a ragged level, the pos arrays above
// filled in). A singleton level shares its parent's positions.
template <class Index, class Value>
int64_t assembled_positions(const TensorInfo& ti, const Packed<Index, Value>& p, size_t levels) {
  int64_t n = 1;
  for (size_t l = 0; l < levels; ++l) {
    if (ti.levels[l] == Level::Singleton) continue;
    if (ti.levels[l] == Level::SparseFixed) {
      n *= ti.widths.at(l);  // an assembled ELL level: W slots per parent
      continue;
    }
    if (ti.levels[l] != Level::Dense) {
      n = static_cast<int64_t>(p.pos.at(l).back());
      continue;
    }
    const int64_t dim = p.dims.at(static_cast<size_t>(ti.mode_order[l]));
    const int64_t block = ti.blocks.empty() ? 0 : ti.blocks[l];
    // A blocked mode's first level counts blocks (the last one padded), its second the block.
    bool first = true;
    for (size_t above = 0; above < l; ++above) first = first && ti.mode_order[above] != ti.mode_order[l];
    n *= block == 0 ? dim : first ? (dim + block - 1) / block : block;
  }
  return n;
}

// Before the assemble phase of level l of output t: its pos array, one count per parent
// position (and a leading 0), zeroed.
template <class Index, class Value>
void size_assembled_level(Run<Index, Value>& run, int t, int l) {
  const TensorInfo& ti = run.info().tensors.at(static_cast<size_t>(t));
  Packed<Index, Value>& p = run.packed(t);
  const int64_t parents = assembled_positions(ti, p, static_cast<size_t>(l));
  if (parents < 0) throw std::runtime_error("output " + ti.name + ": the assemble phase produced a negative count");
  p.pos.at(static_cast<size_t>(l)).assign(static_cast<size_t>(parents + 1), Index(0));
}

// How a generated driver plugs its kernel into the runtime.
template <class Index, class Value>
struct Hooks {
  std::function<void(Run<Index, Value>&)> invoke;    // runs the kernel
  std::function<void(Run<Index, Value>&)> assemble;  // empty unless the kernel builds a sparse output
  std::function<void(Run<Index, Value>&)> prepare;   // once, after packing: a decomposition's inspector
  // By tensor id, the kernel's own conversion routines; a missing or empty entry uses the runtime's.
  std::vector<std::function<void(const Coo&, Packed<Index, Value>&)>> pack;
  std::vector<std::function<Coo(const Run<Index, Value>&)>> unpack;
  // Index variables the kernel is specialized for, with their sizes ("sizes" in the config).
  std::vector<std::pair<std::string, int64_t>> fixed_sizes;
};

// A kernel's non-zero status (a fixed size that differs: the driver checks them first, so this
// is a bug).
[[noreturn]] inline void fail_status(const char* kernel, int status) {
  throw std::runtime_error(std::string(kernel) + " returned status " + std::to_string(status));
}

// ---------------------------------------------------------------------------------------
// The driver: command line, inputs, timing, outputs
// ---------------------------------------------------------------------------------------

namespace detail {

struct Options {
  std::vector<std::pair<std::string, std::string>> inputs, outputs, save_inputs;
  std::vector<std::pair<std::string, int64_t>> dims;
  int repeat = 1;
  int warmup = -1;  // -1: 1 if repeat > 1, else 0
  uint64_t seed = 1;
  double density = 0.01;
  int threads = 0;
  bool quiet = false;
  bool help = false;
};

inline std::string usage(const KernelInfo& info) {
  std::vector<std::string> names;
  for (const TensorInfo& t : info.tensors) names.push_back(t.name + (t.is_output ? " (output)" : ""));
  return "usage: " + info.name +
         " [options]\n"
         "Runs and times kernel " +
         info.name + " on tensors " + join(names) +
         ".\n"
         "  --input NAME=FILE|random   an input tensor (.mtx or .tns file, or random); repeatable\n"
         "  --output NAME=FILE         write an output tensor after the runs; repeatable\n"
         "  --repeat N                 timed runs (default 1)\n"
         "  --warmup N                 untimed runs first (default 1 if --repeat > 1, else 0)\n"
         "  --seed S                   seed of random tensors; tensor t uses S + t (default 1)\n"
         "  --dim VAR=N                size of an index variable; repeatable\n"
         "  --density D                fraction of nonzeros of random sparse tensors (default 0.01)\n"
         "                             (rows beyond a sparse-fixed (ELL) width are cut to it)\n"
         "  --threads N                OpenMP threads\n"
         "  --save-input NAME=FILE     write the input tensor actually used (e.g. a random one)\n"
         "  --quiet                    do not print the timing line\n";
}

inline std::pair<std::string, std::string> split_assignment(const std::string& flag, const std::string& value,
                                                            const char* shape) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
    throw std::runtime_error("--" + flag + " expects " + shape + ", got '" + value + "'");
  return {value.substr(0, eq), value.substr(eq + 1)};
}

inline int64_t parse_int_option(const std::string& flag, const std::string& value, int64_t min, int64_t max) {
  int64_t n = 0;
  if (!parse_integer(std::string_view(value), n) || n < min || n > max)
    throw std::runtime_error("--" + flag + " expects an integer from " + std::to_string(min) + " to " +
                             std::to_string(max) + ", got '" + value + "'");
  return n;
}

inline void apply_option(Options& o, const std::string& flag, const std::string& value) {
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (flag == "input") {
    o.inputs.push_back(split_assignment(flag, value, "NAME=FILE or NAME=random"));
  } else if (flag == "output") {
    o.outputs.push_back(split_assignment(flag, value, "NAME=FILE"));
  } else if (flag == "save-input") {
    o.save_inputs.push_back(split_assignment(flag, value, "NAME=FILE"));
  } else if (flag == "dim") {
    const auto [var, size] = split_assignment(flag, value, "VAR=N");
    o.dims.emplace_back(var, parse_int_option(flag, size, 0, kInt64Max));
  } else if (flag == "repeat") {
    o.repeat = static_cast<int>(parse_int_option(flag, value, 1, kIntMax));
  } else if (flag == "warmup") {
    o.warmup = static_cast<int>(parse_int_option(flag, value, 0, kIntMax));
  } else if (flag == "threads") {
    o.threads = static_cast<int>(parse_int_option(flag, value, 0, kIntMax));
  } else if (flag == "seed") {
    if (!parse_integer(std::string_view(value), o.seed))
      throw std::runtime_error("--seed expects a non-negative integer, got '" + value + "'");
  } else if (flag == "density") {
    if (!parse_real(value, o.density) || !(o.density >= 0.0 && o.density <= 1.0))
      throw std::runtime_error("--density expects a number from 0 to 1, got '" + value + "'");
  } else {
    throw std::runtime_error("unknown option --" + flag + " (see --help)");
  }
}

inline bool takes_value(const std::string& flag) {
  static const char* const kFlags[] = {"input", "output", "save-input", "dim", "repeat",
                                       "warmup", "threads", "seed", "density"};
  return std::find(std::begin(kFlags), std::end(kFlags), flag) != std::end(kFlags);
}

inline Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      continue;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0)
      throw std::runtime_error("unexpected argument '" + arg + "' (see --help)");
    std::string flag = arg.substr(2), value;
    const size_t eq = flag.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (flag == "quiet") {
      if (inline_value) throw std::runtime_error("--quiet takes no value");
      o.quiet = true;
      continue;
    }
    if (!takes_value(flag)) throw std::runtime_error("unknown option --" + flag + " (see --help)");
    if (!inline_value) {
      if (i + 1 >= argc) throw std::runtime_error("--" + flag + " needs a value");
      value = argv[++i];
    }
    apply_option(o, flag, value);
  }
  return o;
}

// Catches generator mistakes early, with a message instead of a crash.
inline void validate_kernel_info(const KernelInfo& info) {
  const int vars = static_cast<int>(info.index_vars.size());
  const int tensors = static_cast<int>(info.tensors.size());
  for (const TensorInfo& t : info.tensors) {
    const std::string bad = "kernel description: tensor " + t.name + ": ";
    const bool blocked = !t.blocks.empty();
    if ((blocked ? t.levels.size() < t.modes.size() || t.blocks.size() != t.levels.size()
                 : t.levels.size() != t.modes.size()) ||
        t.mode_order.size() != t.levels.size())
      throw std::runtime_error(bad + "modes, levels and mode_order differ in length");
    for (int v : t.modes)
      if (v < 0 || v >= vars) throw std::runtime_error(bad + "index variable id out of range");
    std::vector<int> seen(t.modes.size(), 0);
    for (size_t l = 0; l < t.mode_order.size(); ++l) {
      const int m = t.mode_order[l];
      // A blocked mode is stored twice (floordiv, then mod), every other mode once.
      const int times = blocked && t.blocks[l] > 0 ? 2 : 1;
      if (m < 0 || static_cast<size_t>(m) >= t.modes.size() || ++seen[static_cast<size_t>(m)] > times)
        throw std::runtime_error(bad + "mode_order is not a permutation");
    }
    for (int count : seen)
      if (count == 0) throw std::runtime_error(bad + "mode_order is not a permutation");
    if (t.shares_structure_with >= tensors) throw std::runtime_error(bad + "shares_structure_with out of range");
    if (t.sliced && (t.levels.size() != 2 || t.levels[1] != Level::SparseFixed))
      throw std::runtime_error(bad + "a sliced (sell) tensor has two levels, the second sparse-fixed");
    if (t.sliced) continue;  // (its slot level has no width: each slice has its own)
    try {
      check_levels(t.levels, t.widths);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(bad + e.what());
    }
  }
}

inline int find_tensor(const KernelInfo& info, const std::string& name, const char* flag) {
  for (size_t t = 0; t < info.tensors.size(); ++t)
    if (info.tensors[t].name == name) return static_cast<int>(t);
  std::vector<std::string> names;
  for (const TensorInfo& t : info.tensors) names.push_back(t.name);
  throw std::runtime_error("unknown tensor " + name + " in " + flag + "; the kernel's tensors are: " + join(names));
}

inline int find_index_var(const KernelInfo& info, const std::string& name) {
  for (size_t v = 0; v < info.index_vars.size(); ++v)
    if (info.index_vars[v] == name) return static_cast<int>(v);
  throw std::runtime_error("unknown index variable " + name + " in --dim; the kernel's index variables are: " +
                           join(info.index_vars));
}

// Where each tensor comes from and goes to.
struct Plan {
  enum class Source { None, File, Random };
  std::vector<Source> source;
  std::vector<std::string> input_path, output_path, save_path;
};

inline Plan make_plan(const KernelInfo& info, const Options& o) {
  const size_t n = info.tensors.size();
  Plan plan{std::vector<Plan::Source>(n, Plan::Source::None), std::vector<std::string>(n),
            std::vector<std::string>(n), std::vector<std::string>(n)};
  // `--input C` (or --save-input) of a `+=` kernel that assembles C anew gives C's previous value.
  auto input_tensor = [&info](const std::string& name, const char* flag) {
    const int t = find_tensor(info, name, flag);
    return static_cast<size_t>(info.tensors[static_cast<size_t>(t)].is_output && info.previous_output >= 0
                                   ? info.previous_output
                                   : t);
  };
  for (const auto& [name, value] : o.inputs) {
    const size_t t = input_tensor(name, "--input");
    if (plan.source[t] != Plan::Source::None) throw std::runtime_error("--input gives " + name + " twice");
    if (info.tensors[t].is_output && !info.accumulate)
      throw std::runtime_error("--input " + name + ": " + name +
                               " is the output of a kernel that overwrites it (=); "
                               "only += kernels take an initial output");
    plan.source[t] = value == "random" ? Plan::Source::Random : Plan::Source::File;
    plan.input_path[t] = value;
  }
  for (size_t t = 0; t < n; ++t)
    if (!info.tensors[t].is_output && plan.source[t] == Plan::Source::None && static_cast<int>(t) != info.previous_output)
      throw std::runtime_error("missing input " + info.tensors[t].name + " (give --input " + info.tensors[t].name +
                               "=FILE or --input " + info.tensors[t].name + "=random)");
  for (const auto& [name, path] : o.outputs) {
    const size_t t = static_cast<size_t>(find_tensor(info, name, "--output"));
    if (!info.tensors[t].is_output) throw std::runtime_error("--output " + name + ": " + name + " is not an output");
    plan.output_path[t] = path;
  }
  for (const auto& [name, path] : o.save_inputs) {
    const size_t t = input_tensor(name, "--save-input");
    if (plan.source[t] == Plan::Source::None)
      throw std::runtime_error("--save-input " + name + ": " + name + " has no --input");
    plan.save_path[t] = path;
  }
  return plan;
}

// The size of each index variable. Exact sizes come from .mtx files and --dim; a .tns
// file only gives a lower bound (its largest coordinates).
class IndexSizes {
 public:
  explicit IndexSizes(const KernelInfo& info)
      : info_(info), exact_(info.index_vars.size(), -1), lower_(info.index_vars.size(), -1),
        exact_who_(info.index_vars.size()), lower_who_(info.index_vars.size()) {}

  void fix(int v, int64_t n, const std::string& who) {
    const size_t u = static_cast<size_t>(v);
    if (exact_[u] >= 0 && exact_[u] != n) conflict(v, exact_who_[u], who);
    if (lower_[u] > n) conflict(v, lower_who_[u], who);
    exact_[u] = n;
    exact_who_[u] = who;
  }
  void at_least(int v, int64_t n, const std::string& who) {
    const size_t u = static_cast<size_t>(v);
    if (exact_[u] >= 0 && n > exact_[u]) conflict(v, exact_who_[u], who);
    if (n > lower_[u]) {
      lower_[u] = n;
      lower_who_[u] = who;
    }
  }
  bool known(int v) const { return exact_[static_cast<size_t>(v)] >= 0 || lower_[static_cast<size_t>(v)] >= 0; }
  int64_t get(int v) const {
    const size_t u = static_cast<size_t>(v);
    return exact_[u] >= 0 ? exact_[u] : lower_[u];
  }
  std::vector<int64_t> all() const {
    std::vector<int64_t> out;
    for (size_t v = 0; v < exact_.size(); ++v) out.push_back(get(static_cast<int>(v)));
    return out;
  }

 private:
  [[noreturn]] void conflict(int v, const std::string& first, const std::string& second) const {
    throw std::runtime_error("size of index " + info_.index_vars[static_cast<size_t>(v)] + ": " + first + " but " +
                             second);
  }

  const KernelInfo& info_;
  std::vector<int64_t> exact_, lower_;
  std::vector<std::string> exact_who_, lower_who_;
};

// A .mtx file always holds a matrix; let an n x 1 or 1 x n one feed a vector and a 1 x 1
// one a scalar.
inline Coo fit_order(Coo c, int order, const std::string& tensor, const std::string& path) {
  if (c.order() == order) return c;
  const bool matrix = c.order() == 2;
  const bool vector = matrix && (c.dims[0] == 1 || c.dims[1] == 1);
  const bool scalar = matrix && c.dims[0] == 1 && c.dims[1] == 1;
  if ((order == 1 && vector) || (order == 0 && scalar)) {
    const int keep = c.dims[1] == 1 ? 0 : 1;
    Coo out;
    if (order == 1) out.dims = {c.dims[static_cast<size_t>(keep)]};
    for (int64_t e = 0; e < c.nnz(); ++e) {
      const int64_t kept = c.coord(e, keep);
      out.add_entry(&kept, c.vals[static_cast<size_t>(e)]);
    }
    return out;
  }
  throw std::runtime_error(tensor + ": " + path + " holds an order-" + std::to_string(c.order()) + " tensor but " +
                           tensor + " has " + std::to_string(order) + " modes");
}

inline void load_file_inputs(const KernelInfo& info, const Plan& plan, std::vector<Coo>& coos, IndexSizes& sizes) {
  for (size_t t = 0; t < info.tensors.size(); ++t) {
    if (plan.source[t] != Plan::Source::File) continue;
    const TensorInfo& ti = info.tensors[t];
    const std::string& path = plan.input_path[t];
    coos[t] = fit_order(read_tensor(path), static_cast<int>(ti.modes.size()), ti.name, path);
    const bool exact = extension_of(path) == ".mtx";
    for (size_t m = 0; m < ti.modes.size(); ++m) {
      const int64_t d = coos[t].dims[m];
      const std::string mode = " (mode " + std::to_string(m + 1) + ")";
      if (exact) sizes.fix(ti.modes[m], d, ti.name + " has " + std::to_string(d) + mode);
      else sizes.at_least(ti.modes[m], d, ti.name + " has coordinates up to " + std::to_string(d) + mode);
    }
  }
}

inline void default_unknown_sizes(const KernelInfo& info, const TensorInfo& t, IndexSizes& sizes) {
  constexpr int64_t kDefaultSize = 32;
  for (int v : t.modes) {
    if (sizes.known(v)) continue;
    const std::string& name = info.index_vars[static_cast<size_t>(v)];
    std::fprintf(stderr, "note: size of index %s is not fixed by any input; using %lld (set it with --dim %s=N)\n",
                 name.c_str(), static_cast<long long>(kDefaultSize), name.c_str());
    sizes.fix(v, kDefaultSize, "the default is " + std::to_string(kDefaultSize));
  }
}

inline std::vector<int64_t> tensor_dims(const TensorInfo& t, const std::vector<int64_t>& var_sizes) {
  std::vector<int64_t> dims;
  for (int v : t.modes) dims.push_back(var_sizes[static_cast<size_t>(v)]);
  return dims;
}

// For each mode of tensor `to`, the mode of tensor `from` with the same index variable.
inline std::vector<int> matching_modes(const TensorInfo& from, const TensorInfo& to) {
  std::vector<int> out;
  for (int v : to.modes) {
    const auto it = std::find(from.modes.begin(), from.modes.end(), v);
    if (it == from.modes.end())
      throw std::runtime_error(to.name + " shares the structure of " + from.name + " but has other index variables");
    out.push_back(static_cast<int>(it - from.modes.begin()));
  }
  return out;
}

// The entries of t that fit the widths of its sparse-fixed levels: under each parent
// position (the coordinates of the levels above), the W smallest distinct coordinates of
// such a level are kept and the entries with larger ones dropped, outer levels first.
// Below a compressed-nonunique level every position holds one entry, so nothing is dropped.
inline Coo fit_widths(const Coo& t, const std::vector<Level>& levels, const std::vector<int>& mode_order,
                      const std::vector<int64_t>& widths) {
  if (std::find(levels.begin(), levels.end(), Level::SparseFixed) == levels.end()) return t;
  check_format(t.dims, levels, mode_order, widths);
  check_coo(t, "random tensor");
  SortedEntries entries = sort_and_merge(t, mode_order);
  const int order = t.order();
  const size_t L = static_cast<size_t>(order);
  for (int l = 0; l < order; ++l) {
    if (levels[static_cast<size_t>(l)] == Level::CompressedNonUnique) break;
    if (levels[static_cast<size_t>(l)] != Level::SparseFixed) continue;
    const int64_t width = level_width(widths, static_cast<size_t>(l));
    SortedEntries kept;
    kept.order = order;
    int64_t distinct = 0;  // coordinates of level l seen under the current parent
    for (int64_t e = 0; e < entries.size(); ++e) {
      const auto key = entries.coords.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(e) * L);
      const bool same_parent = e > 0 && std::equal(key, key + l, key - static_cast<std::ptrdiff_t>(L));
      if (!same_parent) distinct = 0;
      if (!same_parent || entries.coord(e, l) != entries.coord(e - 1, l)) ++distinct;
      if (distinct > width) continue;
      kept.coords.insert(kept.coords.end(), key, key + order);
      kept.vals.push_back(entries.vals[static_cast<size_t>(e)]);
    }
    entries = std::move(kept);
  }
  Coo out;
  out.dims = t.dims;
  out.coords.resize(entries.coords.size());
  out.vals = entries.vals;
  for (int64_t e = 0; e < entries.size(); ++e)
    for (size_t l = 0; l < L; ++l)
      out.coords[static_cast<size_t>(e) * L + static_cast<size_t>(mode_order[l])] = entries.coord(e, static_cast<int>(l));
  return out;
}

// The runtime's own unpack and position search do not know block maps: a CPU driver packs and
// unpacks blocked tensors (BSR) with the kernel's routines, and refuses what needs these.
inline void require_unblocked(const TensorInfo& t, const std::string& what) {
  if (!t.blocks.empty())
    throw std::runtime_error(what + ": tensor " + t.name + " has a blocked format, which spgen run supports only "
                             "for inputs and for outputs written with --output");
}

// Tensor t's current values as entries, through the shared structure if it has one.
template <class Index, class Value>
Coo unpack_tensor(const Run<Index, Value>& run, int t) {
  const TensorInfo& ti = run.info().tensors[static_cast<size_t>(t)];
  const int owner = run.structure_owner(t);
  require_unblocked(run.info().tensors[static_cast<size_t>(owner)], "reading " + ti.name + " back");
  if (owner == t) return unpack(run.packed(t), ti.levels, ti.mode_order, ti.widths);
  const TensorInfo& oi = run.info().tensors[static_cast<size_t>(owner)];
  Packed<Index, Value> view = run.packed(owner);  // copies the structure once, for writing
  view.vals = run.packed(t).vals;
  const Coo in_owner_modes = unpack(view, oi.levels, oi.mode_order, oi.widths);
  const std::vector<int> from = matching_modes(oi, ti);
  Coo out;
  out.dims = tensor_dims(ti, run.sizes());
  std::vector<int64_t> c(from.size());
  for (int64_t e = 0; e < in_owner_modes.nnz(); ++e) {
    for (size_t m = 0; m < from.size(); ++m) c[m] = in_owner_modes.coord(e, from[m]);
    out.add_entry(c.data(), in_owner_modes.vals[static_cast<size_t>(e)]);
  }
  return out;
}

// Initial values of an output with a shared structure: entries placed at the owner's
// positions. A nonzero outside the structure is an error.
// Adds each entry of `initial` (t's values) at the position of the owner's structure that
// `locate` finds for its coordinates, taken in the order `modes` picks them from t's (-1: none);
// a nonzero where there is none is an error.
template <class Value, class Locate>
void add_on_structure(const TensorInfo& ti, const TensorInfo& oi, const Coo& initial, const std::vector<int>& modes,
                      std::vector<Value>& vals, Locate locate) {
  std::vector<int64_t> c(modes.size());
  for (int64_t e = 0; e < initial.nnz(); ++e) {
    for (size_t m = 0; m < modes.size(); ++m) c[m] = initial.coord(e, modes[m]);
    const double v = initial.vals[static_cast<size_t>(e)];
    const int64_t at = locate(c);
    if (at >= 0) vals[static_cast<size_t>(at)] += static_cast<Value>(v);
    else if (v != 0.0)
      throw std::runtime_error("initial " + ti.name + " has a nonzero outside the structure of " + oi.name);
  }
}

template <class Index, class Value>
std::vector<Value> values_on_structure(const Run<Index, Value>& run, int t, int owner, const Coo& initial) {
  const TensorInfo& ti = run.info().tensors[static_cast<size_t>(t)];
  const TensorInfo& oi = run.info().tensors[static_cast<size_t>(owner)];
  require_unblocked(oi, "initial values of " + ti.name);
  const Packed<Index, Value>& structure = run.packed(owner);
  std::vector<Value> vals(structure.vals.size(), Value(0));
  add_on_structure(ti, oi, initial, matching_modes(ti, oi), vals, [&](const std::vector<int64_t>& c) {
    return find_position(structure, oi.levels, oi.mode_order, c.data(), oi.widths);
  });
  return vals;
}

// values_on_structure for an owner whose positions the runtime cannot search (a blocked format):
// `stored` is t unpacked by the kernel's own routine with each value set to its position + 1,
// so an entry names its position (the padding of blocks past the dimensions is left out).
template <class Index, class Value>
std::vector<Value> values_on_unpacked_structure(const Run<Index, Value>& run, int t, int owner, const Coo& stored,
                                                const Coo& initial) {
  const TensorInfo& ti = run.info().tensors[static_cast<size_t>(t)];
  const TensorInfo& oi = run.info().tensors[static_cast<size_t>(owner)];
  std::vector<Value> vals(run.packed(owner).vals.size(), Value(0));
  std::map<std::vector<int64_t>, int64_t> position;  // by t's coordinates
  for (int64_t e = 0; e < stored.nnz(); ++e) {
    std::vector<int64_t> c(static_cast<size_t>(stored.order()));
    for (int m = 0; m < stored.order(); ++m) c[static_cast<size_t>(m)] = stored.coord(e, m);
    position.emplace(std::move(c), static_cast<int64_t>(stored.vals[static_cast<size_t>(e)]) - 1);
  }
  std::vector<int> modes(static_cast<size_t>(initial.order()));
  std::iota(modes.begin(), modes.end(), 0);
  add_on_structure(ti, oi, initial, modes, vals, [&](const std::vector<int64_t>& c) {
    const auto at = position.find(c);
    return at == position.end() ? int64_t{-1} : at->second;
  });
  return vals;
}

struct Timings {
  double median = 0, min = 0, max = 0;
  int runs = 0;
};

inline Timings summarize(std::vector<double> ms) {
  Timings t;
  t.runs = static_cast<int>(ms.size());
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  t.median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  t.min = ms.front();
  t.max = ms.back();
  return t;
}

inline void set_threads(int threads) {
#ifdef _OPENMP
  if (threads > 0) omp_set_num_threads(threads);
#else
  if (threads > 0) std::fprintf(stderr, "note: --threads is ignored: built without OpenMP\n");
#endif
}

template <class Index, class Value>
class Driver {
 public:
  Driver(const KernelInfo& info, const Options& opts)
      : info_(info), opts_(opts), plan_(make_plan(info, opts)), coos_(info.tensors.size()) {}

  // `hooks.assemble`, when set, builds the structure of an output the kernel assembles itself
  // (dense and compressed levels): it sizes and fills each compressed level's pos array, top
  // down, after which the crd arrays and values are sized.
  int execute(const Hooks<Index, Value>& hooks) {
    hooks_ = &hooks;
    const bool has_assemble = static_cast<bool>(hooks.assemble);
    set_threads(opts_.threads);
    IndexSizes sizes(info_);
    for (const auto& [var, n] : hooks.fixed_sizes)
      sizes.fix(find_index_var(info_, var), n, "the kernel is specialized for " + var + " = " + std::to_string(n));
    load_file_inputs(info_, plan_, coos_, sizes);
    for (const auto& [var, n] : opts_.dims) sizes.fix(find_index_var(info_, var), n, "--dim sets " + std::to_string(n));
    for (size_t t = 0; t < info_.tensors.size(); ++t)
      if (plan_.source[t] == Plan::Source::Random) default_unknown_sizes(info_, info_.tensors[t], sizes);
    for (const TensorInfo& t : info_.tensors)
      if (t.is_output) default_unknown_sizes(info_, t, sizes);

    Run<Index, Value> run(info_, sizes.all());
    prepare_inputs(run);
    if (hooks.prepare) {
      const auto start = std::chrono::steady_clock::now();
      hooks.prepare(run);
      inspect_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    std::vector<std::vector<Value>> initial = prepare_outputs(run, has_assemble);
    if (has_assemble) size_assembled_outputs(run, hooks.assemble);
    auto both = [&](Run<Index, Value>& r) {
      if (has_assemble) hooks.assemble(r);
      hooks.invoke(r);
    };
    const Timings timings = time_runs(run, initial, both);
    if (!opts_.quiet) {
      std::printf("time_ms median=%.4f min=%.4f max=%.4f runs=%d\n", timings.median, timings.min, timings.max,
                  timings.runs);
      for (const auto& [name, ms] : pack_ms_) std::printf("pack_ms %s=%.4f\n", name.c_str(), ms);
      if (inspect_ms_ >= 0) std::printf("inspect_ms=%.4f\n", inspect_ms_);
      std::fflush(stdout);
    }
    write_outputs(run);
    return 0;
  }

 private:
  const TensorInfo& tensor(size_t t) const { return info_.tensors[t]; }

  // The entries of an input tensor: from its file (grown to the bound sizes) or random.
  Coo make_entries(const Run<Index, Value>& run, size_t t) {
    const TensorInfo& ti = tensor(t);
    const std::vector<int64_t> dims = tensor_dims(ti, run.sizes());
    const uint64_t seed = opts_.seed + t;
    Coo c = plan_.source[t] == Plan::Source::File ? std::move(coos_[t])
            : plan_.source[t] == Plan::Source::None ? Coo{dims, {}, {}}  // a `+=` output's absent previous value
            : all_dense(ti.levels)                ? random_dense(dims, seed)
                                                  : random_sparse(dims, opts_.density, seed);
    c.dims = dims;
    // A random tensor may put more entries under a parent than a sparse-fixed (ELL) level's
    // width holds: keep the first W coordinates of each parent and drop the rest, so any
    // --density works (a file that overflows the width is an error from pack instead).
    // (SELL's slices take any row length.)
    if (plan_.source[t] == Plan::Source::Random && !ti.sliced) c = fit_widths(c, ti.levels, ti.mode_order, ti.widths);
    // Round to Value now, so a saved input holds exactly what the kernel sees.
    for (double& v : c.vals) v = static_cast<double>(static_cast<Value>(v));
    return c;
  }

  // Enough digits to read a Value back unchanged.
  static int precision() {
    return std::is_floating_point_v<Value> ? std::numeric_limits<Value>::max_digits10 : 17;
  }

  void prepare_inputs(Run<Index, Value>& run) {
    for (size_t t = 0; t < info_.tensors.size(); ++t) {
      const TensorInfo& ti = tensor(t);
      if (ti.is_output) continue;
      const Coo entries = make_entries(run, t);
      if (!plan_.save_path[t].empty()) write_tensor(plan_.save_path[t], entries, all_dense(ti.levels), precision());
      Packed<Index, Value>& packed = run.packed(static_cast<int>(t));
      const auto start = std::chrono::steady_clock::now();
      if (t < hooks_->pack.size() && hooks_->pack[t]) hooks_->pack[t](entries, packed);
      else packed = pack<Index, Value>(entries, ti.levels, ti.mode_order, ti.widths);
      // What storing it in its format costs, once (`spgen tune` weighs a format against it).
      if (!all_dense(ti.levels))
        pack_ms_.emplace_back(ti.name, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
  }

  // Dense, compressed, ragged (dense-variable) and ELL (sparse-fixed) levels, possibly ending in
  // a COO segment (a compressed-nonunique level, then singletons), not all dense: the shapes the
  // kernels can assemble (is_assemblable in passes/build_sparse_ir.cpp).
  static bool is_assembled_shape(const std::vector<Level>& levels) {
    bool in_coo_segment = false, below_coo_segment = false;
    for (size_t l = 0; l < levels.size(); ++l) {
      if (in_coo_segment && levels[l] != Level::Singleton) in_coo_segment = false, below_coo_segment = true;
      if (levels[l] == Level::CompressedNonUnique && !in_coo_segment && !below_coo_segment) in_coo_segment = true;
      else if (below_coo_segment ? levels[l] != Level::Dense && levels[l] != Level::Compressed
               : in_coo_segment  ? levels[l] != Level::Singleton
                                 : levels[l] != Level::Dense && levels[l] != Level::Compressed &&
                                       levels[l] != Level::DenseVariable && levels[l] != Level::SparseFixed)
        return false;
    }
    return !all_dense(levels);
  }

  // A listed output's keys are its coordinates flattened in storage order (i * dim_j + j), in
  // int64: the product of its dimensions must stay below 2^63. A blocked output's keys flatten
  // its level coordinates (i / r, i % r), whose extents (block counts, blocks) multiply too.
  static void require_listable(const TensorInfo& ti, const std::vector<int64_t>& dims) {
    int64_t product = 1;
    std::string shape;
    bool fits = true;
    for (int64_t d : dims) {
      shape += (shape.empty() ? "" : " x ") + std::to_string(d);
      fits = fits && detail::mul_fits(product, d, product);
    }
    if (!ti.blocks.empty()) {
      int64_t levels_product = 1;
      std::vector<bool> seen(dims.size(), false);
      for (size_t l = 0; l < ti.levels.size() && fits; ++l) {
        const size_t m = static_cast<size_t>(ti.mode_order[l]);
        const int64_t b = ti.blocks[l];
        const int64_t extent = b <= 0 ? dims[m] : seen[m] ? b : dims[m] / b + (dims[m] % b != 0);
        seen[m] = true;
        fits = detail::mul_fits(levels_product, extent, levels_product);
      }
    }
    if (!fits)
      throw std::runtime_error("output " + ti.name + " (" + shape + "): the kernel lists its entries keyed by their "
                               "coordinates flattened into one int64, but the product of its dimensions exceeds 2^63 - 1; "
                               "store " + ti.name + " so that its entries arrive in order (see docs/formats.md)");
  }

  // Runs the assemble phase once to learn each assembled output's entry count, and sizes its
  // coordinates and values (later runs rebuild the same structure in place).
  void size_assembled_outputs(Run<Index, Value>& run, const std::function<void(Run<Index, Value>&)>& assemble) {
    assemble(run);
    for (size_t t = 0; t < info_.tensors.size(); ++t) {
      const TensorInfo& ti = tensor(t);
      Packed<Index, Value>& out = run.packed(static_cast<int>(t));
      if (!ti.is_output || run.structure_owner(static_cast<int>(t)) != static_cast<int>(t) || all_dense(ti.levels)) continue;
      for (size_t l = 0; l < ti.levels.size(); ++l) {
        if (!level_has_crd(ti.levels[l])) continue;
        if (ti.levels[l] == Level::SparseFixed) require_width(ti, out.pos.at(l), l);
        const int64_t entries = assembled_positions(ti, out, l + 1);
        if (entries < 0) throw std::runtime_error("output " + ti.name + ": the assemble phase produced a negative count");
        out.crd[l].assign(static_cast<size_t>(entries), Index(0));
      }
      out.vals.assign(static_cast<size_t>(assembled_positions(ti, out, ti.levels.size())), Value(0));
    }
  }

  // An assembled ELL level's positions count each row's entries: the kernel stores at most the
  // width of them, so a longer row is an error here rather than a truncated output.
  static void require_width(const TensorInfo& ti, const std::vector<Index>& pos, size_t l) {
    const int64_t width = ti.widths.at(l);
    for (size_t p = 0; p + 1 < pos.size(); ++p) {
      const int64_t entries = static_cast<int64_t>(pos[p + 1]) - static_cast<int64_t>(pos[p]);
      if (entries > width)
        throw std::runtime_error("output " + ti.name + ": parent position " + std::to_string(p) + " of level " +
                                 std::to_string(l) + " gets " + std::to_string(entries) +
                                 " entries, more than the ELL width " + std::to_string(width) +
                                 "; give " + ti.name + " a wider ELL format (or csr)");
    }
  }

  // Allocates each output and returns the values it starts every run from.
  std::vector<std::vector<Value>> prepare_outputs(Run<Index, Value>& run, bool has_assemble) {
    std::vector<std::vector<Value>> initial(info_.tensors.size());
    for (size_t t = 0; t < info_.tensors.size(); ++t) {
      const TensorInfo& ti = tensor(t);
      if (!ti.is_output) continue;
      const int id = static_cast<int>(t);
      Packed<Index, Value>& out = run.packed(id);
      const int owner = run.structure_owner(id);
      if (all_dense(ti.levels)) {
        const Coo start = plan_.source[t] == Plan::Source::None ? Coo{tensor_dims(ti, run.sizes()), {}, {}}
                                                                : make_entries(run, t);
        out = pack<Index, Value>(start, ti.levels, ti.mode_order, ti.widths);
      } else if (owner != id) {
        if (tensor(static_cast<size_t>(owner)).is_output)
          throw std::runtime_error("output " + ti.name + " shares the structure of another output");
        out.dims = tensor_dims(ti, run.sizes());
        out.vals = initial_shared_values(run, t, owner);
      } else if (has_assemble && is_assembled_shape(ti.levels)) {
        if (plan_.source[t] != Plan::Source::None)
          throw std::runtime_error("output " + ti.name + " is built by the kernel; it takes no --input");
        out.dims = tensor_dims(ti, run.sizes());
        if (info_.lists_output) require_listable(ti, out.dims);
        out.pos.assign(ti.levels.size(), {});  // sized by the assemble hook, level by level
        out.crd.assign(ti.levels.size(), {});
        continue;  // no initial values: every run rebuilds it
      } else {
        throw std::runtime_error("output format not supported by spgen run yet (output " + ti.name +
                                 " is sparse and shares no input's structure)");
      }
      if (!plan_.save_path[t].empty())
        write_tensor(plan_.save_path[t], unpack_tensor(run, id), all_dense(ti.levels), precision());
      initial[t] = out.vals;
    }
    return initial;
  }

  std::vector<Value> initial_shared_values(Run<Index, Value>& run, size_t t, int owner) {
    const size_t count = run.packed(owner).vals.size();
    switch (plan_.source[t]) {
      case Plan::Source::None: return std::vector<Value>(count, Value(0));
      case Plan::Source::Random: {
        SplitMix64 rng(opts_.seed + t);
        std::vector<Value> vals(count);
        for (Value& v : vals) v = static_cast<Value>(rng.uniform_pm1());
        return vals;
      }
      case Plan::Source::File: {
        Coo entries = make_entries(run, t);
        // The kernel's unpack of t lists the positions of the structure t shares, in order.
        if (!tensor(static_cast<size_t>(owner)).blocks.empty() && t < hooks_->unpack.size() && hooks_->unpack[t]) {
          // Positions as values: exact while they fit the value type's mantissa.
          if (count >= (uint64_t{1} << std::numeric_limits<Value>::digits))
            throw std::runtime_error("initial values of " + tensor(t).name + ": the structure of " +
                                     tensor(static_cast<size_t>(owner)).name + " is too large to locate them");
          std::vector<Value>& positions = run.packed(static_cast<int>(t)).vals;
          positions.resize(count);
          for (size_t p = 0; p < count; ++p) positions[p] = static_cast<Value>(p + 1);
          return values_on_unpacked_structure(run, static_cast<int>(t), owner, hooks_->unpack[t](run), entries);
        }
        return values_on_structure(run, static_cast<int>(t), owner, entries);
      }
    }
    return {};
  }

  template <class F>
  Timings time_runs(Run<Index, Value>& run, const std::vector<std::vector<Value>>& initial, F& invoke) {
    const int warmup = opts_.warmup >= 0 ? opts_.warmup : (opts_.repeat > 1 ? 1 : 0);
    std::vector<double> ms;
    for (int i = 0; i < warmup + opts_.repeat; ++i) {
      // Every run starts from the same output, so `+=` kernels do not pile up.
      for (size_t t = 0; t < initial.size(); ++t)
        if (tensor(t).is_output)
          std::copy(initial[t].begin(), initial[t].end(), run.packed(static_cast<int>(t)).vals.begin());
      const auto start = std::chrono::steady_clock::now();
      invoke(run);
      const auto stop = std::chrono::steady_clock::now();
      if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    return summarize(ms);
  }

  void write_outputs(const Run<Index, Value>& run) const {
    for (size_t t = 0; t < info_.tensors.size(); ++t) {
      if (plan_.output_path[t].empty()) continue;
      const bool hooked = t < hooks_->unpack.size() && hooks_->unpack[t];
      const Coo entries = hooked ? hooks_->unpack[t](run) : unpack_tensor(run, static_cast<int>(t));
      write_tensor(plan_.output_path[t], entries, all_dense(tensor(t).levels), precision());
    }
  }

  const KernelInfo& info_;
  const Options& opts_;
  const Plan plan_;
  std::vector<Coo> coos_;
  const Hooks<Index, Value>* hooks_ = nullptr;
  std::vector<std::pair<std::string, double>> pack_ms_;  // per sparse input: its pack's time
  double inspect_ms_ = -1;                                // a decomposition's inspector's, once
};

// Messages that already read `PATH:LINE: error: ...` are printed as they are.
inline void print_error(const char* message) {
  if (std::strstr(message, ": error: ")) std::fprintf(stderr, "%s\n", message);
  else std::fprintf(stderr, "error: %s\n", message);
}

}  // namespace detail

// The generated driver's entry point. Returns 0 on success, 1 after printing an error to stderr.
template <class Index, class Value>
int run(int argc, char** argv, const KernelInfo& info, const Hooks<Index, Value>& hooks) {
  try {
    const detail::Options opts = detail::parse_options(argc, argv);
    if (opts.help) {
      std::fputs(detail::usage(info).c_str(), stdout);
      return 0;
    }
    detail::validate_kernel_info(info);
    detail::Driver<Index, Value> driver(info, opts);
    return driver.execute(hooks);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory (the tensors are too large for this machine)\n");
  } catch (const std::exception& e) {
    detail::print_error(e.what());
  }
  return 1;
}

// ---------------------------------------------------------------------------------------
// The glue's plain interface (spgen_run_glue.hpp)
// ---------------------------------------------------------------------------------------

// A driver's glue reaches the runtime through plain functions (spgen_run_glue::dim, pos, ...):
// the runtime instance (run_runtime_instance.cpp.in) defines each by one of these, for its types.
template <class Index, class Value>
struct Glue {
  using R = Run<Index, Value>;
  static R& of(spgen_run_glue::Run* r) { return *reinterpret_cast<R*>(r); }
  static spgen_run_glue::Run* handle(const R& r) { return reinterpret_cast<spgen_run_glue::Run*>(const_cast<R*>(&r)); }
  static Packed<Index, Value>& target(const spgen_run_glue::Entries& e) { return *static_cast<Packed<Index, Value>*>(e.target); }

  template <class T>
  static void* sized(std::vector<T>& array, int64_t length) {
    if (length < 0) throw std::runtime_error("a conversion routine asked for a negative length");
    array.resize(static_cast<size_t>(length) + 1);  // + 1: never null
    array.resize(static_cast<size_t>(length));
    return array.data();
  }
  static void* packed_array(const spgen_run_glue::Entries& e, bool is_pos, int l, int64_t length) {
    std::vector<std::vector<Index>>& arrays = is_pos ? target(e).pos : target(e).crd;
    return sized(arrays.at(static_cast<size_t>(l)), length);
  }
  static void* packed_values(const spgen_run_glue::Entries& e, int64_t length) { return sized(target(e).vals, length); }

  static const void* stored_array(spgen_run_glue::Run* r, int t, bool is_pos, int l, int64_t* length) {
    const Packed<Index, Value>& p = of(r).packed(t);
    const std::vector<Index>& array = (is_pos ? p.pos : p.crd).at(static_cast<size_t>(l));
    *length = static_cast<int64_t>(array.size());
    return array.data();
  }
  static const void* stored_values(spgen_run_glue::Run* r, int t, int64_t* length) {
    const std::vector<Value>& vals = of(r).packed(t).vals;
    *length = static_cast<int64_t>(vals.size());
    return vals.data();
  }

  [[noreturn]] static void fail(const char* doing, const char* what, int status, const char* message) {
    throw std::runtime_error(std::string(doing) + " " + what + ": " + message + " (error " + std::to_string(status) + ")");
  }
  static void check(const char* (*strerror)(int), const char* doing, const std::string& what, int status) {
    if (status != 0) fail(doing, what.c_str(), status, strerror ? strerror(status) : "error");
  }

  // The kernel's own conversion routines as the runtime's hooks: a pack routine fills the levels
  // of its tensor's structure; an unpack routine is called for the count, then the entries.
  static void use_conversions(Hooks<Index, Value>& hooks, const KernelInfo& info, const spgen_run_glue::PackFn* pack,
                              const spgen_run_glue::UnpackFn* unpack, const char* (*strerror)(int)) {
    const size_t tensors = info.tensors.size();
    hooks.pack.assign(tensors, nullptr);
    hooks.unpack.assign(tensors, nullptr);
    for (size_t t = 0; t < tensors; ++t) {
      const TensorInfo& ti = info.tensors[t];
      if (pack && pack[t])
        hooks.pack[t] = [fn = pack[t], strerror, &ti](const Coo& c, Packed<Index, Value>& p) {
          std::vector<Value> vals(c.vals.size());
          for (size_t e = 0; e < vals.size(); ++e) vals[e] = static_cast<Value>(c.vals[e]);
          p = Packed<Index, Value>();
          p.dims = c.dims;
          p.pos.resize(ti.levels.size());
          p.crd.resize(ti.levels.size());
          check(strerror, "packing", ti.name, fn({c.nnz(), c.coords.data(), vals.data(), c.dims.data(), &p}));
        };
      if (unpack && unpack[t])
        hooks.unpack[t] = [fn = unpack[t], strerror, &ti, t](const Run<Index, Value>& r) {
          int64_t nnz = 0;
          check(strerror, "unpacking", ti.name, fn(handle(r), &nnz, nullptr, nullptr));
          const std::vector<int64_t>& dims = r.packed(static_cast<int>(t)).dims;
          std::vector<int64_t> coords(static_cast<size_t>(nnz) * dims.size() + 1);  // + 1: never null
          std::vector<Value> vals(static_cast<size_t>(nnz) + 1);
          check(strerror, "unpacking", ti.name, fn(handle(r), &nnz, coords.data(), vals.data()));
          Coo out;
          out.dims = dims;
          out.coords.assign(coords.begin(), coords.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(nnz) * dims.size()));
          out.vals.assign(vals.begin(), vals.begin() + static_cast<std::ptrdiff_t>(nnz));
          return out;
        };
    }
  }

  static KernelInfo info(const spgen_run_glue::Kernel& k) {
    KernelInfo info;
    info.name = k.name;
    info.index_vars.assign(k.vars, k.vars + k.var_count);
    for (int t = 0; t < k.tensor_count; ++t) {
      const spgen_run_glue::Tensor& g = k.tensors[t];
      const size_t levels = static_cast<size_t>(g.level_count);
      TensorInfo ti;
      ti.name = g.name;
      ti.is_output = g.is_output;
      ti.modes.assign(g.modes, g.modes + g.order);
      for (size_t l = 0; l < levels; ++l) ti.levels.push_back(static_cast<Level>(g.levels[l]));
      ti.mode_order.assign(g.mode_order, g.mode_order + levels);
      ti.shares_structure_with = g.shares_structure_with;
      if (g.widths) ti.widths.assign(g.widths, g.widths + levels);
      if (g.blocks) ti.blocks.assign(g.blocks, g.blocks + levels);
      ti.sliced = g.sliced;
      info.tensors.push_back(std::move(ti));
    }
    info.accumulate = k.accumulate;
    info.previous_output = k.previous_output;
    info.lists_output = k.lists_output;
    return info;
  }

  static int main(int argc, char** argv, const spgen_run_glue::Kernel& k) {
    KernelInfo kernel_info;
    Hooks<Index, Value> hooks;
    try {
      kernel_info = info(k);
      auto call = [](spgen_run_glue::KernelFn fn) {
        return [fn](Run<Index, Value>& r) { fn(handle(r)); };
      };
      hooks.invoke = call(k.invoke);
      if (k.assemble) hooks.assemble = call(k.assemble);
      if (k.prepare) hooks.prepare = call(k.prepare);
      use_conversions(hooks, kernel_info, k.pack, k.unpack, k.pack_strerror);
      for (int f = 0; f < k.fixed_count; ++f) hooks.fixed_sizes.emplace_back(k.fixed_vars[f], k.fixed_sizes[f]);
    } catch (const std::exception& e) {
      detail::print_error(e.what());
      return 1;
    }
    return run<Index, Value>(argc, argv, kernel_info, hooks);
  }
};

// Shorthands: `invoke` (any callable taking Run<Index, Value>&) runs the kernel; `assemble`, for
// kernels that build a sparse output, runs their assemble phase before each invoke.
// The callables are referenced, not copied (a driver's may own device memory), and outlive the run.
template <class Index, class Value, class F>
int main(int argc, char** argv, const KernelInfo& info, F&& invoke) {
  Hooks<Index, Value> hooks;
  hooks.invoke = [&invoke](Run<Index, Value>& r) { invoke(r); };
  return run<Index, Value>(argc, argv, info, hooks);
}

template <class Index, class Value, class F, class G>
int main(int argc, char** argv, const KernelInfo& info, F&& invoke, G&& assemble) {
  Hooks<Index, Value> hooks;
  hooks.invoke = [&invoke](Run<Index, Value>& r) { invoke(r); };
  hooks.assemble = [&assemble](Run<Index, Value>& r) { assemble(r); };
  return run<Index, Value>(argc, argv, info, hooks);
}

// A driver built against a precompiled runtime (run_runtime_instance.cpp.in) does not
// instantiate `run` itself: most of a driver's compile time is spent there.
#ifdef SPGEN_RUN_PRECOMPILED
extern template int run<int32_t, float>(int, char**, const KernelInfo&, const Hooks<int32_t, float>&);
extern template int run<int32_t, double>(int, char**, const KernelInfo&, const Hooks<int32_t, double>&);
extern template int run<int64_t, float>(int, char**, const KernelInfo&, const Hooks<int64_t, float>&);
extern template int run<int64_t, double>(int, char**, const KernelInfo&, const Hooks<int64_t, double>&);
#endif

}  // namespace spgen_run

#endif  // SPGEN_RUN_RUNTIME_HPP
