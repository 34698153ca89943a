// Prints stage II IR as C++ statements. The CPU and CUDA backends share it and differ only in
// how a loop is introduced (OpenMP pragmas on the CPU, GPU indices on CUDA), how min/max and
// atomic stores are spelled.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/loop_ir.h"
#include "frontend/config.h"
#include "ir/loop_ir_printer.h"

namespace spgen {

// The C name of a math function on doubles (`fabs`, `exp`, ...): `std::` before it in C++, `f`
// after it for floats in CUDA.
const char* c_math_function(loops::MathOp op);

class CExprPrinter : public loops::ExprPrinter {
 public:
  std::string type_name(loops::ScalarType type) const override;

 protected:
  std::string print_cast(loops::ScalarType type, const std::string& operand, bool operand_is_primary) const override;
  std::string print_math(loops::MathOp op, const std::string& a, loops::ScalarType type) const override;
  std::string print_min_max(loops::BinOp op, const std::string& a, const std::string& b,
                            loops::ScalarType type) const override;
  std::string print_float(const loops::FloatImm& node) const override;
  std::string print_vector_load(const loops::Load& node, const std::string& index) const override;
  std::string print_lane_sum(const loops::LaneSum& node) const override;
  std::string print_masked_sum(const loops::MaskedSum& node) const override;
  std::string print_thread_count() const override { return "spgen_thread_count()"; }

 public:
  // spgen_vf32 / spgen_vf64 and their load/store helpers (templates/cpu_vector_helpers.cpp.in).
  // `lanes` 0: the native vector (spgen_vf32, helpers spgen_load_f32 ...); else a vector of
  // that many elements (spgen_v8f32, helpers spgen_load_v8f32 ...).
  static std::string vector_type_name(loops::ScalarType type, int64_t lanes = 0);
  static std::string vector_suffix(loops::ScalarType type, int64_t lanes = 0);  // "f32", "f64", "v8f32"
};

// The C types of the configured values and indices ("float", "int32_t", ...), as the generated
// code and the drivers spell them.
std::string c_type_name(ValueType type);
std::string c_type_name(IndexType type);

class CStmtPrinter {
 public:
  explicit CStmtPrinter(const CExprPrinter& expr) : expr_(expr) {}  // `expr` must outlive the printer
  virtual ~CStmtPrinter() = default;
  std::string print(const loops::Stmt& stmt, int depth);

 protected:
  // Lines printed just before a `for` (pragmas); none by default.
  virtual std::string loop_preamble(const loops::For& loop, const std::string& indent) const;
  virtual std::string print_for(const loops::For& loop, int depth);
  virtual std::string print_store(const loops::Store& store, const std::string& indent);
  virtual std::string print_declare(const loops::Declare& declare, const std::string& indent);
  virtual std::string print_assign(const loops::Assign& assign, const std::string& indent);
  // A decomposition's executor calling a part: `callee(args);` by default.
  virtual std::string print_call(const loops::Call& call, const std::string& indent);
  // A workspace's touched coordinates: std::sort, by default.
  virtual std::string print_sort(const loops::Sort& sort, const std::string& indent);
  // Workspaces: a block scope holding std::vectors, by default.
  virtual std::string print_allocate(const loops::Allocate& node, int depth);
  std::string workspace_declarations(const loops::Allocate& node, const std::string& indent) const;
  // A call's argument: a heap workspace's name as its array (`w.data()`, `w.get()`), else the expression.
  std::string call_argument(const loops::Expr& arg) const;
  const CExprPrinter& expr_;
  // The heap workspaces of enclosing Allocates (names are unique in a function): a std::vector, or
  // a std::unique_ptr where uninitialised, by the call that gives its array.
  std::map<std::string, std::string> heap_workspaces_;
};

// "int f(\n    a,\n    b)": a function's signature laid out as the kernels' declarations are.
std::string c_signature(const std::string& result, const std::string& name, const std::vector<std::string>& params);

// `const float* __restrict__ A_vals` for a definition (restrict), or without it for a declaration.
std::string c_param(const loops::Param& param, bool restrict_pointers);

}  // namespace spgen
