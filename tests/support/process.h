// Runs a program for the CLI and end-to-end tests, capturing its output.
#pragma once

#include <string>
#include <vector>

namespace spgen_test {

struct ProcessResult {
  int exit_code = -1;  // 128 + signal number if it was killed
  std::string out, err;
};

ProcessResult run_process(const std::vector<std::string>& argv);
// The same with `env` ("NAME=value" each) added to (or replacing in) this process's environment.
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env);

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);

// Paths the test environment provides (set by meson): the spgen binary, the source tree and
// the shared data directory (which may be absent).
std::string spgen_binary();
std::string source_root();
std::string data_dir();  // "" when ../shared/data does not exist

}  // namespace spgen_test
