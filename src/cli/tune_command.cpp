// `spgen tune`: search schedules for a spec on the user's inputs, measuring each candidate as
// `spgen run` builds it, checked against the reference evaluator; write the fastest as a config.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/driver_build.h"
#include "frontend/config_writer.h"
#include "lower.h"
#include "ref_tensor.h"
#include "reference.h"
#include "support/files.h"
#include "support/text.h"
#include "tune/features.h"
#include "tune/search.h"
#include "tune/tuning_db.h"

namespace spgen::cli {

using json = nlohmann::ordered_json;

namespace {

volatile std::sig_atomic_t interrupted_flag = 0;
extern "C" void on_interrupt(int) { interrupted_flag = 1; }

[[noreturn]] void fail(const std::string& message) { throw CompileError("spgen tune: error: " + message + "\n"); }

std::pair<std::string, std::string> name_value(const std::string& flag, const std::string& text) {
  std::optional<std::pair<std::string, std::string>> parts = split_name_value(text);
  if (!parts) fail(flag + " " + text + ": expected NAME=VALUE");
  return *parts;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The last non-empty line of a log: a driver's or compiler's own reason.
std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) last = line;
  return last;
}

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
};

// The base config with `ops` as its schedule. Auto's kernels for sizes of one index variable
// (passes/size_variants.h) become "specialize", so that every candidate has them too.
json config_with(const Setup& s, const std::vector<ScheduleOp>& ops) {
  json config = s.base;
  config["schedule"] = schedule_json(ops);
  if (const auto& variants = s.auto_compilation.size_variants; variants && !config.contains("specialize"))
    config["specialize"] = {{variants->var, variants->sizes}};
  return config;
}

std::string config_text_for(const Setup& s, const std::vector<ScheduleOp>& ops) { return config_with(s, ops).dump(); }

Compilation compile_candidate(const Setup& s, const std::vector<ScheduleOp>& ops) {
  return compile({s.spec_path, s.spec_text, s.config_path, config_text_for(s, ops), std::nullopt, {}});
}

// Builds each candidate's driver once, runs it, and checks its first output against the
// reference (computed after auto's run, which also saves the random inputs).
class KernelEvaluator : public tune::Evaluator {
 public:
  KernelEvaluator(const Setup& setup, const tune::SearchSpace& space)
      : s_(setup), space_(space), start_(std::chrono::steady_clock::now()) {
    const ast::TensorUse& out = s_.auto_compilation.spec.tensors.front();
    output_name_ = out.name;
    output_ext_ = out.order <= 2 ? ".mtx" : ".tns";
    f32_ = s_.auto_compilation.config.value_type == ValueType::Float32;
  }

  // Builds the points' drivers, as many at once as there are cores (each build is mostly one
  // compiler run; nothing is measured meanwhile). Spgen itself lowers them one by one.
  void prepare(const std::vector<tune::Point>& points) override {
    std::vector<std::pair<tune::Point, Compilation>> todo;
    for (const tune::Point& p : points) {
      if (builds_.count(p)) continue;
      try {
        todo.emplace_back(p, compile_candidate(s_, tune::schedule_at(space_, p)));
      } catch (const CompileError& e) {
        builds_[p] = {"", "refused: " + first_line(e.what()), false};
      }
    }
    const size_t workers = std::max(1u, std::thread::hardware_concurrency());
    for (size_t start = 0; start < todo.size(); start += workers) {
      std::vector<std::thread> threads;
      std::vector<Build> done(std::min(workers, todo.size() - start));
      for (size_t k = 0; k < done.size(); ++k) {
        const std::filesystem::path dir = s_.dir / ("candidate-" + std::to_string(next_dir_++));
        threads.emplace_back([&, k, dir] { done[k] = build(todo[start + k].second, dir); });
      }
      for (std::thread& t : threads) t.join();
      for (size_t k = 0; k < done.size(); ++k) builds_[todo[start + k].first] = done[k];
    }
  }

  tune::Measurement measure(const tune::Point& point) override {
    if (!builds_.count(point)) prepare({point});
    Build& built = builds_[point];
    if (built.binary.empty()) return {false, 0, built.error};
    const bool first = !built.checked;
    const std::filesystem::path run_dir = std::filesystem::path(built.binary).parent_path();
    std::vector<std::string> args = {built.binary, "--repeat", std::to_string(repeat_), "--warmup", "1",
                                     "--seed", std::to_string(s_.seed)};
    for (const auto& [name, source] : s_.inputs) args.insert(args.end(), {"--input", name + "=" + source});
    for (const auto& [var, n] : s_.dims) args.insert(args.end(), {"--dim", var + "=" + std::to_string(n)});
    if (s_.threads > 0) args.insert(args.end(), {"--threads", std::to_string(s_.threads)});
    const std::string output = (run_dir / ("output" + output_ext_)).string();
    if (first) args.insert(args.end(), {"--output", output_name_ + "=" + output});
    if (!reference_)
      for (const auto& [name, source] : s_.inputs)
        if (source == "random") args.insert(args.end(), {"--save-input", name + "=" + saved_input(name)});
    const std::string log = (run_dir / "run.log").string();
    const int status = spawn(args, log);
    const std::string text = read_file(log);
    if (status != 0) return {false, 0, "the driver failed (exit " + std::to_string(status) + "): " + last_line(text)};
    const size_t at = text.find("time_ms median=");
    if (at == std::string::npos) return {false, 0, "the driver printed no time"};
    tune::Measurement m{true, std::strtod(text.c_str() + at + 15, nullptr), ""};
    if (!reference_) {
      compute_reference();
      // Each later run repeats the kernel for about a quarter of a second (odd: a true median).
      repeat_ = static_cast<int>(std::clamp(std::ceil(250.0 / std::max(m.median_ms, 1e-3)), 5.0, 101.0)) | 1;
    }
    if (first) {
      // Float sums may round by up to a few units of the sum of their terms' magnitudes (more
      // than rtol of the result, where terms cancel): allowed; a wrong kernel is off by more.
      const double unit = f32_ ? 0x1p-24 : 0x1p-53;
      spgen_ref::Comparison cmp = spgen_ref::compare(spgen_ref::read_tensor(output), *reference_, f32_ ? 2e-4 : 1e-9,
                                                     f32_ ? 2e-4 : 1e-9, *magnitude_, 64 * unit);
      if (!cmp.ok) {
        std::fprintf(stderr, "spgen tune: warning: %s gives wrong results (a bug in spgen; please report it): %s\n",
                     tune::describe_point(space_, point).c_str(), cmp.message.c_str());
        built = {"", "wrong result: " + cmp.message, true};
        return {false, m.median_ms, built.error};
      }
      built.checked = true;
    }
    return m;
  }

  double elapsed_s() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  bool interrupted() const override { return interrupted_flag != 0; }

  void progress(size_t measured, size_t space_size, double best_ms, double auto_ms) override {
    if (!isatty(2)) return;
    std::fprintf(stderr, "\rspgen tune: candidate %zu (of %zu) · best %.4f ms · auto %.4f ms · %.0f s   ", measured, space_size,
                 best_ms, auto_ms, elapsed_s());
    std::fflush(stderr);
  }

  // The inputs as the kernels saw them (random ones as auto's run saved them), read once for the
  // reference; empty until auto's kernel has run.
  const std::map<std::string, spgen_ref::Tensor>& inputs() const { return inputs_; }
  std::string saved_input(const std::string& name) const { return (s_.dir / ("input-" + name + ".tns")).string(); }

 private:
  void compute_reference() {
    for (const auto& [name, source] : s_.inputs)
      inputs_[name] = spgen_ref::read_tensor(source == "random" ? saved_input(name) : source);
    reference_ = spgen_ref::evaluate(s_.spec_text, inputs_, s_.dims);
    magnitude_ = spgen_ref::evaluate_magnitude(s_.spec_text, inputs_, s_.dims);
  }

  struct Build {
    std::string binary;  // empty: refused by spgen or the compiler, or wrong
    std::string error;
    bool checked = false;  // its output matched the reference
  };

  Build build(const Compilation& c, const std::filesystem::path& dir) const {
    try {
      std::filesystem::create_directories(dir);
      return {build_driver(c, dir, {{}, s_.verbose}), "", false};
    } catch (const CompileError& e) {
      return {"", "the C++ compiler refused it: " + first_line(e.what()), false};
    }
  }

  const Setup& s_;
  const tune::SearchSpace& space_;
  std::chrono::steady_clock::time_point start_;
  std::map<tune::Point, Build> builds_;
  size_t next_dir_ = 0;
  std::map<std::string, spgen_ref::Tensor> inputs_;
  std::optional<spgen_ref::Tensor> reference_, magnitude_;
  std::string output_name_, output_ext_;
  bool f32_ = true;
  int repeat_ = 5;
};

// Features of each sparse input (an input whose format is all dense has none worth recording).
json input_features(const Setup& s, const KernelEvaluator& evaluator) {
  json features = json::object();
  for (const auto& [name, source] : s.inputs) {
    if (s.auto_compilation.config.format_of(name).all_dense()) continue;
    features[name] = json::parse(tune::input_features(evaluator.inputs().at(name)).to_json().dump());
  }
  return features;
}

// How far apart two runs' inputs are (sparse inputs by name; unlike names: infinitely).
double input_distance(const nlohmann::json& a, const nlohmann::json& b) {
  double d = 0;
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (!b.contains(it.key())) return 1e300;
    d += tune::feature_distance(tune::InputFeatures::from_json(it.value()), tune::InputFeatures::from_json(b[it.key()]));
  }
  return d;
}

bool same_structure(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.size() != b.size()) return false;
  for (auto it = a.begin(); it != a.end(); ++it)
    if (!b.contains(it.key()) || b[it.key()].value("structure_hash", "") != it.value().value("structure_hash", "")) return false;
  return true;
}

void write_trials_csv(const std::string& path, const tune::SearchSpace& space, const tune::SearchResult& r) {
  std::string text = "trial,round,elapsed_s,ok,median_ms,schedule,error\n";
  auto quoted = [](std::string v) {
    for (size_t p = v.find('"'); p != std::string::npos; p = v.find('"', p + 2)) v.insert(p, "\"");
    return "\"" + v + "\"";
  };
  for (size_t k = 0; k < r.trials.size(); ++k) {
    const tune::Trial& t = r.trials[k];
    char row[160];
    std::snprintf(row, sizeof row, "%zu,%d,%.3f,%d,%.6f,", k + 1, t.round, t.elapsed_s, t.result.ok ? 1 : 0, t.result.median_ms);
    text += row + quoted(tune::describe_point(space, t.point)) + "," + quoted(t.result.error) + "\n";
  }
  write_files_atomically({{path, text}});
}

}  // namespace

double parse_duration(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = used ? text.substr(used) : "";
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" || unit == "min" ? 60 : unit == "h" ? 3600 : 0;
  if (used == 0 || scale == 0 || !(value > 0) || !std::isfinite(value))
    fail("--budget " + text + ": expected a positive duration such as 60s, 2m or 90 (seconds)");
  return value * scale;
}

int run_tune(const TuneOptions& options) {
  const double budget = parse_duration(options.budget);
  Setup s;
  s.spec_path = options.spec;
  s.spec_text = read_file(options.spec);
  s.config_path = options.config;
  const std::string config_text = read_file(options.config);
  std::optional<Target> target = target_option(options.target);
  // The config must compile as given: its errors are the user's, with their positions.
  s.auto_compilation = compile({s.spec_path, s.spec_text, s.config_path, config_text, target, {}});
  const Compilation& given = s.auto_compilation;
  s.base = json::parse(config_text);
  if (target) s.base["target"] = options.target;
  if (given.config.target == Target::Cuda)
    fail("the cuda target is not tuned yet: tune measures on this machine's CPU; tune the cpu target");
  if (!s.base.contains("schedule") || s.base["schedule"] != "auto")
    fail(options.config + ": the schedule is pinned: nothing to tune (write \"schedule\": \"auto\" to let spgen tune choose it)");
  if (given.decomposition) fail("a decomposed operand's parts are not tuned yet");
  for (const std::string& flag : options.inputs) {
    auto [name, source] = name_value("--input", flag);
    if (!given.spec.find_tensor(name) || given.spec.find_tensor(name)->is_output)
      fail("--input " + flag + ": the spec has no input \"" + name + "\"");
    if (source != "random" && !std::filesystem::is_regular_file(source)) fail("--input " + flag + ": no such file: " + source);
    s.inputs.emplace_back(name, source);
  }
  // auto as `spgen run` chooses it on these inputs: with their statistics.
  CompileInput with_stats{s.spec_path, s.spec_text, s.config_path, config_text, target, {}};
  for (const auto& [name, source] : s.inputs)
    if (source != "random") with_stats.stats_files[name] = source;
  with_stats.read_stats = read_stats_file;
  with_stats.stats_flag = "--input";
  if (!with_stats.stats_files.empty()) s.auto_compilation = compile(with_stats);
  for (const ast::TensorUse& t : given.spec.tensors)
    if (!t.is_output && std::none_of(s.inputs.begin(), s.inputs.end(), [&](const auto& in) { return in.first == t.name; }))
      fail("no --input for " + t.name + " (give NAME=FILE, or NAME=random for seeded random values)");
  for (const std::string& flag : options.dims) {
    auto [var, n] = name_value("--dim", flag);
    char* end = nullptr;
    const long long size = std::strtoll(n.c_str(), &end, 10);
    if (*end || size <= 0) fail("--dim " + flag + ": expected a positive size");
    s.dims[var] = size;
  }
  s.threads = options.threads;
  s.seed = options.seed;
  s.verbose = options.verbose;
  const std::filesystem::path out_dir = std::filesystem::absolute(options.output).parent_path();
  if (!std::filesystem::is_directory(out_dir) || access(out_dir.c_str(), W_OK) != 0)
    fail("-o " + options.output + ": cannot write into " + out_dir.string());

  // The space around auto's schedule; a knob's choice is kept where it compiles.
  std::vector<std::string> dense_inputs;
  for (const ast::TensorUse& t : given.spec.tensors)
    if (!t.is_output && given.config.format_of(t.name).all_dense()) dense_inputs.push_back(t.name);
  tune::SearchSpace space = tune::build_search_space(given.explicit_schedule, given.config, dense_inputs, given.spec.index_vars,
                                                     [&](const std::vector<ScheduleOp>& ops) {
                                                       try {
                                                         compile_candidate(s, ops);
                                                         return true;
                                                       } catch (const CompileError&) {
                                                         return false;
                                                       }
                                                     });
  ScratchDir scratch(options.keep_dir, "spgen tune");
  s.dir = scratch.path();
  KernelEvaluator evaluator(s, space);

  // The database: what earlier runs found for this spec, target, types and machine.
  const std::filesystem::path db_path = tune::tuning_db_path(options.db);
  const std::string machine = cpu_model() + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";
  const std::string key = stable_hash(s.spec_text + "\n" + given.config.name + "\n" + json::parse(config_text).dump() + "\n" + machine +
                                    "\nthreads " + std::to_string(options.threads));
  std::vector<tune::DbRecord> earlier = db_path.empty() ? std::vector<tune::DbRecord>{} : tune::read_tuning_db(db_path);

  interrupted_flag = 0;
  isolate_children_from_interrupts();
  struct sigaction action {}, previous {};
  action.sa_handler = on_interrupt;
  sigaction(SIGINT, &action, &previous);
  tune::SearchOptions search;
  search.budget_s = budget;
  search.seed = options.seed;
  // Seeds and prior measurements need the inputs' features, which need auto's run first (random
  // inputs are saved by it): the search proposes them after measuring auto.
  tune::Measurement auto_first = evaluator.measure(space.origin());
  if (!auto_first.ok) {
    sigaction(SIGINT, &previous, nullptr);
    fail("auto's kernel failed on these inputs: " + auto_first.error);
  }
  json features = input_features(s, evaluator);
  const nlohmann::json features_plain = nlohmann::json::parse(features.dump());
  double nearest = 1e300;
  for (const tune::DbRecord& r : earlier) {
    if (r.key != key || !r.ok) continue;
    std::optional<tune::Point> p = tune::point_from_labels(space, r.labels);
    if (!p) continue;
    if (same_structure(r.input, features_plain)) search.prior.push_back({*p, r.median_ms});
    if (r.winner) {
      const double d = input_distance(features_plain, r.input);
      if (d < nearest) {
        nearest = d;
        search.seeds = {*p};
      }
    }
  }
  tune::SearchResult result = tune::run_search(space, evaluator, search);
  sigaction(SIGINT, &previous, nullptr);
  if (isatty(2)) std::fputc('\n', stderr);
  if (!result.auto_ok) fail("auto's kernel failed on these inputs: " + result.trials.front().result.error);

  // The tuned config: the base with the winner's schedule written out, and what was measured.
  json tuned = config_with(s, tune::schedule_at(space, result.best));
  json record;
  record["spgen"] = kVersion;
  for (const auto& [name, source] : s.inputs) {
    json in = {{"source", source}};
    if (features.contains(name))
      for (const char* field : {"dims", "nnz", "structure_hash"}) in[field] = features[name][field];
    record["inputs"][name] = in;
  }
  if (!s.dims.empty()) record["dims"] = s.dims;
  std::string flags;
  for (const std::string& w : cpu_compiler_command()) flags += (flags.empty() ? "" : " ") + w;
  record["machine"] = {{"cpu", cpu_model()}, {"cores", std::thread::hardware_concurrency()}, {"threads", options.threads},
                       {"compile", flags}};
  record["auto_ms"] = result.auto_ms;
  record["tuned_ms"] = result.best_ms;
  record["speedup"] = result.best_ms > 0 ? result.auto_ms / result.best_ms : 1.0;
  record["auto_spread"] = result.spread;
  record["winner"] = tune::describe_point(space, result.best);
  json alternatives = json::array();
  for (const auto& [p, ms] : result.ranking)
    if (p != result.best && alternatives.size() < 5) alternatives.push_back({{"schedule", tune::describe_point(space, p)}, {"ms", ms}});
  record["alternatives"] = alternatives;
  record["trials"] = result.trials.size() + 1;  // with auto's first run
  record["tuning_seconds"] = std::round(evaluator.elapsed_s() * 10) / 10;
  record["stopped"] = result.stop_reason;
  record["seed"] = options.seed;
  record["conversion"] = "none: the tuned kernel reads the formats auto's reads";
  tuned["tuned"] = record;
  write_files_atomically({{options.output, format_config_json(tuned)}});
  if (!options.trials_csv.empty()) write_trials_csv(options.trials_csv, space, result);

  std::vector<tune::DbRecord> records;
  records.push_back({key, features_plain, tune::point_labels(space, space.origin()), auto_first.median_ms, true, false});
  for (const tune::Trial& t : result.trials)
    records.push_back({key, features_plain, tune::point_labels(space, t.point), t.result.median_ms, t.result.ok, false});
  for (tune::DbRecord& r : records) r.winner = r.ok && r.labels == tune::point_labels(space, result.best);
  if (!tune::append_tuning_db(db_path, records))
    std::fprintf(stderr, "spgen tune: warning: cannot write the tuning database %s\n", db_path.c_str());

  std::fprintf(stderr, "spgen tune: auto %.4f ms, tuned %.4f ms (%.2fx): %s; %zu candidates in %.0f s (stopped: %s); wrote %s\n",
               result.auto_ms, result.best_ms, result.best_ms > 0 ? result.auto_ms / result.best_ms : 1.0,
               tune::describe_point(space, result.best).c_str(), result.trials.size() + 1, evaluator.elapsed_s(),
               result.stop_reason.c_str(), options.output.c_str());
  return 0;
}

}  // namespace spgen::cli
