// spgen's command line: `gen` writes a kernel; `run` builds it and runs it on real data; `tune`
// searches schedules on real data.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "lower.h"
#include "support/diagnostics.h"

namespace {

// Flags `run` hands to the generated driver, each as `--flag value`.
struct DriverFlag {
  const char* name;
  const char* help;
  bool repeatable;
};

const DriverFlag kDriverFlags[] = {
    {"--input", "NAME=FILE or NAME=random: an input tensor (.mtx or .tns), or a seeded random one", true},
    {"--output", "NAME=FILE: write an output tensor (.mtx, or .tns for order >= 3); once per output", true},
    {"--repeat", "N: time N runs and print the median (default 1)", false},
    {"--warmup", "N: untimed runs first (default 1 when --repeat > 1)", false},
    {"--seed", "S: seed of random inputs (default 1)", false},
    {"--dim", "VAR=N: the size of an index variable no input fixes (default 32)", true},
    {"--density", "D: fraction of entries stored in a random sparse input (default 0.01)", false},
    {"--threads", "N: OpenMP threads", false},
    {"--save-input", "NAME=FILE: also write the input actually used (e.g. a random one)", true},
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spgen: generates sparse tensor kernels from index notation and a JSON config"};
  app.set_version_flag("--version", std::string("spgen ") + spgen::kVersion);
  app.require_subcommand(1);

  spgen::cli::GenOptions gen;
  CLI::App* gen_cmd = app.add_subcommand("gen", "write NAME.h and NAME.cpp (NAME.cu for the cuda target), and NAME.py with --python, for a spec and config");
  gen_cmd->add_option("spec", gen.spec, "index-notation spec file (.spg)")->required();
  gen_cmd->add_option("--config,-c", gen.config, "JSON config")->required();
  gen_cmd->add_option("-o,--out-dir", gen.out_dir, "directory to write into (default .)");
  gen_cmd->add_option("--target", gen.target, "cpu or cuda: replaces the config's target")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  std::vector<std::string> gen_sizes, run_sizes;
  const char* size_help = "VAR=N: specialize the kernel for index VAR of size N (replaces the config's \"sizes\"); repeatable";
  gen_cmd->add_option("--size", gen_sizes, size_help);
  std::vector<std::string> gen_stats;
  gen_cmd->add_option("--stats", gen_stats,
                      "NAME=FILE: the kernel will run on inputs like this .mtx/.tns file of sparse input NAME; "
                      "`auto` uses its statistics (rows, entries, row lengths, reach); repeatable");
  CLI::Option* emit = gen_cmd->add_option("--emit", gen.emit, "print instead of writing: stage1, stage2, header or source")
                          ->check(CLI::IsMember({"stage1", "stage2", "header", "source"}));
  gen_cmd->add_flag("--check", gen.check,
                    "write nothing; exit 0 when the files in the output directory are exactly what would be generated, "
                    "else print a unified diff (and name missing files) and exit 1")
      ->excludes(emit);
  gen_cmd->add_flag("--python", gen.python,
                    "also write NAME.py: a module that compiles NAME.cpp on first use and calls the kernel on numpy "
                    "arrays and scipy.sparse matrices (cpu target)")
      ->excludes(emit);

  spgen::cli::RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "generate, compile with $CXX (nvcc for the cuda target), run on inputs, time it, write the output");
  run_cmd->add_option("spec", run.spec, "index-notation spec file (.spg)")->required();
  run_cmd->add_option("--config,-c", run.config, "JSON config")->required();
  run_cmd->add_option("--target", run.target, "cpu or cuda (compiled with nvcc, run on the GPU): replaces the config's target")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  run_cmd->add_option("--keep", run.keep_dir, "keep the generated sources and driver in this directory");
  run_cmd->add_option("--cxxflags", run.extra_cxxflags, "extra flags for the C++ compiler (nvcc for the cuda target); the cached driver runtime stays at -O3");
  run_cmd->add_flag("-v,--verbose", run.verbose, "print the compile command");
  run_cmd->add_option("--size", run_sizes, size_help);
  std::vector<std::pair<const DriverFlag*, std::vector<std::string>>> driver_values;
  driver_values.reserve(std::size(kDriverFlags));
  for (const DriverFlag& flag : kDriverFlags) {
    driver_values.push_back({&flag, {}});
    CLI::Option* option = run_cmd->add_option(flag.name, driver_values.back().second, flag.help);
    if (!flag.repeatable) option->expected(1);
  }

  spgen::cli::TuneOptions tune;
  CLI::App* tune_cmd = app.add_subcommand(
      "tune", "search schedules for a spec with \"schedule\": \"auto\" on real inputs, measuring each candidate, and write the "
              "fastest as a config (docs/tune.md)");
  tune_cmd->add_option("spec", tune.spec, "index-notation spec file (.spg)")->required();
  tune_cmd->add_option("--config,-c", tune.config, "the base JSON config: what it pins is kept; \"schedule\": \"auto\" is searched")->required();
  tune_cmd->add_option("-o,--output", tune.output, "the tuned config to write (TUNED.json)")->required();
  tune_cmd->add_option("--input", tune.inputs, "NAME=FILE or NAME=random: an input tensor, for every input of the spec")->required();
  tune_cmd->add_option("--dim", tune.dims, "VAR=N: the size of an index variable no input fixes (default 32)");
  tune_cmd->add_option("--budget", tune.budget, "how long to search: 60s (default), 2m, 90 (seconds)");
  tune_cmd->add_option("--threads", tune.threads, "OpenMP threads the kernel runs with (default: OpenMP's)")->check(CLI::PositiveNumber);
  tune_cmd->add_option("--seed", tune.seed, "seed of the search's random candidates and of random inputs (default 1)");
  tune_cmd->add_option("--trials", tune.trials_csv, "FILE.csv: write every measurement");
  tune_cmd->add_option("--db", tune.db, "the tuning database (default $SPGEN_TUNE_DB, else ~/.cache/spgen/tune.jsonl), or off");
  tune_cmd->add_option("--target", tune.target, "cpu or cuda: replaces the config's target")->check(CLI::IsMember({"cpu", "cuda"}));
  tune_cmd->add_option("--keep", tune.keep_dir, "keep every candidate's sources and driver in this directory");
  tune_cmd->add_flag("-v,--verbose", tune.verbose, "print the compile commands");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    gen.sizes = spgen::cli::size_options(gen_sizes);
    gen.stats_files = spgen::cli::stats_options(gen_stats);
    run.sizes = spgen::cli::size_options(run_sizes);
    if (*gen_cmd) return spgen::cli::run_gen(gen);
    if (*tune_cmd) return spgen::cli::run_tune(tune);
    for (const auto& [flag, values] : driver_values)
      for (const std::string& value : values) {
        run.driver_args.push_back(flag->name);
        run.driver_args.push_back(value);
      }
    return spgen::cli::run_run(run);
  } catch (const spgen::CompileError& e) {
    std::fputs(e.what(), stderr);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spgen: internal error: %s\n", e.what());
    return 70;
  }
}
