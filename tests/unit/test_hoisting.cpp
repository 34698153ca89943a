// The passes that hoist loop-invariant work (passes/loop_invariance.h), on hand-built IR.
// hoist_reciprocals: a division by a divisor a loop leaves unchanged becomes a product with its
// reciprocal, declared before the outermost such loop; divisors the loop changes, that a test
// inside the loop guards, or that a parallel loop would carry out stay.
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "ir/loop_ir_printer.h"
#include "passes/hoist_invariant_loads.h"
#include "passes/hoist_reciprocals.h"

using namespace spgen_test;
using namespace spgen::loops;

namespace {

Expr f32(const std::string& array, Expr index) { return load(array, std::move(index), ScalarType::Float32); }
Expr div(Expr a, Expr b) { return binary(BinOp::Div, std::move(a), std::move(b)); }

// for i in [0, n): for p in [pos[i], pos[i+1]): for d in [0, 32): O[i*32+d] += E[p] * V[crd[p]*32+d] / divisor
// (`inner` wraps the store, `parallel_rows` marks the row loop parallel).
std::string hoisted(Expr divisor, std::function<Stmt(Stmt)> inner = nullptr, bool parallel_rows = false) {
  LoweredFunc func;
  func.name = "f";
  Expr row = load("pos", var("i"), ScalarType::Int32);
  Expr next = load("pos", add(var("i"), int64(1)), ScalarType::Int32);
  Expr column = cast(ScalarType::Int64, load("crd", var("p"), ScalarType::Int32));
  Expr value = div(mul(f32("E", var("p")), f32("V", add(mul(column, int64(32)), var("d")))), divisor);
  Stmt store = std::make_shared<Store>("O", add(mul(var("i"), int64(32)), var("d")), value, true);
  if (inner) store = inner(store);
  Stmt columns = std::make_shared<For>("d", "d", int64(0), int64(32), store);
  Stmt entries = std::make_shared<For>("j", "p", cast(ScalarType::Int64, row), cast(ScalarType::Int64, next), columns);
  LoopAnnotations rows;
  rows.parallel = parallel_rows;
  func.body = std::make_shared<For>("i", "i", int64(0), var("n"), entries, rows);
  spgen::hoist_reciprocals(func);
  return dump_stage2(func);
}

}  // namespace

TEST_CASE("hoist_reciprocals: a row's divisor is divided once per row, out of the entries' loop") {
  const std::string dump = hoisted(f32("l", var("i")));
  CAPTURE(dump);
  CHECK(contains(dump, "let l_recip: float32 = 1 / l[i]"));
  CHECK(contains(dump, "* l_recip"));
  CHECK_FALSE(contains(dump, "d] / l[i]"));
  // Declared inside the row loop, before the entries' loop.
  CHECK(dump.find("for i") < dump.find("let l_recip"));
  CHECK(dump.find("let l_recip") < dump.find("for j"));
}

TEST_CASE("hoist_reciprocals: a divisor read per entry moves only out of the loops it does not change") {
  // E[p] changes with p: hoisted out of the columns' loop only.
  const std::string dump = hoisted(f32("w", var("p")));
  CAPTURE(dump);
  CHECK(dump.find("for j") < dump.find("let w_recip"));
  CHECK(dump.find("let w_recip") < dump.find("for d"));
  // One that changes with d stays a division.
  CHECK(contains(hoisted(f32("w", var("d"))), "/ w[d]"));
  // An array the loops write is no fixed divisor.
  CHECK(contains(hoisted(f32("O", var("i"))), "/ O[i]"));
}

TEST_CASE("hoist_reciprocals: guarded reads, integer divisions and parallel loops stay") {
  // Under a test inside the loop, a divisor reading an array stays (the test may guard the read);
  // one of variables only moves.
  auto guarded = [](Stmt s) { return std::make_shared<If>(binary(BinOp::Lt, var("d"), var("m")), s, nullptr); };
  CHECK(contains(hoisted(f32("l", var("i")), guarded), "/ l[i]"));
  CHECK(contains(hoisted(var("scale", ScalarType::Float32), guarded), "let scale_recip: float32 = 1 / scale"));
  // A divisor the parallel row loop does not change stays inside it (its OpenMP region).
  const std::string parallel = hoisted(var("scale", ScalarType::Float32), nullptr, true);
  CAPTURE(parallel);
  CHECK(parallel.find("for i") < parallel.find("let scale_recip"));
  // Integer division (positions, blocks) is exact and left alone.
  LoweredFunc func;
  func.name = "f";
  func.body = std::make_shared<For>("i", "i", int64(0), var("n"),
                                    std::make_shared<Store>("y", var("i"), div(var("i"), var("b")), false));
  spgen::hoist_reciprocals(func);
  CHECK(contains(dump_stage2(func), "i / b"));
}

// hoist_invariant_loads: a value read from an array the kernel writes, at an index a loop does not
// change, is read once before the loop.
TEST_CASE("hoist_invariant_loads: a row's value the kernel wrote is read once before the loop that reads it per entry") {
  // for i: { m[i] = x[i]; for p in [pos[i], pos[i+1]): E[p] = S[p] - m[i] + x[i] + m[p] }
  auto kernel = [](bool write_m) {
    LoweredFunc func;
    func.name = "f";
    Expr entry = add(add(sub(f32("S", var("p")), f32("m", var("i"))), f32("x", var("i"))), f32("m", var("p")));
    Stmt entries = std::make_shared<For>("j", "p", cast(ScalarType::Int64, load("pos", var("i"), ScalarType::Int32)),
                                         cast(ScalarType::Int64, load("pos", add(var("i"), int64(1)), ScalarType::Int32)),
                                         std::make_shared<Store>("E", var("p"), entry, false));
    std::vector<Stmt> row;
    if (write_m) row.push_back(std::make_shared<Store>("m", var("i"), f32("x", var("i")), false));
    row.push_back(entries);
    LoopAnnotations parallel;
    parallel.parallel = true;
    func.body = std::make_shared<For>("i", "i", int64(0), var("n"), block(row), parallel);
    spgen::hoist_invariant_loads(func);
    return dump_stage2(func);
  };
  const std::string dump = kernel(true);
  CAPTURE(dump);
  CHECK(contains(dump, "let m_i: float32 = m[i]"));
  CHECK(dump.find("let m_i") < dump.find("for j"));
  CHECK(contains(dump, "E[p] = S[p] - m_i + x[i] + m[p]"));  // x is never written: the compiler's; m[p] varies
  // A kernel that writes no array it reads is left alone.
  CHECK(contains(kernel(false), "E[p] = S[p] - m[i] + x[i] + m[p]"));
}
