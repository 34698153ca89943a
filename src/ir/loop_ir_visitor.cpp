#include "ir/loop_ir_visitor.h"

#include <algorithm>
#include <cmath>

namespace spgen::loops {

void IRVisitor::visit(const Expr& expr) {
  switch (expr->kind) {
    case ExprKind::IntImm: return visit_int(static_cast<const IntImm&>(*expr));
    case ExprKind::FloatImm: return visit_float(static_cast<const FloatImm&>(*expr));
    case ExprKind::Var: return visit_var(static_cast<const Var&>(*expr));
    case ExprKind::Load: return visit_load(static_cast<const Load&>(*expr));
    case ExprKind::Binary: return visit_binary(static_cast<const Binary&>(*expr));
    case ExprKind::Neg: return visit_neg(static_cast<const Neg&>(*expr));
    case ExprKind::MathFn: return visit_math(static_cast<const MathFn&>(*expr));
    case ExprKind::Cast: return visit_cast(static_cast<const Cast&>(*expr));
    case ExprKind::Select: return visit_select(static_cast<const Select&>(*expr));
    case ExprKind::LaneSum: return visit_lane_sum(static_cast<const LaneSum&>(*expr));
    case ExprKind::MaskedSum: return visit_masked_sum(static_cast<const MaskedSum&>(*expr));
    case ExprKind::ThreadCount: return visit_thread_count(static_cast<const ThreadCount&>(*expr));
  }
}

void IRVisitor::visit(const Stmt& stmt) {
  switch (stmt->kind) {
    case StmtKind::Block: return visit_block(static_cast<const Block&>(*stmt));
    case StmtKind::For: return visit_for(static_cast<const For&>(*stmt));
    case StmtKind::While: return visit_while(static_cast<const While&>(*stmt));
    case StmtKind::If: return visit_if(static_cast<const If&>(*stmt));
    case StmtKind::Declare: return visit_declare(static_cast<const Declare&>(*stmt));
    case StmtKind::Assign: return visit_assign(static_cast<const Assign&>(*stmt));
    case StmtKind::Store: return visit_store(static_cast<const Store&>(*stmt));
    case StmtKind::Comment: return visit_comment(static_cast<const Comment&>(*stmt));
    case StmtKind::Allocate: return visit_allocate(static_cast<const Allocate&>(*stmt));
    case StmtKind::Sort: return visit_sort(static_cast<const Sort&>(*stmt));
    case StmtKind::Call: return visit_call(static_cast<const Call&>(*stmt));
    case StmtKind::Barrier: return;
    case StmtKind::Prefetch: return visit_prefetch(static_cast<const Prefetch&>(*stmt));
    case StmtKind::LaneSums: return visit_lane_sums(static_cast<const LaneSums&>(*stmt));
  }
}

Expr IRMutator::mutate(const Expr& expr) {
  switch (expr->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::ThreadCount: return expr;
    case ExprKind::Var: return mutate_var(static_cast<const Var&>(*expr), expr);
    case ExprKind::Load: return mutate_load(static_cast<const Load&>(*expr), expr);
    case ExprKind::Binary: return mutate_binary(static_cast<const Binary&>(*expr), expr);
    case ExprKind::Neg: return mutate_neg(static_cast<const Neg&>(*expr), expr);
    case ExprKind::MathFn: return mutate_math(static_cast<const MathFn&>(*expr), expr);
    case ExprKind::Cast: return mutate_cast(static_cast<const Cast&>(*expr), expr);
    case ExprKind::Select: return mutate_select(static_cast<const Select&>(*expr), expr);
    case ExprKind::LaneSum: return mutate_lane_sum(static_cast<const LaneSum&>(*expr), expr);
    case ExprKind::MaskedSum: return mutate_masked_sum(static_cast<const MaskedSum&>(*expr), expr);
  }
  return expr;
}

Stmt IRMutator::mutate(const Stmt& stmt) {
  if (!stmt) return stmt;
  switch (stmt->kind) {
    case StmtKind::Block: return mutate_block(static_cast<const Block&>(*stmt), stmt);
    case StmtKind::For: return mutate_for(static_cast<const For&>(*stmt), stmt);
    case StmtKind::While: return mutate_while(static_cast<const While&>(*stmt), stmt);
    case StmtKind::If: return mutate_if(static_cast<const If&>(*stmt), stmt);
    case StmtKind::Declare: return mutate_declare(static_cast<const Declare&>(*stmt), stmt);
    case StmtKind::Assign: return mutate_assign(static_cast<const Assign&>(*stmt), stmt);
    case StmtKind::Store: return mutate_store(static_cast<const Store&>(*stmt), stmt);
    case StmtKind::Comment:
    case StmtKind::Sort:
    case StmtKind::Barrier:
    case StmtKind::Call:
    case StmtKind::LaneSums: return stmt;  // names only (parameters, arrays, scalars): nothing to rewrite
    case StmtKind::Allocate: return mutate_allocate(static_cast<const Allocate&>(*stmt), stmt);
    case StmtKind::Prefetch: return mutate_prefetch(static_cast<const Prefetch&>(*stmt), stmt);
  }
  return stmt;
}

Stmt IRMutator::mutate_prefetch(const Prefetch& node, const Stmt& self) {
  Expr index = mutate(node.index);
  return index == node.index ? self : std::make_shared<Prefetch>(node.buffer, index);
}

Expr IRMutator::mutate_load(const Load& node, const Expr& self) {
  Expr index = mutate(node.index);
  return index == node.index ? self : std::make_shared<Load>(node.buffer, index, node.type, node.vector, node.gather_lane, node.lanes);
}

Expr IRMutator::mutate_binary(const Binary& node, const Expr& self) {
  Expr a = mutate(node.a), b = mutate(node.b);
  return a == node.a && b == node.b ? self : std::make_shared<Binary>(node.op, a, b, node.type);
}

Expr IRMutator::mutate_neg(const Neg& node, const Expr& self) {
  Expr a = mutate(node.a);
  return a == node.a ? self : std::make_shared<Neg>(a);
}

Expr IRMutator::mutate_math(const MathFn& node, const Expr& self) {
  Expr a = mutate(node.a);
  return a == node.a ? self : std::make_shared<MathFn>(node.op, a);
}

Expr IRMutator::mutate_cast(const Cast& node, const Expr& self) {
  Expr a = mutate(node.a);
  return a == node.a ? self : std::make_shared<Cast>(node.type, a);
}

Expr IRMutator::mutate_masked_sum(const MaskedSum& node, const Expr& self) {
  Expr count = mutate(node.count), row = node.row ? mutate(node.row) : nullptr, value = mutate(node.value);
  return count == node.count && row == node.row && value == node.value
             ? self
             : std::make_shared<MaskedSum>(node.lane, count, value, node.max, row);
}

Expr IRMutator::mutate_select(const Select& node, const Expr& self) {
  Expr cond = mutate(node.cond), a = mutate(node.a), b = mutate(node.b);
  return cond == node.cond && a == node.a && b == node.b ? self : std::make_shared<Select>(cond, a, b);
}

Stmt IRMutator::mutate_while(const While& node, const Stmt& self) {
  Expr cond = mutate(node.cond);
  Stmt body = mutate(node.body);
  return cond == node.cond && body == node.body ? self : std::make_shared<While>(node.label, cond, body);
}

Stmt IRMutator::mutate_block(const Block& node, const Stmt& self) {
  std::vector<Stmt> stmts;
  bool changed = false;
  for (const Stmt& s : node.stmts) {
    stmts.push_back(mutate(s));
    changed |= stmts.back() != s;
  }
  return changed ? block(std::move(stmts)) : self;
}

Stmt IRMutator::mutate_for(const For& node, const Stmt& self) {
  Expr begin = mutate(node.begin), end = mutate(node.end);
  Stmt body = mutate(node.body);
  if (begin == node.begin && end == node.end && body == node.body) return self;
  return std::make_shared<For>(node.label, node.var, begin, end, body, node.annotations);
}

Stmt IRMutator::mutate_if(const If& node, const Stmt& self) {
  Expr cond = mutate(node.cond);
  Stmt then_case = mutate(node.then_case), else_case = mutate(node.else_case);
  if (cond == node.cond && then_case == node.then_case && else_case == node.else_case) return self;
  return std::make_shared<If>(cond, then_case, else_case);
}

Stmt IRMutator::mutate_declare(const Declare& node, const Stmt& self) {
  Expr init = mutate(node.init);
  return init == node.init ? self : std::make_shared<Declare>(node.name, node.type, init, node.is_mutable);
}

Stmt IRMutator::mutate_assign(const Assign& node, const Stmt& self) {
  Expr value = mutate(node.value);
  return value == node.value ? self : std::make_shared<Assign>(node.name, value, node.accumulate, node.atomic, node.combine);
}

Stmt IRMutator::mutate_allocate(const Allocate& node, const Stmt& self) {
  Stmt body = mutate(node.body);
  return body == node.body ? self : std::make_shared<Allocate>(node.buffers, body);
}

Stmt IRMutator::mutate_store(const Store& node, const Stmt& self) {
  Expr index = mutate(node.index), value = mutate(node.value);
  if (index == node.index && value == node.value) return self;
  return std::make_shared<Store>(node.buffer, index, value, node.accumulate, node.atomic, node.vector, node.lanes);
}

namespace {
class VarCollector : public IRVisitor {
 public:
  std::vector<std::string> names;

 protected:
  void visit_var(const Var& node) override {
    if (std::find(names.begin(), names.end(), node.name) == names.end()) names.push_back(node.name);
  }
  void visit_assign(const Assign& node) override {
    visit_var(Var(node.name, ScalarType::Int64));  // an accumulation reads its target
    IRVisitor::visit_assign(node);
  }
};
}  // namespace

Expr substitute(const Expr& expr, const std::map<std::string, Expr>& values) {
  struct Substitute : IRMutator {
    const std::map<std::string, Expr>* values;
    Expr mutate_var(const Var& node, const Expr& self) override {
      auto it = values->find(node.name);
      return it == values->end() ? self : it->second;
    }
  } substitute;
  substitute.values = &values;
  return substitute.mutate(expr);
}

std::vector<std::string> vars_read(const Expr& expr) {
  VarCollector collector;
  collector.visit(expr);
  return collector.names;
}

bool reads_var(const Expr& expr, const std::string& name) {
  std::vector<std::string> names = vars_read(expr);
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool stmt_reads_var(const Stmt& stmt, const std::string& name) {
  VarCollector collector;
  collector.visit(stmt);
  return std::find(collector.names.begin(), collector.names.end(), name) != collector.names.end();
}

std::vector<std::string> scalars_assigned_outside(const Stmt& stmt, bool overwrites_only) {
  struct Finder : IRVisitor {
    bool overwrites_only = false;
    std::vector<std::string> assigned;
    std::vector<std::string> declared;
    void visit_assign(const Assign& node) override {
      if (!node.atomic && !(overwrites_only && node.accumulate) &&
          std::find(assigned.begin(), assigned.end(), node.name) == assigned.end())
        assigned.push_back(node.name);
      IRVisitor::visit_assign(node);
    }
    void visit_declare(const Declare& node) override {
      declared.push_back(node.name);
      IRVisitor::visit_declare(node);
    }
  } finder;
  finder.overwrites_only = overwrites_only;
  finder.visit(stmt);
  std::vector<std::string> outside;
  for (const std::string& name : finder.assigned)
    if (std::find(finder.declared.begin(), finder.declared.end(), name) == finder.declared.end()) outside.push_back(name);
  return outside;
}

bool stores_into(const Stmt& stmt, const std::string& buffer) {
  struct Finder : IRVisitor {
    const std::string* buffer;
    bool found = false;
    void visit_store(const Store& node) override {
      found |= node.buffer == *buffer;
      IRVisitor::visit_store(node);
    }
  } finder;
  finder.buffer = &buffer;
  finder.visit(stmt);
  return finder.found;
}

bool loads_from(const Stmt& stmt, const std::string& buffer) {
  struct Finder : IRVisitor {
    const std::string* buffer;
    bool found = false;
    void visit_load(const Load& node) override {
      found |= node.buffer == *buffer;
      IRVisitor::visit_load(node);
    }
  } finder;
  finder.buffer = &buffer;
  finder.visit(stmt);
  return finder.found;
}

bool contains_loop(const Stmt& stmt) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_for(const For&) override { found = true; }
    void visit_while(const While&) override { found = true; }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

std::set<std::string> names_bound_in(const Stmt& stmt) {
  struct Names : IRVisitor {
    std::set<std::string> bound;
    void visit_for(const For& node) override {
      bound.insert({node.var, node.label});
      IRVisitor::visit_for(node);
    }
    void visit_declare(const Declare& node) override {
      bound.insert(node.name);
      IRVisitor::visit_declare(node);
    }
  } names;
  names.visit(stmt);
  return names.bound;
}

std::set<std::string> names_bound_in(const LoweredFunc& func) {
  std::set<std::string> bound = names_bound_in(func.body);
  for (const Param& p : func.params) bound.insert(p.name);
  return bound;
}

bool reads_memory(const Expr& expr) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_load(const Load&) override { found = true; }
  } finder;
  finder.visit(expr);
  return finder.found;
}

bool uses_batched_lane_sums(const Stmt& stmt) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_lane_sums(const LaneSums&) override { found = true; }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

namespace {

class Renamer : public IRMutator {
 public:
  explicit Renamer(const std::map<std::string, std::string>& names) : names_(names) {}

 protected:
  Expr mutate_lane_sum(const LaneSum& node, const Expr&) override {
    return std::make_shared<LaneSum>(name(node.buffer), node.lanes, node.type);
  }
  std::string name(const std::string& n) const {
    auto at = names_.find(n);
    return at == names_.end() ? n : at->second;
  }
  Expr mutate_var(const Var& node, const Expr& self) override {
    return names_.count(node.name) ? std::make_shared<Var>(name(node.name), node.type) : self;
  }
  Expr mutate_load(const Load& node, const Expr&) override {
    return std::make_shared<Load>(name(node.buffer), mutate(node.index), node.type, node.vector, node.gather_lane, node.lanes);
  }
  Stmt mutate_for(const For& node, const Stmt&) override {
    return std::make_shared<For>(node.label, name(node.var), mutate(node.begin), mutate(node.end), mutate(node.body), node.annotations);
  }
  Stmt mutate_declare(const Declare& node, const Stmt&) override {
    return std::make_shared<Declare>(name(node.name), node.type, mutate(node.init), node.is_mutable);
  }
  Stmt mutate_assign(const Assign& node, const Stmt&) override {
    return std::make_shared<Assign>(name(node.name), mutate(node.value), node.accumulate, node.atomic, node.combine);
  }
  Stmt mutate_store(const Store& node, const Stmt&) override {
    return std::make_shared<Store>(name(node.buffer), mutate(node.index), mutate(node.value), node.accumulate, node.atomic,
                                   node.vector, node.lanes);
  }
  Stmt mutate_allocate(const Allocate& node, const Stmt&) override {
    std::vector<Workspace> buffers = node.buffers;
    for (Workspace& w : buffers) {
      w.name = name(w.name);
      w.size = mutate(w.size);
      if (w.init) w.init = mutate(w.init);
    }
    return std::make_shared<Allocate>(buffers, mutate(node.body));
  }

 private:
  const std::map<std::string, std::string>& names_;
};

}  // namespace

Stmt rename(const Stmt& stmt, const std::map<std::string, std::string>& names) { return Renamer(names).mutate(stmt); }

bool uses_vectors(const Stmt& stmt) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_load(const Load& node) override {
      found |= node.vector;
      IRVisitor::visit_load(node);
    }
    void visit_store(const Store& node) override {
      found |= node.vector;
      IRVisitor::visit_store(node);
    }
    void visit_allocate(const Allocate& node) override {
      for (const Workspace& w : node.buffers) found |= w.vector;
      IRVisitor::visit_allocate(node);
    }
    void visit_lane_sum(const LaneSum&) override { found = true; }
    void visit_lane_sums(const LaneSums&) override { found = true; }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

bool uses_masked_sums(const Stmt& stmt) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_masked_sum(const MaskedSum& node) override {
      found = true;
      IRVisitor::visit_masked_sum(node);
    }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

std::set<BinOp> reduction_combines(const Stmt& stmt, const std::vector<std::string>& scalars) {
  struct Combines : IRVisitor {
    const std::vector<std::string>* scalars;
    std::set<BinOp> ops;
    void visit_assign(const Assign& node) override {
      if (node.accumulate && std::find(scalars->begin(), scalars->end(), node.name) != scalars->end()) ops.insert(node.combine);
      IRVisitor::visit_assign(node);
    }
  } combines;
  combines.scalars = &scalars;
  combines.visit(stmt);
  return combines.ops;
}

bool uses_math(const Stmt& stmt) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_math(const MathFn&) override { found = true; }
    void visit_float(const FloatImm& node) override { found |= std::isinf(node.value); }  // INFINITY
  } finder;
  finder.visit(stmt);
  return finder.found;
}

bool uses_exp(const Stmt& stmt) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_math(const MathFn& node) override {
      found |= node.op == MathOp::Exp;
      IRVisitor::visit_math(node);
    }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

bool uses_gathers(const Stmt& stmt) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_load(const Load& node) override {
      found |= !node.gather_lane.empty();
      IRVisitor::visit_load(node);
    }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

bool uses_sort(const Stmt& stmt, bool with_values) {
  struct Finder : IRVisitor {
    bool with_values = false;
    bool found = false;
    void visit_sort(const Sort& node) override { found |= !with_values || !node.values.empty(); }
  } finder;
  finder.with_values = with_values;
  finder.visit(stmt);
  return finder.found;
}

std::string first_unused_name(const std::set<std::string>& used, const std::string& wanted) {
  std::string name = wanted;
  for (int k = 2; used.count(name); ++k) name = wanted + "_" + std::to_string(k);
  return name;
}

}  // namespace spgen::loops
