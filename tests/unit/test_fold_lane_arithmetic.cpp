// passes/fold_lane_arithmetic: `/ C` and `% C` of a position made of whole groups of C and one
// lane below C fold to the group and the lane; anything it cannot prove stays as it is. On
// hand-built IR (the interleaved ELL cases show it through compile(): test_decompose.cpp).
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "ir/loop_ir_printer.h"
#include "passes/fold_lane_arithmetic.h"

using namespace spgen_test;
using namespace spgen::loops;

namespace {

// for g in [0, n): for l in [0, lanes): { let p = first + g * 8 + l; y[p] = (p - first) / 8 * 32 + (p - first) % 8 }
// with `first` read from `first_array` (or a mutable variable), and `extra` added to p.
std::string folded(int64_t lanes, const std::string& first_array, Expr extra = nullptr, bool first_changes = false) {
  LoweredFunc func;
  func.name = "f";
  std::vector<Stmt> top;
  Expr first;
  if (first_changes) {
    top.push_back(std::make_shared<Declare>("first", ScalarType::Int64, int64(0), true));
    first = var("first");
  } else {
    first = cast(ScalarType::Int64, load(first_array, int64(0), ScalarType::Int32));
    top.push_back(std::make_shared<Declare>("first", ScalarType::Int64, first, false));
  }
  Expr p = add(add(var("first"), mul(var("g"), int64(8))), var("l"));
  if (extra) p = add(p, extra);
  Expr offset = sub(var("p"), first);
  Expr position = add(mul(binary(BinOp::Div, offset, int64(8)), int64(32)), binary(BinOp::Mod, offset, int64(8)));
  std::vector<Stmt> body = {std::make_shared<Declare>("p", ScalarType::Int64, p, false),
                            std::make_shared<Store>("y", var("p"), position, false)};
  if (first_changes) body.push_back(std::make_shared<Assign>("first", int64(1), true));
  Stmt lanes_loop = std::make_shared<For>("l", "l", int64(0), int64(lanes), block(body));
  top.push_back(std::make_shared<For>("g", "g", int64(0), var("n"), lanes_loop));
  func.body = block(top);
  spgen::fold_lane_arithmetic(func);
  return dump_stage2(func);
}

}  // namespace

TEST_CASE("fold_lane_arithmetic: a lane below the divisor over whole groups folds to the group and the lane") {
  std::string dump = folded(8, "pos");
  CAPTURE(dump);
  CHECK(contains(dump, "y[p] = g * 32 + l"));
  // A lane that may reach the divisor (16 > 8), or a group that is no whole multiple (+ 3), is left.
  CHECK(contains(folded(16, "pos"), "y[p] = (p - int64(pos[0])) / 8 * 32 + (p - int64(pos[0])) % 8"));
  CHECK(contains(folded(8, "pos", int64(3)), "(p - int64(pos[0])) / 8 * 32"));
  // A subtracted constant could make the numerator negative, where truncation is not floor: left.
  CHECK(contains(folded(8, "pos", int64(-8)), "(p - int64(pos[0])) / 8 * 32"));
}

TEST_CASE("fold_lane_arithmetic: declarations are read through only where nothing they read changes") {
  // `first` is reassigned in the loop: p's `first` and the later read may differ.
  CHECK(contains(folded(8, "pos", nullptr, true), "y[p] = (p - first) / 8 * 32 + (p - first) % 8"));
  // An array the function writes (y itself) is no fixed value either.
  CHECK(contains(folded(8, "y"), "y[p] = (p - int64(y[0])) / 8 * 32 + (p - int64(y[0])) % 8"));
}

TEST_CASE("fold_lane_arithmetic_at: an expression read where a loop begins, folded in that loop's context") {
  // for g in [0, n): for l in [0, 8): { let p = first + g * 8 + l; for s in [0, count): ... } where
  // count is a SELL slice's slots: pos[(p - first) / 8 + 1] - pos[(p - first) / 8].
  Expr first = cast(ScalarType::Int64, load("pos0", int64(0), ScalarType::Int32));
  Expr group = binary(BinOp::Div, sub(var("p"), first), int64(8));
  auto slots = [](Expr g) {
    return sub(cast(ScalarType::Int64, load("pos1", add(g, int64(1)), ScalarType::Int32)), cast(ScalarType::Int64, load("pos1", g, ScalarType::Int32)));
  };
  auto nest = [&](int64_t lanes) {
    auto walk = std::make_shared<For>("s", "s", int64(0), slots(group), block({std::make_shared<Store>("y", var("p"), int64(1), true)}));
    std::vector<Stmt> body = {std::make_shared<Declare>("p", ScalarType::Int64, add(add(var("first"), mul(var("g"), int64(8))), var("l")), false),
                              walk};
    Stmt lanes_loop = std::make_shared<For>("l", "l", int64(0), int64(lanes), block(body));
    Stmt top = block({std::make_shared<Declare>("first", ScalarType::Int64, first, false),
                      std::make_shared<For>("g", "g", int64(0), var("n"), lanes_loop)});
    return std::make_pair(top, walk);
  };
  auto [body, walk] = nest(8);
  CHECK(ExprPrinter().print(spgen::fold_lane_arithmetic_at(body, walk.get(), walk->end)) == "int64(pos1[g + 1]) - int64(pos1[g])");
  // Lanes that may reach the slice's size: the count stays per lane.
  auto [wide, wide_walk] = nest(16);
  CHECK(ExprPrinter().print(spgen::fold_lane_arithmetic_at(wide, wide_walk.get(), wide_walk->end)) ==
        ExprPrinter().print(wide_walk->end));
  // A loop not in the body: the expression as it is.
  auto [other, other_walk] = nest(8);
  CHECK(spgen::fold_lane_arithmetic_at(body, other_walk.get(), other_walk->end) == other_walk->end);
}
