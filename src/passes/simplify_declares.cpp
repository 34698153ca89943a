#include "passes/simplify_declares.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

// The declarations that something reads. Names are unique within a kernel but for the index
// variables that the nests of a sum's parts each declare again (`let i = i_blk * 2 + i_in` in the
// body's block loops and in an added part's), so a read binds to the nearest declaration of its
// name before it in the enclosing scopes (the bodies of loops and branches; blocks print flat).
class ReadDeclares : public IRVisitor {
 public:
  std::set<const Declare*> read;

 protected:
  void visit_var(const Var& node) override { read_name(node.name); }
  void visit_declare(const Declare& node) override {
    IRVisitor::visit_declare(node);
    scopes_.back()[node.name] = &node;
  }
  void visit_for(const For& node) override {
    for (const std::string& r : node.annotations.simd_reductions) read_name(r);
    visit(node.begin);
    visit(node.end);
    in_scope(node.body);
  }
  void visit_while(const While& node) override {
    visit(node.cond);
    in_scope(node.body);
  }
  void visit_if(const If& node) override {
    visit(node.cond);
    in_scope(node.then_case);
    if (node.else_case) in_scope(node.else_case);
  }

 private:
  std::vector<std::map<std::string, const Declare*>> scopes_ = {{}};

  void read_name(const std::string& name) {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope)
      if (auto found = scope->find(name); found != scope->end()) {
        read.insert(found->second);
        return;
      }
  }
  void in_scope(const Stmt& body) {
    scopes_.emplace_back();
    visit(body);
    scopes_.pop_back();
  }
};

// A copy (`let a = b`) is substituted where its declaration is in scope. Names are unique
// within a kernel but for those that the nests of a sum's parts each declare again (see
// ReadDeclares: `let j_blk_2 = j_blk` in one part's nest, `let j_blk_2 = j / 3` in the next), so
// a copy ends with the scope that declares it, and a declaration of its name that is no copy
// ends it too.
class PropagateCopies : public IRMutator {
 protected:
  Expr mutate_var(const Var& node, const Expr& self) override {
    auto copy = copies_.find(node.name);
    return copy == copies_.end() ? self : copy->second;
  }
  Stmt mutate_declare(const Declare& node, const Stmt& self) override {
    Stmt result = IRMutator::mutate_declare(node, self);
    const auto& declare = static_cast<const Declare&>(*result);
    if (!declare.is_mutable && declare.init->kind == ExprKind::Var && declare.init->type == declare.type)
      copies_[declare.name] = declare.init;
    else
      copies_.erase(declare.name);
    return result;
  }
  Stmt mutate_for(const For& node, const Stmt& self) override { return in_scope([&] { return IRMutator::mutate_for(node, self); }); }
  Stmt mutate_while(const While& node, const Stmt& self) override {
    return in_scope([&] { return IRMutator::mutate_while(node, self); });
  }
  Stmt mutate_if(const If& node, const Stmt& self) override { return in_scope([&] { return IRMutator::mutate_if(node, self); }); }

 private:
  std::map<std::string, Expr> copies_;

  template <typename F>
  Stmt in_scope(F mutate) {
    std::map<std::string, Expr> outside = copies_;
    Stmt result = mutate();
    copies_ = std::move(outside);
    return result;
  }
};

// A statement that does nothing: an empty block, or a loop over one (its bounds have no effects).
bool does_nothing(const Stmt& s) {
  if (s->kind == StmtKind::Block) {
    const auto& stmts = static_cast<const Block&>(*s).stmts;
    return std::all_of(stmts.begin(), stmts.end(), does_nothing);
  }
  return s->kind == StmtKind::For && does_nothing(static_cast<const For&>(*s).body);
}

// Drops declarations nothing reads, and loops that do nothing (an assemble phase's loops over
// the dense blocks below the level it counts).
class DropDeclares : public IRMutator {
 public:
  explicit DropDeclares(const std::set<const Declare*>& read) : read_(read) {}
  bool changed = false;

 protected:
  Stmt mutate_block(const Block& node, const Stmt& self) override {
    std::vector<Stmt> kept;
    bool dropped = false;
    for (const Stmt& s : node.stmts) {
      if (s->kind == StmtKind::Declare && !read_.count(static_cast<const Declare*>(s.get()))) {
        dropped = true;
        continue;
      }
      Stmt mutated = mutate(s);
      if (mutated->kind == StmtKind::For && does_nothing(mutated)) {
        dropped = true;
        continue;
      }
      kept.push_back(mutated);
      dropped |= kept.back() != s;
    }
    changed |= dropped;
    return dropped ? block(std::move(kept)) : self;
  }

 private:
  const std::set<const Declare*>& read_;
};

}  // namespace

void simplify_declares(LoweredFunc& func) {
  // Reads bind to declarations by identity, and a pass may have put one declaration in two
  // places (precompute's lets, in the summing loop and the store loop): one copy each, so that
  // a copy nothing reads goes even where the other stays.
  struct OneCopyEach : IRMutator {
    Stmt mutate_declare(const Declare& node, const Stmt&) override {
      return std::make_shared<Declare>(node.name, node.type, mutate(node.init), node.is_mutable);
    }
  };
  func.body = OneCopyEach().mutate(func.body);
  func.body = PropagateCopies().mutate(func.body);
  for (;;) {  // a dropped declaration may have been the only reader of another
    ReadDeclares reader;
    reader.visit(func.body);
    DropDeclares dropper(reader.read);
    func.body = dropper.mutate(func.body);
    if (!dropper.changed) return;
  }
}

}  // namespace spgen
