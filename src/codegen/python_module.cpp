#include "codegen/python_module.h"

#include <algorithm>
#include <set>

#include "codegen/pack_routines.h"
#include "passes/lower_to_loops.h"
#include "support/diagnostics.h"
#include "support/templates.h"

namespace spgen {

namespace {

// Python literals: the names here are C identifiers, so quoting needs no escapes.
std::string quoted(const std::string& text) { return "\"" + text + "\""; }

template <class T, class F>
std::string list(const std::vector<T>& items, F&& print) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + print(items[i]);
  return out + "]";
}

std::string names(const std::vector<std::string>& items) { return list(items, quoted); }

std::string numbers(const std::vector<int64_t>& items) {
  return list(items, [](int64_t n) { return std::to_string(n); });
}

[[noreturn]] void refuse(const std::string& why) {
  throw CompileError("spgen: error: --python: " + why + "\n");
}

bool is_python_keyword(const std::string& name) {
  static const std::set<std::string> keywords = {
      "False", "None",   "True",    "and",   "as",   "assert", "async",  "await",    "break",  "class", "continue",
      "def",   "del",    "elif",    "else",  "except", "finally", "for", "from",     "global", "if",    "import",
      "in",    "is",     "lambda",  "nonlocal", "not", "or",   "pass",   "raise",    "return", "try",   "while",
      "with",  "yield"};
  return keywords.count(name) > 0;
}

// A kernel parameter as the module's table lists it: ("dim", VAR), ("pos" or "crd", TENSOR,
// LEVEL), ("values", TENSOR) or, for a decomposition's part arrays, ("part", K).
std::vector<std::string> param_table(const loops::LoweredFunc& func, const Decomposition* decomposition) {
  std::vector<std::string> out;
  int part = 0;
  for (const loops::Param& p : func.params) {
    if (decomposition && decomposition->is_part_tensor(p.tensor)) {
      out.push_back("(\"part\", " + std::to_string(part++) + ")");
      continue;
    }
    switch (p.kind) {
      case loops::ParamKind::Dim: out.push_back("(\"dim\", " + quoted(p.index_var) + ")"); break;
      case loops::ParamKind::Pos:
      case loops::ParamKind::Crd:
        out.push_back(std::string("(\"") + (p.kind == loops::ParamKind::Pos ? "pos" : "crd") + "\", " + quoted(p.tensor) + ", " +
                      std::to_string(p.level) + ")");
        break;
      case loops::ParamKind::Values: out.push_back("(\"values\", " + quoted(p.tensor) + ")"); break;
    }
  }
  return out;
}

std::string params_literal(const std::vector<std::string>& params, const std::string& indent) {
  std::string out = "[";
  for (size_t i = 0; i < params.size(); ++i) out += (i ? ",\n" + indent + " " : "") + params[i];
  return out + "]";
}

// What the module cannot call, refused here rather than failing in the user's first call.
void check_supported(const std::string& kernel_name, const sparse::Program& program, Target target,
                     const std::vector<loops::LoweredFunc>& assemble) {
  if (target == Target::Cuda)
    refuse("the Python module calls a cpu kernel; a cuda kernel's arrays live on the GPU (generate with --target cpu, "
           "or call the cuda kernel from C++ as docs/cuda.md shows)");
  const sparse::SparseBuffer& output = program.output();
  for (const sparse::SparseBuffer& buffer : program.buffers) {
    if (is_python_keyword(buffer.tensor)) refuse("tensor " + buffer.tensor + " is named like a Python keyword; rename it in the spec");
  }
  // The module's own names: a kernel named like one would replace it.
  static const std::set<std::string> module_names = {"pack", "build", "library_path", "Packed", "BuildError"};
  if (module_names.count(kernel_name) || kernel_name[0] == '_')
    refuse("a kernel named " + kernel_name + " would hide the module's own " + kernel_name + "; give it another \"name\"");
  for (const std::string& var : program.index_vars)
    if (is_python_keyword(var)) refuse("index variable " + var + " is named like a Python keyword; rename it in the spec");
  const bool all_dense = std::all_of(output.format.levels.begin(), output.format.levels.end(),
                                     [](LevelKind k) { return k == LevelKind::Dense; });
  if (all_dense && output.format.is_blocked()) refuse("output " + output.tensor + " is dense in blocks; store it dense");
  if (all_dense || !output.shares_structure_with.empty()) return;
  if (assemble.empty())
    refuse("output " + output.tensor + " is sparse, but the kernel neither assembles it nor shares an input's structure");
}

// "vars": the index variable whose size each mode has (sparse::Program::size_var).
std::string tensor_literal(const sparse::Program& program, const sparse::SparseBuffer& buffer, const std::vector<PackTensor>& routines,
                           const Decomposition* decomposition) {
  std::vector<std::string> size_vars;
  for (const std::string& var : buffer.indices) size_vars.push_back(program.size_var(var));
  std::vector<std::string> levels;
  for (LevelKind kind : buffer.format.levels) levels.push_back(level_kind_name(kind));
  std::vector<int64_t> order(buffer.format.mode_order.begin(), buffer.format.mode_order.end()), blocks, widths;
  for (size_t l = 0; l < buffer.format.levels.size(); ++l) widths.push_back(buffer.format.width(l));
  if (buffer.format.is_blocked())
    for (size_t l = 0; l < buffer.format.levels.size(); ++l) blocks.push_back(buffer.format.block(l).size);
  std::string routine_literal = "None";
  for (const PackTensor& p : routines) {
    if (p.tensor != buffer.tensor) continue;
    routine_literal = "{\"arrays\": " + list(p.arrays, [](const PackArray& a) {
                        return std::string("[\"") + (a.is_pos ? "pos" : "crd") + "\", " + std::to_string(a.level) + "]";
                      }) + ", \"sizes\": " + (p.sizes_function.empty() ? "None" : quoted(p.sizes_function)) +
                      ", \"pack\": " + quoted(p.pack_function) + ", \"unpack\": " + quoted(p.unpack_function) + "}";
  }
  const bool decomposed = decomposition && decomposition->op.tensor == buffer.tensor;
  return "{\"name\": " + quoted(buffer.tensor) + ", \"output\": " + (buffer.is_output ? "True" : "False") +
         ", \"vars\": " + names(size_vars) + ", \"format\": " + quoted(buffer.format.name) +
         ",\n     \"levels\": " + names(levels) + ", \"mode_order\": " + numbers(order) + ", \"blocks\": " + numbers(blocks) + ", \"widths\": " + numbers(widths) +
         ", \"shares\": " + (buffer.shares_structure_with.empty() ? "None" : quoted(buffer.shares_structure_with)) +
         ", \"decomposed\": " + (decomposed ? "True" : "False") +
         ", \"previous\": " + (buffer.previous_output ? "True" : "False") + ",\n     \"routines\": " + routine_literal + "}";
}

std::string kernel_table(const loops::LoweredFunc& func, const sparse::Program& program,
                         const std::vector<loops::LoweredFunc>& assemble, const Decomposition* decomposition) {
  const std::vector<PackTensor> routines = pack_tensors(program, func.name);
  std::string tensors;
  for (size_t t = 0; t < program.buffers.size(); ++t)
    tensors += (t ? ",\n    " : "") + tensor_literal(program, program.buffers[t], routines, decomposition);
  std::string fixed;
  for (const auto& fixed_size : func.fixed_sizes) {
    const std::string& param_name = fixed_size.first;  // (clang 14 cannot capture a structured binding)
    const auto param = std::find_if(func.params.begin(), func.params.end(), [&](const loops::Param& p) { return p.name == param_name; });
    fixed += (fixed.empty() ? "" : ", ") + quoted(param->index_var) + ": " + std::to_string(fixed_size.second);
  }
  std::string phases;
  const std::vector<int> levels = assembled_levels(program);
  for (size_t k = 0; k < assemble.size(); ++k)
    phases += std::string(k ? ",\n    " : "") + "{\"function\": " + quoted(assemble[k].name) + ", \"level\": " + std::to_string(levels[k]) +
              ",\n     \"params\": " + params_literal(param_table(assemble[k], nullptr), "               ") + "}";
  std::string decompose = "None";
  if (decomposition) {
    std::vector<std::string> parts;
    for (const loops::Param& p : func.params)
      if (decomposition->is_part_tensor(p.tensor)) parts.push_back(p.kind == loops::ParamKind::Values ? "values" : "index");
    const std::string base = func.name + "_decompose_" + decomposition->op.tensor;
    decompose = "{\"tensor\": " + quoted(decomposition->op.tensor) + ", \"sizes\": " + quoted(base + "_sizes") +
                ", \"fill\": " + quoted(base) + ",\n    \"parts\": " + names(parts) + "}";
  }
  return "{\n  \"name\": " + quoted(func.name) + ",\n  \"index_type\": " + quoted(index_type_name(program.index_type)) +
         ",\n  \"value_type\": " + quoted(value_type_name(program.value_type)) + ",\n  \"vars\": " + names(program.index_vars) +
         ",\n  \"accumulate\": " + (program.iteration.accumulate ? "True" : "False") + ",\n  \"fixed_sizes\": {" + fixed + "},\n  \"tensors\": [\n    " + tensors + "],\n  \"params\": " +
         params_literal(param_table(func, decomposition), "            ") + ",\n  \"assemble\": [" +
         (phases.empty() ? "" : "\n    " + phases) + "],\n  \"decompose\": " + decompose + ",\n}";
}

std::string modes(const sparse::SparseBuffer& buffer) {
  std::string out = "(";
  for (size_t m = 0; m < buffer.indices.size(); ++m) out += (m ? ", " : "") + buffer.indices[m];
  return out + ")";
}

// The function the user calls: the inputs by name, then the sizes no input fixes.
std::string entry_function(const loops::LoweredFunc& func, const sparse::Program& program, std::string* call_example) {
  std::set<std::string> fixed_by_inputs;
  std::string params, inputs, docs, example_args;
  std::string previous_param;  // `+=` into an output assembled anew: its value before, as the output's name
  for (const sparse::SparseBuffer& buffer : program.buffers) {
    if (buffer.is_output) continue;
    if (buffer.previous_output) {
      previous_param = ", " + program.output().tensor + "=None";
      inputs += std::string(inputs.empty() ? "" : ", ") + quoted(buffer.tensor) + ": " + program.output().tensor;
      docs += "    " + program.output().tensor + ": the output's value before the kernel adds into it (`+=`), stored " +
              buffer.format.name + "; none when omitted\n";
      continue;
    }
    for (const std::string& var : buffer.indices) fixed_by_inputs.insert(program.size_var(var));
    params += ", " + buffer.tensor;
    inputs += std::string(inputs.empty() ? "" : ", ") + quoted(buffer.tensor) + ": " + buffer.tensor;
    example_args += std::string(example_args.empty() ? "" : ", ") + buffer.tensor + "=...";
    const bool dense = buffer.format.is_row_major_dense();
    docs += "    " + buffer.tensor + ": " + buffer.tensor + modes(buffer) + ", stored " + buffer.format.name +
            (dense ? "" : " (converted from scipy.sparse, numpy or COO; or pack(\"" + buffer.tensor + "\", x))") + "\n";
  }
  std::string sizes;
  for (const std::string& var : program.index_vars) {
    if (fixed_by_inputs.count(var)) continue;
    const auto fixed = std::find_if(func.fixed_sizes.begin(), func.fixed_sizes.end(), [&](const auto& f) {
      return std::any_of(func.params.begin(), func.params.end(),
                         [&](const loops::Param& p) { return p.name == f.first && p.index_var == var; });
    });
    params += ", " + var + "=None";
    sizes += std::string(sizes.empty() ? "" : ", ") + quoted(var) + ": " + var;
    example_args += ", " + var + "=" + (fixed != func.fixed_sizes.end() ? std::to_string(fixed->second) : std::string("32"));
    docs += "    " + var + ": the size of index " + var + ", which no input fixes" +
            (fixed != func.fixed_sizes.end() ? " (the kernel is generated for " + std::to_string(fixed->second) + ")" : "") + "\n";
  }
  const sparse::SparseBuffer& output = program.output();
  const bool dense_output = std::all_of(output.format.levels.begin(), output.format.levels.end(),
                                        [](LevelKind k) { return k == LevelKind::Dense; });
  params += previous_param;
  std::string initial;
  if (program.iteration.accumulate && dense_output) {
    params += ", " + output.tensor + "=None";
    initial = ", initial=" + output.tensor;
    docs += "    " + output.tensor + ": the output's value before the kernel adds into it (`+=`); zeros when omitted\n";
  }
  auto returns = [&](const sparse::SparseBuffer& out) {
    const bool dense = std::all_of(out.format.levels.begin(), out.format.levels.end(), [](LevelKind k) { return k == LevelKind::Dense; });
    return out.tensor + modes(out) + ", " +
           (out.indices.empty() ? "a numpy scalar"
            : dense             ? "a numpy array"
            : out.indices.size() == 2 ? "a scipy.sparse matrix (csr_array or csc_array)"
                                      : "a COO tuple (coords, values, shape)");
  };
  std::string returned, names;
  size_t outputs = 0;
  for (const sparse::SparseBuffer& buffer : program.buffers)
    if (buffer.is_output) {
      ++outputs;
      returned += (returned.empty() ? "" : "; ") + returns(buffer);
      names += (names.empty() ? "" : ", ") + buffer.tensor;
    }
  *call_example = names + " = " + func.name + "." + func.name + "(" + example_args + ")";
  return "def " + func.name + "(*" + params + "):\n    \"\"\"" + program.spec_text + ": returns " +
         (outputs > 1 ? "a tuple: " : "") + returned + " of " + value_type_name(program.value_type) + ".\n\n" + docs +
         "    \"\"\"\n" + "    return _call({" + inputs + "}, {" + sizes + "}" + initial + ")\n";
}

}  // namespace

GeneratedFile emit_python_module(const loops::LoweredFunc& func, const sparse::Program& program, Target target,
                                 const std::vector<loops::LoweredFunc>& assemble, const Decomposition* decomposition,
                                 const GenerationContext& context) {
  check_supported(func.name, program, target, assemble);
  std::string formats;
  for (const std::string& line : context.formats) formats += "    " + line + "\n";
  std::string call_example;
  const std::string entry = entry_function(func, program, &call_example);
  GeneratedFile file;
  file.name = func.name + ".py";
  file.text = templates::render("python_module.py.in", {{"name", func.name},
                                                        {"version", context.version},
                                                        {"spec_file", context.spec_file},
                                                        {"config_file", context.config_file},
                                                        {"spec", context.spec_text},
                                                        {"call_example", call_example},
                                                        {"formats", formats},
                                                        {"value_type", value_type_name(program.value_type)},
                                                        {"kernel_table", kernel_table(func, program, assemble, decomposition)},
                                                        {"entry", entry}});
  return file;
}

}  // namespace spgen
