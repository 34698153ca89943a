// Coordinate-wise tensors for the independent reference checker of generated kernels.
//
// This code deliberately shares nothing with the rest of src/ (the compiler): a bug in the compiler's own file reader or
// parser must not be able to hide in a shared piece. Coordinates are 0-based in memory and
// 1-based in files (and in messages meant for people).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace spgen_ref {

struct Tensor {
    std::vector<int64_t> dims;    // order() entries; empty for a scalar
    std::vector<int64_t> coords;  // nnz() * order(), entry-major, 0-based
    std::vector<double> vals;     // one per entry; duplicates mean "sum them"

    int order() const { return static_cast<int>(dims.size()); }
    size_t nnz() const { return vals.size(); }
};

// Reads Matrix Market (.mtx: coordinate or column-major array; real, integer or pattern (= 1);
// general, symmetric or skew-symmetric, expanded to both triangles) or FROSTT (.tns: lines of
// 1-based coordinates and a value; dims = largest coordinate per mode; '#' lines are comments).
// Files whose name ends in neither are recognised by a "%%MatrixMarket" first line.
// Throws std::runtime_error("path:line: message") on malformed input.
Tensor read_tensor(const std::string& path);

// Writes order <= 2 as Matrix Market (vectors as n x 1, scalars as 1 x 1): column-major `array`
// when dense, row-major sorted `coordinate` otherwise; order >= 3 as .tns (all entries when
// dense). Duplicates are summed first. Because .tns has no header, a sparse .tns gets an explicit
// zero at the last coordinate when needed so that the dims survive a round trip. Values use
// %.17g. Throws std::invalid_argument if the path ends in .mtx/.tns and that format cannot hold
// the tensor's order, std::runtime_error if the file cannot be written.
void write_tensor(const std::string& path, const Tensor& tensor, bool dense);

// Every entry present, in row-major order, values uniform in [-1, 1).
Tensor random_dense(const std::vector<int64_t>& dims, uint64_t seed);

struct RandomShape {
    bool empty_rows = false;  // make ~1/4 of the rows (mode 0) empty
    bool dense_row = false;   // make one row fully dense
    bool skewed = false;      // power-law row lengths
};

// About density * (dense size) entries, coordinates unique and sorted row-major, values uniform
// in [-1, 1). Bit-identical for a given (dims, density, seed, shape) on every platform.
Tensor random_sparse(const std::vector<int64_t>& dims, double density, uint64_t seed,
                     RandomShape shape = {});

// Sorted row-major, duplicates summed; explicit zeros are kept.
// Throws std::invalid_argument on a coordinate outside dims or mismatched array sizes.
Tensor canonical(const Tensor& tensor);

// The tensor with its trailing dims of size 1 dropped, down to `order` (an n x 1 Matrix Market
// file used as a vector); throws std::runtime_error naming `name` where a dropped dim is not 1.
Tensor squeezed(const Tensor& t, size_t order, const std::string& name);

// The splitmix64 generator behind the random tensors, exposed so tests can derive seeds and
// values in the same portable way.
class SplitMix64 {
public:
    explicit SplitMix64(uint64_t seed) : state_(seed) {}
    uint64_t next();
    double uniform01();                   // [0, 1), 53 random bits
    uint64_t below(uint64_t bound);       // [0, bound), bound > 0
    double uniform_pm1() { return 2.0 * uniform01() - 1.0; }  // [-1, 1)

private:
    uint64_t state_;
};

}  // namespace spgen_ref
