// `spgen run`: generate, compile with the system compiler, and run a driver on real inputs.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "cli/commands.h"
#include "codegen/run_driver.h"
#include "lower.h"
#include "support/diagnostics.h"
#include "support/files.h"
#include "support/templates.h"

extern char** environ;

namespace spgen::cli {

namespace {

// A scratch directory removed on scope exit unless the user asked to keep it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& keep) {
    if (!keep.empty()) {
      std::filesystem::create_directories(keep);
      path_ = keep;
      keep_ = true;
      return;
    }
    std::string pattern = (std::filesystem::temp_directory_path() / "spgen-run-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw CompileError("spgen run: error: cannot create a temporary directory\n");
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

// Runs argv[0] (searched in PATH) and returns its exit status; output goes to ours, or to
// `log` when given.
int spawn(const std::vector<std::string>& args, const std::string& log = "") {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw CompileError("spgen run: error: cannot start " + args[0] + ": " + std::strerror(rc) + "\n");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw CompileError("spgen run: error: lost track of " + args[0] + "\n");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::vector<std::string> compiler_command() {
  const char* cxx = std::getenv("CXX");
  std::istringstream words(cxx && *cxx ? cxx : "c++");
  std::vector<std::string> command;
  for (std::string word; words >> word;) command.push_back(word);
  for (const char* flag : {"-std=c++17", "-O3", "-march=native", "-fopenmp"}) command.push_back(flag);
  return command;
}

// $NVCC, else the CUDA toolkit's default location, else nvcc from PATH; for the GPU it runs on.
std::vector<std::string> cuda_compiler_command() {
  const char* nvcc = std::getenv("NVCC");
  std::string path = nvcc && *nvcc ? nvcc : access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : "nvcc";
  return {path, "-std=c++17", "-O3", "-arch=native"};
}

}  // namespace

int run_run(const RunOptions& options) {
  CompileInput input{options.spec, read_file(options.spec), options.config, read_file(options.config),
                     target_option(options.target)};
  Compilation c = compile(input);
  ScratchDir dir(options.keep_dir);
  std::vector<std::pair<std::string, std::string>> files;
  for (const GeneratedFile& file : c.files) files.emplace_back((dir.path() / file.name).string(), file.text);
  GeneratedFile driver = emit_run_driver(c.func, c.program, c.config.target, c.assemble,
                                         c.decomposition ? &*c.decomposition : nullptr);
  files.emplace_back((dir.path() / driver.name).string(), driver.text);
  files.emplace_back((dir.path() / "spgen_run_runtime.hpp").string(),
                     std::string(*templates::lookup("spgen_run_runtime.hpp")));
  write_files_atomically(files);

  std::string binary = (dir.path() / "driver").string();
  bool cuda = c.config.target == Target::Cuda;
  std::vector<std::string> build = cuda ? cuda_compiler_command() : compiler_command();
  build.insert(build.end(), options.extra_cxxflags.begin(), options.extra_cxxflags.end());
  build.insert(build.end(), {"-o", binary, (dir.path() / driver.name).string(), (dir.path() / c.files[1].name).string()});
  std::string log = (dir.path() / "compile.log").string();
  if (options.verbose) {
    std::string line;
    for (const std::string& w : build) line += (line.empty() ? "" : " ") + w;
    std::fprintf(stderr, "spgen run: %s\n", line.c_str());
  }
  if (spawn(build, log) != 0) {
    std::string output = read_file(log);
    std::fprintf(stderr, "%s", output.c_str());
    throw CompileError(std::string("spgen run: error: ") + (cuda ? "nvcc" : "the C++ compiler") +
                       " rejected the generated kernel (see above)\n");
  }
  std::vector<std::string> run = {binary};
  run.insert(run.end(), options.driver_args.begin(), options.driver_args.end());
  return spawn(run);
}

}  // namespace spgen::cli
