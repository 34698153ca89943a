// What a loop changes, and whether an expression inside it may be computed once before it: shared
// by the stage II passes that hoist loop-invariant work (hoist_reciprocals, hoist_invariant_loads).
#pragma once

#include <functional>
#include <set>
#include <string>

#include "ir/loop_ir.h"

namespace spgen {

// What a loop's body binds or changes.
struct LoopEffects {
  std::set<std::string> names;    // loop variables, declarations, scalars it assigns, masked sums' lanes
  std::set<std::string> written;  // arrays it stores into or allocates
  bool calls = false;             // a call, sort or batch of lane sums, which may write any array
};
LoopEffects effects_of(const loops::For& loop);

// Whether `expr` has the same value in every iteration of the loop with `effects` and may be
// evaluated before it: it reads nothing the loop changes, no vector or lanes, and no array at all
// where `guarded` (it sits under a test inside the loop, which may guard the read) or the loop
// calls what may write any. A constant is invariant too.
bool invariant_before(const loops::Expr& expr, const LoopEffects& effects, bool guarded);

// How a pass hoists: for an expression inside a loop (`guarded`: under a test inside it), the
// value to compute once before the loop, or null; the name wanted for its variable; and what the
// expression becomes (its children already rewritten) given that variable.
struct Hoisting {
  std::function<loops::Expr(const loops::Expr& expr, const LoopEffects& effects, bool guarded)> value;
  std::function<std::string(const loops::Expr& value)> name;
  std::function<loops::Expr(const loops::Expr& rewritten, const loops::Expr& held)> replacement;
};

// The name a value hoisted from `array` is called after: its tensor's (l for l_vals), else the array's.
std::string array_stem(const std::string& array);

// Each for loop of `func`, outermost first, gets the values `hoisting` picks out of its body
// declared right before it, each distinct value once; inner loops then take what varies with the
// outer ones. A parallel or bound loop keeps its body's values (the backends open OpenMP regions
// and kernels around it). Binary expressions and loads are offered, not masked sums' lanes.
void hoist_out_of_loops(loops::LoweredFunc& func, const Hoisting& hoisting);

}  // namespace spgen
