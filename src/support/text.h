// Small text helpers shared by passes and backends.
#pragma once

#include <string>
#include <vector>

namespace spgen {

// "a, b, c" (or with another separator).
inline std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

}  // namespace spgen
