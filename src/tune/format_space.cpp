#include "tune/format_space.h"

#include <cmath>

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

FormatChoice named(const std::string& name) { return {name, json{{"format", name}}}; }

}  // namespace

std::vector<FormatChoice> format_choices(int order, const InputFeatures* features) {
  std::vector<FormatChoice> choices;
  if (order == 1) return {named("sv"), named("dense")};
  if (order >= 3) return {named("csf"), named("coo")};
  if (order != 2) return {};
  choices = {named("csr"), named("csc")};
  if (!features || features->dims.size() != 2 || features->nnz == 0) return choices;
  const double rows = static_cast<double>(features->dims[0]), nnz = static_cast<double>(features->nnz);
  if (features->empty_rows >= kMinEmptyRowShare * rows) choices.push_back(named("dcsr"));
  const int64_t width = static_cast<int64_t>(std::ceil(features->row_max));
  if (width >= 1 && rows * static_cast<double>(width) <= kMaxEllPadding * nnz)
    choices.push_back({"ell " + std::to_string(width), json{{"format", "ell"}, {"width", width}}});
  const std::pair<int, double> blocks[] = {{2, features->block_fill_2}, {4, features->block_fill_4}, {8, features->block_fill_8}};
  for (const auto& [r, fill] : blocks)
    if (fill >= kMinBlockFill)
      choices.push_back({"bsr " + std::to_string(r) + "x" + std::to_string(r), json{{"format", "bsr"}, {"block", {r, r}}}});
  return choices;
}

SearchSpace build_format_space(const std::map<std::string, int>& orders, const std::map<std::string, InputFeatures>& features,
                               const std::function<bool(const std::string&, const json&)>& compiles) {
  SearchSpace space;
  for (const auto& [tensor, order] : orders) {
    auto known = features.find(tensor);
    Knob knob{KnobKind::Format, "format " + tensor, 0, {}, {}, tensor};
    for (const FormatChoice& choice : format_choices(order, known == features.end() ? nullptr : &known->second))
      if (knob.values.empty() || compiles(tensor, choice.entry)) {  // (the default is the base's own)
        knob.values.push_back(choice.entry);
        knob.labels.push_back(choice.label);
      }
    if (knob.values.size() > 1) space.knobs.push_back(knob);
  }
  return space;
}

std::map<std::string, json> formats_at(const SearchSpace& space, const Point& point) {
  std::map<std::string, json> formats;
  for (size_t k = 0; k < space.knobs.size(); ++k)
    if (space.knobs[k].kind == KnobKind::Format) formats[space.knobs[k].tensor] = space.knobs[k].values[static_cast<size_t>(point[k])];
  return formats;
}

}  // namespace spgen::tune
