#include "frontend/parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>
#include <set>

namespace spgen {
namespace {

enum class Tok { Ident, Number, LParen, RParen, Comma, Colon, Semicolon, Assign, PlusAssign, Plus, Minus, Star, Slash, End };

struct Token {
  Tok kind;
  std::string text;
  SourceLoc loc;
};

const char* describe(Tok kind) {
  switch (kind) {
    case Tok::Ident: return "a name";
    case Tok::Number: return "a number";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::Comma: return "','";
    case Tok::Colon: return "':'";
    case Tok::Semicolon: return "';'";
    case Tok::Assign: return "'='";
    case Tok::PlusAssign: return "'+='";
    case Tok::Plus: return "'+'";
    case Tok::Minus: return "'-'";
    case Tok::Star: return "'*'";
    case Tok::Slash: return "'/'";
    case Tok::End: return "end of spec";
  }
  return "?";
}

class Lexer {
 public:
  Lexer(const std::string& file, const std::string& text) : file_(file), text_(text) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    SourceLoc after_last_token{1, 1};
    for (;;) {
      skip_space_and_comments();
      SourceLoc loc{line_, col_};
      if (at_ >= text_.size()) {
        // "found end of spec" points just past the last token, not at the (usually empty)
        // line after the file's trailing newline or comments.
        tokens.push_back({Tok::End, "", tokens.empty() ? loc : after_last_token});
        return tokens;
      }
      char c = text_[at_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        tokens.push_back({Tok::Ident, take_while([](char x) {
                            return std::isalnum(static_cast<unsigned char>(x)) || x == '_';
                          }),
                          loc});
      } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && next_is_digit())) {
        tokens.push_back({Tok::Number, take_number(), loc});
      } else if (c == '+' && peek(1) == '=') {
        advance(2);
        tokens.push_back({Tok::PlusAssign, "+=", loc});
      } else {
        Tok kind = single_char_token(c, loc);
        advance(1);
        tokens.push_back({kind, std::string(1, c), loc});
      }
      after_last_token = {line_, col_};
    }
  }

 private:
  Tok single_char_token(char c, SourceLoc loc) const {
    switch (c) {
      case '(': return Tok::LParen;
      case ')': return Tok::RParen;
      case ',': return Tok::Comma;
      case ':': return Tok::Colon;
      case ';': return Tok::Semicolon;
      case '=': return Tok::Assign;
      case '+': return Tok::Plus;
      case '-': return Tok::Minus;
      case '*': return Tok::Star;
      case '/': return Tok::Slash;
      default: break;
    }
    std::string shown = std::isprint(static_cast<unsigned char>(c))
                            ? std::string("'") + c + "'"
                            : "byte 0x" + hex(static_cast<unsigned char>(c));
    throw CompileError(format_source_error(file_, text_, loc, "unexpected character " + shown));
  }

  static std::string hex(unsigned value) {
    const char* digits = "0123456789abcdef";
    return {digits[value >> 4], digits[value & 15]};
  }

  char peek(size_t ahead) const { return at_ + ahead < text_.size() ? text_[at_ + ahead] : '\0'; }
  bool next_is_digit() const { return std::isdigit(static_cast<unsigned char>(peek(1))) != 0; }

  void advance(size_t count) {
    for (size_t i = 0; i < count && at_ < text_.size(); ++i, ++at_) {
      if (text_[at_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }

  void skip_space_and_comments() {
    while (at_ < text_.size()) {
      char c = text_[at_];
      if (c == '#') {
        while (at_ < text_.size() && text_[at_] != '\n') advance(1);
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        advance(1);
      } else {
        return;
      }
    }
  }

  template <class Pred>
  std::string take_while(Pred pred) {
    size_t begin = at_;
    while (at_ < text_.size() && pred(text_[at_])) advance(1);
    return text_.substr(begin, at_ - begin);
  }

  // digits [. digits] [e [+-] digits]
  std::string take_number() {
    SourceLoc loc{line_, col_};
    size_t begin = at_;
    auto digits = [this] {
      size_t start = at_;
      while (std::isdigit(static_cast<unsigned char>(peek(0)))) advance(1);
      return at_ - start;
    };
    digits();
    if (peek(0) == '.') {
      advance(1);
      digits();
    }
    if (peek(0) == 'e' || peek(0) == 'E') {
      advance(1);
      if (peek(0) == '+' || peek(0) == '-') advance(1);
      if (digits() == 0)
        throw CompileError(format_source_error(file_, text_, loc, "malformed number: exponent has no digits"));
    }
    if (std::isalpha(static_cast<unsigned char>(peek(0))) || peek(0) == '_')
      throw CompileError(format_source_error(file_, text_, loc, "malformed number: letters directly after digits"));
    return text_.substr(begin, at_ - begin);
  }

  const std::string& file_;
  const std::string& text_;
  size_t at_ = 0;
  int line_ = 1, col_ = 1;
};

class Parser {
 public:
  Parser(const std::string& file, const std::string& text, std::vector<Token> tokens)
      : file_(file), text_(text), tokens_(std::move(tokens)) {}

  // The statements, in order: each ends at a ';' or where a line break is followed by what
  // cannot continue its expression.
  std::vector<ast::Spec> run() {
    if (peek().kind == Tok::End) fail(peek().loc, "empty spec: expected an assignment such as `y(i) = A(i,j) * x(j)`");
    std::vector<ast::Spec> statements;
    while (peek().kind != Tok::End) {
      if (statements.size() == kMaxStatements)
        fail(peek().loc, "the spec has more than " + std::to_string(kMaxStatements) + " statements");
      ast::Spec statement = parse_statement();
      // The reductions inside its expression first, each a statement of its own.
      for (ast::Spec& reduction : lifted_) statements.push_back(std::move(reduction));
      lifted_.clear();
      statements.push_back(std::move(statement));
      if (peek().kind == Tok::Semicolon) {
        while (peek().kind == Tok::Semicolon) next();
      } else if (peek().kind != Tok::End && peek().loc.line == tokens_[at_ - 1].loc.line) {
        if (peek().kind == Tok::Ident && (peek_at(1).kind == Tok::LParen || peek_at(1).kind == Tok::Assign ||
                                          peek_at(1).kind == Tok::PlusAssign))
          fail(peek().loc, "a second assignment on the same line: separate statements with ';' or a line break (missing operator?)");
        fail(peek().loc, std::string("expected an operator, ';' or end of line, found ") + describe(peek().kind));
      }
    }
    return statements;
  }

  [[noreturn]] void fail(SourceLoc loc, const std::string& message) const {
    throw CompileError(format_source_error(file_, text_, loc, message));
  }

  // The names of the temporaries that hold reductions inside expressions, in order.
  const std::vector<std::string>& lifted_names() const { return lifted_names_; }

 private:
  static constexpr size_t kMaxStatements = 64;

  ast::Spec parse_statement() {
    ast::Spec spec;
    spec.file = file_;
    spec.text = text_;
    operators_ = 0;
    spec.output = parse_access("the output tensor");
    if (peek().kind == Tok::Assign || peek().kind == Tok::PlusAssign) {
      spec.accumulate = next().kind == Tok::PlusAssign;
    } else {
      fail(peek().loc, std::string("expected '=' or '+=' after the output, found ") + describe(peek().kind));
    }
    const bool whole_reduction = at_reduction();
    spec.rhs = parse_sum();
    // A reduction that is the whole right-hand side is the statement's own: no temporary (and
    // its indices are checked against the output's, SpecChecker).
    if (whole_reduction && !lifted_.empty() && spec.rhs->kind == ast::ExprKind::Access &&
        spec.rhs->access.tensor == lifted_.back().output.tensor) {
      ast::Spec own = std::move(lifted_.back());
      lifted_.pop_back();
      spec.reduction = own.reduction;
      spec.reduced_vars = std::move(own.reduced_vars);
      spec.reduced_var_locs = std::move(own.reduced_var_locs);
      spec.explicit_reduction = true;
      spec.rhs = own.rhs;
    }
    return spec;
  }

  // `sum(`, `max(` or `min(` then index variables and a colon: `max(j, k: ...)`.
  bool at_reduction() const {
    if (peek().kind != Tok::Ident || peek_at(1).kind != Tok::LParen) return false;
    return (peek().text == "sum" || peek().text == "max" || peek().text == "min") && reduction_vars_at(2);
  }

  void parse_reduction(ast::Spec& spec) {
    const Token name = next();
    spec.reduction = name.text == "max" ? ast::Reduction::Max : name.text == "min" ? ast::Reduction::Min : ast::Reduction::Sum;
    spec.explicit_reduction = true;
    next();  // '('
    for (;;) {
      const Token var = expect(Tok::Ident, "an index variable");
      if (std::find(spec.reduced_vars.begin(), spec.reduced_vars.end(), var.text) != spec.reduced_vars.end())
        fail(var.loc, "index " + var.text + " is reduced twice");
      spec.reduced_vars.push_back(var.text);
      spec.reduced_var_locs.push_back(var.loc);
      if (next().kind == Tok::Colon) break;
    }
    spec.rhs = parse_sum();
    expect(Tok::RParen, "')' after the expression of " + name.text + "(" + spec.reduced_vars.front() + ": ...)");
  }

  // A reduction inside an expression (`exp(S(i,j) - max(j: S(i,j)))`): a statement of its own,
  // before the one that reads it, into a dense temporary over the indices of its expression that
  // it does not reduce (in order of appearance), named after its place (`max_1_18`); the
  // expression reads that temporary.
  ast::ExprPtr lift_reduction() {
    const Token name = peek();
    const Nesting nested(*this, name);
    count_operator(name);
    ast::Spec lifted;
    lifted.file = file_;
    lifted.text = text_;
    parse_reduction(lifted);
    ast::Access& out = lifted.output;
    out.tensor = name.text + "_" + std::to_string(name.loc.line) + "_" + std::to_string(name.loc.col);
    out.loc = name.loc;
    for (const ast::Access* access : ast::collect_accesses(*lifted.rhs))
      for (const std::string& var : access->indices)
        if (std::find(lifted.reduced_vars.begin(), lifted.reduced_vars.end(), var) == lifted.reduced_vars.end() &&
            std::find(out.indices.begin(), out.indices.end(), var) == out.indices.end()) {
          out.indices.push_back(var);
          out.index_locs.push_back(name.loc);
        }
    // The same reduction written again (a softmax's max in its numerator and its denominator)
    // reads the first one's temporary (tensors are written once, so it still holds that value).
    std::string key = std::string(ast::reduction_name(lifted.reduction)) + "(";
    for (const std::string& var : lifted.reduced_vars) key += var + ",";
    key += ": " + ast::to_string(*lifted.rhs) + ")";
    for (const std::string& var : out.indices) key += " " + var;
    if (auto same = lifted_by_key_.find(key); same != lifted_by_key_.end()) {
      out.tensor = same->second;
      return ast::make_access(out);
    }
    lifted_by_key_[key] = out.tensor;
    lifted_names_.push_back(out.tensor);
    lifted_.push_back(lifted);
    return ast::make_access(out);
  }

  // Index variables separated by commas, then a colon, `ahead` tokens on (a reduction's `j, k:`).
  bool reduction_vars_at(size_t ahead) const {
    for (;; ahead += 2) {
      if (peek_at(ahead).kind != Tok::Ident) return false;
      if (peek_at(ahead + 1).kind == Tok::Colon) return true;
      if (peek_at(ahead + 1).kind != Tok::Comma) return false;
    }
  }

  const Token& peek() const { return tokens_[at_]; }
  const Token& peek_at(size_t ahead) const { return tokens_[std::min(at_ + ahead, tokens_.size() - 1)]; }
  Token next() { return tokens_[at_ < tokens_.size() - 1 ? at_++ : at_]; }

  Token expect(Tok kind, const std::string& what) {
    if (peek().kind != kind)
      fail(peek().loc, "expected " + what + ", found " + describe(peek().kind));
    return next();
  }

  ast::Access parse_access(const std::string& what) {
    Token name = expect(Tok::Ident, what);
    ast::Access access;
    access.tensor = name.text;
    access.loc = name.loc;
    if (peek().kind != Tok::LParen) return access;  // order-0 tensor (scalar)
    next();
    if (peek().kind == Tok::RParen) {
      next();
      return access;
    }
    for (;;) {
      Token index = expect(Tok::Ident, "an index variable");
      access.indices.push_back(index.text);
      access.index_locs.push_back(index.loc);
      if (peek().kind == Tok::Comma) {
        next();
        continue;
      }
      expect(Tok::RParen, "',' or ')' in the index list of " + access.tensor);
      return access;
    }
  }

  // Bounds on the expression's tree, whose passes recurse over it: nested parentheses and
  // unary minus, and operators in all (a kernel is a few terms; the fuzzer found a stack
  // overflow on thousands of parentheses).
  static constexpr int kMaxNesting = 64;
  static constexpr int kMaxOperators = 256;

  void count_operator(const Token& op) {
    if (++operators_ > kMaxOperators)
      fail(op.loc, "the right-hand side has more than " + std::to_string(kMaxOperators) + " operators");
  }

  struct Nesting {
    Parser& parser;
    Nesting(Parser& p, const Token& at) : parser(p) {
      if (++parser.nesting_ > kMaxNesting)
        parser.fail(at.loc, "the expression nests parentheses and minus signs more than " + std::to_string(kMaxNesting) + " deep");
    }
    ~Nesting() { --parser.nesting_; }
  };

  ast::ExprPtr parse_sum() {
    ast::ExprPtr left = parse_product();
    while (peek().kind == Tok::Plus || peek().kind == Tok::Minus) {
      Token op = next();
      count_operator(op);
      left = ast::make_operator(op.kind == Tok::Plus ? ast::ExprKind::Add : ast::ExprKind::Sub, op.loc, left, parse_product());
    }
    return left;
  }

  ast::ExprPtr parse_product() {
    ast::ExprPtr left = parse_unary();
    while (peek().kind == Tok::Star || peek().kind == Tok::Slash) {
      Token op = next();
      count_operator(op);
      left = ast::make_operator(op.kind == Tok::Star ? ast::ExprKind::Mul : ast::ExprKind::Div, op.loc, left, parse_unary());
    }
    return left;
  }

  ast::ExprPtr parse_unary() {
    if (peek().kind == Tok::Minus) {
      Token op = next();
      count_operator(op);
      const Nesting nested(*this, op);
      return ast::make_operator(ast::ExprKind::Neg, op.loc, parse_unary());
    }
    return parse_primary();
  }

  ast::ExprPtr parse_primary() {
    const Token& token = peek();
    auto node = std::make_shared<ast::Expr>();
    node->loc = token.loc;
    switch (token.kind) {
      case Tok::Number: {
        Token number = next();
        node->kind = ast::ExprKind::Literal;
        node->literal = number.text;
        node->value = std::strtod(number.text.c_str(), nullptr);
        return node;
      }
      case Tok::Ident: {
        ast::Function function;
        if (at_reduction()) return lift_reduction();
        if (peek_at(1).kind == Tok::LParen && ast::function_named(token.text, function)) return parse_call(function);
        if (peek_at(1).kind == Tok::LParen && token.text == "sum")
          fail(token.loc, "sum is a reduction, `sum(j: ...)`, naming the indices it sums; "
                          "an index absent from the output is summed anyway");
        // `foo(x(i))`, `foo(2 * x)`: a call of something that is no function of the language.
        const Tok first = peek_at(2).kind;
        if (peek_at(1).kind == Tok::LParen && (first == Tok::Number || first == Tok::LParen || first == Tok::Minus ||
                                               (first == Tok::Ident && peek_at(3).kind == Tok::LParen)))
          fail(token.loc, "unknown function " + token.text + " (the functions are exp, log, sqrt, abs, max and min, and the "
                          "reductions sum, max and min(j: ...)); a tensor's indices are index variables");
        node->kind = ast::ExprKind::Access;
        node->access = parse_access("a tensor");
        return node;
      }
      case Tok::LParen: {
        const Nesting nested(*this, next());
        ast::ExprPtr inner = parse_sum();
        expect(Tok::RParen, "')'");
        return inner;
      }
      default:
        fail(token.loc, std::string("expected a tensor, a number or '(', found ") + describe(token.kind));
    }
  }

  // exp(e), log(e), sqrt(e), abs(e), max(a, b), min(a, b).
  ast::ExprPtr parse_call(ast::Function function) {
    const Token name = next();
    const Nesting nested(*this, next());  // '('
    count_operator(name);
    const std::string called = std::string(ast::function_name(function));
    if (reduction_vars_at(0) && ast::function_arity(function) == 1)
      fail(name.loc, called + " is a function of one value, not a reduction");
    ast::ExprPtr first = parse_sum();
    ast::ExprPtr second;
    if (peek().kind == Tok::Comma) {
      if (ast::function_arity(function) != 2) fail(peek().loc, called + " takes one argument");
      next();
      second = parse_sum();
    } else if (ast::function_arity(function) == 2) {
      fail(peek().loc, called + " takes two arguments, `" + called + "(a, b)`; expected ','" + ", found " + describe(peek().kind));
    }
    expect(Tok::RParen, "')' after the argument" + std::string(second ? "s" : "") + " of " + called);
    return ast::make_call(function, name.loc, first, second);
  }

  const std::string& file_;
  const std::string& text_;
  std::vector<Token> tokens_;
  size_t at_ = 0;
  int nesting_ = 0, operators_ = 0;
  std::vector<ast::Spec> lifted_;  // the reductions inside the statement being parsed
  std::vector<std::string> lifted_names_;
  std::map<std::string, std::string> lifted_by_key_;  // a lifted reduction's text -> its temporary
};

// Records tensors and index variables in order of first appearance and rejects what the
// compiler cannot give a meaning to.
class SpecChecker {
 public:
  SpecChecker(ast::Spec& spec, const Parser& parser) : spec_(spec), parser_(parser) {}

  void run() {
    record_access(spec_.output, /*is_output=*/true);
    for (const ast::Access* access : ast::collect_accesses(*spec_.rhs)) {
      if (access->tensor == spec_.output.tensor)
        parser_.fail(access->loc, "the output tensor " + access->tensor +
                                      " also appears on the right-hand side; use `+=` to accumulate into it");
      record_access(*access, /*is_output=*/false);
    }
    for (const ast::TensorUse& tensor : spec_.tensors)
      if (std::find(spec_.index_vars.begin(), spec_.index_vars.end(), tensor.name) != spec_.index_vars.end())
        parser_.fail(tensor.first_loc, "'" + tensor.name + "' is used both as a tensor and as an index variable");
    check_summed_in_every_term();
    check_reduction();
    if (combinations(*spec_.rhs) > kMaxCombinations)
      parser_.fail(spec_.rhs->loc, "the right-hand side expands into more than " + std::to_string(kMaxCombinations) +
                                       " products of operands (products of sums, multiplied out); the passes "
                                       "that co-iterate the operands enumerate them");
  }

 private:
  // The terms the right-hand side multiplies out to, without merging alike ones (an upper
  // bound, saturated past the limit): the iteration space lists them, and the fuzzer found a
  // product of sums whose thousands of combinations took seconds.
  static constexpr size_t kMaxCombinations = 4096;

  static size_t combinations(const ast::Expr& expr) {
    switch (expr.kind) {
      case ast::ExprKind::Access:
      case ast::ExprKind::Call:  // (one factor: a call is never multiplied out)
      case ast::ExprKind::Literal: return 1;
      case ast::ExprKind::Neg:
      case ast::ExprKind::Div: return combinations(*expr.lhs);
      case ast::ExprKind::Mul: return std::min(combinations(*expr.lhs) * combinations(*expr.rhs), kMaxCombinations + 1);
      case ast::ExprKind::Add:
      case ast::ExprKind::Sub: return std::min(combinations(*expr.lhs) + combinations(*expr.rhs), kMaxCombinations + 1);
    }
    return 1;
  }

  // The index variables of an expression: those of every term it expands to (products
  // distributed over sums), and those of some term.
  struct TermVars {
    std::set<std::string> every, some;
  };

  static TermVars term_vars(const ast::Expr& expr) {
    switch (expr.kind) {
      case ast::ExprKind::Access: {
        std::set<std::string> vars(expr.access.indices.begin(), expr.access.indices.end());
        return {vars, vars};
      }
      case ast::ExprKind::Literal: return {};
      case ast::ExprKind::Call: {  // one factor: every variable inside it is in every term it is in
        std::set<std::string> vars;
        for (const ast::Access* access : ast::collect_accesses(expr)) vars.insert(access->indices.begin(), access->indices.end());
        return {vars, vars};
      }
      case ast::ExprKind::Neg: return term_vars(*expr.lhs);
      case ast::ExprKind::Mul:
      case ast::ExprKind::Div: {
        TermVars l = term_vars(*expr.lhs), r = term_vars(*expr.rhs);
        l.every.insert(r.every.begin(), r.every.end());
        l.some.insert(r.some.begin(), r.some.end());
        return l;
      }
      case ast::ExprKind::Add:
      case ast::ExprKind::Sub: {
        TermVars l = term_vars(*expr.lhs), r = term_vars(*expr.rhs);
        std::set<std::string> both;
        for (const std::string& var : l.every)
          if (r.every.count(var)) both.insert(var);
        l.every = both;
        l.some.insert(r.some.begin(), r.some.end());
        return l;
      }
    }
    return {};
  }

  // The largest part of `expr` that adds a term without `var` (its every and some lack it).
  static const ast::Expr& term_without(const ast::Expr& expr, const std::string& var) {
    if (expr.kind == ast::ExprKind::Access || expr.kind == ast::ExprKind::Literal || expr.kind == ast::ExprKind::Call) return expr;
    if (expr.kind == ast::ExprKind::Neg) return term_without(*expr.lhs, var);
    for (const ast::ExprPtr& side : {expr.lhs, expr.rhs}) {
      TermVars vars = term_vars(*side);
      if (vars.every.count(var)) continue;
      if (!vars.some.count(var) && (expr.kind == ast::ExprKind::Add || expr.kind == ast::ExprKind::Sub)) return *side;
      if (vars.some.count(var)) return term_without(*side, var);
    }
    return expr;
  }

  // Where an expression's text begins (inside any parentheses around its first operand).
  static SourceLoc leftmost(const ast::Expr& expr) {
    if (expr.kind == ast::ExprKind::Access) return expr.access.loc;
    if (expr.kind == ast::ExprKind::Literal || expr.kind == ast::ExprKind::Neg || expr.kind == ast::ExprKind::Call) return expr.loc;
    return leftmost(*expr.lhs);
  }

  // A top-level term is summed over the index variables it uses that the output lacks (TACO's
  // scoped reductions: passes/split_sum.cpp gives each set its own loop nest). Inside a term, a
  // sum whose terms lack one of those (`x(i) * (y(i) + z(j))`) would scope it only after the
  // product is multiplied out, so it is rejected here.
  void check_summed_in_every_term() const {
    for (const ast::SignedTerm& top : ast::top_level_terms(spec_.rhs)) {
      TermVars vars = term_vars(*top.expr);
      for (const std::string& var : spec_.index_vars) {
        if (spec_.is_output_var(var) || !vars.some.count(var) || vars.every.count(var)) continue;
        const ast::Expr& term = term_without(*top.expr, var);
        parser_.fail(leftmost(term), "the summed index " + var + " does not occur in the term " + ast::to_string(term) +
                                   " of " + ast::to_string(*top.expr) + ", so the scope of its sum is ambiguous (would the "
                                   "term be added once, or once per " + var + "?); multiply the product out into top-level "
                                   "terms, each summed over the indices it uses, or use " + var + " in every term");
      }
    }
  }

  // An explicit reduction reduces index variables of its expression that the output lacks; max and
  // min reduce every such variable (nothing is summed inside them), in every term, and replace
  // rather than add (no `+=`).
  void check_reduction() const {
    if (!spec_.explicit_reduction) return;
    const char* name = ast::reduction_name(spec_.reduction);
    std::set<std::string> used;
    for (const ast::Access* access : ast::collect_accesses(*spec_.rhs)) used.insert(access->indices.begin(), access->indices.end());
    for (size_t v = 0; v < spec_.reduced_vars.size(); ++v) {
      const std::string& var = spec_.reduced_vars[v];
      if (spec_.is_output_var(var))
        parser_.fail(spec_.reduced_var_locs[v], "index " + var + " is an index of the output " + spec_.output.tensor + ", so " + name +
                                                    " cannot reduce it");
      if (!used.count(var)) parser_.fail(spec_.reduced_var_locs[v], "index " + var + " of " + name + "(...) does not occur in its expression");
    }
    if (spec_.reduction == ast::Reduction::Sum) return;
    if (spec_.accumulate)
      parser_.fail(spec_.output.loc, std::string("a ") + name + " reduction cannot accumulate into its output (`+=`): write `=`");
    for (const std::string& var : spec_.index_vars)
      if (!spec_.is_output_var(var) && std::find(spec_.reduced_vars.begin(), spec_.reduced_vars.end(), var) == spec_.reduced_vars.end())
        parser_.fail(spec_.reduced_var_locs.front(), "index " + var + " is neither an index of the output nor reduced by " + name +
                                                        "(...): list it (" + name + "(" + spec_.reduced_vars.front() + ", " + var +
                                                        ": ...)); sums inside a " + name + " need a statement of their own");
    for (const ast::SignedTerm& term : ast::top_level_terms(spec_.rhs))
      if (ast::summed_vars_of(spec_, *term.expr).size() != spec_.reduced_vars.size())
        parser_.fail(leftmost(*term.expr), "the term " + ast::to_string(*term.expr) + " does not use every index " + name +
                                              " reduces: it would be the same at every one of them (such a term is not supported in a " + name + " yet)");
  }

  void record_access(const ast::Access& access, bool is_output) {
    check_name(access.tensor, access.loc, "a tensor");
    auto seen = orders_.find(access.tensor);
    if (seen == orders_.end()) {
      orders_[access.tensor] = {static_cast<int>(access.indices.size()), access.loc};
      spec_.tensors.push_back({access.tensor, static_cast<int>(access.indices.size()), is_output, access.loc});
    } else if (seen->second.first != static_cast<int>(access.indices.size())) {
      parser_.fail(access.loc, "tensor " + access.tensor + " is used with " + std::to_string(access.indices.size()) +
                                   " indices here but with " + std::to_string(seen->second.first) + " at line " +
                                   std::to_string(seen->second.second.line) + ", column " +
                                   std::to_string(seen->second.second.col));
    }
    std::set<std::string> in_this_access;
    for (size_t m = 0; m < access.indices.size(); ++m) {
      const std::string& var = access.indices[m];
      check_name(var, access.index_locs[m], "an index variable");
      if (!in_this_access.insert(var).second)
        parser_.fail(access.index_locs[m], "index " + var + " appears twice in " + ast::to_string(access) +
                                               "; diagonal access is not supported");
      if (std::find(spec_.index_vars.begin(), spec_.index_vars.end(), var) == spec_.index_vars.end())
        spec_.index_vars.push_back(var);
    }
  }

  void check_name(const std::string& name, SourceLoc loc, const char* what) const {
    ast::Function function;
    if (ast::function_named(name, function) || name == "sum")
      parser_.fail(loc, std::string("'") + name + "' cannot be used as " + what + " name: it is a function of the spec language");
    if (is_reserved_name(name))
      parser_.fail(loc, std::string("'") + name + "' cannot be used as " + what +
                            " name: it is reserved (a C++ keyword or an spgen prefix)");
  }

  ast::Spec& spec_;
  const Parser& parser_;
  std::map<std::string, std::pair<int, SourceLoc>> orders_;
};

}  // namespace

bool is_reserved_name(const std::string& name) {
  static const std::set<std::string> keywords = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class",
      "const", "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit",
      "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "namespace",
      "new", "not", "nullptr", "operator", "or", "private", "protected", "public", "register", "return",
      "short", "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true",
      "try", "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while",
      "xor", "main", "std", "restrict", "__restrict__", "threadIdx", "blockIdx", "blockDim", "gridDim"};
  return keywords.count(name) > 0 || name.rfind("spgen", 0) == 0 || name.rfind("__", 0) == 0;
}

ast::Program parse_program(const std::string& file, const std::string& text) {
  Lexer lexer(file, text);
  Parser parser(file, text, lexer.run());
  ast::Program program{file, text, parser.run(), {}};
  program.lifted = parser.lifted_names();
  for (ast::Spec& statement : program.statements) SpecChecker(statement, parser).run();
  return program;
}

ast::Spec parse_spec(const std::string& file, const std::string& text) {
  ast::Program program = parse_program(file, text);
  if (program.statements.size() > 1)
    throw CompileError(format_source_error(file, text, program.statements[1].output.loc,
                                           "a spec of several statements is not supported here (spgen gen and spgen run take one)"));
  return std::move(program.statements.front());
}

}  // namespace spgen
