#include "passes/select_in_lanes.h"

#include <set>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

class SelectInLanes : public IRMutator {
 protected:
  Stmt mutate_allocate(const Allocate& node, const Stmt& self) override {
    std::set<std::string> outside = local_;
    for (const Workspace& w : node.buffers)
      if (w.local) local_.insert(w.name);
    Stmt out = IRMutator::mutate_allocate(node, self);
    local_ = std::move(outside);
    return out;
  }
  Stmt mutate_for(const For& node, const Stmt& self) override {
    const bool outside = in_lanes_;
    in_lanes_ = node.annotations.vectorized;
    Stmt out = IRMutator::mutate_for(node, self);
    in_lanes_ = outside;
    return out;
  }
  Stmt mutate_if(const If& node, const Stmt& self) override {
    Stmt out = IRMutator::mutate_if(node, self);
    if (!in_lanes_ || node.else_case) return out;
    const auto& guarded = static_cast<const If&>(*out);
    std::vector<Stmt> then = statements_of(guarded.then_case);
    if (then.size() != 1 || then[0]->kind != StmtKind::Store) return out;
    const auto& add = static_cast<const Store&>(*then[0]);
    const ScalarType type = add.value->type;
    if (!add.accumulate || add.atomic || add.vector || !local_.count(add.buffer) ||
        (type != ScalarType::Float32 && type != ScalarType::Float64))
      return out;
    Expr zero = std::make_shared<FloatImm>(0.0, "0", type);
    return std::make_shared<Store>(add.buffer, add.index, select(guarded.cond, add.value, zero), true);
  }

 private:
  std::set<std::string> local_;
  bool in_lanes_ = false;
};

}  // namespace

void select_in_lanes(LoweredFunc& func) { func.body = SelectInLanes().mutate(func.body); }

}  // namespace spgen
