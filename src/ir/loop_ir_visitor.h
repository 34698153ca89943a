// Traversal of stage II IR. IRVisitor walks every node (override a visit_* and call the base
// to keep walking); IRMutator rebuilds only the nodes whose children changed.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/loop_ir.h"

namespace spgen::loops {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  void visit(const Expr& expr);
  void visit(const Stmt& stmt);

 protected:
  virtual void visit_int(const IntImm&) {}
  virtual void visit_float(const FloatImm&) {}
  virtual void visit_var(const Var&) {}
  virtual void visit_load(const Load& node) { visit(node.index); }
  virtual void visit_binary(const Binary& node) { visit(node.a); visit(node.b); }
  virtual void visit_neg(const Neg& node) { visit(node.a); }
  virtual void visit_math(const MathFn& node) { visit(node.a); }
  virtual void visit_cast(const Cast& node) { visit(node.a); }
  virtual void visit_select(const Select& node) { visit(node.cond); visit(node.a); visit(node.b); }
  virtual void visit_lane_sum(const LaneSum&) {}
  virtual void visit_thread_count(const ThreadCount&) {}
  virtual void visit_masked_sum(const MaskedSum& node) {
    visit(node.count);
    if (node.row) visit(node.row);
    visit(node.value);
  }
  virtual void visit_block(const Block& node) { for (const Stmt& s : node.stmts) visit(s); }
  virtual void visit_for(const For& node) { visit(node.begin); visit(node.end); visit(node.body); }
  virtual void visit_while(const While& node) { visit(node.cond); visit(node.body); }
  virtual void visit_if(const If& node) { visit(node.cond); visit(node.then_case); if (node.else_case) visit(node.else_case); }
  virtual void visit_declare(const Declare& node) { visit(node.init); }
  virtual void visit_assign(const Assign& node) { visit(node.value); }
  virtual void visit_store(const Store& node) { visit(node.index); visit(node.value); }
  virtual void visit_comment(const Comment&) {}
  virtual void visit_allocate(const Allocate& node) {
    for (const Workspace& w : node.buffers) {
      visit(w.size);
      if (w.init) visit(w.init);  // shared memory starts uninitialised
    }
    visit(node.body);
  }
  virtual void visit_sort(const Sort& node) { visit(node.begin); visit(node.end); }
  virtual void visit_call(const Call& node) { for (const Expr& a : node.args) visit(a); }
  virtual void visit_prefetch(const Prefetch& node) { visit(node.index); }
  virtual void visit_lane_sums(const LaneSums&) {}
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  Expr mutate(const Expr& expr);
  Stmt mutate(const Stmt& stmt);

 protected:
  virtual Expr mutate_var(const Var&, const Expr& self) { return self; }
  virtual Expr mutate_load(const Load& node, const Expr& self);
  virtual Expr mutate_binary(const Binary& node, const Expr& self);
  virtual Expr mutate_neg(const Neg& node, const Expr& self);
  virtual Expr mutate_math(const MathFn& node, const Expr& self);
  virtual Expr mutate_cast(const Cast& node, const Expr& self);
  virtual Expr mutate_select(const Select& node, const Expr& self);
  virtual Expr mutate_lane_sum(const LaneSum&, const Expr& self) { return self; }  // names an array
  virtual Expr mutate_masked_sum(const MaskedSum& node, const Expr& self);
  virtual Stmt mutate_block(const Block& node, const Stmt& self);
  virtual Stmt mutate_for(const For& node, const Stmt& self);
  virtual Stmt mutate_while(const While& node, const Stmt& self);
  virtual Stmt mutate_if(const If& node, const Stmt& self);
  virtual Stmt mutate_declare(const Declare& node, const Stmt& self);
  virtual Stmt mutate_assign(const Assign& node, const Stmt& self);
  virtual Stmt mutate_store(const Store& node, const Stmt& self);
  virtual Stmt mutate_allocate(const Allocate& node, const Stmt& self);
  virtual Stmt mutate_prefetch(const Prefetch& node, const Stmt& self);
};

// Replaces every loop labelled `label` with what `rewrite` makes of it.
class RewriteLoop : public IRMutator {
 public:
  RewriteLoop(std::string label, std::function<Stmt(const For&)> rewrite)
      : label_(std::move(label)), rewrite_(std::move(rewrite)) {}

 protected:
  Stmt mutate_for(const For& node, const Stmt& self) override {
    if (node.label == label_) return rewrite_(node);
    return IRMutator::mutate_for(node, self);
  }

 private:
  std::string label_;
  std::function<Stmt(const For&)> rewrite_;
};

// A for loop with the for loops around it.
struct LoopInfo {
  const For* loop = nullptr;
  std::vector<const For*> enclosing;  // outermost first
};

// Every for loop of a statement, in the order they appear (outer before inner).
class FindLoops : public IRVisitor {
 public:
  std::vector<LoopInfo> found;

 protected:
  void visit_for(const For& node) override {
    found.push_back({&node, stack_});
    stack_.push_back(&node);
    IRVisitor::visit_for(node);
    stack_.pop_back();
  }

 private:
  std::vector<const For*> stack_;
};

// Whether a statement uses native vectors (passes/explicit_vectors): vector loads, stores and
// workspaces, or lane sums. Its generated file then needs the vector helpers.
bool uses_vectors(const Stmt& stmt);
// Whether a statement gathers vectors lane by lane: the file then needs spgen_gather_*.
bool uses_gathers(const Stmt& stmt);
// Whether a statement sums a masked tail (MaskedSum): the file then needs spgen_masked_sum_*.
bool uses_masked_sums(const Stmt& stmt);
// How `stmt` reduces into `scalars`: the combine ops of its accumulating Assigns to them (Add for
// sums, Max or Min for a max reduction's accumulator); empty where it assigns none.
std::set<BinOp> reduction_combines(const Stmt& stmt, const std::vector<std::string>& scalars);
// Whether a statement calls a math function (MathFn): the file then includes <cmath>.
bool uses_math(const Stmt& stmt);
// Whether a statement calls exp: the cpu file then needs spgen_exp_*.
bool uses_exp(const Stmt& stmt);
// Whether a statement finishes lane sums in batches (LaneSums): the file then needs their helpers.
bool uses_batched_lane_sums(const Stmt& stmt);

// The statement with names replaced as `names` maps them (old -> new): variables read, scalars
// declared and assigned, loop variables (not labels), arrays allocated, loaded, stored and
// summed. For copies of a loop body whose locals must not clash.
Stmt rename(const Stmt& stmt, const std::map<std::string, std::string>& names);

// Whether a statement sorts a workspace (a scattered output's touched coordinates); with
// `with_values`, a list of keys with their values (an output's listed entries).
bool uses_sort(const Stmt& stmt, bool with_values = false);

// The expression with each variable named in `values` replaced by its expression there.
Expr substitute(const Expr& expr, const std::map<std::string, Expr>& values);
// Names of all variables an expression reads.
std::vector<std::string> vars_read(const Expr& expr);
bool reads_var(const Expr& expr, const std::string& name);
// Whether evaluating `expr` loads from an array.
bool reads_memory(const Expr& expr);
bool stmt_reads_var(const Stmt& stmt, const std::string& name);
// Scalars a statement assigns (`=` or `+=`) but does not declare, in first-assignment order:
// the sums a loop body keeps in variables declared outside it.
// With `overwrites_only`, only those it sets with `=` (state such as a cursor, not sums).
std::vector<std::string> scalars_assigned_outside(const Stmt& stmt, bool overwrites_only = false);
bool stores_into(const Stmt& stmt, const std::string& buffer);
// Whether `stmt` loads from `buffer` anywhere.
bool loads_from(const Stmt& stmt, const std::string& buffer);
// True if the statement holds any loop (for or while).
bool contains_loop(const Stmt& stmt);
// Every name the statement binds: loop variables and labels, and declarations.
std::set<std::string> names_bound_in(const Stmt& stmt);
// Every name a kernel binds: names_bound_in(body) and its parameters.
std::set<std::string> names_bound_in(const LoweredFunc& func);
// `wanted`, or else the first of `wanted_2`, `wanted_3`, ... that `used` lacks.
std::string first_unused_name(const std::set<std::string>& used, const std::string& wanted);

}  // namespace spgen::loops
