// Reference evaluator of index notation: the oracle that generated kernels are checked against.
// Shares nothing with src/ (own lexer, parser and tensor storage), so a compiler bug cannot hide in
// a shared piece.
//
// Method
//  1. Parse the assignment into an expression tree (recursive descent).
//  2. Expand the right-hand side into a sum of product terms: coefficient x tensor accesses x
//     reciprocals of denominators that carry index variables (a division by a constant folds into
//     the coefficient). Each term is summed over its own variables that the output lacks: TACO's
//     scoped reductions (`y(i) = A(i,j) * x(j) + b(i)` adds b(i) once, not once per j).
//  3. Store each input once: a dense row-major array when more than half full, otherwise sorted
//     entries plus a hash map from linearised coordinate to value (point lookups) and, per set of
//     already bound modes, a hash index from those modes' coordinates to the matching entries (scans).
//  4. Plan each term as nested loops: first scans of sparse factors, greedily the one expected to
//     yield the fewest entries given the variables bound so far (so a sparse x sparse product is a
//     hash join, never a dense sweep); then dense loops over the remaining variables, output
//     variables first. The factors not scanned are looked up at the innermost point.
//  5. Once all output variables are bound, the loops below are summed into a local and added to the
//     output once: a dense array if it fits in 5e8 bytes, else a hash map. Entries that were reached
//     are returned, zeros included.
//  6. Function calls (reference.h states their meaning). Constant calls fold into literals. A call
//     that reads a tensor is one more factor of its terms. Inputs read inside calls, and all
//     inputs when the spec has calls, are stored "exactly": densely only when every coordinate
//     holds an entry, so that a lookup can tell a missing entry (no point) from a zero; a term
//     with such a lookup or a call tracks whether each point is present and skips it if not.
//     A call is evaluated at a point by walking its argument's tree with (present, value) pairs.
//     When a term's scans leave some of a call's variables unbound (`E(i,j) = exp(S(i,j))`), the
//     call is materialized instead: its points and values over its variables are computed once by
//     evaluating T(vars) = argument with this same machinery (each point reached once, and only
//     if present; for max/min of two tensor arguments, both over the call's variables merged),
//     stored exactly as a temporary and scanned like a sparse input (unless it is present
//     everywhere, when dense loops cost the same). Calls whose variables are bound by the term's
//     other factors (a GAT score A(i,j) * max(u(i)+v(j), ...)) are only evaluated at those points,
//     never over the full space of their variables.
//  7. Explicit reductions. `sum(j: e)` evaluates e as the whole right-hand side. For `max`/`min`,
//     all inputs are stored exactly (as with calls), and each term runs with the output's and the
//     reduced variables as its output variables, so that it reaches each of its points once and
//     only if present; a single term's values go straight into a dense per-output-coordinate
//     fmax/fmin (from -inf/+inf), several terms are first summed per point (an Accumulator over
//     all those variables) and then reduced. Magnitudes: the terms on absolute values as in 5,
//     reduced by max from 0.
// Convention: a point where a scanned sparse factor has no entry contributes nothing, even if another
// factor there is Inf or NaN (e.g. 1/0) - what a sparse kernel computes too. The sums are not
// ordered like any kernel's, so compare with a tolerance.
#include "reference.h"

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
// Expansion into a sum of product terms

struct Term {
    double coef = 1;
    std::vector<const Expr*> factors;      // tensor accesses
    std::vector<const Expr*> calls;        // function calls that read a tensor (factors too)
    std::vector<const Expr*> reciprocals;  // denominators with index variables, evaluated pointwise
};

bool has_access(const Expr& e) {
    if (e.kind == Expr::Kind::Access) return true;
    return (e.left && has_access(*e.left)) || (e.right && has_access(*e.right));
}

bool has_call(const Expr& e) {
    if (e.kind == Expr::Kind::Call) return true;
    return (e.left && has_call(*e.left)) || (e.right && has_call(*e.right));
}

double apply(Func func, double a, double b) {
    switch (func) {
    case Func::Exp: return std::exp(a);
    case Func::Log: return std::log(a);
    case Func::Sqrt: return std::sqrt(a);
    case Func::Abs: return std::fabs(a);
    case Func::Max: return std::fmax(a, b);
    case Func::Min: return std::fmin(a, b);
    }
    throw std::logic_error("unknown function");
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

std::vector<Term> scaled(std::vector<Term> terms, double factor) {
    for (auto& t : terms) t.coef *= factor;
    return terms;
}

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

void collect_indices(const Expr& e, std::set<std::string>& out) {
    out.insert(e.indices.begin(), e.indices.end());
    if (e.left) collect_indices(*e.left, out);
    if (e.right) collect_indices(*e.right, out);
}

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

// =============================================================================================
// Input storage

int64_t checked_size(const std::vector<int64_t>& dims) {
    int64_t size = 1;
    for (int64_t d : dims)
        if (__builtin_mul_overflow(size, d, &size)) throw std::runtime_error("tensor too large for 64-bit indices");
    return size;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
    std::vector<int64_t> strides(dims.size(), 1);
    for (size_t m = dims.size(); m-- > 1;) strides[m - 1] = strides[m] * dims[m];
    return strides;
}

// Drops trailing modes of extent 1 until `order` modes remain; throws when that is impossible.
constexpr int64_t kMaxDenseEntries = 500'000'000 / 8;  // 5e8 bytes of doubles

// Entries of one sparse tensor grouped by the coordinates of some of its modes.
struct ScanIndex {
    std::vector<int64_t> key_strides;  // linearises the key modes' coordinates
    std::vector<size_t> entries;       // entry numbers, grouped by key
    std::unordered_map<int64_t, std::pair<size_t, size_t>> groups;  // key -> [begin, end) in entries
};

// `exact` keeps which entries are stored, as function calls need (a missing entry is no point of
// the call's argument, an explicit zero is): stored densely only when every coordinate is present.
// Otherwise a tensor more than half full is stored densely, reading 0 where nothing is stored.
class StoredTensor {
public:
    StoredTensor(const Tensor& tensor, size_t order, const std::string& name, bool exact = false) {
        Tensor reduced;  // only filled when trailing unit modes must go; avoids copying big inputs
        const Tensor& t = tensor.dims.size() == order ? tensor : (reduced = squeezed(tensor, order, name));
        dims_ = t.dims;
        strides_ = row_major_strides(dims_);
        const int64_t size = checked_size(dims_);
        if (!exact) {
            dense_ = size <= kMaxDenseEntries && 2 * static_cast<int64_t>(t.nnz()) > size;
            if (dense_) scatter_into_dense(t);
            else entries_ = canonical(t);
            return;
        }
        dense_ = size <= kMaxDenseEntries && static_cast<int64_t>(t.nnz()) >= size && scatter_into_dense(t, true) == size;
        if (!dense_) {
            dense_values_ = {};
            entries_ = canonical(t);
        }
    }

    bool dense() const { return dense_; }
    const std::vector<int64_t>& dims() const { return dims_; }
    int64_t stride(size_t mode) const { return strides_[mode]; }
    size_t nnz() const { return entries_.nnz(); }
    const int64_t* entry_coords(size_t e) const { return entries_.coords.data() + e * dims_.size(); }
    double entry_value(size_t e) const { return entries_.vals[e]; }

    double at(int64_t linear_index) {
        if (dense_) return dense_values_[static_cast<size_t>(linear_index)];
        if (!lookup_built_) build_lookup();
        const auto it = lookup_.find(linear_index);
        return it == lookup_.end() ? 0.0 : it->second;
    }

    // Whether an entry is stored at `linear_index` (always, when dense); its value if so.
    bool find(int64_t linear_index, double& value) {
        if (dense_) {
            value = dense_values_[static_cast<size_t>(linear_index)];
            return true;
        }
        if (!lookup_built_) build_lookup();
        const auto it = lookup_.find(linear_index);
        if (it == lookup_.end()) return false;
        value = it->second;
        return true;
    }

    // Built once per set of key modes and kept for every later term.
    const ScanIndex& scan_index(const std::vector<int>& key_modes) {
        auto [it, inserted] = scan_indices_.try_emplace(key_modes);
        if (inserted) build_scan_index(key_modes, it->second);
        return it->second;
    }

private:
    int64_t linear(const int64_t* coords) const {
        int64_t l = 0;
        for (size_t m = 0; m < dims_.size(); ++m) l += strides_[m] * coords[m];
        return l;
    }

    // Returns how many coordinates hold an entry when `count` (else 0).
    int64_t scatter_into_dense(const Tensor& t, bool count_present = false) {
        const size_t order = dims_.size();
        if (t.coords.size() != t.nnz() * order) throw std::invalid_argument("malformed input tensor");
        dense_values_.assign(static_cast<size_t>(checked_size(dims_)), 0.0);
        std::vector<bool> present(count_present ? dense_values_.size() : 0, false);
        int64_t count = 0;
        for (size_t e = 0; e < t.nnz(); ++e) {
            const int64_t* coords = t.coords.data() + e * order;
            for (size_t m = 0; m < order; ++m)
                if (coords[m] < 0 || coords[m] >= dims_[m]) throw std::invalid_argument("input coordinate out of range");
            const auto l = static_cast<size_t>(linear(coords));
            dense_values_[l] += t.vals[e];
            if (count_present && !present[l]) {
                present[l] = true;
                ++count;
            }
        }
        return count;
    }

    void build_lookup() {
        lookup_.reserve(entries_.nnz());
        for (size_t e = 0; e < entries_.nnz(); ++e) lookup_[linear(entry_coords(e))] = entries_.vals[e];
        lookup_built_ = true;
    }

    void build_scan_index(const std::vector<int>& key_modes, ScanIndex& index) const {
        std::vector<int64_t> key_dims;
        for (int m : key_modes) key_dims.push_back(dims_[static_cast<size_t>(m)]);
        index.key_strides = row_major_strides(key_dims);
        std::vector<int64_t> keys(nnz());
        for (size_t e = 0; e < nnz(); ++e)
            for (size_t q = 0; q < key_modes.size(); ++q)
                keys[e] += index.key_strides[q] * entry_coords(e)[key_modes[q]];
        index.entries.resize(nnz());
        std::iota(index.entries.begin(), index.entries.end(), size_t{0});
        std::stable_sort(index.entries.begin(), index.entries.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
        for (size_t begin = 0; begin < nnz();) {
            size_t end = begin;
            while (end < nnz() && keys[index.entries[end]] == keys[index.entries[begin]]) ++end;
            index.groups[keys[index.entries[begin]]] = {begin, end};
            begin = end;
        }
    }

    std::vector<int64_t> dims_, strides_;
    bool dense_ = false;
    std::vector<double> dense_values_;
    Tensor entries_;  // sparse case: canonical entries
    bool lookup_built_ = false;
    std::unordered_map<int64_t, double> lookup_;
    std::map<std::vector<int>, ScanIndex> scan_indices_;
};

// =============================================================================================
// Output accumulation

class Accumulator {
public:
    explicit Accumulator(std::vector<int64_t> dims) : dims_(std::move(dims)), strides_(row_major_strides(dims_)) {
        const int64_t size = checked_size(dims_);
        dense_ = size <= kMaxDenseEntries;
        if (dense_) {
            values_.assign(static_cast<size_t>(size), 0.0);
            touched_.assign(static_cast<size_t>(size), 0);
        }
    }

    // For a max or min reduction: keys over `dims`, the output's dims then the reduced
    // variables', but one value per output coordinate (the first `kept` dims), starting at `init`
    // and combined with each value added by `func` (Max or Min). result() holds every output
    // coordinate.
    Accumulator(std::vector<int64_t> dims, size_t kept, Func func, double init)
        : dims_(std::move(dims)), strides_(row_major_strides(dims_)), dense_(false), reduce_(true), func_(func) {
        checked_size(dims_);  // keys must not overflow
        kept_dims_.assign(dims_.begin(), dims_.begin() + static_cast<std::ptrdiff_t>(kept));
        const int64_t size = checked_size(kept_dims_);
        if (size > kMaxDenseEntries)
            throw std::runtime_error("the output of a max or min reduction is too large to hold densely");
        values_.assign(static_cast<size_t>(size), init);
        reduced_size_ = std::max<int64_t>(1, checked_size(std::vector<int64_t>(dims_.begin() + static_cast<std::ptrdiff_t>(kept), dims_.end())));
    }

    int64_t stride(size_t mode) const { return strides_[mode]; }

    int64_t key_of(const int64_t* coords) const {
        int64_t key = 0;
        for (size_t m = 0; m < dims_.size(); ++m) key += strides_[m] * coords[m];
        return key;
    }

    void add(int64_t key, double value) {
        if (dense_) {
            values_[static_cast<size_t>(key)] += value;
            touched_[static_cast<size_t>(key)] = 1;
        } else if (!reduce_) {
            sparse_[key] += value;
        } else {
            double& kept = values_[static_cast<size_t>(key / reduced_size_)];
            kept = apply(func_, kept, value);
        }
    }

    Tensor result() const {
        if (reduce_) return every_coordinate();
        std::vector<std::pair<int64_t, double>> reached;
        if (dense_) {
            for (size_t k = 0; k < values_.size(); ++k)
                if (touched_[k]) reached.emplace_back(static_cast<int64_t>(k), values_[k]);
        } else {
            reached.assign(sparse_.begin(), sparse_.end());
            std::sort(reached.begin(), reached.end());
        }
        Tensor t;
        t.dims = dims_;
        t.coords.resize(reached.size() * dims_.size());
        t.vals.resize(reached.size());
        for (size_t e = 0; e < reached.size(); ++e) {
            for (size_t m = 0; m < dims_.size(); ++m)
                t.coords[e * dims_.size() + m] = reached[e].first / strides_[m] % dims_[m];
            t.vals[e] = reached[e].second;
        }
        return t;
    }

private:
    // A reduction's result: every output coordinate, row-major.
    Tensor every_coordinate() const {
        Tensor t;
        t.dims = kept_dims_;
        const size_t order = kept_dims_.size();
        const std::vector<int64_t> strides = row_major_strides(kept_dims_);
        t.coords.resize(values_.size() * order);
        t.vals = values_;
        for (size_t e = 0; e < values_.size(); ++e)
            for (size_t m = 0; m < order; ++m)
                t.coords[e * order + m] = static_cast<int64_t>(e) / strides[m] % kept_dims_[m];
        return t;
    }

    std::vector<int64_t> dims_, strides_;
    bool dense_ = true;
    std::vector<double> values_;
    std::vector<uint8_t> touched_;
    std::unordered_map<int64_t, double> sparse_;
    // Max or min reductions.
    bool reduce_ = false;
    Func func_ = Func::Max;
    std::vector<int64_t> kept_dims_;
    int64_t reduced_size_ = 1;
};

// =============================================================================================
// Term execution

struct AccessInfo {
    StoredTensor* tensor = nullptr;
    std::vector<int> vars;  // variable id per mode
    bool checked = false;   // stored exactly and sparse: a lookup finding no entry means no point there
};

// A function call that reads a tensor (the others are folded into literals first).
struct CallInfo {
    const Expr* call = nullptr;
    std::vector<int> vars;                    // its index variables, in order of first appearance
    bool constant_arg[2] = {false, false};    // max, min: this argument reads no tensor, so adds no points
    bool everywhere = false;                  // present at every point of its variables
    Tensor points;                            // its points and values, once materialized
    bool materialized = false;
    std::unique_ptr<StoredTensor> temporary[2];  // `points` stored, for scans; [1] absolute values
    int temporary_slot[2] = {-1, -1};            // the temporaries' accesses
};

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

// Everything a term needs from the evaluation as a whole.
struct Context {
    // By Expr::slot of an access, then the calls' temporaries. Those are added while a term is
    // planned, never while one runs, so a running term's references into it stay valid.
    std::vector<AccessInfo> accesses;
    std::vector<CallInfo> calls;      // by Expr::slot of a call
    std::vector<int64_t> var_sizes;
};

// Where a term's values go.
struct Target {
    std::vector<int> output_vars;
    Accumulator* output = nullptr;
    bool magnitude = false;  // take function calls' values absolute (evaluate_magnitude, outside any call)
};

// The slot of an access to the call's points and values (absolute: |values|), stored exactly.
int materialize(Context& ctx, CallInfo& call, bool absolute);

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

// =============================================================================================
// Function calls

// The points over `vars` where `e` (every variable of which is among them, so nothing is summed)
// is present, with its values: the assignment T(vars) = e, each point reached once and only if
// present. Variables `e` lacks are broadcast: u(i) + v(j) is present where u(i) or v(j) is stored.
Tensor evaluate_points(Context& ctx, const Expr& e, const std::vector<int>& vars) {
    std::vector<int64_t> dims;
    for (int v : vars) dims.push_back(ctx.var_sizes[static_cast<size_t>(v)]);
    Accumulator points(dims);
    const Target target{vars, &points, false};
    const std::set<int> loop_vars(vars.begin(), vars.end());
    for (const Term& term : expand(e)) TermRunner(term, loop_vars, ctx, target).run();
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

// Whether `e` (inside a call, so its accesses are stored exactly) is present at every point.
bool everywhere(const Context& ctx, const Expr& e);

bool calls_everywhere(const Context& ctx, const Expr& e) {
    if (e.kind == Expr::Kind::Call) return ctx.calls[static_cast<size_t>(e.slot)].everywhere;
    return (!e.left || calls_everywhere(ctx, *e.left)) && (!e.right || calls_everywhere(ctx, *e.right));
}

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

// =============================================================================================
// Index variables: ids and sizes

class Variables {
public:
    int id(const std::string& name) {
        auto [it, inserted] = ids_.try_emplace(name, static_cast<int>(names_.size()));
        if (inserted) {
            names_.push_back(name);
            sizes_.push_back(-1);
            sources_.emplace_back();
        }
        return it->second;
    }

    bool known(const std::string& name) const { return ids_.count(name) > 0; }
    size_t count() const { return names_.size(); }
    const std::vector<int64_t>& sizes() const { return sizes_; }

    void set_size(int var, int64_t size, const std::string& source) {
        auto& current = sizes_[static_cast<size_t>(var)];
        if (current >= 0 && current != size)
            throw std::runtime_error("index variable '" + names_[static_cast<size_t>(var)] + "' has size " +
                                     std::to_string(current) + " from " + sources_[static_cast<size_t>(var)] +
                                     " but " + std::to_string(size) + " from " + source);
        current = size;
        sources_[static_cast<size_t>(var)] = source;
    }

    void require_all_sized() const {
        for (size_t v = 0; v < names_.size(); ++v)
            if (sizes_[v] < 0)
                throw std::runtime_error("size of index variable '" + names_[v] +
                                         "' is unknown: no input uses it; give it in extra_dims");
    }

private:
    std::map<std::string, int> ids_;
    std::vector<std::string> names_;
    std::vector<int64_t> sizes_;
    std::vector<std::string> sources_;
};

void check_output_indices(const Spec& spec) {
    std::set<std::string> seen;
    for (const auto& name : spec.output_indices)
        if (!seen.insert(name).second)
            throw std::runtime_error("index variable '" + name + "' repeated on the left-hand side");
}

using StoredInputs = std::map<std::string, std::unique_ptr<StoredTensor>>;

// The stored inputs, one per name and use: accesses outside function calls read `outer` (made
// exact when the spec has calls, so that `*` intersects exactly there too; absolute values for
// evaluate_magnitude), accesses inside calls read `inner` (exact, the given values).
struct Storage {
    const std::map<std::string, Tensor>* outer_inputs = nullptr;
    const std::map<std::string, Tensor>* inner_inputs = nullptr;
    bool outer_exact = false;
    bool shared = false;  // inner is outer: same values, both exact
    StoredInputs outer, inner;
    std::map<std::string, size_t> orders;

    StoredTensor& get(const Expr& access, bool in_call) {
        auto [order, first] = orders.try_emplace(access.tensor, access.indices.size());
        if (order->second != access.indices.size())
            throw std::runtime_error("tensor '" + access.tensor + "' is used with different numbers of indices");
        const bool use_inner = in_call && !shared;
        const auto& inputs = use_inner ? *inner_inputs : *outer_inputs;
        const auto input = inputs.find(access.tensor);
        if (input == inputs.end()) throw std::runtime_error("no input tensor named '" + access.tensor + "'");
        auto& tensor = (use_inner ? inner : outer)[access.tensor];
        if (!tensor)
            tensor = std::make_unique<StoredTensor>(input->second, access.indices.size(), access.tensor,
                                                    use_inner || outer_exact);
        return *tensor;
    }
};

// Gives every access its stored tensor and sizes its variables from that tensor; gives every call
// its variables (inner calls first, so the table lists a call after the calls inside it).
void resolve(Expr& e, bool in_call, Storage& storage, Variables& vars, Context& ctx) {
    if (e.kind == Expr::Kind::Access) {
        StoredTensor& tensor = storage.get(e, in_call);
        AccessInfo info{&tensor, {}, (in_call || storage.outer_exact) && !tensor.dense()};
        for (size_t m = 0; m < e.indices.size(); ++m) {
            const int v = vars.id(e.indices[m]);
            info.vars.push_back(v);
            vars.set_size(v, tensor.dims()[m], e.tensor + " mode " + std::to_string(m + 1));
        }
        e.slot = static_cast<int>(ctx.accesses.size());
        ctx.accesses.push_back(std::move(info));
        return;
    }
    const bool call = e.kind == Expr::Kind::Call;
    if (e.left) resolve(*e.left, in_call || call, storage, vars, ctx);
    if (e.right) resolve(*e.right, in_call || call, storage, vars, ctx);
    if (!call) return;
    CallInfo info;
    info.call = &e;
    std::vector<std::string> names;
    collect_indices_in_order(e, names);
    for (const auto& name : names) info.vars.push_back(vars.id(name));
    info.constant_arg[0] = !has_access(*e.left);
    info.constant_arg[1] = e.right && !has_access(*e.right);
    e.slot = static_cast<int>(ctx.calls.size());
    ctx.calls.push_back(std::move(info));
}

// The initial output of `+=`, canonical; its dims also size the output variables.
std::unique_ptr<Tensor> initial_output_sizing_variables(const Spec& spec, const Tensor& initial_output, Variables& vars,
                                                        const std::vector<int>& output_vars) {
    auto initial = std::make_unique<Tensor>(canonical(squeezed(initial_output, spec.output_indices.size(), spec.output)));
    for (size_t m = 0; m < output_vars.size(); ++m)
        vars.set_size(output_vars[m], initial->dims[m], "the initial output");
    return initial;
}

void apply_extra_dims(const std::map<std::string, int64_t>& extra_dims, Variables& vars) {
    for (const auto& [name, size] : extra_dims) {
        if (!vars.known(name)) continue;  // harmless: a size for a variable this spec does not use
        if (size < 0) throw std::runtime_error("negative size for index variable '" + name + "'");
        vars.set_size(vars.id(name), size, "extra_dims");
    }
}

// A max or min reduction (reference.h): per output coordinate, the extremum of the expression's
// values over the points it visits, with the output's and the reduced variables bound (every
// variable of the expression is one of them); -inf for max, +inf for min where it visits none.
// Magnitudes (target.magnitude): the largest sum of magnitudes at a visited point, 0 where none.
Tensor reduce_extremum(const Spec& spec, const std::vector<Term>& terms, Variables& vars, Context& ctx, const Target& target) {
    std::vector<int> point_vars = target.output_vars;
    for (const auto& name : spec.reduced_vars) point_vars.push_back(vars.id(name));
    std::vector<int64_t> point_dims;
    for (int v : point_vars) point_dims.push_back(ctx.var_sizes[static_cast<size_t>(v)]);
    const bool max = spec.reduction == Reduction::Max || target.magnitude;
    const double inf = std::numeric_limits<double>::infinity();
    Accumulator extremum(point_dims, target.output_vars.size(), max ? Func::Max : Func::Min,
                         target.magnitude ? 0.0 : max ? -inf : inf);
    const std::set<int> loop_vars(point_vars.begin(), point_vars.end());
    if (terms.size() == 1) {  // each point reached once, and only if present: straight into the extremum
        TermRunner(terms[0], loop_vars, ctx, Target{point_vars, &extremum, target.magnitude}).run();
        return extremum.result();
    }
    // Several terms: first their sum at each point (a point of any of them), an absent one reading 0.
    Accumulator sums(point_dims);
    for (const Term& term : terms) TermRunner(term, loop_vars, ctx, Target{point_vars, &sums, target.magnitude}).run();
    const Tensor points = sums.result();
    for (size_t e = 0; e < points.nnz(); ++e)
        extremum.add(extremum.key_of(points.coords.data() + e * point_dims.size()), points.vals[e]);
    return extremum.result();
}

}  // namespace

// =============================================================================================
// Public entry points

namespace {

Tensor evaluate_terms(const std::string& spec_text, const std::map<std::string, Tensor>& given_inputs,
                      const std::map<std::string, int64_t>& extra_dims, const Tensor* initial_output, bool magnitude) {
    Spec spec = parse_spec(spec_text);
    check_output_indices(spec);
    fold_constant_calls(spec.rhs);
    const bool calls = has_call(*spec.rhs);
    // `sum(j: e)` is `out = e`; max and min need the points e visits, exactly.
    const bool extremum = spec.reduction == Reduction::Max || spec.reduction == Reduction::Min;
    std::vector<Term> terms = expand(*spec.rhs);
    std::map<std::string, Tensor> absolute;
    if (magnitude) {
        for (Term& t : terms) t.coef = std::abs(t.coef);
        for (const auto& [name, tensor] : given_inputs) {
            Tensor a = tensor;
            for (double& v : a.vals) v = std::abs(v);
            absolute.emplace(name, std::move(a));
        }
    }
    Storage storage;
    storage.outer_inputs = magnitude ? &absolute : &given_inputs;
    storage.inner_inputs = &given_inputs;  // a call's argument takes the real values, even for magnitudes
    storage.outer_exact = calls || extremum;
    storage.shared = !magnitude;

    Variables vars;
    Context ctx;
    Target target;
    target.magnitude = magnitude;
    for (const auto& name : spec.output_indices) target.output_vars.push_back(vars.id(name));
    resolve(*spec.rhs, false, storage, vars, ctx);
    std::unique_ptr<Tensor> initial;
    if (spec.accumulate && initial_output)
        initial = initial_output_sizing_variables(spec, *initial_output, vars, target.output_vars);
    apply_extra_dims(extra_dims, vars);
    vars.require_all_sized();
    ctx.var_sizes = vars.sizes();
    for (CallInfo& call : ctx.calls) {  // inner calls first
        const Expr& e = *call.call;
        call.everywhere = (!call.constant_arg[0] && everywhere(ctx, *e.left)) ||
                          (e.right && !call.constant_arg[1] && everywhere(ctx, *e.right));
    }
    if (extremum) return reduce_extremum(spec, terms, vars, ctx, target);

    std::vector<int64_t> output_dims;
    for (int v : target.output_vars) output_dims.push_back(ctx.var_sizes[static_cast<size_t>(v)]);
    Accumulator output(output_dims);
    target.output = &output;
    if (initial)
        for (size_t e = 0; e < initial->nnz(); ++e)
            output.add(output.key_of(initial->coords.data() + e * output_dims.size()), initial->vals[e]);

    for (const Term& term : terms) {
        std::set<int> loop_vars(target.output_vars.begin(), target.output_vars.end());
        for (const auto& name : term_indices(term)) loop_vars.insert(vars.id(name));
        TermRunner(term, loop_vars, ctx, target).run();
    }
    return output.result();
}

}  // namespace

Tensor evaluate(const std::string& spec_text, const std::map<std::string, Tensor>& inputs,
                const std::map<std::string, int64_t>& extra_dims, const Tensor* initial_output) {
    return evaluate_terms(spec_text, inputs, extra_dims, initial_output, false);
}

Tensor evaluate_magnitude(const std::string& spec_text, const std::map<std::string, Tensor>& inputs,
                          const std::map<std::string, int64_t>& extra_dims) {
    return evaluate_terms(spec_text, inputs, extra_dims, nullptr, true);
}

}  // namespace spgen_ref
