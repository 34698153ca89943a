#include "codegen/decompose_routines.h"

#include <algorithm>

#include "codegen/c_printer.h"
#include "codegen/pack_routines.h"
#include "support/templates.h"
#include "support/text.h"

namespace spgen {

namespace {

const char* kind_constant(PartKind kind) {
  switch (kind) {
    case PartKind::Ell: return "kEll";
    case PartKind::Coo: return "kCoo";
    case PartKind::Bucket: return "kBucket";
    case PartKind::Bsr: return "kBsr";
    case PartKind::Csr: return "kCsr";
    case PartKind::Sell: return "kSell";
  }
  return "kCsr";
}

}  // namespace

PackRoutines emit_decompose_routines(const Decomposition& d, const sparse::Program& program, const loops::LoweredFunc& executor) {
  const std::string& name = executor.name;
  const std::string& tensor = d.op.tensor;
  const sparse::SparseBuffer& csr = program.buffer(tensor);
  const std::string index_type = c_type_name(program.index_type);
  const std::string value_type = c_type_name(program.value_type);
  const std::string ns = name + "_decompose";
  const std::string rows = "dim_" + csr.indices[0], cols = "dim_" + csr.indices[1];
  const std::string pos = tensor + "_pos1", crd = tensor + "_crd1", vals = csr.values;

  // The plan: the parts in the executor's order.
  std::string parts;
  for (const DecomposedPart& part : d.parts)
    parts += std::string(parts.empty() ? "" : ", ") + "{" + kind_constant(part.kind) + ", " + std::to_string(part.width) +
             ", " + std::to_string(part.partition) + ", " + std::to_string(part.config.format_of(part.tensor).interleave) + ", " +
             std::to_string(d.op.sigma) + "}";
  int64_t min_fill = 0;
  if (d.op.format == "bsr") min_fill = 1;  // (every occupied block)
  if (d.op.format == "bsr+csr") {
    // At least one entry, so that an empty block never goes to the BSR part.
    double need = d.op.fill * static_cast<double>(d.op.block_rows * d.op.block_cols);
    min_fill = std::max<int64_t>(1, static_cast<int64_t>(need));
    if (static_cast<double>(min_fill) < need) ++min_fill;
  }
  const std::string format = describe_schedule_op(ScheduleOp{d.op, 0, d.op_path, "", ""});
  std::string table = "// " + format + "\n";
  table += "const Part kParts[] = {" + parts + "};\n";
  table += "const Plan kPlan = {" + std::to_string(d.parts.size()) + ", kParts, " + std::to_string(d.op.partitions) + ", " +
           std::to_string(d.op.block_rows) + ", " + std::to_string(d.op.block_cols) + ", " + std::to_string(min_fill) + "};\n";

  // The extern "C" wrappers.
  std::vector<loops::Param> part_params;
  for (const loops::Param& p : executor.params)
    if (d.is_part_tensor(p.tensor)) part_params.push_back(p);
  std::vector<std::string> size_params = {"int64_t " + rows, "int64_t " + cols, "const " + index_type + "* " + pos,
                                          "const " + index_type + "* " + crd, "int64_t* lengths"};
  std::vector<std::string> fill_params = {"int64_t " + rows, "int64_t " + cols, "const " + index_type + "* " + pos,
                                          "const " + index_type + "* " + crd, "const " + value_type + "* " + vals};
  std::vector<std::string> array_names, array_docs;
  for (loops::Param p : part_params) {
    p.is_const = false;
    fill_params.push_back(c_param(p, false));
    // One line per part.
    if (array_names.empty() || p.tensor != part_params[array_names.size() - 1].tensor) array_docs.push_back("//    ");
    array_docs.back() += std::string(array_docs.back().size() > 6 ? ", " : " ") + p.name;
    array_names.push_back(p.name);
  }
  for (std::string& line : array_docs) line += "\n";
  fill_params.push_back("const int64_t* lengths");
  const std::string sizes_name = name + "_decompose_" + tensor + "_sizes", fill_name = name + "_decompose_" + tensor;
  const std::string csr_value = ns + "::Csr{" + rows + ", " + cols + ", " + pos + ", " + crd + ", ";
  std::string wrappers = "extern \"C\" " + c_signature("int", sizes_name, size_params) + " {\n  return " + ns + "::sizes(" + ns +
                         "::kPlan, " + csr_value + "nullptr}, lengths);\n}\n\n";
  wrappers += "extern \"C\" " + c_signature("int", fill_name, fill_params) + " {\n  void* const arrays[] = {" + join(array_names, ", ") +
              "};\n  return " + ns + "::fill(" + ns + "::kPlan, " + csr_value + vals + "}, arrays, lengths);\n}\n";

  PackRoutines routines;
  routines.source = templates::render("cpu_decompose_routines.cpp.in", {{"name", name},
                                                                       {"tensor", tensor},
                                                                       {"format", format},
                                                                       {"header", name + ".h"},
                                                                       {"index_type", index_type},
                                                                       {"value_type", value_type},
                                                                       {"table", table},
                                                                       {"sell_slices", sell_slices_function()},
                                                                       {"wrappers", wrappers}});
  routines.header_docs = templates::render("cpu_decompose_docs.h.in", {{"name", name},
                                                                       {"tensor", tensor},
                                                                       {"format", format},
                                                                       {"dims", rows + ", " + cols},
                                                                       {"csr_index_arrays", pos + ", " + crd},
                                                                       {"csr_arrays", pos + ", " + crd + ", " + vals},
                                                                       {"count", std::to_string(array_names.size())},
                                                                       {"part_arrays", join(array_docs, "")}});
  routines.header_declarations = "\n" + c_signature("int", sizes_name, size_params) + ";\n\n" + c_signature("int", fill_name, fill_params) + ";\n";
  return routines;
}

}  // namespace spgen
