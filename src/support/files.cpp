#include "support/files.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/diagnostics.h"

namespace spgen {

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw CompileError(path + ": error: is a directory, not a file\n");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CompileError(path + ": error: cannot open file for reading\n");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw CompileError(path + ": error: read failed\n");
  return buffer.str();
}

static bool has_contents(const std::string& path, const std::string& contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str() == contents;
}

void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::pair<std::string, std::string>> staged;  // (temporary, target)
  auto discard_staged = [&staged] {
    for (auto& [temporary, target] : staged) std::remove(temporary.c_str());
  };
  for (const auto& [target, contents] : files) {
    if (has_contents(target, contents)) continue;
    std::string temporary = target + ".spgen-tmp";
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (out) out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (out) out.close();
    if (!out) {
      std::remove(temporary.c_str());
      discard_staged();
      throw CompileError(target + ": error: cannot write file\n");
    }
    staged.emplace_back(temporary, target);
  }
  for (size_t i = 0; i < staged.size(); ++i) {
    std::error_code ec;
    std::filesystem::rename(staged[i].first, staged[i].second, ec);
    if (ec) {
      for (size_t j = i; j < staged.size(); ++j) std::remove(staged[j].first.c_str());
      throw CompileError(staged[i].second + ": error: cannot replace file: " + ec.message() + "\n");
    }
  }
}

}  // namespace spgen
