#include "passes/sparse_reorder.h"

#include <algorithm>
#include <set>

#include "passes/lower_to_loops.h"

namespace spgen {

bool is_sparse_reorder(const ScheduleOp& op, const sparse::Program& program) {
  const auto* reorder = std::get_if<ReorderOp>(&op.op);
  if (!reorder) return false;
  return std::all_of(reorder->order.begin(), reorder->order.end(),
                     [&](const std::string& var) { return program.depth_of(var) >= 0; });
}

std::string apply_sparse_reorder(sparse::Program& program, const Config& config, const ScheduleOp& op) {
  const auto& reorder = std::get<ReorderOp>(op.op);
  std::vector<sparse::Iterator>& iterators = program.iteration.iterators;
  std::set<std::string> seen;
  std::vector<size_t> slots;  // the positions the named loops occupy now, outermost first
  for (const std::string& var : reorder.order) {
    if (const sparse::BlockedVar* blocked = program.blocked(var))
      return schedule_op_error(config, op, "index " + var + " is split into the loops " + blocked->outer + " and " +
                                               blocked->inner + " by the blocked format of " + blocked->tensor +
                                               "; reorder those instead");
    if (!seen.insert(var).second) return schedule_op_error(config, op, "loop " + var + " is named twice");
    slots.push_back(static_cast<size_t>(program.depth_of(var)));
  }
  std::sort(slots.begin(), slots.end());
  std::vector<sparse::Iterator> reordered = iterators;
  for (size_t k = 0; k < slots.size(); ++k)
    reordered[slots[k]] = iterators[static_cast<size_t>(program.depth_of(reorder.order[k]))];
  iterators = reordered;

  // An output that is listed where its entries come out of order takes any loop order.
  const bool output_listed = output_may_be_listed(program, config);
  for (const sparse::OrderConstraint& c : sparse::hard_order_constraints(program)) {
    if (output_listed && c.tensor == program.output().tensor) continue;
    if (program.depth_of(c.before) > program.depth_of(c.after))
      return schedule_op_error(config, op,
                               "this order puts " + c.after + " outside " + c.before + ", but " + c.tensor + " (" +
                           program.buffer(c.tensor).format.name + ") stores " + c.after + " in a level below " +
                                   c.before + ": a sparse level can only be iterated inside its parent");
  }
  return "";
}

}  // namespace spgen
