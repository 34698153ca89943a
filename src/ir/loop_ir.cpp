#include "ir/loop_ir.h"

namespace spgen::loops {

const char* scalar_type_name(ScalarType type) {
  switch (type) {
    case ScalarType::Bool: return "bool";
    case ScalarType::Int32: return "int32";
    case ScalarType::Int64: return "int64";
    case ScalarType::Float32: return "float32";
    case ScalarType::Float64: return "float64";
  }
  return "?";
}

Neg::Neg(Expr x) : ExprNode(ExprKind::Neg, x->type), a(std::move(x)) {}

Expr Assign::combined() const { return std::make_shared<Binary>(combine, std::make_shared<Var>(name, value->type), value, value->type); }

const char* combine_name(BinOp combine) { return combine == BinOp::Max ? "max" : combine == BinOp::Min ? "min" : "+"; }

const char* math_op_name(MathOp op) {
  switch (op) {
    case MathOp::Exp: return "exp";
    case MathOp::Log: return "log";
    case MathOp::Sqrt: return "sqrt";
    case MathOp::Abs: return "abs";
  }
  return "?";
}

Expr int64(int64_t value) { return std::make_shared<IntImm>(value, ScalarType::Int64); }
Expr var(const std::string& name, ScalarType type) { return std::make_shared<Var>(name, type); }
Expr vector_lanes(ScalarType type) {
  return var(type == ScalarType::Float64 ? "SPGEN_LANES_F64" : "SPGEN_LANES_F32", ScalarType::Int64);
}

Expr load(const std::string& buffer, Expr index, ScalarType type) {
  return std::make_shared<Load>(buffer, std::move(index), type);
}

static bool is_comparison(BinOp op) {
  return op == BinOp::Lt || op == BinOp::Le || op == BinOp::Eq || op == BinOp::Ne || op == BinOp::And ||
         op == BinOp::Or;
}

Expr binary(BinOp op, Expr a, Expr b) {
  ScalarType type = is_comparison(op) ? ScalarType::Bool : a->type;
  return std::make_shared<Binary>(op, std::move(a), std::move(b), type);
}

// Folding the trivial cases keeps the generated code readable (`p * 1 + 0` never appears).
Expr add(Expr a, Expr b) {
  if (is_const_int(b, 0)) return a;
  if (is_const_int(a, 0)) return b;
  return binary(BinOp::Add, std::move(a), std::move(b));
}
Expr sub(Expr a, Expr b) {
  if (is_const_int(b, 0)) return a;
  return binary(BinOp::Sub, std::move(a), std::move(b));
}
Expr mul(Expr a, Expr b) {
  if (is_const_int(b, 1)) return a;
  if (is_const_int(a, 1)) return b;
  if (is_const_int(a, 0) || is_const_int(b, 0)) return int64(0);
  return binary(BinOp::Mul, std::move(a), std::move(b));
}
Expr min(Expr a, Expr b) { return binary(BinOp::Min, std::move(a), std::move(b)); }
Expr cast(ScalarType type, Expr a) {
  if (a->type == type) return a;
  if (a->kind == ExprKind::IntImm && (type == ScalarType::Int64 || type == ScalarType::Int32))
    return std::make_shared<IntImm>(static_cast<const IntImm&>(*a).value, type);
  return std::make_shared<Cast>(type, std::move(a));
}

Expr select(Expr cond, Expr a, Expr b) { return std::make_shared<Select>(std::move(cond), std::move(a), std::move(b)); }

Expr logical_and(Expr a, Expr b) {
  if (!a) return b;
  if (!b) return a;
  return binary(BinOp::And, std::move(a), std::move(b));
}

Expr logical_or(Expr a, Expr b) {
  if (!a) return b;
  if (!b) return a;
  return binary(BinOp::Or, std::move(a), std::move(b));
}

Stmt block(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s) continue;
    if (s->kind == StmtKind::Block) {
      for (const Stmt& inner : static_cast<const Block&>(*s).stmts) flat.push_back(inner);
    } else {
      flat.push_back(std::move(s));
    }
  }
  return std::make_shared<Block>(std::move(flat));
}

const For* as_for(const Stmt& stmt) {
  return stmt && stmt->kind == StmtKind::For ? static_cast<const For*>(stmt.get()) : nullptr;
}

std::vector<Stmt> statements_of(const Stmt& stmt) {
  return stmt->kind == StmtKind::Block ? static_cast<const Block&>(*stmt).stmts : std::vector<Stmt>{stmt};
}

bool LoweredFunc::is_fixed_size(const std::string& param) const {
  for (const auto& fixed : fixed_sizes)
    if (fixed.first == param) return true;
  return false;
}

bool is_const_int(const Expr& expr, int64_t value) {
  return expr->kind == ExprKind::IntImm && static_cast<const IntImm&>(*expr).value == value;
}

Expr masked_sum_value(const MaskedSum& node) {
  if (!node.row) return node.value;
  const auto& row = static_cast<const Load&>(*node.row);
  Expr at_lane = std::make_shared<Load>(row.buffer, std::make_shared<Binary>(BinOp::Add, row.index, var(node.lane), ScalarType::Int64),
                                        row.type);
  return std::make_shared<Binary>(BinOp::Mul, at_lane, node.value, node.type);
}

bool same_expr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind || a->type != b->type) return false;
  switch (a->kind) {
    case ExprKind::IntImm: return static_cast<const IntImm&>(*a).value == static_cast<const IntImm&>(*b).value;
    case ExprKind::FloatImm: return static_cast<const FloatImm&>(*a).value == static_cast<const FloatImm&>(*b).value;
    case ExprKind::Var: return static_cast<const Var&>(*a).name == static_cast<const Var&>(*b).name;
    case ExprKind::Load: {
      auto &x = static_cast<const Load&>(*a), &y = static_cast<const Load&>(*b);
      return x.buffer == y.buffer && x.vector == y.vector && x.gather_lane == y.gather_lane && x.lanes == y.lanes &&
             same_expr(x.index, y.index);
    }
    case ExprKind::Binary: {
      auto &x = static_cast<const Binary&>(*a), &y = static_cast<const Binary&>(*b);
      return x.op == y.op && same_expr(x.a, y.a) && same_expr(x.b, y.b);
    }
    case ExprKind::Neg: return same_expr(static_cast<const Neg&>(*a).a, static_cast<const Neg&>(*b).a);
    case ExprKind::MathFn: {
      auto &x = static_cast<const MathFn&>(*a), &y = static_cast<const MathFn&>(*b);
      return x.op == y.op && same_expr(x.a, y.a);
    }
    case ExprKind::Cast: return same_expr(static_cast<const Cast&>(*a).a, static_cast<const Cast&>(*b).a);
    case ExprKind::Select: {
      auto &x = static_cast<const Select&>(*a), &y = static_cast<const Select&>(*b);
      return same_expr(x.cond, y.cond) && same_expr(x.a, y.a) && same_expr(x.b, y.b);
    }
    case ExprKind::LaneSum: {
      auto &x = static_cast<const LaneSum&>(*a), &y = static_cast<const LaneSum&>(*b);
      return x.buffer == y.buffer && x.lanes == y.lanes;
    }
    case ExprKind::ThreadCount: return true;
    case ExprKind::MaskedSum: {
      auto &x = static_cast<const MaskedSum&>(*a), &y = static_cast<const MaskedSum&>(*b);
      return x.lane == y.lane && x.max == y.max && same_expr(x.count, y.count) && same_expr(x.value, y.value) &&
             (x.row ? y.row && same_expr(x.row, y.row) : !y.row);
    }
  }
  return false;
}

}  // namespace spgen::loops
