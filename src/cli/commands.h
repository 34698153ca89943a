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
};
int run_gen(const GenOptions& options);
// --size VAR=N flags as a map; a malformed one is a CompileError.
std::map<std::string, int64_t> size_options(const std::vector<std::string>& flags);
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

}  // namespace spgen::cli
