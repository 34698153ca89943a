// Building the driver of a generated kernel (`spgen run`, `spgen tune`): the kernel, the driver's
// glue and its runtime compiled with $CXX (nvcc for the cuda target), the runtime cached.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "lower.h"
#include "support/diagnostics.h"

namespace spgen::cli {

// A scratch directory removed on scope exit unless the user asked to keep it. `command` ("spgen
// run") names it and its errors.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& keep, const std::string& command = "spgen run") {
    if (!keep.empty()) {
      std::filesystem::create_directories(keep);
      path_ = keep;
      keep_ = true;
      return;
    }
    std::string prefix = command;
    std::replace(prefix.begin(), prefix.end(), ' ', '-');
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(pattern.data())) throw CompileError(command + ": error: cannot create a temporary directory\n");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!keep_) std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool keep_ = false;
};

struct DriverBuildOptions {
  std::vector<std::string> extra_cxxflags;  // after spgen's own flags
  bool verbose = false;                     // print the compile commands
};

// Writes c's files, its driver and the driver's runtime header into `dir`, builds the driver and
// returns its path. A compiler's refusal is a CompileError (its output printed first).
std::string build_driver(const Compilation& c, const std::filesystem::path& dir, const DriverBuildOptions& options);

// The C++ compiler and flags CPU drivers are built with ($CXX or c++, -O3 -march=native -fopenmp).
std::vector<std::string> cpu_compiler_command();

// A hash of `text` that stays the same across runs, builds and machines (16 hex digits), for
// naming cached objects and keying the tuning database.
std::string stable_hash(const std::string& text);

// From now on, the processes started here (compilers, drivers) run in process groups of their
// own, so a Ctrl-C at the terminal reaches this process alone: `spgen tune` finishes the step at
// hand and keeps the best so far, rather than seeing its compiler or driver killed under it.
void isolate_children_from_interrupts();

// Runs argv[0] (searched in PATH) and returns its exit status (128 + signal when killed); its
// output goes to ours, or to the file `log` when given.
int spawn(const std::vector<std::string>& args, const std::string& log = "");

}  // namespace spgen::cli
