#include "tune/format_space.h"

#include <cmath>
#include <optional>

namespace spgen::tune {

using json = nlohmann::json;

namespace {

// Blocks pay where they are nearly full: at least half their stored values are entries (OSKI
// keeps blocks up to a fill ratio of about 2).
constexpr double kMinBlockFill = 0.5;
// ELL pads every row to the longest: worth a run while that at most doubles the stored entries.
constexpr double kMaxEllPadding = 2.0;
// DCSR skips empty rows without a loop iteration each: worth a run from a tenth of rows empty.
constexpr double kMinEmptyRowShare = 0.1;

// hyb's widest bucket: the rows up to it hold this share of all rows; longer ones are cut.
constexpr double kHybCoveredRows = 0.99;
constexpr int kHybMaxLog2Width = 10;

FormatChoice named(const std::string& name) { return {name, json{{"format", name}}}; }

// hyb: ELL buckets of 1, 2, 4, ... up to the width that holds 99 % of the rows (row_log2_histogram's
// bins are rows shorter than 2^b), each bucket scheduled by `auto` ([decompose, "auto"]).
// `lanes` > 0: the buckets' slots interleaved by that many rows (SELL-C), which auto walks in
// that many vector lanes.
std::optional<FormatChoice> hyb_choice(const std::string& tensor, const InputFeatures& f, int64_t lanes) {
  const std::vector<int64_t>& histogram = f.row_log2_histogram;
  int64_t rows = 0, covered = 0;
  for (int64_t n : histogram) rows += n;
  int widest = -1;
  for (size_t b = 0; b < histogram.size() && widest < 0; ++b) {
    covered += histogram[b];
    if (static_cast<double>(covered) >= kHybCoveredRows * static_cast<double>(rows)) widest = static_cast<int>(b);
  }
  if (rows == 0 || widest < 1) return std::nullopt;
  widest = std::min(widest, kHybMaxLog2Width);
  json buckets = json::array();
  for (int b = 0; b <= widest; ++b) buckets.push_back(int64_t{1} << b);
  json decompose = {{"op", "decompose"}, {"tensor", tensor}, {"format", "hyb"}, {"buckets", buckets}};
  if (lanes > 0) decompose["interleave"] = lanes;
  json schedule = json::array({decompose, "auto"});
  return FormatChoice{"hyb 1-" + std::to_string(int64_t{1} << widest) + (lanes > 0 ? " in " + std::to_string(lanes) + " lanes" : ""),
                      json{{"format", "csr"}}, schedule};
}

}  // namespace

std::vector<FormatChoice> format_choices(const std::string& tensor, int order, const InputFeatures* features, bool composed,
                                         int64_t lanes, const std::string& auto_decomposed) {
  if (order == 0) return {};
  FormatChoice standard = named(auto_input_format(order).name);  // what `spgen gen` stores
  if (order == 1) return {standard, named("dense")};
  if (order >= 3) return {standard, named("coo")};
  std::vector<FormatChoice> choices = {standard, named("csc")};
  if (!auto_decomposed.empty()) {
    choices.front().label = standard.label + ", " + auto_decomposed + " by auto";
    choices.insert(choices.begin() + 1, standard);
  }
  if (!features || features->dims.size() != 2 || features->nnz == 0) return choices;
  const double rows = static_cast<double>(features->dims[0]), nnz = static_cast<double>(features->nnz);
  if (features->empty_rows >= kMinEmptyRowShare * rows) choices.push_back(named("dcsr"));
  const int64_t width = static_cast<int64_t>(std::ceil(features->row_max));
  const bool ell_pays = width >= 1 && rows * static_cast<double>(width) <= kMaxEllPadding * nnz;
  if (ell_pays) choices.push_back({"ell " + std::to_string(width), json{{"format", "ell"}, {"width", width}}});
  const std::pair<int, double> blocks[] = {
      {2, features->block_fill_2}, {3, features->block_fill_3}, {4, features->block_fill_4}, {8, features->block_fill_8}};
  for (const auto& [r, fill] : blocks)
    if (fill >= kMinBlockFill)
      choices.push_back({"bsr " + std::to_string(r) + "x" + std::to_string(r), json{{"format", "bsr"}, {"block", {r, r}}}});
  if (composed) {
    if (std::optional<FormatChoice> hyb = hyb_choice(tensor, *features, 0)) choices.push_back(*hyb);
    if (lanes > 0)
      if (std::optional<FormatChoice> sell = hyb_choice(tensor, *features, lanes)) choices.push_back(*sell);
    // SELL-C-sigma, slices of a vector's lanes and of half of them (8 floats measured best on
    // the short-row graphs), sorted in windows of 64 slices (512 rows beat 64 on every graph it
    // wins, one thread; windows of thousands leave one thread the long rows: bench/RESULTS.md,
    // session 34).
    for (int64_t c : {lanes / 2, lanes}) {
      if (lanes <= 0 || c < 4) continue;
      json decompose = {{"op", "decompose"}, {"tensor", tensor}, {"format", "sell"}, {"interleave", c}, {"sigma", 64 * c}};
      choices.push_back({"sell " + std::to_string(c) + "-" + std::to_string(64 * c), json{{"format", "csr"}}, json::array({decompose, "auto"})});
    }
    // ELL of the longest row with its slots interleaved (SELL-C of one width): csr decomposed
    // into ell+coo whose coo part stays empty, each row's slots walked `lanes` rows to a vector.
    if (lanes > 0 && ell_pays) {
      json decompose = {{"op", "decompose"}, {"tensor", tensor}, {"format", "ell+coo"}, {"width", width}, {"interleave", lanes}};
      choices.push_back({"ell " + std::to_string(width) + " in " + std::to_string(lanes) + " lanes", json{{"format", "csr"}},
                         json::array({decompose, "auto"})});
    }
  }
  return choices;
}

SearchSpace build_format_space(const std::map<std::string, int>& orders, const std::map<std::string, InputFeatures>& features,
                               bool composed, int64_t lanes,
                               const std::function<bool(const std::string&, const FormatChoice&)>& compiles,
                               const std::map<std::string, std::string>& auto_decomposed) {
  SearchSpace space;
  for (const auto& [tensor, order] : orders) {
    auto known = features.find(tensor);
    auto decomposed = auto_decomposed.find(tensor);
    Knob knob{KnobKind::Format, "format " + tensor, 0, {}, {}, tensor};
    for (const FormatChoice& choice : format_choices(tensor, order, known == features.end() ? nullptr : &known->second, composed, lanes,
                                                     decomposed == auto_decomposed.end() ? "" : decomposed->second))
      if (knob.values.empty() || compiles(tensor, choice)) {  // (the default is the base's own)
        knob.values.push_back(json{{"entry", choice.entry}, {"schedule", choice.schedule}});
        knob.labels.push_back(choice.label);
      }
    if (knob.values.size() > 1) space.knobs.push_back(knob);
  }
  return space;
}

std::map<std::string, json> formats_at(const SearchSpace& space, const Point& point) {
  std::map<std::string, json> formats;
  for (size_t k = 0; k < space.knobs.size(); ++k)
    if (space.knobs[k].kind == KnobKind::Format)
      formats[space.knobs[k].tensor] = space.knobs[k].values[static_cast<size_t>(point[k])].at("entry");
  return formats;
}

json format_schedule(const SearchSpace& space, const Point& point) {
  json found = nullptr;
  for (size_t k = 0; k < space.knobs.size(); ++k)
    if (space.knobs[k].kind == KnobKind::Format) {
      const json& schedule = space.knobs[k].values[static_cast<size_t>(point[k])].at("schedule");
      if (schedule.is_null()) continue;
      // (a kernel decomposes one operand: a point composing two is refused when compiled)
      if (!found.is_null()) return "two inputs decomposed at once";
      found = schedule;
    }
  return found;
}

}  // namespace spgen::tune
