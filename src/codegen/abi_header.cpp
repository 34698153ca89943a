#include "codegen/abi_header.h"

#include <algorithm>
#include <cctype>

#include "codegen/c_printer.h"
#include "support/templates.h"

namespace spgen {

std::string header_file_name(const loops::LoweredFunc& func) { return func.name + ".h"; }

std::string source_preamble(const std::string& preamble, const std::string& file_name, const loops::LoweredFunc& func,
                            const GenerationContext& context, const std::string& includes) {
  return templates::render(preamble, {{"file", file_name},
                                      {"version", context.version},
                                      {"spec_file", context.spec_file},
                                      {"config_file", context.config_file},
                                      {"spec", context.spec_text},
                                      {"header", header_file_name(func)},
                                      {"includes", includes}});
}

static std::string comment_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "//   " + line + "\n";
  if (lines.empty()) out += "//   (none)\n";
  return out;
}

static std::string pad_to(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

// The ABI comment lines and the declaration of one kernel function.
static std::pair<std::string, std::string> describe_function(const loops::LoweredFunc& func, const std::string& return_type,
                                                             const std::vector<std::string>& extra_params,
                                                             const std::vector<std::string>& extra_docs) {
  std::vector<std::string> declarations, types;
  size_t name_width = 0, type_width = 0;
  for (const loops::Param& p : func.params) {
    declarations.push_back(c_param(p, false));
    std::string type = declarations.back().substr(0, declarations.back().size() - p.name.size());
    while (!type.empty() && type.back() == ' ') type.pop_back();
    types.push_back(type);
    name_width = std::max(name_width, p.name.size());
    type_width = std::max(type_width, type.size());
  }
  std::string abi;
  for (size_t i = 0; i < func.params.size(); ++i) {
    const loops::Param& p = func.params[i];
    abi += "//   " + pad_to(p.name, name_width + 2) + pad_to(types[i], type_width + 2) + p.doc;
    if (!p.length.empty()) abi += "; length " + p.length;
    abi += "\n";
  }
  for (const std::string& doc : extra_docs) abi += "//   " + doc + "\n";
  // A kernel specialized for fixed sizes checks them: the cpu's then returns a status (cuda's
  // returns one already).
  std::string returns = return_type;
  if (!func.fixed_sizes.empty()) {
    std::string sizes;
    for (size_t k = 0; k < func.fixed_sizes.size(); ++k)
      sizes += std::string(k == 0 ? "" : k + 1 == func.fixed_sizes.size() ? " or " : ", ") + func.fixed_sizes[k].first + " is not " +
               std::to_string(func.fixed_sizes[k].second);
    const std::string error = return_type == "void" ? "SPGEN_ERR_DIM (6)" : "cudaErrorInvalidValue";
    abi += "// Specialized for fixed sizes: returns " + error + ", touching nothing, when " + sizes +
           (return_type == "void" ? "; else SPGEN_OK (0)." : ".") + "\n";
    if (return_type == "void") returns = "int";
  }
  std::vector<std::string> all = declarations;
  all.insert(all.end(), extra_params.begin(), extra_params.end());
  std::string declaration = returns + " " + func.name + "(";
  for (size_t i = 0; i < all.size(); ++i) declaration += (i ? ",\n    " : "\n    ") + all[i];
  declaration += ");";
  return {abi, declaration};
}

GeneratedFile emit_abi_header(const loops::LoweredFunc& func, const GenerationContext& context,
                              const std::string& return_type, const std::vector<std::string>& extra_params,
                              const std::vector<std::string>& extra_docs, const std::string& target_types,
                              const std::vector<loops::LoweredFunc>& assemble) {
  CExprPrinter printer;
  auto [abi, declaration] = describe_function(func, return_type, extra_params, extra_docs);
  if (assemble.size() == 1) {
    // The assemble phase comes first: it sizes the output that the kernel then fills.
    auto [assemble_abi, assemble_declaration] = describe_function(assemble.front(), return_type, extra_params, extra_docs);
    abi = "// First call " + assemble.front().name + "(...), which builds the output's positions:\n" + assemble_abi +
          "// then allocate the output's coordinates and values (their lengths below) and call " + func.name +
          "(...):\n" + abi;
    declaration = assemble_declaration + "\n\n" + declaration;
  } else if (!assemble.empty()) {
    // One phase per assembled level (compressed, ragged, ELL), top down: each sizes the next level's arrays.
    std::string phases, declarations;
    for (size_t i = 0; i < assemble.size(); ++i) {
      auto [phase_abi, phase_declaration] = describe_function(assemble[i], return_type, extra_params, extra_docs);
      phases += std::string(i == 0 ? "// First call " : "// then allocate the next pos array (length: the entries "
                                                        "of the levels above, plus 1) and call ") +
                assemble[i].name + "(...), which writes the positions of one output level (marked \"written here\"):\n" + phase_abi;
      declarations += phase_declaration + "\n\n";
    }
    abi = phases + "// then allocate the output's coordinates and values (their lengths below) and call " + func.name +
          "(...):\n" + abi;
    declaration = declarations + declaration;
  }

  std::string guard = "SPGEN_";
  for (char c : func.name) guard += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  guard += "_H";
  std::string value_type, index_type;
  for (const loops::Param& p : func.params) {
    if (p.kind == loops::ParamKind::Values) value_type = printer.type_name(p.type);
    if (p.kind == loops::ParamKind::Pos || p.kind == loops::ParamKind::Crd) index_type = printer.type_name(p.type);
  }
  std::vector<std::string> schedule = context.sizes;
  if (context.auto_schedule && context.auto_inputs.empty()) schedule.push_back("auto, chose:");
  if (context.auto_schedule && !context.auto_inputs.empty()) {
    schedule.push_back("auto, from the statistics of");
    for (const std::string& input : context.auto_inputs) schedule.push_back("  " + input);
    schedule.push_back("chose:");
  }
  schedule.insert(schedule.end(), context.schedule.begin(), context.schedule.end());
  GeneratedFile file;
  file.name = header_file_name(func);
  file.text = templates::render("kernel_header.h.in",
                                {{"file", file.name},
                                 {"version", context.version},
                                 {"spec_file", context.spec_file},
                                 {"config_file", context.config_file},
                                 {"spec", context.spec_text},
                                 {"formats", comment_lines(context.formats)},
                                 {"schedule", comment_lines(schedule)},
                                 {"name", func.name},
                                 {"return_type", func.fixed_sizes.empty() ? return_type : "int"},
                                 {"target_types", target_types},
                                 {"index_type", index_type.empty() ? "int32_t or int64_t" : index_type},
                                 {"value_type", value_type},
                                 {"abi", abi},
                                 {"guard", guard},
                                 {"declaration", declaration},
                                 {"pack_docs", context.pack.header_docs},
                                 {"pack_declarations", context.pack.header_declarations}});
  return file;
}

}  // namespace spgen
