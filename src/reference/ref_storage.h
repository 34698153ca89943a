// How the reference evaluator keeps tensors (reference.cpp's method, steps 3 and 5): an input as a
// dense array or as sorted entries with a hash lookup and scan indices (StoredTensor), and the
// output that terms are summed into (Accumulator, also the per-coordinate max or min of a max or
// min reduction). Header-only, so that their small members inline where terms run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ref_internal.h"
#include "ref_tensor.h"

namespace spgen_ref::detail {

// =============================================================================================
// Input storage

inline int64_t checked_size(const std::vector<int64_t>& dims) {
    int64_t size = 1;
    for (int64_t d : dims)
        if (__builtin_mul_overflow(size, d, &size)) throw std::runtime_error("tensor too large for 64-bit indices");
    return size;
}

inline std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
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

}  // namespace spgen_ref::detail
