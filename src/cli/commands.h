// The CLI's verbs. Each returns the process exit status; user errors are printed, not thrown.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/config.h"

namespace spgen::cli {

struct GenOptions {
  std::string spec, config;
  std::string target;  // "", "cpu" or "cuda": replaces the config's
  std::string out_dir = ".";
  std::string emit;  // "", "stage1", "stage2", "header", "source"
  std::map<std::string, int64_t> sizes;  // --size VAR=N: replaces the config's "sizes" for VAR
  bool check = false;  // --check: compare with OUT_DIR's files instead of writing them
  bool python = false;  // --python: also NAME.py
  std::map<std::string, std::string> stats_files;  // --stats NAME=FILE: statistics for `auto`
};
int run_gen(const GenOptions& options);
// --size VAR=N flags as a map; a malformed one is a CompileError.
std::map<std::string, int64_t> size_options(const std::vector<std::string>& flags);
// --stats NAME=FILE flags as a map; a malformed one is a CompileError.
std::map<std::string, std::string> stats_options(const std::vector<std::string>& flags);
// The statistics `auto` uses, of a .mtx or .tns file (throws std::runtime_error on a bad file).
InputStats read_stats_file(const std::string& path);
// The target --target names, if any.
std::optional<Target> target_option(const std::string& name);

struct RunOptions {
  std::string spec, config;
  std::string target;  // "", "cpu" or "cuda": replaces the config's
  std::vector<std::string> driver_args;  // forwarded to the driver: --input A=..., --repeat N, ...
  std::string keep_dir;                  // keep the generated sources and driver here
  std::vector<std::string> extra_cxxflags;
  bool verbose = false;
  std::map<std::string, int64_t> sizes;  // --size VAR=N, as for gen
};
int run_run(const RunOptions& options);

struct TuneOptions {
  std::string spec, config, output;
  std::string target;                    // "", "cpu" or "cuda"
  std::vector<std::string> inputs;       // NAME=FILE or NAME=random
  std::vector<std::string> dims;         // VAR=N, for the driver and the reference
  std::string budget = "60s";
  int threads = 0;                       // 0: OpenMP's default
  uint64_t seed = 1;
  std::string trials_csv;                // --trials FILE.csv
  std::string db;                        // --db FILE or off
  std::string keep_dir;
  bool verbose = false;
};
int run_tune(const TuneOptions& options);
// "60s", "2m", "1.5m", "90" (seconds): a positive duration in seconds; else a CompileError.
double parse_duration(const std::string& text);

}  // namespace spgen::cli
