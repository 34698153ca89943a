// Tests of pass 1 (src/frontend/parser.cpp): index notation text -> ast::Spec. The AST is checked
// through an independent S-expression printer (so precedence and associativity are explicit),
// and every error through its exact `file:line:col: error:` prefix, message and caret line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/parser.h"
#include "support/diagnostics.h"

namespace {

using spgen::CompileError;
using spgen::parse_spec;
using spgen::ast::ExprKind;
using spgen::ast::Spec;

const char* const kFile = "spec.spg";

Spec parse(const std::string& text) { return parse_spec(kFile, text); }

// The expression as an S-expression: `(* A(i,j) x(j))`, `(neg y)`, literals by spelling.
// Written independently of ast::to_string so the two check each other.
std::string sexpr(const spgen::ast::Expr& e) {
  switch (e.kind) {
    case ExprKind::Access: {
      std::string out = e.access.tensor;
      if (e.access.indices.empty()) return out;
      out += "(";
      for (size_t i = 0; i < e.access.indices.size(); ++i) out += (i ? "," : "") + e.access.indices[i];
      return out + ")";
    }
    case ExprKind::Literal: return e.literal;
    case ExprKind::Neg: return "(neg " + sexpr(*e.lhs) + ")";
    case ExprKind::Add: return "(+ " + sexpr(*e.lhs) + " " + sexpr(*e.rhs) + ")";
    case ExprKind::Sub: return "(- " + sexpr(*e.lhs) + " " + sexpr(*e.rhs) + ")";
    case ExprKind::Mul: return "(* " + sexpr(*e.lhs) + " " + sexpr(*e.rhs) + ")";
    case ExprKind::Div: return "(/ " + sexpr(*e.lhs) + " " + sexpr(*e.rhs) + ")";
    case ExprKind::Call:
      return "(" + std::string(spgen::ast::function_name(e.function)) + " " + sexpr(*e.lhs) + (e.rhs ? " " + sexpr(*e.rhs) : "") + ")";
  }
  return "?";
}

std::string rhs_of(const std::string& text) { return sexpr(*parse(text).rhs); }

std::vector<std::string> tensor_names(const Spec& spec) {
  std::vector<std::string> out;
  for (const auto& t : spec.tensors) out.push_back(t.name);
  return out;
}

std::vector<int> tensor_orders(const Spec& spec) {
  std::vector<int> out;
  for (const auto& t : spec.tensors) out.push_back(t.order);
  return out;
}

using Names = std::vector<std::string>;
using Orders = std::vector<int>;

// what() of the CompileError parse_spec throws for `text`; "" (and a failed check) if none.
std::string error_of(const std::string& text) {
  try {
    Spec spec = parse(text);
    FAIL_CHECK("expected a CompileError, but the spec parsed as: " << spgen::ast::to_string(spec));
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  for (;;) {
    size_t newline = text.find('\n', begin);
    if (newline == std::string::npos) {
      lines.push_back(text.substr(begin));
      return lines;
    }
    lines.push_back(text.substr(begin, newline - begin));
    begin = newline + 1;
  }
}

// Checks the whole diagnostic: `spec.spg:LINE:COL: error: ...phrase...`, then the source line
// LINE, then a caret line whose `^` sits under column COL (tabs kept so it lines up), and, when
// `at` is given, that the caret points at that character.
void check_error(const std::string& text, int line, int col, const std::string& phrase, char at = 0) {
  CAPTURE(text);
  std::string message = error_of(text);
  CAPTURE(message);
  std::string prefix = std::string(kFile) + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: ";
  CHECK(message.rfind(prefix, 0) == 0);
  CHECK(message.find(phrase) != std::string::npos);
  std::vector<std::string> parts = split_lines(message);
  REQUIRE(parts.size() == 4);  // header, source line, caret line, "" after the final '\n'
  CHECK(parts[3].empty());
  std::vector<std::string> source = split_lines(text);
  REQUIRE(line >= 1);
  REQUIRE(static_cast<size_t>(line) <= source.size());
  const std::string& source_line = source[line - 1];
  CHECK(parts[1] == "  " + source_line);
  std::string caret = "  ";
  for (int c = 1; c < col; ++c) caret += (static_cast<size_t>(c - 1) < source_line.size() && source_line[c - 1] == '\t') ? '\t' : ' ';
  caret += "^";
  CHECK(parts[2] == caret);
  if (at) {
    REQUIRE(static_cast<size_t>(col) <= source_line.size());
    CHECK(source_line[col - 1] == at);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The kernels spgen targets

TEST_CASE("parser: SpMV") {
  Spec spec = parse("y(i) = A(i,j) * x(j)");
  CHECK(spec.file == kFile);
  CHECK(spec.text == "y(i) = A(i,j) * x(j)");
  CHECK(spec.output.tensor == "y");
  CHECK(spec.output.indices == Names{"i"});
  CHECK(spec.output.loc.line == 1);
  CHECK(spec.output.loc.col == 1);
  CHECK_FALSE(spec.accumulate);
  REQUIRE(spec.rhs);
  REQUIRE(spec.rhs->kind == ExprKind::Mul);
  CHECK(spec.rhs->loc.col == 15);
  const auto& a = *spec.rhs->lhs;
  const auto& x = *spec.rhs->rhs;
  REQUIRE(a.kind == ExprKind::Access);
  CHECK(a.access.tensor == "A");
  CHECK(a.access.indices == Names{"i", "j"});
  CHECK(a.access.loc.line == 1);
  CHECK(a.access.loc.col == 8);
  REQUIRE(a.access.index_locs.size() == 2);
  CHECK(a.access.index_locs[0].col == 10);
  CHECK(a.access.index_locs[1].col == 12);
  REQUIRE(x.kind == ExprKind::Access);
  CHECK(x.access.tensor == "x");
  CHECK(x.access.indices == Names{"j"});
  CHECK(x.access.loc.col == 17);
  CHECK(spec.index_vars == Names{"i", "j"});
  CHECK(tensor_names(spec) == Names{"y", "A", "x"});
  CHECK(tensor_orders(spec) == Orders{1, 2, 1});
  CHECK(spec.tensors[0].is_output);
  CHECK_FALSE(spec.tensors[1].is_output);
  CHECK_FALSE(spec.tensors[2].is_output);
  CHECK(spec.tensors[1].first_loc.col == 8);
  CHECK(spgen::ast::to_string(spec) == "y(i) = A(i,j) * x(j)");
}

TEST_CASE("parser: SpMM lists the output's indices first") {
  Spec spec = parse("C(i,k) = A(i,j) * B(j,k)");
  CHECK(spec.output.tensor == "C");
  CHECK(spec.output.indices == Names{"i", "k"});
  CHECK(sexpr(*spec.rhs) == "(* A(i,j) B(j,k))");
  CHECK(spec.index_vars == Names{"i", "k", "j"});
  CHECK(tensor_names(spec) == Names{"C", "A", "B"});
  CHECK(tensor_orders(spec) == Orders{2, 2, 2});
  CHECK(spec.is_output_var("i"));
  CHECK(spec.is_output_var("k"));
  CHECK_FALSE(spec.is_output_var("j"));
  CHECK_FALSE(spec.is_output_var("C"));
}

TEST_CASE("parser: SDDMM multiplies left to right") {
  Spec spec = parse("Y(i,j) = X(i,j) * A(i,k) * B(j,k)");
  CHECK(sexpr(*spec.rhs) == "(* (* X(i,j) A(i,k)) B(j,k))");
  CHECK(spec.index_vars == Names{"i", "j", "k"});
  CHECK(tensor_names(spec) == Names{"Y", "X", "A", "B"});
  CHECK(tensor_orders(spec) == Orders{2, 2, 2, 2});
}

TEST_CASE("parser: TTV") {
  Spec spec = parse("A(i,j) = B(i,j,k) * c(k)");
  CHECK(sexpr(*spec.rhs) == "(* B(i,j,k) c(k))");
  CHECK(spec.index_vars == Names{"i", "j", "k"});
  CHECK(tensor_names(spec) == Names{"A", "B", "c"});
  CHECK(tensor_orders(spec) == Orders{2, 3, 1});
  REQUIRE(spec.find_tensor("B") != nullptr);
  CHECK(spec.find_tensor("B")->order == 3);
  CHECK(spec.find_tensor("Z") == nullptr);
}

TEST_CASE("parser: MTTKRP, as in specs/mttkrp.spg") {
  Spec spec = parse(
      "# Matricized tensor times Khatri-Rao product (the core of CP decomposition).\n"
      "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)\n");
  CHECK(spec.output.loc.line == 2);
  CHECK(spec.output.loc.col == 1);
  CHECK(sexpr(*spec.rhs) == "(* (* B(i,k,l) C(k,j)) D(l,j))");
  CHECK(spec.index_vars == Names{"i", "j", "k", "l"});
  CHECK(tensor_names(spec) == Names{"A", "B", "C", "D"});
  CHECK(tensor_orders(spec) == Orders{2, 3, 2, 2});
  CHECK(spgen::ast::to_string(spec) == "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)");
}

TEST_CASE("parser: scalar output, with and without ()") {
  for (const char* text : {"a = B(i,j) * C(i,j)", "a() = B(i,j) * C(i,j)"}) {
    CAPTURE(text);
    Spec spec = parse(text);
    CHECK(spec.output.tensor == "a");
    CHECK(spec.output.indices.empty());
    CHECK(spec.output.index_locs.empty());
    CHECK(spec.index_vars == Names{"i", "j"});
    CHECK(tensor_names(spec) == Names{"a", "B", "C"});
    CHECK(tensor_orders(spec) == Orders{0, 2, 2});
    CHECK(spec.tensors[0].is_output);
    CHECK(spgen::ast::to_string(spec) == "a = B(i,j) * C(i,j)");
  }
}

TEST_CASE("parser: scalar tensors on the right-hand side") {
  Spec spec = parse("y(i) = alpha * x(i) + beta() * z(i)");
  CHECK(sexpr(*spec.rhs) == "(+ (* alpha x(i)) (* beta z(i)))");
  CHECK(tensor_names(spec) == Names{"y", "alpha", "x", "beta", "z"});
  CHECK(tensor_orders(spec) == Orders{1, 0, 1, 0, 1});
  CHECK(spec.index_vars == Names{"i"});
  // `beta()` and `beta` are the same order-0 tensor.
  CHECK_NOTHROW(parse("y(i) = beta() * x(i) + beta * z(i)"));
}

TEST_CASE("parser: += accumulates") {
  Spec spec = parse("y(i) += A(i,j) * x(j)");
  CHECK(spec.accumulate);
  CHECK(sexpr(*spec.rhs) == "(* A(i,j) x(j))");
  CHECK(spgen::ast::to_string(spec) == "y(i) += A(i,j) * x(j)");
  // `=` does not.
  CHECK_FALSE(parse("y(i) = A(i,j) * x(j)").accumulate);
  // Spacing around the operator does not matter.
  CHECK(parse("y(i)+=x(i)").accumulate);
}

TEST_CASE("parser: a repeated tensor is listed once, at its first use") {
  Spec spec = parse("y(i) = A(i,j) * x(j) * A(i,k) * x(k)");
  CHECK(tensor_names(spec) == Names{"y", "A", "x"});
  CHECK(spec.index_vars == Names{"i", "j", "k"});
  CHECK(spec.find_tensor("A")->first_loc.col == 8);
  CHECK(spec.find_tensor("x")->first_loc.col == 17);
  auto accesses = spgen::ast::collect_accesses(*spec.rhs);
  REQUIRE(accesses.size() == 4);
  CHECK(accesses[0]->tensor == "A");
  CHECK(accesses[1]->tensor == "x");
  CHECK(accesses[2]->tensor == "A");
  CHECK(accesses[2]->indices == Names{"i", "k"});
  CHECK(accesses[3]->tensor == "x");
  CHECK(accesses[3]->loc.col == 33);
}

TEST_CASE("parser: index variables in order of first appearance, left-hand side first") {
  CHECK(parse("y(i) = A(j,i) * x(j)").index_vars == Names{"i", "j"});
  CHECK(parse("C(k,i) = A(i,j) * B(j,k)").index_vars == Names{"k", "i", "j"});
  CHECK(parse("a = B(q,p) * C(p,r) * D(r,q)").index_vars == Names{"q", "p", "r"});
  CHECK(parse("y(i) = 2").index_vars == Names{"i"});
  CHECK(parse("a = 2").index_vars.empty());
}

// ---------------------------------------------------------------------------------------------
// Expressions: unary minus, parentheses, literals, precedence, associativity

TEST_CASE("parser: unary minus binds tighter than * and nests") {
  CHECK(rhs_of("y(i) = -A(i,j) * x(j)") == "(* (neg A(i,j)) x(j))");
  CHECK(rhs_of("y(i) = -(A(i,j) * x(j))") == "(neg (* A(i,j) x(j)))");
  CHECK(rhs_of("y(i) = x(i) - -z(i)") == "(- x(i) (neg z(i)))");
  CHECK(rhs_of("y(i) = --x(i)") == "(neg (neg x(i)))");
  CHECK(rhs_of("y(i) = x(i) * -2") == "(* x(i) (neg 2))");
  Spec spec = parse("y(i) = -x(i)");
  REQUIRE(spec.rhs->kind == ExprKind::Neg);
  CHECK(spec.rhs->loc.col == 8);
  CHECK(spec.rhs->rhs == nullptr);
  REQUIRE(spec.rhs->lhs);
  CHECK(spec.rhs->lhs->kind == ExprKind::Access);
  CHECK(spec.rhs->lhs->loc.col == 9);
}

TEST_CASE("parser: parentheses group and leave no node behind") {
  CHECK(rhs_of("y(i) = ((A(i,j) * (x(j) + z(j))))") == "(* A(i,j) (+ x(j) z(j)))");
  CHECK(rhs_of("y(i) = (((x(i))))") == "x(i)");
  CHECK(parse("y(i) = (((x(i))))").rhs->kind == ExprKind::Access);
  CHECK(rhs_of("y(i) = (x(i) + z(i)) * (w(i) - v(i))") == "(* (+ x(i) z(i)) (- w(i) v(i)))");
  CHECK(rhs_of("y(i) = x(i) - (z(i) - w(i))") == "(- x(i) (- z(i) w(i)))");
  CHECK(rhs_of("y(i) = x(i) / (z(i) * w(i))") == "(/ x(i) (* z(i) w(i)))");
}

TEST_CASE("parser: precedence and left associativity") {
  CHECK(rhs_of("y(i) = a - b - c") == "(- (- a b) c)");
  CHECK(rhs_of("y(i) = a / b * c") == "(* (/ a b) c)");
  CHECK(rhs_of("y(i) = a * b / c") == "(/ (* a b) c)");
  CHECK(rhs_of("y(i) = a / b / c") == "(/ (/ a b) c)");
  CHECK(rhs_of("y(i) = a + b - c + d") == "(+ (- (+ a b) c) d)");
  CHECK(rhs_of("y(i) = a + b * c") == "(+ a (* b c))");
  CHECK(rhs_of("y(i) = a * b + c") == "(+ (* a b) c)");
  CHECK(rhs_of("y(i) = a - b * c / d + e") == "(+ (- a (/ (* b c) d)) e)");
  Spec spec = parse("y(i) = a - b - c");
  REQUIRE(spec.rhs->kind == ExprKind::Sub);
  CHECK(spec.rhs->loc.col == 14);  // the second '-'
  REQUIRE(spec.rhs->lhs->kind == ExprKind::Sub);
  CHECK(spec.rhs->lhs->loc.col == 10);
  CHECK(spec.rhs->rhs->kind == ExprKind::Access);
  CHECK(spec.rhs->rhs->access.tensor == "c");
}

TEST_CASE("parser: numeric literals keep their spelling and value") {
  struct Case {
    const char* spelling;
    double value;
  };
  for (Case c : {Case{"2", 2.0}, Case{"2.5", 2.5}, Case{"1e-3", 1e-3}, Case{".5", 0.5}, Case{"1E+2", 100.0},
                 Case{"3.", 3.0}, Case{"0.25e1", 2.5}, Case{"007", 7.0}, Case{"6e2", 600.0}}) {
    CAPTURE(c.spelling);
    Spec spec = parse(std::string("y(i) = ") + c.spelling + " * x(i)");
    REQUIRE(spec.rhs->kind == ExprKind::Mul);
    const auto& literal = *spec.rhs->lhs;
    REQUIRE(literal.kind == ExprKind::Literal);
    CHECK(literal.literal == c.spelling);
    CHECK(literal.value == doctest::Approx(c.value));
    CHECK(literal.loc.col == 8);
    CHECK(spgen::ast::to_string(spec) == std::string("y(i) = ") + c.spelling + " * x(i)");
  }
  // A literal alone, and literals are not tensors.
  Spec spec = parse("y(i) = 1e-3");
  CHECK(spec.rhs->kind == ExprKind::Literal);
  CHECK(spec.rhs->value == doctest::Approx(0.001));
  CHECK(tensor_names(spec) == Names{"y"});
  CHECK(rhs_of("y(i) = 2 * 3 + .5") == "(+ (* 2 3) .5)");
}

// ---------------------------------------------------------------------------------------------
// Layout: comments, line breaks, tabs

TEST_CASE("parser: comments anywhere") {
  const char* texts[] = {
      "# header\ny(i) = A(i,j) * x(j)",
      "y(i) = A(i,j) * x(j) # trailing, no newline",
      "y(i) = A(i,j) * x(j)# glued\n",
      "y(i) # after the output\n= # after the '='\nA(i,j) # mid\n* x(j)\n# footer\n",
      "# one\n# two\n\n   # indented\ny(i)=A(i,j)*x(j)#\n#",
      "y( # inside the index list\n i ) = A(i, # here too\n j) * x(j)",
      "y(i) = A(i,j) * x(j) # comments may hold anything: @ $ ; = ( \xc3\xa9\n",
  };
  for (const char* text : texts) {
    CAPTURE(text);
    Spec spec = parse(text);
    CHECK(spgen::ast::to_string(spec) == "y(i) = A(i,j) * x(j)");
    CHECK(spec.index_vars == Names{"i", "j"});
    CHECK(tensor_names(spec) == Names{"y", "A", "x"});
  }
}

TEST_CASE("parser: multi-line specs record line and column") {
  Spec spec = parse("# SpMM\n\nC(i,k) =\n    A(i,j)\n  * B(j,k)\n");
  CHECK(spec.output.loc.line == 3);
  CHECK(spec.output.loc.col == 1);
  REQUIRE(spec.rhs->kind == ExprKind::Mul);
  CHECK(spec.rhs->loc.line == 5);
  CHECK(spec.rhs->loc.col == 3);
  const auto& a = spec.rhs->lhs->access;
  CHECK(a.loc.line == 4);
  CHECK(a.loc.col == 5);
  REQUIRE(a.index_locs.size() == 2);
  CHECK(a.index_locs[1].line == 4);
  CHECK(a.index_locs[1].col == 9);
  const auto& b = spec.rhs->rhs->access;
  CHECK(b.loc.line == 5);
  CHECK(b.loc.col == 5);
  CHECK(spgen::ast::to_string(spec) == "C(i,k) = A(i,j) * B(j,k)");
}

TEST_CASE("parser: tabs are whitespace and count as one column") {
  Spec spec = parse("y(i)\n\t=\tA(i,j)\n\t* x(j)\n");
  CHECK(spgen::ast::to_string(spec) == "y(i) = A(i,j) * x(j)");
  const auto& a = spec.rhs->lhs->access;
  CHECK(a.loc.line == 2);
  CHECK(a.loc.col == 4);
  CHECK(spec.rhs->loc.line == 3);
  CHECK(spec.rhs->loc.col == 2);
  CHECK(spec.rhs->rhs->access.loc.col == 4);
  // CRLF line endings are whitespace too.
  CHECK(spgen::ast::to_string(parse("y(i) =\r\n A(i,j) * x(j)\r\n")) == "y(i) = A(i,j) * x(j)");
}

// ---------------------------------------------------------------------------------------------
// to_string round trips

TEST_CASE("parser: to_string normalises and round-trips") {
  struct Case {
    const char* text;
    const char* normal;
  };
  for (Case c : {
           Case{"y(i)=A(i,j)*x(j)", "y(i) = A(i,j) * x(j)"},
           Case{"y( i ) = ( A( i , j ) * x( j ) )", "y(i) = A(i,j) * x(j)"},
           Case{"a() = B(i,j)*C(i,j)", "a = B(i,j) * C(i,j)"},
           Case{"y(i) += 2*x(i)", "y(i) += 2 * x(i)"},
           Case{"y(i) = (x(i) - z(i)) - w(i)", "y(i) = x(i) - z(i) - w(i)"},
           Case{"y(i) = x(i) - (z(i) - w(i))", "y(i) = x(i) - (z(i) - w(i))"},
           Case{"y(i) = x(i) - (z(i) + w(i))", "y(i) = x(i) - (z(i) + w(i))"},
           Case{"y(i) = (x(i) / z(i)) * w(i)", "y(i) = x(i) / z(i) * w(i)"},
           Case{"y(i) = x(i) / (z(i) * w(i))", "y(i) = x(i) / (z(i) * w(i))"},
           Case{"y(i) = x(i) / (z(i) / w(i))", "y(i) = x(i) / (z(i) / w(i))"},
           Case{"y(i) = (x(i) + z(i)) * w(i)", "y(i) = (x(i) + z(i)) * w(i)"},
           Case{"y(i) = x(i) + (z(i) * w(i))", "y(i) = x(i) + z(i) * w(i)"},
           Case{"y(i) = -(x(i) + z(i))", "y(i) = -(x(i) + z(i))"},
           Case{"y(i) = -(x(i) * z(i))", "y(i) = -(x(i) * z(i))"},
           Case{"y(i) = (-x(i)) * z(i)", "y(i) = -x(i) * z(i)"},
           Case{"y(i) = - - x(i)", "y(i) = --x(i)"},
           Case{"y(i) = x(i) - -z(i)", "y(i) = x(i) - -z(i)"},
           Case{"y(i) = 1e-3 * .5 + 2.50", "y(i) = 1e-3 * .5 + 2.50"},
           Case{"A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)"},
       }) {
    CAPTURE(c.text);
    Spec first = parse(c.text);
    std::string printed = spgen::ast::to_string(first);
    CHECK(printed == c.normal);
    Spec second = parse(printed);
    CHECK(spgen::ast::to_string(second) == printed);
    CHECK(sexpr(*second.rhs) == sexpr(*first.rhs));
    CHECK(second.index_vars == first.index_vars);
    CHECK(tensor_names(second) == tensor_names(first));
    CHECK(second.accumulate == first.accumulate);
  }
  Spec spec = parse("y(i) = A(i,j) * x(j)");
  CHECK(spgen::ast::to_string(spec.output) == "y(i)");
  CHECK(spgen::ast::to_string(*spec.rhs) == "A(i,j) * x(j)");
  CHECK(spgen::ast::to_string(spec.rhs->lhs->access) == "A(i,j)");
}

// ---------------------------------------------------------------------------------------------
// Errors: position, message, caret

TEST_CASE("parser error: the diagnostic has the exact layout") {
  CHECK(error_of("y(i) = A(i,j) @ x(j)") ==
        "spec.spg:1:15: error: unexpected character '@'\n"
        "  y(i) = A(i,j) @ x(j)\n"
        "                ^\n");
  CHECK(error_of("y(i) = A(i,j) *") ==
        "spec.spg:1:16: error: expected a tensor, a number or '(', found end of spec\n"
        "  y(i) = A(i,j) *\n"
        "                 ^\n");
}

TEST_CASE("parser error: empty spec") {
  check_error("", 1, 1, "empty spec");
  check_error("   ", 1, 4, "empty spec");
  check_error("# nothing here\n\n", 3, 1, "empty spec: expected an assignment");
  check_error("\n\n  # only a comment", 3, 19, "empty spec");
}

TEST_CASE("parser error: missing '='") {
  check_error("y(i) A(i,j) * x(j)", 1, 6, "expected '=' or '+=' after the output, found a name", 'A');
  check_error("y(i)", 1, 5, "expected '=' or '+=' after the output, found end of spec");
  check_error("y(i) * x(i)", 1, 6, "expected '=' or '+=' after the output, found '*'", '*');
  check_error("y(i) + = x(i)", 1, 6, "found '+'", '+');
  check_error("y(i) == x(i)", 1, 7, "expected a tensor, a number or '(', found '='", '=');
  check_error("= x(i)", 1, 1, "expected the output tensor, found '='", '=');
  check_error("2 = x(i)", 1, 1, "expected the output tensor, found a number", '2');
}

TEST_CASE("parser error: dangling operator") {
  check_error("y(i) = A(i,j) *", 1, 16, "expected a tensor, a number or '(', found end of spec");
  check_error("y(i) = A(i,j) * x(j) +", 1, 23, "found end of spec");
  check_error("y(i) =", 1, 7, "expected a tensor, a number or '(', found end of spec");
  check_error("y(i) = -", 1, 9, "found end of spec");
  check_error("y(i) = A(i,j) * * x(j)", 1, 17, "expected a tensor, a number or '(', found '*'", '*');
  check_error("y(i) = A(i,j) / + x(j)", 1, 17, "found '+'", '+');
  // A spec file ends with a newline (and maybe comments): the caret still points just past the
  // last token, on the line that shows the problem, not at an empty line after it.
  check_error("y(i) = A(i,j) *\n", 1, 16, "found end of spec");
  check_error("# spmv\ny(i) = A(i,j) *   # the rest is missing\n\n# end\n", 2, 16, "found end of spec");
}

TEST_CASE("parser error: unbalanced parentheses") {
  check_error("y(i) = (A(i,j) * x(j)", 1, 22, "expected ')', found end of spec");
  check_error("y(i) = ((A(i,j) * x(j))\n", 1, 24, "expected ')', found end of spec");
  check_error("y(i) = (A(i,j) * x(j) y(i)", 1, 23, "expected ')', found a name", 'y');
  check_error("y(i) = A(i,j) * x(j))", 1, 21, "expected an operator, ';' or end of line, found ')'", ')');
  check_error("y(i) = (A(i,j)) * x(j))", 1, 23, "found ')'", ')');
  check_error("y(i) = ()", 1, 9, "expected a tensor, a number or '(', found ')'", ')');
  check_error("y(i) = A(i,j", 1, 13, "expected ',' or ')' in the index list of A, found end of spec");
  check_error("y(i = x(i)", 1, 5, "expected ',' or ')' in the index list of y, found '='", '=');
  check_error("y(i) = A(i j)", 1, 12, "in the index list of A, found a name", 'j');
}

TEST_CASE("parser error: unknown characters") {
  check_error("y(i) = A(i,j) @ x(j)", 1, 15, "unexpected character '@'", '@');
  check_error("y(i) = A(i,j) ^ x(j)", 1, 15, "unexpected character '^'", '^');
  check_error("y[i] = x[i]", 1, 2, "unexpected character '['", '[');
  check_error("y(i) = x(i) . 2", 1, 13, "unexpected character '.'", '.');
  check_error("y(i) =\t@x(i)", 1, 8, "unexpected character '@'", '@');  // caret keeps the tab
  CHECK(error_of("y(i) =\t@x(i)") ==
        "spec.spg:1:8: error: unexpected character '@'\n"
        "  y(i) =\t@x(i)\n"
        "        \t^\n");
}

TEST_CASE("parser error: a non-ASCII byte") {
  check_error("y(i) = \xc3\xa9(i)", 1, 8, "unexpected character byte 0xc3");
  check_error("y(i) = A(i,j) * x\xce\xb1(j)", 1, 18, "byte 0xce");
  check_error("y(i) = A(i,j) * x(j) \xff", 1, 22, "byte 0xff");
  check_error("y(i) = A(i,j) * x(j) \x01", 1, 22, "byte 0x01");
}

TEST_CASE("parser error: malformed numbers") {
  check_error("y(i) = 1e * x(i)", 1, 8, "malformed number: exponent has no digits", '1');
  check_error("y(i) = 1e+ * x(i)", 1, 8, "exponent has no digits", '1');
  check_error("y(i) = x(i) * 2.5E-", 1, 15, "exponent has no digits", '2');
  check_error("y(i) = 2x(i)", 1, 8, "malformed number: letters directly after digits", '2');
  check_error("y(i) = x(i) * 1.5f", 1, 15, "letters directly after digits", '1');
  check_error("y(i) = 2_0 * x(i)", 1, 8, "letters directly after digits", '2');
  check_error("y(i) = 1e3x", 1, 8, "letters directly after digits", '1');
  check_error("y(i) = 1.2.3", 1, 11, "expected an operator, ';' or end of line, found a number", '.');
}

TEST_CASE("parser error: two assignments on one line") {
  check_error("y(i) = x(i) z = w", 1, 13, "a second assignment on the same line: separate statements with ';' or a line break", 'z');
  check_error("y(i) = x(i) z += w", 1, 13, "a second assignment on the same line", 'z');
  check_error("y(i) = x(i) = w(i)", 1, 13, "expected an operator, ';' or end of line, found '='", '=');
  // A missing operator reads the same, and the message hints at it.
  check_error("y(i) = A(i,j) x(j)", 1, 15, "(missing operator?)", 'x');
  check_error("y(i) = A(i,j) * x(j) 2", 1, 22, "expected an operator, ';' or end of line, found a number", '2');
  // parse_spec takes one statement; parse_program takes several.
  check_error("y(i) = x(i)\nz(i) = w(i)\n", 2, 1, "a spec of several statements is not supported here", 'z');
}

TEST_CASE("parse_program: statements end at ';' or at a line break before a new assignment") {
  const spgen::ast::Program program = spgen::parse_program("spec.spg", "# two\nt(i) = A(i,j) *\n  x(j)\ny(i) = t(i) + 1; z(i) = y(i);;\n");
  REQUIRE(program.statements.size() == 3);
  CHECK(spgen::ast::to_string(program.statements[0]) == "t(i) = A(i,j) * x(j)");
  CHECK(spgen::ast::to_string(program.statements[1]) == "y(i) = t(i) + 1");
  CHECK(spgen::ast::to_string(program.statements[2]) == "z(i) = y(i)");
  CHECK(program.statements[2].output.loc.line == 4);
  CHECK(program.statements[2].output.loc.col == 18);
  // A trailing ';' ends the only statement.
  CHECK(spgen::parse_spec("spec.spg", "y(i) = A(i,j) * x(j);").output.tensor == "y");
}

TEST_CASE("parser error: a tensor used with different orders") {
  check_error("y(i) = A(i,j) * x(j) + A(i)", 1, 24,
              "tensor A is used with 1 indices here but with 2 at line 1, column 8", 'A');
  check_error("y(i) = x(i) * x", 1, 15, "tensor x is used with 0 indices here but with 1 at line 1, column 8", 'x');
  check_error("y(i) =\n  A(i,j) * x(j)\n  + A(i,j,k) * x(k)\n", 3, 5,
              "tensor A is used with 3 indices here but with 2 at line 2, column 3", 'A');
}

TEST_CASE("parser error: the output on the right-hand side") {
  check_error("y(i) = A(i,j) * y(j)", 1, 17, "the output tensor y also appears on the right-hand side", 'y');
  check_error("y(i) += y(i) * 2", 1, 9, "use `+=` to accumulate", 'y');
  check_error("a = a", 1, 5, "the output tensor a also appears", 'a');
  check_error("C(i,k) = A(i,j) * C(j,k)", 1, 19, "the output tensor C also appears on the right-hand side", 'C');
}

TEST_CASE("parser error: a repeated index in one access") {
  check_error("y(i) = A(i,i) * x(i)", 1, 12, "index i appears twice in A(i,i); diagonal access is not supported", 'i');
  check_error("C(i,i) = A(i,j) * B(j,i)", 1, 5, "index i appears twice in C(i,i)", 'i');
  check_error("y(i) = B(i,j,j) * x(j)", 1, 14, "index j appears twice in B(i,j,j)", 'j');
  // The same index in different accesses is what contraction is.
  CHECK_NOTHROW(parse("a = x(i) * x(i)"));
}

TEST_CASE("parser error: a summed index missing from a term of a sum") {
  // Each top-level term is summed over its own indices (TACO's scoped reductions): these parse.
  CHECK_NOTHROW(parse("y(i) = b(i) + A(i,j) * x(j)"));
  CHECK_NOTHROW(parse("y(i) = -A(i,j) * x(j) + (b(i) - c(i)) * 2"));
  CHECK_NOTHROW(parse("y(i) = A(i,j) * x(j) - 3"));
  CHECK_NOTHROW(parse("y(i) = A(i,j) * x(j) + A(i,k) * x(k)"));
  CHECK_NOTHROW(parse("y(i) = -(A(i,j) * x(j) - b(i))"));
  // Inside a product, a sum whose terms lack a summed index would scope it only once multiplied out.
  check_error("a = x(i) * (y(i) + z(j))", 1, 13,
              "the summed index j does not occur in the term y(i) of x(i) * (y(i) + z(j)), so the scope of its sum is "
              "ambiguous", 'y');
  check_error("y(i) = b(i) + 2 * (A(i,j) * x(j) - c(i))", 1, 36, "the summed index j does not occur in the term c(i) of",
              'c');
  check_error("y(i) = b(i) - (x(j) + A(i,k) * z(k)) / 2", 1, 23,
              "the summed index j does not occur in the term A(i,k) * z(k) of (x(j) + A(i,k) * z(k)) / 2", 'A');
  // A factor shared by every term, or a sum the summed index runs through, is unambiguous.
  CHECK_NOTHROW(parse("y(i) = (A(i,j) + b(i)) * x(j)"));
  CHECK_NOTHROW(parse("y(i) = b(i) * (A(i,j) + B(i,j)) * x(j) / 2"));
  CHECK_NOTHROW(parse("A(i,j) = (B(i,j,k) + E(i,j,k)) * c(k)"));
}

TEST_CASE("parser error: reserved names") {
  check_error("for(i) = x(i)", 1, 1,
              "'for' cannot be used as a tensor name: it is reserved (a C++ keyword or an spgen prefix)", 'f');
  check_error("y(int) = x(int)", 1, 3, "'int' cannot be used as an index variable name: it is reserved", 'i');
  check_error("y(i) = spgen_x(i)", 1, 8, "'spgen_x' cannot be used as a tensor name", 's');
  check_error("y(i) = A(i,spgen_j) * x(spgen_j)", 1, 12, "'spgen_j' cannot be used as an index variable name", 's');
  check_error("y(i) = __x(i)", 1, 8, "'__x' cannot be used as a tensor name", '_');
  check_error("y(i) = main(i)", 1, 8, "'main' cannot be used as a tensor name", 'm');
  check_error("y(i) = x(i) * double", 1, 15, "'double' cannot be used as a tensor name", 'd');
  check_error("y(i) = A(i,j)\n  * x(j)\n  * while(j)\n", 3, 5, "'while' cannot be used as a tensor name", 'w');
  // Names that merely contain a keyword or the prefix are fine.
  CHECK_NOTHROW(parse("format(i) = interval(i) * my_spgen(i) * for_each(i)"));
  CHECK_NOTHROW(parse("y(i_) = _x(i_)"));
}

TEST_CASE("parser: function calls are primaries, their arguments whole expressions") {
  CHECK(rhs_of("E(i,j) = exp(S(i,j))") == "(exp S(i,j))");
  CHECK(rhs_of("y(i) = A(i,j) * exp(x(j)) + 2") == "(+ (* A(i,j) (exp x(j))) 2)");
  CHECK(rhs_of("E(i,j) = A(i,j) * max(u(i) + v(j), 0.2 * (u(i) + v(j)))") ==
        "(* A(i,j) (max (+ u(i) v(j)) (* 0.2 (+ u(i) v(j)))))");
  CHECK(rhs_of("y(i) = -min(log(abs(x(i))), sqrt(z(i)))") == "(neg (min (log (abs x(i))) (sqrt z(i))))");
  Spec s = parse("y(i) = exp(A(i,j) * x(j))");
  CHECK(spgen::ast::to_string(s) == "y(i) = exp(A(i,j) * x(j))");
  CHECK(s.index_vars == std::vector<std::string>{"i", "j"});
  // A call is one factor: its variables are in every term it is in (no ambiguous sum scope).
  CHECK_NOTHROW(parse("y(i) = max(A(i,j), b(i)) * x(j)"));
  // A name that merely starts like a function is a tensor.
  CHECK(rhs_of("y(i) = expo(i) * maximum(i)") == "(* expo(i) maximum(i))");
}

TEST_CASE("parser: an explicit reduction is the whole right-hand side") {
  Spec m = parse("m(i) = max(j: S(i,j))");
  CHECK(m.explicit_reduction);
  CHECK(m.reduction == spgen::ast::Reduction::Max);
  CHECK(m.reduced_vars == std::vector<std::string>{"j"});
  CHECK(sexpr(*m.rhs) == "S(i,j)");
  CHECK(spgen::ast::to_string(m) == "m(i) = max(j: S(i,j))");
  Spec two = parse("s = min(i, j: A(i,j) * exp(x(j)))");
  CHECK(two.reduction == spgen::ast::Reduction::Min);
  CHECK(two.reduced_vars == std::vector<std::string>{"i", "j"});
  CHECK(spgen::ast::to_string(two) == "s = min(i, j: A(i,j) * exp(x(j)))");
  Spec sum = parse("y(i) = sum(j: A(i,j) * x(j))");
  CHECK(sum.reduction == spgen::ast::Reduction::Sum);
  CHECK(sexpr(*sum.rhs) == "(* A(i,j) x(j))");
  // max of two scalar tensors is the function, not a reduction.
  CHECK(rhs_of("y = max(a, b)") == "(max a b)");
  CHECK(!parse("y = max(a, b)").explicit_reduction);
}

TEST_CASE("parse_program: a reduction inside an expression is a statement of its own, into a temporary") {
  const spgen::ast::Program program =
      spgen::parse_program("spec.spg", "E(i,j) = exp(S(i,j) - max(j: S(i,j))) / sum(j: exp(S(i,j) - max(j: S(i,j))))\nm(i) = max(j: S(i,j)) + 1\n");
  REQUIRE(program.statements.size() == 4);
  CHECK(spgen::ast::to_string(program.statements[0]) == "max_1_23(i) = max(j: S(i,j))");
  // The same reduction again reads the same temporary.
  CHECK(spgen::ast::to_string(program.statements[1]) == "sum_1_41(i) = sum(j: exp(S(i,j) - max_1_23(i)))");
  CHECK(spgen::ast::to_string(program.statements[2]) == "E(i,j) = exp(S(i,j) - max_1_23(i)) / sum_1_41(i)");
  // (and so does a later statement's)
  CHECK(spgen::ast::to_string(program.statements[3]) == "m(i) = max_1_23(i) + 1");
  CHECK(program.lifted == std::vector<std::string>{"max_1_23", "sum_1_41"});
  // The whole right-hand side is the statement's own reduction, as before.
  CHECK(spgen::parse_program("spec.spg", "m(i) = max(j: S(i,j))").statements.size() == 1);
  // A sum binds its own indices: y(i) = x(i) / |x|.
  const spgen::ast::Program norm = spgen::parse_program("spec.spg", "y(i) = x(i) / sqrt(sum(i: x(i) * x(i)))");
  REQUIRE(norm.statements.size() == 2);
  CHECK(spgen::ast::to_string(norm.statements[0]) == "sum_1_20 = sum(i: x(i) * x(i))");
  // Errors inside a lifted reduction point into the statement as written.
  check_error("y(i) = x(i) + max(k: S(i,j))", 1, 19, "index k of max(...) does not occur in its expression", 'k');
}

TEST_CASE("parser error: explicit reductions") {
  check_error("y(i) = exp(j: S(i,j))", 1, 8, "exp is a function of one value, not a reduction", 'e');
  check_error("m(i) = max(i: S(i,j))", 1, 12, "index i is an index of the output m, so max cannot reduce it", 'i');
  check_error("m(i) = max(k: S(i,j))", 1, 12, "index k of max(...) does not occur in its expression", 'k');
  check_error("m(i) = max(j, j: S(i,j))", 1, 15, "index j is reduced twice", 'j');
  check_error("m(i) += max(j: S(i,j))", 1, 1, "a max reduction cannot accumulate into its output (`+=`)", 'm');
  check_error("m(i) = max(j: A(i,j) * B(j,k))", 1, 12, "index k is neither an index of the output nor reduced by max(...)", 'j');
  check_error("m(i) = min(j: A(i,j) + b(i))", 1, 24, "the term b(i) does not use every index min reduces", 'b');
  check_error("m(i) = max(j: S(i,j)", 1, 21, "expected ')' after the expression of max(j: ...)", 0);
}

TEST_CASE("parser error: function calls") {
  check_error("y(i) = foo(x(i))", 1, 8, "unknown function foo (the functions are exp, log, sqrt, abs, max and min", 'f');
  check_error("y(i) = foo(2 * x(i))", 1, 8, "unknown function foo", 'f');
  check_error("y(i) = relu(x(i) + 1)", 1, 8, "unknown function relu", 'r');
  check_error("y(i) = max(x(i))", 1, 16, "max takes two arguments", ')');
  check_error("y(i) = exp(x(i), 2)", 1, 16, "exp takes one argument", ',');
  check_error("y(i) = sum(A(i,j) * x(j))", 1, 8, "sum is a reduction, `sum(j: ...)`, naming the indices it sums", 's');
  check_error("y(i) = exp(x(i)", 1, 16, "expected ')' after the argument of exp", 0);
  check_error("exp(i) = x(i)", 1, 1, "'exp' cannot be used as a tensor name: it is a function of the spec language", 'e');
  check_error("y(i) = A(i,max) * x(max)", 1, 12, "'max' cannot be used as an index variable name", 'm');
  check_error("y(i) = x(i) * log", 1, 15, "'log' cannot be used as a tensor name", 'l');
}

TEST_CASE("parser error: a name used as a tensor and as an index") {
  check_error("y(i) = A(i,j) * j(j)", 1, 17, "'j' is used both as a tensor and as an index variable", 'j');
  check_error("i(i) = x(i)", 1, 1, "'i' is used both as a tensor and as an index variable", 'i');
  check_error("y(i) = A(i,A)", 1, 8, "'A' is used both as a tensor and as an index variable", 'A');
  check_error("y(i) = x(i) * k\n  * B(i,k)", 1, 15, "'k' is used both", 'k');
}

TEST_CASE("parser error: bad index lists") {
  check_error("y(i) = A(i,) * x(i)", 1, 12, "expected an index variable, found ')'", ')');
  check_error("y(i) = A(,i) * x(i)", 1, 10, "expected an index variable, found ','", ',');
  check_error("y(i) = A(i,,j) * x(j)", 1, 12, "expected an index variable, found ','", ',');
  check_error("y(1) = x(i)", 1, 3, "expected an index variable, found a number", '1');
  check_error("y(i) = A(i,(j)) * x(j)", 1, 12, "expected an index variable, found '('", '(');
  check_error("y(i,) = x(i)", 1, 5, "expected an index variable, found ')'", ')');
}

TEST_CASE("parser error: expressions too deep or too long for the passes that recurse over them") {
  // (the fuzzer's stack overflow: thousands of parentheses)
  const std::string deep = "y(i) = " + std::string(65, '(') + "x(i)" + std::string(65, ')');
  check_error(deep, 1, 72, "the expression nests parentheses and minus signs more than 64 deep", '(');
  CHECK_NOTHROW(parse_spec("t.spg", "y(i) = " + std::string(64, '(') + "x(i)" + std::string(64, ')') + "\n"));
  check_error("y(i) = " + std::string(65, '-') + "x(i)", 1, 72, "the expression nests parentheses and minus signs more than 64 deep", '-');
  std::string chain = "y(i) = x(i)";
  for (int k = 0; k < 257; ++k) chain += " * x(i)";
  check_error(chain, 1, 1805, "the right-hand side has more than 256 operators", '*');
  // A product of sums multiplies out to 2^13 products: more than the passes enumerate.
  std::string product = "y(i) = (a(i) + b(i))";
  for (int k = 1; k < 13; ++k) product += " * (a(i) + b(i))";
  CHECK(error_of(product).find("error: the right-hand side expands into more than 4096 products of operands") != std::string::npos);
  product.resize(product.rfind(" * "));  // 2^12: accepted
  CHECK_NOTHROW(parse_spec("t.spg", product + "\n"));
}

TEST_CASE("parser error: errors on line 3 of a multi-line spec") {
  check_error("# SpMV\n# with a typo\ny(i) = A(i,j) * @x(j)\n", 3, 17, "unexpected character '@'", '@');
  check_error("# SpMV\ny(i) =\n    A(i,j) * x(j) *\n", 3, 20, "found end of spec");
  check_error("y(i) =\n  A(i,j)\n\t* x(j))\n", 3, 8, "expected an operator, ';' or end of line, found ')'", ')');
  check_error("y(i) =\n  A(i,j)\n  * x(j,)\n", 3, 9, "expected an index variable", ')');
  check_error("y(i) =\n  A(i,j) * x(j)\n  + A(i,i)\n", 3, 9, "index i appears twice", 'i');
  check_error("y(i) =\n  A(i,j) * x(j)\n  + y(i)\n", 3, 5, "the output tensor y also appears", 'y');
  check_error("y(i) =\n  A(i,j) * x(j)\n  + 3e * z(i)\n", 3, 5, "exponent has no digits", '3');
  // The caret line for a tab-indented third line.
  CHECK(error_of("y(i) =\n\tA(i,j)\n\t\t* @x(j)\n") ==
        "spec.spg:3:5: error: unexpected character '@'\n"
        "  \t\t* @x(j)\n"
        "  \t\t  ^\n");
}

// ast::distributed_terms: products of sums multiplied out where every product sums alike.
TEST_CASE("distributed terms: products of sums are multiplied out, with their signs") {
  auto terms = [](const std::string& text) {
    Spec spec = parse(text);
    std::vector<std::string> out;
    for (const spgen::ast::SignedTerm& t : spgen::ast::distributed_terms(spec.rhs, spec.output.indices))
      out.push_back((t.negated ? "-" : "+") + sexpr(*t.expr));
    return out;
  };
  CHECK(terms("C(i,j) = A(i,j) * (B(i,j) - D(i,j))") == std::vector<std::string>{"+(* A(i,j) B(i,j))", "-(* A(i,j) D(i,j))"});
  CHECK(terms("C(i,j) = -(A(i,j) + B(i,j)) * (D(i,j) - E(i,j))") ==
        std::vector<std::string>{"-(* A(i,j) D(i,j))", "+(* A(i,j) E(i,j))", "-(* B(i,j) D(i,j))", "+(* B(i,j) E(i,j))"});
  // A quotient's numerator is multiplied out, never its divisor.
  CHECK(terms("C(i,j) = (A(i,j) + B(i,j)) / (D(i,j) + 2)") ==
        std::vector<std::string>{"+(/ A(i,j) (+ D(i,j) 2))", "+(/ B(i,j) (+ D(i,j) 2))"});
  // (A product whose parts would sum over other indices than it does would stay whole, but the
  // parser refuses such a product already: the scope of its sum is ambiguous.)
  CHECK(terms("C(i,k) = A(i,j) * (B(j,k) + D(j,k)) + E(i,k)") ==
        std::vector<std::string>{"+(* A(i,j) B(j,k))", "+(* A(i,j) D(j,k))", "+E(i,k)"});
  // More than 32 terms: whole.
  CHECK(terms("C(i) = (a(i) + b(i)) * (a(i) + b(i)) * (a(i) + b(i)) * (a(i) + b(i)) * (a(i) + b(i)) * (a(i) + b(i))").size() == 1);
}
