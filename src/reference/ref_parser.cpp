#include "ref_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace spgen_ref {
namespace {

// =============================================================================================
// Lexer

enum class Tok { Ident, Number, LParen, RParen, Comma, Colon, Plus, Minus, Star, Slash, Assign, PlusAssign, End };

struct Token {
    Tok kind;
    std::string text;
    double number = 0;
    int line = 1, column = 1;
};

[[noreturn]] void spec_error(int line, int column, const std::string& message) {
    throw std::runtime_error("spec:" + std::to_string(line) + ":" + std::to_string(column) + ": " + message);
}

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
public:
    explicit Lexer(const std::string& text) : text_(text) {}

    std::vector<Token> tokenize() {
        std::vector<Token> tokens;
        for (;;) {
            skip_space_and_comments();
            Token token{Tok::End, "", 0, line_, column()};
            if (pos_ >= text_.size()) {
                tokens.push_back(token);
                return tokens;
            }
            const char c = text_[pos_];
            if (is_ident_start(c)) {
                token.kind = Tok::Ident;
                token.text = take_while(is_ident_char);
            } else if (is_digit(c) || (c == '.' && pos_ + 1 < text_.size() && is_digit(text_[pos_ + 1]))) {
                lex_number(token);
            } else {
                lex_punctuation(token);
            }
            tokens.push_back(token);
        }
    }

private:
    int column() const { return static_cast<int>(pos_ - line_start_) + 1; }

    void skip_space_and_comments() {
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == '\n') {
                ++line_;
                line_start_ = ++pos_;
            } else if (std::isspace(static_cast<unsigned char>(c))) {
                ++pos_;
            } else if (c == '#') {
                while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
            } else {
                return;
            }
        }
    }

    std::string take_while(bool (*accept)(char)) {
        const size_t start = pos_;
        while (pos_ < text_.size() && accept(text_[pos_])) ++pos_;
        return text_.substr(start, pos_ - start);
    }

    // digits [. digits] or . digits, then an optional exponent that has digits.
    void lex_number(Token& token) {
        const size_t start = pos_;
        take_while(is_digit);
        if (pos_ < text_.size() && text_[pos_] == '.') {
            ++pos_;
            take_while(is_digit);
        }
        if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
            size_t after = pos_ + 1;
            if (after < text_.size() && (text_[after] == '+' || text_[after] == '-')) ++after;
            if (after < text_.size() && is_digit(text_[after])) {
                pos_ = after;
                take_while(is_digit);
            }
        }
        token.kind = Tok::Number;
        token.text = text_.substr(start, pos_ - start);
        auto [ptr, ec] = std::from_chars(token.text.data(), token.text.data() + token.text.size(), token.number);
        if (ec != std::errc() || ptr != token.text.data() + token.text.size())
            spec_error(token.line, token.column, "bad number '" + token.text + "'");
    }

    void lex_punctuation(Token& token) {
        const char c = text_[pos_++];
        token.text = std::string(1, c);
        switch (c) {
        case '(': token.kind = Tok::LParen; return;
        case ')': token.kind = Tok::RParen; return;
        case ',': token.kind = Tok::Comma; return;
        case ':': token.kind = Tok::Colon; return;
        case '-': token.kind = Tok::Minus; return;
        case '*': token.kind = Tok::Star; return;
        case '/': token.kind = Tok::Slash; return;
        case '=': token.kind = Tok::Assign; return;
        case '+':
            if (pos_ < text_.size() && text_[pos_] == '=') {
                ++pos_;
                token.kind = Tok::PlusAssign;
                token.text += '=';  // "+="
            } else {
                token.kind = Tok::Plus;
            }
            return;
        default: spec_error(token.line, token.column, "unexpected character '" + token.text + "'");
        }
    }

    const std::string& text_;
    size_t pos_ = 0, line_start_ = 0;
    int line_ = 1;
};

// =============================================================================================
// Parser

std::unique_ptr<Expr> make_binary(Expr::Kind kind, std::unique_ptr<Expr> left, std::unique_ptr<Expr> right) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->left = std::move(left);
    e->right = std::move(right);
    return e;
}

// spec   := access ('=' | '+=') (reduction | sum) END   (the output not named like a function)
// reduction := ('sum' | 'max' | 'min') '(' IDENT (',' IDENT)* ':' sum ')'
// sum    := product (('+' | '-') product)*
// product:= unary (('*' | '/') unary)*
// unary  := '-' unary | primary
// primary:= NUMBER | call | access | '(' sum ')'
// call   := FUNC '(' sum [',' sum] ')'            (FUNC: exp log sqrt abs, one argument; max min, two)
// access := IDENT [ '(' [IDENT (',' IDENT)*] ')' ]
class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    Spec parse_spec() {
        Spec spec;
        const Token name = expect(Tok::Ident, "the output tensor's name");
        Func func;
        if (function_named(name.text, func))
            spec_error(name.line, name.column, "the output cannot be named '" + name.text + "', the name of a function");
        auto lhs = parse_access(name);
        spec.output = lhs->tensor;
        spec.output_indices = lhs->indices;
        if (accept(Tok::PlusAssign)) spec.accumulate = true;
        else expect(Tok::Assign, "'=' or '+='");
        if (at_reduction(pos_)) {
            parse_reduction(name, spec);
            if (peek().kind != Tok::End)
                fail(peek(), "an explicit reduction must be the whole right-hand side; unexpected '" + peek().text +
                                 "' after it");
        } else {
            spec.rhs = parse_sum();
        }
        if (peek().kind != Tok::End) fail(peek(), "unexpected '" + peek().text + "' after the expression");
        return spec;
    }

private:
    const Token& peek() const { return tokens_[pos_]; }
    Token take() {
        const Token& token = tokens_[pos_];
        if (token.kind != Tok::End) ++pos_;  // End stays current, so errors can point at it
        return token;
    }

    bool accept(Tok kind) {
        if (peek().kind != kind) return false;
        take();
        return true;
    }

    Token expect(Tok kind, const std::string& what) {
        if (peek().kind != kind) fail(peek(), "expected " + what);
        return take();
    }

    static bool is_reduction_name(const std::string& name) { return name == "sum" || name == "max" || name == "min"; }

    // IDENT (',' IDENT)* ':' from tokens_[p]: the variables of an explicit reduction.
    bool reduction_variables_at(size_t p) const {
        if (tokens_[p].kind != Tok::Ident) return false;
        while (tokens_[p + 1].kind == Tok::Comma && tokens_[p + 2].kind == Tok::Ident) p += 2;
        return tokens_[p + 1].kind == Tok::Colon;
    }

    // `sum(`, `max(` or `min(` at tokens_[p], then the variables and a colon (`max(a, b)` is the
    // function: no colon).
    bool at_reduction(size_t p) const {
        return tokens_[p].kind == Tok::Ident && is_reduction_name(tokens_[p].text) && tokens_[p + 1].kind == Tok::LParen &&
               reduction_variables_at(p + 2);
    }

    // The whole right-hand side `max(j, k: e)`; checks its variables against the output's and e's.
    void parse_reduction(const Token& output, Spec& spec) {
        const Token name = take();
        spec.reduction = name.text == "sum" ? Reduction::Sum : name.text == "max" ? Reduction::Max : Reduction::Min;
        take();  // '('
        std::vector<Token> vars;
        do {
            const Token var = expect(Tok::Ident, "an index variable");
            for (const Token& earlier : vars)
                if (earlier.text == var.text)
                    spec_error(var.line, var.column, "index variable '" + var.text + "' is reduced twice");
            vars.push_back(var);
            spec.reduced_vars.push_back(var.text);
        } while (accept(Tok::Comma));
        expect(Tok::Colon, "':'");
        spec.rhs = parse_sum();
        expect(Tok::RParen, "')' closing " + name.text + "(" + vars.front().text + ": ...)");

        std::set<std::string> used;
        collect_variables(*spec.rhs, used);
        const auto is_output = [&](const std::string& v) {
            return std::find(spec.output_indices.begin(), spec.output_indices.end(), v) != spec.output_indices.end();
        };
        for (const Token& var : vars) {
            if (is_output(var.text))
                spec_error(var.line, var.column,
                           "index variable '" + var.text + "' is an index of the output, so " + name.text + " cannot reduce it");
            if (!used.count(var.text))
                spec_error(var.line, var.column,
                           "index variable '" + var.text + "' of " + name.text + "(...) does not occur in its expression");
        }
        if (spec.reduction == Reduction::Sum) return;
        if (spec.accumulate)
            spec_error(output.line, output.column, "a " + name.text + " reduction cannot accumulate into its output ('+=')");
        for (const std::string& v : used)
            if (!is_output(v) && std::find(spec.reduced_vars.begin(), spec.reduced_vars.end(), v) == spec.reduced_vars.end())
                spec_error(vars.front().line, vars.front().column,
                           "index variable '" + v + "' is neither an index of the output nor reduced by " + name.text + "(...)");
        std::vector<const Expr*> terms;
        top_level_terms(*spec.rhs, terms);
        for (const Expr* term : terms) {
            std::set<std::string> term_vars;
            collect_variables(*term, term_vars);
            for (const std::string& v : spec.reduced_vars)
                if (!term_vars.count(v))
                    spec_error(name.line, name.column,
                               "a term of " + name.text + "(...) does not use the reduced index variable '" + v + "'");
        }
    }

    static void collect_variables(const Expr& e, std::set<std::string>& out) {
        out.insert(e.indices.begin(), e.indices.end());
        if (e.left) collect_variables(*e.left, out);
        if (e.right) collect_variables(*e.right, out);
    }

    // The operands of the outermost + and - (through unary minus).
    static void top_level_terms(const Expr& e, std::vector<const Expr*>& out) {
        if (e.kind == Expr::Kind::Add || e.kind == Expr::Kind::Subtract) {
            top_level_terms(*e.left, out);
            top_level_terms(*e.right, out);
        } else if (e.kind == Expr::Kind::Negate) {
            top_level_terms(*e.left, out);
        } else {
            out.push_back(&e);
        }
    }

    [[noreturn]] static void fail(const Token& at, const std::string& message) {
        const std::string found = at.kind == Tok::End ? "end of spec" : "'" + at.text + "'";
        spec_error(at.line, at.column, message + " (found " + found + ")");
    }

    std::unique_ptr<Expr> parse_sum() {
        auto left = parse_product();
        for (;;) {
            if (accept(Tok::Plus)) left = make_binary(Expr::Kind::Add, std::move(left), parse_product());
            else if (accept(Tok::Minus)) left = make_binary(Expr::Kind::Subtract, std::move(left), parse_product());
            else return left;
        }
    }

    std::unique_ptr<Expr> parse_product() {
        auto left = parse_unary();
        for (;;) {
            if (accept(Tok::Star)) left = make_binary(Expr::Kind::Multiply, std::move(left), parse_unary());
            else if (accept(Tok::Slash)) left = make_binary(Expr::Kind::Divide, std::move(left), parse_unary());
            else return left;
        }
    }

    std::unique_ptr<Expr> parse_unary() {
        if (!accept(Tok::Minus)) return parse_primary();
        auto e = std::make_unique<Expr>();
        e->kind = Expr::Kind::Negate;
        e->left = parse_unary();
        return e;
    }

    std::unique_ptr<Expr> parse_primary() {
        const Token token = take();
        if (token.kind == Tok::Number) {
            auto e = std::make_unique<Expr>();
            e->literal = token.number;
            return e;
        }
        Func func;
        if (token.kind == Tok::Ident && peek().kind == Tok::LParen && reduction_variables_at(pos_ + 1)) {
            if (is_reduction_name(token.text))
                spec_error(token.line, token.column,
                           "an explicit reduction such as '" + token.text + "(" + tokens_[pos_ + 1].text +
                               ": ...)' must be the whole right-hand side");
            if (function_named(token.text, func))
                spec_error(token.line, token.column, "'" + token.text + "' is a function of one value, not a reduction");
        }
        if (token.kind == Tok::Ident && function_named(token.text, func) && peek().kind == Tok::LParen)
            return parse_call(token, func);
        if (token.kind == Tok::Ident) return parse_access(token);
        if (token.kind == Tok::LParen) {
            auto e = parse_sum();
            expect(Tok::RParen, "')'");
            return e;
        }
        fail(token, "expected a tensor, a number or '('");
    }

    // After the function's name; the '(' is next.
    std::unique_ptr<Expr> parse_call(const Token& name, Func func) {
        take();  // '('
        std::vector<std::unique_ptr<Expr>> args;
        if (peek().kind != Tok::RParen) {
            do {
                args.push_back(parse_sum());
            } while (accept(Tok::Comma));
        }
        expect(Tok::RParen, "',' or ')'");
        const int arity = function_arity(func);
        if (static_cast<int>(args.size()) != arity)
            spec_error(name.line, name.column,
                       "'" + name.text + "' takes " + std::to_string(arity) + (arity == 1 ? " argument" : " arguments") +
                           ", found " + std::to_string(args.size()));
        auto e = std::make_unique<Expr>();
        e->kind = Expr::Kind::Call;
        e->func = func;
        e->left = std::move(args[0]);
        if (arity == 2) e->right = std::move(args[1]);
        return e;
    }

    std::unique_ptr<Expr> parse_access(const Token& name) {
        auto e = std::make_unique<Expr>();
        e->kind = Expr::Kind::Access;
        e->tensor = name.text;
        if (!accept(Tok::LParen)) return e;
        if (accept(Tok::RParen)) return e;
        do {
            e->indices.push_back(expect(Tok::Ident, "an index variable").text);
        } while (accept(Tok::Comma));
        expect(Tok::RParen, "',' or ')'");
        return e;
    }

    std::vector<Token> tokens_;
    size_t pos_ = 0;
};

}  // namespace

bool function_named(const std::string& name, Func& func) {
    static const std::pair<const char*, Func> functions[] = {{"exp", Func::Exp}, {"log", Func::Log}, {"sqrt", Func::Sqrt},
                                                            {"abs", Func::Abs}, {"max", Func::Max}, {"min", Func::Min}};
    for (const auto& [text, f] : functions)
        if (name == text) {
            func = f;
            return true;
        }
    return false;
}

int function_arity(Func func) { return func == Func::Max || func == Func::Min ? 2 : 1; }

const char* function_name(Func func) {
    switch (func) {
    case Func::Exp: return "exp";
    case Func::Log: return "log";
    case Func::Sqrt: return "sqrt";
    case Func::Abs: return "abs";
    case Func::Max: return "max";
    case Func::Min: return "min";
    }
    return "?";
}

Spec parse_spec(const std::string& spec_text) { return Parser(Lexer(spec_text).tokenize()).parse_spec(); }

}  // namespace spgen_ref
