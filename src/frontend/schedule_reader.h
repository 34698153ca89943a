#pragma once

// Reads the config's "schedule" (a list of ops, or "auto") and "variants" into the Config,
// checking each op as it is read.

#include "frontend/config.h"

#include <nlohmann/json.hpp>
#include <string>

namespace spgen {

void read_schedule(const std::string& file, const std::string& text, const ast::Spec& spec,
                   const nlohmann::json& schedule, Config& config);
void read_variants(const std::string& file, const std::string& text, const ast::Spec& spec,
                   const nlohmann::json& variants, Config& config);

}  // namespace spgen
