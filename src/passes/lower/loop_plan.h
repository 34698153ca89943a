// How each loop of a nest visits its index variable: the lowering's plan of one loop
// (lower/lowering_plan.cpp, plan_loops), read by the blocked operands' analysis too.
#pragma once

#include <algorithm>
#include <vector>

#include "passes/lower/iteration_space.h"

namespace spgen::lowering {

enum class LoopKind {
  Dense,   // for v in [0, dim_v)
  Driven,  // for p over the one streamed level that stores v (the others, if any, are located)
  Merge,   // co-iteration of several streamed levels (or of some within a dense term)
};

struct LoopPlan {
  LoopKind kind = LoopKind::Dense;
  std::vector<int> axes;        // the stored (non-dense) axes on its variable, by tensor name
  std::vector<int> located;     // ... those reached by direct lookup from the coordinate, not a cursor
  bool dense_universe = false;  // some term has no compressed factor on v: visit every coordinate
  bool universe_of_parts_only = false;  // ... only an added part's, on a loop the parts share (defer_located_terms)
  // Driven alone by a level that lists every coordinate (SELL's rows): it visits them all.
  bool driven_over_every_coordinate = false;
  IterationSpace space;
  IterationSpace terms;  // every term's tensors, on this variable or not (tensor_terms)

  bool locates(int axis) const { return std::find(located.begin(), located.end(), axis) != located.end(); }
  // The first streamed axis: a Driven loop's only one.
  int stream() const {
    for (int id : axes)
      if (!locates(id)) return id;
    return -1;
  }
};

}  // namespace spgen::lowering
