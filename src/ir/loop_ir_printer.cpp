#include "ir/loop_ir_printer.h"

#include <algorithm>
#include <cstdio>

namespace spgen::loops {

namespace {

int precedence(BinOp op) {
  switch (op) {
    case BinOp::Or: return 0;
    case BinOp::And: return 1;
    case BinOp::Eq:
    case BinOp::Ne: return 2;
    case BinOp::Lt:
    case BinOp::Le: return 3;
    case BinOp::Add:
    case BinOp::Sub: return 4;
    case BinOp::Mul:
    case BinOp::Div:
    case BinOp::Mod: return 5;
    case BinOp::Min:
    case BinOp::Max: return 7;  // printed as calls
  }
  return 0;
}

const char* symbol(BinOp op) {
  switch (op) {
    case BinOp::Add: return " + ";
    case BinOp::Sub: return " - ";
    case BinOp::Mul: return " * ";
    case BinOp::Div: return " / ";
    case BinOp::Mod: return " % ";
    case BinOp::Lt: return " < ";
    case BinOp::Le: return " <= ";
    case BinOp::Eq: return " == ";
    case BinOp::Ne: return " != ";
    case BinOp::And: return " && ";
    case BinOp::Or: return " || ";
    default: return "?";
  }
}

}  // namespace

std::string ExprPrinter::print_loop_end(const Expr& expr) const { return print(expr, precedence(BinOp::Lt) + 1); }

std::string ExprPrinter::print_cast(ScalarType type, const std::string& operand, bool) const {
  return type_name(type) + "(" + operand + ")";
}

std::string ExprPrinter::print_min_max(BinOp op, const std::string& a, const std::string& b, ScalarType) const {
  return std::string(op == BinOp::Min ? "min(" : "max(") + a + ", " + b + ")";
}

std::string ExprPrinter::print_math(MathOp op, const std::string& a, ScalarType) const {
  return std::string(math_op_name(op)) + "(" + a + ")";
}

std::string ExprPrinter::print_float(const FloatImm& node) const {
  if (!node.spelling.empty()) return node.spelling;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", node.value);
  return buffer;
}

std::string ExprPrinter::print_scalar_load(const Load& node, const std::string& index) const { return node.buffer + "[" + index + "]"; }

std::string ExprPrinter::print_vector_load(const Load& node, const std::string& index) const {
  if (!node.gather_lane.empty()) return "gather(" + node.buffer + "[" + index + "] for " + node.gather_lane + " in lanes)";
  return node.buffer + "[" + index + (node.lanes > 0 ? " +: " + std::to_string(node.lanes) + "]" : " +: lanes]");
}

std::string ExprPrinter::print_masked_sum(const MaskedSum& node) const {
  return "masked_sum(" + node.lane + " < " + print(node.count, 0) + " of " + std::to_string(node.max) + ": " +
         print(masked_sum_value(node), 0) + ")";
}

std::string ExprPrinter::print_lane_sum(const LaneSum& node) const {
  return "sum(" + node.buffer + "[0:" + std::to_string(node.lanes) + "])";
}

std::string ExprPrinter::print(const Expr& expr, int parent_precedence) const {
  switch (expr->kind) {
    case ExprKind::IntImm: {
      const IntImm& imm = static_cast<const IntImm&>(*expr);
      if (imm.type == ScalarType::Bool) return imm.value ? "true" : "false";
      return std::to_string(imm.value);
    }
    case ExprKind::FloatImm: return print_float(static_cast<const FloatImm&>(*expr));
    case ExprKind::Var: return static_cast<const Var&>(*expr).name;
    case ExprKind::Load: {
      const auto& node = static_cast<const Load&>(*expr);
      if (node.vector) return print_vector_load(node, print(node.index, 0));
      return print_scalar_load(node, print(node.index, 0));
    }
    case ExprKind::Neg: {
      std::string text = "-" + print(static_cast<const Neg&>(*expr).a, 6);
      return parent_precedence > 6 ? "(" + text + ")" : text;
    }
    case ExprKind::MathFn: {
      const auto& node = static_cast<const MathFn&>(*expr);
      return print_math(node.op, print(node.a, 0), node.type);
    }
    case ExprKind::Cast: {
      const Expr& operand = static_cast<const Cast&>(*expr).a;
      bool primary = operand->kind == ExprKind::Var || operand->kind == ExprKind::Load || operand->kind == ExprKind::IntImm;
      return print_cast(expr->type, print(operand, 0), primary);
    }
    case ExprKind::LaneSum: return print_lane_sum(static_cast<const LaneSum&>(*expr));
    case ExprKind::MaskedSum: return print_masked_sum(static_cast<const MaskedSum&>(*expr));
    case ExprKind::ThreadCount: return print_thread_count();
    case ExprKind::Select: {
      const auto& node = static_cast<const Select&>(*expr);
      std::string text = print(node.cond, 1) + " ? " + print(node.a, 1) + " : " + print(node.b, 1);
      return parent_precedence > 0 ? "(" + text + ")" : text;
    }
    case ExprKind::Binary: {
      const auto& node = static_cast<const Binary&>(*expr);
      if (node.op == BinOp::Min || node.op == BinOp::Max)
        return print_min_max(node.op, print(node.a, 0), print(node.b, 0), node.type);
      int p = precedence(node.op);
      // `a && b || c` is printed `(a && b) || c`, as compilers ask (-Wparentheses).
      int operand_floor = node.op == BinOp::Or ? precedence(BinOp::And) + 1 : p;
      // Left-associative: the right operand needs parentheses at equal precedence.
      std::string text = print(node.a, operand_floor) + symbol(node.op) + print(node.b, std::max(operand_floor, p + 1));
      return p < parent_precedence ? "(" + text + ")" : text;
    }
  }
  return "?";
}

namespace {

// A scalar a loop reduces into, in an annotation: ` +acc` for a sum, ` max acc` for a max.
std::string reduced_scalar(BinOp combine, const std::string& scalar) {
  return combine == BinOp::Add ? " +" + scalar : " " + std::string(combine_name(combine)) + " " + scalar;
}


class Stage2Dumper {
 public:
  std::string out;

  void stmt(const Stmt& s, int depth) {
    std::string pad(2 * depth, ' ');
    switch (s->kind) {
      case StmtKind::Block:
        for (const Stmt& inner : static_cast<const Block&>(*s).stmts) stmt(inner, depth);
        return;
      case StmtKind::For: {
        const auto& node = static_cast<const For&>(*s);
        out += pad + "for " + node.label;
        if (node.var != node.label) out += " at " + node.var;
        out += " in [" + printer.print(node.begin) + ", " + printer.print(node.end) + ")" + annotations(node.annotations) + ":\n";
        stmt(node.body, depth + 1);
        return;
      }
      case StmtKind::While: {
        const auto& node = static_cast<const While&>(*s);
        out += pad + "while " + node.label + " (" + printer.print(node.cond) + "):\n";
        stmt(node.body, depth + 1);
        return;
      }
      case StmtKind::If: {
        const auto& node = static_cast<const If&>(*s);
        out += pad + "if " + printer.print(node.cond) + ":\n";
        stmt(node.then_case, depth + 1);
        if (node.else_case) {
          out += pad + "else:\n";
          stmt(node.else_case, depth + 1);
        }
        return;
      }
      case StmtKind::Declare: {
        const auto& node = static_cast<const Declare&>(*s);
        out += pad + (node.is_mutable ? "var " : "let ") + node.name + ": " + scalar_type_name(node.type) + " = " +
               printer.print(node.init) + "\n";
        return;
      }
      case StmtKind::Assign: {
        const auto& node = static_cast<const Assign&>(*s);
        if (node.accumulate && node.combine != BinOp::Add)  // (a max reduction: acc = max(acc, value))
          out += pad + node.name + " = " + printer.print(node.combined()) + "\n";
        else
          out += pad + (node.atomic ? "atomic " : "") + node.name + (node.accumulate ? " += " : " = ") + printer.print(node.value) + "\n";
        return;
      }
      case StmtKind::Store: {
        const auto& node = static_cast<const Store&>(*s);
        out += pad + (node.atomic ? "atomic " : "") + node.buffer + "[" + printer.print(node.index) +
               (node.vector ? (node.lanes > 0 ? " +: " + std::to_string(node.lanes) + "]" : " +: lanes]") : "]") +
               (node.accumulate ? " += " : " = ") +
               printer.print(node.value) + "\n";
        return;
      }
      case StmtKind::Comment:
        out += pad + "# " + static_cast<const Comment&>(*s).text + "\n";
        return;
      case StmtKind::Allocate: {
        const auto& node = static_cast<const Allocate&>(*s);
        out += pad + (node.buffers.empty() ? "scope" : "allocate");
        for (size_t b = 0; b < node.buffers.size(); ++b) {
          const Workspace& w = node.buffers[b];
          out += std::string(b ? ", " : " ") + (w.local ? "local " : "") + (w.shared ? "shared " : "") +
                 (w.growable ? "growable " : "") + w.name + ": " + scalar_type_name(w.type) +
                 (w.vector ? (w.lanes > 0 ? " vectors of " + std::to_string(w.lanes) : " vectors") : "") +
                 "[" + printer.print(w.size) + "]" + (w.init ? " = " + printer.print(w.init) : "");
        }
        out += ":\n";
        stmt(node.body, depth + 1);
        return;
      }
      case StmtKind::Sort: {
        const auto& node = static_cast<const Sort&>(*s);
        out += pad + "sort " + node.buffer + "[" + printer.print(node.begin) + ", " + printer.print(node.end) + ")" +
               (node.values.empty() ? "" : " with " + node.values) + "\n";
        return;
      }
      case StmtKind::Barrier:
        out += pad + "barrier\n";
        return;
      case StmtKind::Prefetch: {
        const auto& node = static_cast<const Prefetch&>(*s);
        out += pad + "prefetch " + node.buffer + "[" + printer.print(node.index) + "]\n";
        return;
      }
      case StmtKind::LaneSums: {
        const auto& node = static_cast<const LaneSums&>(*s);
        std::string targets, buffers;
        for (size_t k = 0; k < node.targets.size(); ++k) {
          targets += (k ? ", " : "") + node.targets[k];
          buffers += (k ? ", " : "") + node.buffers[k] + "[0:" + std::to_string(node.lanes) + "]";
        }
        out += pad + targets + " += sums(" + buffers + ")\n";
        return;
      }
      case StmtKind::Call: {
        const auto& node = static_cast<const Call&>(*s);
        out += pad + "call " + node.callee + "(";
        for (size_t a = 0; a < node.args.size(); ++a) out += (a ? ", " : "") + printer.print(node.args[a]);
        out += ")\n";
        return;
      }
    }
  }

 private:
  static std::string annotations(const LoopAnnotations& a) {
    std::string text;
    if (a.parallel) {
      const char* kinds[] = {"static", "dynamic", "guided"};
      text += " parallel(" + (a.schedule == ParallelSchedule::EvenRows ? "static if the rows of " + a.rows_pos + " are even, else dynamic"
                                                                        : std::string(kinds[static_cast<int>(a.schedule)]));
      if (a.chunk) text += ", " + std::to_string(a.chunk);
      text += ")";
      if (!a.vectorized)
        for (const std::string& r : a.simd_reductions) text += " +" + r;
      for (const std::string& r : a.private_scalars) text += " private " + r;
    }
    if (a.vectorized) {
      text += " vectorized";
      for (const std::string& r : a.simd_reductions) text += reduced_scalar(a.simd_combine, r);
    }
    if (a.unroll) text += " unroll(" + std::to_string(a.unroll) + ")";
    if (!a.sequential_reason.empty()) text += " sequential";
    if (a.in_thread_order) text += " in thread order";
    if (a.own_kernel && a.bind.empty()) text += " own kernel";
    if (!a.bind.empty()) {
      text += " bind(" + a.bind;
      if (a.bind_threads) text += ", " + std::to_string(a.bind_threads) + " threads";
      if (!a.bind_reduction.empty()) text += ", " + a.bind_reduction;
      for (const std::string& s : a.bind_scalars) text += reduced_scalar(a.bind_combine, s);
      text += ")";
    }
    return text;
  }

  ExprPrinter printer;
};

}  // namespace

std::string dump_stage2(const LoweredFunc& func) {
  Stage2Dumper dumper;
  dumper.out = "# stage II: " + func.name + "\nkernel " + func.name + "(\n";
  for (const Param& p : func.params)
    dumper.out += "    " + p.name + ": " + (p.is_array && !p.is_const ? "mut " : "") + scalar_type_name(p.type) +
                  (p.is_array ? "[]" : "") + "\n";
  dumper.out += "):\n";
  for (const auto& [param, size] : func.fixed_sizes)
    dumper.out += "  # specialized for " + param + " = " + std::to_string(size) + " (checked on entry)\n";
  dumper.stmt(func.body, 1);
  return dumper.out;
}

}  // namespace spgen::loops
