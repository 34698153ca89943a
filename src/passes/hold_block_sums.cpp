#include "passes/hold_block_sums.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ir/loop_ir_visitor.h"
#include "passes/simplify_declares.h"

namespace spgen {

using namespace loops;

namespace {

// The most entries a held row may have: a block's rows fit in a few registers.
constexpr int64_t kMostHeld = 16;

// C where `end` is a constant C, or min(C, e) / min(e, C).
std::optional<int64_t> constant_bound(const Expr& end) {
  if (end->kind == ExprKind::IntImm) return static_cast<const IntImm&>(*end).value;
  if (end->kind != ExprKind::Binary) return std::nullopt;
  const auto& b = static_cast<const Binary&>(*end);
  if (b.op != BinOp::Min) return std::nullopt;
  if (b.a->kind == ExprKind::IntImm) return static_cast<const IntImm&>(*b.a).value;
  if (b.b->kind == ExprKind::IntImm) return static_cast<const IntImm&>(*b.b).value;
  return std::nullopt;
}

// Every access to `buffer` in a statement: its loads, and its stores (adding or not).
struct Accesses : IRVisitor {
  explicit Accesses(std::string b) : buffer(std::move(b)) {}
  std::string buffer;
  int loads = 0;
  std::vector<const Store*> stores;
  void visit_load(const Load& node) override {
    if (node.buffer == buffer) ++loads;
    IRVisitor::visit_load(node);
  }
  void visit_store(const Store& node) override {
    if (node.buffer == buffer) stores.push_back(&node);
    IRVisitor::visit_store(node);
  }
};

class HoldBlockSums : public IRMutator {
 public:
  HoldBlockSums(std::set<std::string> used, std::set<std::string> in_block) : used_(std::move(used)), in_block_(std::move(in_block)) {}

 protected:
  Stmt mutate_for(const For& node, const Stmt& self) override {
    Stmt rebuilt = IRMutator::mutate_for(node, self);
    const For& walk = static_cast<const For&>(*rebuilt);
    if (Stmt held = held_sums(walk)) {
      changed = true;
      return held;
    }
    return rebuilt;
  }

 public:
  bool changed = false;

 private:
  // `walk` rewritten with its sums held, or null.
  Stmt held_sums(const For& walk) {
    const LoopAnnotations& a = walk.annotations;
    if (a.parallel || a.vectorized || a.unroll || !a.bind.empty()) return nullptr;
    const std::vector<Stmt> body = statements_of(walk.body);
    const std::set<std::string> bound_in_walk = [&] {
      std::set<std::string> names = names_bound_in(walk.body);
      names.insert(walk.var);
      return names;
    }();
    for (size_t s = 0; s < body.size(); ++s) {
      const For* rows = as_for(body[s]);
      if (!rows || !in_block_.count(rows->label) || rows->begin->kind != ExprKind::IntImm ||
          static_cast<const IntImm&>(*rows->begin).value != 0)
        continue;
      const LoopAnnotations& ra = rows->annotations;
      if (ra.parallel || ra.vectorized || ra.unroll || !ra.bind.empty()) continue;
      const std::optional<int64_t> extent = constant_bound(rows->end);
      if (!extent || *extent < 1 || *extent > kMostHeld) continue;
      const std::vector<std::string> end_reads = vars_read(rows->end);
      if (std::any_of(end_reads.begin(), end_reads.end(), [&](const std::string& n) { return bound_in_walk.count(n); })) continue;
      // The one store of R's body that adds: into B, nowhere else read or written in the walk.
      const std::vector<Stmt> row_body = statements_of(rows->body);
      if (row_body.empty() || row_body.back()->kind != StmtKind::Store) continue;
      const auto& store = static_cast<const Store&>(*row_body.back());
      if (!store.accumulate || store.atomic || store.vector) continue;
      Accesses accesses(store.buffer);
      accesses.visit(walk.body);
      if (accesses.loads > 0 || accesses.stores.size() != 1) continue;
      // Its index: R's variable and what the walk does not change, through R's lets.
      std::vector<Stmt> index_lets;
      std::set<std::string> fixed = {rows->var};
      for (size_t r = 0; r + 1 < row_body.size(); ++r) {
        if (row_body[r]->kind != StmtKind::Declare) continue;
        const auto& let = static_cast<const Declare&>(*row_body[r]);
        if (let.is_mutable) continue;
        const std::vector<std::string> reads = vars_read(let.init);
        if (std::all_of(reads.begin(), reads.end(), [&](const std::string& n) { return fixed.count(n) || !bound_in_walk.count(n); }) &&
            !reads_memory(let.init)) {
          fixed.insert(let.name);
          index_lets.push_back(row_body[r]);
        }
      }
      const std::vector<std::string> index_reads = vars_read(store.index);
      if (reads_memory(store.index) ||
          !std::all_of(index_reads.begin(), index_reads.end(), [&](const std::string& n) { return fixed.count(n) || !bound_in_walk.count(n); }))
        continue;
      // The rewrite: the walk, and the rows' sums added after it, for R's extent `end`.
      const std::string held = fresh(store.buffer + "_held");
      auto held_walk = [&](const Expr& end) {
        std::vector<Stmt> new_row_body(row_body.begin(), row_body.end() - 1);
        new_row_body.push_back(std::make_shared<Store>(held, var(rows->var), store.value, true));
        std::vector<Stmt> new_body = body;
        new_body[s] = std::make_shared<For>(rows->label, rows->var, rows->begin, end, block(std::move(new_row_body)), rows->annotations);
        std::vector<Stmt> add_back = index_lets;
        add_back.push_back(std::make_shared<Store>(store.buffer, store.index, load(held, var(rows->var), store.value->type), true));
        return block({std::make_shared<For>(walk.label, walk.var, walk.begin, walk.end, block(std::move(new_body)), walk.annotations),
                      std::make_shared<For>(rows->label, rows->var, rows->begin, end, block(std::move(add_back)), LoopAnnotations{})});
      };
      // A whole block row (`min(C, e)` is C) runs R exactly C times: a test once per row of
      // blocks, not per block, and loops of constant length the compiler keeps in registers.
      Stmt rewritten = held_walk(rows->end);
      if (rows->end->kind == ExprKind::Binary) {
        const auto& bound = static_cast<const Binary&>(*rows->end);
        const Expr& rest = bound.a->kind == ExprKind::IntImm ? bound.b : bound.a;
        rewritten = std::make_shared<If>(binary(BinOp::Le, int64(*extent), rest), held_walk(int64(*extent)), rewritten);
      }
      Workspace w;
      w.name = held;
      w.type = store.value->type;
      w.size = int64(*extent);
      w.init = zero_of(store.value->type);
      w.local = true;
      return std::make_shared<Allocate>(
          std::vector<Workspace>{w},
          block({std::make_shared<Comment>("the sums of this row of blocks, held across the walk over its blocks"), rewritten}));
    }
    return nullptr;
  }

  static Expr zero_of(ScalarType type) { return std::make_shared<FloatImm>(0.0, "0", type); }

  std::string fresh(const std::string& wanted) { return *used_.insert(first_unused_name(used_, wanted)).first; }

  std::set<std::string> used_;
  const std::set<std::string> in_block_;  // the blocked operands' in-block loops
};

}  // namespace

void hold_block_sums(LoweredFunc& func, const sparse::Program& program) {
  std::set<std::string> in_block;
  for (const sparse::BlockedVar& b : program.blocked_vars) in_block.insert(b.inner);
  if (in_block.empty()) return;
  HoldBlockSums hold(names_bound_in(func), std::move(in_block));
  func.body = hold.mutate(func.body);
  if (hold.changed) simplify_declares(func);  // (the lets of the index the rows no longer read)
}

}  // namespace spgen
