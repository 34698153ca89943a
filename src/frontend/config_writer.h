// Schedule ops written back as the config's JSON: the inverse of read_config's "schedule", so that
// a schedule spgen chose (`auto`, `spgen tune`) can be saved as an ordinary config.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/config.h"

namespace spgen {

// {"op": "tile", "var": "k", "factor": 32, "into": ["k0", "k1"]}, ...: read_config reads it back
// as the same op. Only what differs from the reader's defaults is written (no "chunk" of 0).
// Keys in the order the docs write them ("op" first).
nlohmann::ordered_json schedule_op_json(const ScheduleOp& op);
nlohmann::ordered_json schedule_json(const std::vector<ScheduleOp>& ops);

// "variants": [{"min_entries_per_row": 12, "schedule": [...]}, ...], as read_config reads them.
nlohmann::ordered_json variants_json(const std::vector<RowLengthVariant>& variants);

// A config as people write them: indented by 2, but a value that fits on its line (a schedule op,
// a tensor's format) stays on one line: `{"op": "tile", "var": "k", "factor": 32}`. Ends in "\n".
std::string format_config_json(const nlohmann::ordered_json& config);

}  // namespace spgen
