// COO's runs: the lowering visits a COO level (compressed-nonunique, or a singleton above the
// last level) a run of equal coordinates at a time where it is merged or drives an assembled
// output's loop (plan_runs, in lower/lowering_plan.cpp, chooses `by_runs`). What that means for a
// level: whether it iterates its parent's run, and whether a loop over it visits a coordinate
// once per entry.
#pragma once

#include <set>

#include "ir/sparse_ir.h"

namespace spgen::lowering {

class Runs {
 public:
  // `by_runs`: the axes (by index in program.axes) visited a run at a time.
  Runs(const sparse::Program& program, const std::set<int>& by_runs) : program_(program), by_runs_(by_runs) {}

  static bool is_coo_level(const sparse::Axis& axis);

  bool is_last_level(const sparse::Axis& axis) const;

  // A singleton level iterates the run of its parent (a loop), rather than binding the one
  // coordinate of its parent's entry.
  bool iterates_run(const sparse::Axis& axis) const;

  // The loop visits a coordinate once per entry of this level (outputs must add up the visits).
  bool repeats(const sparse::Axis& axis) const;

  // The axis's index in the program's axes.
  int axis_id(const sparse::Axis& axis) const;

 private:
  const sparse::Program& program_;
  const std::set<int>& by_runs_;
};

}  // namespace spgen::lowering
