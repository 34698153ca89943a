#include "passes/lower/runs.h"

namespace spgen::lowering {

bool Runs::is_coo_level(const sparse::Axis& axis) {
  return axis.kind == sparse::AxisKind::Singleton || (axis.kind == sparse::AxisKind::SparseVariable && !axis.unique);
}

bool Runs::is_last_level(const sparse::Axis& axis) const {
  return axis.level + 1 == static_cast<int>(program_.buffer(axis.tensor).axes.size());
}

bool Runs::iterates_run(const sparse::Axis& axis) const {
  return axis.kind == sparse::AxisKind::Singleton && by_runs_.count(axis.parent) > 0;
}

bool Runs::repeats(const sparse::Axis& axis) const {
  if (by_runs_.count(axis_id(axis))) return false;
  return !axis.unique || (axis.kind == sparse::AxisKind::Singleton && !is_last_level(axis) && iterates_run(axis));
}

int Runs::axis_id(const sparse::Axis& axis) const { return static_cast<int>(&axis - program_.axes.data()); }

}  // namespace spgen::lowering
