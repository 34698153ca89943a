// Tests of templates/spgen_run_runtime.hpp: the runtime that `spgen run` drivers compile with.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "spgen_run_runtime.hpp"

namespace {

namespace fs = std::filesystem;
using spgen_run::Coo;
using spgen_run::Level;

// A fresh directory under the system temp directory, removed at scope exit.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("spgen_run_runtime_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }
  bool has_tmp_files() const {
    for (const auto& entry : fs::directory_iterator(path_))
      if (entry.path().extension() == ".tmp") return true;
    return false;
  }

 private:
  fs::path path_;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using EntryMap = std::map<std::vector<int64_t>, double>;

// Entries by coordinate, duplicates summed, optionally without zeros.
EntryMap entries_of(const Coo& t, bool drop_zeros = false) {
  EntryMap out;
  for (int64_t e = 0; e < t.nnz(); ++e) {
    std::vector<int64_t> c;
    for (int m = 0; m < t.order(); ++m) c.push_back(t.coord(e, m));
    out[c] += t.vals[static_cast<size_t>(e)];
  }
  if (drop_zeros)
    for (auto it = out.begin(); it != out.end();) it = it->second == 0.0 ? out.erase(it) : std::next(it);
  return out;
}

// Entries with values rounded to float: what %.9g output preserves exactly.
EntryMap float_entries_of(const Coo& t, bool drop_zeros = false) {
  EntryMap out = entries_of(t, drop_zeros);
  for (auto& entry : out) entry.second = static_cast<float>(entry.second);
  return out;
}

// The message of the std::runtime_error that f throws ("" if none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

std::string read_error(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.write(name, text);
  return error_of([&] { spgen_run::read_tensor(path); });
}

Coo make_coo(std::vector<int64_t> dims, const std::vector<std::pair<std::vector<int64_t>, double>>& entries) {
  Coo t;
  t.dims = std::move(dims);
  for (const auto& [c, v] : entries) t.add_entry(c.data(), v);
  return t;
}

}  // namespace

// ------------------------------------------------------------------------------------
// Reading Matrix Market
// ------------------------------------------------------------------------------------

TEST_CASE("read mtx: coordinate general, with comments, blank lines and CRLF") {
  TempDir dir;
  const std::string path = dir.write("a.mtx",
                                     "%%MatrixMarket matrix coordinate real general\r\n"
                                     "% a comment\r\n"
                                     "\r\n"
                                     "3 4 3\r\n"
                                     "1 2 1.5\r\n"
                                     "   % indented comment\n"
                                     "3 4 -2e-1\n"
                                     "3 1 +7\n");
  const Coo t = spgen_run::read_tensor(path);
  CHECK(t.dims == std::vector<int64_t>{3, 4});
  CHECK(entries_of(t) == EntryMap{{{0, 1}, 1.5}, {{2, 3}, -0.2}, {{2, 0}, 7.0}});
}

TEST_CASE("read mtx: symmetric mirrors off-diagonal entries, diagonal once") {
  TempDir dir;
  const std::string path = dir.write("s.mtx",
                                     "%%MatrixMarket matrix coordinate real symmetric\n"
                                     "3 3 3\n1 1 4\n2 1 5\n3 2 6\n");
  const Coo t = spgen_run::read_tensor(path);
  CHECK(t.nnz() == 5);
  CHECK(entries_of(t) == EntryMap{{{0, 0}, 4}, {{1, 0}, 5}, {{0, 1}, 5}, {{2, 1}, 6}, {{1, 2}, 6}});
}

TEST_CASE("read mtx: skew-symmetric negates the mirror") {
  TempDir dir;
  const std::string path = dir.write("k.mtx",
                                     "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                                     "3 3 2\n2 1 5\n3 1 -2\n");
  const Coo t = spgen_run::read_tensor(path);
  CHECK(entries_of(t) == EntryMap{{{1, 0}, 5}, {{0, 1}, -5}, {{2, 0}, -2}, {{0, 2}, 2}});
}

TEST_CASE("read mtx: pattern entries read as 1, integer values") {
  TempDir dir;
  const Coo p = spgen_run::read_tensor(
      dir.write("p.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 1\n2 1\n"));
  CHECK(entries_of(p) == EntryMap{{{0, 0}, 1}, {{1, 0}, 1}});
  const Coo i = spgen_run::read_tensor(
      dir.write("i.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 -3\n2 2 12\n"));
  CHECK(entries_of(i) == EntryMap{{{0, 1}, -3}, {{1, 1}, 12}});
  CHECK(read_error(dir, "bad_int.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 2 1.5\n")
            .find(":3:") != std::string::npos);
}

TEST_CASE("read mtx: array format is column-major") {
  TempDir dir;
  const Coo t = spgen_run::read_tensor(
      dir.write("d.mtx", "%%MatrixMarket matrix array real general\n% c\n2 3\n1\n2\n3\n4\n5\n6\n"));
  CHECK(t.dims == std::vector<int64_t>{2, 3});
  CHECK(entries_of(t) ==
        EntryMap{{{0, 0}, 1}, {{1, 0}, 2}, {{0, 1}, 3}, {{1, 1}, 4}, {{0, 2}, 5}, {{1, 2}, 6}});
  // Symmetric arrays store the lower triangle, column by column.
  const Coo s = spgen_run::read_tensor(
      dir.write("ds.mtx", "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n"));
  CHECK(entries_of(s) == EntryMap{{{0, 0}, 1}, {{1, 0}, 2}, {{0, 1}, 2}, {{1, 1}, 3}});
}

TEST_CASE("read tns: order from the first line, dims from the largest coordinates") {
  TempDir dir;
  const Coo t = spgen_run::read_tensor(dir.write("t.tns", "# FROSTT\n1 1 1 1.0\n\n2 3 1 -2.5\n1 2 4 3\n"));
  CHECK(t.dims == std::vector<int64_t>{2, 3, 4});
  CHECK(entries_of(t) == EntryMap{{{0, 0, 0}, 1.0}, {{1, 2, 0}, -2.5}, {{0, 1, 3}, 3.0}});
}

TEST_CASE("read: every corrupt file gives PATH:LINE: error: WHAT with the right line") {
  TempDir dir;
  struct Case {
    const char* name;
    const char* text;
    const char* line;
    const char* what;
  };
  const std::vector<Case> cases = {
      {"empty.mtx", "", ":1:", "missing %%MatrixMarket banner"},
      {"nobanner.mtx", "3 3 1\n1 1 1\n", ":1:", "missing %%MatrixMarket banner"},
      {"garbled.mtx", "%%MatrixMarket matrix coordinate real\n1 1 0\n", ":1:", "garbled banner"},
      {"complex.mtx", "%%MatrixMarket matrix coordinate complex general\n1 1 0\n", ":1:", "unsupported"},
      {"herm.mtx", "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", ":1:", "unsupported"},
      {"format.mtx", "%%MatrixMarket matrix sparse real general\n1 1 0\n", ":1:", "unknown format"},
      {"nosize.mtx", "%%MatrixMarket matrix coordinate real general\n% only comments\n", ":3:", "missing size line"},
      {"badsize.mtx", "%%MatrixMarket matrix coordinate real general\n%c\n3 x 1\n", ":3:", "invalid column count"},
      {"nansize.mtx", "%%MatrixMarket matrix coordinate real general\nnan 3 1\n", ":2:", "invalid row count"},
      {"shortsize.mtx", "%%MatrixMarket matrix coordinate real general\n3 3\n", ":2:", "bad size line"},
      {"sizegarbage.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1 9\n1 1 1\n", ":2:", "unexpected text"},
      {"fewer.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n", ":5:", "found only 2"},
      {"more.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n%c\n2 2 2\n", ":5:",
       "too many entries"},
      {"word.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n2 2 abc\n", ":4:", "invalid value"},
      {"zero.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n0 1 1\n", ":3:", "out of range"},
      {"beyond.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n2 4 1\n", ":4:", "out of range"},
      {"trailing.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1 junk\n", ":3:",
       "unexpected text 'junk'"},
      {"missingval.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1\n", ":3:",
       "expected 'ROW COL VALUE'"},
      {"upper.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n1 2 1\n", ":3:", "above the diagonal"},
      {"nonsquare.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 4 0\n", ":2:", "must be square"},
      {"arrayfew.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", ":6:", "found only 3"},
      {"arraytwo.mtx", "%%MatrixMarket matrix array real general\n2 1\n1 2\n3\n", ":3:", "unexpected text"},
      {"tnsfields.tns", "1 1 1 1.0\n2 2 2\n", ":2:", "expected 4 fields like line 1"},
      {"tnsmore.tns", "# c\n1 1 1.0\n2 2 2 2\n", ":3:", "expected 3 fields like line 2"},
      {"tnszero.tns", "1 1 1.0\n1 0 2\n", ":2:", "out of range"},
      {"tnsword.tns", "1 1 1.0\n1 x 2\n", ":2:", "invalid index"},
      {"tnsempty.tns", "# nothing\n", ":2:", "no entries"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string message = read_error(dir, c.name, c.text);
    CHECK(message.find(dir.file(c.name) + c.line + " error: ") == 0);
    CHECK(message.find(c.what) != std::string::npos);
  }
}

TEST_CASE("read: unreadable paths and unknown extensions") {
  TempDir dir;
  const std::string missing = dir.file("nope.mtx");
  const std::string message = error_of([&] { spgen_run::read_tensor(missing); });
  CHECK(message.find(missing + ": error: cannot open file") == 0);
  CHECK(read_error(dir, "x.csv", "1,2\n").find("unknown file extension") != std::string::npos);
  // Binary junk is an error, not a crash.
  static const char junk[] = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1\0\xff 1\n";
  const std::string junk_message = read_error(dir, "junk.mtx", std::string(junk, sizeof junk - 1));
  CHECK(junk_message.find(":3: error: expected 'ROW COL VALUE'") != std::string::npos);
}

// ------------------------------------------------------------------------------------
// Writing
// ------------------------------------------------------------------------------------

TEST_CASE("write/read round trip: dense matrix as a column-major array") {
  TempDir dir;
  const Coo t = make_coo({2, 3}, {{{0, 0}, 1}, {{0, 2}, 0.1f}, {{1, 1}, -2.5}});
  const std::string path = dir.file("d.mtx");
  spgen_run::write_tensor(path, t, /*dense=*/true);
  CHECK(read_text(path) == "%%MatrixMarket matrix array real general\n2 3\n1\n0\n0\n-2.5\n0.100000001\n0\n");
  const Coo back = spgen_run::read_tensor(path);
  CHECK(back.dims == t.dims);
  CHECK(float_entries_of(back, true) == float_entries_of(t));
  CHECK_FALSE(dir.has_tmp_files());
}

TEST_CASE("write/read round trip: sparse matrix sorted by row then column, float values exact") {
  TempDir dir;
  const Coo t = make_coo({3, 3}, {{{2, 0}, 3}, {{0, 2}, 1.0f / 3.0f}, {{0, 1}, -1e-7f}, {{2, 0}, 1}});
  const std::string path = dir.file("s.mtx");
  spgen_run::write_tensor(path, t, false);
  CHECK(read_text(path) ==
        "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 -1.00000001e-07\n1 3 0.333333343\n3 1 4\n");
  const Coo back = spgen_run::read_tensor(path);
  CHECK(static_cast<float>(entries_of(back).at({0, 2})) == 1.0f / 3.0f);
  CHECK(float_entries_of(back) == float_entries_of(t));
  // Doubles need 17 digits.
  const Coo d = make_coo({1, 1}, {{{0, 0}, 0.1}});
  spgen_run::write_tensor(path, d, false, 17);
  CHECK(entries_of(spgen_run::read_tensor(path)).at({0, 0}) == 0.1);
}

TEST_CASE("write/read round trip: vectors are n x 1 matrices") {
  TempDir dir;
  const Coo v = make_coo({3}, {{{1}, 2.0}});
  spgen_run::write_tensor(dir.file("v.mtx"), v, true);
  CHECK(read_text(dir.file("v.mtx")) == "%%MatrixMarket matrix array real general\n3 1\n0\n2\n0\n");
  spgen_run::write_tensor(dir.file("vs.mtx"), v, false);
  CHECK(read_text(dir.file("vs.mtx")) == "%%MatrixMarket matrix coordinate real general\n3 1 1\n2 1 2\n");
}

TEST_CASE("write/read round trip: order-3 tensors as .tns") {
  TempDir dir;
  const Coo t = make_coo({2, 3, 4}, {{{1, 0, 2}, 5}, {{0, 2, 1}, -1}});
  spgen_run::write_tensor(dir.file("s.tns"), t, false);
  // The explicit zero at the last coordinate keeps the dims.
  CHECK(read_text(dir.file("s.tns")) == "1 3 2 -1\n2 1 3 5\n2 3 4 0\n");
  const Coo sparse = spgen_run::read_tensor(dir.file("s.tns"));
  CHECK(sparse.dims == t.dims);
  CHECK(entries_of(sparse, true) == entries_of(t));

  spgen_run::write_tensor(dir.file("d.tns"), t, true);
  const Coo dense = spgen_run::read_tensor(dir.file("d.tns"));
  CHECK(dense.nnz() == 24);
  CHECK(dense.dims == t.dims);
  CHECK(entries_of(dense, true) == entries_of(t));
}

TEST_CASE("write: errors leave no file behind") {
  TempDir dir;
  const Coo t3 = make_coo({2, 2, 2}, {{{0, 0, 0}, 1}});
  CHECK(error_of([&] { spgen_run::write_tensor(dir.file("t.mtx"), t3, false); }).find("use a .tns file") !=
        std::string::npos);
  CHECK(error_of([&] { spgen_run::write_tensor(dir.file("t.txt"), t3, false); }).find("unknown file extension") !=
        std::string::npos);
  const Coo bad = make_coo({2, 2}, {{{0, 5}, 1}});
  const Coo bad_dir_ok = make_coo({2, 2}, {{{0, 1}, 1}});
  CHECK(error_of([&] { spgen_run::write_tensor(dir.file("b.mtx"), bad, false); }).find("out of range") !=
        std::string::npos);
  const std::string no_dir = dir.file("no/such/dir.mtx");
  CHECK(error_of([&] { spgen_run::write_tensor(no_dir, bad_dir_ok, false); }).find("cannot create") !=
        std::string::npos);
  CHECK(fs::is_empty(dir.file("")));
}

// ------------------------------------------------------------------------------------
// Packing
// ------------------------------------------------------------------------------------

namespace {

// Packs and unpacks; the nonzeros must survive, with duplicates summed.
template <class I = int32_t>
spgen_run::Packed<I, double> check_round_trip(const Coo& t, const std::vector<Level>& levels,
                                               const std::vector<int>& mode_order,
                                               const std::vector<int64_t>& widths = {}) {
  const auto packed = spgen_run::pack<I, double>(t, levels, mode_order, widths);
  const Coo back = spgen_run::unpack(packed, levels, mode_order, widths);
  CHECK(back.dims == t.dims);
  CHECK(entries_of(back, true) == entries_of(t, true));
  return packed;
}

// 3 x 4 with an empty middle row and a duplicate at (2,3): 4 + 1.
Coo small_matrix() {
  return make_coo({3, 4}, {{{2, 3}, 4}, {{0, 1}, 1}, {{2, 0}, 3}, {{0, 3}, 2}, {{2, 3}, 1}});
}

}  // namespace

TEST_CASE("pack: exact CSR arrays") {
  const auto p = check_round_trip(small_matrix(), {Level::Dense, Level::Compressed}, {0, 1});
  CHECK(p.pos[0].empty());
  CHECK(p.crd[0].empty());
  CHECK(p.pos[1] == std::vector<int32_t>{0, 2, 2, 4});
  CHECK(p.crd[1] == std::vector<int32_t>{1, 3, 0, 3});
  CHECK(p.vals == std::vector<double>{1, 2, 3, 5});
}

TEST_CASE("pack: exact CSC arrays (mode_order {1, 0})") {
  const auto p = check_round_trip(small_matrix(), {Level::Dense, Level::Compressed}, {1, 0});
  CHECK(p.pos[1] == std::vector<int32_t>{0, 1, 2, 2, 4});
  CHECK(p.crd[1] == std::vector<int32_t>{2, 0, 0, 2});
  CHECK(p.vals == std::vector<double>{3, 1, 2, 5});
}

TEST_CASE("pack: DCSR skips the empty row") {
  const auto p = check_round_trip(small_matrix(), {Level::Compressed, Level::Compressed}, {0, 1});
  CHECK(p.pos[0] == std::vector<int32_t>{0, 2});
  CHECK(p.crd[0] == std::vector<int32_t>{0, 2});
  CHECK(p.pos[1] == std::vector<int32_t>{0, 2, 4});
  CHECK(p.crd[1] == std::vector<int32_t>{1, 3, 0, 3});
}

TEST_CASE("pack: dense is row-major, and column-major with mode_order {1, 0}") {
  const auto rows = check_round_trip(small_matrix(), {Level::Dense, Level::Dense}, {0, 1});
  CHECK(rows.vals == std::vector<double>{0, 1, 0, 2, 0, 0, 0, 0, 3, 0, 0, 5});
  const auto cols = check_round_trip(small_matrix(), {Level::Dense, Level::Dense}, {1, 0});
  CHECK(cols.vals == std::vector<double>{0, 0, 3, 1, 0, 0, 0, 0, 0, 2, 0, 5});
}

TEST_CASE("pack: order-3 CSF and a (dense, compressed, dense) mix") {
  const Coo t = make_coo({3, 4, 2}, {{{2, 1, 0}, 1}, {{0, 3, 1}, 2}, {{0, 0, 0}, 3}, {{2, 1, 1}, 4}, {{0, 3, 1}, 5}});
  const auto csf = check_round_trip(t, {Level::Compressed, Level::Compressed, Level::Compressed}, {0, 1, 2});
  CHECK(csf.pos[0] == std::vector<int32_t>{0, 2});
  CHECK(csf.crd[0] == std::vector<int32_t>{0, 2});
  CHECK(csf.pos[1] == std::vector<int32_t>{0, 2, 3});
  CHECK(csf.crd[1] == std::vector<int32_t>{0, 3, 1});
  CHECK(csf.pos[2] == std::vector<int32_t>{0, 1, 2, 4});
  CHECK(csf.crd[2] == std::vector<int32_t>{0, 1, 0, 1});
  CHECK(csf.vals == std::vector<double>{3, 7, 1, 4});

  // Each stored (i, j) fiber holds all 2 k values, zeros included.
  const auto mix = check_round_trip(t, {Level::Dense, Level::Compressed, Level::Dense}, {0, 1, 2});
  CHECK(mix.pos[1] == std::vector<int32_t>{0, 2, 2, 3});
  CHECK(mix.crd[1] == std::vector<int32_t>{0, 3, 1});
  CHECK(mix.vals == std::vector<double>{3, 0, 0, 7, 1, 4});

  // A permuted CSF: levels store k, then i, then j.
  check_round_trip(t, {Level::Compressed, Level::Dense, Level::Compressed}, {2, 0, 1});
}

TEST_CASE("pack: empty tensors and scalars") {
  const Coo empty = make_coo({3, 4}, {});
  const auto csr = check_round_trip(empty, {Level::Dense, Level::Compressed}, {0, 1});
  CHECK(csr.pos[1] == std::vector<int32_t>{0, 0, 0, 0});
  CHECK(csr.crd[1].empty());
  CHECK(csr.vals.empty());
  const auto dense = check_round_trip(empty, {Level::Dense, Level::Dense}, {0, 1});
  CHECK(dense.vals.size() == 12);
  check_round_trip(make_coo({0, 5}, {}), {Level::Compressed, Level::Compressed}, {0, 1});
  const auto scalar = check_round_trip(make_coo({}, {{{}, 2}, {{}, 3}}), {}, {});
  CHECK(scalar.vals == std::vector<double>{5});
}

TEST_CASE("pack: errors") {
  const std::vector<Level> csr = {Level::Dense, Level::Compressed};
  const Coo out_of_range = make_coo({3, 4}, {{{1, 4}, 1}});
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(out_of_range, csr, {0, 1}); }).find("out of range") !=
        std::string::npos);
  const Coo negative = make_coo({3, 4}, {{{-1, 0}, 1}});
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(negative, csr, {0, 1}); }).find("out of range") !=
        std::string::npos);
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(small_matrix(), {Level::Dense}, {0}); }).find("levels") !=
        std::string::npos);
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(small_matrix(), csr, {0, 0}); }).find("permutation") !=
        std::string::npos);
  // Coordinates and counts must fit the index type.
  const Coo wide = make_coo({2, 300}, {{{0, 299}, 1}});
  CHECK(error_of([&] { spgen_run::pack<int8_t, float>(wide, csr, {0, 1}); }).find("does not fit") !=
        std::string::npos);
  Coo many;
  many.dims = {1, 100};
  for (int64_t j = 0; j < 100; ++j) many.add({0, j}, 1.0);
  CHECK(spgen_run::pack<int8_t, float>(many, csr, {0, 1}).crd[1].size() == 100);
  many.dims = {2, 100};
  for (int64_t j = 0; j < 100; ++j) many.add({1, j}, 1.0);
  CHECK(error_of([&] { spgen_run::pack<int8_t, float>(many, csr, {0, 1}); }).find("does not fit") !=
        std::string::npos);
  // Dense storage whose size overflows.
  const Coo huge = make_coo({int64_t{1} << 40, int64_t{1} << 40}, {});
  CHECK(error_of([&] { spgen_run::pack<int64_t, float>(huge, {Level::Dense, Level::Dense}, {0, 1}); })
            .find("overflow") != std::string::npos);
}

TEST_CASE("unpack: inconsistent arrays are an error") {
  auto p = spgen_run::pack<int32_t, double>(small_matrix(), {Level::Dense, Level::Compressed}, {0, 1});
  p.crd[1][0] = 9;
  CHECK(error_of([&] { spgen_run::unpack(p, {Level::Dense, Level::Compressed}, {0, 1}); }).find("crd") !=
        std::string::npos);
  p = spgen_run::pack<int32_t, double>(small_matrix(), {Level::Dense, Level::Compressed}, {0, 1});
  p.vals.pop_back();
  CHECK(error_of([&] { spgen_run::unpack(p, {Level::Dense, Level::Compressed}, {0, 1}); }).find("values") !=
        std::string::npos);
}

// ------------------------------------------------------------------------------------
// Packing: COO (compressed-nonunique + singleton), ELL (sparse-fixed), ragged
// (dense-variable)
// ------------------------------------------------------------------------------------

namespace {

constexpr Level kCnu = Level::CompressedNonUnique;
constexpr Level kSingleton = Level::Singleton;
constexpr Level kDenseVar = Level::DenseVariable;
constexpr Level kFixed = Level::SparseFixed;

// Every coordinate of a small tensor: a stored one is found at a position holding its
// value; one not stored is not found, or found holding an explicit zero.
void check_find_positions(const spgen_run::Packed<int32_t, double>& p, const Coo& t, const std::vector<Level>& levels,
                          const std::vector<int>& mode_order, const std::vector<int64_t>& widths,
                          bool check_values = true) {
  const EntryMap stored = entries_of(t, true);
  const int64_t total = spgen_run::detail::checked_product(t.dims, "test");
  std::vector<int64_t> c(t.dims.size());
  for (int64_t linear = 0; linear < total; ++linear) {
    spgen_run::detail::unravel(linear, t.dims, c.data());
    const int64_t at = spgen_run::detail::find_position(p, levels, mode_order, c.data(), widths);
    CAPTURE(linear);
    REQUIRE(at < static_cast<int64_t>(p.vals.size()));
    const auto it = stored.find(c);
    if (it != stored.end()) {
      REQUIRE(at >= 0);
      if (check_values) CHECK(p.vals[static_cast<size_t>(at)] == it->second);
    } else if (check_values) {
      CHECK((at < 0 || p.vals[static_cast<size_t>(at)] == 0.0));
    }
  }
}

// The most distinct coordinates of `mode` under one value of `parent_mode`.
int64_t max_row_length(const Coo& t, int parent_mode, int mode) {
  std::map<int64_t, std::set<int64_t>> rows;
  for (int64_t e = 0; e < t.nnz(); ++e) rows[t.coord(e, parent_mode)].insert(t.coord(e, mode));
  size_t most = 0;
  for (const auto& row : rows) most = std::max(most, row.second.size());
  return static_cast<int64_t>(most);
}

struct Format {
  const char* name;
  std::vector<Level> levels;
  std::vector<int> mode_order;
  std::vector<int64_t> widths;
};

}  // namespace

TEST_CASE("pack: exact COO arrays, duplicates summed") {
  const std::vector<Level> coo = {kCnu, kSingleton};
  const auto p = check_round_trip(small_matrix(), coo, {0, 1});
  CHECK(p.pos[0] == std::vector<int32_t>{0, 4});
  CHECK(p.crd[0] == std::vector<int32_t>{0, 0, 2, 2});
  CHECK(p.pos[1].empty());
  CHECK(p.crd[1] == std::vector<int32_t>{1, 3, 0, 3});
  CHECK(p.vals == std::vector<double>{1, 2, 3, 5});
  CHECK(spgen_run::unpack(p, coo, {0, 1}).nnz() == 4);
  check_find_positions(p, small_matrix(), coo, {0, 1}, {});

  // By columns: sorted by (col, row).
  const auto c = check_round_trip(small_matrix(), coo, {1, 0});
  CHECK(c.pos[0] == std::vector<int32_t>{0, 4});
  CHECK(c.crd[0] == std::vector<int32_t>{0, 1, 3, 3});
  CHECK(c.crd[1] == std::vector<int32_t>{2, 0, 0, 2});
  CHECK(c.vals == std::vector<double>{3, 1, 2, 5});

  const auto empty = check_round_trip(make_coo({3, 4}, {}), coo, {0, 1});
  CHECK(empty.pos[0] == std::vector<int32_t>{0, 0});
  CHECK(empty.crd[0].empty());
  CHECK(empty.crd[1].empty());
  CHECK(empty.vals.empty());
}

TEST_CASE("pack: exact order-3 COO arrays") {
  const Coo t = make_coo({3, 4, 2}, {{{2, 1, 0}, 1}, {{0, 3, 1}, 2}, {{0, 0, 0}, 3}, {{2, 1, 1}, 4}, {{0, 3, 1}, 5}});
  const std::vector<Level> coo = {kCnu, kSingleton, kSingleton};
  const auto p = check_round_trip(t, coo, {0, 1, 2});
  CHECK(p.pos[0] == std::vector<int32_t>{0, 4});
  CHECK(p.crd[0] == std::vector<int32_t>{0, 0, 2, 2});
  CHECK(p.pos[1].empty());
  CHECK(p.crd[1] == std::vector<int32_t>{0, 3, 1, 1});
  CHECK(p.pos[2].empty());
  CHECK(p.crd[2] == std::vector<int32_t>{0, 1, 0, 1});
  CHECK(p.vals == std::vector<double>{3, 7, 1, 4});
  check_find_positions(p, t, coo, {0, 1, 2}, {});

  // A dense row level above a COO of (j, k) pairs.
  const std::vector<Level> mixed = {Level::Dense, kCnu, kSingleton};
  const auto m = check_round_trip(t, mixed, {0, 1, 2});
  CHECK(m.pos[1] == std::vector<int32_t>{0, 2, 2, 4});
  CHECK(m.crd[1] == std::vector<int32_t>{0, 3, 1, 1});
  CHECK(m.crd[2] == std::vector<int32_t>{0, 1, 0, 1});
  CHECK(m.vals == std::vector<double>{3, 7, 1, 4});
  check_find_positions(m, t, mixed, {0, 1, 2}, {});
}

TEST_CASE("pack: exact ELL arrays, padding -1 with zero values, empty rows") {
  const std::vector<Level> ell = {Level::Dense, kFixed};
  // Rows: 0 -> {1, 3}, 1 -> {}, 2 -> {0, 3}.
  const auto w3 = check_round_trip(small_matrix(), ell, {0, 1}, {0, 3});
  CHECK(w3.pos[0].empty());
  CHECK(w3.crd[0].empty());
  CHECK(w3.pos[1].empty());
  CHECK(w3.crd[1] == std::vector<int32_t>{1, 3, -1, -1, -1, -1, 0, 3, -1});
  CHECK(w3.vals == std::vector<double>{1, 2, 0, 0, 0, 0, 3, 5, 0});
  CHECK(spgen_run::unpack(w3, ell, {0, 1}, {0, 3}).nnz() == 4);  // no padding
  check_find_positions(w3, small_matrix(), ell, {0, 1}, {0, 3});

  // Width exactly the longest row.
  const auto w2 = check_round_trip(small_matrix(), ell, {0, 1}, {0, 2});
  CHECK(w2.crd[1] == std::vector<int32_t>{1, 3, -1, -1, 0, 3});
  CHECK(w2.vals == std::vector<double>{1, 2, 0, 0, 3, 5});
  CHECK(spgen_run::unpack(w2, ell, {0, 1}, {0, 2}).nnz() == 4);
  check_find_positions(w2, small_matrix(), ell, {0, 1}, {0, 2});

  // An explicit zero in the input is stored, not treated as padding.
  const auto z = check_round_trip(make_coo({2, 3}, {{{0, 2}, 0.0}, {{1, 0}, 4}}), ell, {0, 1}, {0, 1});
  CHECK(z.crd[1] == std::vector<int32_t>{2, 0});
  CHECK(z.vals == std::vector<double>{0, 4});
  CHECK(spgen_run::unpack(z, ell, {0, 1}, {0, 1}).nnz() == 2);

  // int64 indices.
  const auto wide = check_round_trip<int64_t>(small_matrix(), ell, {0, 1}, {0, 2});
  CHECK(wide.crd[1] == std::vector<int64_t>{1, 3, -1, -1, 0, 3});
}

TEST_CASE("pack: exact ELL by columns ({dense, sparse-fixed}, mode_order {1, 0})") {
  const std::vector<Level> ell = {Level::Dense, kFixed};
  // Columns: 0 -> {2}, 1 -> {0}, 2 -> {}, 3 -> {0, 2}.
  const auto p = check_round_trip(small_matrix(), ell, {1, 0}, {0, 2});
  CHECK(p.crd[1] == std::vector<int32_t>{2, -1, 0, -1, -1, -1, 0, 2});
  CHECK(p.vals == std::vector<double>{3, 0, 1, 0, 0, 0, 2, 5});
  check_find_positions(p, small_matrix(), ell, {1, 0}, {0, 2});
  CHECK(error_of([&] { spgen_run::pack<int32_t, double>(small_matrix(), ell, {1, 0}, {0, 1}); }) ==
        "sparse-fixed level 1: row 3 has 2 entries but the ELL width is 1");
}

TEST_CASE("pack: exact ragged (dense-variable) arrays: prefixes, a gap filled by a zero, an empty row") {
  // Row 0: cols 0, 1. Row 1: cols 0, 2 (col 1 a stored zero). Row 2: empty. Row 3: col 1.
  const Coo t = make_coo({4, 5}, {{{0, 0}, 1}, {{0, 1}, 2}, {{1, 2}, 4}, {{1, 0}, 3}, {{3, 1}, 5}});
  const std::vector<Level> ragged = {Level::Dense, kDenseVar};
  const auto p = check_round_trip(t, ragged, {0, 1});
  CHECK(p.pos[0].empty());
  CHECK(p.crd[0].empty());
  CHECK(p.pos[1] == std::vector<int32_t>{0, 2, 5, 5, 7});
  CHECK(p.crd[1].empty());
  CHECK(p.vals == std::vector<double>{1, 2, 3, 0, 4, 0, 5});
  // Unpack enumerates each stored prefix, its explicit zeros included.
  const Coo back = spgen_run::unpack(p, ragged, {0, 1});
  CHECK(back.nnz() == 7);
  CHECK(back.coords == std::vector<int64_t>{0, 0, 0, 1, 1, 0, 1, 1, 1, 2, 3, 0, 3, 1});
  check_find_positions(p, t, ragged, {0, 1}, {});
  CHECK(spgen_run::detail::find_position(p, ragged, {0, 1}, std::vector<int64_t>{0, 2}.data()) == -1);
  CHECK(spgen_run::detail::find_position(p, ragged, {0, 1}, std::vector<int64_t>{2, 0}.data()) == -1);
  CHECK(spgen_run::detail::find_position(p, ragged, {0, 1}, std::vector<int64_t>{1, 1}.data()) == 3);

  // A ragged top level: one parent, the prefix up to the largest row.
  const auto top = check_round_trip(t, {kDenseVar, Level::Compressed}, {0, 1});
  CHECK(top.pos[0] == std::vector<int32_t>{0, 4});
  CHECK(top.pos[1] == std::vector<int32_t>{0, 2, 4, 4, 5});
  CHECK(top.crd[1] == std::vector<int32_t>{0, 1, 0, 2, 1});
}

TEST_CASE("pack/unpack round trips of random tensors in every level kind") {
  const std::vector<Format> formats = {
      {"COO", {kCnu, kSingleton}, {0, 1}, {}},
      {"COO by columns", {kCnu, kSingleton}, {1, 0}, {}},
      {"COO then dense", {kCnu, Level::Dense}, {0, 1}, {}},
      {"ELL", {Level::Dense, kFixed}, {0, 1}, {0, 3}},
      {"ELL by columns", {Level::Dense, kFixed}, {1, 0}, {0, 2}},
      {"ELL of ELL", {kFixed, kFixed}, {0, 1}, {4, 2}},
      {"sparse-fixed then dense", {kFixed, Level::Dense}, {0, 1}, {5, 0}},
      {"compressed then sparse-fixed", {Level::Compressed, kFixed}, {0, 1}, {0, 1}},
      {"ragged", {Level::Dense, kDenseVar}, {0, 1}, {}},
      {"ragged by columns", {Level::Dense, kDenseVar}, {1, 0}, {}},
      {"compressed then ragged", {Level::Compressed, kDenseVar}, {0, 1}, {}},
      {"ragged then compressed", {kDenseVar, Level::Compressed}, {0, 1}, {}},
      {"ragged then sparse-fixed", {kDenseVar, kFixed}, {0, 1}, {0, 2}},
      {"3-order COO", {kCnu, kSingleton, kSingleton}, {0, 1, 2}, {}},
      {"3-order COO permuted", {kCnu, kSingleton, kSingleton}, {2, 0, 1}, {}},
      {"dense over COO", {Level::Dense, kCnu, kSingleton}, {0, 1, 2}, {}},
      {"COO over dense", {kCnu, kSingleton, Level::Dense}, {0, 1, 2}, {}},
      {"COO over compressed", {kCnu, kSingleton, Level::Compressed}, {0, 1, 2}, {}},
      {"dense, dense, sparse-fixed", {Level::Dense, Level::Dense, kFixed}, {0, 1, 2}, {0, 0, 2}},
      {"dense, sparse-fixed, dense", {Level::Dense, kFixed, Level::Dense}, {1, 0, 2}, {0, 2, 0}},
      {"ragged, ragged", {Level::Dense, kDenseVar, kDenseVar}, {0, 1, 2}, {}},
      {"sparse-fixed, ragged, compressed", {kFixed, kDenseVar, Level::Compressed}, {2, 1, 0}, {3, 0, 0}},
      {"vector COO", {kCnu}, {0}, {}},
      {"vector ragged", {kDenseVar}, {0}, {}},
      {"vector sparse-fixed", {kFixed}, {0}, {3}},
  };
  for (const Format& f : formats) {
    CAPTURE(f.name);
    const std::vector<int64_t> dims = f.levels.size() == 1   ? std::vector<int64_t>{11}
                                      : f.levels.size() == 2 ? std::vector<int64_t>{7, 9}
                                                             : std::vector<int64_t>{4, 5, 6};
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      CAPTURE(seed);
      const Coo t = spgen_run::random_sparse(dims, 0.3, seed);
      const Coo fitted = spgen_run::detail::fit_widths(t, f.levels, f.mode_order, f.widths);
      // Fitting only drops entries.
      const EntryMap all = entries_of(t), kept = entries_of(fitted);
      for (const auto& entry : kept) CHECK(all.at(entry.first) == entry.second);
      const auto p = check_round_trip(fitted, f.levels, f.mode_order, f.widths);
      // Where a compressed-nonunique level has dense subtrees and no singletons, a coordinate is
      // stored in several of them (all but one holding a zero), and find_position gives the first;
      // below a COO segment with singletons, its position per distinct coordinates stores each once.
      const bool unique = f.name != std::string("COO then dense");
      check_find_positions(p, fitted, f.levels, f.mode_order, f.widths, unique);
    }
  }
}

TEST_CASE("fit_widths: keeps the first W coordinates of each parent") {
  const std::vector<Level> ell = {Level::Dense, kFixed};
  const Coo t = spgen_run::random_sparse({10, 32}, 0.5, 3);
  REQUIRE(max_row_length(t, 0, 1) > 4);
  const Coo fitted = spgen_run::detail::fit_widths(t, ell, {0, 1}, {0, 4});
  CHECK(max_row_length(fitted, 0, 1) == 4);
  CHECK(fitted.nnz() == 40);
  for (int64_t e = 0; e < fitted.nnz(); ++e) CHECK(fitted.coord(e, 1) < 16);  // the smallest columns, not others
  // Wide enough: nothing dropped; with the exact longest row as width, it packs.
  const int64_t longest = max_row_length(t, 0, 1);
  CHECK(entries_of(spgen_run::detail::fit_widths(t, ell, {0, 1}, {0, longest})) == entries_of(t));
  const auto p = check_round_trip(t, ell, {0, 1}, {0, longest});
  CHECK(p.crd[1].size() == static_cast<size_t>(10 * longest));
  // By columns, the parent is the column.
  const Coo by_cols = spgen_run::detail::fit_widths(t, ell, {1, 0}, {0, 2});
  CHECK(max_row_length(by_cols, 1, 0) == 2);
  // No sparse-fixed level: unchanged.
  CHECK(spgen_run::detail::fit_widths(t, {Level::Dense, Level::Compressed}, {0, 1}, {}).coords == t.coords);
}

TEST_CASE("pack: new level kinds' errors") {
  const std::vector<Level> ell = {Level::Dense, kFixed};
  // A row longer than the ELL width.
  Coo long_row = make_coo({9, 20}, {});
  for (int64_t j = 0; j < 12; ++j) long_row.add({7, j}, 1.0);
  long_row.add({2, 0}, 1.0);
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(long_row, ell, {0, 1}, {0, 8}); }) ==
        "sparse-fixed level 1: row 7 has 12 entries but the ELL width is 8");
  // Duplicates count once.
  long_row.add({7, 0}, 1.0);
  CHECK(spgen_run::pack<int32_t, float>(long_row, ell, {0, 1}, {0, 12}).crd[1].size() == 9 * 12);
  // Widths: missing, zero, or of the wrong count.
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(small_matrix(), ell, {0, 1}); }) ==
        "sparse-fixed level 1 needs a width of at least 1 (got 0)");
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(small_matrix(), ell, {0, 1}, {0, 0}); })
            .find("width of at least 1") != std::string::npos);
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(small_matrix(), ell, {0, 1}, {3}); }) ==
        "format has 2 levels but 1 widths");
  CHECK(error_of([&] { spgen_run::unpack(spgen_run::Packed<int32_t, float>{}, ell, {}, {0, 2}); }) != "");
  // Padding needs a signed index type.
  CHECK(error_of([&] { spgen_run::pack<uint32_t, float>(small_matrix(), ell, {0, 1}, {0, 2}); }).find("signed") !=
        std::string::npos);
  // Singleton only directly below compressed-nonunique or singleton.
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(small_matrix(), {kSingleton, kSingleton}, {0, 1}); }) ==
        "singleton level 0 must be directly below a compressed-nonunique or singleton level (it is the top level)");
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(small_matrix(), {Level::Dense, kSingleton}, {0, 1}); }) ==
        "singleton level 1 must be directly below a compressed-nonunique or singleton level (it is below a dense "
        "level)");
  CHECK(error_of([&] { spgen_run::pack<int32_t, float>(small_matrix(), {Level::Compressed, kSingleton}, {0, 1}); })
            .find("below a compressed level") != std::string::npos);
  CHECK(error_of([&] { spgen_run::unpack(spgen_run::Packed<int32_t, float>{}, {kSingleton}, {0}); })
            .find("singleton level 0") != std::string::npos);
  // Coordinates and position counts must fit the index type.
  Coo many = make_coo({2, 200}, {});
  for (int64_t j = 0; j < 100; ++j) {
    many.add({0, j}, 1.0);
    many.add({1, j}, 1.0);
  }
  CHECK(error_of([&] { spgen_run::pack<int8_t, float>(many, {kCnu, kSingleton}, {0, 1}); }).find("does not fit") !=
        std::string::npos);
  CHECK(error_of([&] { spgen_run::pack<int8_t, float>(many, {Level::Dense, kDenseVar}, {0, 1}); })
            .find("does not fit") != std::string::npos);
  CHECK(error_of([&] { spgen_run::pack<int8_t, float>(many, ell, {0, 1}, {0, 100}); }).find("does not fit") !=
        std::string::npos);
}

TEST_CASE("unpack: inconsistent arrays of the new level kinds are an error") {
  const std::vector<Level> coo = {kCnu, kSingleton}, ell = {Level::Dense, kFixed}, ragged = {Level::Dense, kDenseVar};
  auto p = spgen_run::pack<int32_t, double>(small_matrix(), coo, {0, 1});
  p.crd[1].pop_back();
  CHECK(error_of([&] { spgen_run::unpack(p, coo, {0, 1}); }).find("crd array has 3 entries for 4") !=
        std::string::npos);
  p = spgen_run::pack<int32_t, double>(small_matrix(), coo, {0, 1});
  p.crd[1][0] = 4;
  CHECK(error_of([&] { spgen_run::unpack(p, coo, {0, 1}); }).find("out of range") != std::string::npos);

  auto e = spgen_run::pack<int32_t, double>(small_matrix(), ell, {0, 1}, {0, 3});
  CHECK(error_of([&] { spgen_run::unpack(e, ell, {0, 1}, {0, 2}); }).find("expected 6") != std::string::npos);
  e.crd[1][2] = 2;  // row 0 fills its padding slot: unpack takes it (value 0)
  CHECK(spgen_run::unpack(e, ell, {0, 1}, {0, 3}).nnz() == 5);
  e.crd[1][4] = 1;  // row 1: -1, 1, -1
  CHECK(error_of([&] { spgen_run::unpack(e, ell, {0, 1}, {0, 3}); }).find("follows padding") != std::string::npos);
  e.crd[1][4] = -2;
  CHECK(error_of([&] { spgen_run::unpack(e, ell, {0, 1}, {0, 3}); }).find("out of range") != std::string::npos);

  auto r = spgen_run::pack<int32_t, double>(small_matrix(), ragged, {0, 1});
  CHECK(r.pos[1] == std::vector<int32_t>{0, 4, 4, 8});
  r.pos[1] = {0, 5, 5, 8};  // row 0 longer than the 4 columns
  CHECK(error_of([&] { spgen_run::unpack(r, ragged, {0, 1}); }).find("longer than the dimension") !=
        std::string::npos);
  r.pos[1] = {0, 4, 3, 8};
  CHECK(error_of([&] { spgen_run::unpack(r, ragged, {0, 1}); }).find("decreases") != std::string::npos);
  r.pos[1] = {0, 4, 4, 7};
  CHECK(error_of([&] { spgen_run::unpack(r, ragged, {0, 1}); }).find("values for 7 positions") !=
        std::string::npos);
}

// ------------------------------------------------------------------------------------
// Random tensors
// ------------------------------------------------------------------------------------

TEST_CASE("random: splitmix64 matches the reference sequence") {
  spgen_run::SplitMix64 rng(0);
  CHECK(rng.next() == 0xe220a8397b1dcdafULL);
  CHECK(rng.next() == 0x6e789e6aa1b965f4ULL);
}

TEST_CASE("random_dense: deterministic, pinned values") {
  const Coo a = spgen_run::random_dense({2, 3}, 42);
  CHECK(a.nnz() == 6);
  CHECK(a.vals[0] == 0.48312975754364662);
  CHECK(a.vals[1] == -0.68017921424615979);
  CHECK(a.vals[5] == 0.73645615309306467);
  CHECK(a.coords == std::vector<int64_t>{0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2});
  const Coo b = spgen_run::random_dense({2, 3}, 42);
  CHECK(a.vals == b.vals);
  CHECK(spgen_run::random_dense({2, 3}, 43).vals != a.vals);
  for (double v : a.vals) CHECK((v >= -1.0 && v < 1.0));
}

TEST_CASE("random_sparse: deterministic, sorted, unique, near the density") {
  const Coo a = spgen_run::random_sparse({10, 10}, 0.2, 7);
  CHECK(a.nnz() == 15);
  CHECK(a.coord(0, 0) == 0);
  CHECK(a.coord(0, 1) == 1);
  CHECK(a.vals[0] == 0.80152136121376683);
  CHECK(a.coords == spgen_run::random_sparse({10, 10}, 0.2, 7).coords);

  const Coo big = spgen_run::random_sparse({300, 400}, 0.05, 1);
  CHECK(big.nnz() > 5400);  // expected 6000, sd ~75
  CHECK(big.nnz() < 6600);
  for (int64_t e = 1; e < big.nnz(); ++e) {
    const int64_t prev = big.coord(e - 1, 0) * 400 + big.coord(e - 1, 1);
    const int64_t cur = big.coord(e, 0) * 400 + big.coord(e, 1);
    if (prev >= cur) FAIL("entries not sorted and unique at " << e);
  }
  CHECK(spgen_run::random_sparse({5, 5}, 0.0, 1).nnz() == 0);
  CHECK(spgen_run::random_sparse({5, 5}, 1.0, 1).nnz() == 25);
  CHECK_THROWS_AS(spgen_run::random_sparse({5, 5}, 1.5, 1), std::runtime_error);
}

TEST_CASE("random_sparse: huge shapes are sampled in O(nnz)") {
  const Coo a = spgen_run::random_sparse({100000, 100000}, 1e-6, 3);  // 1e10 cells
  CHECK(a.nnz() > 9000);  // expected 10000
  CHECK(a.nnz() < 11000);
  CHECK(a.coords == spgen_run::random_sparse({100000, 100000}, 1e-6, 3).coords);
  for (int64_t e = 1; e < a.nnz(); ++e) {
    const bool increasing = a.coord(e - 1, 0) < a.coord(e, 0) ||
                            (a.coord(e - 1, 0) == a.coord(e, 0) && a.coord(e - 1, 1) < a.coord(e, 1));
    if (!increasing) FAIL("entries not sorted and unique at " << e);
  }
}

// ------------------------------------------------------------------------------------
// The driver's main, end to end with a hand-written kernel
// ------------------------------------------------------------------------------------

namespace {

using Run = spgen_run::Run<int32_t, float>;

spgen_run::KernelInfo spmv_info(bool accumulate) {
  return {
      "spmv",
      {"i", "j"},
      {
          {"y", true, {0}, {Level::Dense}, {0}, -1},
          {"A", false, {0, 1}, {Level::Dense, Level::Compressed}, {0, 1}, -1},
          {"x", false, {1}, {Level::Dense}, {0}, -1},
      },
      accumulate,
  };
}

// y (=|+=) A x, A in CSR.
void spmv(Run& r, bool accumulate) {
  float* y = r.values(0);
  const int32_t* pos = r.pos(1, 1);
  const int32_t* crd = r.crd(1, 1);
  const float* a = r.values(1);
  const float* x = r.values(2);
  REQUIRE(r.pos(1, 0) == nullptr);
  for (int64_t i = 0; i < r.dim(0); ++i) {
    float sum = accumulate ? y[i] : 0.0f;
    for (int32_t p = pos[i]; p < pos[i + 1]; ++p) sum += a[p] * x[crd[p]];
    y[i] = sum;
  }
}
void spmv_assign(Run& r) { spmv(r, false); }

// Runs a driver main with these arguments; captures stdout and stderr.
struct Result {
  int rc;
  std::string out, err;
};

template <class F>
Result run_main(const TempDir& dir, const spgen_run::KernelInfo& info, F&& invoke, std::vector<std::string> args) {
  args.insert(args.begin(), info.name);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out_path = dir.file("stdout.txt"), err_path = dir.file("stderr.txt");
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  REQUIRE(std::freopen(out_path.c_str(), "w", stdout) != nullptr);
  REQUIRE(std::freopen(err_path.c_str(), "w", stderr) != nullptr);
  const int rc = spgen_run::main<int32_t, float>(static_cast<int>(args.size()), argv.data(), info, invoke);
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  return {rc, read_text(out_path), read_text(err_path)};
}

const char* kMatrixA =
    "%%MatrixMarket matrix coordinate real general\n3 4 4\n1 1 1\n1 3 2\n3 2 3\n3 4 4\n";  // row 2 empty
const char* kVectorX = "%%MatrixMarket matrix array real general\n4 1\n1\n2\n3\n4\n";     // A x = (7, 0, 22)

std::vector<double> dense_values_of(const std::string& path) {
  const Coo t = spgen_run::read_tensor(path);
  std::vector<double> out(static_cast<size_t>(t.dims[0] * t.dims[1]));
  for (int64_t e = 0; e < t.nnz(); ++e)
    out[static_cast<size_t>(t.coord(e, 0) * t.dims[1] + t.coord(e, 1))] += t.vals[static_cast<size_t>(e)];
  return out;
}

}  // namespace

TEST_CASE("main: SpMV from files writes the right output, one timing line and A's pack time") {
  TempDir dir;
  const std::string a = dir.write("A.mtx", kMatrixA), x = dir.write("x.mtx", kVectorX), y = dir.file("y.mtx");
  const Result r = run_main(dir, spmv_info(false), spmv_assign,
                            {"--input", "A=" + a, "--input=x=" + x, "--output", "y=" + y, "--repeat", "3"});
  CHECK(r.rc == 0);
  CHECK(r.err == "");
  CHECK(r.out.rfind("time_ms median=", 0) == 0);
  CHECK(r.out.find("runs=3\npack_ms A=") != std::string::npos);  // x is dense: nothing to pack
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2);
  CHECK(read_text(y) == "%%MatrixMarket matrix array real general\n3 1\n7\n0\n22\n");

  const Result quiet =
      run_main(dir, spmv_info(false), spmv_assign, {"--input", "A=" + a, "--input", "x=" + x, "--quiet"});
  CHECK(quiet.rc == 0);
  CHECK(quiet.out == "");
}

TEST_CASE("main: errors exit with 1 and a message") {
  TempDir dir;
  const std::string a = dir.write("A.mtx", kMatrixA), x = dir.write("x.mtx", kVectorX);
  const auto info = spmv_info(false);

  Result r = run_main(dir, info, spmv_assign, {"--input", "A=" + a});
  CHECK(r.rc == 1);
  CHECK(r.err == "error: missing input x (give --input x=FILE or --input x=random)\n");

  r = run_main(dir, info, spmv_assign, {"--input", "A=" + a, "--input", "x=" + x, "--input", "B=random"});
  CHECK(r.rc == 1);
  CHECK(r.err.find("unknown tensor B in --input; the kernel's tensors are: y, A, x") != std::string::npos);

  const std::string x5 = dir.write("x5.mtx", "%%MatrixMarket matrix array real general\n5 1\n1\n2\n3\n4\n5\n");
  r = run_main(dir, info, spmv_assign, {"--input", "A=" + a, "--input", "x=" + x5});
  CHECK(r.rc == 1);
  CHECK(r.err == "error: size of index j: A has 4 (mode 2) but x has 5 (mode 1)\n");

  r = run_main(dir, info, spmv_assign, {"--input", "A=" + a, "--input", "x=" + x, "--dim", "i=7"});
  CHECK(r.err == "error: size of index i: A has 3 (mode 1) but --dim sets 7\n");

  r = run_main(dir, info, spmv_assign, {"--input", "A=" + a, "--input", "x=" + x, "--repeat", "zero"});
  CHECK(r.rc == 1);
  CHECK(r.err.find("--repeat") != std::string::npos);
  r = run_main(dir, info, spmv_assign, {"--input", "A=" + a, "--input", "x=" + x, "--frobnicate"});
  CHECK(r.err.find("unknown option --frobnicate") != std::string::npos);

  r = run_main(dir, info, spmv_assign, {"--input", "A=" + a, "--input", "x=" + a});
  CHECK(r.rc == 1);
  CHECK(r.err == "error: x: " + a + " holds an order-2 tensor but x has 1 modes\n");

  const std::string broken = dir.write("broken.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 1\n1 9 1\n");
  r = run_main(dir, info, spmv_assign, {"--input", "A=" + broken, "--input", "x=" + x});
  CHECK(r.rc == 1);
  CHECK(r.err.find(broken + ":3: error: column index 9 is out of range") == 0);

  // A kernel that throws std::bad_alloc gets a readable message too.
  r = run_main(dir, info, [](Run&) { throw std::bad_alloc(); }, {"--input", "A=" + a, "--input", "x=" + x});
  CHECK(r.rc == 1);
  CHECK(r.err.find("error: out of memory") == 0);
}

TEST_CASE("main: random inputs default unfixed sizes to 32 with a note; --save-input reproduces them") {
  TempDir dir;
  const std::string y1 = dir.file("y1.mtx"), y2 = dir.file("y2.mtx"), a = dir.file("A.mtx"), x = dir.file("x.mtx");
  const Result r = run_main(dir, spmv_info(false), spmv_assign,
                            {"--input", "A=random", "--input", "x=random", "--dim", "i=10", "--density", "0.5",
                             "--seed", "5", "--output", "y=" + y1, "--save-input", "A=" + a, "--save-input", "x=" + x});
  CHECK(r.rc == 0);
  CHECK(r.err == "note: size of index j is not fixed by any input; using 32 (set it with --dim j=N)\n");
  const Coo saved_a = spgen_run::read_tensor(a);
  CHECK(saved_a.dims == std::vector<int64_t>{10, 32});
  CHECK(saved_a.nnz() > 100);  // about 160 of 320
  CHECK(saved_a.nnz() < 220);
  CHECK(read_text(x).rfind("%%MatrixMarket matrix array real general\n32 1\n", 0) == 0);

  const Result again =
      run_main(dir, spmv_info(false), spmv_assign, {"--input", "A=" + a, "--input", "x=" + x, "--output", "y=" + y2});
  CHECK(again.rc == 0);
  CHECK(read_text(y1) == read_text(y2));
}

TEST_CASE("main: a += kernel with --repeat 3 gives the single-run result") {
  TempDir dir;
  const std::string a = dir.write("A.mtx", kMatrixA), x = dir.write("x.mtx", kVectorX);
  const std::string y0 = dir.write("y0.mtx", "%%MatrixMarket matrix array real general\n3 1\n100\n200\n300\n");
  const auto info = spmv_info(true);
  const auto spmv_add = [](Run& r) { spmv(r, true); };
  int calls = 0;
  const auto counting_add = [&](Run& r) {
    ++calls;
    spmv(r, true);
  };
  const std::string once = dir.file("once.mtx"), thrice = dir.file("thrice.mtx");
  CHECK(run_main(dir, info, spmv_add, {"--input", "A=" + a, "--input", "x=" + x, "--input", "y=" + y0, "--output",
                                       "y=" + once})
            .rc == 0);
  CHECK(run_main(dir, info, counting_add,
                 {"--input", "A=" + a, "--input", "x=" + x, "--input", "y=" + y0, "--output", "y=" + thrice,
                  "--repeat", "3"})
            .rc == 0);
  CHECK(calls == 4);  // one warmup run by default
  CHECK(dense_values_of(once) == std::vector<double>{107, 200, 322});
  CHECK(read_text(thrice) == read_text(once));

  // Without an initial y, the output starts at zero.
  const std::string zero_start = dir.file("zero.mtx");
  CHECK(run_main(dir, info, spmv_add, {"--input", "A=" + a, "--input", "x=" + x, "--output", "y=" + zero_start,
                                       "--repeat", "2", "--warmup", "2"})
            .rc == 0);
  CHECK(dense_values_of(zero_start) == std::vector<double>{7, 0, 22});

  // An `=` kernel takes no initial output.
  const Result r = run_main(dir, spmv_info(false), spmv_assign,
                            {"--input", "A=" + a, "--input", "x=" + x, "--input", "y=" + y0});
  CHECK(r.rc == 1);
  CHECK(r.err.find("only += kernels take an initial output") != std::string::npos);
}

TEST_CASE("main: a sparse output sharing an input's structure") {
  // B(i,j) = A(i,j) * 2, B stored like A (CSR) and sharing its pos/crd.
  TempDir dir;
  const spgen_run::KernelInfo info = {
      "scale",
      {"i", "j"},
      {
          {"B", true, {0, 1}, {Level::Dense, Level::Compressed}, {0, 1}, 1},
          {"A", false, {0, 1}, {Level::Dense, Level::Compressed}, {0, 1}, -1},
      },
      false,
  };
  const auto scale = [](Run& r) {
    CHECK(r.pos(0, 1) == r.pos(1, 1));
    CHECK(r.crd(0, 1) == r.crd(1, 1));
    const int32_t nnz = r.pos(1, 1)[r.dim(0)];
    for (int32_t p = 0; p < nnz; ++p) r.values(0)[p] = 2 * r.values(1)[p];
  };
  const std::string a = dir.write("A.mtx", kMatrixA), b = dir.file("B.mtx");
  const Result r = run_main(dir, info, scale, {"--input", "A=" + a, "--output", "B=" + b});
  CHECK(r.rc == 0);
  CHECK(read_text(b) == "%%MatrixMarket matrix coordinate real general\n3 4 4\n1 1 2\n1 3 4\n3 2 6\n3 4 8\n");

  // A sparse output that shares nothing is not supported yet.
  spgen_run::KernelInfo alone = info;
  alone.tensors[0].shares_structure_with = -1;
  const Result unsupported = run_main(dir, alone, scale, {"--input", "A=" + a});
  CHECK(unsupported.rc == 1);
  CHECK(unsupported.err.find("output format not supported by spgen run yet") != std::string::npos);
}

TEST_CASE("main: a .tns input only bounds its sizes from below") {
  TempDir dir;
  // The largest row coordinate is 2, but --dim makes i 3: not a conflict.
  const std::string a = dir.write("A.tns", "1 1 1\n2 4 2\n"), x = dir.write("x.mtx", kVectorX), y = dir.file("y.mtx");
  const Result r = run_main(dir, spmv_info(false), spmv_assign,
                            {"--input", "A=" + a, "--input", "x=" + x, "--dim", "i=3", "--output", "y=" + y});
  CHECK(r.rc == 0);
  CHECK(dense_values_of(y) == std::vector<double>{1, 8, 0});
  const Result small =
      run_main(dir, spmv_info(false), spmv_assign, {"--input", "A=" + a, "--input", "x=" + x, "--dim", "i=1"});
  CHECK(small.rc == 1);
  CHECK(small.err.find("size of index i: A has coordinates up to 2 (mode 1) but --dim sets 1") != std::string::npos);
}

// ------------------------------------------------------------------------------------
// The driver's main with COO, ELL and ragged inputs
// ------------------------------------------------------------------------------------

namespace {

// y = A x with A in the given format (y and x dense).
spgen_run::KernelInfo spmv_info_in(const std::string& name, std::vector<Level> levels, std::vector<int64_t> widths) {
  return {
      name,
      {"i", "j"},
      {
          {"y", true, {0}, {Level::Dense}, {0}, -1},
          {"A", false, {0, 1}, std::move(levels), {0, 1}, -1, std::move(widths)},
          {"x", false, {1}, {Level::Dense}, {0}, -1, {}},
      },
      false,
  };
}

// COO: y[crd0[p]] += vals[p] * x[crd1[p]], y zeroed first.
void coo_spmv(Run& r) {
  REQUIRE(r.pos(1, 1) == nullptr);
  const int32_t* pos = r.pos(1, 0);
  const int32_t* rows = r.crd(1, 0);
  const int32_t* cols = r.crd(1, 1);
  float* y = r.values(0);
  const float* a = r.values(1);
  const float* x = r.values(2);
  for (int64_t i = 0; i < r.dim(0); ++i) y[i] = 0;
  for (int32_t p = pos[0]; p < pos[1]; ++p) y[rows[p]] += a[p] * x[cols[p]];
}

// ELL: row i owns positions i*W .. i*W+W-1, padding crd -1.
void ell_spmv(Run& r) {
  REQUIRE(r.pos(1, 1) == nullptr);
  const int64_t w = r.width(1, 1);
  REQUIRE(w >= 1);
  const int32_t* crd = r.crd(1, 1);
  const float* a = r.values(1);
  const float* x = r.values(2);
  for (int64_t i = 0; i < r.dim(0); ++i) {
    float sum = 0;
    for (int64_t p = i * w; p < (i + 1) * w && crd[p] >= 0; ++p) sum += a[p] * x[crd[p]];
    r.values(0)[i] = sum;
  }
}

// Ragged: row i stores columns 0 .. pos[i+1]-pos[i]-1.
void ragged_spmv(Run& r) {
  REQUIRE(r.crd(1, 1) == nullptr);
  const int32_t* pos = r.pos(1, 1);
  const float* a = r.values(1);
  const float* x = r.values(2);
  for (int64_t i = 0; i < r.dim(0); ++i) {
    float sum = 0;
    for (int32_t p = pos[i]; p < pos[i + 1]; ++p) sum += a[p] * x[p - pos[i]];
    r.values(0)[i] = sum;
  }
}

}  // namespace

TEST_CASE("main: COO SpMV from files, duplicates summed") {
  TempDir dir;
  const std::string a = dir.write("A.mtx",
                                  "%%MatrixMarket matrix coordinate real general\n3 4 5\n3 4 4\n1 1 1\n1 3 2\n"
                                  "3 2 3\n1 1 0.5\n");
  const std::string x = dir.write("x.mtx", kVectorX), y = dir.file("y.mtx");
  const auto info = spmv_info_in("coo_spmv", {Level::CompressedNonUnique, Level::Singleton}, {});
  const Result r = run_main(dir, info, coo_spmv,
                            {"--input", "A=" + a, "--input", "x=" + x, "--output", "y=" + y, "--repeat", "2"});
  CHECK(r.rc == 0);
  CHECK(r.err == "");
  CHECK(r.out.find("runs=2\n") != std::string::npos);
  CHECK(read_text(y) == "%%MatrixMarket matrix array real general\n3 1\n7.5\n0\n22\n");
}

TEST_CASE("main: random COO, ELL and ragged inputs give the CSR result on the saved input") {
  struct Case {
    const char* name;
    std::vector<Level> levels;
    std::vector<int64_t> widths;
    void (*kernel)(Run&);
  };
  const std::vector<Case> cases = {
      {"coo", {Level::CompressedNonUnique, Level::Singleton}, {}, coo_spmv},
      {"ell", {Level::Dense, Level::SparseFixed}, {0, 4}, ell_spmv},
      {"ragged", {Level::Dense, Level::DenseVariable}, {}, ragged_spmv},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    TempDir dir;
    const std::string a = dir.file("A.mtx"), x = dir.file("x.mtx"), y1 = dir.file("y1.mtx"), y2 = dir.file("y2.mtx");
    const Result r = run_main(dir, spmv_info_in(c.name, c.levels, c.widths), c.kernel,
                              {"--input", "A=random", "--input", "x=random", "--dim", "i=10", "--dim", "j=32",
                               "--density", "0.5", "--seed", "9", "--save-input", "A=" + a, "--save-input", "x=" + x,
                               "--output", "y=" + y1, "--quiet"});
    CHECK(r.rc == 0);
    CHECK(r.err == "");
    const Coo saved = spgen_run::read_tensor(a);
    CHECK(saved.dims == std::vector<int64_t>{10, 32});
    if (c.widths.empty()) {
      CHECK(saved.nnz() > 100);  // about 160
    } else {
      CHECK(max_row_length(saved, 0, 1) == 4);  // rows of about 16 cut to the ELL width
      CHECK(saved.nnz() == 40);
    }
    const Result csr = run_main(dir, spmv_info(false), spmv_assign,
                                {"--input", "A=" + a, "--input", "x=" + x, "--output", "y=" + y2, "--quiet"});
    CHECK(csr.rc == 0);
    CHECK(read_text(y1) == read_text(y2));
  }
}

TEST_CASE("main: an ELL or COO output sharing its input's structure, with initial values") {
  // B(i,j) += 2 A(i,j), B sharing A's pos/crd; B starts from a file.
  struct Case {
    const char* name;
    std::vector<Level> levels;
    std::vector<int64_t> widths;
  };
  const std::vector<Case> cases = {
      {"ell", {Level::Dense, Level::SparseFixed}, {0, 3}},
      {"coo", {Level::CompressedNonUnique, Level::Singleton}, {}},
      {"ragged", {Level::Dense, Level::DenseVariable}, {}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    TempDir dir;
    const spgen_run::KernelInfo info = {
        "scale_add",
        {"i", "j"},
        {
            {"B", true, {0, 1}, c.levels, {0, 1}, 1, c.widths},
            {"A", false, {0, 1}, c.levels, {0, 1}, -1, c.widths},
        },
        true,
    };
    const auto scale_add = [](Run& r) {
      CHECK(r.crd(0, 1) == r.crd(1, 1));
      CHECK(r.width(0, 1) == r.width(1, 1));
      const size_t n = r.packed(1).vals.size();
      for (size_t p = 0; p < n; ++p) r.values(0)[p] += 2 * r.values(1)[p];
    };
    const std::string a = dir.write("A.mtx", kMatrixA), b = dir.file("B.mtx");
    const std::string b0 = dir.write("B0.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 1\n1 3 10\n");
    const Result r = run_main(dir, info, scale_add, {"--input", "A=" + a, "--input", "B=" + b0, "--output", "B=" + b});
    CHECK(r.rc == 0);
    CHECK(r.err == "");
    const EntryMap expected = {{{0, 0}, 2}, {{0, 2}, 14}, {{2, 1}, 6}, {{2, 3}, 8}};
    CHECK(entries_of(spgen_run::read_tensor(b), true) == expected);
    // A nonzero where A stores nothing: (2,1) in the file, in A's empty row (ELL: padding only).
    const std::string outside =
        dir.write("out.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 1\n2 1 1\n");
    const Result bad = run_main(dir, info, scale_add, {"--input", "A=" + a, "--input", "B=" + outside});
    CHECK(bad.rc == 1);
    CHECK(bad.err.find("nonzero outside the structure of A") != std::string::npos);
  }
}

TEST_CASE("main: a singleton level that is not below a compressed-nonunique one is an error") {
  TempDir dir;
  const std::string a = dir.write("A.mtx", kMatrixA), x = dir.write("x.mtx", kVectorX);
  const Result top = run_main(dir, spmv_info_in("bad", {Level::Singleton, Level::Singleton}, {}), coo_spmv,
                              {"--input", "A=" + a, "--input", "x=" + x});
  CHECK(top.rc == 1);
  CHECK(top.err ==
        "error: kernel description: tensor A: singleton level 0 must be directly below a compressed-nonunique or "
        "singleton level (it is the top level)\n");
  const Result no_width = run_main(dir, spmv_info_in("bad", {Level::Dense, Level::SparseFixed}, {}), ell_spmv,
                                   {"--input", "A=" + a, "--input", "x=" + x});
  CHECK(no_width.rc == 1);
  CHECK(no_width.err.find("sparse-fixed level 1 needs a width of at least 1") != std::string::npos);
  // A file whose rows are longer than the ELL width.
  const Result overflow = run_main(dir, spmv_info_in("ell", {Level::Dense, Level::SparseFixed}, {0, 1}), ell_spmv,
                                   {"--input", "A=" + a, "--input", "x=" + x});
  CHECK(overflow.rc == 1);
  CHECK(overflow.err == "error: sparse-fixed level 1: row 0 has 2 entries but the ELL width is 1\n");
}
