// Fixed text of generated files, embedded from templates/ at build time (templates/embed.py).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace spgen::templates {

std::optional<std::string_view> lookup(std::string_view name);

// The named template with each `{{key}}` replaced by its value. Unknown template names and
// placeholders left without a value are internal errors (std::logic_error).
std::string render(std::string_view name, const std::map<std::string, std::string>& values);

}  // namespace spgen::templates
