// passes/lower/iteration_space: the union of intersections of an expression's tensors, on its own.
#include <doctest/doctest.h>

#include "frontend/parser.h"
#include "ir/loop_ir_printer.h"
#include "passes/lower/iteration_space.h"

using namespace spgen::lowering;

namespace {

spgen::ast::Spec spec(const std::string& text) { return spgen::parse_spec("t.spg", text); }

// Counts every tensor but those named in `dense`.
IterationSpace space_of(const std::string& text, const std::set<std::string>& dense = {}) {
  spgen::ast::Spec s = spec(text);
  return terms(*s.rhs, [&](const std::string& t) { return !dense.count(t); }, [](const IterationSpace&) {});
}

}  // namespace

TEST_CASE("iteration space: products intersect, sums unite, a dense factor counts for nothing") {
  CHECK(space_of("y(i) = A(i,j) * x(j)") == IterationSpace{{"A", "x"}});
  CHECK(space_of("y(i) = A(i,j) * x(j)", {"x"}) == IterationSpace{{"A"}});
  CHECK(space_of("C(i,j) = A(i,j) + B(i,j)") == IterationSpace{{"A"}, {"B"}});
  CHECK(space_of("C(i,j) = A(i,j) - B(i,j)", {"B"}) == IterationSpace{{"A"}, {}});
  // (A + B) * D multiplies out: A D or B D.
  CHECK(space_of("C(i,j) = (A(i,j) + B(i,j)) * D(i,j)") == IterationSpace{{"A", "D"}, {"B", "D"}});
  CHECK(space_of("C(i,j) = -A(i,j) * 2") == IterationSpace{{"A"}});
  CHECK(space_of("y(i) = 3") == IterationSpace{{}});
}

TEST_CASE("iteration space: a call visits where its arguments do; a constant argument of max/min adds nothing") {
  CHECK(space_of("E(i,j) = exp(S(i,j))") == IterationSpace{{"S"}});
  CHECK(space_of("y(i) = A(i,j) * exp(x(j))") == IterationSpace{{"A", "x"}});
  CHECK(space_of("y(i) = max(x(i), 0)") == IterationSpace{{"x"}});
  CHECK(space_of("y(i) = min(-1, x(i))") == IterationSpace{{"x"}});
  CHECK(space_of("C(i,j) = max(A(i,j), B(i,j))") == IterationSpace{{"A"}, {"B"}});
  CHECK(space_of("C(i,j) = min(A(i,j) * B(i,j), 1.5) - A(i,j)") == IterationSpace{{"A", "B"}, {"A"}});
  CHECK(space_of("y(i) = exp(2) * x(i)") == IterationSpace{{"x"}});
  CHECK(space_of("y(i) = exp(2)") == IterationSpace{{}});
}

TEST_CASE("iteration space: a divisor adds nothing to its term, but its own terms are shown to check_divisor") {
  spgen::ast::Spec s = spec("C(i,j) = A(i,j) / B(i,j)");
  std::vector<IterationSpace> divisors;
  IterationSpace space = terms(*s.rhs, [](const std::string&) { return true; },
                               [&](const IterationSpace& divisor) { divisors.push_back(divisor); });
  CHECK(space == IterationSpace{{"A"}});
  REQUIRE(divisors.size() == 1);
  CHECK(divisors[0] == IterationSpace{{"B"}});
  CHECK(tensor_terms(*s.rhs) == IterationSpace{{"A"}});
  CHECK(divides_by(*s.rhs, "B"));
  CHECK(!divides_by(*s.rhs, "A"));
  CHECK(divides_by(*spec("C(i,j) = D(i,j) + A(i,j) / (B(i,j) * E(i,j))").rhs, "E"));
  CHECK(!divides_by(*spec("C(i,j) = A(i,j) * B(i,j)").rhs, "B"));
}

TEST_CASE("iteration space: in every conjunction; some term present as flags") {
  const IterationSpace space = {{"A", "D"}, {"B", "D"}};
  CHECK(in_every_conjunction(space, "D"));
  CHECK(!in_every_conjunction(space, "A"));
  auto flag = [](const std::string& t) { return spgen::loops::var(t + "_present", spgen::loops::ScalarType::Bool); };
  spgen::loops::Expr present = some_term_present(space, flag);
  REQUIRE(present);
  CHECK(spgen::loops::ExprPrinter().print(present) == "(A_present && D_present) || (B_present && D_present)");
  // A tensor always present (null flag) makes its term need no test; a term all present, none.
  auto a_always = [&](const std::string& t) { return t == "A" ? nullptr : flag(t); };
  CHECK(spgen::loops::ExprPrinter().print(some_term_present(space, a_always)) == "D_present || (B_present && D_present)");
  CHECK(!some_term_present({{"A"}, {"B"}}, [](const std::string& t) { return t == "B" ? nullptr : spgen::loops::var(t, spgen::loops::ScalarType::Bool); }));
}
