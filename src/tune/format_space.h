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
  std::string label;     // "csr", "bsr 4x4", "ell 12"
  nlohmann::json entry;  // the config's entry for the tensor: {"format": "bsr", "block": [4, 4]}
};

// The choices for an input of `order` (`features`: null where unknown, e.g. a random input:
// then only the formats that need none), the default first.
std::vector<FormatChoice> format_choices(int order, const InputFeatures* features);

// One Format knob per tensor of `orders` (tensor -> order), with the choices `compiles` accepts
// (it receives the tensor and its entry; the other tensors keep their defaults). Knobs with one
// choice are left out.
SearchSpace build_format_space(const std::map<std::string, int>& orders, const std::map<std::string, InputFeatures>& features,
                               const std::function<bool(const std::string&, const nlohmann::json&)>& compiles);

// Tensor -> its config entry, at `point` of a format space.
std::map<std::string, nlohmann::json> formats_at(const SearchSpace& space, const Point& point);

}  // namespace spgen::tune
