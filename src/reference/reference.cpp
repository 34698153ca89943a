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
    std::vector<const Expr*> reciprocals;  // denominators with index variables, evaluated pointwise
};

bool has_access(const Expr& e) {
    if (e.kind == Expr::Kind::Access) return true;
    return (e.left && has_access(*e.left)) || (e.right && has_access(*e.right));
}

double constant_value(const Expr& e) {
    switch (e.kind) {
    case Expr::Kind::Literal: return e.literal;
    case Expr::Kind::Negate: return -constant_value(*e.left);
    case Expr::Kind::Add: return constant_value(*e.left) + constant_value(*e.right);
    case Expr::Kind::Subtract: return constant_value(*e.left) - constant_value(*e.right);
    case Expr::Kind::Multiply: return constant_value(*e.left) * constant_value(*e.right);
    case Expr::Kind::Divide: return constant_value(*e.left) / constant_value(*e.right);
    case Expr::Kind::Access: break;
    }
    throw std::logic_error("constant_value of a tensor access");
}

std::vector<Term> scaled(std::vector<Term> terms, double factor) {
    for (auto& t : terms) t.coef *= factor;
    return terms;
}

std::vector<Term> expand(const Expr& e) {
    switch (e.kind) {
    case Expr::Kind::Literal: return {Term{e.literal, {}, {}}};
    case Expr::Kind::Access: return {Term{1.0, {&e}, {}}};
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
                Term t{a.coef * b.coef, a.factors, a.reciprocals};
                t.factors.insert(t.factors.end(), b.factors.begin(), b.factors.end());
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

void collect_accesses(Expr& e, std::vector<Expr*>& out) {
    if (e.kind == Expr::Kind::Access) out.push_back(&e);
    if (e.left) collect_accesses(*e.left, out);
    if (e.right) collect_accesses(*e.right, out);
}

void collect_indices(const Expr& e, std::set<std::string>& out) {
    out.insert(e.indices.begin(), e.indices.end());
    if (e.left) collect_indices(*e.left, out);
    if (e.right) collect_indices(*e.right, out);
}

std::set<std::string> term_indices(const Term& term) {
    std::set<std::string> names;
    for (const Expr* f : term.factors) collect_indices(*f, names);
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

class StoredTensor {
public:
    StoredTensor(const Tensor& tensor, size_t order, const std::string& name) {
        Tensor reduced;  // only filled when trailing unit modes must go; avoids copying big inputs
        const Tensor& t = tensor.dims.size() == order ? tensor : (reduced = squeezed(tensor, order, name));
        dims_ = t.dims;
        strides_ = row_major_strides(dims_);
        const int64_t size = checked_size(dims_);
        dense_ = size <= kMaxDenseEntries && 2 * static_cast<int64_t>(t.nnz()) > size;
        if (dense_) scatter_into_dense(t);
        else entries_ = canonical(t);
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

    void scatter_into_dense(const Tensor& t) {
        const size_t order = dims_.size();
        if (t.coords.size() != t.nnz() * order) throw std::invalid_argument("malformed input tensor");
        dense_values_.assign(static_cast<size_t>(checked_size(dims_)), 0.0);
        for (size_t e = 0; e < t.nnz(); ++e) {
            const int64_t* coords = t.coords.data() + e * order;
            for (size_t m = 0; m < order; ++m)
                if (coords[m] < 0 || coords[m] >= dims_[m]) throw std::invalid_argument("input coordinate out of range");
            dense_values_[static_cast<size_t>(linear(coords))] += t.vals[e];
        }
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
        } else {
            sparse_[key] += value;
        }
    }

    Tensor result() const {
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
    std::vector<int64_t> dims_, strides_;
    bool dense_ = true;
    std::vector<double> values_;
    std::vector<uint8_t> touched_;
    std::unordered_map<int64_t, double> sparse_;
};

// =============================================================================================
// Term execution

struct AccessInfo {
    StoredTensor* tensor = nullptr;
    std::vector<int> vars;  // variable id per mode
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
    std::vector<AccessInfo> accesses;  // by Expr::slot
    std::vector<int64_t> var_sizes;
    std::vector<int> output_vars;
    Accumulator* output = nullptr;
};

class TermRunner {
public:
    TermRunner(const Term& term, const std::set<int>& loop_vars, Context& context)
        : term_(term), ctx_(context), bound_(context.var_sizes.size(), 0) {
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
        for (size_t f = 0; f < term_.factors.size(); ++f)
            if (!scanned[f]) lookups_.push_back(term_.factors[f]->slot);

        std::vector<int> dense_order(ctx_.output_vars);
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
        std::set<int> pending(ctx_.output_vars.begin(), ctx_.output_vars.end());
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
            for (size_t m = 0; m < ctx_.output_vars.size(); ++m)
                key += ctx_.output->stride(m) * bound_[static_cast<size_t>(ctx_.output_vars[m])];
            ctx_.output->add(key, partial * sum_from(level));
            return;
        }
        for_each_binding(levels_[level], [&](double value) { visit(level + 1, partial * value); });
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

    double lookup(int slot) {
        const AccessInfo& a = ctx_.accesses[static_cast<size_t>(slot)];
        int64_t key = 0;
        for (size_t m = 0; m < a.vars.size(); ++m) key += a.tensor->stride(m) * bound_[static_cast<size_t>(a.vars[m])];
        return a.tensor->at(key);
    }

    double evaluate_at_point(const Expr& e) {
        switch (e.kind) {
        case Expr::Kind::Literal: return e.literal;
        case Expr::Kind::Access: return lookup(e.slot);
        case Expr::Kind::Negate: return -evaluate_at_point(*e.left);
        case Expr::Kind::Add: return evaluate_at_point(*e.left) + evaluate_at_point(*e.right);
        case Expr::Kind::Subtract: return evaluate_at_point(*e.left) - evaluate_at_point(*e.right);
        case Expr::Kind::Multiply: return evaluate_at_point(*e.left) * evaluate_at_point(*e.right);
        case Expr::Kind::Divide: return evaluate_at_point(*e.left) / evaluate_at_point(*e.right);
        }
        throw std::logic_error("unknown expression kind");
    }

    const Term& term_;
    Context& ctx_;
    std::vector<int64_t> bound_;  // current value per variable
    std::vector<Level> levels_;
    std::vector<int> lookups_;    // slots of factors looked up at the innermost point
    size_t output_level_ = 0;
};

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

// Gives every access its stored tensor (one per name) and sizes its variables from that tensor.
void resolve_accesses(Expr& rhs, const std::map<std::string, Tensor>& inputs, Variables& vars, Context& ctx,
                      StoredInputs& stored) {
    std::vector<Expr*> accesses;
    collect_accesses(rhs, accesses);
    for (Expr* access : accesses) {
        const auto input = inputs.find(access->tensor);
        if (input == inputs.end()) throw std::runtime_error("no input tensor named '" + access->tensor + "'");
        auto& tensor = stored[access->tensor];
        if (!tensor) tensor = std::make_unique<StoredTensor>(input->second, access->indices.size(), access->tensor);
        if (tensor->dims().size() != access->indices.size())
            throw std::runtime_error("tensor '" + access->tensor + "' is used with different numbers of indices");
        AccessInfo info{tensor.get(), {}};
        for (size_t m = 0; m < access->indices.size(); ++m) {
            const int v = vars.id(access->indices[m]);
            info.vars.push_back(v);
            vars.set_size(v, tensor->dims()[m], access->tensor + " mode " + std::to_string(m + 1));
        }
        access->slot = static_cast<int>(ctx.accesses.size());
        ctx.accesses.push_back(std::move(info));
    }
}

// The initial output of `+=`, canonical; its dims also size the output variables.
std::unique_ptr<Tensor> initial_output_sizing_variables(const Spec& spec, const Tensor& initial_output, Variables& vars,
                                                        const Context& ctx) {
    auto initial = std::make_unique<Tensor>(canonical(squeezed(initial_output, spec.output_indices.size(), spec.output)));
    for (size_t m = 0; m < ctx.output_vars.size(); ++m)
        vars.set_size(ctx.output_vars[m], initial->dims[m], "the initial output");
    return initial;
}

void apply_extra_dims(const std::map<std::string, int64_t>& extra_dims, Variables& vars) {
    for (const auto& [name, size] : extra_dims) {
        if (!vars.known(name)) continue;  // harmless: a size for a variable this spec does not use
        if (size < 0) throw std::runtime_error("negative size for index variable '" + name + "'");
        vars.set_size(vars.id(name), size, "extra_dims");
    }
}

}  // namespace

// =============================================================================================
// Public entry points

namespace {

Tensor evaluate_terms(const std::string& spec_text, const std::map<std::string, Tensor>& given_inputs,
                      const std::map<std::string, int64_t>& extra_dims, const Tensor* initial_output, bool magnitude) {
    Spec spec = parse_spec(spec_text);
    check_output_indices(spec);
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
    const std::map<std::string, Tensor>& inputs = magnitude ? absolute : given_inputs;

    Variables vars;
    Context ctx;
    for (const auto& name : spec.output_indices) ctx.output_vars.push_back(vars.id(name));
    StoredInputs stored;
    resolve_accesses(*spec.rhs, inputs, vars, ctx, stored);
    std::unique_ptr<Tensor> initial;
    if (spec.accumulate && initial_output) initial = initial_output_sizing_variables(spec, *initial_output, vars, ctx);
    apply_extra_dims(extra_dims, vars);
    vars.require_all_sized();
    ctx.var_sizes = vars.sizes();

    std::vector<int64_t> output_dims;
    for (int v : ctx.output_vars) output_dims.push_back(ctx.var_sizes[static_cast<size_t>(v)]);
    Accumulator output(output_dims);
    ctx.output = &output;
    if (initial)
        for (size_t e = 0; e < initial->nnz(); ++e)
            output.add(output.key_of(initial->coords.data() + e * output_dims.size()), initial->vals[e]);

    for (const Term& term : terms) {
        std::set<int> loop_vars(ctx.output_vars.begin(), ctx.output_vars.end());
        for (const auto& name : term_indices(term)) loop_vars.insert(vars.id(name));
        TermRunner(term, loop_vars, ctx).run();
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
