#include "passes/block_loops.h"

namespace spgen {

using namespace loops;

std::set<std::string> in_block_loops(const sparse::Program& program) {
  std::set<std::string> labels;
  for (const sparse::BlockedVar& b : program.blocked_vars) labels.insert(b.inner);
  return labels;
}

std::optional<BlockBound> block_bound(const Expr& end) {
  if (end->kind == ExprKind::IntImm) return BlockBound{static_cast<const IntImm&>(*end).value, nullptr};
  if (end->kind != ExprKind::Binary) return std::nullopt;
  const auto& b = static_cast<const Binary&>(*end);
  if (b.op != BinOp::Min) return std::nullopt;
  if (b.a->kind == ExprKind::IntImm) return BlockBound{static_cast<const IntImm&>(*b.a).value, b.b};
  if (b.b->kind == ExprKind::IntImm) return BlockBound{static_cast<const IntImm&>(*b.b).value, b.a};
  return std::nullopt;
}

}  // namespace spgen
