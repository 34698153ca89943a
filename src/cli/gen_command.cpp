#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "lower.h"
#include "support/diagnostics.h"
#include "support/files.h"
#include "support/unified_diff.h"
#include "tune/features.h"

namespace spgen::cli {

std::optional<Target> target_option(const std::string& name) {
  if (name.empty()) return std::nullopt;
  return name == "cuda" ? Target::Cuda : Target::Cpu;  // the command line allows only these two
}

std::map<std::string, int64_t> size_options(const std::vector<std::string>& flags) {
  std::map<std::string, int64_t> sizes;
  for (const std::string& flag : flags) {
    const size_t eq = flag.find('=');
    const std::string value = eq == std::string::npos ? "" : flag.substr(eq + 1);
    const bool digits = !value.empty() && value.size() <= 18 &&
                        std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (eq == 0 || !digits) throw CompileError("spgen: error: --size " + flag + ": expected VAR=N with N a positive integer\n");
    sizes[flag.substr(0, eq)] = std::stoll(value);
  }
  return sizes;
}

std::map<std::string, std::string> stats_options(const std::vector<std::string>& flags) {
  std::map<std::string, std::string> files;
  for (const std::string& flag : flags) {
    const size_t eq = flag.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == flag.size())
      throw CompileError("spgen: error: --stats " + flag + ": expected NAME=FILE (a .mtx or .tns file of input NAME)\n");
    files[flag.substr(0, eq)] = flag.substr(eq + 1);
  }
  return files;
}

InputStats read_stats_file(const std::string& path) {
  const spgen_ref::Tensor tensor = spgen_ref::read_tensor(path);
  const tune::InputFeatures f = tune::input_features(tensor);
  InputStats stats;
  stats.source = std::filesystem::path(path).filename().string();
  stats.dims = f.dims;
  stats.nnz = f.nnz;
  stats.row_mean = f.row_mean;
  stats.row_cv = f.row_cv;
  stats.row_max = static_cast<int64_t>(f.row_max);
  stats.bandwidth_mean = f.bandwidth_mean;
  stats.static_split_imbalance = tune::static_split_imbalance(tensor);
  if (f.dims.size() == 2)
    stats.block_fill = {{2, f.block_fill_2}, {3, f.block_fill_3}, {4, f.block_fill_4}, {8, f.block_fill_8}};
  return stats;
}

namespace {

// `--check`: each file as it is on disk against what would be written; differences go to
// stdout as unified diffs (a missing file as one line), and the status says whether any differ.
int check_files(const std::vector<std::pair<std::string, std::string>>& files) {
  bool same = true;
  for (const auto& [path, text] : files) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      std::printf("missing: %s\n", path.c_str());
      same = false;
      continue;
    }
    const std::string diff = unified_diff(read_file(path), text, path, path + " (generated)");
    std::fwrite(diff.data(), 1, diff.size(), stdout);
    same &= diff.empty();
  }
  return same ? 0 : 1;
}

}  // namespace

int run_gen(const GenOptions& options) {
  CompileInput input{options.spec, read_file(options.spec), options.config, read_file(options.config),
                     target_option(options.target), options.sizes, options.python};
  input.stats_files = options.stats_files;
  input.read_stats = read_stats_file;
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
  if (options.check) return check_files(files);
  write_files_atomically(files);
  return 0;
}

}  // namespace spgen::cli
