#include "cli/tune_evaluator.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/driver_build.h"
#include "frontend/config_writer.h"
#include "ref_structure.h"
#include "ref_statements.h"
#include "reference.h"
#include "support/files.h"
#include "support/text.h"
#include "tune/features.h"

namespace spgen::cli {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The last non-empty line of a log: a driver's or compiler's own reason.
std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

// The base config with `ops` as its schedule. Auto's kernels for sizes of one index variable
// (passes/size_variants.h) become "specialize", so that every candidate has them too.
json config_with(const Setup& s, const std::vector<ScheduleOp>& ops) {
  json config = s.base;
  config["schedule"] = schedule_json(ops);
  if (const auto& variants = s.auto_compilation.size_variants; variants && !config.contains("specialize"))
    config["specialize"] = {{variants->var, variants->sizes}};
  return config;
}

// A candidate's config compiled as `spgen run` compiles it: where its schedule is "auto" (a
// format's own schedule), with the inputs' statistics.
bool leaves_schedule_to_auto(const json& config) {
  if (!config.contains("schedule")) return false;
  const json& schedule = config["schedule"];
  return schedule == "auto" || (schedule.is_array() && !schedule.empty() && schedule.back() == "auto");
}

Compilation compile_config(const Setup& s, const json& config) {
  CompileInput input{s.spec_path, s.spec_text, s.config_path, config.dump(), std::nullopt, {}};
  if (config.contains("schedule") && config["schedule"] == "auto") {
    for (const auto& [name, source] : s.inputs)
      if (source != "random") input.stats_files[name] = source;
    input.read_stats = [&s](const std::string& path) {
      auto read = s.stats_read.find(path);
      if (read == s.stats_read.end()) read = s.stats_read.emplace(path, read_stats_file(path)).first;
      return read->second;
    };
    input.stats_flag = "--input";
  }
  return compile(input);
}

Compilation compile_candidate(const Setup& s, const std::vector<ScheduleOp>& ops) { return compile_config(s, config_with(s, ops)); }

// The base config with each tensor's entry of `formats` in place of its own (the schedule kept).
json config_with_formats(const Setup& s, const std::map<std::string, nlohmann::json>& formats) {
  json config = s.base;
  for (const auto& [tensor, entry] : formats) config["tensors"][tensor] = json::parse(entry.dump());
  return config;
}

KernelEvaluator::KernelEvaluator(const Setup& setup, const volatile std::sig_atomic_t* interrupted)
    : s_(setup), interrupted_(interrupted), start_(std::chrono::steady_clock::now()) {
  const ast::TensorUse& out = s_.auto_compilation.spec.tensors.front();
  output_name_ = out.name;
  output_ext_ = out.order <= 2 ? ".mtx" : ".tns";
  f32_ = s_.auto_compilation.config.value_type == ValueType::Float32;
}

void KernelEvaluator::prepare(const std::vector<tune::Point>& points) {
  std::vector<json> configs;
  for (const tune::Point& p : points) configs.push_back(config_of_(p));
  prepare_configs(configs);
}

void KernelEvaluator::prepare_configs(const std::vector<json>& configs) {
  std::vector<std::pair<std::string, Compilation>> todo;
  for (const json& config : configs) {
    const std::string key = config.dump();
    if (builds_.count(key) || std::any_of(todo.begin(), todo.end(), [&](const auto& t) { return t.first == key; })) continue;
    try {
      todo.emplace_back(key, compile_config(s_, config));
    } catch (const CompileError& e) {
      builds_[key] = {"", "refused: " + first_line(e.what()), false, {}};
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

tune::Measurement KernelEvaluator::measure(const tune::Point& point) {
  return measure_config(config_of_(point), tune::describe_point(*space_, point));
}

tune::Measurement KernelEvaluator::measure_config(const json& config, const std::string& what) {
  const std::string key = config.dump();
  if (!builds_.count(key)) prepare_configs({config});
  Build& built = builds_[key];
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
  // What packing each sparse input took (`pack_ms A=0.1234`): the cost of its format, once.
  for (size_t p = text.find("pack_ms "); p != std::string::npos; p = text.find("pack_ms ", p + 8))
    if (std::optional<std::pair<std::string, std::string>> nv = split_name_value(text.substr(p + 8, text.find('\n', p) - p - 8)))
      built.pack_ms[nv->first] = std::strtod(nv->second.c_str(), nullptr);
  if (const size_t at_inspect = text.find("inspect_ms="); at_inspect != std::string::npos)
    built.pack_ms[""] = std::strtod(text.c_str() + at_inspect + 11, nullptr);  // (a decomposition's inspector)
  if (!reference_) {
    compute_reference();
    // Each later run repeats the kernel for about a quarter of a second (odd: a true median).
    repeat_ = static_cast<int>(std::clamp(std::ceil(250.0 / std::max(m.median_ms, 1e-3)), 5.0, 101.0)) | 1;
  }
  if (first) {
    // Float sums may round by up to a few units of the sum of their terms' magnitudes (more
    // than rtol of the result, where terms cancel): allowed; a wrong kernel is off by more.
    const double unit = f32_ ? 0x1p-24 : 0x1p-53;
    const double tolerance = f32_ ? 2e-4 : 1e-9;
    spgen_ref::Comparison cmp =
        magnitude_ ? spgen_ref::compare(spgen_ref::read_tensor(output), *reference_, tolerance, tolerance, *magnitude_, 64 * unit)
                   : spgen_ref::compare(spgen_ref::read_tensor(output), *reference_, tolerance, tolerance);
    if (!cmp.ok) {
      std::fprintf(stderr, "spgen tune: warning: %s gives wrong results (a bug in spgen; please report it): %s\n",
                   what.c_str(), cmp.message.c_str());
      built = {"", "wrong result: " + cmp.message, true, {}};
      return {false, m.median_ms, built.error};
    }
    built.checked = true;
  }
  return m;
}

double KernelEvaluator::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void KernelEvaluator::progress(size_t measured, size_t space_size, double best_ms, double auto_ms) {
  if (!isatty(2)) return;
  std::fprintf(stderr, "\rspgen tune: candidate %zu (of %zu) · best %.4f ms · auto %.4f ms · %.0f s   ", measured, space_size,
               best_ms, auto_ms, elapsed_s());
  std::fflush(stderr);
}

std::map<std::string, double> KernelEvaluator::pack_ms(const json& config) const {
  auto at = builds_.find(config.dump());
  return at == builds_.end() ? std::map<std::string, double>{} : at->second.pack_ms;
}

void KernelEvaluator::compute_reference() {
  for (const auto& [name, source] : s_.inputs)
    inputs_[name] = spgen_ref::read_tensor(source == "random" ? saved_input(name) : source);
  std::map<std::string, spgen_ref::Tensor> inputs = inputs_;
  if (!s_.auto_compilation.statements.empty()) {
    // Several statements: each evaluated in turn, its result stored as the kernel stores it (dense,
    // or on the entries of its "structure"); the last one's output is the kernel's.
    std::map<std::string, spgen_ref::StoredAs> stored;
    for (const auto& [tensor, format] : s_.auto_compilation.written_formats) {
      spgen_ref::StoredAs& how = stored[tensor];
      how.dense = format.all_dense();
      if (s_.base.contains("tensors") && s_.base["tensors"].contains(tensor) && s_.base["tensors"][tensor].contains("structure"))
        how.structure = s_.base["tensors"][tensor]["structure"].get<std::string>();
    }
    reference_ = spgen_ref::evaluate_statements(s_.spec_text, inputs, stored, s_.dims).at(output_name_);
    return;  // (no magnitude: the evaluator of several statements gives none)
  }
  // An output with a "structure": the spec on that input's entries only.
  const std::string spec_text = spgen_ref::on_entries_of(s_.spec_text, s_.auto_compilation.config.output_structure, inputs);
  reference_ = spgen_ref::evaluate(spec_text, inputs, s_.dims);
  magnitude_ = spgen_ref::evaluate_magnitude(spec_text, inputs, s_.dims);
}

KernelEvaluator::Build KernelEvaluator::build(const Compilation& c, const std::filesystem::path& dir) const {
  try {
    std::filesystem::create_directories(dir);
    return {build_driver(c, dir, {{}, s_.verbose}), "", false, {}};
  } catch (const CompileError& e) {
    return {"", "the C++ compiler refused it: " + first_line(e.what()), false, {}};
  }
}

// Features of each sparse input (an input whose format is all dense has none worth recording).
json input_features(const Setup& s, const KernelEvaluator& evaluator) {
  json features = json::object();
  for (const auto& [name, source] : s.inputs) {
    if (s.auto_compilation.config.format_of(name).all_dense()) continue;
    features[name] = json::parse(tune::input_features(evaluator.inputs().at(name)).to_json().dump());
  }
  return features;
}

}  // namespace spgen::cli
