#include "cli/driver_build.h"

#include <algorithm>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "codegen/c_printer.h"
#include "codegen/run_driver.h"
#include "lower.h"
#include "support/diagnostics.h"
#include "support/files.h"
#include "support/templates.h"

extern char** environ;

namespace spgen::cli {

namespace {

// Starts argv[0] (searched in PATH); its output goes to ours, or to `log` when given.
bool children_in_own_group = false;  // isolate_children_from_interrupts()

pid_t start(const std::vector<std::string>& args, const std::string& log = "") {
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
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (children_in_own_group) {
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  int rc = posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw CompileError("spgen run: error: cannot start " + args[0] + ": " + std::strerror(rc) + "\n");
  return pid;
}

// Waits for a started process and returns its exit status.
int finish(pid_t pid, const std::string& name) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw CompileError("spgen run: error: lost track of " + name + "\n");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// A compiler run, its output kept in `log` and shown only if it fails.
struct CompileStep {
  std::vector<std::string> command;
  std::string log;
};

std::string command_line(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& w : words) line += (line.empty() ? "" : " ") + w;
  return line;
}

// Runs the steps at once (a driver's pieces compile independently); the first failure's output
// is printed and reported.
void run_steps(const std::vector<CompileStep>& steps, bool verbose, const std::string& compiler) {
  std::vector<pid_t> pids;
  for (const CompileStep& step : steps) {
    if (verbose) std::fprintf(stderr, "spgen run: %s\n", command_line(step.command).c_str());
    pids.push_back(start(step.command, step.log));
  }
  int failed = -1;
  for (size_t i = 0; i < steps.size(); ++i)
    if (finish(pids[i], steps[i].command[0]) != 0 && failed < 0) failed = static_cast<int>(i);
  if (failed < 0) return;
  std::string output = read_file(steps[static_cast<size_t>(failed)].log);
  std::fprintf(stderr, "%s", output.c_str());
  throw CompileError("spgen run: error: " + compiler + " rejected the generated kernel (see above)\n");
}

// Where compiled driver runtimes are kept between runs: $SPGEN_RUN_CACHE, else
// $XDG_CACHE_HOME/spgen, else ~/.cache/spgen; none when SPGEN_RUN_CACHE is "off".
std::filesystem::path runtime_cache_dir() {
  const char* cache = std::getenv("SPGEN_RUN_CACHE");
  if (cache && std::string(cache) == "off") return {};
  if (cache && *cache) return cache;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::filesystem::path(xdg) / "spgen";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::filesystem::path(home) / ".cache" / "spgen";
  return {};
}

// The compiler's own description (`--version`), so that a cached object is not reused by another.
// Asked once per compiler and process: every cache key of a driver build (the runtime, the pack
// algorithm, the precompiled header) needs it, and spgen tune builds many drivers, some at once.
std::string compiler_identity(const std::vector<std::string>& compiler, const std::filesystem::path& dir) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(compiler.front()); it != known.end()) return it->second;
  }
  std::string log = (dir / "compiler-version.txt").string();
  std::string identity = spawn({compiler.front(), "--version"}, log) != 0 ? compiler.front() : read_file(log);
  std::lock_guard<std::mutex> lock(mutex);
  return known.emplace(compiler.front(), identity).first->second;
}

// $CXX (else c++) for host code that nvcc links too: no OpenMP and no -march, as nvcc's host
// code has neither.
std::vector<std::string> host_compiler_command() {
  const char* cxx = std::getenv("CXX");
  std::istringstream words(cxx && *cxx ? cxx : "c++");
  std::vector<std::string> command;
  for (std::string word; words >> word;) command.push_back(word);
  for (const char* flag : {"-std=c++17", "-O3"}) command.push_back(flag);
  return command;
}

// $CXX for the CPU driver: tuned to this machine, with OpenMP for the kernel's parallel loops.
std::vector<std::string> compiler_command() {
  std::vector<std::string> command = host_compiler_command();
  for (const char* flag : {"-march=native", "-fopenmp"}) command.push_back(flag);
  return command;
}

// $NVCC, else the CUDA toolkit's default location, else nvcc from PATH; for the GPU it runs on.
std::vector<std::string> cuda_compiler_command() {
  const char* nvcc = std::getenv("NVCC");
  std::string path = nvcc && *nvcc ? nvcc : access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : "nvcc";
  return {path, "-std=c++17", "-O3", "-arch=native"};
}

// An object that is the same for many drivers (the runtime, the pack algorithm), for the
// kernel's index and value types: `path` is the object to link, from the cache when one built by
// the same compiler, flags and text is there; else `build` compiles it here, and `cache_as` is
// where to keep it for later runs.
struct SharedObject {
  std::string path;
  std::optional<CompileStep> build;
  std::filesystem::path cache_as;
};

// `source`, written to `dir` and compiled by `compile`; `included` is the text of what it
// includes from `dir` (part of the cache key), `kind` names the cached object (KIND-HASH.o).
SharedObject shared_object(const GeneratedFile& source, const std::string& included, const std::string& kind,
                           const std::filesystem::path& dir, const std::vector<std::string>& compile) {
  const std::string path = (dir / source.name).string();
  write_files_atomically({{path, source.text}});
  SharedObject object{path.substr(0, path.rfind('.')) + ".o", std::nullopt, {}};
  std::vector<std::string> command = compile;
  command.insert(command.end(), {"-c", path, "-o", object.path});
  object.build = CompileStep{command, (dir / ("compile-" + kind + ".log")).string()};
  std::filesystem::path cache = runtime_cache_dir();
  if (cache.empty()) return object;
  std::string key = compiler_identity(compile, dir) + command_line(compile) + "\n" + source.text + "\n" + included;
  std::filesystem::path cached = cache / (kind + "-" + stable_hash(key) + ".o");
  if (std::filesystem::exists(cached)) return {cached.string(), std::nullopt, {}};
  object.cache_as = cached;
  return object;
}

// The text of the runtime's headers (part of the cache key of what includes them).
std::string runtime_headers() {
  return std::string(*templates::lookup("spgen_run_runtime.hpp")) + std::string(*templates::lookup("spgen_run_glue.hpp"));
}

// The driver's runtime instantiated for the kernel's index and value types.
SharedObject runtime_object(const Compilation& c, const std::filesystem::path& dir, const std::vector<std::string>& compile) {
  GeneratedFile instance = {"spgen_run_runtime_instance.cpp",
                            templates::render("run_runtime_instance.cpp.in", {{"index_type", c_type_name(c.config.index_type)},
                                                                             {"value_type", c_type_name(c.config.value_type)}})};
  return shared_object(instance, runtime_headers(), "runtime", dir, compile);
}

// A name part no other process, nor another thread of this one (spgen tune builds drivers at
// once), uses for its partial files.
std::string unique_suffix() {
  return std::to_string(getpid()) + "-" + std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000007);
}

// Keeps a freshly built shared object for later runs (best effort: a cache that cannot be
// written only costs time). Written under a unique name, then renamed, as runs may race.
void cache_object(const std::string& object, const std::filesystem::path& cached) {
  std::error_code ec;
  std::filesystem::create_directories(cached.parent_path(), ec);
  std::filesystem::path partial = cached.string() + ".partial-" + unique_suffix();
  std::filesystem::copy_file(object, partial, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) std::filesystem::rename(partial, cached, ec);
  if (ec) std::filesystem::remove(partial, ec);
}

// A header precompiled (a .gch) for a driver's unit whose compile is mostly parsing it: the
// standard headers of every cpu kernel file (spgen_run_kernel_std.hpp), for the kernel.
// cache/KIND-HASH/ holds a copy of the header and its .gch, built once per compiler, flags and
// header text, and the unit is compiled with `-include` that copy (its own #include of the same
// headers then adds nothing: include guards). Empty without a cache, or when the compiler cannot
// precompile it; the unit then parses the headers itself.
// The .gch is built beside the copy at its final path, and the copy is never rewritten: clang's
// precompiled header names the header's path and modification time and is refused (a fatal
// error, where GCC falls back to the text) once either changes. Runs may race: the copy is
// linked into place only where none is, and each run's .gch is renamed over the last (all
// alike).
std::string precompiled_header(const std::string& name, const std::string& kind, const std::vector<std::string>& compile,
                               const std::filesystem::path& dir, bool verbose) {
  std::filesystem::path cache = runtime_cache_dir();
  if (cache.empty()) return {};
  const std::string header(*templates::lookup(name));
  const std::string entry = kind + "-" + stable_hash(compiler_identity(compile, dir) + command_line(compile) + "\n" + header);
  const std::filesystem::path kept = cache / entry / name;
  const std::string gch = kept.string() + ".gch";
  std::error_code ec;
  if (std::filesystem::exists(gch, ec)) return kept.string();
  std::filesystem::create_directories(kept.parent_path(), ec);
  if (ec) return {};
  const std::string pid = unique_suffix();
  if (!std::filesystem::exists(kept, ec)) {
    const std::string copy = kept.string() + ".partial-" + pid;
    write_files_atomically({{copy, header}});
    std::filesystem::create_hard_link(copy, kept, ec);  // (fails where another run's copy is: as good)
    std::filesystem::remove(copy, ec);
  }
  const std::string partial = gch + ".partial-" + pid;
  std::vector<std::string> command = compile;
  // clang instantiates, in every file that includes a precompiled header, the templates that the
  // header's inline functions use, unless the header did.
  if (compiler_identity(compile, dir).find("clang") != std::string::npos) command.push_back("-fpch-instantiate-templates");
  command.insert(command.end(), {"-x", "c++-header", kept.string(), "-o", partial});
  if (verbose) std::fprintf(stderr, "spgen run: %s\n", command_line(command).c_str());
  if (spawn(command, (dir / ("compile-" + kind + ".log")).string()) == 0) std::filesystem::rename(partial, gch, ec);
  std::filesystem::remove(partial, ec);
  return std::filesystem::exists(gch, ec) ? kept.string() : std::string();
}

// `compile` with `-include` the precompiled `name`, where there is one.
std::vector<std::string> with_precompiled(std::vector<std::string> compile, const std::string& name, const std::string& kind,
                                          const std::filesystem::path& dir, bool verbose) {
  const std::string header = precompiled_header(name, kind, compile, dir, verbose);
  if (!header.empty()) compile.insert(compile.end(), {"-include", header});
  return compile;
}

// The kernel's source as the driver compiles it, and the objects it links besides the glue:
// the kernel's pack algorithm linked, not compiled with it (codegen/run_driver.h), where it has
// conversion routines.
struct KernelBuild {
  std::string source;                // in the build directory
  std::vector<SharedObject> shared;  // built here or taken from the cache
};

KernelBuild kernel_build(const Compilation& c, const std::filesystem::path& dir, const std::vector<SharedObject>& runtime,
                         const std::vector<std::string>& pack_compile) {
  const GeneratedFile& kernel = c.files[1];
  KernelBuild build{(dir / kernel.name).string(), runtime};
  std::optional<LinkedPackAlgorithm> linked = link_pack_algorithm(kernel, c.func.name, c.program);
  if (!linked) return build;
  write_files_atomically({{(dir / linked->kernel.name).string(), linked->kernel.text},
                          {(dir / linked->header.name).string(), linked->header.text}});
  build.source = (dir / linked->kernel.name).string();
  build.shared.push_back(shared_object(linked->source, linked->header.text, "pack", dir, pack_compile));
  return build;
}

// Compiles the shared objects not in the cache, with `steps` (which run at once), then caches them.
void compile_with_shared(std::vector<CompileStep> steps, const std::vector<SharedObject>& shared, bool verbose,
                         const std::string& compiler) {
  for (const SharedObject& object : shared)
    if (object.build) steps.push_back(*object.build);
  run_steps(steps, verbose, compiler);
  for (const SharedObject& object : shared)
    if (!object.cache_as.empty()) cache_object(object.path, object.cache_as);
}

// The CPU driver: the kernel, the driver's glue and the shared objects compiled at once (each
// shared one reused from the cache when it can be; the glue needs only spgen_run_glue.hpp, the
// kernel its standard headers precompiled), then linked.
void build_cpu_driver(const Compilation& c, const std::filesystem::path& dir, const std::string& driver_source,
                      const std::string& binary, const DriverBuildOptions& options) {
  std::vector<std::string> compile = compiler_command();
  compile.insert(compile.end(), options.extra_cxxflags.begin(), options.extra_cxxflags.end());
  // The runtime (file I/O, packing, timing) and the pack algorithm are optimized whatever
  // --cxxflags says of the kernel: they are compiled once and cached, and at -O0 reading a
  // graph's dense operands took longer than the kernel. (-O levels leave the ABI alone; other
  // flags, sanitizers too, apply.)
  std::vector<std::string> shared_compile = compile;
  shared_compile.push_back("-O3");
  const KernelBuild kernel = kernel_build(c, dir, {runtime_object(c, dir, shared_compile)}, shared_compile);
  const std::vector<std::string>& glue_compile = compile;
  const std::vector<std::string> kernel_compile =
      with_precompiled(compile, "spgen_run_kernel_std.hpp", "pchk", dir, options.verbose);
  std::vector<CompileStep> steps;
  std::vector<std::string> objects;
  for (const std::string& source : {(dir / driver_source).string(), kernel.source}) {
    const std::string name = std::filesystem::path(source).filename().string();
    std::string object = source + ".o";
    std::vector<std::string> command = name == driver_source ? glue_compile : kernel_compile;
    command.insert(command.end(), {"-c", source, "-o", object});
    steps.push_back({command, (dir / ("compile-" + name + ".log")).string()});
    objects.push_back(object);
  }
  compile_with_shared(steps, kernel.shared, options.verbose, "the C++ compiler");
  std::vector<std::string> link = compile;
  link.insert(link.end(), {"-o", binary});
  link.insert(link.end(), objects.begin(), objects.end());
  for (const SharedObject& object : kernel.shared) link.push_back(object.path);
  run_steps({{link, (dir / "link.log").string()}}, options.verbose, "the C++ compiler");
}

// The CUDA driver: nvcc builds the kernel and the driver's glue; the shared objects, host code
// only, are compiled by the host C++ compiler (host_compiler_command) and reused from the cache.
void build_cuda_driver(const Compilation& c, const std::filesystem::path& dir, const std::string& driver_source,
                       const std::string& binary, const DriverBuildOptions& options) {
  const std::vector<std::string> host = host_compiler_command();
  const KernelBuild kernel = kernel_build(c, dir, {runtime_object(c, dir, host)}, host);
  compile_with_shared({}, kernel.shared, options.verbose, "the C++ compiler");
  std::vector<std::string> build = cuda_compiler_command();
  build.insert(build.end(), options.extra_cxxflags.begin(), options.extra_cxxflags.end());
  build.insert(build.end(), {"-DSPGEN_RUN_PRECOMPILED", "-o", binary, (dir / driver_source).string(), kernel.source});
  for (const SharedObject& object : kernel.shared) build.push_back(object.path);
  run_steps({{build, (dir / "compile.log").string()}}, options.verbose, "nvcc");
}

}  // namespace

std::string build_driver(const Compilation& c, const std::filesystem::path& dir, const DriverBuildOptions& options) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const GeneratedFile& file : c.files) files.emplace_back((dir / file.name).string(), file.text);
  GeneratedFile driver = emit_run_driver(c.func, c.program, c.config.target, c.assemble,
                                         c.decomposition ? &*c.decomposition : nullptr);
  files.emplace_back((dir / driver.name).string(), driver.text);
  for (const char* header : {"spgen_run_runtime.hpp", "spgen_run_glue.hpp"})
    files.emplace_back((dir / header).string(), std::string(*templates::lookup(header)));
  write_files_atomically(files);

  std::string binary = (dir / "driver").string();
  if (c.config.target == Target::Cuda) {
    build_cuda_driver(c, dir, driver.name, binary, options);
  } else {
    build_cpu_driver(c, dir, driver.name, binary, options);
  }
  return binary;
}

std::vector<std::string> cpu_compiler_command() { return compiler_command(); }

std::string stable_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void isolate_children_from_interrupts() { children_in_own_group = true; }

int spawn(const std::vector<std::string>& args, const std::string& log) { return finish(start(args, log), args[0]); }

}  // namespace spgen::cli
