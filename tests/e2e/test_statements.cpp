// Numeric end-to-end tests of specs of several statements (tests/e2e/statements/): each config
// goes through `spgen run`, and every output the kernel returns is compared with the reference
// evaluator's (src/reference, ref_statements.h: the statements evaluated in turn, sharing no code
// with the compiler), on random inputs of several shapes and, for kernels of one sparse matrix,
// on cora. CUDA configs run on the CPU through the emulator (tests/cuda_emu).
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "lower.h"
#include "process.h"
#include "ref_statements.h"
#include "ref_tensor.h"
#include "reference.h"
#include "spec_pairs.h"

using namespace spgen_test;

namespace {

struct Kernel {
  SpecConfigPair pair;
  spgen::Compilation c;
  std::map<std::string, spgen_ref::StoredAs> stored;  // every tensor a statement writes
};

bool is_cuda(const Kernel& k) { return k.c.config.target == spgen::Target::Cuda; }

std::vector<Kernel> all_kernels() {
  const std::string dir = source_root() + "/tests/e2e/statements";
  std::vector<Kernel> kernels;
  for (const SpecConfigPair& pair : spec_config_pairs({dir}, dir)) {
    if (const char* only = std::getenv("SPGEN_E2E_ONLY"); only && pair.name.find(only) == std::string::npos) continue;
    Kernel k{pair, spgen::compile({pair.spec, read_text(pair.spec), pair.config, read_text(pair.config), std::nullopt, {}}), {}};
    const nlohmann::json config = nlohmann::json::parse(read_text(pair.config));
    for (const auto& [tensor, format] : k.c.written_formats) {
      spgen_ref::StoredAs& how = k.stored[tensor];
      how.dense = format.all_dense();
      if (config.contains("tensors") && config["tensors"].contains(tensor) && config["tensors"][tensor].contains("structure"))
        how.structure = config["tensors"][tensor]["structure"].get<std::string>();
    }
    kernels.push_back(std::move(k));
  }
  return kernels;
}

std::vector<std::string> run_env(const Kernel& k) {
  std::vector<std::string> env;
  if (is_cuda(k)) env = {"NVCC=" + source_root() + "/tests/cuda_emu/nvcc-emu", "NVCC_EMU_PRECOMPILE=spgen_run_glue.hpp,spgen_run_runtime.hpp"};
  if (std::filesystem::exists("/usr/bin/clang++")) env.push_back("CXX=/usr/bin/clang++");
  else if (is_cuda(k)) env.push_back("CXX=g++");
  return env;
}

std::string extension_for(size_t order) { return order >= 3 ? ".tns" : ".mtx"; }

double tolerance(const Kernel& k) { return k.c.config.value_type == spgen::ValueType::Float32 ? 2e-4 : 1e-9; }

// (Sizes by the first variable of each class: sparse::Program::size_var.)
std::vector<int64_t> dims_of(const Kernel& k, const spgen::sparse::SparseBuffer& buffer, const std::map<std::string, int64_t>& sizes) {
  std::vector<int64_t> dims;
  for (const std::string& var : buffer.indices) dims.push_back(sizes.at(k.c.program.size_var(var)));
  return dims;
}

// Runs `command` (spgen run, or its kept driver) with every output written out, and compares
// each with the reference on `inputs`.
bool check_run(std::vector<std::string> command, const Kernel& k, const std::map<std::string, spgen_ref::Tensor>& inputs,
               const TempDir& dir, const std::string& label) {
  CAPTURE(label);
  std::map<std::string, std::string> outputs;
  for (const spgen::sparse::SparseBuffer& buffer : k.c.program.buffers)
    if (buffer.is_output) {
      outputs[buffer.tensor] = dir.file(label + "_" + buffer.tensor + extension_for(buffer.indices.size()));
      command.insert(command.end(), {"--output", buffer.tensor + "=" + outputs[buffer.tensor]});
    }
  ProcessResult run = run_process(command, run_env(k));
  INFO("stderr: " << run.err);
  CHECK(run.exit_code == 0);
  if (run.exit_code != 0) return false;
  const std::map<std::string, spgen_ref::Tensor> want = spgen_ref::evaluate_statements(read_text(k.pair.spec), inputs, k.stored);
  for (const auto& [tensor, path] : outputs) {
    CAPTURE(tensor);
    spgen_ref::Comparison result = spgen_ref::compare(spgen_ref::read_tensor(path), want.at(tensor), tolerance(k), tolerance(k));
    CHECK_MESSAGE(result.ok, result.message);
  }
  return true;
}

}  // namespace

TEST_CASE("several statements: every output matches the reference on random inputs") {
  struct Plan {
    std::string label;
    double density;
    spgen_ref::RandomShape shape;
  };
  const std::vector<Plan> plans = {{"uniform", 0.15, {}}, {"skewed", 0.2, {true, true, true}}, {"empty", 0.0, {}}};
  const int64_t sizes_by_position[] = {37, 29, 23, 19, 17};
  const std::vector<Kernel> kernels = all_kernels();
  CHECK(!kernels.empty());
  for (const Kernel& k : kernels) {
    CAPTURE(k.pair.config);
    TempDir dir;
    std::map<std::string, int64_t> sizes;
    for (size_t v = 0; v < k.c.program.index_vars.size(); ++v) sizes[k.c.program.index_vars[v]] = sizes_by_position[v % 5];
    for (const auto& [var, size] : k.c.config.sizes) sizes[var] = size;
    std::string driver;  // the first run's build, kept for the others
    for (size_t p = 0; p < plans.size(); ++p) {
      std::map<std::string, spgen_ref::Tensor> inputs;
      std::vector<std::string> command = driver.empty() ? std::vector<std::string>{spgen_binary(), "run", k.pair.spec, "--config", k.pair.config,
                                                                                   "--keep", dir.file("build"), "--cxxflags=-O0"}
                                                        : std::vector<std::string>{driver};
      uint64_t seed = 100 * (p + 1);
      for (const spgen::sparse::SparseBuffer& buffer : k.c.program.buffers) {
        if (buffer.is_output) continue;
        const std::vector<int64_t> dims = dims_of(k, buffer, sizes);
        inputs[buffer.tensor] = buffer.format.all_dense() ? spgen_ref::random_dense(dims, seed++)
                                                          : spgen_ref::random_sparse(dims, plans[p].density, seed++, plans[p].shape);
        const std::string path = dir.file(plans[p].label + "_" + buffer.tensor + extension_for(dims.size()));
        spgen_ref::write_tensor(path, inputs[buffer.tensor], buffer.format.all_dense());
        command.insert(command.end(), {"--input", buffer.tensor + "=" + path});
      }
      if (check_run(command, k, inputs, dir, plans[p].label)) driver = dir.file("build") + "/driver";
    }
  }
}

TEST_CASE("several statements: kernels of one sparse matrix match the reference on cora") {
  const std::string data = data_dir();
  if (data.empty()) {
    MESSAGE("skipped: ../shared/data is absent");
    return;
  }
  for (const Kernel& k : all_kernels()) {
    std::vector<const spgen::sparse::SparseBuffer*> sparse_inputs;
    for (const spgen::sparse::SparseBuffer& buffer : k.c.program.buffers)
      if (!buffer.is_output && !buffer.format.all_dense()) sparse_inputs.push_back(&buffer);
    if (sparse_inputs.size() != 1 || sparse_inputs.front()->indices.size() != 2) continue;
    CAPTURE(k.pair.config);
    TempDir dir;
    const std::string matrix = data + "/cora.mtx";
    std::map<std::string, spgen_ref::Tensor> inputs = {{sparse_inputs.front()->tensor, spgen_ref::read_tensor(matrix)}};
    std::vector<std::string> command = {spgen_binary(), "run", k.pair.spec, "--config", k.pair.config, "--cxxflags=-O1",
                                        "--input", sparse_inputs.front()->tensor + "=" + matrix, "--repeat", "1"};
    std::vector<std::pair<std::string, std::string>> saved;
    for (const spgen::sparse::SparseBuffer& buffer : k.c.program.buffers) {
      if (buffer.is_output || !buffer.format.all_dense()) continue;
      const std::string path = dir.file(buffer.tensor + extension_for(buffer.indices.size()));
      command.insert(command.end(), {"--input", buffer.tensor + "=random", "--save-input", buffer.tensor + "=" + path});
      saved.emplace_back(buffer.tensor, path);
    }
    std::set<std::string> matrix_vars;
    for (const std::string& var : sparse_inputs.front()->indices) matrix_vars.insert(k.c.program.size_var(var));
    for (const std::string& var : k.c.program.index_vars)
      if (!matrix_vars.count(var))
        command.insert(command.end(), {"--dim", var + "=" + std::to_string(k.c.config.sizes.count(var) ? k.c.config.sizes.at(var) : 16)});
    std::map<std::string, std::string> outputs;
    for (const spgen::sparse::SparseBuffer& buffer : k.c.program.buffers)
      if (buffer.is_output) {
        outputs[buffer.tensor] = dir.file(buffer.tensor + extension_for(buffer.indices.size()));
        command.insert(command.end(), {"--output", buffer.tensor + "=" + outputs[buffer.tensor]});
      }
    ProcessResult run = run_process(command, run_env(k));
    INFO("stderr: " << run.err);
    REQUIRE(run.exit_code == 0);
    for (const auto& [name, path] : saved) inputs[name] = spgen_ref::read_tensor(path);
    const std::map<std::string, spgen_ref::Tensor> want = spgen_ref::evaluate_statements(read_text(k.pair.spec), inputs, k.stored);
    for (const auto& [tensor, path] : outputs) {
      CAPTURE(tensor);
      spgen_ref::Comparison result = spgen_ref::compare(spgen_ref::read_tensor(path), want.at(tensor), tolerance(k), tolerance(k));
      CHECK_MESSAGE(result.ok, result.message);
    }
  }
}
