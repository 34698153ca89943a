#include "codegen/run_driver.h"

#include <algorithm>

#include "codegen/abi_header.h"
#include "support/templates.h"

namespace spgen {

namespace {

int index_of(const std::vector<std::string>& items, const std::string& item) {
  return static_cast<int>(std::find(items.begin(), items.end(), item) - items.begin());
}

int tensor_id(const sparse::Program& program, const std::string& tensor) {
  for (size_t t = 0; t < program.buffers.size(); ++t)
    if (program.buffers[t].tensor == tensor) return static_cast<int>(t);
  return -1;
}

std::string int_list(const std::vector<int>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "}";
}

std::string tensor_entry(const sparse::Program& program, const sparse::SparseBuffer& buffer) {
  std::vector<int> modes;
  for (const std::string& var : buffer.indices) modes.push_back(index_of(program.index_vars, var));
  std::string levels = "{";
  for (size_t l = 0; l < buffer.format.levels.size(); ++l)
    levels += std::string(l ? ", " : "") + (buffer.format.levels[l] == LevelKind::Dense ? "spgen_run::Level::Dense"
                                                                                         : "spgen_run::Level::Compressed");
  levels += "}";
  int shares = buffer.shares_structure_with.empty() ? -1 : tensor_id(program, buffer.shares_structure_with);
  return "        {\"" + buffer.tensor + "\", " + (buffer.is_output ? "true" : "false") + ", " + int_list(modes) + ", " +
         levels + ", " + int_list(buffer.format.mode_order) + ", " + std::to_string(shares) + "},\n";
}

// `arrays` holds the packed arrays the kernel reads: `r` (the host's) or `device` (the GPU copies).
std::string call_argument(const sparse::Program& program, const loops::Param& param, const std::string& arrays) {
  int t = tensor_id(program, param.tensor);
  switch (param.kind) {
    case loops::ParamKind::Dim: return "r.dim(" + std::to_string(index_of(program.index_vars, param.index_var)) + ")";
    case loops::ParamKind::Pos: return arrays + ".pos(" + std::to_string(t) + ", " + std::to_string(param.level) + ")";
    case loops::ParamKind::Crd: return arrays + ".crd(" + std::to_string(t) + ", " + std::to_string(param.level) + ")";
    case loops::ParamKind::Values: return arrays + ".values(" + std::to_string(t) + ")";
  }
  return "";
}

}  // namespace

GeneratedFile emit_run_driver(const loops::LoweredFunc& func, const sparse::Program& program, Target target) {
  bool cuda = target == Target::Cuda;
  std::string index_vars, tensors, call_args;
  for (size_t v = 0; v < program.index_vars.size(); ++v) index_vars += (v ? ", \"" : "\"") + program.index_vars[v] + "\"";
  for (const sparse::SparseBuffer& buffer : program.buffers) tensors += tensor_entry(program, buffer);
  for (size_t i = 0; i < func.params.size(); ++i) {
    const loops::Param& p = func.params[i];
    call_args += (i ? ", " : "") + call_argument(program, p, cuda ? "device" : "r");
  }
  std::string value_type = program.value_type == ValueType::Float32 ? "float" : "double";
  std::string index_type = program.index_type == IndexType::Int32 ? "int32_t" : "int64_t";
  GeneratedFile file;
  file.name = cuda ? "run_driver.cu" : "run_driver.cpp";
  file.text = templates::render(cuda ? "run_driver_cuda.cu.in" : "run_driver.cpp.in",
                                {{"name", func.name},
                                 {"header", header_file_name(func)},
                                 {"index_type", index_type},
                                 {"value_type", value_type},
                                 {"index_vars", index_vars},
                                 {"tensors", tensors},
                                 {"accumulate", program.iteration.accumulate ? "true" : "false"},
                                 {"call_args", call_args}});
  return file;
}

}  // namespace spgen
