#include "passes/fold_lane_arithmetic.h"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

// Arrays the function writes and variables it changes: a declared value that reads neither is
// the same value wherever it is read.
std::set<std::string> changed_names(const Stmt& body) {
  struct Changes : IRVisitor {
    std::set<std::string> names;
    void visit_store(const Store& node) override {
      names.insert(node.buffer);
      IRVisitor::visit_store(node);
    }
    void visit_assign(const Assign& node) override {
      names.insert(node.name);
      IRVisitor::visit_assign(node);
    }
    void visit_declare(const Declare& node) override {
      if (node.is_mutable) names.insert(node.name);
      IRVisitor::visit_declare(node);
    }
  } changes;
  changes.visit(body);
  return changes.names;
}

// Sum of coefficient * atom, plus a constant.
struct Linear {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;

  void add(const Expr& atom, int64_t coefficient) {
    for (auto& [known, c] : terms)
      if (same_expr(known, atom)) {
        c += coefficient;
        return;
      }
    terms.emplace_back(atom, coefficient);
  }
  void add(const Linear& other, int64_t scale) {
    for (const auto& [atom, c] : other.terms) add(atom, c * scale);
    constant += other.constant * scale;
  }
};

class Folder : public IRMutator {
 public:
  explicit Folder(std::set<std::string> changed) : changed_(std::move(changed)) {}
  // Fold `expr` where loop `at` begins, in its context, instead of rewriting (fold_lane_arithmetic_at).
  void fold_at(const For* at, Expr expr) {
    at_ = at;
    expr_at_ = std::move(expr);
  }
  const Expr& folded_at() const { return expr_at_; }

 protected:
  Stmt mutate_block(const Block& node, const Stmt& self) override {
    auto saved = lets_;
    Stmt out = IRMutator::mutate_block(node, self);
    lets_ = std::move(saved);
    return out;
  }
  Stmt mutate_for(const For& node, const Stmt& self) override {
    if (&node == at_) {
      expr_at_ = mutate(expr_at_);
      at_ = nullptr;
      return self;
    }
    auto saved_lets = lets_;
    auto saved_ranges = ranges_;
    lets_.erase(node.var);
    ranges_.erase(node.var);
    if (is_const_int(node.begin, 0) && node.end->kind == ExprKind::IntImm)
      ranges_[node.var] = static_cast<const IntImm&>(*node.end).value;
    Stmt out = IRMutator::mutate_for(node, self);
    lets_ = std::move(saved_lets);
    ranges_ = std::move(saved_ranges);
    return out;
  }
  Stmt mutate_declare(const Declare& node, const Stmt& self) override {
    Stmt out = IRMutator::mutate_declare(node, self);
    ranges_.erase(node.name);
    if (node.is_mutable || node.type != ScalarType::Int64) lets_.erase(node.name);
    else lets_[node.name] = static_cast<const Declare&>(*out).init;
    return out;
  }
  Stmt mutate_assign(const Assign& node, const Stmt& self) override {
    lets_.erase(node.name);
    return IRMutator::mutate_assign(node, self);
  }
  Expr mutate_binary(const Binary& node, const Expr& self) override {
    Expr out = IRMutator::mutate_binary(node, self);
    const auto& b = static_cast<const Binary&>(*out);
    // A term this pass folded to 0 (a lane of a block of 1) drops out of its sum.
    if (out != self && b.op == BinOp::Add && is_const_int(b.b, 0) && b.b != node.b) return b.a;
    if ((b.op != BinOp::Div && b.op != BinOp::Mod) || b.type != ScalarType::Int64 || b.b->kind != ExprKind::IntImm) return out;
    const int64_t divisor = static_cast<const IntImm&>(*b.b).value;
    if (divisor < 1) return out;
    if (divisor == 1) return b.op == BinOp::Div ? b.a : int64(0);  // (a block of 1)
    Linear n = linear(b.a, 0);
    // The terms that are whole multiples of the divisor, and at most one lane: a loop variable
    // of coefficient 1 that stays below the divisor.
    Expr lane;
    Linear quotient;
    if (n.constant < 0 || n.constant % divisor != 0) return out;
    quotient.constant = n.constant / divisor;
    for (const auto& [atom, c] : n.terms) {
      if (c == 0) continue;
      if (c > 0 && c % divisor == 0) {
        quotient.add(atom, c / divisor);
        continue;
      }
      if (c != 1 || lane || atom->kind != ExprKind::Var) return out;
      auto range = ranges_.find(static_cast<const Var&>(*atom).name);
      if (range == ranges_.end() || range->second > divisor) return out;
      lane = atom;
    }
    if (b.op == BinOp::Mod) return lane ? lane : int64(0);
    return expression(quotient);
  }

 private:
  // `expr` as a sum over atoms; declared variables are read through, up to a depth.
  Linear linear(const Expr& expr, int depth) const {
    Linear out;
    switch (expr->kind) {
      case ExprKind::IntImm: out.constant = static_cast<const IntImm&>(*expr).value; return out;
      case ExprKind::Var: {
        auto let = lets_.find(static_cast<const Var&>(*expr).name);
        if (let != lets_.end() && depth < 8 && reads_fixed_values(let->second)) return linear(let->second, depth + 1);
        break;
      }
      case ExprKind::Binary: {
        const auto& b = static_cast<const Binary&>(*expr);
        if (b.type != ScalarType::Int64) break;
        if (b.op == BinOp::Add || b.op == BinOp::Sub) {
          out.add(linear(b.a, depth), 1);
          out.add(linear(b.b, depth), b.op == BinOp::Add ? 1 : -1);
          return out;
        }
        if (b.op == BinOp::Mul && b.b->kind == ExprKind::IntImm) {
          out.add(linear(b.a, depth), static_cast<const IntImm&>(*b.b).value);
          return out;
        }
        if (b.op == BinOp::Mul && b.a->kind == ExprKind::IntImm) {
          out.add(linear(b.b, depth), static_cast<const IntImm&>(*b.a).value);
          return out;
        }
        break;
      }
      default: break;
    }
    out.add(expr, 1);
    return out;
  }

  // A declared value read elsewhere is the same value only if nothing it reads changes.
  bool reads_fixed_values(const Expr& expr) const {
    struct Reads : IRVisitor {
      const std::set<std::string>* changed;
      bool fixed = true;
      void visit_load(const Load& node) override {
        fixed &= changed->count(node.buffer) == 0;
        IRVisitor::visit_load(node);
      }
      void visit_var(const Var& node) override { fixed &= changed->count(node.name) == 0; }
    } reads;
    reads.changed = &changed_;
    reads.visit(expr);
    return reads.fixed;
  }

  static Expr expression(const Linear& l) {
    Expr out;
    for (const auto& [atom, c] : l.terms) {
      if (c == 0) continue;
      Expr term = c == 1 ? atom : mul(atom, int64(c));
      out = out ? add(out, term) : term;
    }
    if (l.constant != 0 || !out) out = out ? add(out, int64(l.constant)) : int64(l.constant);
    return out;
  }

  std::set<std::string> changed_;
  const For* at_ = nullptr;
  Expr expr_at_;
  std::map<std::string, Expr> lets_;
  std::map<std::string, int64_t> ranges_;  // loop variables in [0, n)
};

}  // namespace

void fold_lane_arithmetic(LoweredFunc& func) {
  Folder folder(changed_names(func.body));
  func.body = folder.mutate(func.body);
}

Expr fold_lane_arithmetic_at(const Stmt& body, const For* at, const Expr& expr) {
  Folder folder(changed_names(body));
  folder.fold_at(at, expr);
  folder.mutate(body);
  return folder.folded_at();
}

}  // namespace spgen
