#include "passes/hold_block_sums.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ir/loop_ir_visitor.h"
#include "passes/block_loops.h"
#include "passes/simplify_declares.h"

namespace spgen {

using namespace loops;

namespace {

// The most entries a held row may have: a block's rows fit in a few registers.
constexpr int64_t kMostHeld = 16;

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
    if (walk.annotations.scheduled()) return nullptr;
    const std::vector<Stmt> body = statements_of(walk.body);
    const std::set<std::string> bound_in_walk = [&] {
      std::set<std::string> names = names_bound_in(walk.body);
      names.insert(walk.var);
      return names;
    }();
    // Whether `e` reads memory nowhere and of the names the walk binds only those of `fixed`.
    auto unchanged_by_walk = [&](const Expr& e, const std::set<std::string>& fixed) {
      const std::vector<std::string> reads = vars_read(e);
      return !reads_memory(e) &&
             std::all_of(reads.begin(), reads.end(), [&](const std::string& n) { return fixed.count(n) || !bound_in_walk.count(n); });
    };
    for (size_t s = 0; s < body.size(); ++s) {
      const For* rows = as_for(body[s]);
      if (!rows || !in_block_.count(rows->label) || rows->begin->kind != ExprKind::IntImm ||
          static_cast<const IntImm&>(*rows->begin).value != 0)
        continue;
      if (rows->annotations.scheduled()) continue;
      const std::optional<BlockBound> bound = block_bound(rows->end);
      if (!bound || bound->extent < 1 || bound->extent > kMostHeld || !unchanged_by_walk(rows->end, {})) continue;
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
        if (!let.is_mutable && unchanged_by_walk(let.init, fixed)) {
          fixed.insert(let.name);
          index_lets.push_back(row_body[r]);
        }
      }
      if (!unchanged_by_walk(store.index, fixed)) continue;
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
      if (bound->rest)
        rewritten = std::make_shared<If>(binary(BinOp::Le, int64(bound->extent), bound->rest), held_walk(int64(bound->extent)), rewritten);
      Workspace w;
      w.name = held;
      w.type = store.value->type;
      w.size = int64(bound->extent);
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
  std::set<std::string> in_block = in_block_loops(program);
  if (in_block.empty()) return;
  HoldBlockSums hold(names_bound_in(func), std::move(in_block));
  func.body = hold.mutate(func.body);
  if (hold.changed) simplify_declares(func);  // (the lets of the index the rows no longer read)
}

}  // namespace spgen
