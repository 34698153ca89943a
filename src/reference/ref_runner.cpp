// Term execution (reference.cpp's method, steps 4 to 6): a product term planned as nested loops
// (scans of sparse factors, cheapest first, then dense loops) and run into an Accumulator; with
// function calls, each point tracked as present or not, a call evaluated at a point or, where the
// term's scans leave its variables unbound, materialized (ref_calls.cpp) and scanned.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ref_internal.h"
#include "ref_storage.h"

namespace spgen_ref::detail {
namespace {

struct Level {
    bool scan = false;
    int var = -1;                              // dense loop: the variable
    int64_t extent = 0;                        // dense loop: its size
    int access = -1;                           // scan: which access
    const ScanIndex* index = nullptr;          // scan: grouped by the modes bound before it
    std::vector<int> key_vars;                 // scan: variable per key mode
    std::vector<std::pair<int, int>> binds;    // scan: (mode, variable) bound from each entry
    std::vector<std::pair<int, int>> repeats;  // scan: (mode, earlier mode) that must be equal, as in A(i,i)
};

class TermRunner {
public:
    TermRunner(const Term& term, const std::set<int>& loop_vars, Context& context, const Target& target)
        : term_(term), ctx_(context), target_(target), bound_(context.var_sizes.size(), 0) {
        plan(loop_vars);
    }

    void run() { visit(0, term_.coef); }

private:
    // Scans first (fewest expected entries first), then dense loops, output variables first.
    void plan(const std::set<int>& loop_vars) {
        std::vector<bool> is_bound(ctx_.var_sizes.size(), false);
        std::vector<bool> scanned(term_.factors.size(), false);
        while (true) {
            const int pick = cheapest_scan(is_bound, scanned);
            if (pick < 0) break;
            scanned[static_cast<size_t>(pick)] = true;
            levels_.push_back(scan_level(term_.factors[static_cast<size_t>(pick)]->slot, is_bound));
        }
        for (size_t f = 0; f < term_.factors.size(); ++f) {
            const int slot = term_.factors[f]->slot;
            if (!scanned[f]) (ctx_.accesses[static_cast<size_t>(slot)].checked ? checked_lookups_ : lookups_).push_back(slot);
        }
        plan_calls(is_bound);
        gated_ = !checked_lookups_.empty() || !term_.calls.empty();
        for (const Expr* denominator : term_.reciprocals) gated_ = gated_ || has_call(*denominator);

        std::vector<int> dense_order(target_.output_vars);
        for (int v : loop_vars)
            if (std::find(dense_order.begin(), dense_order.end(), v) == dense_order.end()) dense_order.push_back(v);
        for (int v : dense_order) {
            if (is_bound[static_cast<size_t>(v)]) continue;
            is_bound[static_cast<size_t>(v)] = true;
            Level level;
            level.var = v;
            level.extent = ctx_.var_sizes[static_cast<size_t>(v)];
            levels_.push_back(level);
        }
        output_level_ = first_level_with_output_bound();
    }

    // A call binding a variable that no scan bound is materialized and scanned, unless it is
    // present everywhere (then dense loops are no dearer); the others are evaluated at each point.
    void plan_calls(std::vector<bool>& is_bound) {
        for (const Expr* call : term_.calls) {
            CallInfo& info = ctx_.calls[static_cast<size_t>(call->slot)];
            bool binds = false;
            for (int v : info.vars) binds = binds || !is_bound[static_cast<size_t>(v)];
            if (binds && !info.everywhere) {
                const int slot = materialize(ctx_, info, target_.magnitude);
                if (!ctx_.accesses[static_cast<size_t>(slot)].tensor->dense()) {
                    levels_.push_back(scan_level(slot, is_bound));
                    continue;
                }
            }
            pointwise_calls_.push_back(call);
        }
    }

    int cheapest_scan(const std::vector<bool>& is_bound, const std::vector<bool>& scanned) const {
        int best = -1;
        double best_yield = std::numeric_limits<double>::infinity();
        for (size_t f = 0; f < term_.factors.size(); ++f) {
            const AccessInfo& a = ctx_.accesses[static_cast<size_t>(term_.factors[f]->slot)];
            if (scanned[f] || a.tensor->dense()) continue;
            double yield = static_cast<double>(a.tensor->nnz());
            bool binds_something = false;
            for (size_t m = 0; m < a.vars.size(); ++m) {
                if (is_bound[static_cast<size_t>(a.vars[m])]) yield /= static_cast<double>(a.tensor->dims()[m]);
                else binds_something = true;
            }
            if (binds_something && yield < best_yield) {
                best = static_cast<int>(f);
                best_yield = yield;
            }
        }
        return best;
    }

    Level scan_level(int slot, std::vector<bool>& is_bound) {
        const AccessInfo& a = ctx_.accesses[static_cast<size_t>(slot)];
        Level level;
        level.scan = true;
        level.access = slot;
        std::vector<int> key_modes;
        std::vector<int> first_mode_of(ctx_.var_sizes.size(), -1);
        for (size_t m = 0; m < a.vars.size(); ++m) {
            const int v = a.vars[m];
            if (is_bound[static_cast<size_t>(v)]) {
                key_modes.push_back(static_cast<int>(m));
                level.key_vars.push_back(v);
            } else if (first_mode_of[static_cast<size_t>(v)] >= 0) {
                level.repeats.emplace_back(static_cast<int>(m), first_mode_of[static_cast<size_t>(v)]);
            } else {
                first_mode_of[static_cast<size_t>(v)] = static_cast<int>(m);
                level.binds.emplace_back(static_cast<int>(m), v);
            }
        }
        for (auto [mode, v] : level.binds) is_bound[static_cast<size_t>(v)] = true;
        level.index = &a.tensor->scan_index(key_modes);
        return level;
    }

    size_t first_level_with_output_bound() const {
        std::set<int> pending(target_.output_vars.begin(), target_.output_vars.end());
        size_t level = 0;
        while (!pending.empty()) {
            const Level& l = levels_[level++];
            if (l.scan)
                for (auto [mode, v] : l.binds) pending.erase(v);
            else
                pending.erase(l.var);
        }
        return level;
    }

    // Binds the level's variables to each of its points in turn; body(value of the scanned entry).
    template <class Body>
    void for_each_binding(const Level& level, Body&& body) {
        if (!level.scan) {
            for (int64_t x = 0; x < level.extent; ++x) {
                bound_[static_cast<size_t>(level.var)] = x;
                body(1.0);
            }
            return;
        }
        int64_t key = 0;
        for (size_t q = 0; q < level.key_vars.size(); ++q)
            key += level.index->key_strides[q] * bound_[static_cast<size_t>(level.key_vars[q])];
        const auto group = level.index->groups.find(key);
        if (group == level.index->groups.end()) return;
        const StoredTensor& tensor = *ctx_.accesses[static_cast<size_t>(level.access)].tensor;
        for (size_t k = group->second.first; k < group->second.second; ++k) {
            const size_t e = level.index->entries[k];
            const int64_t* coords = tensor.entry_coords(e);
            bool consistent = true;
            for (auto [mode, earlier] : level.repeats) consistent = consistent && coords[mode] == coords[earlier];
            if (!consistent) continue;
            for (auto [mode, v] : level.binds) bound_[static_cast<size_t>(v)] = coords[mode];
            body(tensor.entry_value(e));
        }
    }

    // Above the output level each point is its own output entry...
    void visit(size_t level, double partial) {
        if (level == output_level_) {
            int64_t key = 0;
            for (size_t m = 0; m < target_.output_vars.size(); ++m)
                key += target_.output->stride(m) * bound_[static_cast<size_t>(target_.output_vars[m])];
            if (gated_) add_present(level, key, partial);
            else target_.output->add(key, partial * sum_from(level));
            return;
        }
        for_each_binding(levels_[level], [&](double value) { visit(level + 1, partial * value); });
    }

    // Kept out of visit(), whose code the terms without function calls run.
    [[gnu::noinline]] void add_present(size_t level, int64_t key, double partial) {
        double sum = 0;
        if (sum_present_from(level, sum)) target_.output->add(key, partial * sum);
    }

    // ...below it everything is summed into one.
    double sum_from(size_t level) {
        if (level == levels_.size()) return innermost_value();
        double sum = 0;
        for_each_binding(levels_[level], [&](double value) { sum += value * sum_from(level + 1); });
        return sum;
    }

    double innermost_value() {
        double product = 1;
        for (int slot : lookups_) product *= lookup(slot);
        for (const Expr* denominator : term_.reciprocals) product /= evaluate_at_point(*denominator);
        return product;
    }

    // The same for a gated term, where a point may be absent; false when no point below is present.
    bool sum_present_from(size_t level, double& sum) {
        if (level == levels_.size()) return innermost_present(sum);
        bool any = false;
        double total = 0;
        for_each_binding(levels_[level], [&](double value) {
            double below;
            if (sum_present_from(level + 1, below)) {
                total += value * below;
                any = true;
            }
        });
        sum = total;
        return any;
    }

    // False where the term has no point: a factor stored exactly has no entry, or a function call
    // in it (a factor or inside a denominator) is not present.
    bool innermost_present(double& value) {
        double product = 1;
        for (int slot : lookups_) product *= read(slot);
        for (int slot : checked_lookups_) {
            double factor;
            if (!find(slot, factor)) return false;
            product *= factor;
        }
        for (const Expr* call : pointwise_calls_) {
            const Point p = call_value(*call);
            if (!p.present) return false;
            product *= target_.magnitude ? std::fabs(p.value) : p.value;
        }
        for (const Expr* denominator : term_.reciprocals) {
            double divisor;
            if (!denominator_value(*denominator, target_.magnitude, divisor)) return false;
            product /= divisor;
        }
        value = product;
        return true;
    }

    // A divisor without function calls at the current point, an absent entry reading 0.
    double evaluate_at_point(const Expr& e) {
        switch (e.kind) {
        case Expr::Kind::Literal: return e.literal;
        case Expr::Kind::Access: return lookup(e.slot);
        case Expr::Kind::Negate: return -evaluate_at_point(*e.left);
        case Expr::Kind::Add: return evaluate_at_point(*e.left) + evaluate_at_point(*e.right);
        case Expr::Kind::Subtract: return evaluate_at_point(*e.left) - evaluate_at_point(*e.right);
        case Expr::Kind::Multiply: return evaluate_at_point(*e.left) * evaluate_at_point(*e.right);
        case Expr::Kind::Divide: return evaluate_at_point(*e.left) / evaluate_at_point(*e.right);
        case Expr::Kind::Call: break;
        }
        throw std::logic_error("evaluate_at_point of a function call");
    }

    int64_t key_of(const AccessInfo& a) const {
        int64_t key = 0;
        for (size_t m = 0; m < a.vars.size(); ++m) key += a.tensor->stride(m) * bound_[static_cast<size_t>(a.vars[m])];
        return key;
    }

    double lookup(int slot) {
        const AccessInfo& a = ctx_.accesses[static_cast<size_t>(slot)];
        int64_t key = 0;
        for (size_t m = 0; m < a.vars.size(); ++m) key += a.tensor->stride(m) * bound_[static_cast<size_t>(a.vars[m])];
        return a.tensor->at(key);
    }

    // lookup() for the paths of function calls (apart, so as not to change how the others compile).
    double read(int slot) {
        const AccessInfo& a = ctx_.accesses[static_cast<size_t>(slot)];
        return a.tensor->at(key_of(a));
    }

    bool find(int slot, double& value) {
        const AccessInfo& a = ctx_.accesses[static_cast<size_t>(slot)];
        return a.tensor->find(key_of(a), value);
    }

    // A divisor at the current point, an absent entry reading 0; false where a function call in it
    // is not present. `magnitude`: the calls' values absolute.
    bool denominator_value(const Expr& e, bool magnitude, double& value) {
        double a = 0, b = 0;
        switch (e.kind) {
        case Expr::Kind::Literal: value = e.literal; return true;
        case Expr::Kind::Access: value = read(e.slot); return true;
        case Expr::Kind::Call: {
            const Point p = call_value(e);
            value = magnitude ? std::fabs(p.value) : p.value;
            return p.present;
        }
        case Expr::Kind::Negate:
            if (!denominator_value(*e.left, magnitude, a)) return false;
            value = -a;
            return true;
        case Expr::Kind::Add:
        case Expr::Kind::Subtract:
        case Expr::Kind::Multiply:
        case Expr::Kind::Divide:
            if (!denominator_value(*e.left, magnitude, a) || !denominator_value(*e.right, magnitude, b)) return false;
            value = e.kind == Expr::Kind::Add        ? a + b
                    : e.kind == Expr::Kind::Subtract ? a - b
                    : e.kind == Expr::Kind::Multiply ? a * b
                                                     : a / b;
            return true;
        }
        throw std::logic_error("unknown expression kind");
    }

    // A function's argument at the current point: present by the union-of-intersections rule over
    // the entries its accesses store (all stored exactly), an absent part reading 0.
    struct Point {
        bool present;
        double value;  // 0 when not present
    };

    Point point_value(const Expr& e) {
        switch (e.kind) {
        case Expr::Kind::Literal: return {true, e.literal};
        case Expr::Kind::Access: {
            double value = 0;
            return find(e.slot, value) ? Point{true, value} : Point{false, 0.0};
        }
        case Expr::Kind::Negate: {
            const Point a = point_value(*e.left);
            return {a.present, a.present ? -a.value : 0.0};
        }
        case Expr::Kind::Add:
        case Expr::Kind::Subtract: {
            const Point a = point_value(*e.left), b = point_value(*e.right);
            return {a.present || b.present, e.kind == Expr::Kind::Add ? a.value + b.value : a.value - b.value};
        }
        case Expr::Kind::Multiply: {
            const Point a = point_value(*e.left);
            if (!a.present) return {false, 0.0};
            const Point b = point_value(*e.right);
            if (!b.present) return {false, 0.0};
            return {true, a.value * b.value};
        }
        case Expr::Kind::Divide: {  // a term's reciprocal: the numerator's points
            const Point a = point_value(*e.left);
            double divisor = 0;
            if (!a.present || !denominator_value(*e.right, false, divisor)) return {false, 0.0};
            return {true, a.value / divisor};
        }
        case Expr::Kind::Call: return call_value(e);
        }
        throw std::logic_error("unknown expression kind");
    }

    // A call's points: its argument's; for max and min the union of its arguments' that read a
    // tensor. Its value there: the function of the arguments' values, an absent one reading 0.
    Point call_value(const Expr& call) {
        const CallInfo& info = ctx_.calls[static_cast<size_t>(call.slot)];
        const Point a = point_value(*call.left);
        if (!call.right) return a.present ? Point{true, apply(call.func, a.value, 0.0)} : Point{false, 0.0};
        const Point b = point_value(*call.right);
        const bool present = (!info.constant_arg[0] && a.present) || (!info.constant_arg[1] && b.present);
        return present ? Point{true, apply(call.func, a.value, b.value)} : Point{false, 0.0};
    }

    const Term& term_;
    Context& ctx_;
    const Target target_;  // a copy: one indirection less in the innermost loops
    std::vector<int64_t> bound_;  // current value per variable
    std::vector<Level> levels_;
    std::vector<int> lookups_;          // slots of factors looked up at the innermost point
    std::vector<int> checked_lookups_;  // the same, stored exactly and sparse: no entry, no point
    std::vector<const Expr*> pointwise_calls_;  // calls not scanned, evaluated at the innermost point
    bool gated_ = false;  // some point may be absent (the output is not reached there): track presence
    size_t output_level_ = 0;
};

}  // namespace

void run_term(const Term& term, const std::set<int>& loop_vars, Context& context, const Target& target) {
    TermRunner(term, loop_vars, context, target).run();
}

}  // namespace spgen_ref::detail
