#include "passes/specialize_sizes.h"

#include <algorithm>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

bool is_int_type(ScalarType type) { return type == ScalarType::Int32 || type == ScalarType::Int64; }

const IntImm* as_int(const Expr& expr) {
  return expr->kind == ExprKind::IntImm && is_int_type(expr->type) ? static_cast<const IntImm*>(expr.get()) : nullptr;
}

// Replaces the named variables by constants, folds integer arithmetic on constants, and drops
// loops that run no iteration. A declaration is never mutable and its name is unique in the
// function, so a constant it binds holds wherever the name is read.
class FoldSizes : public IRMutator {
 public:
  explicit FoldSizes(std::map<std::string, int64_t> constants) : constants_(std::move(constants)) {}

 protected:
  Expr mutate_var(const Var& node, const Expr& self) override {
    auto it = constants_.find(node.name);
    if (it == constants_.end()) return self;
    return std::make_shared<IntImm>(it->second, node.type);
  }

  Expr mutate_binary(const Binary& node, const Expr& self) override {
    Expr folded = IRMutator::mutate_binary(node, self);
    const Binary& b = static_cast<const Binary&>(*folded);
    const IntImm *x = as_int(b.a), *y = as_int(b.b);
    if (!x || !y || !is_int_type(b.type)) return folded;
    const int64_t u = x->value, v = y->value;
    switch (b.op) {
      case BinOp::Add: return std::make_shared<IntImm>(u + v, b.type);
      case BinOp::Sub: return std::make_shared<IntImm>(u - v, b.type);
      case BinOp::Mul: return std::make_shared<IntImm>(u * v, b.type);
      case BinOp::Div: return v == 0 ? folded : std::make_shared<IntImm>(u / v, b.type);  // C's truncation
      case BinOp::Mod: return v == 0 ? folded : std::make_shared<IntImm>(u % v, b.type);
      case BinOp::Min: return std::make_shared<IntImm>(std::min(u, v), b.type);
      case BinOp::Max: return std::make_shared<IntImm>(std::max(u, v), b.type);
      default: return folded;
    }
  }

  Expr mutate_cast(const Cast& node, const Expr& self) override {
    Expr folded = IRMutator::mutate_cast(node, self);
    const Cast* c = folded->kind == ExprKind::Cast ? static_cast<const Cast*>(folded.get()) : nullptr;
    if (c && as_int(c->a) && is_int_type(c->type)) return std::make_shared<IntImm>(as_int(c->a)->value, c->type);
    return folded;
  }

  Stmt mutate_declare(const Declare& node, const Stmt& self) override {
    Stmt folded = IRMutator::mutate_declare(node, self);
    const Declare& d = static_cast<const Declare&>(*folded);
    if (!d.is_mutable && is_int_type(d.type))
      if (const IntImm* value = as_int(d.init)) constants_[d.name] = value->value;
    return folded;
  }

  Stmt mutate_for(const For& node, const Stmt& self) override {
    Stmt folded = IRMutator::mutate_for(node, self);
    const For& loop = static_cast<const For&>(*folded);
    const IntImm *begin = as_int(loop.begin), *end = as_int(loop.end);
    if (begin && end && begin->value >= end->value) return block({});
    return folded;
  }

 private:
  std::map<std::string, int64_t> constants_;
};

}  // namespace

void specialize_sizes(LoweredFunc& func, const std::map<std::string, int64_t>& sizes) {
  std::map<std::string, int64_t> constants;
  func.fixed_sizes.clear();  // (specializing twice changes nothing)
  for (const Param& p : func.params) {
    if (p.kind != ParamKind::Dim) continue;
    auto it = sizes.find(p.index_var);
    if (it == sizes.end()) continue;
    constants[p.name] = it->second;
    func.fixed_sizes.push_back({p.name, it->second});
  }
  if (constants.empty()) return;
  func.body = FoldSizes(std::move(constants)).mutate(func.body);
}

}  // namespace spgen
