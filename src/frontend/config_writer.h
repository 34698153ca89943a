// Schedule ops written back as the config's JSON: the inverse of read_config's "schedule", so that
// a schedule spgen chose (`auto`, `spgen tune`) can be saved as an ordinary config.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "frontend/config.h"

namespace spgen {

// {"op": "tile", "var": "k", "factor": 32, "into": ["k0", "k1"]}, ...: read_config reads it back
// as the same op. Only what differs from the reader's defaults is written (no "chunk" of 0).
nlohmann::json schedule_op_json(const ScheduleOp& op);
nlohmann::json schedule_json(const std::vector<ScheduleOp>& ops);

}  // namespace spgen
