#include "tune/features.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace spgen::tune {

namespace {

// Stored entries per occupied r x r block, as a share of the block: 1 when every block is full.
// `t` is canonical (entries sorted by row, no duplicates), so a block row's entries are one run,
// and its occupied blocks are the distinct block columns in that run: memory follows the
// longest run, never the dimensions, and no table of all the blocks is built.
double block_fill(const spgen_ref::Tensor& t, int64_t r) {
  if (t.order() != 2 || t.nnz() == 0) return 0;
  std::vector<int64_t> columns;
  int64_t blocks = 0;
  for (size_t e = 0; e < t.nnz();) {
    const int64_t block_row = t.coords[2 * e] / r;
    columns.clear();
    for (; e < t.nnz() && t.coords[2 * e] / r == block_row; ++e) columns.push_back(t.coords[2 * e + 1] / r);
    std::sort(columns.begin(), columns.end());
    blocks += std::unique(columns.begin(), columns.end()) - columns.begin();
  }
  return static_cast<double>(t.nnz()) / (static_cast<double>(blocks) * static_cast<double>(r * r));
}

// The lengths of the runs of equal keys among key(0) .. key(n - 1), in order (sorted keys: the
// number of entries per distinct key).
template <class Key>
std::vector<int64_t> run_lengths(size_t n, Key key) {
  std::vector<int64_t> lengths;
  for (size_t e = 0; e < n;) {
    size_t end = e + 1;
    while (end < n && key(end) == key(e)) ++end;
    lengths.push_back(static_cast<int64_t>(end - e));
    e = end;
  }
  return lengths;
}

std::string hash_structure(const spgen_ref::Tensor& t) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](int64_t v) {
    for (int b = 0; b < 8; ++b) h = (h ^ static_cast<uint64_t>((v >> (8 * b)) & 0xff)) * 1099511628211ull;
  };
  for (int64_t d : t.dims) mix(d);
  for (int64_t c : t.coords) mix(c);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace

InputFeatures input_features(const spgen_ref::Tensor& given) {
  spgen_ref::Tensor t = spgen_ref::canonical(given);
  InputFeatures f;
  f.dims = t.dims;
  f.nnz = static_cast<int64_t>(t.nnz());
  f.structure_hash = hash_structure(t);
  if (t.order() == 0) return f;
  const int order = t.order();
  // Memory and time follow the stored entries, never the dimensions: a hypersparse matrix
  // (2 x 3 billion, one entry) is read in microseconds. The entries are sorted by row, so a
  // row's entries are one run; the empty rows are the rows no run names.
  const std::vector<int64_t> lengths =  // of the non-empty rows
      run_lengths(t.nnz(), [&](size_t e) { return t.coords[e * static_cast<size_t>(order)]; });
  const int64_t rows = t.dims[0];
  f.empty_rows = rows - static_cast<int64_t>(lengths.size());
  if (f.empty_rows > 0) f.row_log2_histogram.assign(1, f.empty_rows);
  double sum = 0, sum_sq = 0;
  for (int64_t n : lengths) {
    sum += static_cast<double>(n);
    sum_sq += static_cast<double>(n) * static_cast<double>(n);
    f.row_max = std::max(f.row_max, static_cast<double>(n));
    size_t bucket = static_cast<size_t>(std::floor(std::log2(static_cast<double>(n)))) + 1;
    if (f.row_log2_histogram.size() <= bucket) f.row_log2_histogram.resize(bucket + 1, 0);
    ++f.row_log2_histogram[bucket];
  }
  if (rows > 0) {
    f.row_mean = sum / static_cast<double>(rows);
    double variance = std::max(0.0, sum_sq / static_cast<double>(rows) - f.row_mean * f.row_mean);
    f.row_cv = f.row_mean > 0 ? std::sqrt(variance) / f.row_mean : 0;
  }
  if (order == 2) {
    std::vector<int64_t> cols(t.nnz());
    double band = 0;
    for (size_t e = 0; e < t.nnz(); ++e) {
      cols[e] = t.coords[2 * e + 1];
      band += std::fabs(static_cast<double>(t.coords[2 * e] - t.coords[2 * e + 1]));
    }
    std::sort(cols.begin(), cols.end());
    for (int64_t n : run_lengths(cols.size(), [&](size_t e) { return cols[e]; }))
      f.col_max = std::max(f.col_max, static_cast<double>(n));
    f.col_mean = t.dims[1] == 0 ? 0 : static_cast<double>(f.nnz) / static_cast<double>(t.dims[1]);
    f.bandwidth_mean = f.nnz ? band / static_cast<double>(f.nnz) : 0;
    f.block_fill_2 = block_fill(t, 2);
    f.block_fill_3 = block_fill(t, 3);
    f.block_fill_4 = block_fill(t, 4);
    f.block_fill_8 = block_fill(t, 8);
  }
  return f;
}

double static_split_imbalance(const spgen_ref::Tensor& t) {
  if (t.order() == 0 || t.dims[0] == 0 || t.nnz() == 0) return 0;
  const int64_t rows = t.dims[0];
  double worst = 0;
  for (int64_t parts : {2, 4, 8}) {
    // libgomp's static split: the first rows % parts blocks hold one row more.
    const int64_t base = rows / parts, extra = rows % parts;
    auto block_of = [&](int64_t row) {
      const int64_t long_rows = extra * (base + 1);
      return row < long_rows ? row / (base + 1) : extra + (row - long_rows) / std::max<int64_t>(base, 1);
    };
    std::vector<int64_t> entries(static_cast<size_t>(parts), 0);
    for (size_t e = 0; e < t.nnz(); ++e)
      ++entries[static_cast<size_t>(std::min(parts - 1, block_of(t.coords[e * static_cast<size_t>(t.order())])))];
    const double mean = static_cast<double>(t.nnz()) / static_cast<double>(parts);
    worst = std::max(worst, static_cast<double>(*std::max_element(entries.begin(), entries.end())) / mean);
  }
  return worst;
}

nlohmann::json InputFeatures::to_json() const {
  return {{"dims", dims},
          {"nnz", nnz},
          {"row_mean", row_mean},
          {"row_max", row_max},
          {"row_cv", row_cv},
          {"empty_rows", empty_rows},
          {"row_log2_histogram", row_log2_histogram},
          {"col_mean", col_mean},
          {"col_max", col_max},
          {"bandwidth_mean", bandwidth_mean},
          {"block_fill", {block_fill_2, block_fill_4, block_fill_8, block_fill_3}},
          {"structure_hash", structure_hash}};
}

InputFeatures InputFeatures::from_json(const nlohmann::json& j) {
  InputFeatures f;
  f.dims = j.at("dims").get<std::vector<int64_t>>();
  f.nnz = j.at("nnz").get<int64_t>();
  f.row_mean = j.at("row_mean").get<double>();
  f.row_max = j.at("row_max").get<double>();
  f.row_cv = j.at("row_cv").get<double>();
  f.empty_rows = j.at("empty_rows").get<int64_t>();
  f.row_log2_histogram = j.at("row_log2_histogram").get<std::vector<int64_t>>();
  f.col_mean = j.at("col_mean").get<double>();
  f.col_max = j.at("col_max").get<double>();
  f.bandwidth_mean = j.at("bandwidth_mean").get<double>();
  const auto fill = j.at("block_fill").get<std::vector<double>>();
  if (fill.size() >= 3) {  // (a database line written before 3x3 blocks were sampled has three)
    f.block_fill_2 = fill[0];
    f.block_fill_4 = fill[1];
    f.block_fill_8 = fill[2];
  }
  if (fill.size() >= 4) f.block_fill_3 = fill[3];
  f.structure_hash = j.at("structure_hash").get<std::string>();
  return f;
}

double feature_distance(const InputFeatures& a, const InputFeatures& b) {
  auto log1 = [](double v) { return std::log2(1 + std::max(0.0, v)); };
  double d = 0;
  d += std::fabs(log1(static_cast<double>(a.nnz)) - log1(static_cast<double>(b.nnz)));
  d += std::fabs(log1(a.dims.empty() ? 0 : static_cast<double>(a.dims[0])) - log1(b.dims.empty() ? 0 : static_cast<double>(b.dims[0])));
  d += std::fabs(log1(a.row_mean) - log1(b.row_mean));
  d += 2 * std::fabs(a.row_cv - b.row_cv) / (1 + a.row_cv + b.row_cv);
  return d;
}

}  // namespace spgen::tune
