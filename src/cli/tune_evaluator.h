// How `spgen tune` measures a candidate (cli/tune_command.cpp runs the searches): a candidate is
// a config; its kernel is compiled as `spgen run` compiles it, with a driver, run on the user's
// inputs, and its first output checked against the reference evaluator.
#pragma once

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lower.h"
#include "ref_tensor.h"
#include "tune/search.h"

namespace spgen::cli {

using json = nlohmann::ordered_json;

// What the tuner needs to know about the run it measures.
struct Setup {
  std::string spec_path, spec_text, config_path;
  json base;  // the config as given, key order kept
  Compilation auto_compilation;
  std::vector<std::pair<std::string, std::string>> inputs;  // NAME -> FILE or "random"
  std::map<std::string, int64_t> dims;
  int threads = 0;
  uint64_t seed = 1;
  std::filesystem::path dir;
  bool verbose = false;
  // Each input file's statistics, read once: every candidate that `auto` schedules needs them,
  // and reading a large matrix takes seconds.
  mutable std::map<std::string, InputStats> stats_read;
};

// The base config with `ops` as its schedule. Auto's kernels for sizes of one index variable
// (passes/size_variants.h) become "specialize", so that every candidate has them too.
json config_with(const Setup& s, const std::vector<ScheduleOp>& ops);
// Whether the config leaves its schedule, or its decomposition's parts', to `auto`: "auto", or
// [decompose, "auto"].
bool leaves_schedule_to_auto(const json& config);
// A candidate's config compiled as `spgen run` compiles it: where its schedule is "auto" (a
// format's own schedule), with the inputs' statistics.
Compilation compile_config(const Setup& s, const json& config);
Compilation compile_candidate(const Setup& s, const std::vector<ScheduleOp>& ops);
// The base config with each tensor's entry of `formats` in place of its own (the schedule kept).
json config_with_formats(const Setup& s, const std::map<std::string, nlohmann::json>& formats);

// Builds each candidate's driver once, runs it, and checks its first output against the
// reference (computed after the first run, which also saves the random inputs). A candidate is
// a config: a point of the space in use (`use`) stands for the config `config_of` gives it.
class KernelEvaluator : public tune::Evaluator {
 public:
  // `interrupted`: set by the caller's SIGINT handler.
  KernelEvaluator(const Setup& setup, const volatile std::sig_atomic_t* interrupted);

  void use(const tune::SearchSpace& space, std::function<json(const tune::Point&)> config_of) {
    space_ = &space;
    config_of_ = std::move(config_of);
  }

  // Builds the points' drivers, as many at once as there are cores (each build is mostly one
  // compiler run; nothing is measured meanwhile). Spgen itself lowers them one by one.
  void prepare(const std::vector<tune::Point>& points) override;
  void prepare_configs(const std::vector<json>& configs);
  tune::Measurement measure(const tune::Point& point) override;
  // `what`: the candidate, for a warning.
  tune::Measurement measure_config(const json& config, const std::string& what);
  double elapsed_s() const override;
  bool interrupted() const override { return *interrupted_ != 0; }
  void progress(size_t measured, size_t space_size, double best_ms, double auto_ms) override;

  // The inputs as the kernels saw them (random ones as auto's run saved them), read once for the
  // reference; empty until auto's kernel has run.
  const std::map<std::string, spgen_ref::Tensor>& inputs() const { return inputs_; }
  std::string saved_input(const std::string& name) const { return (s_.dir / ("input-" + name + ".tns")).string(); }
  // The time its last run took to pack each sparse input of `config` (and under "" a
  // decomposition's inspector); empty until measured.
  std::map<std::string, double> pack_ms(const json& config) const;

 private:
  struct Build {
    std::string binary;  // empty: refused by spgen or the compiler, or wrong
    std::string error;
    bool checked = false;  // its output matched the reference
    std::map<std::string, double> pack_ms;
  };
  void compute_reference();
  Build build(const Compilation& c, const std::filesystem::path& dir) const;

  const Setup& s_;
  const volatile std::sig_atomic_t* interrupted_;
  const tune::SearchSpace* space_ = nullptr;
  std::function<json(const tune::Point&)> config_of_;
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, Build> builds_;  // by config text
  size_t next_dir_ = 0;
  std::map<std::string, spgen_ref::Tensor> inputs_;
  std::optional<spgen_ref::Tensor> reference_, magnitude_;
  std::string output_name_, output_ext_;
  bool f32_ = true;
  int repeat_ = 5;
};

// Features of each sparse input (an input whose format is all dense has none worth recording).
json input_features(const Setup& s, const KernelEvaluator& evaluator);

}  // namespace spgen::cli
