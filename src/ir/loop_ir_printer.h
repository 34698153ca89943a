// Printing stage II IR. ExprPrinter handles precedence; the IR dump and the C-family backends
// differ only in how they spell types, casts and min/max, so they override those hooks.
#pragma once

#include <string>

#include "ir/loop_ir.h"

namespace spgen::loops {

class ExprPrinter {
 public:
  virtual ~ExprPrinter() = default;
  std::string print(const Expr& expr) const { return print(expr, 0); }
  // A loop's end, printed after `var < `: a select there is parenthesized.
  std::string print_loop_end(const Expr& expr) const;

 protected:
  virtual std::string type_name(ScalarType type) const { return scalar_type_name(type); }
  virtual std::string print_cast(ScalarType type, const std::string& operand, bool operand_is_primary) const;
  virtual std::string print_min_max(BinOp op, const std::string& a, const std::string& b, ScalarType type) const;
  virtual std::string print_float(const FloatImm& node) const;
  virtual std::string print_math(MathOp op, const std::string& a, ScalarType type) const;
  // A vector load of the elements from `index` on: `B_vals[pB1 +: lanes]` in the dump.
  virtual std::string print_vector_load(const Load& node, const std::string& index) const;
  // One element: `buffer[index]` by default.
  virtual std::string print_scalar_load(const Load& node, const std::string& index) const;
  // The sum of a lane array: `sum(acc_lanes[0:16])` in the dump.
  virtual std::string print_lane_sum(const LaneSum& node) const;
  virtual std::string print_masked_sum(const MaskedSum& node) const;
  virtual std::string print_thread_count() const { return "thread_count()"; }
  std::string print(const Expr& expr, int parent_precedence) const;
};

// `--emit=stage2`: a readable listing of the kernel after the stage II schedule.
std::string dump_stage2(const LoweredFunc& func);

}  // namespace spgen::loops
