#include "passes/hoist_reciprocals.h"

#include <utility>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

bool is_float(ScalarType type) { return type == ScalarType::Float32 || type == ScalarType::Float64; }

// What a loop's body binds or changes, against which a divisor is tested.
struct LoopEffects {
  std::set<std::string> names;    // loop variables, declarations, scalars it assigns, masked sums' lanes
  std::set<std::string> written;  // arrays it stores into or allocates
  bool calls = false;             // a call or sort, which may write any array
};

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

// Whether `divisor` has the same value in every iteration of the loop with `effects`, and may be
// evaluated before it (`guarded`: it sits under a test inside the loop).
bool invariant(const Expr& divisor, const LoopEffects& effects, bool guarded) {
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
  reads.visit(divisor);
  // A constant's reciprocal is the compiler's to fold (exactly, where it is a power of two).
  if (reads.opaque || (reads.vars.empty() && reads.arrays.empty())) return false;
  if (!reads.arrays.empty() && (guarded || effects.calls)) return false;
  for (const std::string& name : reads.vars)
    if (effects.names.count(name)) return false;
  for (const std::string& array : reads.arrays)
    if (effects.written.count(array)) return false;
  return true;
}

// The reciprocal's name: after the array or variable a divisor reads alone (`l_recip` for l_vals[i]).
std::string wanted_name(const Expr& divisor) {
  if (divisor->kind == ExprKind::Load) {
    std::string array = static_cast<const Load&>(*divisor).buffer;
    if (array.size() > 5 && array.compare(array.size() - 5, 5, "_vals") == 0) array.resize(array.size() - 5);
    return array + "_recip";
  }
  if (divisor->kind == ExprKind::Var) return static_cast<const Var&>(*divisor).name + "_recip";
  return "recip";
}

// Replaces, in one loop's body, the divisions by divisors invariant in that loop, naming each
// distinct divisor's reciprocal once.
class ReplaceDivisions : public IRMutator {
 public:
  ReplaceDivisions(LoopEffects effects, std::set<std::string>& used) : effects_(std::move(effects)), used_(used) {}
  std::vector<std::pair<std::string, Expr>> reciprocals;  // name, divisor

 protected:
  Expr mutate_binary(const Binary& node, const Expr& self) override {
    if (node.op == BinOp::Div && is_float(node.type) && is_float(node.b->type) && invariant(node.b, effects_, guarded_ > 0)) {
      const Expr numerator = mutate(node.a);
      return binary(BinOp::Mul, numerator, var(reciprocal_of(node.b), node.b->type));
    }
    return IRMutator::mutate_binary(node, self);
  }
  // Under a test, only divisors that read no array.
  Expr mutate_select(const Select& node, const Expr& self) override { return guarded(self, [&] { return IRMutator::mutate_select(node, self); }); }
  Stmt mutate_if(const If& node, const Stmt& self) override { return guarded(self, [&] { return IRMutator::mutate_if(node, self); }); }
  Stmt mutate_while(const While& node, const Stmt& self) override { return guarded(self, [&] { return IRMutator::mutate_while(node, self); }); }
  // A masked sum's value is evaluated for lanes past its count: left alone.
  Expr mutate_masked_sum(const MaskedSum&, const Expr& self) override { return self; }

 private:
  template <typename T, typename F>
  T guarded(const T&, F&& inner) {
    ++guarded_;
    T result = inner();
    --guarded_;
    return result;
  }
  std::string reciprocal_of(const Expr& divisor) {
    for (const auto& [name, seen] : reciprocals)
      if (same_expr(seen, divisor)) return name;
    std::string name = first_unused_name(used_, wanted_name(divisor));
    used_.insert(name);
    reciprocals.emplace_back(name, divisor);
    return name;
  }
  const LoopEffects effects_;
  std::set<std::string>& used_;
  int guarded_ = 0;
};

Expr one(ScalarType type) { return std::make_shared<FloatImm>(1.0, "1", type); }

class Hoist : public IRMutator {
 public:
  explicit Hoist(std::set<std::string>& used) : used_(used) {}

 protected:
  Stmt mutate_for(const For& node, const Stmt& self) override {
    // A parallel loop keeps its body's values: the backends open OpenMP regions around it.
    if (node.annotations.parallel || !node.annotations.bind.empty()) return IRMutator::mutate_for(node, self);
    ReplaceDivisions replace(effects_of(node), used_);
    const Stmt body = replace.mutate(node.body);
    if (replace.reciprocals.empty()) return IRMutator::mutate_for(node, self);
    const Stmt loop = std::make_shared<For>(node.label, node.var, node.begin, node.end, body, node.annotations);
    const Stmt inner = IRMutator::mutate_for(static_cast<const For&>(*loop), loop);
    std::vector<Stmt> hoisted;
    for (const auto& [name, divisor] : replace.reciprocals)
      hoisted.push_back(std::make_shared<Declare>(name, divisor->type, binary(BinOp::Div, one(divisor->type), divisor), false));
    hoisted.push_back(inner);
    return block(std::move(hoisted));
  }

 private:
  std::set<std::string>& used_;
};

}  // namespace

void hoist_reciprocals(LoweredFunc& func) {
  std::set<std::string> used = names_bound_in(func);
  func.body = Hoist(used).mutate(func.body);
}

}  // namespace spgen
