#include "passes/unswitch_loops.h"

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

class Unswitch : public IRMutator {
 protected:
  Stmt mutate_for(const For& node, const Stmt& self) override {
    Stmt rebuilt = IRMutator::mutate_for(node, self);
    const For& loop = static_cast<const For&>(*rebuilt);
    // A parallel loop stays where it is: the backends open OpenMP regions around it.
    if (loop.annotations.parallel || !loop.annotations.bind.empty()) return rebuilt;
    std::vector<Stmt> body = statements_of(loop.body);
    if (body.empty() || body.back()->kind != StmtKind::If) return rebuilt;
    const If& test = static_cast<const If&>(*body.back());
    if (test.else_case || reads_memory(test.cond) || reads_var(test.cond, loop.var)) return rebuilt;
    for (size_t s = 0; s + 1 < body.size(); ++s) {
      if (body[s]->kind == StmtKind::Comment) continue;
      if (body[s]->kind != StmtKind::Declare) return rebuilt;
      if (reads_var(test.cond, static_cast<const Declare&>(*body[s]).name)) return rebuilt;
    }
    body.back() = test.then_case;
    Stmt inner = std::make_shared<For>(loop.label, loop.var, loop.begin, loop.end, block(std::move(body)), loop.annotations);
    return std::make_shared<If>(test.cond, inner, nullptr);
  }
};

}  // namespace

void unswitch_loops(LoweredFunc& func) { func.body = Unswitch().mutate(func.body); }

}  // namespace spgen
