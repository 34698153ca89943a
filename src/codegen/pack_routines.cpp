#include "codegen/pack_routines.h"

#include <algorithm>

#include "codegen/c_printer.h"
#include "support/templates.h"

namespace spgen {

namespace {

// The template's spelling of a level kind (templates/cpu_pack_routines.cpp.in, enum Kind).
const char* kind_constant(LevelKind kind) {
  switch (kind) {
    case LevelKind::Dense: return "kDense";
    case LevelKind::Compressed: return "kCompressed";
    case LevelKind::CompressedNonUnique: return "kCompressedNonUnique";
    case LevelKind::Singleton: return "kSingleton";
    case LevelKind::DenseVariable: return "kDenseVariable";
    case LevelKind::SparseFixed: return "kSparseFixed";
  }
  return "kDense";
}

int buffer_id(const sparse::Program& program, const std::string& tensor) {
  for (size_t t = 0; t < program.buffers.size(); ++t)
    if (program.buffers[t].tensor == tensor) return static_cast<int>(t);
  return -1;
}

// For each storage level of `buffer`'s structure, the mode of `buffer` it stores. For an output
// that shares an input's structure the level stores the input's mode; the output's mode is the
// one with the same index variable.
std::vector<int> level_modes(const sparse::Program& program, const sparse::SparseBuffer& buffer) {
  const sparse::SparseBuffer& structure = program.structure_of(buffer);
  std::vector<int> modes;
  for (int mode : structure.format.mode_order) {
    const std::string& var = structure.indices[static_cast<size_t>(mode)];
    auto it = std::find(buffer.indices.begin(), buffer.indices.end(), var);
    modes.push_back(it == buffer.indices.end() ? mode : static_cast<int>(it - buffer.indices.begin()));
  }
  return modes;
}

std::string access(const sparse::SparseBuffer& buffer) {
  std::string out = buffer.tensor + "(";
  for (size_t m = 0; m < buffer.indices.size(); ++m) out += (m ? "," : "") + buffer.indices[m];
  return out + ")";
}


std::string without_trailing_newlines(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

std::vector<PackTensor> pack_tensors(const sparse::Program& program, const std::string& kernel_name) {
  std::vector<PackTensor> out;
  for (size_t t = 0; t < program.buffers.size(); ++t) {
    const sparse::SparseBuffer& buffer = program.buffers[t];
    const sparse::SparseBuffer& structure = program.structure_of(buffer);
    if (buffer.format.is_row_major_dense() && structure.format.is_row_major_dense()) continue;
    PackTensor p;
    p.tensor = buffer.tensor;
    p.id = static_cast<int>(t);
    p.is_output = buffer.is_output;
    p.structure = structure.tensor;
    p.structure_id = buffer_id(program, structure.tensor);
    for (size_t l = 0; l < structure.format.levels.size(); ++l) {
      const std::string level = std::to_string(l);
      // (SELL's slot level has a pos array too: each slice's first slot row.)
      const bool sliced = structure.format.sliced && structure.format.levels[l] == LevelKind::SparseFixed;
      if (level_has_pos(structure.format.levels[l]) || sliced)
        p.arrays.push_back({structure.tensor + "_pos" + level, true, static_cast<int>(l)});
      if (level_has_crd(structure.format.levels[l])) p.arrays.push_back({structure.tensor + "_crd" + level, false, static_cast<int>(l)});
    }
    p.values = buffer.values.empty() ? buffer.tensor + "_vals" : buffer.values;
    if (p.structure == p.tensor) p.sizes_function = kernel_name + "_pack_" + buffer.tensor + "_sizes";
    p.pack_function = kernel_name + "_pack_" + buffer.tensor;
    p.unpack_function = kernel_name + "_unpack_" + buffer.tensor;
    out.push_back(std::move(p));
  }
  return out;
}

std::string pack_types(const std::string& kernel_name, const std::string& index_type, const std::string& value_type,
                       const std::string& header) {
  return templates::render("cpu_pack_types.cpp.in", {{"name", kernel_name},
                                                     {"header", header},
                                                     {"index_type", index_type},
                                                     {"value_type", value_type}});
}

std::string pack_functions(const std::string& kernel_name) {
  return templates::render("cpu_pack_routines.cpp.in", {{"name", kernel_name}});
}

std::string pack_sell_types() { return templates::render("cpu_pack_sell_types.cpp.in", {}); }

std::string sell_slices_function() { return templates::render("cpu_sell_slices.cpp.in", {}); }

std::string pack_sell_functions() { return sell_slices_function() + "\n" + templates::render("cpu_pack_sell.cpp.in", {}); }

std::string pack_algorithm(const std::string& kernel_name, const std::string& index_type, const std::string& value_type,
                           bool sell) {
  std::string text = pack_types(kernel_name, index_type, value_type, kernel_name + ".h") + pack_functions(kernel_name);
  if (sell)
    text += "\nnamespace " + kernel_name + "_pack {\n\n" + pack_sell_types() + "\n" + pack_sell_functions() +
            "\n}  // namespace " + kernel_name + "_pack\n";
  return text;
}

bool packs_sell(const sparse::Program& program) {
  return std::any_of(program.buffers.begin(), program.buffers.end(),
                     [](const sparse::SparseBuffer& b) { return b.format.sliced; });
}

std::string pack_status_codes() { return templates::render("pack_status_codes.h.in", {}); }

PackRoutines emit_pack_routines(const sparse::Program& program, const std::string& kernel_name, Target target) {
  PackRoutines routines;
  const std::vector<PackTensor> tensors = pack_tensors(program, kernel_name);
  if (tensors.empty()) return routines;
  const std::string index_type = c_type_name(program.index_type);
  const std::string value_type = c_type_name(program.value_type);
  const std::string ns = kernel_name + "_pack";

  std::string tables, wrappers, declarations, docs;
  for (const PackTensor& p : tensors) {
    const sparse::SparseBuffer& buffer = program.buffer(p.tensor);
    const sparse::SparseBuffer& structure = program.buffer(p.structure);
    const std::vector<int> modes = level_modes(program, buffer);
    const bool shared = p.structure != p.tensor;
    // SELL-C-sigma sorts rows and pads slices: routines of its own (templates/cpu_pack_sell.cpp.in).
    const bool sell = structure.format.sliced;

    // The level table.
    std::string levels;
    for (size_t l = 0; l < structure.format.levels.size(); ++l) {
      LevelBlock block = structure.format.block(l);
      std::string block_map = block.part == BlockPart::None ? ""
                              : std::string(block.part == BlockPart::Block ? ", kBlock, " : ", kInBlock, ") +
                                    std::to_string(block.size);
      levels += std::string(l ? ", " : "") + "{" + kind_constant(structure.format.levels[l]) + ", " +
                std::to_string(modes[l]) + ", " + std::to_string(structure.format.width(l)) + block_map + "}";
    }
    tables += "// " + access(buffer) + ": " + buffer.format.name +
              (shared ? ", stored in the structure of " + p.structure : "") + "\n";
    tables += "const Level levels_" + p.tensor + "[] = {" + levels + "};\n";
    tables += "const Format format_" + p.tensor + " = {" + std::to_string(structure.format.levels.size()) +
              ", levels_" + p.tensor +
              (structure.format.is_blocked() ? ", " + std::to_string(buffer.indices.size()) : std::string()) + "};\n";
    if (sell)
      tables += "const Sell sell_" + p.tensor + " = {" + std::to_string(structure.format.interleave) + ", " +
                std::to_string(structure.format.sigma) + "};\n";
    const std::string sell_argument = sell ? ns + "::sell_" + p.tensor + ", " : "";

    // The extern "C" functions.
    std::vector<std::string> array_params, const_array_params, array_names, lengths_doc;
    for (const PackArray& a : p.arrays) {
      array_params.push_back((shared ? "const " : "") + index_type + "* " + a.name);
      const_array_params.push_back("const " + index_type + "* " + a.name);
      array_names.push_back(a.name);
      lengths_doc.push_back(a.name);
    }
    lengths_doc.push_back(p.values);
    auto array_list = [&](const std::string& element_type) {
      std::string list = element_type + " const arrays[] = {";
      for (size_t i = 0; i < array_names.size(); ++i) list += (i ? ", " : "") + array_names[i];
      return list + "};\n  ";
    };
    auto arrays_argument = [&]() { return array_names.empty() ? std::string("nullptr") : std::string("arrays"); };
    const std::string format = ns + "::format_" + p.tensor;
    std::vector<std::string> functions;
    if (!shared) {
      functions.push_back(c_signature("int", p.sizes_function,
                                    {"int64_t nnz", "const int64_t* coords", "const int64_t* dims", "int64_t* lengths"}));
      wrappers += "extern \"C\" " + functions.back() + " {\n  return " + ns + (sell ? "::sell_pack_sizes(" : "::pack_sizes(") +
                  format + ", " + sell_argument + "nnz, coords, dims, lengths);\n}\n\n";
    }
    std::vector<std::string> pack_params = {"int64_t nnz", "const int64_t* coords", "const " + value_type + "* vals",
                                            "const int64_t* dims"};
    pack_params.insert(pack_params.end(), array_params.begin(), array_params.end());
    pack_params.push_back(value_type + "* " + p.values);
    pack_params.push_back("const int64_t* lengths");
    functions.push_back(c_signature("int", p.pack_function, pack_params));
    std::string arrays = array_names.empty() ? "" : array_list(shared ? "const " + index_type + "*" : index_type + "*");
    wrappers += "extern \"C\" " + functions.back() + " {\n  " + arrays + "return " + ns +
                (shared ? "::pack_on_structure(" : sell ? "::sell_pack(" : "::pack(") + format + ", " + sell_argument +
                "nnz, coords, vals, dims, " + arrays_argument() + ", " + p.values + ", lengths);\n}\n\n";
    std::vector<std::string> unpack_params = {"const int64_t* dims"};
    unpack_params.insert(unpack_params.end(), const_array_params.begin(), const_array_params.end());
    unpack_params.push_back("const " + value_type + "* " + p.values);
    unpack_params.insert(unpack_params.end(), {"const int64_t* lengths", "int64_t* nnz_out", "int64_t* coords_out",
                                               value_type + "* vals_out"});
    functions.push_back(c_signature("int", p.unpack_function, unpack_params));
    arrays = array_names.empty() ? "" : array_list("const " + index_type + "*");
    wrappers += "extern \"C\" " + functions.back() + " {\n  " + arrays + "return " + ns +
                (sell ? "::sell_unpack(" + sell_argument : "::unpack(" + format + ", ") + "dims, " + arrays_argument() +
                ", " + p.values + ", lengths, nnz_out, coords_out, vals_out);\n}\n\n";
    for (const std::string& f : functions) declarations += f + ";\n\n";

    // The header's line about it.
    std::string coords;
    for (size_t m = 0; m < buffer.indices.size(); ++m) coords += (m ? ", " : "") + buffer.indices[m];
    std::string lengths;
    for (size_t i = 0; i < lengths_doc.size(); ++i) lengths += (i ? ", " : "") + lengths_doc[i];
    docs += "//   " + access(buffer) + ", " + buffer.format.name + ": coords (" + coords + "), lengths {" + lengths +
            "}:\n//     ";
    if (shared)
      docs += p.pack_function + ", " + p.unpack_function + ". " + p.tensor + " shares the structure of " +
              p.structure + ": they take\n//     " + p.structure +
              "'s packed pos/crd arrays (only read, and checked as unpack checks them). Pack puts each\n"
              "//     value at the position " + p.structure + " stores it (zeros elsewhere); there is no _sizes: " +
              p.values + " is as long\n//     as " + structure.values + ".\n";
    else
      docs += p.sizes_function + ", " + p.pack_function + ", " + p.unpack_function + "\n";
  }

  routines.source = pack_algorithm(kernel_name, index_type, value_type, packs_sell(program));
  routines.source += "\nnamespace " + ns + " {\n\n" + tables + "\n}  // namespace " + ns + "\n\n" + wrappers;
  routines.source += "extern \"C\" const char* " + kernel_name + "_pack_strerror(int code) { return " + ns +
                     "::error_string(code); }\n";
  // A GPU kernel takes device arrays, but its routines, like a CPU kernel's, run on the host.
  const std::string host_memory = target == Target::Cuda ? templates::render("cuda_pack_docs.h.in", {{"name", kernel_name}}) : "";
  routines.header_docs = without_trailing_newlines(templates::render(
                             "cpu_pack_docs.h.in", {{"name", kernel_name}, {"host_memory", host_memory}, {"tensors", docs}})) +
                         "\n";
  routines.header_declarations = without_trailing_newlines(templates::render(
      "cpu_pack_declarations.h.in",
      {{"name", kernel_name}, {"status_codes", pack_status_codes()}, {"declarations", declarations}}));
  return routines;
}

}  // namespace spgen
