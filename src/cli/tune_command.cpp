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
#include "frontend/parser.h"
#include "lower.h"
#include "passes/choose_input_format.h"
#include "ref_tensor.h"
#include "reference.h"
#include "support/files.h"
#include "support/text.h"
#include "cli/tune_evaluator.h"
#include "tune/features.h"
#include "tune/format_space.h"
#include "tune/search.h"
#include "tune/tuning_db.h"

namespace spgen::cli {

namespace {

// The tensors a kernel reads from its caller: those its statements read that none writes.
std::vector<std::string> kernel_inputs(const std::string& file, const std::string& text) {
  const ast::Program program = parse_program(file, text);
  std::vector<std::string> written, inputs;
  for (const ast::Spec& statement : program.statements) written.push_back(statement.output.tensor);
  for (const ast::Spec& statement : program.statements)
    for (const ast::TensorUse& t : statement.tensors)
      if (std::find(written.begin(), written.end(), t.name) == written.end() &&
          std::find(inputs.begin(), inputs.end(), t.name) == inputs.end())
        inputs.push_back(t.name);
  return inputs;
}

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

// Every trial of every search, in order (a search's space describes its points).
void write_trials_csv(const std::string& path,
                      const std::vector<std::pair<const tune::SearchSpace*, const tune::SearchResult*>>& searches) {
  std::string text = "trial,round,elapsed_s,ok,median_ms,schedule,error\n";
  auto quoted = [](std::string v) {
    for (size_t p = v.find('"'); p != std::string::npos; p = v.find('"', p + 2)) v.insert(p, "\"");
    return "\"" + v + "\"";
  };
  size_t number = 0;
  for (const auto& [space, r] : searches)
    for (const tune::Trial& t : r->trials) {
      char row[160];
      std::snprintf(row, sizeof row, "%zu,%d,%.3f,%d,%.6f,", ++number, t.round, t.elapsed_s, t.result.ok ? 1 : 0, t.result.median_ms);
      text += row + quoted(tune::describe_point(*space, t.point)) + "," + quoted(t.result.error) + "\n";
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

namespace {

// SIGINT sets `interrupted_flag` while a search runs (Ctrl-C keeps the best so far); the
// previous handler comes back when the searches end, or on any error.
class InterruptHandler {
 public:
  InterruptHandler() {
    interrupted_flag = 0;
    isolate_children_from_interrupts();
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptHandler() { restore(); }
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;
  void restore() {
    if (restored_) return;
    sigaction(SIGINT, &previous_, nullptr);
    restored_ = true;
  }

 private:
  struct sigaction previous_ {};
  bool restored_ = false;
};

// One `spgen tune` run (docs/tune.md): the inputs checked, auto's kernel measured, the searches
// in turn (several statements: fused or apart, then each statement's schedule; formats left to
// spgen; the schedule), and what they found written out.
class Tuner {
 public:
  explicit Tuner(const TuneOptions& options);
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  int run() {
    start();
    search_fusion();
    search_statement_schedules();
    search_formats();
    search_schedule();
    if (phases_.empty())
      fail(options_.config + ": the schedule is pinned and spgen supports no other format for its \"auto\" inputs "
                             "with it: nothing to tune");
    interrupts_->restore();
    if (isatty(2)) std::fputc('\n', stderr);
    write_results();
    return 0;
  }

 private:
  struct Phase {
    const tune::SearchSpace* space;
    tune::SearchResult result;
    std::string key;
  };

  void start();
  void search_fusion();
  void search_statement_schedules();
  void search_formats();
  void search_schedule();
  void write_results();

  // The database key of a search from `config` (the formats', keyed by the config as given; the
  // schedule's, by the config with its formats).
  std::string key_of(const json& config, const std::string& search) const {
    return stable_hash(s_.spec_text + "\n" + given_.config.name + "\n" + config.dump() + "\n" + machine_ + "\nthreads " +
                       std::to_string(options_.threads) + search);
  }
  tune::SearchOptions search_options(const tune::SearchSpace& space, const std::string& key, double phase_budget) const;
  // Runs a search of `space` until `end_s` on the evaluator's clock, its points' configs from
  // `config_of`.
  const tune::SearchResult& search(const tune::SearchSpace& space, std::function<json(const tune::Point&)> config_of,
                                   const std::string& key, double end_s);
  json format_config(const std::map<std::string, nlohmann::json>& formats, const nlohmann::json& composed_schedule) const;
  json statement_config(const std::vector<std::vector<ScheduleOp>>& schedules) const;
  json statements_at(const tune::Point& p) const;

  const TuneOptions& options_;
  double budget_ = 0;
  Setup s_;
  Compilation given_;  // the config as given (s_.auto_compilation follows the chosen formats)
  bool several_ = false, schedule_open_ = false;
  std::optional<ScratchDir> scratch_;
  std::unique_ptr<KernelEvaluator> evaluator_;
  std::filesystem::path db_path_;
  std::string machine_;
  std::vector<tune::DbRecord> earlier_;
  std::optional<InterruptHandler> interrupts_;
  json auto_config_, features_;
  nlohmann::json features_plain_;  // the same, as the database and the features' reader take it
  tune::Measurement auto_first_;
  std::vector<Phase> phases_;
  // Several statements: fused or apart, and auto's equivalent; run apart, each one's schedule.
  tune::SearchSpace fuse_space_;
  json fuse_of_auto_ = nullptr;
  json apart_config_ = nullptr;
  std::optional<Compilation> apart_;
  tune::StatementSpaces statement_spaces_;
  // Formats left to spgen, and the one chosen with its composed schedule.
  tune::SearchSpace format_space_;
  std::map<std::string, nlohmann::json> chosen_formats_;
  json chosen_schedule_ = nullptr;
  // The schedule.
  tune::SearchSpace schedule_space_;
};

Tuner::Tuner(const TuneOptions& options) : options_(options) {
  budget_ = parse_duration(options.budget);
  s_.spec_path = options.spec;
  s_.spec_text = read_file(options.spec);
  s_.config_path = options.config;
  const std::string config_text = read_file(options.config);
  std::optional<Target> target = target_option(options.target);
  // The config must compile as given: its errors are the user's, with their positions.
  s_.auto_compilation = compile({s_.spec_path, s_.spec_text, s_.config_path, config_text, target, {}});
  given_ = s_.auto_compilation;
  s_.base = json::parse(config_text);
  if (target) s_.base["target"] = options.target;
  if (given_.config.target == Target::Cuda)
    fail("the cuda target is not tuned yet: tune measures on this machine's CPU; tune the cpu target");
  // A spec of several statements: fused or apart, then each statement's schedule; not yet the
  // statements' formats.
  several_ = !given_.statements.empty();
  if (several_ && !given_.config.auto_formats.empty())
    fail(options.config + ": a spec of several statements with an input's format left to spgen is not tuned yet: give each input its format");
  if (several_ && s_.base.contains("fuse"))
    fail(options.config + ": \"fuse\" is pinned: nothing to tune (in a spec of several statements tune measures them fused and apart; "
                          "leave \"fuse\" out to let it choose)");
  schedule_open_ = s_.base.contains("schedule") && s_.base["schedule"] == "auto";
  if (!schedule_open_ && given_.config.auto_formats.empty() && !several_)
    fail(options.config + ": the schedule is pinned: nothing to tune (write \"schedule\": \"auto\" to let spgen tune choose it, "
                          "or \"format\": \"auto\" on an input to let it choose that)");
  if (given_.decomposition) fail("a decomposed operand's parts are not tuned yet");
  const std::vector<std::string> inputs = kernel_inputs(s_.spec_path, s_.spec_text);
  for (const std::string& flag : options.inputs) {
    auto [name, source] = name_value("--input", flag);
    if (std::find(inputs.begin(), inputs.end(), name) == inputs.end())
      fail("--input " + flag + ": the spec has no input \"" + name + "\"");
    if (source != "random" && !std::filesystem::is_regular_file(source)) fail("--input " + flag + ": no such file: " + source);
    s_.inputs.emplace_back(name, source);
  }
  // auto as `spgen run` chooses it on these inputs: with their statistics.
  s_.auto_compilation = compile_config(s_, s_.base);
  // (Whose search would replace `auto`'s factoring with one nest's ops: not a candidate.)
  if (!s_.auto_compilation.statements.empty() && !several_)
    fail(options.spec + ": on these inputs auto factors the statement into " + std::to_string(s_.auto_compilation.statements.size()) +
         " (spgen gen --stats shows them), which tune does not search yet: keep \"schedule\": \"auto\"");
  for (const std::string& input : inputs)
    if (std::none_of(s_.inputs.begin(), s_.inputs.end(), [&](const auto& in) { return in.first == input; }))
      fail("no --input for " + input + " (give NAME=FILE, or NAME=random for seeded random values)");
  for (const std::string& flag : options.dims) {
    auto [var, n] = name_value("--dim", flag);
    char* end = nullptr;
    const long long size = std::strtoll(n.c_str(), &end, 10);
    if (*end || size <= 0) fail("--dim " + flag + ": expected a positive size");
    s_.dims[var] = size;
  }
  s_.threads = options.threads;
  s_.seed = options.seed;
  s_.verbose = options.verbose;
  const std::filesystem::path out_dir = std::filesystem::absolute(options.output).parent_path();
  if (!std::filesystem::is_directory(out_dir) || access(out_dir.c_str(), W_OK) != 0)
    fail("-o " + options.output + ": cannot write into " + out_dir.string());
}

// The scratch directory, the evaluator, the database, the SIGINT handler; then auto's kernel as
// the config gives it, measured first: its run saves the random inputs and yields the reference,
// and the features of the inputs.
void Tuner::start() {
  scratch_.emplace(options_.keep_dir, "spgen tune");
  s_.dir = scratch_->path();
  evaluator_ = std::make_unique<KernelEvaluator>(s_, &interrupted_flag);
  db_path_ = tune::tuning_db_path(options_.db);
  machine_ = cpu_model() + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";
  if (!db_path_.empty()) earlier_ = tune::read_tuning_db(db_path_);
  interrupts_.emplace();
  auto_config_ = format_config({}, nullptr);
  auto_first_ = evaluator_->measure_config(auto_config_, "auto");
  if (!auto_first_.ok) fail("auto's kernel failed on these inputs: " + auto_first_.error);
  features_ = input_features(s_, *evaluator_);
  features_plain_ = nlohmann::json::parse(features_.dump());
}

// Earlier measurements of the same structure feed the model; the winner of the most similar
// input is proposed first.
tune::SearchOptions Tuner::search_options(const tune::SearchSpace& space, const std::string& key, double phase_budget) const {
  const nlohmann::json& features = features_plain_;
  tune::SearchOptions search;
  search.budget_s = phase_budget;
  search.seed = options_.seed;
  double nearest = 1e300;
  for (const tune::DbRecord& r : earlier_) {
    if (r.key != key || !r.ok) continue;
    std::optional<tune::Point> p = tune::point_from_labels(space, r.labels);
    if (!p) continue;
    if (same_structure(r.input, features)) search.prior.push_back({*p, r.median_ms});
    if (r.winner) {
      const double d = input_distance(features, r.input);
      if (d < nearest) {
        nearest = d;
        search.seeds = {*p};
      }
    }
  }
  return search;
}

const tune::SearchResult& Tuner::search(const tune::SearchSpace& space, std::function<json(const tune::Point&)> config_of,
                                        const std::string& key, double end_s) {
  evaluator_->use(space, std::move(config_of));
  phases_.push_back({&space, tune::run_search(space, *evaluator_, search_options(space, key, end_s)), key});
  const tune::SearchResult& r = phases_.back().result;
  if (!r.auto_ok) fail("auto's kernel failed on these inputs: " + r.trials.front().result.error);
  return r;
}

// A candidate of formats (tensor -> config entry; none: the base's own): the base with them,
// and auto's schedule for them written out where the schedule is auto's, as config_with writes
// it (so the schedule search around the chosen formats starts from the same kernel).
json Tuner::format_config(const std::map<std::string, nlohmann::json>& formats, const nlohmann::json& composed_schedule) const {
  json config = config_with_formats(s_, formats);
  // A composed format's own schedule (hyb: its decomposition, each part scheduled by auto).
  if (!composed_schedule.is_null()) config["schedule"] = json::parse(composed_schedule.dump());
  if (several_ || !leaves_schedule_to_auto(config)) return config;  // (several: auto's schedule is per statement)
  try {
    const Compilation c = compile_config(s_, config);
    config["schedule"] = schedule_json(c.explicit_schedule);
    if (c.size_variants && !config.contains("specialize")) config["specialize"] = {{c.size_variants->var, c.size_variants->sizes}};
  } catch (const CompileError&) {
    // (left "auto": its build reports the refusal)
  }
  return config;
}

// 0. A spec of several statements: fused or apart, each statement scheduled by auto. A choice is
// offered where it makes a kernel other than auto's; the one that does not is auto's.
void Tuner::search_fusion() {
  if (!several_) return;
  auto text_of = [&](const json& config) {
    std::string text;
    for (const GeneratedFile& f : compile_config(s_, config).files) text += f.text;
    return text;
  };
  const std::string auto_text = text_of(auto_config_);
  fuse_space_ = tune::build_fuse_space([&](bool fuse) {
    json config = auto_config_;
    config["fuse"] = fuse;
    try {
      if (text_of(config) != auto_text) return true;
      fuse_of_auto_ = fuse;
    } catch (const CompileError&) {
    }
    return false;
  });
  if (fuse_space_.knobs.empty())
    fail(options_.spec + ": fused or apart, these statements make the same kernel on these inputs: nothing to tune");
  search(
      fuse_space_,
      [&](const tune::Point& p) {
        json config = auto_config_;
        if (const json fuse = tune::fuse_at(fuse_space_, p); !fuse.is_null()) config["fuse"] = fuse;
        return config;
      },
      key_of(auto_config_, "\nfuse"), budget_);
}

// The apart statements' config with these schedules (empty: "auto"), and "specialize" with the
// sizes auto made each statement's kernels for, which a statement given its ops keeps that way.
json Tuner::statement_config(const std::vector<std::vector<ScheduleOp>>& schedules) const {
  json config = apart_config_;
  json by_statement = json::object();
  for (size_t k = 0; k < schedules.size(); ++k)
    by_statement[std::to_string(k + 1)] = schedules[k].empty() ? json("auto") : json::parse(schedule_json(schedules[k]).dump());
  config["schedule"] = by_statement;
  if (!apart_->statement_specializations.empty()) config["specialize"] = apart_->statement_specializations;
  return config;
}

json Tuner::statements_at(const tune::Point& p) const {
  if (p == statement_spaces_.joined.origin()) return apart_config_;
  const std::vector<tune::Point> points = statement_spaces_.split(p);
  std::vector<std::vector<ScheduleOp>> schedules(points.size());
  for (size_t k = 0; k < points.size(); ++k)
    if (points[k] != statement_spaces_.each[k].origin()) schedules[k] = tune::schedule_at(statement_spaces_.each[k], points[k]);
  return statement_config(schedules);
}

// 0b. Several statements that run apart (the faster way above): each statement's own schedule,
// around auto's.
void Tuner::search_statement_schedules() {
  if (!several_ || evaluator_->interrupted()) return;
  const json fuse = tune::fuse_at(fuse_space_, phases_.back().result.best);
  if ((fuse.is_null() ? fuse_of_auto_ : fuse) != false) return;
  apart_config_ = auto_config_;
  apart_config_["fuse"] = false;
  apart_ = compile_config(s_, apart_config_);
  const size_t statements = apart_->statement_schedules.size();
  std::vector<tune::SearchSpace> each;
  for (size_t k = 0; k < statements; ++k)
    each.push_back(tune::build_search_space(apart_->statement_schedules[k], apart_->config, {}, {}, [&](const std::vector<ScheduleOp>& ops) {
      std::vector<std::vector<ScheduleOp>> schedules(statements);
      schedules[k] = ops;
      try {
        compile_config(s_, statement_config(schedules));
        return true;
      } catch (const CompileError&) {
        return false;
      }
    }));
  statement_spaces_ = tune::join_statement_spaces(std::move(each));
  if (statement_spaces_.joined.knobs.empty()) return;
  search(statement_spaces_.joined, [&](const tune::Point& p) { return statements_at(p); }, key_of(apart_config_, "\nstatements"),
         budget_);
}

// 1. Formats, where the config leaves an input's to spgen: each candidate with auto's schedule
// for it (or the pinned one), 40 % of the budget where the schedule is searched after.
void Tuner::search_formats() {
  std::map<std::string, int> open_inputs;  // (tensor -> order)
  std::map<std::string, tune::InputFeatures> known;
  for (const std::string& tensor : given_.config.auto_formats) {
    open_inputs[tensor] = given_.spec.find_tensor(tensor)->order;
    if (features_plain_.contains(tensor)) known[tensor] = tune::InputFeatures::from_json(features_plain_[tensor]);
  }
  // hyb's interleaved buckets walk one native vector of rows (AVX-512: 16 floats, 8 doubles), or
  // a warp's 32 threads on the GPU.
  const int64_t lanes = given_.config.target == Target::Cuda ? 32 : given_.config.value_type == ValueType::Float64 ? 8 : 16;
  // An input that auto itself decomposes from its statistics (SELL for short, uneven rows): its
  // default stands for that, and plain csr is measured beside it.
  std::map<std::string, std::string> auto_decomposed;
  if (const ScheduleOp* chosen = decomposition_chosen_by_auto(s_.auto_compilation.config))
    auto_decomposed[std::get<DecomposeOp>(chosen->op).tensor] = describe_schedule_op(*chosen);
  format_space_ = tune::build_format_space(
      open_inputs, known, schedule_open_, lanes,
      [&](const std::string& tensor, const tune::FormatChoice& choice) {
        try {
          compile_config(s_, format_config({{tensor, choice.entry}}, choice.schedule));
          return true;
        } catch (const CompileError&) {
          return false;
        }
      },
      auto_decomposed);
  if (format_space_.knobs.empty()) return;
  const double now = evaluator_->elapsed_s(), end = schedule_open_ ? now + 0.4 * (budget_ - now) : budget_;
  const tune::SearchResult& r = search(
      format_space_,
      [&](const tune::Point& p) {
        return p == format_space_.origin() ? auto_config_
                                           : format_config(tune::formats_at(format_space_, p), tune::format_schedule(format_space_, p));
      },
      key_of(s_.base, "\nformats"), end);
  if (r.best == format_space_.origin()) return;
  chosen_formats_ = tune::formats_at(format_space_, r.best);
  chosen_schedule_ = tune::format_schedule(format_space_, r.best);
  s_.base = format_config(chosen_formats_, chosen_schedule_);
  // The schedule search starts from the chosen format's schedule: auto's, written out (as
  // format_config wrote it), or the composed format's own.
  if (schedule_open_) {
    json rebased = s_.base;
    if (chosen_schedule_.is_null()) rebased["schedule"] = "auto";
    s_.base = rebased;
    s_.auto_compilation = compile_config(s_, s_.base);
  }
}

// 2. The schedule, around auto's for those formats; a knob's choice is kept where it compiles.
void Tuner::search_schedule() {
  if (!schedule_open_ || several_ || evaluator_->interrupted()) return;
  std::vector<std::string> dense_inputs;
  for (const ast::TensorUse& t : given_.spec.tensors)
    if (!t.is_output && s_.auto_compilation.config.format_of(t.name).all_dense()) dense_inputs.push_back(t.name);
  schedule_space_ = tune::build_search_space(s_.auto_compilation.explicit_schedule, s_.auto_compilation.config, dense_inputs,
                                             given_.spec.index_vars, [&](const std::vector<ScheduleOp>& ops) {
                                               try {
                                                 compile_candidate(s_, ops);
                                                 return true;
                                               } catch (const CompileError&) {
                                                 return false;
                                               }
                                             });
  search(schedule_space_, [&](const tune::Point& p) { return config_with(s_, tune::schedule_at(schedule_space_, p)); }, key_of(s_.base, ""),
         budget_);
}

// The tuned config (the base with the winners written out, and what was measured), the trials'
// CSV, and the database's lines.
void Tuner::write_results() {
  const Phase& last = phases_.back();
  json tuned = last.space == &schedule_space_ ? config_with(s_, tune::schedule_at(schedule_space_, last.result.best))
                                              : format_config(chosen_formats_, chosen_schedule_);
  if (last.space == &statement_spaces_.joined) tuned = statements_at(last.result.best);
  if (last.space == &fuse_space_) {  // (pinned, auto's choice too, as a tuned config pins its formats)
    const json fuse = tune::fuse_at(fuse_space_, last.result.best);
    if (!fuse.is_null()) tuned["fuse"] = fuse;
    else if (!fuse_of_auto_.is_null()) tuned["fuse"] = fuse_of_auto_;
  }
  // Every format left to spgen is written out, the default too: the tuned config pins them.
  if (!format_space_.knobs.empty())
    for (const auto& [tensor, entry] : tune::formats_at(format_space_, phases_.front().result.best))
      tuned["tensors"][tensor] = json::parse(entry.dump());
  double speedup = 1;
  std::string winner;
  for (const Phase& phase : phases_) {
    if (phase.result.best_ms > 0) speedup *= phase.result.auto_ms / phase.result.best_ms;
    if (phase.result.best != phase.space->origin())
      winner += (winner.empty() ? "" : " ") + tune::describe_point(*phase.space, phase.result.best);
  }
  if (winner.empty()) winner = "auto";
  json record;
  record["spgen"] = kVersion;
  for (const auto& [name, source] : s_.inputs) {
    json in = {{"source", source}};
    if (features_.contains(name))
      for (const char* field : {"dims", "nnz", "structure_hash"}) in[field] = features_[name][field];
    record["inputs"][name] = in;
  }
  if (!s_.dims.empty()) record["dims"] = s_.dims;
  std::string flags;
  for (const std::string& w : cpu_compiler_command()) flags += (flags.empty() ? "" : " ") + w;
  record["machine"] = {{"cpu", cpu_model()}, {"cores", std::thread::hardware_concurrency()}, {"threads", options_.threads},
                       {"compile", flags}};
  const tune::SearchResult& first = phases_.front().result;
  record["auto_ms"] = first.auto_ms;
  record["tuned_ms"] = first.auto_ms / speedup;  // (each search measures its winner against its own start)
  record["speedup"] = speedup;
  record["auto_spread"] = first.spread;
  record["winner"] = winner;
  if (!format_space_.knobs.empty()) {
    // Each format's kernel (with auto's schedule for it), fastest first.
    json measured = json::array();
    for (const auto& [p, ms] : phases_.front().result.ranking)
      measured.push_back({{"formats", tune::describe_point(format_space_, p)}, {"ms", ms}});
    record["formats"] = measured;
  }
  json alternatives = json::array();
  for (const auto& [p, ms] : last.result.ranking)
    if (p != last.result.best && alternatives.size() < 5) alternatives.push_back({{"schedule", tune::describe_point(*last.space, p)}, {"ms", ms}});
  record["alternatives"] = alternatives;
  size_t trials = 1;  // auto's first run
  for (const Phase& phase : phases_) trials += phase.result.trials.size();
  record["trials"] = trials;
  record["tuning_seconds"] = std::round(evaluator_->elapsed_s() * 10) / 10;
  record["stopped"] = last.result.stop_reason;
  record["seed"] = options_.seed;
  if (chosen_formats_.empty()) {
    record["conversion"] = "none: the tuned kernel reads the formats auto's reads";
  } else {
    // What storing an input in the chosen format costs, once, against the time it saves per call.
    const std::map<std::string, double> pack_default = evaluator_->pack_ms(auto_config_);
    const std::map<std::string, double> pack_chosen = evaluator_->pack_ms(format_config(chosen_formats_, chosen_schedule_));
    const double saved = first.auto_ms - first.best_ms;
    const nlohmann::json chosen_labels = tune::point_labels(format_space_, first.best);
    json conversion = json::array();
    for (const auto& [tensor, entry] : chosen_formats_) {
      const std::string label = chosen_labels.at("format " + tensor).get<std::string>();
      json c = {{"tensor", tensor}, {"from", auto_input_format(given_.spec.find_tensor(tensor)->order).name}, {"to", label}};
      // From csr: packing into the chosen format, or for a decomposition (of csr arrays) its
      // inspector alone.
      double cost = pack_chosen.count(tensor) ? pack_chosen.at(tensor) : 0;
      if (!chosen_schedule_.is_null()) {
        cost = pack_chosen.count("") ? pack_chosen.at("") : 0;
        c["inspect_ms"] = cost;
      }
      if (pack_chosen.count(tensor)) c["pack_ms"] = pack_chosen.at(tensor);
      if (pack_default.count(tensor)) c["default_pack_ms"] = pack_default.at(tensor);
      c["saved_ms_per_call"] = saved;
      if (cost > 0 && saved > 0) c["break_even_calls"] = std::ceil(cost / saved);
      conversion.push_back(c);
    }
    record["conversion"] = conversion;
  }
  tuned["tuned"] = record;
  write_files_atomically({{options_.output, format_config_json(tuned)}});
  if (!options_.trials_csv.empty()) {
    std::vector<std::pair<const tune::SearchSpace*, const tune::SearchResult*>> all;
    for (const Phase& phase : phases_) all.push_back({phase.space, &phase.result});
    write_trials_csv(options_.trials_csv, all);
  }

  // A line per measurement, auto's first run with the first search's; each search's winner marked.
  const nlohmann::json& features = features_plain_;
  std::vector<tune::DbRecord> records;
  auto record_trial = [&](const Phase& phase, const tune::Point& point, double ms, bool ok) {
    records.push_back({phase.key, features, tune::point_labels(*phase.space, point), ms, ok, ok && point == phase.result.best});
  };
  record_trial(phases_.front(), phases_.front().space->origin(), auto_first_.median_ms, true);
  for (const Phase& phase : phases_)
    for (const tune::Trial& t : phase.result.trials) record_trial(phase, t.point, t.result.median_ms, t.result.ok);
  if (!tune::append_tuning_db(db_path_, records))
    std::fprintf(stderr, "spgen tune: warning: cannot write the tuning database %s\n", db_path_.c_str());

  std::fprintf(stderr, "spgen tune: auto %.4f ms, tuned %.4f ms (%.2fx): %s; %zu candidates in %.0f s (stopped: %s); wrote %s\n",
               first.auto_ms, first.auto_ms / speedup, speedup, winner.c_str(), trials, evaluator_->elapsed_s(),
               last.result.stop_reason.c_str(), options_.output.c_str());
}

}  // namespace

int run_tune(const TuneOptions& options) { return Tuner(options).run(); }

}  // namespace spgen::cli
