// bench_gen_speed: how long spgen takes to generate a kernel.
//
//  1. In process: spgen::compile() (parse -> stage I -> its schedule -> lower -> stage II schedule
//     -> emit header and source) on every spec/config pair of specs/ (and bench/configs/),
//     repeated many times; median microseconds per kernel. Inputs are read once, beforehand, so
//     this is the compiler alone.
//  2. Whole process: fork/exec of the spgen binary, `spgen gen SPEC --config CONFIG --out-dir TMP`
//     (reads the files, generates, writes NAME.h and NAME.cpp), waited for; median over ~50 runs
//     per pair. This is what a build system pays per kernel.
//
// Usage: bench_gen_speed [--reps N] [--process-runs N] [--spgen PATH] [--root DIR]
// Run from anywhere: the source root and the spgen binary's path are compiled in.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lower.h"
#include "support/diagnostics.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Pair {
  std::string name, spec, config;        // paths
  std::string spec_text, config_text;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "bench_gen_speed: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Each config pairs with the spec whose stem, followed by '_', begins the config's stem (the
// longest such), as the tests pair them: specs/spmm_csr.json -> specs/spmm.spg.
std::vector<Pair> find_pairs(const fs::path& spec_dir, const fs::path& config_dir) {
  std::vector<fs::path> specs;
  for (const auto& e : fs::directory_iterator(spec_dir))
    if (e.path().extension() == ".spg") specs.push_back(e.path());
  std::vector<Pair> pairs;
  if (!fs::is_directory(config_dir)) return pairs;
  for (const auto& e : fs::directory_iterator(config_dir)) {
    if (e.path().extension() != ".json") continue;
    std::string stem = e.path().stem().string();
    const fs::path* best = nullptr;
    for (const fs::path& s : specs) {
      std::string ss = s.stem().string();
      if (stem.rfind(ss + "_", 0) == 0 && (!best || ss.size() > best->stem().string().size())) best = &s;
    }
    if (!best) continue;
    Pair p{stem, best->string(), e.path().string(), slurp(best->string()), slurp(e.path().string())};
    pairs.push_back(std::move(p));
  }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.name < b.name; });
  return pairs;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

// Runs argv, waits; returns wall seconds, or -1 when the process failed.
double run_process(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  auto t0 = Clock::now();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? s : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress shows when redirected to a file
  int reps = 300, process_runs = 50;
  std::string spgen = SPGEN_EXE_PATH, root = SPGEN_SOURCE_ROOT;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    auto value = [&]() -> std::string {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "bench_gen_speed: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (arg == "--reps") reps = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--process-runs") process_runs = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--spgen") spgen = value();
    else if (arg == "--root") root = value();
    else {
      std::fprintf(stderr, "usage: bench_gen_speed [--reps N] [--process-runs N] [--spgen PATH] [--root DIR]\n");
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  std::vector<Pair> pairs = find_pairs(fs::path(root) / "specs", fs::path(root) / "specs");
  std::vector<Pair> bench_pairs = find_pairs(fs::path(root) / "specs", fs::path(root) / "bench" / "configs");
  const size_t n_spec_pairs = pairs.size();
  pairs.insert(pairs.end(), bench_pairs.begin(), bench_pairs.end());
  if (pairs.empty()) {
    std::fprintf(stderr, "bench_gen_speed: no spec/config pairs under %s/specs\n", root.c_str());
    return 2;
  }

  std::printf("# spgen generation speed: %zu spec/config pairs (%zu in specs/, %zu in bench/configs/)\n",
              pairs.size(), n_spec_pairs, pairs.size() - n_spec_pairs);
  std::printf("# in-process compile(): median of %d repetitions (after 5 warm-up runs)\n", reps);
  std::printf("# process: `spgen gen` fork/exec + write of NAME.h/NAME.cpp, median of %d runs\n\n", process_runs);
  std::printf("%-26s %12s %12s %12s %14s %14s %10s\n", "pair", "compile_us", "p10_us", "p90_us", "process_ms",
              "process_p90", "out_bytes");

  fs::path tmp = fs::temp_directory_path() / ("spgen_gen_speed_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::vector<double> compile_medians, process_medians, spec_compile, spec_process;
  size_t sink = 0;
  for (size_t pi = 0; pi < pairs.size(); ++pi) {
    const Pair& p = pairs[pi];
    spgen::CompileInput input{p.spec, p.spec_text, p.config, p.config_text};
    size_t out_bytes = 0;
    try {
      for (int w = 0; w < 5; ++w) {
        spgen::Compilation c = spgen::compile(input);
        out_bytes = 0;
        for (const auto& f : c.files) out_bytes += f.text.size();
      }
    } catch (const spgen::CompileError& e) {
      std::printf("%-26s compile error: %s\n", p.name.c_str(), e.what());
      continue;
    }
    std::vector<double> us;
    us.reserve(static_cast<size_t>(reps));
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      spgen::Compilation c = spgen::compile(input);
      auto t1 = Clock::now();
      sink += c.files.back().text.size();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::vector<std::string> cmd = {spgen, "gen", p.spec, "--config", p.config, "--out-dir", tmp.string()};
    std::vector<double> ms;
    bool failed = false;
    for (int r = 0; r < process_runs + 2 && !failed; ++r) {
      double s = run_process(cmd);
      if (s < 0) failed = true;
      else if (r >= 2) ms.push_back(s * 1e3);  // two warm-up runs (page cache, binary)
    }
    double cm = median(us);
    compile_medians.push_back(cm);
    if (pi < n_spec_pairs) spec_compile.push_back(cm);
    if (failed) {
      std::printf("%-26s %12.1f %12.1f %12.1f %14s %14s %10zu\n", p.name.c_str(), cm, percentile(us, 0.1),
                  percentile(us, 0.9), "FAILED", "-", out_bytes);
      continue;
    }
    double pm = median(ms);
    process_medians.push_back(pm);
    if (pi < n_spec_pairs) spec_process.push_back(pm);
    std::printf("%-26s %12.1f %12.1f %12.1f %14.3f %14.3f %10zu\n", p.name.c_str(), cm, percentile(us, 0.1),
                percentile(us, 0.9), pm, percentile(ms, 0.9), out_bytes);
  }
  fs::remove_all(tmp);
  auto summary = [](const char* what, const std::vector<double>& c, const std::vector<double>& p) {
    if (c.empty()) return;
    std::printf("%s: compile() median of medians %.1f us (max %.1f us); whole process median of medians %.3f ms "
                "(max %.3f ms)\n",
                what, median(c), *std::max_element(c.begin(), c.end()), p.empty() ? 0.0 : median(p),
                p.empty() ? 0.0 : *std::max_element(p.begin(), p.end()));
  };
  std::printf("\n");
  summary("specs/ pairs", spec_compile, spec_process);
  summary("all pairs   ", compile_medians, process_medians);
  // Baseline for the process figure: exec of a trivial binary costs this much on this machine.
  std::vector<double> base;
  for (int r = 0; r < process_runs + 2; ++r) {
    double s = run_process({"/bin/true"});
    if (r >= 2 && s >= 0) base.push_back(s * 1e3);
  }
  if (!base.empty()) std::printf("baseline: fork/exec/wait of /bin/true median %.3f ms\n", median(base));
  return sink == 0 ? 1 : 0;
}
