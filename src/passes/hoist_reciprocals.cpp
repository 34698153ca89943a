#include "passes/hoist_reciprocals.h"

#include "ir/loop_ir_visitor.h"
#include "passes/loop_invariance.h"

namespace spgen {

using namespace loops;

namespace {

bool is_float(ScalarType type) { return type == ScalarType::Float32 || type == ScalarType::Float64; }

// A constant's reciprocal is the compiler's to fold (exactly, where it is a power of two).
bool is_constant(const Expr& expr) {
  struct Reads : IRVisitor {
    bool found = false;
    void visit_var(const Var&) override { found = true; }
    void visit_load(const Load&) override { found = true; }
    void visit_lane_sum(const LaneSum&) override { found = true; }
    void visit_masked_sum(const MaskedSum&) override { found = true; }
  } reads;
  reads.visit(expr);
  return !reads.found;
}

// The divisor of a floating-point division, or null.
const Expr* divisor_of(const Expr& expr) {
  if (expr->kind != ExprKind::Binary) return nullptr;
  const auto& node = static_cast<const Binary&>(*expr);
  return node.op == BinOp::Div && is_float(node.type) && is_float(node.b->type) ? &node.b : nullptr;
}

// The reciprocal's name: after the array or variable a divisor reads alone (`l_recip` for l_vals[i]).
std::string wanted_name(const Expr& divisor) {
  if (divisor->kind == ExprKind::Load) return array_stem(static_cast<const Load&>(*divisor).buffer) + "_recip";
  if (divisor->kind == ExprKind::Var) return static_cast<const Var&>(*divisor).name + "_recip";
  return "recip";
}

}  // namespace

void hoist_reciprocals(LoweredFunc& func) {
  Hoisting hoisting;
  hoisting.value = [](const Expr& expr, const LoopEffects& effects, bool guarded) -> Expr {
    const Expr* divisor = divisor_of(expr);
    if (!divisor || is_constant(*divisor) || !invariant_before(*divisor, effects, guarded)) return nullptr;
    return binary(BinOp::Div, std::make_shared<FloatImm>(1.0, "1", (*divisor)->type), *divisor);
  };
  hoisting.name = [](const Expr& reciprocal) { return wanted_name(static_cast<const Binary&>(*reciprocal).b); };
  hoisting.replacement = [](const Expr& division, const Expr& reciprocal) {
    return binary(BinOp::Mul, static_cast<const Binary&>(*division).a, reciprocal);
  };
  hoist_out_of_loops(func, hoisting);
}

}  // namespace spgen
