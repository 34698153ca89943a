#include "passes/lower/abi_params.h"

#include "frontend/config.h"
#include "passes/lower/level_access.h"
#include "passes/lower/output_levels.h"
#include "passes/lower/runs.h"
#include "passes/lower_to_loops.h"
#include "support/text.h"

namespace spgen::lowering {

using namespace loops;

namespace {

class AbiParams {
 public:
  explicit AbiParams(const AbiInputs& in)
      : program_(in.program), value_type_(value_scalar_type(in.program.value_type)),
        index_type_(index_scalar_type(in.program.index_type)), assembled_(in.assembled), counting_(in.counting),
        counted_level_(in.counted_level), listed_(in.listed), runs_(in.program, in.by_runs) {}

  std::string level_size_prose(const sparse::SparseBuffer& buffer, int level) const {
    if (level < 0) return "1";
    const sparse::Axis& axis = program_.axes[buffer.axes[level]];
    return level_access(axis)->size_prose(level_size_prose(buffer, level - 1));
  }

  static Param make_param(std::string name, ParamKind kind, ScalarType type, std::string tensor, int level,
                          std::string doc, std::string length) {
    Param p;
    p.name = std::move(name);
    p.kind = kind;
    p.type = type;
    p.is_array = kind != ParamKind::Dim;
    p.tensor = std::move(tensor);
    p.level = level;
    p.doc = std::move(doc);
    p.length = std::move(length);
    return p;
  }

  std::vector<Param> make_params() const {
    std::vector<Param> params;
    for (const std::string& var : program_.index_vars) {
      params.push_back(make_param(dim_name(var), ParamKind::Dim, ScalarType::Int64, "", -1, "size of index " + var, ""));
      params.back().index_var = var;
    }
    for (const sparse::SparseBuffer& buffer : program_.buffers) {
      const sparse::SparseBuffer& structure = program_.structure_of(buffer);
      if (buffer.is_output && assembled_) {
        append_assembled_output_params(buffer, params);
        continue;
      }
      if (&structure == &buffer) {
        for (size_t level = 0; level < buffer.axes.size(); ++level)
          append_level_params(buffer, static_cast<int>(level), params);
      }
      std::string values_doc;
      if (buffer.is_output) {
        values_doc = "output " + buffer.tensor + "(" + join(buffer.indices, ",") + ")";
        values_doc += buffer.shares_structure_with.empty()
                          ? (buffer.format.all_dense() ? ", dense in storage order" : "")
                          : ", one value per stored entry of " + buffer.shares_structure_with +
                                " (it shares that structure)";
        values_doc += program_.iteration.accumulate ? "; the kernel adds into it (+=)" : "; overwritten";
      } else {
        values_doc = "values of " + buffer.tensor + "(" + join(buffer.indices, ",") + ")" +
                     (buffer.format.all_dense() ? ", dense in storage order" : ", one per stored entry");
      }
      params.push_back(make_param(buffer.values, ParamKind::Values, value_type_, buffer.tensor, -1, values_doc,
                                  level_size_prose(structure, static_cast<int>(structure.axes.size()) - 1)));
      params.back().is_const = !buffer.is_output;
    }
    return params;
  }

  // An assembled output: each assemble phase writes the pos array of one compressed level (the
  // levels above it are already built); NAME reads them all and writes crd and values, whose
  // lengths the caller takes from the last pos entries.
  void append_assembled_output_params(const sparse::SparseBuffer& output, std::vector<Param>& params) const {
    for (size_t level = 0; level < output.axes.size(); ++level) {
      const sparse::Axis& axis = program_.axes[output.axes[level]];
      if (counting_ && static_cast<int>(level) > counted_level_) break;
      std::string where = "output " + output.tensor + " level " + std::to_string(level) + " (" +
                          level_kind_name(output.format.levels[level]) + ", index " + level_coordinate_prose(axis) + ")";
      if (axis.kind == sparse::AxisKind::Singleton && !counting_) {
        params.push_back(make_param(axis.crd, ParamKind::Crd, index_type_, output.tensor, static_cast<int>(level),
                                    where + ": the coordinate of each entry, written here",
                                    level_size_prose(output, static_cast<int>(level))));
        params.back().is_const = false;
      }
      if (axis.kind != sparse::AxisKind::SparseVariable && axis.kind != sparse::AxisKind::DenseVariable &&
          axis.kind != sparse::AxisKind::SparseFixed)
        continue;
      bool counted_here = counting_ && static_cast<int>(level) == counted_level_;
      std::string parents = level_size_prose(output, static_cast<int>(level) - 1);
      std::string counted = axis.kind == sparse::AxisKind::DenseVariable
                                ? ": positions, written here (each row's largest coordinate + 1, then summed)"
                                : ": positions, written here (entries counted, then summed)";
      if (axis.kind == sparse::AxisKind::SparseFixed)
        counted += "; parent position p gets " + axis.pos + "[p+1]-" + axis.pos + "[p] entries, which must be at most " +
                   std::to_string(axis.width) + " (the width) before " + program_.kernel_name +
                   " is called: it stores only the first " + std::to_string(axis.width) + " of a longer row";
      std::string written_by = assemble_function_name(program_, static_cast<int>(level));
      // The fill of an ELL level needs no positions: a row's slots start at its first.
      if (counting_ || axis.kind != sparse::AxisKind::SparseFixed) {
        params.push_back(make_param(axis.pos, ParamKind::Pos, index_type_, output.tensor, static_cast<int>(level),
                                    where + (counted_here ? counted : ": positions, as written by " + written_by),
                                    parents == "1" ? "2" : parents + " + 1"));
        params.back().is_const = !counted_here;
      }
      if (counting_ || axis.kind == sparse::AxisKind::DenseVariable) continue;
      std::string crd_doc = axis.kind == sparse::AxisKind::SparseFixed
                                ? ": coordinates, written here: " + std::to_string(axis.width) +
                                      " per parent position, increasing, then padding marked -1"
                            : axis.unique ? ": coordinates, written here in increasing order under each parent"
                                          : ": the coordinate of each entry, written here in non-decreasing order";
      params.push_back(make_param(axis.crd, ParamKind::Crd, index_type_, output.tensor, static_cast<int>(level),
                                  where + crd_doc,
                                  level_size_prose(output, static_cast<int>(level))));
      params.back().is_const = false;
    }
    if (counting_) return;
    std::string entries = level_size_prose(output, static_cast<int>(output.axes.size()) - 1);
    // Listed entries are keyed by their coordinates flattened in one 64-bit integer.
    std::string listed = listed_ ? "; its entries are listed and sorted by their flattened coordinates, so the product of " +
                                       output.tensor + "'s dimensions must be below 2^63"
                                 : "";
    params.push_back(make_param(output.values, ParamKind::Values, value_type_, output.tensor, -1,
                                "output " + output.tensor + "(" + join(output.indices, ",") + "), one value per entry" + listed, entries));
    params.back().is_const = false;
  }

  // The pos and crd arrays of one level, with what they hold, for the ABI comment.
  void append_level_params(const sparse::SparseBuffer& buffer, int level, std::vector<Param>& params) const {
    const sparse::Axis& axis = program_.axes[buffer.axes[level]];
    if (axis.pos.empty() && axis.crd.empty()) return;
    std::string where = buffer.tensor + " level " + std::to_string(level) + " (" +
                        level_kind_name(buffer.format.levels[level]) + ", index " + axis.index_var + ", mode " +
                        std::to_string(axis.mode) + ")";
    std::string parents = level_size_prose(buffer, level - 1);
    std::string size = level_size_prose(buffer, level);
    if (!axis.pos.empty()) {
      std::string what = level_access(axis)->pos_prose();
      params.push_back(make_param(axis.pos, ParamKind::Pos, index_type_, buffer.tensor, level, where + what,
                                  level_access(axis)->pos_size_prose(parents)));
    }
    if (!axis.crd.empty()) {
      std::string what = level_access(axis)->crd_prose(buffer.format, iterates_run(axis), is_last_level(axis));
      params.push_back(make_param(axis.crd, ParamKind::Crd, index_type_, buffer.tensor, level, where + what, size));
    }
  }

 private:
  bool iterates_run(const sparse::Axis& axis) const { return runs_.iterates_run(axis); }
  bool is_last_level(const sparse::Axis& axis) const { return runs_.is_last_level(axis); }

  const sparse::Program& program_;
  ScalarType value_type_, index_type_;
  bool assembled_, counting_;
  int counted_level_;
  bool listed_;
  Runs runs_;
};

}  // namespace

std::vector<Param> kernel_params(const AbiInputs& inputs) { return AbiParams(inputs).make_params(); }

}  // namespace spgen::lowering
