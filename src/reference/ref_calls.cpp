// Function calls (reference.cpp's method, step 6; reference.h states their meaning): a call's
// points and values over its variables, computed once and stored as a temporary to be scanned
// (materialize), and whether a call is present at every point of its variables (everywhere).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <vector>

#include "ref_internal.h"
#include "ref_storage.h"

namespace spgen_ref::detail {
namespace {

// The points over `vars` where `e` (every variable of which is among them, so nothing is summed)
// is present, with its values: the assignment T(vars) = e, each point reached once and only if
// present. Variables `e` lacks are broadcast: u(i) + v(j) is present where u(i) or v(j) is stored.
Tensor evaluate_points(Context& ctx, const Expr& e, const std::vector<int>& vars) {
    std::vector<int64_t> dims;
    for (int v : vars) dims.push_back(ctx.var_sizes[static_cast<size_t>(v)]);
    Accumulator points(dims);
    const Target target{vars, &points, false};
    const std::set<int> loop_vars(vars.begin(), vars.end());
    for (const Term& term : expand(e)) run_term(term, loop_vars, ctx, target);
    return points.result();
}

// max or min over the union of two sets of points (same dims, sorted), a missing one reading 0.
Tensor merge_points(const Tensor& a, const Tensor& b, Func func) {
    const size_t order = a.dims.size();
    Tensor out;
    out.dims = a.dims;
    auto emit = [&](const int64_t* coords, double x, double y) {
        out.coords.insert(out.coords.end(), coords, coords + order);
        out.vals.push_back(apply(func, x, y));
    };
    size_t p = 0, q = 0;
    while (p < a.nnz() || q < b.nnz()) {
        const int64_t* ca = a.coords.data() + p * order;
        const int64_t* cb = b.coords.data() + q * order;
        const bool take_a = q == b.nnz() || (p < a.nnz() && std::lexicographical_compare(ca, ca + order, cb, cb + order));
        const bool take_b = p == a.nnz() || (q < b.nnz() && std::lexicographical_compare(cb, cb + order, ca, ca + order));
        if (take_a) emit(ca, a.vals[p++], 0.0);
        else if (take_b) emit(cb, 0.0, b.vals[q++]);
        else emit(ca, a.vals[p++], b.vals[q++]);
    }
    return out;
}

void compute_points(Context& ctx, CallInfo& info);

}  // namespace

// Computes the call's points and values over its variables once; stores them as a temporary
// tensor to be scanned.
int materialize(Context& ctx, CallInfo& info, bool absolute) {
    if (!info.materialized) compute_points(ctx, info);
    const int k = absolute ? 1 : 0;
    if (!info.temporary[k]) {
        Tensor values = info.points;
        if (absolute)
            for (double& v : values.vals) v = std::fabs(v);
        info.temporary[k] = std::make_unique<StoredTensor>(values, info.vars.size(), "a function call", true);
        info.temporary_slot[k] = static_cast<int>(ctx.accesses.size());
        ctx.accesses.push_back(AccessInfo{info.temporary[k].get(), info.vars, !info.temporary[k]->dense()});
    }
    return info.temporary_slot[k];
}

namespace {

void compute_points(Context& ctx, CallInfo& info) {
    const Expr& call = *info.call;
    Tensor& points = info.points;
    if (!call.right || info.constant_arg[1]) {
        points = evaluate_points(ctx, *call.left, info.vars);
        const double other = call.right ? constant_value(*call.right) : 0.0;
        for (double& v : points.vals) v = apply(call.func, v, other);
    } else if (info.constant_arg[0]) {
        points = evaluate_points(ctx, *call.right, info.vars);
        const double other = constant_value(*call.left);
        for (double& v : points.vals) v = apply(call.func, other, v);
    } else {
        points = merge_points(evaluate_points(ctx, *call.left, info.vars), evaluate_points(ctx, *call.right, info.vars),
                              call.func);
    }
    info.materialized = true;
}

bool calls_everywhere(const Context& ctx, const Expr& e) {
    if (e.kind == Expr::Kind::Call) return ctx.calls[static_cast<size_t>(e.slot)].everywhere;
    return (!e.left || calls_everywhere(ctx, *e.left)) && (!e.right || calls_everywhere(ctx, *e.right));
}

}  // namespace

bool everywhere(const Context& ctx, const Expr& e) {
    switch (e.kind) {
    case Expr::Kind::Literal: return true;
    case Expr::Kind::Access: return ctx.accesses[static_cast<size_t>(e.slot)].tensor->dense();  // exact: every entry
    case Expr::Kind::Negate: return everywhere(ctx, *e.left);
    case Expr::Kind::Add:
    case Expr::Kind::Subtract: return everywhere(ctx, *e.left) || everywhere(ctx, *e.right);
    case Expr::Kind::Multiply: return everywhere(ctx, *e.left) && everywhere(ctx, *e.right);
    case Expr::Kind::Divide: return everywhere(ctx, *e.left) && calls_everywhere(ctx, *e.right);
    case Expr::Kind::Call: return ctx.calls[static_cast<size_t>(e.slot)].everywhere;
    }
    throw std::logic_error("unknown expression kind");
}

}  // namespace spgen_ref::detail
