// Expansion of a right-hand side into a sum of product terms (reference.cpp's method, step 2),
// with the helpers on expression trees that go with it: constant folding of calls that read no
// tensor, and the index variables a term or an expression uses.
#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ref_internal.h"

namespace spgen_ref::detail {

bool has_access(const Expr& e) {
    if (e.kind == Expr::Kind::Access) return true;
    return (e.left && has_access(*e.left)) || (e.right && has_access(*e.right));
}

bool has_call(const Expr& e) {
    if (e.kind == Expr::Kind::Call) return true;
    return (e.left && has_call(*e.left)) || (e.right && has_call(*e.right));
}

double constant_value(const Expr& e) {
    switch (e.kind) {
    case Expr::Kind::Literal: return e.literal;
    case Expr::Kind::Negate: return -constant_value(*e.left);
    case Expr::Kind::Add: return constant_value(*e.left) + constant_value(*e.right);
    case Expr::Kind::Subtract: return constant_value(*e.left) - constant_value(*e.right);
    case Expr::Kind::Multiply: return constant_value(*e.left) * constant_value(*e.right);
    case Expr::Kind::Divide: return constant_value(*e.left) / constant_value(*e.right);
    case Expr::Kind::Call: return apply(e.func, constant_value(*e.left), e.right ? constant_value(*e.right) : 0.0);
    case Expr::Kind::Access: break;
    }
    throw std::logic_error("constant_value of a tensor access");
}

// Replaces every function call that reads no tensor by its value (`exp(0)` is the literal 1).
void fold_constant_calls(std::unique_ptr<Expr>& e) {
    if (e->left) fold_constant_calls(e->left);
    if (e->right) fold_constant_calls(e->right);
    if (e->kind != Expr::Kind::Call || has_access(*e)) return;
    auto literal = std::make_unique<Expr>();
    literal->literal = constant_value(*e);
    e = std::move(literal);
}

namespace {

std::vector<Term> scaled(std::vector<Term> terms, double factor) {
    for (auto& t : terms) t.coef *= factor;
    return terms;
}

}  // namespace

std::vector<Term> expand(const Expr& e) {
    switch (e.kind) {
    case Expr::Kind::Literal: return {Term{e.literal, {}, {}, {}}};
    case Expr::Kind::Access: return {Term{1.0, {&e}, {}, {}}};
    case Expr::Kind::Call: return {Term{1.0, {}, {&e}, {}}};  // constant calls are folded before
    case Expr::Kind::Negate: return scaled(expand(*e.left), -1.0);
    case Expr::Kind::Add:
    case Expr::Kind::Subtract: {
        auto terms = expand(*e.left);
        auto right = scaled(expand(*e.right), e.kind == Expr::Kind::Add ? 1.0 : -1.0);
        terms.insert(terms.end(), right.begin(), right.end());
        return terms;
    }
    case Expr::Kind::Multiply: {
        std::vector<Term> terms;
        for (const Term& a : expand(*e.left))
            for (const Term& b : expand(*e.right)) {
                Term t{a.coef * b.coef, a.factors, a.calls, a.reciprocals};
                t.factors.insert(t.factors.end(), b.factors.begin(), b.factors.end());
                t.calls.insert(t.calls.end(), b.calls.begin(), b.calls.end());
                t.reciprocals.insert(t.reciprocals.end(), b.reciprocals.begin(), b.reciprocals.end());
                terms.push_back(std::move(t));
            }
        return terms;
    }
    case Expr::Kind::Divide: {
        if (!has_access(*e.right)) return scaled(expand(*e.left), 1.0 / constant_value(*e.right));
        auto terms = expand(*e.left);
        for (auto& t : terms) t.reciprocals.push_back(e.right.get());
        return terms;
    }
    }
    throw std::logic_error("unknown expression kind");
}

namespace {

void collect_indices(const Expr& e, std::set<std::string>& out) {
    out.insert(e.indices.begin(), e.indices.end());
    if (e.left) collect_indices(*e.left, out);
    if (e.right) collect_indices(*e.right, out);
}

}  // namespace

// In order of first appearance.
void collect_indices_in_order(const Expr& e, std::vector<std::string>& out) {
    for (const auto& name : e.indices)
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    if (e.left) collect_indices_in_order(*e.left, out);
    if (e.right) collect_indices_in_order(*e.right, out);
}

std::set<std::string> term_indices(const Term& term) {
    std::set<std::string> names;
    for (const Expr* f : term.factors) collect_indices(*f, names);
    for (const Expr* c : term.calls) collect_indices(*c, names);
    for (const Expr* r : term.reciprocals) collect_indices(*r, names);
    return names;
}

}  // namespace spgen_ref::detail
