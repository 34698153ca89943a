#include "passes/sparse_fuse.h"

#include <set>

#include "passes/lower_to_loops.h"

namespace spgen {

namespace {

// The operands that store `var` in a level that is not dense (their structures, once each). An
// assembled output's levels follow the loops (its entries are listed: lower_to_loops.cpp).
std::vector<const sparse::SparseBuffer*> sparse_holders(const sparse::Program& program, const std::string& var) {
  std::vector<const sparse::SparseBuffer*> holders;
  for (const sparse::SparseBuffer& buffer : program.buffers) {
    if (!buffer.shares_structure_with.empty() || buffer.is_output) continue;
    for (int id : buffer.axes)
      if (program.axes[id].index_var == var && program.axes[id].kind != sparse::AxisKind::DenseFixed) {
        holders.push_back(&buffer);
        break;
      }
  }
  return holders;
}

// A tensor's name, saying what a `+=` kernel's previous output value is.
std::string described(const sparse::SparseBuffer& buffer) {
  return buffer.previous_output ? buffer.tensor + " (the value that += adds into)" : buffer.tensor;
}

}  // namespace

bool is_sparse_fuse(const ScheduleOp& op, const sparse::Program& program) {
  const auto* fuse = std::get_if<FuseOp>(&op.op);
  if (!fuse || program.depth_of(fuse->vars[0]) < 0 || program.depth_of(fuse->vars[1]) < 0) return false;
  return !sparse_holders(program, fuse->vars[1]).empty() || !sparse_holders(program, fuse->vars[0]).empty();
}

std::string apply_sparse_fuse(sparse::Program& program, const Config& config, const ScheduleOp& op) {
  const auto& fuse = std::get<FuseOp>(op.op);
  auto fail = [&](const std::string& message) { return schedule_op_error(config, op, message); };
  const std::string &outer = fuse.vars[0], &inner = fuse.vars[1];
  std::set<std::string> taken(program.index_vars.begin(), program.index_vars.end());
  for (const sparse::Fusion& f : program.iteration.fusions) {
    taken.insert(f.into);
    if (f.outer == outer || f.inner == outer || f.outer == inner || f.inner == inner)
      return fail("loop " + (f.outer == outer || f.inner == outer ? outer : inner) + " is already fused into " + f.into);
  }
  if (taken.count(fuse.into) || fuse.into.rfind("dim_", 0) == 0) return fail("the name " + fuse.into + " is already in use; choose another");
  int depth = program.depth_of(outer);
  if (program.depth_of(inner) != depth + 1)
    return fail("loop " + inner + " is not directly inside loop " + outer + " (the loop order is " +
         [&] {
           std::string order;
           for (const sparse::Iterator& it : program.iteration.iterators) order += (order.empty() ? "" : ", ") + it.var;
           return order;
         }() +
         "); fuse a sparse level's variable with its parent's, in that order");
  for (const sparse::BlockedVar& blocked : program.blocked_vars)
    for (const std::string& var : {outer, inner})
      if (var == blocked.outer || var == blocked.inner)
        return fail("loop " + var + " is a block loop of " + blocked.tensor + " (" + program.buffer(blocked.tensor).format.name +
             "); fusing the levels of a blocked format is not supported");
  std::vector<const sparse::SparseBuffer*> holders = sparse_holders(program, inner);
  if (holders.empty()) return fail("no operand stores " + inner + " in a sparse level");
  if (holders.size() > 1)
    return fail("both " + described(*holders[0]) + " and " + described(*holders[1]) + " store " + inner +
         " sparsely; fuse iterates the entries of one tensor (fusing levels of several tensors is not supported)");
  const sparse::SparseBuffer& tensor = *holders[0];
  for (const sparse::SparseBuffer* other : sparse_holders(program, outer))
    if (other != &tensor)
      return fail(described(*other) + " also stores " + outer + " sparsely; fuse iterates the entries of " + tensor.tensor +
           " alone (fusing levels of several tensors is not supported)");
  // The two levels, adjacent in storage and at the root: a dense root over a compressed level
  // (csr, csc) or COO's compressed-nonunique root over a singleton.
  const sparse::Axis* upper = nullptr;
  const sparse::Axis* lower = nullptr;
  for (size_t l = 0; l < tensor.axes.size(); ++l) {
    const sparse::Axis& axis = program.axes[tensor.axes[l]];
    if (axis.index_var == outer) upper = &axis;
    if (axis.index_var == inner) lower = &axis;
  }
  std::string where = tensor.tensor + " (" + tensor.format.name + ")";
  if (!upper || lower->level != upper->level + 1)
    return fail(where + " does not store " + outer + " in the level just above " + inner +
         "; fuse needs a sparse level and its parent level");
  if (upper->level != 0)
    return fail(where + " stores " + outer + " below its root level; fuse supports the two top levels of a tensor");
  bool csr_like = upper->kind == sparse::AxisKind::DenseFixed && lower->kind == sparse::AxisKind::SparseVariable && lower->unique;
  bool coo_like = upper->kind == sparse::AxisKind::SparseVariable && !upper->unique && lower->kind == sparse::AxisKind::Singleton;
  if (!csr_like && !coo_like)
    return fail(where + " stores " + outer + ", " + inner + " in " + sparse::axis_kind_name(upper->kind) + ", " +
         sparse::axis_kind_name(lower->kind) + (lower->unique ? "" : " non-unique") +
         " levels; fuse supports a dense level over a compressed one (csr, csc) and COO's two top levels");
  program.iteration.fusions.push_back({outer, inner, fuse.into, tensor.tensor, op.path});
  return "";
}

}  // namespace spgen
