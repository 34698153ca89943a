// The formats `spgen tune` measures for the inputs whose config says `"format": "auto"`: their
// order's default sparse format first (what `spgen gen` stores, frontend/config.h's
// auto_input_format), then the alternatives spgen supports that the input's features make worth
// a run: blocks where OSKI's fill ratio says blocks are nearly full, ELL where padding to the
// longest row at most doubles the entries, DCSR where many rows are empty. Each is a knob of its
// own (KnobKind::Format); a point of the space is a format per such input.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tune/features.h"
#include "tune/search_space.h"

namespace spgen::tune {

struct FormatChoice {
  std::string label;     // "csr", "bsr 4x4", "ell 12", "hyb 1-32"
  nlohmann::json entry;  // the config's entry for the tensor: {"format": "bsr", "block": [4, 4]}
  // A composed format (`decompose`) is a schedule op: the schedule it comes with (the
  // decomposition, its parts scheduled by auto: [decompose, "auto"]), or null for auto's.
  nlohmann::json schedule = nullptr;
};

// The choices for input `tensor` of `order` (`features`: null where unknown, e.g. a random
// input: then only the formats that need none), the default (auto_input_format) first.
// `composed`: whether choices that bring a schedule of their own are wanted (not where the
// config pins the schedule); `lanes` (0: none): also hyb with its ELL slots interleaved by that
// many rows, a vector's lanes (SELL-C). `auto_decomposed`: what `auto` itself decomposes the
// default into from the inputs' statistics (passes/choose_input_format.h), or empty; the
// default, still the base's own kernel, is then labelled so, and plain csr is a choice too.
std::vector<FormatChoice> format_choices(const std::string& tensor, int order, const InputFeatures* features, bool composed,
                                         int64_t lanes = 0, const std::string& auto_decomposed = "");

// One Format knob per open input (tensor -> order), with the choices `compiles` accepts (it
// receives the tensor and the choice; the other tensors keep their defaults). Knobs with one
// choice are left out.
// `auto_decomposed`: tensor -> what `auto` decomposes it into (format_choices).
SearchSpace build_format_space(const std::map<std::string, int>& orders, const std::map<std::string, InputFeatures>& features,
                               bool composed, int64_t lanes,
                               const std::function<bool(const std::string&, const FormatChoice&)>& compiles,
                               const std::map<std::string, std::string>& auto_decomposed = {});

// Tensor -> its config entry, at `point` of a format space.
std::map<std::string, nlohmann::json> formats_at(const SearchSpace& space, const Point& point);
// The schedule a composed format at `point` comes with, or null (auto's, or the pinned one).
nlohmann::json format_schedule(const SearchSpace& space, const Point& point);

}  // namespace spgen::tune
