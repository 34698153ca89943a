// Errors reported to the user. Every compile error carries a fully formatted message
// (`file:line:col: error: ...` with the source line and a caret, or a JSON path for configs),
// so the CLI only prints it and exits 1.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace spgen {

struct SourceLoc {
  int line = 0;  // 1-based; 0 means "unknown"
  int col = 0;   // 1-based
};

class CompileError : public std::runtime_error {
 public:
  explicit CompileError(const std::string& message) : std::runtime_error(message) {}
};

// "file:line:col: error: message\n<source line>\n<caret>\n"
std::string format_source_error(std::string_view file, std::string_view text, SourceLoc loc,
                                std::string_view message);

// "file: /json/path: message"
std::string format_config_error(std::string_view file, std::string_view json_path,
                                std::string_view message);

// Converts a byte offset into a 1-based line and column.
SourceLoc location_of_offset(std::string_view text, size_t offset);

}  // namespace spgen
