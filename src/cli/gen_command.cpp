#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "lower.h"
#include "support/diagnostics.h"
#include "support/files.h"

namespace spgen::cli {

std::optional<Target> target_option(const std::string& name) {
  if (name.empty()) return std::nullopt;
  return name == "cuda" ? Target::Cuda : Target::Cpu;  // the command line allows only these two
}

int run_gen(const GenOptions& options) {
  CompileInput input{options.spec, read_file(options.spec), options.config, read_file(options.config),
                     target_option(options.target)};
  Compilation c = compile(input);
  if (!options.emit.empty()) {
    const std::string& text = options.emit == "stage1"   ? c.stage1_dump
                              : options.emit == "stage2" ? c.stage2_dump
                              : options.emit == "header" ? c.files[0].text
                                                         : c.files[1].text;
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(options.out_dir, ec))
    throw CompileError(options.out_dir + ": error: output directory does not exist\n");
  std::vector<std::pair<std::string, std::string>> files;
  for (const GeneratedFile& file : c.files)
    files.emplace_back((std::filesystem::path(options.out_dir) / file.name).string(), file.text);
  write_files_atomically(files);
  return 0;
}

}  // namespace spgen::cli
