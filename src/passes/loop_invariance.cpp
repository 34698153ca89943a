#include "passes/loop_invariance.h"

#include <utility>
#include <vector>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

LoopEffects effects_of(const For& loop) {
  struct Collect : IRVisitor {
    LoopEffects effects;
    void visit_for(const For& node) override {
      effects.names.insert({node.var, node.label});
      IRVisitor::visit_for(node);
    }
    void visit_declare(const Declare& node) override {
      effects.names.insert(node.name);
      IRVisitor::visit_declare(node);
    }
    void visit_assign(const Assign& node) override {
      effects.names.insert(node.name);
      IRVisitor::visit_assign(node);
    }
    void visit_masked_sum(const MaskedSum& node) override {
      effects.names.insert(node.lane);
      IRVisitor::visit_masked_sum(node);
    }
    void visit_store(const Store& node) override {
      effects.written.insert(node.buffer);
      IRVisitor::visit_store(node);
    }
    void visit_allocate(const Allocate& node) override {
      for (const Workspace& w : node.buffers) effects.written.insert(w.name);
      IRVisitor::visit_allocate(node);
    }
    void visit_call(const Call& node) override {
      effects.calls = true;
      IRVisitor::visit_call(node);
    }
    void visit_sort(const Sort& node) override {
      effects.calls = true;
      IRVisitor::visit_sort(node);
    }
    void visit_lane_sums(const LaneSums& node) override {
      effects.calls = true;
      IRVisitor::visit_lane_sums(node);
    }
  } collect;
  collect.visit(std::make_shared<For>(loop));
  return collect.effects;
}

bool invariant_before(const Expr& expr, const LoopEffects& effects, bool guarded) {
  struct Reads : IRVisitor {
    std::vector<std::string> vars, arrays;
    bool opaque = false;
    void visit_var(const Var& node) override { vars.push_back(node.name); }
    void visit_load(const Load& node) override {
      arrays.push_back(node.buffer);
      if (node.vector || !node.gather_lane.empty()) opaque = true;
      IRVisitor::visit_load(node);
    }
    void visit_lane_sum(const LaneSum&) override { opaque = true; }
    void visit_masked_sum(const MaskedSum&) override { opaque = true; }
  } reads;
  reads.visit(expr);
  if (reads.opaque) return false;
  if (!reads.arrays.empty() && (guarded || effects.calls)) return false;
  for (const std::string& name : reads.vars)
    if (effects.names.count(name)) return false;
  for (const std::string& array : reads.arrays)
    if (effects.written.count(array)) return false;
  return true;
}

std::string array_stem(const std::string& array) {
  const std::string suffix = "_vals";
  const bool values = array.size() > suffix.size() && array.compare(array.size() - suffix.size(), suffix.size(), suffix) == 0;
  return values ? array.substr(0, array.size() - suffix.size()) : array;
}

namespace {

// Rewrites one loop's body: the expressions `hoisting` picks become their variables.
class ReplaceHoisted : public IRMutator {
 public:
  ReplaceHoisted(const Hoisting& hoisting, LoopEffects effects, std::set<std::string>& used)
      : hoisting_(hoisting), effects_(std::move(effects)), used_(used) {}
  std::vector<std::pair<std::string, Expr>> held;  // name, value: declared before the loop

 protected:
  Expr mutate_binary(const Binary& node, const Expr& self) override {
    return replaced(self, [&] { return IRMutator::mutate_binary(node, self); });
  }
  Expr mutate_load(const Load& node, const Expr& self) override {
    return replaced(self, [&] { return IRMutator::mutate_load(node, self); });
  }
  // Under a test, only values the test cannot guard (no array read: invariant_before).
  Expr mutate_select(const Select& node, const Expr& self) override { return guarded(self, [&] { return IRMutator::mutate_select(node, self); }); }
  Stmt mutate_if(const If& node, const Stmt& self) override { return guarded(self, [&] { return IRMutator::mutate_if(node, self); }); }
  Stmt mutate_while(const While& node, const Stmt& self) override { return guarded(self, [&] { return IRMutator::mutate_while(node, self); }); }
  // A masked sum's value is evaluated for lanes past its count: left alone.
  Expr mutate_masked_sum(const MaskedSum&, const Expr& self) override { return self; }

 private:
  template <typename F>
  Expr replaced(const Expr& self, F&& rewrite_children) {
    const Expr value = hoisting_.value(self, effects_, guarded_ > 0);
    if (!value) return rewrite_children();
    return hoisting_.replacement(rewrite_children(), var(name_of(value), value->type));
  }
  template <typename T, typename F>
  T guarded(const T&, F&& inner) {
    ++guarded_;
    T result = inner();
    --guarded_;
    return result;
  }
  std::string name_of(const Expr& value) {
    for (const auto& [name, seen] : held)
      if (same_expr(seen, value)) return name;
    std::string name = first_unused_name(used_, hoisting_.name(value));
    used_.insert(name);
    held.emplace_back(name, value);
    return name;
  }
  const Hoisting& hoisting_;
  const LoopEffects effects_;
  std::set<std::string>& used_;
  int guarded_ = 0;
};

class HoistOutOfLoops : public IRMutator {
 public:
  HoistOutOfLoops(const Hoisting& hoisting, std::set<std::string>& used) : hoisting_(hoisting), used_(used) {}

 protected:
  Stmt mutate_for(const For& node, const Stmt& self) override {
    if (node.annotations.parallel || !node.annotations.bind.empty()) return IRMutator::mutate_for(node, self);
    ReplaceHoisted replace(hoisting_, effects_of(node), used_);
    const Stmt body = replace.mutate(node.body);
    if (replace.held.empty()) return IRMutator::mutate_for(node, self);
    const Stmt loop = std::make_shared<For>(node.label, node.var, node.begin, node.end, body, node.annotations);
    std::vector<Stmt> hoisted;
    for (const auto& [name, value] : replace.held) hoisted.push_back(std::make_shared<Declare>(name, value->type, value, false));
    hoisted.push_back(IRMutator::mutate_for(static_cast<const For&>(*loop), loop));
    return block(std::move(hoisted));
  }

 private:
  const Hoisting& hoisting_;
  std::set<std::string>& used_;
};

}  // namespace

void hoist_out_of_loops(LoweredFunc& func, const Hoisting& hoisting) {
  std::set<std::string> used = names_bound_in(func);
  func.body = HoistOutOfLoops(hoisting, used).mutate(func.body);
}

}  // namespace spgen
