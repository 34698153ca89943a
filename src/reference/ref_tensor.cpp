// Tensor files and random tensors for the reference checker. Independent of src/ on purpose.
#include "ref_tensor.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

namespace spgen_ref {

// ---------------------------------------------------------------------------------------------
// Random numbers: splitmix64 (Steele, Lea & Flood), chosen because it is tiny and gives the same
// bits everywhere, unlike std:: distributions.

uint64_t SplitMix64::next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double SplitMix64::uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t SplitMix64::below(uint64_t bound) {
    // Rejection keeps the result unbiased: 2^64 mod bound low values are drawn once too often.
    const uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        const uint64_t x = next();
        if (x >= threshold) return x % bound;
    }
}

namespace {

// ---------------------------------------------------------------------------------------------
// Small helpers

int64_t checked_product(const std::vector<int64_t>& dims, size_t first = 0) {
    int64_t product = 1;
    for (size_t m = first; m < dims.size(); ++m) {
        if (dims[m] < 0) throw std::invalid_argument("negative dimension");
        if (__builtin_mul_overflow(product, dims[m], &product))
            throw std::invalid_argument("tensor dimensions overflow 64-bit indices");
    }
    return product;
}

// Row-major coordinates of linear index `linear` over dims[first..].
void delinearize(int64_t linear, const std::vector<int64_t>& dims, size_t first, int64_t* out) {
    for (size_t m = dims.size(); m-- > first;) {
        out[m - first] = linear % dims[m];
        linear /= dims[m];
    }
}

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::vector<std::string_view> split_fields(std::string_view line) {
    std::vector<std::string_view> fields;
    size_t pos = 0;
    while (pos < line.size()) {
        while (pos < line.size() && std::isspace(static_cast<unsigned char>(line[pos]))) ++pos;
        size_t end = pos;
        while (end < line.size() && !std::isspace(static_cast<unsigned char>(line[end]))) ++end;
        if (end > pos) fields.push_back(line.substr(pos, end - pos));
        pos = end;
    }
    return fields;
}

bool parse_int(std::string_view text, int64_t& out) {
    if (!text.empty() && text[0] == '+') text.remove_prefix(1);
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}

bool parse_real(std::string_view text, double& out) {
    if (!text.empty() && text[0] == '+') text.remove_prefix(1);
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}

void push_entry(Tensor& t, std::initializer_list<int64_t> coords, double value) {
    t.coords.insert(t.coords.end(), coords.begin(), coords.end());
    t.vals.push_back(value);
}

// ---------------------------------------------------------------------------------------------
// Line-oriented reading with "path:line: message" errors

class LineReader {
public:
    explicit LineReader(const std::string& path) : path_(path), in_(path) {
        if (!in_) throw std::runtime_error(path + ":0: cannot open file");
    }

    bool next(std::string& line) {
        if (!std::getline(in_, line)) return false;
        ++number_;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return true;
    }

    // Next line that is neither blank nor a comment (comment_char at its start).
    bool next_data(std::string& line, char comment_char) {
        while (next(line)) {
            const size_t first = line.find_first_not_of(" \t");
            if (first != std::string::npos && line[first] != comment_char) return true;
        }
        return false;
    }

    [[noreturn]] void fail(const std::string& message) const {
        throw std::runtime_error(path_ + ":" + std::to_string(number_) + ": " + message);
    }

    int64_t parse_index(std::string_view field, int64_t extent, const char* what) const {
        int64_t value = 0;
        if (!parse_int(field, value)) fail(std::string("bad ") + what + " '" + std::string(field) + "'");
        if (value < 1 || value > extent)
            fail(std::string(what) + " " + std::to_string(value) + " outside 1.." + std::to_string(extent));
        return value - 1;
    }

    double parse_value(std::string_view field, bool integer) const {
        if (integer) {
            int64_t value = 0;
            if (!parse_int(field, value)) fail("bad integer value '" + std::string(field) + "'");
            return static_cast<double>(value);
        }
        double value = 0;
        if (!parse_real(field, value)) fail("bad real value '" + std::string(field) + "'");
        return value;
    }

private:
    std::string path_;
    std::ifstream in_;
    size_t number_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Matrix Market

enum class MtxField { Real, Integer, Pattern };
enum class MtxSymmetry { General, Symmetric, SkewSymmetric };

struct MtxHeader {
    bool array = false;
    MtxField field = MtxField::Real;
    MtxSymmetry symmetry = MtxSymmetry::General;
};

MtxHeader parse_banner(const LineReader& reader, const std::string& line) {
    const auto fields = split_fields(line);
    if (fields.size() != 5 || lowercase(fields[0]) != "%%matrixmarket")
        reader.fail("expected '%%MatrixMarket matrix <format> <field> <symmetry>'");
    if (lowercase(fields[1]) != "matrix") reader.fail("only 'matrix' objects are supported");

    MtxHeader header;
    const std::string format = lowercase(fields[2]), field = lowercase(fields[3]),
                      symmetry = lowercase(fields[4]);
    if (format == "array") header.array = true;
    else if (format != "coordinate") reader.fail("unknown format '" + format + "'");

    if (field == "integer") header.field = MtxField::Integer;
    else if (field == "pattern") header.field = MtxField::Pattern;
    else if (field != "real" && field != "double") reader.fail("unsupported field '" + field + "'");
    if (header.array && header.field == MtxField::Pattern) reader.fail("an array cannot be 'pattern'");

    if (symmetry == "symmetric") header.symmetry = MtxSymmetry::Symmetric;
    else if (symmetry == "skew-symmetric") header.symmetry = MtxSymmetry::SkewSymmetric;
    else if (symmetry != "general") reader.fail("unsupported symmetry '" + symmetry + "'");
    return header;
}

std::vector<int64_t> parse_size_line(LineReader& reader, size_t expected_fields) {
    std::string line;
    if (!reader.next_data(line, '%')) reader.fail("missing size line");
    const auto fields = split_fields(line);
    if (fields.size() != expected_fields)
        reader.fail("size line needs " + std::to_string(expected_fields) + " numbers");
    std::vector<int64_t> sizes;
    for (auto field : fields) {
        int64_t value = 0;
        if (!parse_int(field, value) || value < 0) reader.fail("bad size '" + std::string(field) + "'");
        sizes.push_back(value);
    }
    return sizes;
}

void require_square(const LineReader& reader, const MtxHeader& header, int64_t rows, int64_t cols) {
    if (header.symmetry != MtxSymmetry::General && rows != cols)
        reader.fail("a symmetric or skew-symmetric matrix must be square");
}

Tensor read_mtx_coordinate(LineReader& reader, const MtxHeader& header) {
    const auto sizes = parse_size_line(reader, 3);
    const int64_t rows = sizes[0], cols = sizes[1], declared = sizes[2];
    require_square(reader, header, rows, cols);

    Tensor t;
    t.dims = {rows, cols};
    const size_t fields_per_entry = header.field == MtxField::Pattern ? 2 : 3;
    int64_t count = 0;
    std::string line;
    while (reader.next_data(line, '%')) {
        if (count == declared) reader.fail("more entries than the " + std::to_string(declared) + " declared");
        const auto fields = split_fields(line);
        if (fields.size() != fields_per_entry)
            reader.fail("expected " + std::to_string(fields_per_entry) + " fields in an entry");
        const int64_t i = reader.parse_index(fields[0], rows, "row");
        const int64_t j = reader.parse_index(fields[1], cols, "column");
        const double v = header.field == MtxField::Pattern
                             ? 1.0
                             : reader.parse_value(fields[2], header.field == MtxField::Integer);
        if (header.symmetry == MtxSymmetry::SkewSymmetric && i == j)
            reader.fail("diagonal entry in a skew-symmetric matrix");
        push_entry(t, {i, j}, v);
        if (header.symmetry == MtxSymmetry::Symmetric && i != j) push_entry(t, {j, i}, v);
        if (header.symmetry == MtxSymmetry::SkewSymmetric) push_entry(t, {j, i}, -v);
        ++count;
    }
    if (count < declared)
        reader.fail("expected " + std::to_string(declared) + " entries, found " + std::to_string(count));
    return t;
}

// Column-major values; symmetric files hold the lower triangle, skew-symmetric the strict one.
Tensor read_mtx_array(LineReader& reader, const MtxHeader& header) {
    const auto sizes = parse_size_line(reader, 2);
    const int64_t rows = sizes[0], cols = sizes[1];
    require_square(reader, header, rows, cols);
    std::vector<double> dense(static_cast<size_t>(checked_product({rows, cols})), 0.0);

    std::string line;
    for (int64_t j = 0; j < cols; ++j) {
        const int64_t first_row = header.symmetry == MtxSymmetry::General         ? 0
                                  : header.symmetry == MtxSymmetry::Symmetric     ? j
                                                                                  : j + 1;
        for (int64_t i = first_row; i < rows; ++i) {
            if (!reader.next_data(line, '%')) reader.fail("file ends before all array values");
            const auto fields = split_fields(line);
            if (fields.size() != 1) reader.fail("expected one value per line in an array");
            const double v = reader.parse_value(fields[0], header.field == MtxField::Integer);
            dense[static_cast<size_t>(i * cols + j)] = v;
            if (header.symmetry == MtxSymmetry::Symmetric) dense[static_cast<size_t>(j * cols + i)] = v;
            if (header.symmetry == MtxSymmetry::SkewSymmetric) dense[static_cast<size_t>(j * cols + i)] = -v;
        }
    }
    if (reader.next_data(line, '%')) reader.fail("more values than the array holds");

    Tensor t;
    t.dims = {rows, cols};
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) push_entry(t, {i, j}, dense[static_cast<size_t>(i * cols + j)]);
    return t;
}

Tensor read_mtx(const std::string& path) {
    LineReader reader(path);
    std::string line;
    if (!reader.next(line)) reader.fail("empty file");
    const MtxHeader header = parse_banner(reader, line);
    return header.array ? read_mtx_array(reader, header) : read_mtx_coordinate(reader, header);
}

// ---------------------------------------------------------------------------------------------
// FROSTT .tns

Tensor read_tns(const std::string& path) {
    LineReader reader(path);
    Tensor t;
    size_t order = 0;
    bool have_order = false;
    std::string line;
    while (reader.next_data(line, '#')) {
        const auto fields = split_fields(line);
        if (!have_order) {
            if (fields.size() < 2) reader.fail("an entry needs at least one coordinate and a value");
            order = fields.size() - 1;
            have_order = true;
            t.dims.assign(order, 0);
        }
        if (fields.size() != order + 1)
            reader.fail("expected " + std::to_string(order + 1) + " fields like the first entry, found " +
                        std::to_string(fields.size()));
        for (size_t m = 0; m < order; ++m) {
            const int64_t c = reader.parse_index(fields[m], std::numeric_limits<int64_t>::max(), "coordinate");
            t.coords.push_back(c);
            t.dims[m] = std::max(t.dims[m], c + 1);
        }
        t.vals.push_back(reader.parse_value(fields[order], false));
    }
    if (!have_order) reader.fail("no entries, so the tensor's order is unknown");
    return t;
}

bool starts_with_mtx_banner(const std::string& path) {
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    return lowercase(first).rfind("%%matrixmarket", 0) == 0;
}

// ---------------------------------------------------------------------------------------------
// Writing

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Order <= 2 seen as a matrix: vectors are n x 1, scalars 1 x 1.
int64_t matrix_rows(const Tensor& t) { return t.order() >= 1 ? t.dims[0] : 1; }
int64_t matrix_cols(const Tensor& t) { return t.order() == 2 ? t.dims[1] : 1; }
int64_t entry_row(const Tensor& t, size_t e) { return t.order() >= 1 ? t.coords[e * t.order()] : 0; }
int64_t entry_col(const Tensor& t, size_t e) { return t.order() == 2 ? t.coords[e * 2 + 1] : 0; }

void write_mtx_array(std::FILE* f, const Tensor& t) {
    const int64_t rows = matrix_rows(t), cols = matrix_cols(t);
    std::vector<double> column_major(static_cast<size_t>(checked_product({rows, cols})), 0.0);
    for (size_t e = 0; e < t.nnz(); ++e)
        column_major[static_cast<size_t>(entry_col(t, e) * rows + entry_row(t, e))] += t.vals[e];
    std::fprintf(f, "%%%%MatrixMarket matrix array real general\n%lld %lld\n", static_cast<long long>(rows),
                 static_cast<long long>(cols));
    for (double v : column_major) std::fprintf(f, "%.17g\n", v);
}

void write_mtx_coordinate(std::FILE* f, const Tensor& t) {
    std::fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n%lld %lld %zu\n",
                 static_cast<long long>(matrix_rows(t)), static_cast<long long>(matrix_cols(t)), t.nnz());
    for (size_t e = 0; e < t.nnz(); ++e)
        std::fprintf(f, "%lld %lld %.17g\n", static_cast<long long>(entry_row(t, e) + 1),
                     static_cast<long long>(entry_col(t, e) + 1), t.vals[e]);
}

void write_tns_line(std::FILE* f, const int64_t* coords, int order, double value) {
    for (int m = 0; m < order; ++m) std::fprintf(f, "%lld ", static_cast<long long>(coords[m] + 1));
    std::fprintf(f, "%.17g\n", value);
}

void write_tns_dense(std::FILE* f, const Tensor& t) {
    std::vector<double> row_major(static_cast<size_t>(checked_product(t.dims)), 0.0);
    for (size_t e = 0; e < t.nnz(); ++e) {
        int64_t linear = 0;
        for (int m = 0; m < t.order(); ++m) linear = linear * t.dims[m] + t.coords[e * t.order() + m];
        row_major[static_cast<size_t>(linear)] += t.vals[e];
    }
    std::vector<int64_t> coords(t.dims.size());
    for (size_t linear = 0; linear < row_major.size(); ++linear) {
        delinearize(static_cast<int64_t>(linear), t.dims, 0, coords.data());
        write_tns_line(f, coords.data(), t.order(), row_major[linear]);
    }
}

// .tns has no header: the dims are the largest coordinates, so make sure the last one is there.
void write_tns_sparse(std::FILE* f, const Tensor& t) {
    const int order = t.order();
    for (size_t e = 0; e < t.nnz(); ++e) write_tns_line(f, &t.coords[e * order], order, t.vals[e]);
    std::vector<int64_t> corner(t.dims);
    for (auto& c : corner) c -= 1;
    const bool has_corner = t.nnz() > 0 && std::equal(corner.begin(), corner.end(), &t.coords[(t.nnz() - 1) * order]);
    if (!has_corner) write_tns_line(f, corner.data(), order, 0.0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public entry points

Tensor read_tensor(const std::string& path) {
    if (ends_with(path, ".tns")) return read_tns(path);
    if (ends_with(path, ".mtx") || starts_with_mtx_banner(path)) return read_mtx(path);
    return read_tns(path);
}

void write_tensor(const std::string& path, const Tensor& tensor, bool dense) {
    const Tensor t = canonical(tensor);
    const bool as_tns = t.order() >= 3;
    if (as_tns && ends_with(path, ".mtx"))
        throw std::invalid_argument(path + ": an order-" + std::to_string(t.order()) + " tensor cannot be .mtx");
    if (!as_tns && ends_with(path, ".tns"))
        throw std::invalid_argument(path + ": order <= 2 tensors are written as Matrix Market, not .tns");
    if (as_tns && checked_product(t.dims) == 0)
        throw std::invalid_argument(path + ": a .tns file cannot hold a tensor with a zero dimension");

    File file(std::fopen(path.c_str(), "w"));
    if (!file) throw std::runtime_error(path + ": cannot open for writing");
    if (as_tns) dense ? write_tns_dense(file.get(), t) : write_tns_sparse(file.get(), t);
    else dense ? write_mtx_array(file.get(), t) : write_mtx_coordinate(file.get(), t);
    if (std::ferror(file.get()) || std::fclose(file.release()) != 0)
        throw std::runtime_error(path + ": write failed");
}

Tensor canonical(const Tensor& tensor) {
    const size_t order = tensor.dims.size();
    if (tensor.coords.size() != tensor.nnz() * order)
        throw std::invalid_argument("tensor has " + std::to_string(tensor.coords.size()) + " coordinates for " +
                                    std::to_string(tensor.nnz()) + " entries of order " + std::to_string(order));
    for (size_t e = 0; e < tensor.nnz(); ++e)
        for (size_t m = 0; m < order; ++m) {
            const int64_t c = tensor.coords[e * order + m];
            if (c < 0 || c >= tensor.dims[m])
                throw std::invalid_argument("coordinate " + std::to_string(c + 1) + " outside 1.." +
                                            std::to_string(tensor.dims[m]) + " in mode " + std::to_string(m + 1));
        }

    auto first = [&](size_t e) { return tensor.coords.data() + e * order; };  // entry e's coordinates
    auto last = [&](size_t e) { return first(e) + order; };
    auto less = [&](size_t a, size_t b) { return std::lexicographical_compare(first(a), last(a), first(b), last(b)); };
    std::vector<size_t> by_coords(tensor.nnz());
    std::iota(by_coords.begin(), by_coords.end(), size_t{0});
    // Most tensors arrive sorted already; a stable order keeps duplicate sums reproducible.
    if (!std::is_sorted(by_coords.begin(), by_coords.end(), less))
        std::stable_sort(by_coords.begin(), by_coords.end(), less);

    Tensor out;
    out.dims = tensor.dims;
    for (size_t e : by_coords) {
        const bool duplicate =
            out.nnz() > 0 && std::equal(first(e), last(e), out.coords.end() - static_cast<std::ptrdiff_t>(order));
        if (duplicate) {
            out.vals.back() += tensor.vals[e];
        } else {
            out.coords.insert(out.coords.end(), first(e), last(e));
            out.vals.push_back(tensor.vals[e]);
        }
    }
    return out;
}

Tensor random_dense(const std::vector<int64_t>& dims, uint64_t seed) {
    SplitMix64 rng(seed);
    Tensor t;
    t.dims = dims;
    const int64_t size = checked_product(dims);
    t.coords.resize(static_cast<size_t>(size) * dims.size());
    t.vals.resize(static_cast<size_t>(size));
    for (int64_t linear = 0; linear < size; ++linear) {
        delinearize(linear, dims, 0, t.coords.data() + static_cast<size_t>(linear) * dims.size());
        t.vals[static_cast<size_t>(linear)] = rng.uniform_pm1();
    }
    return t;
}

namespace {

// Expected row lengths; stochastic rounding keeps the mean right even below one per row.
std::vector<int64_t> random_row_lengths(int64_t rows, int64_t row_size, double density, RandomShape shape,
                                        SplitMix64& rng) {
    std::vector<double> expected(static_cast<size_t>(rows), density * static_cast<double>(row_size));
    if (shape.skewed && rows > 0) {
        // Zipf-like weights 1/(rank+1)^0.9 over a random ranking of the rows, same total.
        std::vector<int64_t> rank(static_cast<size_t>(rows));
        std::iota(rank.begin(), rank.end(), int64_t{0});
        for (int64_t r = rows - 1; r > 0; --r)
            std::swap(rank[static_cast<size_t>(r)], rank[rng.below(static_cast<uint64_t>(r) + 1)]);
        double weight_sum = 0;
        for (int64_t r = 0; r < rows; ++r) weight_sum += std::pow(static_cast<double>(r + 1), -0.9);
        const double total = density * static_cast<double>(row_size) * static_cast<double>(rows);
        for (int64_t r = 0; r < rows; ++r)
            expected[static_cast<size_t>(r)] =
                total * std::pow(static_cast<double>(rank[static_cast<size_t>(r)] + 1), -0.9) / weight_sum;
    }

    std::vector<int64_t> lengths(static_cast<size_t>(rows));
    for (size_t r = 0; r < lengths.size(); ++r) {
        const double rounded = std::floor(expected[r] + rng.uniform01());
        lengths[r] = static_cast<int64_t>(std::min(rounded, static_cast<double>(row_size)));
    }
    if (shape.empty_rows && rows >= 2) {
        // Exactly max(1, rows/4) distinct rows, by a partial Fisher-Yates shuffle.
        std::vector<int64_t> order(static_cast<size_t>(rows));
        std::iota(order.begin(), order.end(), int64_t{0});
        const int64_t empty = std::max<int64_t>(1, rows / 4);
        for (int64_t k = 0; k < empty; ++k) {
            const auto pick = static_cast<size_t>(k) + rng.below(static_cast<uint64_t>(rows - k));
            std::swap(order[static_cast<size_t>(k)], order[pick]);
            lengths[static_cast<size_t>(order[static_cast<size_t>(k)])] = 0;
        }
    }
    if (shape.dense_row && rows > 0) lengths[rng.below(static_cast<uint64_t>(rows))] = row_size;
    return lengths;
}

// `count` distinct values of [0, n), sorted.
std::vector<int64_t> sample_sorted(int64_t count, int64_t n, SplitMix64& rng) {
    std::vector<int64_t> picked;
    if (count >= n) {
        picked.resize(static_cast<size_t>(n));
        std::iota(picked.begin(), picked.end(), int64_t{0});
    } else if (2 * count > n) {
        // Selection sampling (Knuth's algorithm S): one pass, already sorted.
        int64_t remaining = count;
        for (int64_t c = 0; c < n && remaining > 0; ++c)
            if (static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - c))) < remaining) {
                picked.push_back(c);
                --remaining;
            }
    } else {
        // Sparse rows: draw until enough distinct values (insert() results do not depend on hashing).
        std::unordered_set<int64_t> seen;
        while (static_cast<int64_t>(seen.size()) < count) {
            const auto c = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n)));
            if (seen.insert(c).second) picked.push_back(c);
        }
        std::sort(picked.begin(), picked.end());
    }
    return picked;
}

}  // namespace

Tensor random_sparse(const std::vector<int64_t>& dims, double density, uint64_t seed, RandomShape shape) {
    if (!(density >= 0.0 && density <= 1.0)) throw std::invalid_argument("density must lie in [0, 1]");
    SplitMix64 rng(seed);
    Tensor t;
    t.dims = dims;
    if (dims.empty()) {
        if (rng.uniform01() < density) t.vals.push_back(rng.uniform_pm1());
        return t;
    }
    checked_product(dims);
    const int64_t rows = dims[0];
    const int64_t row_size = checked_product(dims, 1);  // 1 for vectors: each row is one element
    const auto lengths = random_row_lengths(rows, row_size, density, shape, rng);

    std::vector<int64_t> coords(dims.size());
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t within : sample_sorted(lengths[static_cast<size_t>(r)], row_size, rng)) {
            coords[0] = r;
            delinearize(within, dims, 1, coords.data() + 1);
            t.coords.insert(t.coords.end(), coords.begin(), coords.end());
        }
    }
    t.vals.resize(t.coords.size() / dims.size());
    for (double& v : t.vals) v = rng.uniform_pm1();
    return t;
}

Tensor squeezed(const Tensor& t, size_t order, const std::string& name) {
    const size_t have = t.dims.size();
    bool ok = have >= order;
    for (size_t m = order; ok && m < have; ++m) ok = t.dims[m] == 1;
    if (!ok)
        throw std::runtime_error("tensor '" + name + "' has order " + std::to_string(have) + " but is used with " +
                                 std::to_string(order) + " indices");
    if (have == order) return t;
    Tensor out;
    out.dims.assign(t.dims.begin(), t.dims.begin() + static_cast<std::ptrdiff_t>(order));
    out.vals = t.vals;
    for (size_t e = 0; e < t.nnz(); ++e)
        for (size_t m = 0; m < order; ++m) out.coords.push_back(t.coords[e * have + m]);
    return out;
}

}  // namespace spgen_ref
