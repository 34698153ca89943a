// Small text helpers shared by passes and backends.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spgen {

// "a, b, c" (or with another separator).
inline std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

// "NAME=VALUE" (a command-line flag's value) as its two halves, neither empty; nothing otherwise.
inline std::optional<std::pair<std::string, std::string>> split_name_value(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return std::nullopt;
  return std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

// `value` as printf's `format` (one floating-point conversion: "%.1f", "%.3g") writes it.
inline std::string format_number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace spgen
