// Comparing a kernel's result with the reference's (reference.h).
#include "reference.h"

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

bool is_canonical(const Tensor& t) {
    const size_t order = t.dims.size();
    if (t.coords.size() != t.nnz() * order) return false;
    for (size_t e = 0; e < t.nnz(); ++e) {
        const int64_t* c = t.coords.data() + e * order;
        for (size_t m = 0; m < order; ++m)
            if (c[m] < 0 || c[m] >= t.dims[m]) return false;
        if (e > 0 && !std::lexicographical_compare(c - order, c, c, c + order)) return false;
    }
    return true;
}

// `t` without trailing modes of extent 1 (the n x 1 file convention for vectors), sorted and
// without duplicates. Returns `t` itself when nothing changes, else a copy kept in `storage`, so
// large results are not copied.
const Tensor& comparable_form(const Tensor& t, Tensor& storage) {
    size_t order = t.dims.size();
    while (order > 0 && t.dims[order - 1] == 1) --order;
    if (order == t.dims.size() && is_canonical(t)) return t;
    storage = canonical(squeezed(t, order, ""));
    return storage;
}

std::string format_coords(const int64_t* coords, size_t order) {
    std::string s = "(";
    for (size_t m = 0; m < order; ++m) s += (m ? "," : "") + std::to_string(coords[m] + 1);
    return s + ")";
}

std::string format_dims(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t m = 0; m < dims.size(); ++m) s += (m ? " x " : "") + std::to_string(dims[m]);
    return s + "]";
}

std::string format_value(double v) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.17g", v);
    return buffer;
}

}  // namespace

namespace {

Comparison compare_with(const Tensor& got_in, const Tensor& want_in, double rtol, double atol, const Tensor* magnitude_in,
                        double mtol) {
    Tensor got_storage, want_storage;
    const Tensor* got_ptr = nullptr;
    try {
        got_ptr = &comparable_form(got_in, got_storage);
    } catch (const std::exception& e) {
        return {false, std::string("malformed result: ") + e.what()};
    }
    const Tensor& got = *got_ptr;
    const Tensor& want = comparable_form(want_in, want_storage);
    Tensor magnitude_storage;
    const Tensor* magnitude = magnitude_in ? &comparable_form(*magnitude_in, magnitude_storage) : nullptr;
    size_t m = 0;  // the entry of `magnitude` at or after the current coordinates
    if (got.dims != want.dims)
        return {false, "dims differ: got " + format_dims(got_in.dims) + ", want " + format_dims(want_in.dims)};

    const size_t order = got.dims.size();
    auto coords_of = [order](const Tensor& t, size_t e) { return t.coords.data() + e * order; };
    size_t g = 0, w = 0, compared = 0, failures = 0;
    std::string details;
    while (g < got.nnz() || w < want.nnz()) {
        // Merge the two sorted entry lists; a side without the coordinate contributes 0.
        const bool take_got = g < got.nnz() &&
                              (w == want.nnz() || !std::lexicographical_compare(coords_of(want, w), coords_of(want, w) + order,
                                                                                coords_of(got, g), coords_of(got, g) + order));
        const bool take_want = w < want.nnz() &&
                               (g == got.nnz() || !std::lexicographical_compare(coords_of(got, g), coords_of(got, g) + order,
                                                                                coords_of(want, w), coords_of(want, w) + order));
        const int64_t* coords = take_got ? coords_of(got, g) : coords_of(want, w);
        const double gv = take_got ? got.vals[g++] : 0.0;
        const double wv = take_want ? want.vals[w++] : 0.0;
        ++compared;
        double bound = atol + rtol * std::abs(wv);
        if (magnitude) {
            while (m < magnitude->nnz() && std::lexicographical_compare(coords_of(*magnitude, m), coords_of(*magnitude, m) + order,
                                                                        coords, coords + order))
                ++m;
            if (m < magnitude->nnz() && std::equal(coords, coords + order, coords_of(*magnitude, m)))
                bound += mtol * std::abs(magnitude->vals[m]);
        }
        // An expected infinity (a max or min reduction over no point) is matched only by itself;
        // otherwise an infinite or NaN result fails, whatever the bound.
        const bool close = std::isinf(wv) ? gv == wv : std::isfinite(gv) && std::abs(gv - wv) <= bound;
        if (close) continue;
        if (++failures <= 5)
            details += "; " + format_coords(coords, order) + ": got " + format_value(gv) + ", want " + format_value(wv);
    }
    if (failures == 0) return {true, ""};
    return {false, std::to_string(failures) + " of " + std::to_string(compared) + " entries differ (rtol " +
                       format_value(rtol) + ", atol " + format_value(atol) +
                       (magnitude ? ", " + format_value(mtol) + " of the sum of magnitudes" : "") + ")" + details};
}

}  // namespace

Comparison compare(const Tensor& got_in, const Tensor& want_in, double rtol, double atol) {
    return compare_with(got_in, want_in, rtol, atol, nullptr, 0);
}

Comparison compare(const Tensor& got, const Tensor& want, double rtol, double atol, const Tensor& magnitude, double mtol) {
    return compare_with(got, want, rtol, atol, &magnitude, mtol);
}

}  // namespace spgen_ref
