#include "passes/full_blocks.h"

#include <set>

#include "ir/loop_ir_visitor.h"
#include "passes/block_loops.h"

namespace spgen {

using namespace loops;

namespace {

// The most iterations a whole block's loop may have to be versioned: the compiler unrolls it.
constexpr int64_t kWidestBlock = 16;

bool reads_any(const Expr& e, const std::set<std::string>& names) {
  for (const std::string& n : vars_read(e))
    if (names.count(n)) return true;
  return false;
}

// Whether every loop in `body` is a block loop: a block's own work (SpMV's 3x3 products), which
// constant trip counts let the compiler unroll; around a loop of its own (SpMM's k), they change
// nothing that loop does not.
bool only_block_loops_in(const Stmt& body, const std::set<std::string>& in_block) {
  FindLoops finder;
  finder.visit(body);
  for (const LoopInfo& info : finder.found)
    if (!in_block.count(info.loop->label)) return false;
  return true;
}

// The loop `target` with `end` for its bound.
class ReplaceEnd : public IRMutator {
 public:
  ReplaceEnd(const For* target, Expr end) : target_(target), end_(std::move(end)) {}

 protected:
  Stmt mutate_for(const For& node, const Stmt& self) override {
    if (&node == target_) return std::make_shared<For>(node.label, node.var, node.begin, end_, node.body, node.annotations);
    return IRMutator::mutate_for(node, self);
  }

 private:
  const For* target_;
  Expr end_;
};

class FullBlocks : public IRMutator {
 public:
  explicit FullBlocks(std::set<std::string> in_block) : in_block_(std::move(in_block)) {}

 protected:
  Stmt mutate_for(const For& node, const Stmt& self) override {
    if (!in_block_.count(node.label)) {
      walks_.push_back(&node);
      Stmt rebuilt = IRMutator::mutate_for(node, self);
      walks_.pop_back();
      return rebuilt;
    }
    if (walks_.empty()) return IRMutator::mutate_for(node, self);
    // A block loop below (or this one) that stops at a block's edge, whose test changes with the
    // walk's block but not inside this loop: this loop twice, for a whole block and as it was.
    // (A test the walk does not change, a partial row of blocks, is hold_block_sums' to take.)
    std::set<std::string> in_walk = names_bound_in(walks_.back()->body);
    in_walk.insert(walks_.back()->var);
    std::set<std::string> in_this = names_bound_in(node.body);
    in_this.insert(node.var);
    const For* edge = nullptr;
    BlockBound bound;
    FindLoops finder;
    finder.visit(self);
    for (const LoopInfo& info : finder.found) {
      const For& loop = *info.loop;
      if (!in_block_.count(loop.label) || loop.annotations.scheduled()) continue;
      const std::optional<BlockBound> b = block_bound(loop.end);
      if (!b || !b->rest || b->extent < 1 || b->extent > kWidestBlock || !reads_any(b->rest, in_walk) || reads_any(b->rest, in_this) ||
          !only_block_loops(loop.body))
        continue;
      edge = &loop;
      bound = *b;
      break;
    }
    if (!edge) return IRMutator::mutate_for(node, self);
    Stmt full = mutate(ReplaceEnd(edge, int64(bound.extent)).mutate(self));
    return std::make_shared<If>(binary(BinOp::Le, int64(bound.extent), bound.rest), full, self);
  }

 private:
  bool only_block_loops(const Stmt& body) const { return only_block_loops_in(body, in_block_); }

  const std::set<std::string> in_block_;
  std::vector<const For*> walks_;  // the enclosing loops that are not block loops
};

}  // namespace

void version_full_blocks(LoweredFunc& func, const sparse::Program& program) {
  // (Into a dense output: the kernels that sum; a sparse output's assembly keeps one copy.)
  if (!program.output().format.all_dense()) return;
  std::set<std::string> in_block = in_block_loops(program);
  if (in_block.empty()) return;
  func.body = FullBlocks(std::move(in_block)).mutate(func.body);
}

}  // namespace spgen
