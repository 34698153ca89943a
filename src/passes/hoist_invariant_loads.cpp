#include "passes/hoist_invariant_loads.h"

#include "ir/loop_ir_visitor.h"
#include "passes/loop_invariance.h"

namespace spgen {

using namespace loops;

void hoist_invariant_loads(LoweredFunc& func) {
  struct Stores : IRVisitor {
    std::set<std::string> arrays;
    void visit_store(const Store& node) override {
      arrays.insert(node.buffer);
      IRVisitor::visit_store(node);
    }
  } stores;
  stores.visit(func.body);
  if (stores.arrays.empty()) return;
  Hoisting hoisting;
  hoisting.value = [&](const Expr& expr, const LoopEffects& effects, bool guarded) -> Expr {
    if (expr->kind != ExprKind::Load) return nullptr;
    const auto& load = static_cast<const Load&>(*expr);
    const bool value = load.type == ScalarType::Float32 || load.type == ScalarType::Float64;
    if (!value || load.vector || !load.gather_lane.empty() || !stores.arrays.count(load.buffer)) return nullptr;
    return invariant_before(expr, effects, guarded) ? expr : nullptr;
  };
  // m_vals[i] -> m_i
  hoisting.name = [](const Expr& value) {
    const auto& load = static_cast<const Load&>(*value);
    return array_stem(load.buffer) + (load.index->kind == ExprKind::Var ? "_" + static_cast<const Var&>(*load.index).name : "_value");
  };
  hoisting.replacement = [](const Expr&, const Expr& held) { return held; };
  hoist_out_of_loops(func, hoisting);
}

}  // namespace spgen
