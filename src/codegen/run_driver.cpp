#include "codegen/run_driver.h"

#include <algorithm>
#include <map>

#include "codegen/abi_header.h"
#include "codegen/c_printer.h"
#include "codegen/pack_routines.h"
#include "ir/loop_ir_visitor.h"
#include "passes/lower_to_loops.h"
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

// The runtime's spelling of a level kind (templates/spgen_run_runtime.hpp, enum Level).
const char* runtime_level_name(LevelKind kind) {
  switch (kind) {
    case LevelKind::Dense: return "Dense";
    case LevelKind::Compressed: return "Compressed";
    case LevelKind::CompressedNonUnique: return "CompressedNonUnique";
    case LevelKind::Singleton: return "Singleton";
    case LevelKind::DenseVariable: return "DenseVariable";
    case LevelKind::SparseFixed: return "SparseFixed";
  }
  return "?";
}

std::string tensor_entry(const sparse::Program& program, const sparse::SparseBuffer& buffer) {
  std::vector<int> modes;
  for (const std::string& var : buffer.indices) modes.push_back(index_of(program.index_vars, program.size_var(var)));
  std::string levels = "{";
  for (size_t l = 0; l < buffer.format.levels.size(); ++l)
    levels += std::string(l ? ", " : "") + "spgen_run::Level::" + runtime_level_name(buffer.format.levels[l]);
  levels += "}";
  int shares = buffer.shares_structure_with.empty() ? -1 : tensor_id(program, buffer.shares_structure_with);
  std::string entry = "        {\"" + buffer.tensor + "\", " + (buffer.is_output ? "true" : "false") + ", " +
                      int_list(modes) + ", " + levels + ", " + int_list(buffer.format.mode_order) + ", " +
                      std::to_string(shares);
  bool has_width = false;
  for (size_t l = 0; l < buffer.format.levels.size(); ++l) has_width |= buffer.format.width(l) > 0;
  if (buffer.format.sliced) return entry + ", {}, {}, true},\n";  // (SELL: packed by the kernel's routines)
  if (has_width || buffer.format.is_blocked()) {
    std::string widths = "{";
    for (size_t l = 0; l < buffer.format.levels.size() && has_width; ++l)
      widths += (l ? ", " : "") + std::to_string(buffer.format.width(l));
    entry += ", " + widths + "}";
  }
  if (buffer.format.is_blocked()) {
    std::string blocks = "{";
    for (size_t l = 0; l < buffer.format.levels.size(); ++l)
      blocks += (l ? ", " : "") + std::to_string(buffer.format.block(l).size);
    entry += ", " + blocks + "}";
  }
  return entry + "},\n";
}

// The cpu glue's description of the kernel's index variables and tensors
// (spgen_run_glue::Tensor): a table per list, named by tensor id, null where a list is empty.
std::string tensor_tables(const sparse::Program& program) {
  std::string tables, entries;
  auto table = [&](const std::string& type, const std::string& name, const std::vector<std::string>& items) {
    if (items.empty()) return std::string("nullptr");
    std::string list;
    for (size_t i = 0; i < items.size(); ++i) list += (i ? ", " : "") + items[i];
    tables += "const " + type + " " + name + "[] = {" + list + "};\n";
    return name;
  };
  std::vector<std::string> vars;
  for (const std::string& var : program.index_vars) vars.push_back("\"" + var + "\"");
  table("char* const", "kVars", vars);  // (named in main, or null there where there are none)
  for (size_t t = 0; t < program.buffers.size(); ++t) {
    const sparse::SparseBuffer& buffer = program.buffers[t];
    const std::string id = std::to_string(t);
    std::vector<std::string> modes, kinds, order, widths, blocks;
    for (const std::string& var : buffer.indices) modes.push_back(std::to_string(index_of(program.index_vars, program.size_var(var))));
    bool has_width = false;
    for (size_t l = 0; l < buffer.format.levels.size(); ++l) {
      kinds.push_back(std::string("spgen_run_glue::k") + runtime_level_name(buffer.format.levels[l]));
      widths.push_back(std::to_string(buffer.format.width(l)));
      has_width |= buffer.format.width(l) > 0;
      if (buffer.format.is_blocked()) blocks.push_back(std::to_string(buffer.format.block(l).size));
    }
    if (!has_width) widths.clear();
    for (int m : buffer.format.mode_order) order.push_back(std::to_string(m));
    const int shares = buffer.shares_structure_with.empty() ? -1 : tensor_id(program, buffer.shares_structure_with);
    // (the tables in the order of their fields)
    const std::string modes_table = table("int", "kModes" + id, modes);
    const std::string levels_table = table("int", "kLevels" + id, kinds);
    const std::string order_table = table("int", "kModeOrder" + id, order);
    const std::string widths_table = table("int64_t", "kWidths" + id, widths);
    const std::string blocks_table = table("int64_t", "kBlocks" + id, blocks);
    entries += "    {\"" + buffer.tensor + "\", " + (buffer.is_output ? "true" : "false") + ", " + std::to_string(modes.size()) +
               ", " + modes_table + ", " + std::to_string(kinds.size()) + ", " + levels_table + ", " + order_table + ", " +
               std::to_string(shares) + ", " + widths_table + ", " + blocks_table + (buffer.format.sliced ? ", true" : "") + "},\n";
  }
  return tables + "const spgen_run_glue::Tensor kTensors[] = {\n" + entries + "};\n";
}

// `arrays` holds the packed arrays the kernel reads: `r` (the host's) or `device` (the GPU copies).
std::string call_argument(const sparse::Program& program, const loops::Param& param, const std::string& arrays) {
  int t = tensor_id(program, param.tensor);
  switch (param.kind) {
    case loops::ParamKind::Dim: return "r.dim(" + std::to_string(index_of(program.index_vars, program.size_var(param.index_var))) + ")";
    case loops::ParamKind::Pos: return arrays + ".pos(" + std::to_string(t) + ", " + std::to_string(param.level) + ")";
    case loops::ParamKind::Crd: return arrays + ".crd(" + std::to_string(t) + ", " + std::to_string(param.level) + ")";
    case loops::ParamKind::Values: return arrays + ".values(" + std::to_string(t) + ")";
  }
  return "";
}

// The driver's use of the kernel's pack/unpack routines (templates/run_driver_pack.cpp.in):
// a packing function per sparse input, an unpacking one per sparse output, each in the plain
// terms of spgen_run_glue.hpp; empty when the kernel has none.
std::string pack_glue(const loops::LoweredFunc& func, const sparse::Program& program) {
  const std::vector<PackTensor> tensors = pack_tensors(program, func.name);
  if (tensors.empty()) return "";
  std::vector<std::string> pack_table(program.buffers.size(), "nullptr"), unpack_table(program.buffers.size(), "nullptr");
  std::string functions;
  for (const PackTensor& p : tensors) {
    std::string arrays, array_args;
    for (size_t i = 0; i < p.arrays.size(); ++i) {
      const PackArray& a = p.arrays[i];
      const std::string name = std::string(a.is_pos ? "pos" : "crd") + std::to_string(a.level);
      const std::string where = std::string(a.is_pos ? "true" : "false") + ", " + std::to_string(a.level);
      const std::string n = "n[" + std::to_string(i) + "]";
      arrays += p.is_output ? "  const Index* const " + name + " = static_cast<const Index*>(spgen_run_glue::stored_array(run, " +
                                  std::to_string(p.structure_id) + ", " + where + ", &" + n + "));\n"
                            : "  Index* const " + name + " = static_cast<Index*>(spgen_run_glue::packed_array(e, " + where + ", " +
                                  n + "));\n";
      array_args += name + ", ";
    }
    const std::map<std::string, std::string> fields = {{"tensor", p.tensor},
                                                       {"id", std::to_string(p.id)},
                                                       {"count", std::to_string(p.arrays.size() + 1)},
                                                       {"values_length", std::to_string(p.arrays.size())},
                                                       {"sizes_function", p.sizes_function},
                                                       {"pack_function", p.pack_function},
                                                       {"unpack_function", p.unpack_function},
                                                       {"arrays", arrays},
                                                       {"array_args", array_args}};
    functions += templates::render(p.is_output ? "run_driver_unpack_function.cpp.in" : "run_driver_pack_function.cpp.in", fields);
    (p.is_output ? unpack_table : pack_table)[static_cast<size_t>(p.id)] = (p.is_output ? "unpack_" : "pack_") + p.tensor;
  }
  auto join = [](const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
    return out;
  };
  return templates::render("run_driver_pack.cpp.in", {{"name", func.name},
                                                      {"header", header_file_name(func)},
                                                      {"functions", functions},
                                                      {"pack_table", join(pack_table)},
                                                      {"unpack_table", join(unpack_table)}});
}

// The driver's storage for each of the executor's parameters that is a part array, in order
// (`part_index[k].data()` or `part_values[k].data()`); empty for the other parameters.
std::vector<std::string> part_arrays(const loops::LoweredFunc& func, const Decomposition* d) {
  std::vector<std::string> storage(func.params.size());
  int k = 0;
  for (size_t i = 0; d && i < func.params.size(); ++i)
    if (d->is_part_tensor(func.params[i].tensor))
      storage[i] = std::string(func.params[i].kind == loops::ParamKind::Values ? "part_values[" : "part_index[") +
                   std::to_string(k++) + "]";
  return storage;
}

// The driver's call of the inspector (templates/run_driver_decompose.cpp.in).
std::string decompose_glue(const loops::LoweredFunc& func, const sparse::Program& program, const Decomposition& d, bool cuda) {
  const std::string& tensor = d.op.tensor;
  const sparse::SparseBuffer& csr = program.buffer(tensor);
  const int t = tensor_id(program, tensor);
  auto dim = [&](const std::string& var) { return "r.dim(" + std::to_string(index_of(program.index_vars, program.size_var(var))) + ")"; };
  const std::string arrays = dim(csr.indices[0]) + ", " + dim(csr.indices[1]) + ", r.pos(" + std::to_string(t) + ", 1), r.crd(" +
                             std::to_string(t) + ", 1)";
  std::string resize, fill_args = arrays + ", r.values(" + std::to_string(t) + ")";
  int count = 0;
  for (const std::string& storage : part_arrays(func, &d)) {
    if (storage.empty()) continue;
    resize += "  " + storage + ".resize(static_cast<std::size_t>(n[" + std::to_string(count++) + "]) + 1);  // + 1: never null\n";
    fill_args += ", " + storage + ".data()";
  }
  return templates::render("run_driver_decompose.cpp.in", {{"name", func.name},
                                                            {"tensor", tensor},
                                                            {"run_parameter", cuda ? "spgen_run::Run<Index, Value>& r" : "spgen_run_glue::Run* run"},
                                                            {"arrays", cuda ? "" : "  const Arrays r{run};\n"},
                                                            {"count", std::to_string(count)},
                                                            {"size_args", arrays},
                                                            {"fill_args", fill_args},
                                                            {"resize", resize}});
}

}  // namespace

GeneratedFile emit_run_driver(const loops::LoweredFunc& func, const sparse::Program& program, Target target,
                              const std::vector<loops::LoweredFunc>& assemble, const Decomposition* decomposition) {
  bool cuda = target == Target::Cuda;
  std::string index_vars, tensors, call_args;
  for (size_t v = 0; v < program.index_vars.size(); ++v) index_vars += (v ? ", \"" : "\"") + program.index_vars[v] + "\"";
  for (const sparse::SparseBuffer& buffer : program.buffers) tensors += cuda ? tensor_entry(program, buffer) : "";
  const std::vector<std::string> parts = part_arrays(func, decomposition);
  // A decomposition's parts are the driver's host arrays; on the GPU, their device copies.
  for (size_t i = 0; i < func.params.size(); ++i)
    call_args += (i ? ", " : "") +
                 (!parts[i].empty() ? (cuda ? "device.array(" + parts[i] + ")" : parts[i] + ".data()")
                                    : call_argument(program, func.params[i], cuda ? "device" : "r"));
  int previous_output = -1;
  for (const sparse::SparseBuffer& buffer : program.buffers)
    if (buffer.previous_output) previous_output = tensor_id(program, buffer.tensor);
  std::string value_type = c_type_name(program.value_type);
  std::string index_type = c_type_name(program.index_type);
  // A kernel that builds its sparse output runs its assemble phases before each run, each after
  // sizing the pos array it fills. On the GPU each phase runs on the device copies, and the
  // positions it wrote come back to size the next arrays.
  std::string assemble_function, hooks, kernel_fields;
  std::string output = std::to_string(tensor_id(program, program.output().tensor));
  std::vector<int> levels = assembled_levels(program);
  std::string calls;
  for (size_t phase = 0; phase < assemble.size(); ++phase) {
    std::string args;
    for (size_t i = 0; i < assemble[phase].params.size(); ++i)
      args += (i ? ", " : "") + call_argument(program, assemble[phase].params[i], cuda ? "device" : "r");
    std::string level = std::to_string(levels[phase]);
    if (!cuda) {
      calls += "  spgen_run_glue::size_assembled_level(run, " + output + ", " + level + ");\n";
      calls += "  " + assemble[phase].name + "(" + args + ");\n";
      continue;
    }
    calls += "  spgen_run::size_assembled_level(r, " + output + ", " + level + ");\n";
    calls += "  check(static_cast<cudaError_t>(" + assemble[phase].name + "(" + args + ", 0)), \"launching " +
             assemble[phase].name + "\");\n";
    calls += "  device.download(r.packed(" + output + ").pos[" + level + "]);\n";
  }
  std::string assemble_method;
  if (cuda && !assemble.empty()) {
    assemble_function = "\nvoid assemble(spgen_run::Run<Index, Value>& r, DeviceArrays& device) {\n" + calls + "}\n";
    assemble_method = templates::render("run_driver_cuda_assemble.cu.in", {});
    hooks += "  hooks.assemble = [&invoke](spgen_run::Run<Index, Value>& r) { invoke.assemble_output(r); };\n";
  } else if (!assemble.empty()) {
    assemble_function = "\nvoid assemble(spgen_run_glue::Run* run) {\n  const Arrays r{run};\n" + calls + "}\n";
    kernel_fields += "  kernel.assemble = assemble;\n";
  }
  // A kernel specialized for fixed sizes: the driver fixes them before reading the inputs (a
  // mismatch is an error naming both), and the cpu's checks the status the kernel returns.
  std::string invoke = func.name + "(" + call_args + ")";
  std::string tables;
  if (!func.fixed_sizes.empty()) {
    if (!cuda) invoke = "if (const int status = " + invoke + ") spgen_run_glue::fail_kernel_status(\"" + func.name + "\", status)";
    std::string vars, sizes, pairs;  // the index variables (not the size parameters) and their sizes
    for (size_t k = 0; k < func.fixed_sizes.size(); ++k) {
      const loops::Param& param =
          *std::find_if(func.params.begin(), func.params.end(), [&](const loops::Param& p) { return p.name == func.fixed_sizes[k].first; });
      const std::string var = "\"" + param.index_var + "\"", size = std::to_string(func.fixed_sizes[k].second);
      vars += (k ? ", " : "") + var;
      sizes += (k ? ", " : "") + size;
      pairs += (k ? ", {" : "{") + var + ", " + size + "}";
    }
    if (cuda) {
      hooks += "  hooks.fixed_sizes = {" + pairs + "};\n";
    } else {
      tables += "const char* const kFixedVars[] = {" + vars + "};\nconst int64_t kFixedSizes[] = {" + sizes + "};\n";
      kernel_fields += "  kernel.fixed_count = " + std::to_string(func.fixed_sizes.size()) +
                       ";\n  kernel.fixed_vars = kFixedVars;\n  kernel.fixed_sizes = kFixedSizes;\n";
    }
  }
  // Both drivers pack through the kernel's own conversion routines (host code on either target).
  std::string glue = pack_glue(func, program);
  std::string inspector = decomposition ? decompose_glue(func, program, *decomposition, cuda) : "";
  if (decomposition && cuda) hooks += "  hooks.prepare = decompose;\n";
  if (decomposition && !cuda) kernel_fields += "  kernel.prepare = decompose;\n";
  if (!glue.empty() && cuda)
    hooks += "  spgen_run::Glue<Index, Value>::use_conversions(hooks, kInfo, kPack, kUnpack, " + func.name + "_pack_strerror);\n";
  if (!glue.empty() && !cuda)
    kernel_fields += "  kernel.pack = kPack;\n  kernel.unpack = kUnpack;\n  kernel.pack_strerror = " + func.name + "_pack_strerror;\n";
  GeneratedFile file;
  file.name = cuda ? "run_driver.cu" : "run_driver.cpp";
  if (cuda) {
    file.text = templates::render("run_driver_cuda.cu.in",
                                  {{"name", func.name},
                                   {"header", header_file_name(func)},
                                   {"index_type", index_type},
                                   {"value_type", value_type},
                                   {"index_vars", index_vars},
                                   {"tensors", tensors},
                                   {"accumulate", program.iteration.accumulate ? "true" : "false"},
                                   {"previous_output", std::to_string(previous_output)},
                                   // a listed output's entries are keyed by their flattened coordinates
                                   {"lists_output", loops::uses_sort(func.body, true) ? "true" : "false"},
                                   {"call_args", call_args},
                                   {"assemble_function", assemble_function},
                                   {"assemble_method", assemble_method},
                                   {"decompose_glue", inspector},
                                   {"hooks", hooks},
                                   {"pack_glue", glue}});
    return file;
  }
  file.text = templates::render("run_driver.cpp.in",
                                {{"name", func.name},
                                 {"header", header_file_name(func)},
                                 {"includes", decomposition ? "\n#include <vector>\n" : ""},
                                 {"index_type", index_type},
                                 {"value_type", value_type},
                                 {"tables", tensor_tables(program) + tables},
                                 {"var_count", std::to_string(program.index_vars.size())},
                                 {"vars", program.index_vars.empty() ? "nullptr" : "kVars"},
                                 {"tensor_count", std::to_string(program.buffers.size())},
                                 {"accumulate", program.iteration.accumulate ? "true" : "false"},
                                 {"previous_output", std::to_string(previous_output)},
                                 {"lists_output", loops::uses_sort(func.body, true) ? "true" : "false"},
                                 {"invoke", invoke},
                                 {"assemble_function", assemble_function},
                                 {"decompose_glue", inspector.empty() ? "" : "\n" + inspector},
                                 {"kernel_fields", kernel_fields},
                                 {"pack_glue", glue}});
  return file;
}

std::optional<LinkedPackAlgorithm> link_pack_algorithm(const GeneratedFile& kernel_source, const std::string& kernel_name,
                                                       const sparse::Program& program) {
  const std::string index_type = c_type_name(program.index_type), value_type = c_type_name(program.value_type);
  const std::string own_copy = pack_algorithm(kernel_name, index_type, value_type, packs_sell(program));
  const size_t at = kernel_source.text.find(own_copy);
  if (at == std::string::npos) return std::nullopt;
  const std::string dot = kernel_source.name.substr(kernel_source.name.rfind('.'));
  const std::string in_its_place = templates::render("run_pack_algorithm_use.cpp.in", {{"name", kernel_name}});
  LinkedPackAlgorithm linked;
  linked.kernel = {kernel_name + "_for_driver" + dot, kernel_source.text};
  linked.kernel.text.replace(at, own_copy.size(), in_its_place);
  linked.header = {"spgen_run_pack.hpp", templates::render("run_pack_algorithm.hpp.in",
                                                            {{"index_type", index_type},
                                                             {"value_type", value_type},
                                                             {"types", pack_types("spgen_run", index_type, value_type, "the kernel's header")},
                                                             {"sell_types", pack_sell_types()}})};
  linked.source = {"spgen_run_pack.cpp", templates::render("run_pack_algorithm.cpp.in",
                                                            {{"index_type", index_type},
                                                             {"value_type", value_type},
                                                             {"status_codes", pack_status_codes()},
                                                             {"functions", pack_functions("spgen_run")},
                                                             {"sell_functions", pack_sell_functions()}})};
  return linked;
}

}  // namespace spgen
