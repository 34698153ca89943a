#include "codegen/c_printer.h"

#include <cmath>

#include "passes/lower_to_loops.h"


namespace spgen {

using namespace loops;

std::string c_type_name(ValueType type) { return CExprPrinter().type_name(value_scalar_type(type)); }
std::string c_type_name(IndexType type) { return CExprPrinter().type_name(index_scalar_type(type)); }

std::string CExprPrinter::type_name(ScalarType type) const {
  switch (type) {
    case ScalarType::Bool: return "bool";
    case ScalarType::Int32: return "int32_t";
    case ScalarType::Int64: return "int64_t";
    case ScalarType::Float32: return "float";
    case ScalarType::Float64: return "double";
  }
  return "?";
}

std::string CExprPrinter::print_cast(ScalarType type, const std::string& operand, bool operand_is_primary) const {
  return "(" + type_name(type) + ")" + (operand_is_primary ? operand : "(" + operand + ")");
}

std::string CExprPrinter::print_min_max(BinOp op, const std::string& a, const std::string& b, ScalarType type) const {
  return std::string(op == BinOp::Min ? "std::min<" : "std::max<") + type_name(type) + ">(" + a + ", " + b + ")";
}

const char* c_math_function(MathOp op) { return op == MathOp::Abs ? "fabs" : math_op_name(op); }

std::string CExprPrinter::print_math(MathOp op, const std::string& a, ScalarType type) const {
  // exp, the costly one in a softmax, as templates/cpu_exp.cpp.in's straight-line code.
  if (op == MathOp::Exp) return std::string(type == ScalarType::Float32 ? "spgen_exp_f32(" : "spgen_exp_f64(") + a + ")";
  return std::string("std::") + c_math_function(op) + "(" + a + ")";
}

// Literals keep the spec's spelling, made a floating literal of the kernel's value type, so a
// float32 kernel never computes in double by accident.
std::string CExprPrinter::print_float(const FloatImm& node) const {
  if (std::isinf(node.value)) return node.value < 0 ? "-INFINITY" : "INFINITY";  // (<cmath>: uses_math)
  std::string text = ExprPrinter::print_float(node);
  bool has_point = text.find_first_of(".eE") != std::string::npos;
  if (!has_point) text += ".0";
  if (node.type == ScalarType::Float32) text += "f";
  return text;
}

std::string CExprPrinter::vector_suffix(ScalarType type, int64_t lanes) {
  const std::string element = type == ScalarType::Float64 ? "f64" : "f32";
  return lanes > 0 ? "v" + std::to_string(lanes) + element : element;
}
std::string CExprPrinter::vector_type_name(ScalarType type, int64_t lanes) {
  return lanes > 0 ? "spgen_" + vector_suffix(type, lanes) : "spgen_v" + vector_suffix(type);
}

std::string CExprPrinter::print_vector_load(const Load& node, const std::string& index) const {
  if (!node.gather_lane.empty())  // lane by lane (templates/cpu_vector_helpers.cpp.in)
    return "spgen_gather_" + vector_suffix(node.type, node.lanes) + "([&](int64_t " + node.gather_lane + ") { return " + node.buffer +
           "[" + index + "]; })";
  return "spgen_load_" + vector_suffix(node.type, node.lanes) + "(&" + node.buffer + "[" + index + "])";
}

// A masked tail (templates/cpu_masked_sum.cpp.in), its value computed per lane in a lambda; a
// factor of consecutive elements (MaskedSum::row) is passed as a pointer and loaded as vectors.
std::string CExprPrinter::print_masked_sum(const MaskedSum& node) const {
  std::string row;
  if (node.row) {
    const auto& load = static_cast<const Load&>(*node.row);
    row = "&" + load.buffer + "[" + print(load.index, 0) + "], ";
  }
  return std::string(node.row ? "spgen_masked_dot_" : "spgen_masked_sum_") + vector_suffix(node.type) + "<" +
         std::to_string(node.max) + ">(" + print(node.count, 0) + ", " + row + "[&](int64_t " + node.lane + ") { return " +
         print(node.value, 0) + "; })";
}

std::string CExprPrinter::print_lane_sum(const LaneSum& node) const {
  return "spgen_sum_lanes_" + vector_suffix(node.type) + "(" + node.buffer + ", " + std::to_string(node.lanes) + ")";
}

std::string c_signature(const std::string& result, const std::string& name, const std::vector<std::string>& params) {
  std::string out = result + " " + name + "(";
  for (size_t i = 0; i < params.size(); ++i) out += (i ? ",\n    " : "\n    ") + params[i];
  return out + ")";
}

std::string c_param(const Param& param, bool restrict_pointers) {
  CExprPrinter printer;
  std::string type = printer.type_name(param.type);
  if (!param.is_array) return type + " " + param.name;
  return (param.is_const ? "const " : "") + type + "*" + (restrict_pointers ? " __restrict__ " : " ") + param.name;
}

std::string CStmtPrinter::loop_preamble(const For&, const std::string&) const { return ""; }

std::string CStmtPrinter::workspace_declarations(const Allocate& node, const std::string& indent) const {
  std::string out;
  for (const Workspace& w : node.buffers)
    if (w.vector)  // zero-initialised registers
      out += indent + CExprPrinter::vector_type_name(w.type, w.lanes) + " " + w.name + "[" + expr_.print(w.size) + "] = {};\n";
    else if (w.local)  // zero-initialised
      out += indent + expr_.type_name(w.type) + " " + w.name + "[" + expr_.print(w.size) + "] = {};\n";
    else if (!w.init)  // uninitialised: what reads it writes it first (a kernel's temporary)
      out += indent + "std::unique_ptr<" + expr_.type_name(w.type) + "[]> " + w.name + "(new " + expr_.type_name(w.type) + "[" +
             expr_.print(w.size) + "]);\n";
    else
      out += indent + "std::vector<" + expr_.type_name(w.type) + "> " + w.name + "(" + expr_.print(w.size) + ", " +
             expr_.print(w.init) + ");\n";
  return out;
}

std::string CStmtPrinter::print_allocate(const Allocate& node, int depth) {
  for (const Workspace& w : node.buffers)
    if (!w.vector && !w.local && !w.shared && !w.growable) heap_workspaces_[w.name] = w.init ? ".data()" : ".get()";
  std::string pad(2 * depth, ' ');
  return pad + "{\n" + workspace_declarations(node, pad + "  ") + print(node.body, depth + 1) + pad + "}\n";
}

std::string CStmtPrinter::print_for(const For& loop, int depth) {
  std::string pad(2 * depth, ' ');
  std::string out = loop_preamble(loop, pad);
  out += pad + "for (int64_t " + loop.var + " = " + expr_.print(loop.begin) + "; " + loop.var + " < " +
         expr_.print_loop_end(loop.end) + "; " + loop.var + "++) {\n";
  out += print(loop.body, depth + 1);
  out += pad + "}\n";
  return out;
}

std::string CStmtPrinter::print_store(const Store& store, const std::string& indent) {
  if (store.vector) {
    std::string at = "&" + store.buffer + "[" + expr_.print(store.index) + "]";
    std::string suffix = CExprPrinter::vector_suffix(store.value->type, store.lanes);
    std::string value = store.accumulate ? "spgen_load_" + suffix + "(" + at + ") + " + expr_.print(store.value)
                                         : expr_.print(store.value);
    return indent + "spgen_store_" + suffix + "(" + at + ", " + value + ");\n";
  }
  return indent + store.buffer + "[" + expr_.print(store.index) + "]" + (store.accumulate ? " += " : " = ") +
         expr_.print(store.value) + ";\n";
}

// A heap workspace (a std::vector) is passed as its array.
std::string CStmtPrinter::call_argument(const Expr& arg) const {
  const auto* name = arg->kind == ExprKind::Var ? static_cast<const Var*>(arg.get()) : nullptr;
  auto heap = name ? heap_workspaces_.find(name->name) : heap_workspaces_.end();
  return heap != heap_workspaces_.end() ? name->name + heap->second : expr_.print(arg);
}

std::string CStmtPrinter::print_call(const Call& call, const std::string& indent) {
  std::string out = indent + call.callee + "(";
  for (size_t a = 0; a < call.args.size(); ++a) out += (a ? ",\n" : "\n") + indent + "    " + call_argument(call.args[a]);
  return out + ");\n";
}

std::string CStmtPrinter::print_sort(const Sort& sort, const std::string& indent) {
  auto at = [&](const Expr& offset) {
    return sort.buffer + ".begin()" + (is_const_int(offset, 0) ? "" : " + " + expr_.print(offset));
  };
  return indent + "std::sort(" + at(sort.begin) + ", " + at(sort.end) + ");\n";
}

std::string CStmtPrinter::print_declare(const Declare& node, const std::string& indent) {
  return indent + (node.is_mutable ? "" : "const ") + expr_.type_name(node.type) + " " + node.name + " = " +
         expr_.print(node.init) + ";\n";
}

std::string CStmtPrinter::print_assign(const Assign& node, const std::string& indent) {
  if (node.accumulate && node.combine != BinOp::Add) return indent + node.name + " = " + expr_.print(node.combined()) + ";\n";
  return indent + node.name + (node.accumulate ? " += " : " = ") + expr_.print(node.value) + ";\n";
}

std::string CStmtPrinter::print(const Stmt& stmt, int depth) {
  std::string pad(2 * depth, ' ');
  switch (stmt->kind) {
    case StmtKind::Block: {
      std::string out;
      for (const Stmt& s : static_cast<const Block&>(*stmt).stmts) out += print(s, depth);
      return out;
    }
    case StmtKind::For: return print_for(static_cast<const For&>(*stmt), depth);
    case StmtKind::While: {
      const auto& node = static_cast<const While&>(*stmt);
      return pad + "while (" + expr_.print(node.cond) + ") {\n" + print(node.body, depth + 1) + pad + "}\n";
    }
    case StmtKind::If: {
      const auto& node = static_cast<const If&>(*stmt);
      std::string out = pad + "if (" + expr_.print(node.cond) + ") {\n" + print(node.then_case, depth + 1);
      const If* branch = &node;
      // An else holding only another if continues the chain: `} else if (...) {`.
      while (branch->else_case && branch->else_case->kind == StmtKind::If) {
        branch = static_cast<const If*>(branch->else_case.get());
        out += pad + "} else if (" + expr_.print(branch->cond) + ") {\n" + print(branch->then_case, depth + 1);
      }
      if (branch->else_case) out += pad + "} else {\n" + print(branch->else_case, depth + 1);
      return out + pad + "}\n";
    }
    case StmtKind::Declare: return print_declare(static_cast<const Declare&>(*stmt), pad);
    case StmtKind::Assign: return print_assign(static_cast<const Assign&>(*stmt), pad);
    case StmtKind::Store: return print_store(static_cast<const Store&>(*stmt), pad);
    case StmtKind::Comment: return pad + "// " + static_cast<const Comment&>(*stmt).text + "\n";
    case StmtKind::Allocate: return print_allocate(static_cast<const Allocate&>(*stmt), depth);
    case StmtKind::Sort: return print_sort(static_cast<const Sort&>(*stmt), pad);
    case StmtKind::Barrier: return pad + "__syncthreads();\n";  // only the cuda target makes barriers
    case StmtKind::Prefetch: {  // only the cpu target prefetches
      const auto& node = static_cast<const Prefetch&>(*stmt);
      return pad + "__builtin_prefetch(&" + node.buffer + "[" + expr_.print(node.index) + "]);\n";
    }
    case StmtKind::Call: return print_call(static_cast<const Call&>(*stmt), pad);
    case StmtKind::LaneSums: {  // only the cpu target batches lane sums (passes/batch_entries)
      const auto& node = static_cast<const LaneSums&>(*stmt);
      std::string args;
      for (const std::string& b : node.buffers) args += b + ", ";
      args += std::to_string(node.lanes);
      for (const std::string& t : node.targets) args += ", &" + t;
      return pad + "spgen_sum_lanes_x" + std::to_string(node.buffers.size()) + "_" + CExprPrinter::vector_suffix(node.type) + "(" + args + ");\n";
    }
  }
  return "";
}

}  // namespace spgen
