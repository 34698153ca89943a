// Numeric end-to-end tests: every spec/config pair in specs/ and tests/e2e/cases/ goes through
// `spgen run` (generate, compile with $CXX, run), and the output file is compared with the
// independent reference evaluator (src/reference/reference.cpp, which shares no code with the
// compiler) on the same inputs: random ones of several shapes, and real matrices from
// ../shared/data when it exists. CUDA kernels run on the CPU, through the emulator of
// tests/cuda_emu (nvcc-emu as $NVCC).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "frontend/config.h"
#include "frontend/parser.h"
#include "lower.h"
#include "passes/build_sparse_ir.h"
#include "passes/split_sum.h"
#include "process.h"
#include "ref_structure.h"
#include "ref_tensor.h"
#include "reference.h"
#include "spec_pairs.h"
#include "support/files.h"

using namespace spgen_test;

namespace {

struct Kernel {
  SpecConfigPair pair;
  spgen::ast::Spec spec;
  spgen::Config config;
};

bool is_cuda(const Kernel& k) { return k.config.target == spgen::Target::Cuda; }

// Whether k's driver is built quickly (-O0, by clang where there is one): the many
// cases of tests/e2e/cases, and the emulated CUDA kernels, whose runs on tiny inputs take
// hundredths of a second while their compile takes seconds. The kernels of specs/ are built as
// `spgen run` builds them by default (-O3, $CXX or c++).
bool from_specs(const Kernel& k) { return k.pair.config.rfind(source_root() + "/specs/", 0) == 0; }
bool built_quickly(const Kernel& k) { return !from_specs(k) || is_cuda(k); }

// SPGEN_E2E_SHARD=k/n: (k, n); (0, 1) without it.
std::pair<size_t, size_t> shard_setting() {
  size_t shard = 0, shards = 1;
  if (const char* spec = std::getenv("SPGEN_E2E_SHARD")) {
    std::string text = spec;
    size_t slash = text.find('/');
    if (slash != std::string::npos) {
      shard = std::stoul(text.substr(0, slash));
      shards = std::max<size_t>(1, std::stoul(text.substr(slash + 1)));
    }
  }
  return {shard, shards};
}

// The shards of one `meson test` run (SPGEN_E2E_SHARD=k/n, their parent the same process) take
// their configs from one list, each config the first claimer's: a file created with O_EXCL in
// SPGEN_E2E_CLAIMS/<the parent's pid>/ (else under the temporary directory). So both shards
// stay busy to the end, whatever each config costs (a static split by estimated cost left one
// core idle for five minutes). Without SPGEN_E2E_SHARD every config is this process's.
class Claims {
 public:
  static Claims& instance() {
    static Claims claims;
    return claims;
  }

  // Whether this process takes `name` in `phase` (the random-input or the real-matrix test).
  bool take(const std::string& phase, const std::string& name) {
    if (dir_.empty()) return true;
    const std::string path = dir_ + "/" + phase + "-" + name;
    const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) return false;
    close(fd);
    mine_.insert(phase + "-" + name);
    return true;
  }
  bool taken_here(const std::string& phase, const std::string& name) const {
    return dir_.empty() || mine_.count(phase + "-" + name) > 0;
  }
  bool taken_by_any(const std::string& phase, const std::string& name) const {
    return !dir_.empty() && std::filesystem::exists(dir_ + "/" + phase + "-" + name);
  }

 private:
  Claims() {
    if (shard_setting().second < 2) return;
    const char* base = std::getenv("SPGEN_E2E_CLAIMS");
    const std::filesystem::path root = base && *base ? std::filesystem::path(base) : std::filesystem::temp_directory_path() / "spgen-e2e-claims";
    dir_ = (root / std::to_string(getppid())).string();
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    // Other runs' lists, a day old, go (a live run's is younger).
    const auto day_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(24);
    for (const auto& entry : std::filesystem::directory_iterator(root, ec))
      if (entry.path() != dir_ && entry.last_write_time(ec) < day_ago) std::filesystem::remove_all(entry.path(), ec);
  }
  std::string dir_;
  std::set<std::string> mine_;
};

// The kernels k has besides its generic one (passes/size_variants.h): for sizes of one index
// variable, and for long rows; and whether a sum in lanes ends in a masked tail, whose short and
// long rows (and rows near the arrays' end) take different paths. Only compiling it tells where
// `auto` chooses them.
struct KernelVariants {
  std::optional<spgen::SizeVariants> sizes;
  bool long_rows = false;
};
bool has_masked_tail(const std::vector<spgen::ScheduleOp>& ops) {
  return std::any_of(ops.begin(), ops.end(), [](const spgen::ScheduleOp& op) {
    const auto* v = std::get_if<spgen::VectorizeOp>(&op.op);
    return v && v->masked_tail;
  });
}
KernelVariants variants_of(const Kernel& k) {
  if (!k.config.auto_schedule && k.config.specialize.empty() && k.config.row_variants.empty() && !has_masked_tail(k.config.schedule))
    return {};
  spgen::Compilation c = spgen::compile({k.pair.spec, read_text(k.pair.spec), k.pair.config, read_text(k.pair.config), std::nullopt, {}});
  // (`batch` without a factor groups entries only in rows of 16 or more on average.)
  const bool batch_by_length = std::any_of(c.schedule.begin(), c.schedule.end(), [](const spgen::ScheduleOp& op) {
    const auto* batch = std::get_if<spgen::BatchOp>(&op.op);
    return batch && batch->factor == 0;
  });
  return {c.size_variants, !c.row_variants.empty() || has_masked_tail(c.schedule) || batch_by_length};
}

std::vector<Kernel> all_kernels() {
  std::string root = source_root();
  std::vector<SpecConfigPair> pairs = spec_config_pairs({root + "/specs"}, root + "/specs");
  std::vector<SpecConfigPair> extra = spec_config_pairs({root + "/specs", root + "/tests/e2e/cases"}, root + "/tests/e2e/cases");
  pairs.insert(pairs.end(), extra.begin(), extra.end());
  // SPGEN_E2E_EXTRA=DIR adds the configs of DIR (with the specs of specs/ and tests/e2e/cases/):
  // for trying many configs at once, e.g. generated ones, without adding them to the suite.
  if (const char* dir = std::getenv("SPGEN_E2E_EXTRA")) {
    std::vector<SpecConfigPair> more = spec_config_pairs({root + "/specs", root + "/tests/e2e/cases"}, dir);
    pairs.insert(pairs.end(), more.begin(), more.end());
  }
  // SPGEN_E2E_ONLY=name1,name2 runs only the configs whose names contain one of these.
  std::vector<std::string> only;
  if (const char* filter = std::getenv("SPGEN_E2E_ONLY"))
    for (std::string rest = filter; !rest.empty();) {
      size_t comma = rest.find(',');
      if (comma) only.push_back(rest.substr(0, comma));
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    }
  std::vector<Kernel> kernels;
  for (const SpecConfigPair& pair : pairs) {
    const bool wanted = only.empty() || std::any_of(only.begin(), only.end(), [&](const std::string& part) {
                          return pair.name.find(part) != std::string::npos;
                        });
    if (!wanted) continue;
    Kernel k{pair, spgen::parse_spec(pair.spec, spgen::read_file(pair.spec)), {}};
    k.config = spgen::read_config(pair.config, spgen::read_file(pair.config), k.spec, pair.name);
    kernels.push_back(std::move(k));
  }
  return kernels;
}

// clang++ compiles a cpu driver at -O0 in a third less CPU time than g++ (the kernel 0.31 s
// against 0.54, the glue 0.37 against 0.50): where it is installed (.ci/setup installs it),
// the quick cpu builds use it, which also checks that generated kernels build with a second
// compiler. So do the emulated CUDA kernels' (the emulator's vector types check their own
// alignment, with any compiler).
bool has_clang() {
  static const bool found = std::filesystem::exists("/usr/bin/clang++");
  return found;
}

// The environment of `spgen run`: CUDA kernels are built by the emulator's nvcc-emu, which
// precompiles the driver runtime's header with its own (where meson gives it a cache).
std::vector<std::string> run_env(const Kernel& k) {
  std::vector<std::string> env;
  if (is_cuda(k)) env = {"NVCC=" + source_root() + "/tests/cuda_emu/nvcc-emu", "NVCC_EMU_PRECOMPILE=spgen_run_glue.hpp,spgen_run_runtime.hpp"};
  if (built_quickly(k) && has_clang()) env.push_back("CXX=/usr/bin/clang++");
  else if (is_cuda(k)) env.push_back("CXX=g++");
  return env;
}

bool is_sparse(const Kernel& k, const std::string& tensor) { return !k.config.format_of(tensor).all_dense(); }

std::string extension_for(int order) { return order >= 3 ? ".tns" : ".mtx"; }

// What the kernel must compute on `inputs`: its spec, restricted to the entries of the output's
// "structure" where the config gives one.
spgen_ref::Tensor reference_of(const Kernel& k, std::map<std::string, spgen_ref::Tensor> inputs, const spgen_ref::Tensor* initial = nullptr) {
  const std::string spec_text = spgen_ref::on_entries_of(read_text(k.pair.spec), k.config.output_structure, inputs);
  return spgen_ref::evaluate(spec_text, inputs, {}, initial);
}

double rtol(const Kernel& k) { return k.config.value_type == spgen::ValueType::Float32 ? 2e-4 : 1e-9; }
double atol(const Kernel& k) { return k.config.value_type == spgen::ValueType::Float32 ? 2e-4 : 1e-9; }

// How the operands of one run are made.
struct InputPlan {
  std::string label;
  double density = 0.15;
  spgen_ref::RandomShape shape;
  bool single_entry = false;
};

std::vector<int64_t> dims_of(const Kernel& k, const spgen::ast::TensorUse& use, const std::map<std::string, int64_t>& sizes) {
  const spgen::ast::Access* access = nullptr;
  if (k.spec.output.tensor == use.name) access = &k.spec.output;
  for (const spgen::ast::Access* a : spgen::ast::collect_accesses(*k.spec.rhs))
    if (a->tensor == use.name) access = a;
  std::vector<int64_t> dims;
  for (const std::string& var : access->indices) dims.push_back(sizes.at(var));
  return dims;
}

// An ELL (sparse-fixed) level stores at most `width` entries under each parent: keep the first
// ones in storage order, so a random input fits the format (a file that does not is an error).
spgen_ref::Tensor fit_to_widths(const spgen::Format& format, spgen_ref::Tensor t) {
  for (size_t l = 0; l < format.levels.size(); ++l) {
    if (format.levels[l] != spgen::LevelKind::SparseFixed) continue;
    t = spgen_ref::canonical(t);
    std::map<std::vector<int64_t>, int64_t> per_parent;
    spgen_ref::Tensor kept{t.dims, {}, {}};
    const size_t order = t.dims.size();
    std::vector<size_t> entries(t.nnz());
    for (size_t e = 0; e < entries.size(); ++e) entries[e] = e;
    auto storage_key = [&](size_t e, size_t levels) {
      std::vector<int64_t> key;
      for (size_t m = 0; m < levels; ++m) key.push_back(t.coords[e * order + format.mode_order[m]]);
      return key;
    };
    std::sort(entries.begin(), entries.end(),
              [&](size_t a, size_t b) { return storage_key(a, order) < storage_key(b, order); });
    for (size_t e : entries) {
      if (per_parent[storage_key(e, l)]++ >= format.width(l)) continue;
      kept.coords.insert(kept.coords.end(), t.coords.begin() + e * order, t.coords.begin() + (e + 1) * order);
      kept.vals.push_back(t.vals[e]);
    }
    t = spgen_ref::canonical(kept);
  }
  return t;
}

bool has_fixed_width_level(const Kernel& k, const std::string& tensor) {
  const spgen::Format& format = k.config.format_of(tensor);
  return std::find(format.levels.begin(), format.levels.end(), spgen::LevelKind::SparseFixed) != format.levels.end();
}

spgen_ref::Tensor make_sparse(const std::vector<int64_t>& dims, const InputPlan& plan, uint64_t seed) {
  if (plan.single_entry) {
    spgen_ref::Tensor t;
    t.dims = dims;
    for (int64_t d : dims) t.coords.push_back(d / 2);
    t.vals.push_back(0.75);
    return t;
  }
  return spgen_ref::random_sparse(dims, plan.density, seed, plan.shape);
}

spgen_ref::Tensor make_input(const Kernel& k, const spgen::ast::TensorUse& use, const std::vector<int64_t>& dims,
                             const InputPlan& plan, uint64_t seed) {
  if (!is_sparse(k, use.name)) return spgen_ref::random_dense(dims, seed);
  spgen_ref::Tensor t = make_sparse(dims, plan, seed);
  return has_fixed_width_level(k, use.name) ? fit_to_widths(k.config.format_of(use.name), std::move(t)) : t;
}

// `t`'s entries with other values, as another tensor of the same structure holds them.
spgen_ref::Tensor with_random_values(spgen_ref::Tensor t, uint64_t seed) {
  spgen_ref::Tensor values = spgen_ref::random_dense({static_cast<int64_t>(t.nnz())}, seed);
  t.vals = values.vals;
  return t;
}

// The input whose structure the output shares, if any: that of every part when the sum splits
// by summed indices (passes/split_sum.h), as the whole right-hand side is no product then.
std::string shared_structure_owner(const Kernel& k) {
  spgen::Config config = k.config;
  std::vector<spgen::SumPart> parts = spgen::split_sum(k.spec, config);
  return parts.empty() ? spgen::find_shared_structure(k.spec, k.config)
                       : spgen::find_shared_structure(parts.front().spec, parts.front().config);
}

// Whether the tensor's --input is a sparse file: a sparse operand's, or the previous value of a
// `+=` output that the kernel assembles anew (one that shares an input's structure starts from
// dense values, which the driver reads on that structure).
bool has_sparse_file(const Kernel& k, const std::string& tensor) {
  if (tensor != k.spec.output.tensor) return is_sparse(k, tensor);
  return is_sparse(k, tensor) && shared_structure_owner(k).empty();
}

// `spgen run` with these inputs; returns the output tensor and checks it against the reference.
// Returns whether the driver ran (exit status 0).
bool check_run(const std::vector<std::string>& command_prefix, const Kernel& k,
               const std::map<std::string, spgen_ref::Tensor>& inputs, const TempDir& dir, const std::string& label) {
  CAPTURE(label);
  std::vector<std::string> command = command_prefix;
  for (const auto& [name, tensor] : inputs) {
    std::string path = dir.file(label + "_" + name + extension_for(tensor.order()));
    spgen_ref::write_tensor(path, tensor, !has_sparse_file(k, name));
    command.push_back("--input");
    command.push_back(name + "=" + path);
  }
  std::string out_path = dir.file(label + "_out" + extension_for(k.spec.output.indices.size()));
  command.push_back("--output");
  command.push_back(k.spec.output.tensor + "=" + out_path);
  ProcessResult run = run_process(command, run_env(k));
  INFO("stderr: " << run.err);
  CHECK(run.exit_code == 0);  // not fatal: the other kernels still run, and every failure is listed
  if (run.exit_code != 0) return false;
  std::map<std::string, spgen_ref::Tensor> operands = inputs;
  const spgen_ref::Tensor* initial = nullptr;
  if (k.spec.accumulate) {
    initial = &inputs.at(k.spec.output.tensor);
    operands.erase(k.spec.output.tensor);
  }
  spgen_ref::Tensor want = reference_of(k, operands, initial);
  spgen_ref::Tensor got = spgen_ref::read_tensor(out_path);
  spgen_ref::Comparison result = spgen_ref::compare(got, want, rtol(k), atol(k));
  CHECK_MESSAGE(result.ok, result.message);
  return true;
}

std::vector<std::string> sparse_inputs_of(const Kernel& k) {
  std::vector<std::string> names;
  for (const spgen::ast::TensorUse& use : k.spec.tensors)
    if (!use.is_output && is_sparse(k, use.name)) names.push_back(use.name);
  return names;
}

// Whether the real-matrix test runs k on the graphs: kernels with exactly one sparse input, a
// matrix, and dense other operands; on the cuda target also those whose sparse inputs are all
// matrices (SpGEMM, C = A + B), each of them the graph (it is square): their grids and row
// workspaces meet more rows than at random.
// The index variables that the sparse inputs (the graph, on real matrices) fix.
std::set<std::string> matrix_indices_of(const Kernel& k, const std::vector<std::string>& sparse_inputs) {
  std::set<std::string> indices;
  for (const spgen::ast::Access* access : spgen::ast::collect_accesses(*k.spec.rhs))
    if (std::count(sparse_inputs.begin(), sparse_inputs.end(), access->tensor))
      indices.insert(access->indices.begin(), access->indices.end());
  return indices;
}

bool runs_on_real_matrices(const Kernel& k) {
  const std::vector<std::string> sparse_inputs = sparse_inputs_of(k);
  // Emulated CUDA is slow: of the one-input cuda configs, those of specs/ meet the graph (the
  // random inputs already check the others, and their 16-block grid cap makes loops stride).
  // On the cpu, the specs/ kernels with several sparse inputs do too (SpGEMM's long rows).
  if (sparse_inputs.empty() || (sparse_inputs.size() > 1 && !is_cuda(k) && !from_specs(k)) || k.spec.accumulate) return false;
  if (is_cuda(k) && sparse_inputs.size() == 1 && !from_specs(k)) return false;
  // (Of those with several, the graph serves the assembled outputs, whose count kernels, scans
  // and row workspaces it gives more rows; a dense output's kernel meets nothing there that the
  // random inputs do not check.)
  if (is_cuda(k) && !from_specs(k) && k.config.format_of(k.spec.output.tensor).all_dense()) return false;
  // A dense operand as large as the graph's square (C = A + D, D dense n x n) adds 7.3 million
  // random values on cora to write, read and check, and nothing about the graph's structure
  // (the random inputs check its kernel).
  const std::set<std::string> matrix_indices = matrix_indices_of(k, sparse_inputs);
  for (const spgen::ast::Access* access : spgen::ast::collect_accesses(*k.spec.rhs))
    if (!is_sparse(k, access->tensor) && access->indices.size() >= 2 &&
        std::all_of(access->indices.begin(), access->indices.end(), [&](const std::string& v) { return matrix_indices.count(v) > 0; }))
      return false;
  // Kernels whose loops visit every column of one operand in each block row of another (A in
  // compressed block rows above compressed columns, merged with B dcsc's columns: rows x columns
  // iterations, inherent to the formats): 1.7 s a run on cora on the cpu, five minutes emulated.
  if (k.pair.name == "sparse_add_cuda_row_blocks_compressed_dcsc_to_dcsr_out") return false;
  // Likewise emulated on cora (the random inputs check them): E B over B's columns, then E's rows,
  // merged on k, rows x columns merges (an inner-product SpGEMM: 290 s); A^T B listed into blocks
  // of rows (110 s); E B with E located in every block of B's rows beside A's blocks (41 s).
  static const std::set<std::string> slow_emulated = {"spgemm_pair_bias_cuda_dcsc_csc_dcsr_ragged_to_coo",
                                                      "spgemm_transposed_bias_cuda_bsr1x2_dcsr_ragged_to_row_blocks",
                                                      "spgemm_pair_bias_cuda_bsr3x3_bsr_bsr2x1_csr_to_bsr3x2"};
  if (slow_emulated.count(k.pair.name)) return false;
  return std::none_of(sparse_inputs.begin(), sparse_inputs.end(), [&](const std::string& name) {
           return k.spec.find_tensor(name)->order != 2 || has_fixed_width_level(k, name);  // (real rows are longer than any ELL width here)
         }) &&
         !has_fixed_width_level(k, k.spec.output.tensor);  // (nor does an ELL output hold their rows)
}

// `quick`: tiny random inputs, where compile time dominates: build the driver at -O0 (its
// compile takes a sixth less CPU time than at -O1), or at -O1 where it is emulated and also
// runs on the graphs (at -O0 the emulated runs took longer than the compile saved: a SpGEMM on
// cora 18 s against 9). (A cpu driver's runtime, its file I/O, stays at -O3 in any case.)
std::vector<std::string> spgen_run_command(const Kernel& k, const std::string& keep_dir, bool quick = false) {
  std::vector<std::string> command = {spgen_binary(), "run", k.pair.spec, "--config", k.pair.config, "--keep", keep_dir};
  const bool emulated_on_graphs = is_cuda(k) && runs_on_real_matrices(k) && !data_dir().empty();
  if (quick) command.push_back(emulated_on_graphs ? "--cxxflags=-O1" : "--cxxflags=-O0");
  return command;
}

// The drivers built in this process, by config: the random-input and the real-matrix tests run
// the same kernels, and compiling the driver dominates their time. The kernels of specs/ are
// built as `spgen run` builds them (-O3); the many cases of tests/e2e/cases, and the emulated
// CUDA kernels, at -O0, which keeps the suite's time down.
class Builds {
 public:
  // An emulated kernel runs on the shard's own CPU, so that the two shards keep apart. (The
  // emulator runs a block's threads as fibers of one OS thread; where it falls back to a real
  // thread per GPU thread, their barrier wake-ups cost a third less CPU time on one CPU.)
  // Numerics are the same; races are the ThreadSanitizer test's to find, not these runs'.
  static std::vector<std::string> on_one_cpu(const Kernel& k) {
    if (!is_cuda(k) || !std::filesystem::exists("/usr/bin/taskset")) return {};
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    return {"/usr/bin/taskset", "-c", std::to_string(shard_setting().first % cpus)};
  }
  static void append(std::vector<std::string>& to, const std::vector<std::string>& more) { to.insert(to.end(), more.begin(), more.end()); }

  // The command that runs k's driver: `spgen run`, which builds and keeps it, the first time;
  // the kept driver after that.
  std::vector<std::string> command(const Kernel& k) {
    auto [it, first] = dirs_.emplace(k.pair.config, dir_.file("build" + std::to_string(dirs_.size())));
    const bool quick = built_quickly(k);
    std::vector<std::string> command = on_one_cpu(k);
    if (first) append(command, spgen_run_command(k, it->second, quick));
    else command.push_back(it->second + "/driver");
    return command;
  }
  // After a failed first run: build again next time (the driver may not exist).
  void forget(const Kernel& k) { dirs_.erase(k.pair.config); }

 private:
  TempDir dir_;
  std::map<std::string, std::string> dirs_;
};

Builds& builds() {
  static Builds kept;
  return kept;
}

// SPGEN_E2E_TIMES=FILE appends, per config and test case, the CPU seconds (user + system) that
// its child processes took (spgen run, the compilers, the driver): for finding where the
// suite's time goes.
class ChildTime {
 public:
  ChildTime(const char* test, const Kernel& k) : test_(test), name_(k.pair.name), start_(now()) {}
  ChildTime(const ChildTime&) = delete;
  ChildTime& operator=(const ChildTime&) = delete;
  ~ChildTime() {
    const char* file = std::getenv("SPGEN_E2E_TIMES");
    if (!file) return;
    std::ofstream(file, std::ios::app) << test_ << ' ' << name_ << ' ' << now() - start_ << '\n';
  }

 private:
  static double now() {
    rusage usage{};
    getrusage(RUSAGE_CHILDREN, &usage);
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
  }
  const char* test_;
  std::string name_;
  double start_;
};

}  // namespace

TEST_CASE("random inputs: every kernel matches the reference") {
  const std::vector<InputPlan> plans = {
      {"uniform", 0.15, {}, false},
      {"skewed", 0.2, {true, true, true}, false},  // empty rows, one dense row, power-law lengths
      {"empty", 0.0, {}, false},
      {"single", 0.0, {}, true},
  };
  const int64_t sizes_by_position[] = {37, 29, 23, 19, 17};  // not multiples of split factors
  for (const Kernel& k : all_kernels()) {
    if (!Claims::instance().take("random", k.pair.name)) continue;  // (another shard's)
    CAPTURE(k.pair.config);
    ChildTime timed("random", k);
    TempDir dir;
    std::map<std::string, int64_t> sizes;
    for (size_t v = 0; v < k.spec.index_vars.size(); ++v) sizes[k.spec.index_vars[v]] = sizes_by_position[v % 5];
    // A tensor read through several accesses (A(i,j) * A(j,k), which auto factors) has one size
    // per mode: the variables that index one mode share the smallest of their sizes.
    const std::vector<const spgen::ast::Access*> accesses = spgen::ast::collect_accesses(*k.spec.rhs);
    for (bool changed = true; changed;) {
      changed = false;
      for (const spgen::ast::Access* a : accesses)
        for (const spgen::ast::Access* b : accesses)
          if (a->tensor == b->tensor && a->indices.size() == b->indices.size())
            for (size_t m = 0; m < a->indices.size(); ++m)
              if (sizes[a->indices[m]] > sizes[b->indices[m]]) {
                sizes[a->indices[m]] = sizes[b->indices[m]];
                changed = true;
              }
    }
    for (const auto& [var, size] : k.config.sizes) sizes[var] = size;  // the sizes the kernel is specialized for
    // The sizes that get kernels of their own ("specialize", or `auto`'s), each run once more
    // on uniform inputs, after the generic kernel's runs at sizes that are not among them.
    // A kernel for long rows runs once more on inputs dense enough to take it.
    std::vector<InputPlan> run_plans = plans;
    std::vector<std::pair<size_t, std::map<std::string, int64_t>>> runs;
    for (size_t p = 0; p < plans.size(); ++p) runs.emplace_back(p, sizes);
    const KernelVariants variants = variants_of(k);
    if (variants.sizes)
      for (int64_t size : variants.sizes->sizes) {
        runs.emplace_back(0, sizes);
        runs.back().second[variants.sizes->var] = size;
      }
    if (variants.long_rows) {  // about 23 and 12 entries a row of 29 columns
      for (const InputPlan& plan : {InputPlan{"long_rows", 0.8, {}, false}, InputPlan{"medium_rows", 0.4, {}, false}}) {
        run_plans.push_back(plan);
        runs.emplace_back(run_plans.size() - 1, sizes);
      }
      // Each size's kernel on long rows too.
      if (variants.sizes)
        for (int64_t size : variants.sizes->sizes) {
          runs.emplace_back(run_plans.size() - 2, sizes);
          runs.back().second[variants.sizes->var] = size;
        }
    }
    for (size_t r = 0; r < runs.size(); ++r) {
      const auto& [p, run_sizes] = runs[r];
      std::map<std::string, spgen_ref::Tensor> inputs;
      uint64_t seed = 100 * (r + 1);
      for (const spgen::ast::TensorUse& use : k.spec.tensors) {
        if (use.is_output && !k.spec.accumulate) continue;
        std::vector<int64_t> dims = dims_of(k, use, run_sizes);
        inputs[use.name] = use.is_output && !has_sparse_file(k, use.name) ? spgen_ref::random_dense(dims, seed++)
                                                                           : make_input(k, use, dims, run_plans[p], seed++);
      }
      // A `+=` output that shares an input's structure holds values only there.
      if (k.spec.accumulate)
        if (std::string owner = shared_structure_owner(k); !owner.empty())
          inputs[k.spec.output.tensor] = with_random_values(inputs.at(owner), seed++);
      std::string label = run_plans[p].label;
      for (const auto& [var, size] : run_sizes)
        if (r >= plans.size() && size != sizes.at(var)) label += "_" + var + std::to_string(size);
      // The first run goes through the CLI and keeps its build; later ones rerun that driver.
      if (!check_run(builds().command(k), k, inputs, dir, label)) builds().forget(k);
    }
  }
}

TEST_CASE("real matrices: matrix kernels match the reference on GNN graphs") {
  std::string data = data_dir();
  if (data.empty()) {
    MESSAGE("skipped: ../shared/data is absent");
    return;
  }
  int runs = 0, eligible = 0, elsewhere = 0;
  for (const Kernel& k : all_kernels()) {
    if (!runs_on_real_matrices(k)) continue;
    ++eligible;
    // The shard that built k's driver for random inputs runs it here too; a config that no
    // shard took there (this test alone) goes to the first that claims it.
    Claims& claims = Claims::instance();
    if (!claims.taken_here("random", k.pair.name) && (claims.taken_by_any("random", k.pair.name) || !claims.take("real", k.pair.name))) {
      ++elsewhere;
      continue;
    }
    const std::vector<std::string> sparse_inputs = sparse_inputs_of(k);
    CAPTURE(k.pair.config);
    ChildTime timed("real", k);
    std::vector<std::string> matrices = {"cora.mtx"};
    // (Emulated CUDA kernels run on cora only: pubmed would take them too long.)
    if (k.pair.name == "spmm_csr" || k.pair.name == "sddmm_csr" || k.pair.name == "spmv_csr") matrices.push_back("pubmed.mtx");
    TempDir dir;
    for (size_t m = 0; m < matrices.size(); ++m) {
      CAPTURE(matrices[m]);
      std::vector<std::string> command = builds().command(k);  // the random-input test's build
      std::map<std::string, spgen_ref::Tensor> inputs;
      for (const std::string& name : sparse_inputs) {
        inputs[name] = spgen_ref::read_tensor(data + "/" + matrices[m]);
        command.insert(command.end(), {"--input", name + "=" + data + "/" + matrices[m]});
      }
      // Dense operands come from the driver's own `random`, saved so the reference sees them.
      std::vector<std::pair<std::string, std::string>> saved;
      for (const spgen::ast::TensorUse& use : k.spec.tensors) {
        if (use.is_output || inputs.count(use.name)) continue;
        std::string path = dir.file(std::to_string(m) + "_" + use.name + extension_for(use.order));
        command.insert(command.end(), {"--input", use.name + "=random", "--save-input", use.name + "=" + path});
        saved.emplace_back(use.name, path);
      }
      // Indices the matrix does not fix (a dense operand's width) get a size of 32, or the size
      // the kernel is specialized for.
      const std::set<std::string> matrix_indices = matrix_indices_of(k, sparse_inputs);
      for (const std::string& var : k.spec.index_vars)
        if (!matrix_indices.count(var))
          command.insert(command.end(), {"--dim", var + "=" + std::to_string(k.config.sizes.count(var) ? k.config.sizes.at(var) : 32)});
      std::string out_path = dir.file(std::to_string(m) + "_out" + extension_for(k.spec.output.indices.size()));
      // (One emulated CUDA run: it is slow, and its time means nothing.)
      command.insert(command.end(), {"--output", k.spec.output.tensor + "=" + out_path, "--repeat", is_cuda(k) ? "1" : "3"});
      ProcessResult run = run_process(command, run_env(k));
      INFO("stderr: " << run.err);
      CHECK(run.exit_code == 0);
      if (run.exit_code != 0) {
        builds().forget(k);
        continue;
      }
      CHECK(run.out.find("time_ms median=") != std::string::npos);
      for (const auto& [name, path] : saved) inputs[name] = spgen_ref::read_tensor(path);
      spgen_ref::Tensor want = reference_of(k, inputs);
      spgen_ref::Comparison result = spgen_ref::compare(spgen_ref::read_tensor(out_path), want, rtol(k), atol(k));
      CHECK_MESSAGE(result.ok, result.message);
      ++runs;
    }
  }
  // (A selection may hold no matrix kernel. A shard that meson starts after the other has
  // finished, as `meson test --num-processes 1` does, finds every kernel taken: it runs none.)
  if (!std::getenv("SPGEN_E2E_ONLY")) {
    CHECK(eligible >= 5);
    CHECK((runs > 0 || elsewhere == eligible));
  }
}
