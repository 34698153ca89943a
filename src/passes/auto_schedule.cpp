#include "passes/auto_schedule.h"

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

bool is_reduction(const sparse::Program& program, const std::string& var) {
  for (const sparse::Iterator& it : program.iteration.iterators)
    if (it.var == var) return it.is_reduction;
  return true;
}

// The chain of first loops from the top of the nest: outermost to innermost.
std::vector<const For*> loop_spine(const Stmt& body) {
  std::vector<const For*> spine;
  Stmt current = body;
  while (current) {
    const For* next = nullptr;
    if (const For* loop = as_for(current)) {
      next = loop;
    } else if (current->kind == StmtKind::Block) {
      for (const Stmt& s : static_cast<const Block&>(*current).stmts)
        if (const For* loop = as_for(s); loop && loop->label.rfind("zero ", 0) != 0) {
          next = loop;
          break;
        }
    }
    if (!next) break;
    spine.push_back(next);
    current = next->body;
  }
  return spine;
}

bool stores_to(const Stmt& body, const std::string& buffer) {
  struct Finder : IRVisitor {
    std::string buffer;
    bool found = false;
    void visit_store(const Store& node) override { found |= node.buffer == buffer; }
  } finder;
  finder.buffer = buffer;
  finder.visit(body);
  return finder.found;
}

ScheduleOp make_op(std::variant<ReorderOp, SplitOp, ParallelOp, VectorizeOp, UnrollOp> op, int index) {
  ScheduleOp result;
  result.op = std::move(op);
  result.index = index;
  result.path = "/schedule (auto, op " + std::to_string(index) + ")";
  return result;
}

}  // namespace

std::vector<ScheduleOp> auto_schedule(const LoweredFunc& func, const sparse::Program& program) {
  std::vector<ScheduleOp> ops;
  std::vector<const For*> spine = loop_spine(func.body);
  if (spine.empty()) return ops;
  const For* outer = spine.front();
  if (!is_reduction(program, outer->label))
    ops.push_back(make_op(ParallelOp{outer->label, OmpSchedule::Dynamic, 16}, static_cast<int>(ops.size())));
  // Vectorize an innermost dense loop (contiguous accesses) unless it sums into one output entry.
  const For* inner = spine.back();
  bool dense_loop = inner->var == inner->label;
  bool sums_into_output = is_reduction(program, inner->label) && stores_to(inner->body, program.output().values);
  if (inner != outer && dense_loop && !sums_into_output)
    ops.push_back(make_op(VectorizeOp{inner->label}, static_cast<int>(ops.size())));
  return ops;
}

}  // namespace spgen
