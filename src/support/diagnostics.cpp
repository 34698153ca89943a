#include "support/diagnostics.h"

namespace spgen {

SourceLoc location_of_offset(std::string_view text, size_t offset) {
  SourceLoc loc{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.col = 1;
    } else {
      ++loc.col;
    }
  }
  return loc;
}

static std::string_view line_of(std::string_view text, int line) {
  size_t begin = 0;
  for (int current = 1; current < line; ++current) {
    size_t newline = text.find('\n', begin);
    if (newline == std::string_view::npos) return {};
    begin = newline + 1;
  }
  size_t end = text.find('\n', begin);
  return text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
}

std::string format_source_error(std::string_view file, std::string_view text, SourceLoc loc,
                                std::string_view message) {
  std::string out(file);
  if (loc.line > 0) out += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  out += ": error: ";
  out += message;
  out += "\n";
  if (loc.line > 0) {
    std::string_view source_line = line_of(text, loc.line);
    out += "  ";
    out += source_line;
    out += "\n  ";
    // Keep tabs so the caret lines up under the offending character.
    for (int i = 1; i < loc.col && static_cast<size_t>(i - 1) < source_line.size(); ++i)
      out += source_line[i - 1] == '\t' ? '\t' : ' ';
    out += "^\n";
  }
  return out;
}

std::string format_config_error(std::string_view file, std::string_view json_path,
                                std::string_view message) {
  std::string out(file);
  out += ": ";
  out += json_path.empty() ? std::string_view("/") : json_path;
  out += ": error: ";
  out += message;
  out += "\n";
  return out;
}

}  // namespace spgen
