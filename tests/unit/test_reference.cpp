// Tests of the independent reference evaluator (src/reference): hand-computed cases, a
// brute-force cross-check over the full dense iteration space, file round trips and compare().
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "ref_statements.h"
#include "ref_structure.h"
#include "ref_tensor.h"
#include "reference.h"

using namespace spgen_ref;

namespace {

// ---------------------------------------------------------------------------------------------
// Building and checking tensors

struct Entry {
    std::vector<int64_t> coords;  // 0-based
    double value;
};

Tensor sparse(std::vector<int64_t> dims, const std::vector<Entry>& entries) {
    Tensor t;
    t.dims = std::move(dims);
    for (const auto& e : entries) {
        t.coords.insert(t.coords.end(), e.coords.begin(), e.coords.end());
        t.vals.push_back(e.value);
    }
    return t;
}

// Every entry present, values given row-major.
Tensor dense(std::vector<int64_t> dims, const std::vector<double>& row_major) {
    Tensor t = random_dense(dims, 0);
    REQUIRE(t.nnz() == row_major.size());
    t.vals = row_major;
    return t;
}

Tensor scalar(double value) { return sparse({}, {{{}, value}}); }

void check_same(const Tensor& got, const Tensor& want, double tolerance = 1e-12) {
    const Comparison c = compare(got, want, tolerance, tolerance);
    CHECK_MESSAGE(c.ok, c.message);
}

// Dense copy of a tensor for brute-force evaluation; remembers which entries are stored.
class DenseView {
public:
    DenseView() = default;
    explicit DenseView(const Tensor& t) : dims_(t.dims) {
        int64_t size = 1;
        for (int64_t d : dims_) size *= d;
        values_.assign(static_cast<size_t>(size), 0.0);
        stored_.assign(static_cast<size_t>(size), false);
        for (size_t e = 0; e < t.nnz(); ++e) {
            const auto l = static_cast<size_t>(linear(t.coords.data() + e * t.dims.size()));
            values_[l] += t.vals[e];
            stored_[l] = true;
        }
    }

    double at(const std::vector<int64_t>& coords) const { return values_[static_cast<size_t>(linear(coords.data()))]; }
    bool stored(const std::vector<int64_t>& coords) const { return stored_[static_cast<size_t>(linear(coords.data()))]; }

private:
    int64_t linear(const int64_t* coords) const {
        int64_t l = 0;
        for (size_t m = 0; m < dims_.size(); ++m) l = l * dims_[m] + coords[m];
        return l;
    }

    std::vector<int64_t> dims_;
    std::vector<double> values_;
    std::vector<bool> stored_;
};

// One point of the full iteration space, with the inputs in dense form.
struct Point {
    const std::map<std::string, DenseView>* tensors;
    std::map<char, int64_t> at;

    double operator()(const std::string& name, std::initializer_list<char> vars) const {
        return tensors->at(name).at(coords(vars));
    }
    bool stored(const std::string& name, std::initializer_list<char> vars) const {
        return tensors->at(name).stored(coords(vars));
    }

private:
    std::vector<int64_t> coords(std::initializer_list<char> vars) const {
        std::vector<int64_t> c;
        for (char v : vars) c.push_back(at.at(v));
        return c;
    }
};

using Rhs = std::function<double(const Point&)>;
// A right-hand side that may have no value at a point (a function call outside its points).
using PresentRhs = std::function<std::optional<double>(const Point&)>;

// out(lhs_vars) = sum over every value of summed_vars of rhs, the points where it has no value
// left out: the full dense space, no cleverness.
Tensor brute_force_present(const std::string& lhs_vars, const std::string& summed_vars,
                           const std::map<char, int64_t>& sizes, const std::map<std::string, Tensor>& inputs,
                           const PresentRhs& rhs) {
    std::map<std::string, DenseView> views;
    for (const auto& [name, t] : inputs) views[name] = DenseView(t);
    std::vector<int64_t> out_dims;
    for (char v : lhs_vars) out_dims.push_back(sizes.at(v));
    Tensor out = random_dense(out_dims, 0);  // every coordinate, row-major; values overwritten

    const std::string all_vars = lhs_vars + summed_vars;
    for (size_t e = 0; e < out.nnz(); ++e) {
        Point p{&views, {}};
        for (size_t m = 0; m < lhs_vars.size(); ++m) p.at[lhs_vars[m]] = out.coords[e * lhs_vars.size() + m];
        double sum = 0;
        // Odometer over the summed variables.
        std::vector<int64_t> counter(summed_vars.size(), 0);
        bool empty = false;
        for (char v : summed_vars) empty = empty || sizes.at(v) == 0;
        while (!empty) {
            for (size_t s = 0; s < summed_vars.size(); ++s) p.at[summed_vars[s]] = counter[s];
            if (const std::optional<double> value = rhs(p)) sum += *value;
            size_t s = 0;
            while (s < counter.size() && ++counter[s] == sizes.at(summed_vars[s])) counter[s++] = 0;
            if (s == counter.size()) break;
        }
        out.vals[e] = sum;
    }
    return out;
}

Tensor brute_force(const std::string& lhs_vars, const std::string& summed_vars, const std::map<char, int64_t>& sizes,
                   const std::map<std::string, Tensor>& inputs, const Rhs& rhs) {
    return brute_force_present(lhs_vars, summed_vars, sizes, inputs,
                               [&](const Point& p) { return std::optional<double>(rhs(p)); });
}

// Random inputs of several kinds, chosen by `kind`: dense, or sparse with varied density and shape.
Tensor random_operand(const std::vector<int64_t>& dims, uint64_t seed, int kind) {
    switch (kind % 5) {
    case 0: return random_dense(dims, seed);
    case 1: return random_sparse(dims, 0.3, seed);
    case 2: return random_sparse(dims, 0.1, seed, RandomShape{true, false, false});
    case 3: return random_sparse(dims, 0.2, seed, RandomShape{false, true, true});
    default: return random_sparse(dims, 0.7, seed);  // stored densely by the evaluator
    }
}

// Small sizes that change with the seed, including extents of 1.
int64_t size_for(uint64_t seed, int salt) { return 1 + static_cast<int64_t>((seed * 7 + static_cast<uint64_t>(salt) * 3) % 6); }

struct CrossCase {
    std::string spec;
    std::string lhs_vars, summed_vars;
    std::map<std::string, std::string> operands;  // tensor name -> its index variables
    Rhs rhs;
};

// Random operands of varied kinds and sizes; the sizes chosen go to `sizes`.
std::map<std::string, Tensor> random_operands(const std::string& vars, const std::map<std::string, std::string>& operands,
                                              uint64_t seed, std::map<char, int64_t>& sizes) {
    int salt = 0;
    for (char v : vars) sizes[v] = size_for(seed, salt++);
    std::map<std::string, Tensor> inputs;
    int kind = static_cast<int>(seed);
    for (const auto& [name, operand_vars] : operands) {
        std::vector<int64_t> dims;
        for (char v : operand_vars) dims.push_back(sizes.at(v));
        inputs[name] = random_operand(dims, seed * 1000 + static_cast<uint64_t>(kind), kind);
        ++kind;
    }
    return inputs;
}

void cross_check(const CrossCase& c, uint64_t seed) {
    std::map<char, int64_t> sizes;
    const auto inputs = random_operands(c.lhs_vars + c.summed_vars, c.operands, seed, sizes);
    CAPTURE(c.spec);
    CAPTURE(seed);
    check_same(evaluate(c.spec, inputs), brute_force(c.lhs_vars, c.summed_vars, sizes, inputs, c.rhs));
}

// The same for specs with function calls, whose right-hand side may have no value at a point.
struct PresentCase {
    std::string spec;
    std::string lhs_vars, summed_vars;
    std::map<std::string, std::string> operands;
    PresentRhs rhs;
};

void cross_check(const PresentCase& c, uint64_t seed) {
    std::map<char, int64_t> sizes;
    const auto inputs = random_operands(c.lhs_vars + c.summed_vars, c.operands, seed, sizes);
    CAPTURE(c.spec);
    CAPTURE(seed);
    check_same(evaluate(c.spec, inputs), brute_force_present(c.lhs_vars, c.summed_vars, sizes, inputs, c.rhs));
}

// ---------------------------------------------------------------------------------------------
// Files

class TempDir {
public:
    TempDir() : path_(std::filesystem::temp_directory_path() / ("spgen_ref_test_" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(path_);
    }
    ~TempDir() { std::filesystem::remove_all(path_); }

    std::string file(const std::string& name) const { return (path_ / name).string(); }

    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(file(name)) << text;
        return file(name);
    }

private:
    std::filesystem::path path_;
};

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string error_of(const std::function<void()>& action) {
    try {
        action();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

// SpMV inputs shared by several hand-computed cases: A = [[1,0,2],[0,3,0]], x = [1,2,3].
std::map<std::string, Tensor> spmv_inputs() {
    return {{"A", sparse({2, 3}, {{{0, 0}, 1}, {{0, 2}, 2}, {{1, 1}, 3}})}, {"x", dense({3}, {1, 2, 3})}};
}

}  // namespace

// =============================================================================================
// Hand-computed cases

TEST_CASE("reference: SpMV") {
    check_same(evaluate("y(i) = A(i,j) * x(j)", spmv_inputs()), dense({2}, {7, 6}));
}

TEST_CASE("reference: SpMM") {
    const std::map<std::string, Tensor> in{{"A", sparse({2, 2}, {{{0, 0}, 1}, {{0, 1}, 2}, {{1, 1}, 3}})},
                                           {"B", dense({2, 2}, {1, 0, 2, 1})}};
    check_same(evaluate("C(i,k) = A(i,j) * B(j,k)", in), dense({2, 2}, {5, 2, 6, 3}));
}

TEST_CASE("reference: SDDMM") {
    const std::map<std::string, Tensor> in{{"X", sparse({2, 2}, {{{0, 0}, 2}, {{1, 1}, 3}})},
                                           {"A", dense({2, 2}, {1, 2, 3, 4})},
                                           {"B", dense({2, 2}, {5, 6, 7, 8})}};
    const Tensor y = evaluate("Y(i,j) = X(i,j) * A(i,k) * B(j,k)", in);
    check_same(y, sparse({2, 2}, {{{0, 0}, 34}, {{1, 1}, 159}}));
    CHECK(y.nnz() == 2);  // only the sampled entries are reached
}

TEST_CASE("reference: TTV") {
    const std::map<std::string, Tensor> in{
        {"B", sparse({2, 2, 2}, {{{0, 0, 0}, 1}, {{0, 0, 1}, 2}, {{1, 1, 1}, 3}, {{0, 1, 0}, 4}})},
        {"c", dense({2}, {10, 100})}};
    check_same(evaluate("A(i,j) = B(i,j,k) * c(k)", in), dense({2, 2}, {210, 40, 0, 300}));
}

TEST_CASE("reference: MTTKRP") {
    const std::map<std::string, Tensor> in{{"B", sparse({2, 2, 2}, {{{0, 0, 1}, 2}, {{1, 1, 0}, 3}})},
                                           {"C", dense({2, 2}, {1, 2, 3, 4})},
                                           {"D", dense({2, 2}, {5, 6, 7, 8})}};
    check_same(evaluate("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", in), dense({2, 2}, {14, 32, 45, 72}));
}

TEST_CASE("reference: scalar output") {
    const std::map<std::string, Tensor> in{{"B", dense({2, 2}, {1, 2, 3, 4})},
                                           {"C", sparse({2, 2}, {{{0, 1}, 10}, {{1, 0}, -1}})},
                                           {"x", dense({3}, {1, 2, 3})}};
    const Tensor a = evaluate("a = B(i,j) * C(i,j)", in);
    CHECK(a.order() == 0);
    check_same(a, scalar(17));
    check_same(evaluate("a() = x(i) * x(i)", in), scalar(14));
    check_same(evaluate("s = 2 * s0 + 1", {{"s0", scalar(4)}}), scalar(9));
}

TEST_CASE("reference: += adds to the initial output") {
    const Tensor initial = dense({2}, {1, -1});
    check_same(evaluate("y(i) += A(i,j) * x(j)", spmv_inputs(), {}, &initial), dense({2}, {8, 5}));
    check_same(evaluate("y(i) += A(i,j) * x(j)", spmv_inputs()), dense({2}, {7, 6}));  // no initial: from 0
    check_same(evaluate("y(i) = A(i,j) * x(j)", spmv_inputs(), {}, &initial), dense({2}, {7, 6}));  // '=' ignores it
    const Tensor as_column = dense({2, 1}, {1, -1});  // as read back from an n x 1 .mtx
    check_same(evaluate("y(i) += A(i,j) * x(j)", spmv_inputs(), {}, &as_column), dense({2}, {8, 5}));
}

TEST_CASE("reference: sparse add, subtract and elementwise multiply") {
    const std::map<std::string, Tensor> in{{"A", sparse({2, 2}, {{{0, 0}, 1}, {{1, 1}, 2}})},
                                           {"B", sparse({2, 2}, {{{0, 1}, 3}, {{1, 1}, 4}})},
                                           {"D", sparse({2, 2}, {{{0, 0}, 2}, {{1, 0}, 1}})}};
    check_same(evaluate("C(i,j) = A(i,j) + B(i,j) - 2.5 * D(i,j)", in), dense({2, 2}, {-4, 3, -2.5, 6}));
    check_same(evaluate("C(i,j) = A(i,j) - B(i,j)", in), dense({2, 2}, {1, -3, 0, -2}));
    check_same(evaluate("C(i,j) = A(i,j) * B(i,j)", in), sparse({2, 2}, {{{1, 1}, 8}}));
}

TEST_CASE("reference: unary minus, division by a literal, literals and comments") {
    const std::map<std::string, Tensor> in{{"A", sparse({2, 2}, {{{0, 0}, 1}, {{1, 1}, 2}})}, {"x", dense({2}, {1, -2})}};
    check_same(evaluate("Y(i,j) = -(A(i,j) / 2)", in), sparse({2, 2}, {{{0, 0}, -0.5}, {{1, 1}, -1}}));
    check_same(evaluate("Y(i,j) = - -A(i,j)", in), in.at("A"));
    check_same(evaluate("y(i) = 2 * x(i) + 1.5e1 * x(i) - .5 * x(i) + x(i) / 4E-1", in), dense({2}, {19, -38}));
    check_same(evaluate("y(i) = x(i) / (1 + 1) * 3", in), dense({2}, {1.5, -3}));
    check_same(evaluate("y(i) = 3", in, {{"i", 2}}), dense({2}, {3, 3}));
    check_same(evaluate("# a comment line\n  y(i) =   # the output\n   A(i,j)\n * x(j)  # trailing\n", spmv_inputs()),
               dense({2}, {7, 6}));
}

TEST_CASE("reference: other supported forms") {
    SUBCASE("a diagonal access binds one variable to two modes") {
        const std::map<std::string, Tensor> in{{"A", dense({2, 2}, {1, 2, 3, 4})}, {"S", sparse({2, 2}, {{{0, 1}, 5}, {{1, 1}, 6}})}};
        check_same(evaluate("y(i) = A(i,i)", in), dense({2}, {1, 4}));
        check_same(evaluate("y(i) = S(i,i)", in), dense({2}, {0, 6}));
    }
    SUBCASE("division by a tensor") {
        const std::map<std::string, Tensor> in{{"A", sparse({1, 2}, {{{0, 1}, 3}})}, {"D", dense({1, 2}, {2, 4})}};
        check_same(evaluate("C(i,j) = A(i,j) / D(i,j)", in), sparse({1, 2}, {{{0, 1}, 0.75}}));
    }
    SUBCASE("a variable only on the left, sized by extra_dims, broadcasts") {
        check_same(evaluate("y(k) = A(i,j) * x(j)", spmv_inputs(), {{"k", 3}}), dense({3}, {13, 13, 13}));
    }
    SUBCASE("an n x 1 matrix serves as a vector") {
        auto in = spmv_inputs();
        in["x"] = dense({3, 1}, {1, 2, 3});
        check_same(evaluate("y(i) = A(i,j) * x(j)", in), dense({2}, {7, 6}));
    }
    SUBCASE("empty inputs give zeros") {
        const std::map<std::string, Tensor> in{{"A", sparse({3, 4}, {})}, {"x", sparse({4}, {})}};
        check_same(evaluate("y(i) = A(i,j) * x(j)", in), sparse({3}, {}));
        check_same(evaluate("a = x(i)", in), scalar(0));
    }
}

TEST_CASE("reference: malformed specs throw") {
    const auto in = spmv_inputs();
    const std::vector<std::string> malformed = {
        "y(i) = A(i,j) *",          // operand missing
        "y(i) = (A(i,j) * x(j)",    // unbalanced (
        "y(i) = A(i,j)) * x(j)",    // unbalanced )
        "y(i) = A(i,j) $ x(j)",     // unknown character
        "y(i) A(i,j) * x(j)",       // no assignment
        "y(i) = A(i,j) x(j)",       // no operator
        "y(i,) = x(i)",             // empty index
        "= A(i,j) * x(j)",          // no output
        "y(i) = ",                  // no right-hand side
        "y(i) = A(i,j) * x(j) = 2", // two assignments
        "y(i) == x(i)",             // no such operator
        "y(i,i) = x(i)",            // repeated output index
        "2 = x(i)",                 // output is not a tensor
        "y(i) = A(i,1)",            // a number as an index
    };
    for (const auto& spec : malformed) {
        CAPTURE(spec);
        CHECK_THROWS_AS(evaluate(spec, in), std::runtime_error);
    }
    CHECK(error_of([&] { evaluate("y(i) = A(i,j) $ x(j)", in); }).find("spec:1:15") != std::string::npos);
    CHECK(error_of([&] { evaluate("y(i) =\n  (A(i,j)", in); }).find("spec:2:") != std::string::npos);
}

TEST_CASE("reference: inconsistent or unknown operands throw") {
    auto in = spmv_inputs();
    SUBCASE("an index variable only on the left without extra_dims") {
        CHECK_THROWS_AS(evaluate("y(k) = A(i,j) * x(j)", in), std::runtime_error);
    }
    SUBCASE("inconsistent sizes") {
        in["x"] = dense({4}, {1, 2, 3, 4});
        CHECK(error_of([&] { evaluate("y(i) = A(i,j) * x(j)", in); }).find("'j'") != std::string::npos);
    }
    SUBCASE("extra_dims contradicting an input") {
        CHECK_THROWS_AS(evaluate("y(i) = A(i,j) * x(j)", in, {{"j", 5}}), std::runtime_error);
    }
    SUBCASE("initial output of the wrong size") {
        const Tensor initial = dense({3}, {0, 0, 0});
        CHECK_THROWS_AS(evaluate("y(i) += A(i,j) * x(j)", in, {}, &initial), std::runtime_error);
    }
    SUBCASE("an unknown tensor") { CHECK_THROWS_AS(evaluate("y(i) = Q(i,j) * x(j)", in), std::runtime_error); }
    SUBCASE("the wrong number of indices") {
        CHECK_THROWS_AS(evaluate("y(i) = A(i) * x(i)", in), std::runtime_error);
        CHECK_THROWS_AS(evaluate("y(i) = x(i,j,k)", in), std::runtime_error);
    }
}

TEST_CASE("reference: each term is summed over its own variables (TACO's scoped reductions)") {
    auto in = spmv_inputs();
    in["b"] = dense({2}, {10, 20});
    // b(i) is added once, not once per j.
    check_same(evaluate("y(i) = A(i,j) * x(j) + b(i)", in), dense({2}, {17, 26}));
    check_same(evaluate("y(i) = b(i) - A(i,j) * x(j)", in), dense({2}, {3, 14}));
    // Products are multiplied out first: 2 x(j) is summed over j (12), 2 b(i) is not.
    check_same(evaluate("y(i) = (x(j) + b(i)) * 2", in), dense({2}, {32, 52}));
    // Every monomial of A(i,j) * (x(j) + b(i)) holds j: A(0,:) (1 + 10, 3 + 10), A(1,:) (2 + 20).
    check_same(evaluate("y(i) = A(i,j) * (x(j) + b(i))", in), dense({2}, {37, 66}));
    // Three sets of summed variables, one of them empty, added into an initial output.
    in["C"] = dense({2, 2}, {1, 2, 3, 4});
    in["z"] = dense({2}, {1, -1});
    const Tensor initial = dense({2}, {100, 200});
    check_same(evaluate("y(i) += A(i,j) * x(j) - 2 * b(i) + C(i,k) * z(k)", in, {}, &initial),
               dense({2}, {100 + 7 - 20 - 1, 200 + 6 - 40 - 1}));
}

// =============================================================================================
// Cross-check against the brute-force evaluator

TEST_CASE("reference: agrees with a brute-force dense evaluation") {
    const std::vector<CrossCase> cases = {
        {"y(i) = A(i,j) * x(j)", "i", "j", {{"A", "ij"}, {"x", "j"}},
         [](const Point& p) { return p("A", {'i', 'j'}) * p("x", {'j'}); }},
        {"C(i,k) = A(i,j) * B(j,k)", "ik", "j", {{"A", "ij"}, {"B", "jk"}},
         [](const Point& p) { return p("A", {'i', 'j'}) * p("B", {'j', 'k'}); }},
        {"Y(i,j) = X(i,j) * A(i,k) * B(j,k)", "ij", "k", {{"X", "ij"}, {"A", "ik"}, {"B", "jk"}},
         [](const Point& p) { return p("X", {'i', 'j'}) * p("A", {'i', 'k'}) * p("B", {'j', 'k'}); }},
        {"A(i,j) = B(i,j,k) * c(k)", "ij", "k", {{"B", "ijk"}, {"c", "k"}},
         [](const Point& p) { return p("B", {'i', 'j', 'k'}) * p("c", {'k'}); }},
        {"A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", "ij", "kl", {{"B", "ikl"}, {"C", "kj"}, {"D", "lj"}},
         [](const Point& p) { return p("B", {'i', 'k', 'l'}) * p("C", {'k', 'j'}) * p("D", {'l', 'j'}); }},
        {"a = B(i,j) * C(i,j)", "", "ij", {{"B", "ij"}, {"C", "ij"}},
         [](const Point& p) { return p("B", {'i', 'j'}) * p("C", {'i', 'j'}); }},
        {"C(i,j) = A(i,j) + B(i,j) - 2.5 * D(i,j)", "ij", "", {{"A", "ij"}, {"B", "ij"}, {"D", "ij"}},
         [](const Point& p) { return p("A", {'i', 'j'}) + p("B", {'i', 'j'}) - 2.5 * p("D", {'i', 'j'}); }},
        {"C(i,j) = A(i,j) * B(i,j)", "ij", "", {{"A", "ij"}, {"B", "ij"}},
         [](const Point& p) { return p("A", {'i', 'j'}) * p("B", {'i', 'j'}); }},
        {"Y(i,j) = -(A(i,j) / 2)", "ij", "", {{"A", "ij"}}, [](const Point& p) { return -(p("A", {'i', 'j'}) / 2); }},
        {"C(i,j) = A(i,j) + b(i)", "ij", "", {{"A", "ij"}, {"b", "i"}},
         [](const Point& p) { return p("A", {'i', 'j'}) + p("b", {'i'}); }},
        {"y(i) = A(i,j) * (x(j) - 0.5 * z(j))", "i", "j", {{"A", "ij"}, {"x", "j"}, {"z", "j"}},
         [](const Point& p) { return p("A", {'i', 'j'}) * (p("x", {'j'}) - 0.5 * p("z", {'j'})); }},
        {"C(i,k) = (A(i,j) + B(i,j)) * (D(j,k) - E(j,k))", "ik", "j", {{"A", "ij"}, {"B", "ij"}, {"D", "jk"}, {"E", "jk"}},
         [](const Point& p) {
             return (p("A", {'i', 'j'}) + p("B", {'i', 'j'})) * (p("D", {'j', 'k'}) - p("E", {'j', 'k'}));
         }},
        {"a = x(i) * A(i,j) * y(j)", "", "ij", {{"x", "i"}, {"A", "ij"}, {"y", "j"}},
         [](const Point& p) { return p("x", {'i'}) * p("A", {'i', 'j'}) * p("y", {'j'}); }},
        {"Y(j,i) = A(i,j) * 3", "ji", "", {{"A", "ij"}}, [](const Point& p) { return p("A", {'i', 'j'}) * 3; }},
    };
    for (const auto& c : cases)
        for (uint64_t seed = 1; seed <= 8; ++seed) cross_check(c, seed);
}

TEST_CASE("reference: division by a dense tensor agrees with brute force") {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
        const std::map<std::string, Tensor> in{{"A", random_sparse({4, 5}, 0.4, seed)}, {"D", random_dense({4, 5}, seed + 100)}};
        const auto want = brute_force("ij", "", {{'i', 4}, {'j', 5}}, in,
                                      [](const Point& p) { return p("A", {'i', 'j'}) / p("D", {'i', 'j'}); });
        check_same(evaluate("C(i,j) = A(i,j) / D(i,j)", in), want, 1e-10);
    }
}

TEST_CASE("reference: += agrees with brute force") {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
        const std::map<std::string, Tensor> in{{"A", random_sparse({6, 4}, 0.3, seed)}, {"x", random_dense({4}, seed + 7)}};
        const Tensor initial = random_sparse({6}, 0.5, seed + 13);
        Tensor want = brute_force("i", "j", {{'i', 6}, {'j', 4}}, in,
                                  [](const Point& p) { return p("A", {'i', 'j'}) * p("x", {'j'}); });
        const DenseView initial_view(initial);
        for (size_t e = 0; e < want.nnz(); ++e) want.vals[e] += initial_view.at({want.coords[e]});
        check_same(evaluate("y(i) += A(i,j) * x(j)", in, {}, &initial), want);
    }
}

// =============================================================================================
// Function calls: exp, log, sqrt, abs, max, min

namespace {

// The entries a result holds (reached points), whatever their values.
size_t reached(const Tensor& t) { return t.nnz(); }

double e_to(double x) { return std::exp(x); }

}  // namespace

TEST_CASE("reference: a function is evaluated on its argument's stored entries only") {
    // S is more than half full (3 of 4), so it must not be taken for dense: (1,1) stays empty.
    const std::map<std::string, Tensor> in{{"S", sparse({2, 2}, {{{0, 0}, 1}, {{0, 1}, -2}, {{1, 0}, 0}})}};
    const Tensor e = evaluate("E(i,j) = exp(S(i,j))", in);
    check_same(e, dense({2, 2}, {e_to(1), e_to(-2), 1, 0}));  // the explicit zero is a point: exp(0) = 1
    CHECK(reached(e) == 3);
    const std::map<std::string, Tensor> wide{{"S", sparse({2, 3}, {{{0, 1}, 0.5}, {{1, 2}, -1}})}};
    const Tensor w = evaluate("E(i,j) = 2 * exp(S(i,j))", wide);
    check_same(w, dense({2, 3}, {0, 2 * e_to(0.5), 0, 0, 0, 2 * e_to(-1)}));
    CHECK(reached(w) == 2);
}

TEST_CASE("reference: a function as a factor of a sum") {
    // A = [[1,0,2],[0,3,0]]; x(1) is not stored, so A(1,1) * exp(x(1)) is no point (not 3 * exp(0)).
    const std::map<std::string, Tensor> in{{"A", spmv_inputs().at("A")}, {"x", sparse({3}, {{{0}, 0}, {{2}, 1}})}};
    check_same(evaluate("y(i) = A(i,j) * exp(x(j))", in), dense({2}, {1 + 2 * e_to(1), 0}));
    check_same(evaluate("y(i) = exp(x(j)) * A(i,j)", in), dense({2}, {1 + 2 * e_to(1), 0}));
    // With a dense x every stored A(i,j) counts.
    check_same(evaluate("y(i) = A(i,j) * exp(x(j))", spmv_inputs()), dense({2}, {e_to(1) + 2 * e_to(3), 3 * e_to(2)}));
}

TEST_CASE("reference: outside its points a call contributes nothing, even next to an infinity") {
    // log(x(0)) = -inf, but exp(z(0)) has no point there: the term is not evaluated (no -inf * 0).
    const std::map<std::string, Tensor> in{{"x", sparse({3}, {{{0}, 0}, {{1}, 1}})}, {"z", sparse({3}, {{{1}, 0}, {{2}, 5}})},
                                           {"A", dense({3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1})}};
    const Tensor y = evaluate("y(i) = log(x(i)) * exp(z(i))", in);
    check_same(y, sparse({3}, {}));
    CHECK(reached(y) == 1);  // only y(1) = log(1) exp(0)
    const Tensor e = evaluate("E(i,j) = A(i,j) * log(x(i)) * max(z(i), 0)", in);
    check_same(e, sparse({3, 3}, {}));
    CHECK(reached(e) == 3);  // row 1
}

TEST_CASE("reference: the sum over a variable missing from the output stays outside the function") {
    // y(i) = sum_j exp(A(i,j) x(j)) over the j where both are stored, not exp(sum_j A(i,j) x(j)).
    check_same(evaluate("y(i) = exp(A(i,j) * x(j))", spmv_inputs()), dense({2}, {e_to(1) + e_to(6), e_to(6)}));
    const std::map<std::string, Tensor> in{{"A", spmv_inputs().at("A")}, {"x", sparse({3}, {{{0}, 1}, {{2}, 3}})}};
    const Tensor y = evaluate("y(i) = exp(A(i,j) * x(j))", in);
    check_same(y, dense({2}, {e_to(1) + e_to(6), 0}));  // row 1 meets no stored x
    CHECK(reached(y) == 1);
    // A scalar output sums over everything.
    check_same(evaluate("s = exp(A(i,j) * x(j))", in), scalar(e_to(1) + e_to(6)));
}

TEST_CASE("reference: max with a constant is present only where the tensor is (ReLU)") {
    const std::map<std::string, Tensor> in{{"x", sparse({5}, {{{0}, -1}, {{2}, 2}, {{3}, 0}})}};
    const Tensor y = evaluate("y(i) = max(x(i), 0)", in);
    check_same(y, sparse({5}, {{{2}, 2}}));
    CHECK(reached(y) == 3);  // 0, 2 and 3, not 1 or 4
    check_same(evaluate("y(i) = max(0, x(i))", in), sparse({5}, {{{2}, 2}}));
    check_same(evaluate("y(i) = min(x(i), 0.5) + 1", in), dense({5}, {0, 1, 1.5, 1, 1}));
}

TEST_CASE("reference: leaky ReLU GAT score") {
    const std::string spec = "E(i,j) = A(i,j) * max(u(i) + v(j), 0.2 * (u(i) + v(j)))";
    std::map<std::string, Tensor> in{{"A", spmv_inputs().at("A")}, {"u", dense({2}, {1, -2})}, {"v", dense({3}, {0.5, 1, -3})}};
    // (0,0): s = 1.5 -> 1.5; (0,2): s = -2 -> -0.4, times 2; (1,1): s = -1 -> -0.2, times 3.
    const Tensor e = evaluate(spec, in);
    check_same(e, sparse({2, 3}, {{{0, 0}, 1.5}, {{0, 2}, -0.8}, {{1, 1}, -0.6}}));
    CHECK(reached(e) == 3);
    // u(1) not stored: u(1) + v(1) is still a point (of v), reading u(1) as 0: max(1, 0.2) = 1.
    in["u"] = sparse({2}, {{{0}, 1}});
    check_same(evaluate(spec, in), sparse({2, 3}, {{{0, 0}, 1.5}, {{0, 2}, -0.8}, {{1, 1}, 3}}));
}

TEST_CASE("reference: max and min of two sparse tensors: the union, a missing entry reading 0") {
    const std::map<std::string, Tensor> in{{"A", sparse({2, 3}, {{{0, 0}, -1}, {{0, 1}, 2}})},
                                           {"B", sparse({2, 3}, {{{0, 1}, -3}, {{1, 1}, -2}, {{1, 0}, 4}})}};
    const Tensor mx = evaluate("C(i,j) = max(A(i,j), B(i,j))", in);
    // (0,0): max(-1, 0) = 0 (B missing); (0,1): 2; (1,0): max(0, 4); (1,1): max(0, -2) = 0.
    check_same(mx, sparse({2, 3}, {{{0, 1}, 2}, {{1, 0}, 4}}));
    CHECK(reached(mx) == 4);  // (0,0) and (1,1) are explicit zeros; column 2 is not reached
    const Tensor mn = evaluate("C(i,j) = min(A(i,j), B(i,j))", in);
    check_same(mn, sparse({2, 3}, {{{0, 0}, -1}, {{0, 1}, -3}, {{1, 0}, 0}, {{1, 1}, -2}}));
    CHECK(reached(mn) == 4);
    // The union broadcasts: u(i) + v(j) is present wherever u(i) or v(j) is stored.
    const std::map<std::string, Tensor> uv{{"u", sparse({2}, {{{0}, 1}})}, {"v", sparse({3}, {{{1}, 2}})}};
    const Tensor e = evaluate("E(i,j) = exp(u(i) + v(j))", uv);
    check_same(e, dense({2, 3}, {e_to(1), e_to(3), e_to(1), 0, e_to(2), 0}));
    CHECK(reached(e) == 4);
    check_same(evaluate("E(i,j) = max(u(i), v(j))", uv), dense({2, 3}, {1, 2, 1, 0, 2, 0}));
}

TEST_CASE("reference: abs, sqrt, log and min") {
    const std::map<std::string, Tensor> in{{"x", sparse({3}, {{{0}, -4}, {{2}, 0.25}})}, {"z", dense({3}, {1, 2, 3})}};
    check_same(evaluate("y(i) = abs(x(i))", in), sparse({3}, {{{0}, 4}, {{2}, 0.25}}));
    check_same(evaluate("y(i) = sqrt(abs(x(i)))", in), sparse({3}, {{{0}, 2}, {{2}, 0.5}}));
    check_same(evaluate("y(i) = log(abs(x(i)))", in), sparse({3}, {{{0}, std::log(4.0)}, {{2}, std::log(0.25)}}));
    check_same(evaluate("y(i) = sqrt(z(i)) * log(z(i))", in), dense({3}, {0, std::sqrt(2.0) * std::log(2.0), std::sqrt(3.0) * std::log(3.0)}));
    const Tensor m = evaluate("y(i) = min(x(i), -1)", in);
    check_same(m, sparse({3}, {{{0}, -4}, {{2}, -1}}));
    CHECK(reached(m) == 2);
    check_same(evaluate("y(i) = min(x(i), z(i))", in), dense({3}, {-4, 0, 0.25}));  // x(1) reads 0
    // The constant makes x(i) - 1 present at every i, as in y(i) = x(i) - 1: |0 - 1| counts too.
    check_same(evaluate("a = abs(x(i) - 1)", in), scalar(5 + 1 + 0.75));
}

TEST_CASE("reference: nested calls") {
    const std::map<std::string, Tensor> in{{"x", sparse({3}, {{{0}, -1}, {{2}, 2}})}, {"A", dense({2, 3}, {1, 1, 1, 0, 2, 0})}};
    const Tensor y = evaluate("y(i) = exp(max(x(i), 0))", in);
    check_same(y, sparse({3}, {{{0}, 1}, {{2}, e_to(2)}}));  // not exp(0) = 1 at 1: x(1) is no point
    CHECK(reached(y) == 2);
    check_same(evaluate("y(i) = A(i,j) * exp(max(x(j), 0))", in), dense({2}, {1 + e_to(2), 0}));
    check_same(evaluate("y(i) = max(abs(x(i)), sqrt(abs(x(i))))", in), sparse({3}, {{{0}, 1}, {{2}, 2}}));
}

TEST_CASE("reference: a call that reads no tensor is a constant") {
    const std::map<std::string, Tensor> in{{"x", sparse({3}, {{{0}, 2}, {{2}, -1}})}};
    check_same(evaluate("y(i) = exp(0) * x(i)", in), in.at("x"));
    check_same(evaluate("y(i) = x(i) * max(2, min(3, 4)) / sqrt(4)", in), dense({3}, {3, 0, -1.5}));
    check_same(evaluate("y(i) = max(x(i), abs(-0.5))", in), sparse({3}, {{{0}, 2}, {{2}, 0.5}}));
    check_same(evaluate("s = log(1) + exp(0)", {}), scalar(1));
}

TEST_CASE("reference: a function in a denominator restricts its term to the function's points") {
    // Sigmoid of a sparse x: 1 / (1 + exp(-x)) where x is stored, nothing elsewhere.
    const std::map<std::string, Tensor> in{{"x", sparse({3}, {{{0}, 0}, {{2}, 1}})}, {"z", dense({3}, {2, 2, 2})}};
    const Tensor s = evaluate("y(i) = 1 / (1 + exp(-x(i)))", in);
    check_same(s, sparse({3}, {{{0}, 0.5}, {{2}, 1 / (1 + e_to(-1))}}));
    CHECK(reached(s) == 2);
    check_same(evaluate("y(i) = z(i) / max(x(i), 0.5)", in), sparse({3}, {{{0}, 4}, {{2}, 2}}));
}

TEST_CASE("reference: function calls agree with a brute-force evaluation that tracks stored entries") {
    using P = const Point&;
    using R = std::optional<double>;
    const std::vector<PresentCase> cases = {
        {"E(i,j) = exp(S(i,j))", "ij", "", {{"S", "ij"}},
         [](P p) { return p.stored("S", {'i', 'j'}) ? R(std::exp(p("S", {'i', 'j'}))) : std::nullopt; }},
        {"y(i) = A(i,j) * exp(x(j))", "i", "j", {{"A", "ij"}, {"x", "j"}},
         [](P p) {
             return p.stored("A", {'i', 'j'}) && p.stored("x", {'j'}) ? R(p("A", {'i', 'j'}) * std::exp(p("x", {'j'})))
                                                                      : std::nullopt;
         }},
        {"y(i) = exp(A(i,j) * x(j))", "i", "j", {{"A", "ij"}, {"x", "j"}},
         [](P p) {
             return p.stored("A", {'i', 'j'}) && p.stored("x", {'j'}) ? R(std::exp(p("A", {'i', 'j'}) * p("x", {'j'})))
                                                                      : std::nullopt;
         }},
        {"y(i) = max(x(i), 0) - 0.5 * min(0, x(i))", "i", "", {{"x", "i"}},
         [](P p) {
             const double x = p("x", {'i'});
             return p.stored("x", {'i'}) ? R(std::fmax(x, 0) - 0.5 * std::fmin(0, x)) : std::nullopt;
         }},
        {"E(i,j) = A(i,j) * max(u(i) + v(j), 0.2 * (u(i) + v(j)))", "ij", "", {{"A", "ij"}, {"u", "i"}, {"v", "j"}},
         [](P p) {
             const double s = p("u", {'i'}) + p("v", {'j'});
             return p.stored("A", {'i', 'j'}) && (p.stored("u", {'i'}) || p.stored("v", {'j'}))
                        ? R(p("A", {'i', 'j'}) * std::fmax(s, 0.2 * s))
                        : std::nullopt;
         }},
        {"C(i,j) = max(A(i,j), B(i,j)) + abs(D(i,j))", "ij", "", {{"A", "ij"}, {"B", "ij"}, {"D", "ij"}},
         [](P p) {
             const bool ab = p.stored("A", {'i', 'j'}) || p.stored("B", {'i', 'j'}), d = p.stored("D", {'i', 'j'});
             if (!ab && !d) return R();
             return R((ab ? std::fmax(p("A", {'i', 'j'}), p("B", {'i', 'j'})) : 0) + (d ? std::fabs(p("D", {'i', 'j'})) : 0));
         }},
        {"C(i,k) = A(i,j) * min(B(j,k), x(j))", "ik", "j", {{"A", "ij"}, {"B", "jk"}, {"x", "j"}},
         [](P p) {
             return p.stored("A", {'i', 'j'}) && (p.stored("B", {'j', 'k'}) || p.stored("x", {'j'}))
                        ? R(p("A", {'i', 'j'}) * std::fmin(p("B", {'j', 'k'}), p("x", {'j'})))
                        : std::nullopt;
         }},
        {"E(i,j) = exp(u(i) + v(j)) * 2", "ij", "", {{"u", "i"}, {"v", "j"}},
         [](P p) {
             return p.stored("u", {'i'}) || p.stored("v", {'j'}) ? R(2 * std::exp(p("u", {'i'}) + p("v", {'j'})))
                                                                : std::nullopt;
         }},
        {"y(i) = exp(max(w(i), 0)) + A(i,j) * sqrt(abs(z(j) * x(j)))", "i", "j",
         {{"w", "i"}, {"A", "ij"}, {"z", "j"}, {"x", "j"}},
         [](P p) {
             // The first term has no j: it is added once, not once per j (each term sums its own).
             double sum = 0;
             bool any = false;
             if (p.stored("w", {'i'}) && p.at.at('j') == 0) {
                 sum += std::exp(std::fmax(p("w", {'i'}), 0));
                 any = true;
             }
             if (p.stored("A", {'i', 'j'}) && p.stored("z", {'j'}) && p.stored("x", {'j'})) {
                 sum += p("A", {'i', 'j'}) * std::sqrt(std::fabs(p("z", {'j'}) * p("x", {'j'})));
                 any = true;
             }
             return any ? R(sum) : std::nullopt;
         }},
    };
    for (const auto& c : cases)
        for (uint64_t seed = 1; seed <= 10; ++seed) cross_check(c, seed);
}

TEST_CASE("reference: malformed function calls throw") {
    const std::map<std::string, Tensor> in{{"x", dense({2}, {1, 2})}, {"A", dense({2, 2}, {1, 2, 3, 4})}};
    const std::vector<std::pair<std::string, std::string>> malformed = {
        {"y(i) = max(x(i))", "spec:1:8"},              // too few arguments
        {"y(i) = min(x(i), 1, 2)", "spec:1:8"},        // too many
        {"y(i) = exp(x(i), x(i))", "spec:1:8"},
        {"y(i) = x(i) * sqrt()", "spec:1:15"},
        {"y(i) = max(x(i), )", "spec:1:18"},           // an argument missing
        {"y(i) = exp(x(i)", "spec:1:16"},              // unbalanced
        {"y = 2 * max(j: x(j))", "spec:1:9"},          // an explicit reduction inside the expression
        {"y(i) =\n  A(i,j) * max(j: x(j))", "spec:2:12"},
        {"exp(i) = x(i)", "spec:1:1"},                 // the output named like a function
        {"max = x(i)", "spec:1:1"},
        {"y(i) = x(i) : 2", "spec:1:13"},
    };
    for (const auto& [spec, where] : malformed) {
        CAPTURE(spec);
        const std::string message = error_of([&] { evaluate(spec, in); });
        CAPTURE(message);
        CHECK(message.find(where + ": ") == 0);
        CHECK_THROWS_AS(evaluate(spec, in), std::runtime_error);
    }
    CHECK(error_of([&] { evaluate("y(i) = max(x(i))", in); }).find("takes 2 arguments, found 1") != std::string::npos);
    CHECK(error_of([&] { evaluate("y = 2 * max(j: x(j))", in); }).find("explicit reduction") != std::string::npos);
    // A name is a function only when a '(' follows; otherwise it is a tensor, as before.
    check_same(evaluate("y(i) = x(i) * exp", {{"x", dense({2}, {1, 2})}, {"exp", scalar(3)}}), dense({2}, {3, 6}));
}

TEST_CASE("reference: evaluate_magnitude takes |f| of the real argument") {
    // A = [[1,0,-2],[0,3,0]], x = [-3, 1, 0.5], b = [-3, 1]: y(0) = 1 max(-3,-2) - 2 max(0.5,-2) -
    // exp(-3), y(1) = 3 max(1,-2) - exp(1). Magnitudes: |max| of the real x, not max(|x|, -2).
    const std::map<std::string, Tensor> in{{"A", sparse({2, 3}, {{{0, 0}, 1}, {{0, 2}, -2}, {{1, 1}, 3}})},
                                           {"x", dense({3}, {-3, 1, 0.5})},
                                           {"b", dense({2}, {-3, 1})}};
    const std::string spec = "y(i) = A(i,j) * max(x(j), -2) - exp(b(i))";
    const Tensor want = evaluate(spec, in);
    const Tensor magnitude = evaluate_magnitude(spec, in);
    check_same(want, dense({2}, {-2 - 1 - e_to(-3), 3 - e_to(1)}));
    check_same(magnitude, dense({2}, {2 + 1 + e_to(-3), 3 + e_to(1)}));
    REQUIRE(magnitude.nnz() == want.nnz());
    CHECK(magnitude.coords == want.coords);
    // A materialized call (nothing else binds i, j) the same way.
    const std::map<std::string, Tensor> s{{"S", sparse({2, 2}, {{{0, 1}, -1}, {{1, 0}, 2}})}};
    check_same(evaluate_magnitude("E(i,j) = -min(S(i,j), 1)", s), sparse({2, 2}, {{{0, 1}, 1}, {{1, 0}, 1}}));
    check_same(evaluate("E(i,j) = -min(S(i,j), 1)", s), sparse({2, 2}, {{{0, 1}, 1}, {{1, 0}, -1}}));
}

// =============================================================================================
// Explicit reductions: sum(j: e), max(j: e), min(j, k: e)

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// Exactly equal, every entry present on both sides (infinities included), in the same order.
void check_identical(const Tensor& got, const Tensor& want) {
    CHECK(got.dims == want.dims);
    CHECK(got.coords == want.coords);
    CHECK(got.vals == want.vals);
}

// out(lhs_vars) = max (or min) over every value of reduced_vars of rhs where it has a value, -inf
// (+inf) where it has none: the full dense space, no cleverness.
Tensor brute_force_extremum(bool max, const std::string& lhs_vars, const std::string& reduced_vars,
                            const std::map<char, int64_t>& sizes, const std::map<std::string, Tensor>& inputs,
                            const PresentRhs& rhs) {
    std::map<std::string, DenseView> views;
    for (const auto& [name, t] : inputs) views[name] = DenseView(t);
    std::vector<int64_t> out_dims;
    for (char v : lhs_vars) out_dims.push_back(sizes.at(v));
    Tensor out = random_dense(out_dims, 0);  // every coordinate, row-major; values overwritten
    for (size_t e = 0; e < out.nnz(); ++e) {
        Point p{&views, {}};
        for (size_t m = 0; m < lhs_vars.size(); ++m) p.at[lhs_vars[m]] = out.coords[e * lhs_vars.size() + m];
        double extremum = max ? -kInf : kInf;
        std::vector<int64_t> counter(reduced_vars.size(), 0);
        for (;;) {
            for (size_t s = 0; s < reduced_vars.size(); ++s) p.at[reduced_vars[s]] = counter[s];
            if (const std::optional<double> value = rhs(p)) extremum = max ? std::fmax(extremum, *value) : std::fmin(extremum, *value);
            size_t s = 0;
            while (s < counter.size() && ++counter[s] == sizes.at(reduced_vars[s])) counter[s++] = 0;
            if (s == counter.size()) break;
        }
        out.vals[e] = extremum;
    }
    return out;
}

struct ExtremumCase {
    std::string spec;
    bool max;
    std::string lhs_vars, reduced_vars;
    std::map<std::string, std::string> operands;
    PresentRhs rhs;
};

void cross_check(const ExtremumCase& c, uint64_t seed) {
    std::map<char, int64_t> sizes;
    const auto inputs = random_operands(c.lhs_vars + c.reduced_vars, c.operands, seed, sizes);
    CAPTURE(c.spec);
    CAPTURE(seed);
    const Tensor got = evaluate(c.spec, inputs);
    const Tensor want = brute_force_extremum(c.max, c.lhs_vars, c.reduced_vars, sizes, inputs, c.rhs);
    check_same(got, want);
    CHECK(got.coords == want.coords);  // every coordinate, row-major
    // Magnitudes: one entry per coordinate too, |value| bounded by them where something was visited.
    const Tensor magnitude = evaluate_magnitude(c.spec, inputs);
    REQUIRE(magnitude.nnz() == got.nnz());
    CHECK(magnitude.coords == got.coords);
    for (size_t e = 0; e < got.nnz(); ++e) {
        if (std::isinf(got.vals[e])) CHECK(magnitude.vals[e] == 0);
        else CHECK(std::abs(got.vals[e]) <= magnitude.vals[e] * (1 + 1e-12));
    }
}

}  // namespace

TEST_CASE("reduction: row max and min over stored entries, negative values and empty rows") {
    // S = [[-1, ., -3], [., ., .], [2, 0, .], [., -5, .]]: row 1 stores nothing; (2,1) is an explicit zero.
    const std::map<std::string, Tensor> in{
        {"S", sparse({4, 3}, {{{0, 0}, -1}, {{0, 2}, -3}, {{2, 0}, 2}, {{2, 1}, 0}, {{3, 1}, -5}})}};
    const Tensor mx = evaluate("m(i) = max(j: S(i,j))", in);
    check_identical(mx, dense({4}, {-1, -kInf, 2, -5}));  // -1, not 0: a missing entry is no point
    const Tensor mn = evaluate("m(i) = min(j: S(i,j))", in);
    check_identical(mn, dense({4}, {-3, kInf, 0, -5}));  // the explicit zero counts
    // Comments, spaces and line breaks as anywhere.
    check_identical(evaluate("m(i) = max( j :\n  S(i,j) )  # row max", in), mx);
}

TEST_CASE("reduction: explicit zeros count, and a mostly full sparse input is not taken as dense") {
    // 5 of 6 stored (more than half full: a sum would store it densely), all negative but a zero.
    const std::map<std::string, Tensor> in{
        {"S", sparse({2, 3}, {{{0, 0}, -2}, {{0, 1}, -4}, {{1, 0}, -1}, {{1, 1}, 0}, {{1, 2}, -7}})}};
    check_identical(evaluate("m(i) = max(j: S(i,j))", in), dense({2}, {-2, 0}));
    check_identical(evaluate("m(i) = min(j: S(i,j))", in), dense({2}, {-4, -7}));
    // A dense input is stored everywhere.
    const std::map<std::string, Tensor> full{{"D", dense({2, 2}, {-3, -4, 5, -6})}};
    check_identical(evaluate("m(i) = max(j: D(i,j))", full), dense({2}, {-3, 5}));
    check_identical(evaluate("m(j) = min(i: D(i,j))", full), dense({2}, {-3, -6}));
}

TEST_CASE("reduction: max of a product intersects the stored entries") {
    // A = [[1,0,2],[0,3,0],[.,.,.]], x stored at 0 and 2 only: row 1 meets no x entry.
    const std::map<std::string, Tensor> in{
        {"A", sparse({3, 3}, {{{0, 0}, 1}, {{0, 2}, 2}, {{1, 1}, 3}})}, {"x", sparse({3}, {{{0}, 2}, {{2}, -1}})}};
    check_identical(evaluate("m(i) = max(j: A(i,j) * x(j))", in), dense({3}, {2, -kInf, -kInf}));
    check_identical(evaluate("m(i) = min(j: A(i,j) * x(j))", in), dense({3}, {-2, kInf, kInf}));
    check_identical(evaluate("m(i) = max(j: x(j) * A(i,j) * -1)", in), dense({3}, {2, -kInf, -kInf}));
}

TEST_CASE("reduction: max-times SpMM with a dense X") {
    // A = [[1,0,2],[0,3,0],[.,.,.]], X = [[1,-1],[2,-2],[-3,0.5]].
    const std::map<std::string, Tensor> in{{"A", sparse({3, 3}, {{{0, 0}, 1}, {{0, 2}, 2}, {{1, 1}, 3}})},
                                           {"X", dense({3, 2}, {1, -1, 2, -2, -3, 0.5})}};
    // Row 0: j = 0 gives [1, -1], j = 2 gives [-6, 1]; row 1: [6, -6]; row 2: nothing.
    check_identical(evaluate("Y(i,k) = max(j: A(i,j) * X(j,k))", in), dense({3, 2}, {1, 1, 6, -6, -kInf, -kInf}));
    check_identical(evaluate("Y(i,k) = min(j: A(i,j) * X(j,k))", in), dense({3, 2}, {-6, -1, 6, -6, kInf, kInf}));
    // Variables in the other order on the left: the result is still row-major in Y's modes.
    check_identical(evaluate("Y(k,i) = max(j: A(i,j) * X(j,k))", in), dense({2, 3}, {1, 6, -kInf, 1, -6, -kInf}));
    // An output variable the expression lacks, sized by extra_dims, broadcasts.
    check_identical(evaluate("Y(i,k) = max(j: A(i,j))", in, {{"k", 2}}), dense({3, 2}, {2, 2, 3, 3, -kInf, -kInf}));
}

TEST_CASE("reduction: a scalar output reduces over several variables") {
    const std::map<std::string, Tensor> in{{"A", sparse({2, 3}, {{{0, 0}, -1}, {{0, 2}, -2}, {{1, 1}, -0.5}})},
                                           {"E", sparse({2, 3}, {})}};
    check_identical(evaluate("s = max(i, j: A(i,j))", in), scalar(-0.5));
    check_identical(evaluate("s() = min(j, i: A(i,j))", in), scalar(-2));
    check_identical(evaluate("s = max(i, j: E(i,j))", in), scalar(-kInf));
    check_identical(evaluate("s = min(i, j: E(i,j))", in), scalar(kInf));
    // Two variables of three reduced.
    const std::map<std::string, Tensor> t{
        {"T", sparse({2, 2, 2}, {{{0, 0, 1}, 4}, {{0, 1, 0}, -1}, {{1, 1, 1}, -2}})}};
    check_identical(evaluate("m(j) = max(i, k: T(i,j,k))", t), dense({2}, {4, -1}));
    check_identical(evaluate("m(k) = min(i, j: T(i,j,k))", t), dense({2}, {-1, -2}));
}

TEST_CASE("reduction: function calls inside a max or min") {
    // S = [[-1, ., 0], [., ., .], [., 1, .]].
    const std::map<std::string, Tensor> in{{"S", sparse({3, 3}, {{{0, 0}, -1}, {{0, 2}, 0}, {{2, 1}, 1}})},
                                           {"x", dense({3}, {-2, 3, 0.5})}};
    check_identical(evaluate("m(i) = max(j: exp(S(i,j)))", in), dense({3}, {1, -kInf, e_to(1)}));
    check_identical(evaluate("m(i) = min(j: exp(S(i,j)))", in), dense({3}, {e_to(-1), kInf, e_to(1)}));
    // min-times with abs of a dense x: row 0: -1 * 2, 0 * 0.5; row 2: 1 * 3.
    check_identical(evaluate("m(i) = min(j: S(i,j) * abs(x(j)))", in), dense({3}, {-2, kInf, 3}));
    // ReLU inside: max(S, 0) only where S is stored.
    check_identical(evaluate("m(i) = min(j: max(S(i,j), 0) * 2)", in), dense({3}, {0, kInf, 2}));
    check_identical(evaluate("m(i) = max(j: -max(S(i,j), 0.5))", in), dense({3}, {-0.5, -kInf, -1}));
    // The binary functions stay functions: max(a, b) of scalar tensors a and b.
    check_identical(evaluate("s = max(a, b)", {{"a", scalar(-1)}, {"b", scalar(-2)}}), scalar(-1));
    check_identical(evaluate("s = min(a, b) + max(a, b)", {{"a", scalar(-1)}, {"b", scalar(-2)}}), scalar(-3));
}

TEST_CASE("reduction: a sum of terms unites their points, an absent part reading 0") {
    // A = [[-1, -2, .], [., ., .], [., ., .]], B = [[., -3, .], [., ., -4], [., ., .]].
    const std::map<std::string, Tensor> in{{"A", sparse({3, 3}, {{{0, 0}, -1}, {{0, 1}, -2}})},
                                           {"B", sparse({3, 3}, {{{0, 1}, -3}, {{1, 2}, -4}})}};
    // Row 0: (0,0) -1 + 0, (0,1) -2 - 3; row 1: (1,2) 0 - 4; row 2: nothing.
    check_identical(evaluate("m(i) = max(j: A(i,j) + B(i,j))", in), dense({3}, {-1, -4, -kInf}));
    check_identical(evaluate("m(i) = min(j: A(i,j) + B(i,j))", in), dense({3}, {-5, -4, kInf}));
    check_identical(evaluate("m(i) = max(j: A(i,j) - B(i,j))", in), dense({3}, {1, 4, -kInf}));
    check_identical(evaluate("m(i) = max(j: -A(i,j) - 2 * B(i,j))", in), dense({3}, {8, 8, -kInf}));
    // Products of sums: A * (B + 1) is present where A is stored (1 is everywhere).
    check_identical(evaluate("m(i) = min(j: A(i,j) * (B(i,j) + 1))", in), dense({3}, {-1, kInf, kInf}));
}

TEST_CASE("reduction: sum(j: e) is the implicit sum") {
    const auto in = spmv_inputs();
    const Tensor implicit = evaluate("y(i) = A(i,j) * x(j)", in);
    check_identical(evaluate("y(i) = sum(j: A(i,j) * x(j))", in), implicit);
    check_same(implicit, dense({2}, {7, 6}));
    // Scoped as without it: b is added once; other summed variables need not be listed.
    const std::map<std::string, Tensor> more{{"A", in.at("A")}, {"x", in.at("x")}, {"b", dense({2}, {1, 2})},
                                             {"B", dense({3, 2}, {1, 0, 0, 1, 1, 1})}};
    check_identical(evaluate("y(i) = sum(j: A(i,j) * x(j) + b(i))", more), evaluate("y(i) = A(i,j) * x(j) + b(i)", more));
    check_identical(evaluate("y(i) = sum(j: A(i,j) * B(j,k) * x(j))", more), evaluate("y(i) = A(i,j) * B(j,k) * x(j)", more));
    // += adds to the initial output; magnitudes as without it.
    const Tensor initial = dense({2}, {10, 20});
    check_identical(evaluate("y(i) += sum(j: A(i,j) * x(j))", in, {}, &initial), evaluate("y(i) += A(i,j) * x(j)", in, {}, &initial));
    check_identical(evaluate_magnitude("y(i) = sum(j: A(i,j) * x(j))", in), evaluate_magnitude("y(i) = A(i,j) * x(j)", in));
    // A tensor may still be called sum.
    check_same(evaluate("y(i) = sum(i) * 2", {{"sum", dense({2}, {1, 2})}}), dense({2}, {2, 4}));
}

TEST_CASE("reduction: evaluate_magnitude of a max is the largest magnitude visited, 0 where none") {
    const std::map<std::string, Tensor> in{{"A", sparse({3, 3}, {{{0, 0}, -1}, {{0, 1}, -2}})},
                                           {"B", sparse({3, 3}, {{{0, 1}, -3}, {{1, 2}, -4}})}};
    const std::string spec = "m(i) = max(j: A(i,j) - B(i,j))";
    const Tensor want = evaluate(spec, in);
    const Tensor magnitude = evaluate_magnitude(spec, in);
    check_identical(want, dense({3}, {1, 4, -kInf}));
    check_identical(magnitude, dense({3}, {5, 4, 0}));  // |-2| + |-3| at (0,1)
    check_identical(evaluate_magnitude("m(i) = min(j: A(i,j))", in), dense({3}, {2, 0, 0}));
    check_identical(evaluate_magnitude("m(i) = min(j: -2 * exp(A(i,j)))", in), dense({3}, {2 * e_to(-1), 0, 0}));
    // The expected -inf stays strict even with a share of the magnitudes allowed.
    CHECK(compare(want, want, 2e-4, 2e-4, magnitude, 64 * 0x1p-24).ok);
    Tensor finite = want;
    finite.vals[2] = -3.4e38;  // -FLT_MAX, not -inf
    CHECK_FALSE(compare(finite, want, 2e-4, 2e-4, magnitude, 64 * 0x1p-24).ok);
}

TEST_CASE("reduction: max and min agree with a brute-force evaluation over the dense space") {
    using P = const Point&;
    using R = std::optional<double>;
    const std::vector<ExtremumCase> cases = {
        {"m(i) = max(j: S(i,j))", true, "i", "j", {{"S", "ij"}},
         [](P p) { return p.stored("S", {'i', 'j'}) ? R(p("S", {'i', 'j'})) : std::nullopt; }},
        {"m(i) = min(j: A(i,j) * x(j))", false, "i", "j", {{"A", "ij"}, {"x", "j"}},
         [](P p) {
             return p.stored("A", {'i', 'j'}) && p.stored("x", {'j'}) ? R(p("A", {'i', 'j'}) * p("x", {'j'})) : std::nullopt;
         }},
        {"Y(i,k) = max(j: A(i,j) * X(j,k))", true, "ik", "j", {{"A", "ij"}, {"X", "jk"}},
         [](P p) {
             return p.stored("A", {'i', 'j'}) && p.stored("X", {'j', 'k'}) ? R(p("A", {'i', 'j'}) * p("X", {'j', 'k'}))
                                                                          : std::nullopt;
         }},
        {"s = max(i, j: A(i,j) * 2)", true, "", "ij", {{"A", "ij"}},
         [](P p) { return p.stored("A", {'i', 'j'}) ? R(2 * p("A", {'i', 'j'})) : std::nullopt; }},
        {"m(i) = max(j: A(i,j) + B(i,j))", true, "i", "j", {{"A", "ij"}, {"B", "ij"}},
         [](P p) {
             return p.stored("A", {'i', 'j'}) || p.stored("B", {'i', 'j'}) ? R(p("A", {'i', 'j'}) + p("B", {'i', 'j'}))
                                                                          : std::nullopt;
         }},
        {"m(j) = min(i: A(i,j) - 2 * B(i,j))", false, "j", "i", {{"A", "ij"}, {"B", "ij"}},
         [](P p) {
             return p.stored("A", {'i', 'j'}) || p.stored("B", {'i', 'j'}) ? R(p("A", {'i', 'j'}) - 2 * p("B", {'i', 'j'}))
                                                                          : std::nullopt;
         }},
        {"m(i) = max(j: exp(S(i,j)) * x(j))", true, "i", "j", {{"S", "ij"}, {"x", "j"}},
         [](P p) {
             return p.stored("S", {'i', 'j'}) && p.stored("x", {'j'}) ? R(std::exp(p("S", {'i', 'j'})) * p("x", {'j'}))
                                                                      : std::nullopt;
         }},
        {"Y(i,k) = min(j: A(i,j) * (B(j,k) + x(j)))", false, "ik", "j", {{"A", "ij"}, {"B", "jk"}, {"x", "j"}},
         [](P p) {
             return p.stored("A", {'i', 'j'}) && (p.stored("B", {'j', 'k'}) || p.stored("x", {'j'}))
                        ? R(p("A", {'i', 'j'}) * (p("B", {'j', 'k'}) + p("x", {'j'})))
                        : std::nullopt;
         }},
        {"m(i) = max(j, k: T(i,j,k) * x(k))", true, "i", "jk", {{"T", "ijk"}, {"x", "k"}},
         [](P p) {
             return p.stored("T", {'i', 'j', 'k'}) && p.stored("x", {'k'}) ? R(p("T", {'i', 'j', 'k'}) * p("x", {'k'}))
                                                                          : std::nullopt;
         }},
        {"E(i) = min(j: A(i,j) * max(u(i) + v(j), 0))", false, "i", "j", {{"A", "ij"}, {"u", "i"}, {"v", "j"}},
         [](P p) {
             return p.stored("A", {'i', 'j'}) && (p.stored("u", {'i'}) || p.stored("v", {'j'}))
                        ? R(p("A", {'i', 'j'}) * std::fmax(p("u", {'i'}) + p("v", {'j'}), 0))
                        : std::nullopt;
         }},
    };
    for (const auto& c : cases)
        for (uint64_t seed = 1; seed <= 10; ++seed) cross_check(c, seed);
}

TEST_CASE("reduction: malformed reductions throw with the place") {
    const std::map<std::string, Tensor> in{{"x", dense({2}, {1, 2})}, {"A", dense({2, 2}, {1, 2, 3, 4})},
                                           {"B", dense({2, 2}, {1, 2, 3, 4})}, {"b", dense({2}, {1, 2})}};
    const std::vector<std::tuple<std::string, std::string, std::string>> malformed = {
        {"y(i) = max(j: A(i,j)) + 1", "spec:1:23", "whole right-hand side"},  // something after it
        {"y(i) = sum(j: A(i,j)) * 2", "spec:1:23", "whole right-hand side"},
        {"y(i) = 1 + max(j: A(i,j))", "spec:1:12", "whole right-hand side"},  // inside the expression
        {"y(i) = (max(j: A(i,j)))", "spec:1:9", "whole right-hand side"},
        {"y(i) = exp(max(j: A(i,j)))", "spec:1:12", "whole right-hand side"},
        {"y(i) = -min(j, k: A(i,j))", "spec:1:9", "whole right-hand side"},
        {"y(i) = A(i,j) * sum(j: x(j))", "spec:1:17", "whole right-hand side"},
        {"y(i) = exp(j: A(i,j))", "spec:1:8", "function of one value"},
        {"y(i) = max(i, j: A(i,j))", "spec:1:12", "an index of the output"},
        {"y(i) = sum(i: A(i,j))", "spec:1:12", "an index of the output"},
        {"y(i) = max(j, j: A(i,j))", "spec:1:15", "reduced twice"},
        {"y(i) = max(k: A(i,j))", "spec:1:12", "does not occur"},
        {"y(i) = max(j: A(i,j) * B(j,k))", "spec:1:12", "neither an index of the output nor reduced"},
        {"y(i) += max(j: A(i,j))", "spec:1:1", "cannot accumulate"},
        {"y(i) = max(j: A(i,j) + b(i))", "spec:1:8", "does not use"},
        {"y(i) = max(j: A(i,j)", "spec:1:21", "')'"},
        {"y(i) = max(j:)", "spec:1:14", "expected a tensor"},
        {"y(i) = max(j: A(i,j)) max(j: A(i,j))", "spec:1:23", "whole right-hand side"},
    };
    for (const auto& [spec, where, what] : malformed) {
        CAPTURE(spec);
        const std::string message = error_of([&] { evaluate(spec, in); });
        CAPTURE(message);
        CHECK(message.find(where + ": ") == 0);
        CHECK(message.find(what) != std::string::npos);
        CHECK_THROWS_AS(evaluate(spec, in), std::runtime_error);
    }
}

TEST_CASE("compare: infinities, as a max or min over no point gives") {
    const Tensor want = dense({3}, {-kInf, 2, kInf});
    CHECK(compare(want, want, 0, 0).ok);
    CHECK(compare(dense({3}, {-kInf, 2 + 1e-7, kInf}), want, 1e-6, 1e-6).ok);
    // A finite value, a missing entry or the other infinity where an infinity is expected fails...
    const Comparison finite = compare(dense({3}, {-3.4e38, 2, kInf}), want, 1, 1);
    CHECK_FALSE(finite.ok);
    CAPTURE(finite.message);
    CHECK(finite.message.find("(1): got -3.4e+38, want -inf") != std::string::npos);
    CHECK_FALSE(compare(sparse({3}, {{{1}, 2}, {{2}, kInf}}), want, 1, 1).ok);
    CHECK_FALSE(compare(dense({3}, {kInf, 2, kInf}), want, 1, 1).ok);
    CHECK_FALSE(compare(dense({3}, {-kInf, 2, -kInf}), want, 1, 1).ok);
    CHECK_FALSE(compare(dense({3}, {std::nan(""), 2, kInf}), want, 1, 1).ok);
    // ...and an infinity where a finite value is expected fails too.
    CHECK_FALSE(compare(dense({3}, {-kInf, -kInf, kInf}), want, 1, 1).ok);
    CHECK_FALSE(compare(dense({3}, {-kInf, 2, kInf}), dense({3}, {-kInf, 2, 1e300}), 1, 1).ok);
    // With a share of the magnitudes allowed (0 where nothing was visited), the same.
    const Tensor magnitude = dense({3}, {0, 2, 0});
    CHECK(compare(want, want, 1e-6, 1e-6, magnitude, 1e-3).ok);
    CHECK_FALSE(compare(dense({3}, {-1e30, 2, kInf}), want, 1e-6, 1e-6, magnitude, 1e-3).ok);
    // Infinities survive a file round trip, as a kernel's result is read back.
    TempDir dir;
    write_tensor(dir.file("inf.mtx"), want, true);
    CHECK(compare(read_tensor(dir.file("inf.mtx")), want, 0, 0).ok);
    write_tensor(dir.file("inf_sparse.mtx"), want, false);
    CHECK(compare(read_tensor(dir.file("inf_sparse.mtx")), want, 0, 0).ok);
}

// =============================================================================================
// Random tensors

TEST_CASE("random: splitmix64 matches the reference generator") {
    SplitMix64 rng(1234567);
    CHECK(rng.next() == 6457827717110365317ULL);
    CHECK(rng.next() == 3203168211198807973ULL);
    CHECK(SplitMix64(0).next() == 0xE220A8397B1DCDAFULL);
}

namespace {

void check_sorted_unique_in_range(const Tensor& t) {
    const size_t order = t.dims.size();
    REQUIRE(t.coords.size() == t.nnz() * order);
    for (size_t e = 0; e < t.nnz(); ++e) {
        for (size_t m = 0; m < order; ++m) {
            REQUIRE(t.coords[e * order + m] >= 0);
            REQUIRE(t.coords[e * order + m] < t.dims[m]);
        }
        if (e > 0)
            REQUIRE(std::lexicographical_compare(t.coords.data() + (e - 1) * order, t.coords.data() + e * order,
                                                 t.coords.data() + e * order, t.coords.data() + (e + 1) * order));
        REQUIRE(t.vals[e] >= -1.0);
        REQUIRE(t.vals[e] < 1.0);
    }
}

std::vector<int64_t> row_lengths(const Tensor& t) {
    std::vector<int64_t> lengths(static_cast<size_t>(t.dims[0]), 0);
    for (size_t e = 0; e < t.nnz(); ++e) ++lengths[static_cast<size_t>(t.coords[e * t.dims.size()])];
    return lengths;
}

}  // namespace

TEST_CASE("random: tensors are deterministic, sorted, unique and about as dense as asked") {
    const Tensor a = random_sparse({100, 100}, 0.1, 42);
    const Tensor b = random_sparse({100, 100}, 0.1, 42);
    CHECK(a.coords == b.coords);
    CHECK(a.vals == b.vals);
    CHECK(random_sparse({100, 100}, 0.1, 43).vals != a.vals);
    check_sorted_unique_in_range(a);
    CHECK(a.nnz() > 900);
    CHECK(a.nnz() < 1100);

    const Tensor t3 = random_sparse({20, 30, 40}, 0.05, 7);
    check_sorted_unique_in_range(t3);
    CHECK(t3.nnz() > 1000);
    CHECK(t3.nnz() < 1400);

    const Tensor d = random_dense({3, 4, 5}, 9);
    CHECK(d.nnz() == 60);
    check_sorted_unique_in_range(d);
    check_sorted_unique_in_range(random_sparse({50}, 0.5, 3));
    check_sorted_unique_in_range(random_sparse({10, 10}, 1.0, 3));
    CHECK(random_sparse({10, 10}, 1.0, 3).nnz() == 100);
    CHECK(random_sparse({10, 10}, 0.0, 3).nnz() == 0);
    CHECK_THROWS_AS(random_sparse({10, 10}, 1.5, 3), std::invalid_argument);
}

TEST_CASE("random: shapes") {
    SUBCASE("empty rows") {
        const Tensor t = random_sparse({200, 50}, 0.2, 5, RandomShape{true, false, false});
        check_sorted_unique_in_range(t);
        const auto lengths = row_lengths(t);
        CHECK(std::count(lengths.begin(), lengths.end(), 0) >= 50);
    }
    SUBCASE("one dense row") {
        const Tensor t = random_sparse({200, 50}, 0.05, 5, RandomShape{false, true, false});
        check_sorted_unique_in_range(t);
        const auto lengths = row_lengths(t);
        CHECK(*std::max_element(lengths.begin(), lengths.end()) == 50);
    }
    SUBCASE("skewed rows") {
        const Tensor t = random_sparse({1000, 1000}, 0.01, 5, RandomShape{false, false, true});
        check_sorted_unique_in_range(t);
        const auto lengths = row_lengths(t);
        const double mean = static_cast<double>(t.nnz()) / 1000.0;
        CHECK(static_cast<double>(*std::max_element(lengths.begin(), lengths.end())) > 8 * mean);
        CHECK(t.nnz() > 8000);
    }
}

TEST_CASE("canonical sorts, sums duplicates and keeps explicit zeros") {
    const Tensor t = sparse({3, 3}, {{{2, 0}, 1}, {{0, 1}, 2}, {{2, 0}, 3}, {{1, 1}, 0}});
    const Tensor c = canonical(t);
    CHECK(c.coords == std::vector<int64_t>{0, 1, 1, 1, 2, 0});
    CHECK(c.vals == std::vector<double>{2, 0, 4});
    CHECK_THROWS_AS(canonical(sparse({2, 2}, {{{2, 0}, 1}})), std::invalid_argument);
}

// =============================================================================================
// Files

TEST_CASE("read_tensor: Matrix Market variants") {
    TempDir dir;
    SUBCASE("coordinate real general, with comments") {
        const Tensor t = read_tensor(dir.write("a.mtx", "%%MatrixMarket matrix coordinate real general\n% comment\n"
                                                        "2 3 2\n1 3 -1.5\n2 1 2e1\n"));
        CHECK(t.dims == std::vector<int64_t>{2, 3});
        check_same(t, sparse({2, 3}, {{{0, 2}, -1.5}, {{1, 0}, 20}}), 0);
    }
    SUBCASE("symmetric is expanded, the diagonal once") {
        const Tensor t = read_tensor(dir.write("s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n"
                                                        "3 3 2\n1 1 4\n3 1 5\n"));
        CHECK(t.nnz() == 3);
        check_same(t, sparse({3, 3}, {{{0, 0}, 4}, {{2, 0}, 5}, {{0, 2}, 5}}), 0);
    }
    SUBCASE("skew-symmetric is expanded with the sign flipped") {
        const Tensor t = read_tensor(dir.write("k.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n"
                                                        "2 2 1\n2 1 3\n"));
        check_same(t, sparse({2, 2}, {{{1, 0}, 3}, {{0, 1}, -3}}), 0);
    }
    SUBCASE("pattern entries are 1, integer entries are read") {
        check_same(read_tensor(dir.write("p.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n2 2\n")),
                   sparse({2, 2}, {{{0, 1}, 1}, {{1, 1}, 1}}), 0);
        check_same(read_tensor(dir.write("i.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n2 1 -7\n")),
                   sparse({2, 2}, {{{1, 0}, -7}}), 0);
        CHECK_THROWS_AS(read_tensor(dir.write("i2.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n2 1 1.5\n")),
                        std::runtime_error);
    }
    SUBCASE("array is column-major") {
        const Tensor t = read_tensor(dir.write("d.mtx", "%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n6\n"));
        CHECK(t.nnz() == 6);
        check_same(t, dense({2, 3}, {1, 3, 5, 2, 4, 6}), 0);
    }
    SUBCASE("symmetric array holds the lower triangle") {
        const Tensor t = read_tensor(dir.write("ds.mtx", "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n"));
        check_same(t, dense({2, 2}, {1, 2, 2, 3}), 0);
    }
    SUBCASE("the banner is found without the .mtx extension") {
        check_same(read_tensor(dir.write("noext", "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n")),
                   sparse({1, 1}, {{{0, 0}, 2}}), 0);
    }
}

TEST_CASE("read_tensor: FROSTT .tns") {
    TempDir dir;
    const Tensor t = read_tensor(dir.write("t.tns", "# comment\n1 1 2 1.5\n\n3 2 1 -2\n2 4 2 0.25\n"));
    CHECK(t.dims == std::vector<int64_t>{3, 4, 2});
    check_same(t, sparse({3, 4, 2}, {{{0, 0, 1}, 1.5}, {{2, 1, 0}, -2}, {{1, 3, 1}, 0.25}}), 0);
}

TEST_CASE("read_tensor: malformed files name path and line") {
    TempDir dir;
    const std::string banner = "%%MatrixMarket matrix coordinate real general\n";
    const std::vector<std::pair<std::string, std::string>> bad = {
        {banner + "2 2 1\n3 1 1.0\n", ":3:"},                                 // row out of range
        {banner + "2 2 2\n1 1 1.0\n", ":3:"},                                 // too few entries
        {banner + "2 2 1\n1 1 1.0\n2 2 2.0\n", ":4:"},                        // too many entries
        {banner + "2 2 1\n1 1 x\n", ":3:"},                                   // bad value
        {banner + "2 2 1\n1 1\n", ":3:"},                                     // missing value
        {banner + "2 x 1\n", ":2:"},                                          // bad size line
        {"%%MatrixMarket matrix coordinate complex general\n1 1 0\n", ":1:"}, // unsupported field
        {"%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n", ":2:"},  // symmetric but not square
        {"%%MatrixMarket matrix array real general\n2 1\n1\n", ":3:"},       // array too short
        {"%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n", ":3:"},
        {"not a banner\n", ":1:"},
    };
    for (size_t k = 0; k < bad.size(); ++k) {
        const std::string path = dir.write("bad" + std::to_string(k) + ".mtx", bad[k].first);
        const std::string message = error_of([&] { read_tensor(path); });
        CAPTURE(message);
        CHECK(message.find(path + bad[k].second) == 0);
    }
    const std::string tns = dir.write("bad.tns", "1 1 1 2\n1 2 3\n");
    CHECK(error_of([&] { read_tensor(tns); }).find(tns + ":2:") == 0);
    const std::string zero = dir.write("zero.tns", "0 1 1 2\n");
    CHECK(error_of([&] { read_tensor(zero); }).find(zero + ":1:") == 0);
    const std::string empty = dir.write("empty.tns", "# nothing\n");
    CHECK_THROWS_AS(read_tensor(empty), std::runtime_error);
    CHECK_THROWS_AS(read_tensor(dir.file("missing.mtx")), std::runtime_error);
}

TEST_CASE("write_tensor then read_tensor round trips") {
    TempDir dir;
    auto round_trip = [&](const std::string& name, const Tensor& t, bool as_dense) {
        write_tensor(dir.file(name), t, as_dense);
        return read_tensor(dir.file(name));
    };
    auto check_exact = [](const Tensor& got, const Tensor& want) {
        const Comparison c = compare(got, want, 0, 0);
        CHECK_MESSAGE(c.ok, c.message);
    };

    SUBCASE("sparse matrix as coordinate, values bit-exact") {
        const Tensor t = random_sparse({30, 20}, 0.2, 1);
        const Tensor back = round_trip("s.mtx", t, false);
        CHECK(read_text(dir.file("s.mtx")).find("coordinate") != std::string::npos);
        CHECK(back.dims == t.dims);
        CHECK(back.coords == t.coords);
        CHECK(back.vals == t.vals);
    }
    SUBCASE("dense matrix as a column-major array") {
        const Tensor t = random_dense({3, 4}, 2);
        const Tensor back = round_trip("d.mtx", t, true);
        CHECK(read_text(dir.file("d.mtx")).find("array") != std::string::npos);
        CHECK(back.dims == t.dims);
        check_exact(back, t);
        CHECK(back.vals == t.vals);  // both row-major and complete
    }
    SUBCASE("a sparse matrix written dense") {
        const Tensor t = random_sparse({5, 6}, 0.3, 3);
        const Tensor back = round_trip("sd.mtx", t, true);
        CHECK(back.nnz() == 30);
        check_exact(back, t);
    }
    SUBCASE("vectors become n x 1 and compare equal to the vector") {
        const Tensor v = random_dense({7}, 4);
        const Tensor back = round_trip("v.mtx", v, true);
        CHECK(back.dims == std::vector<int64_t>{7, 1});
        check_exact(back, v);
        const Tensor sv = random_sparse({9}, 0.5, 4);
        check_exact(round_trip("sv.mtx", sv, false), sv);
    }
    SUBCASE("scalars become 1 x 1") {
        const Tensor back = round_trip("a.mtx", scalar(0.1), true);
        CHECK(back.dims == std::vector<int64_t>{1, 1});
        check_exact(back, scalar(0.1));
        check_exact(round_trip("a2.mtx", scalar(-3), false), scalar(-3));
    }
    SUBCASE("order 3 as .tns keeps its dims") {
        const Tensor t = sparse({4, 5, 6}, {{{0, 1, 2}, 1.25}, {{1, 0, 0}, -2}});
        const Tensor back = round_trip("t.tns", t, false);
        CHECK(back.dims == t.dims);  // an explicit zero at (4,5,6) carries them
        check_exact(back, t);
        const Tensor d = random_dense({2, 3, 2}, 5);
        const Tensor dense_back = round_trip("d.tns", d, true);
        CHECK(dense_back.nnz() == 12);
        check_exact(dense_back, d);
        const Tensor r = random_sparse({6, 7, 8}, 0.1, 6, RandomShape{true, true, false});
        check_exact(round_trip("r.tns", r, false), r);
    }
    SUBCASE("a format that cannot hold the order is refused") {
        CHECK_THROWS_AS(write_tensor(dir.file("x.mtx"), random_dense({2, 2, 2}, 1), true), std::invalid_argument);
        CHECK_THROWS_AS(write_tensor(dir.file("x.tns"), random_dense({2, 2}, 1), true), std::invalid_argument);
    }
}

// =============================================================================================
// compare()

TEST_CASE("compare: tolerances, missing entries and messages") {
    const Tensor want = sparse({3, 4}, {{{0, 0}, 1.0}, {{1, 2}, 2.0}});
    SUBCASE("equal, and missing equals an explicit zero") {
        CHECK(compare(want, want, 0, 0).ok);
        const Tensor with_zero = sparse({3, 4}, {{{0, 0}, 1.0}, {{1, 2}, 2.0}, {{2, 3}, 0.0}});
        CHECK(compare(with_zero, want, 0, 0).ok);
        CHECK(compare(want, with_zero, 0, 0).ok);
        const Tensor unsorted_duplicates = sparse({3, 4}, {{{1, 2}, 1.5}, {{0, 0}, 1.0}, {{1, 2}, 0.5}});
        CHECK(compare(unsorted_duplicates, want, 0, 0).ok);
    }
    SUBCASE("a mismatch is found and named 1-based") {
        const Tensor got = sparse({3, 4}, {{{0, 0}, 1.0}, {{1, 2}, 2.5}});
        const Comparison c = compare(got, want, 1e-9, 1e-9);
        CHECK_FALSE(c.ok);
        CHECK(c.message.find("(2,3)") != std::string::npos);
        CHECK(c.message.find("1 of") == 0);
        CHECK(compare(got, want, 0.3, 0).ok);  // within rtol
        CHECK(compare(got, want, 0, 0.6).ok);  // within atol
    }
    SUBCASE("an entry missing from got, or extra in got") {
        CHECK_FALSE(compare(sparse({3, 4}, {{{0, 0}, 1.0}}), want, 1e-9, 1e-9).ok);
        const Tensor extra = sparse({3, 4}, {{{0, 0}, 1.0}, {{1, 2}, 2.0}, {{2, 0}, 1e-3}});
        const Comparison c = compare(extra, want, 1e-9, 1e-9);
        CHECK_FALSE(c.ok);
        CHECK(c.message.find("(3,1)") != std::string::npos);
    }
    SUBCASE("NaN and Inf in got fail, unless the same infinity is wanted") {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        CHECK_FALSE(compare(sparse({3, 4}, {{{0, 0}, nan}, {{1, 2}, 2.0}}), want, 1, 1).ok);
        CHECK_FALSE(compare(sparse({3, 4}, {{{0, 0}, 1.0}, {{1, 2}, 2.0}, {{2, 2}, inf}}), want, 1, 1).ok);
        CHECK_FALSE(compare(sparse({3, 4}, {{{0, 0}, nan}}), sparse({3, 4}, {{{0, 0}, nan}}), 1, 1).ok);
        // A max reduction over no point is -inf (a min's +inf): only that same infinity matches it.
        CHECK(compare(sparse({3, 4}, {{{0, 0}, inf}}), sparse({3, 4}, {{{0, 0}, inf}}), 1, 1).ok);
        CHECK(compare(sparse({3, 4}, {{{0, 0}, -inf}}), sparse({3, 4}, {{{0, 0}, -inf}}), 0, 0).ok);
    }
    SUBCASE("many mismatches: a count and the first five") {
        const Tensor got = random_dense({3, 4}, 1);
        const Comparison c = compare(got, sparse({3, 4}, {}), 0, 0);
        CHECK_FALSE(c.ok);
        CHECK(c.message.find("12 of 12") == 0);
        CHECK(std::count(c.message.begin(), c.message.end(), ';') == 5);
    }
    SUBCASE("dims must match, up to trailing extents of 1") {
        CHECK_FALSE(compare(sparse({4, 3}, {}), sparse({3, 4}, {}), 0, 0).ok);
        CHECK(compare(dense({3, 1}, {1, 2, 3}), dense({3}, {1, 2, 3}), 0, 0).ok);
        CHECK_FALSE(compare(dense({1, 3}, {1, 2, 3}), dense({3}, {1, 2, 3}), 0, 0).ok);
    }
    SUBCASE("a malformed result is a failure, not a crash") {
        CHECK_FALSE(compare(sparse({3, 4}, {{{5, 0}, 1.0}}), want, 0, 0).ok);
    }
}

TEST_CASE("reference: evaluate_magnitude sums absolute terms; compare allows a share of it") {
    // y = A x with a cancelling row: 1e8 - 1e8 + 1.
    Tensor a = sparse({2, 3}, {{{0, 0}, 1e8}, {{0, 1}, -1e8}, {{0, 2}, 1.0}, {{1, 1}, 2.0}});
    Tensor x = sparse({3}, {{{0}, 1.0}, {{1}, 1.0}, {{2}, 1.0}});
    const std::string spec = "y(i) = A(i,j) * x(j) - A(i,j) * x(j) * 0.5";
    Tensor want = evaluate(spec, {{"A", a}, {"x", x}});
    Tensor magnitude = evaluate_magnitude(spec, {{"A", a}, {"x", x}});
    REQUIRE(magnitude.nnz() == want.nnz());
    CHECK(magnitude.vals[0] == doctest::Approx(1.5 * (2e8 + 1)));  // |1| and |-0.5| times |A| |x|
    CHECK(magnitude.vals[1] == doctest::Approx(3.0));
    CHECK(want.vals[0] == doctest::Approx(0.5));
    // A float32 sum of row 0 may be off by several units: rtol of the result rejects it, a share
    // of the magnitudes accepts it; a gross error stays rejected.
    Tensor rounded = want;
    rounded.vals[0] = 8.5;
    CHECK(!compare(rounded, want, 2e-4, 2e-4).ok);
    CHECK(compare(rounded, want, 2e-4, 2e-4, magnitude, 64 * 0x1p-24).ok);
    Tensor wrong = want;
    wrong.vals[1] = 2.0;  // want 1.0 (2 - 1)
    Comparison c = compare(wrong, want, 2e-4, 2e-4, magnitude, 64 * 0x1p-24);
    CHECK(!c.ok);
    CHECK(c.message.find("of the sum of magnitudes") != std::string::npos);
}

TEST_CASE("reference: an output's structure restricts the spec to a pattern's entries") {
    CHECK(restricted_to_entries("# the numerators\nE(i,j) = exp(S(i,j) - m(i))  # on S\n", "P") ==
          "E(i,j) = P(i,j) * (exp(S(i,j) - m(i)))");
    CHECK(restricted_to_entries("y(i) = A(i,j) * x(j) + b(i)", "P") == "y(i) = P(i) * (A(i,j) * x(j) + b(i))");
    CHECK_THROWS_AS(restricted_to_entries("y(i) += x(i)", "P"), std::runtime_error);
    // Duplicates count once, explicit zeros count.
    const Tensor s = sparse({2, 3}, {{{0, 1}, 2.0}, {{1, 2}, 0.0}, {{0, 1}, 5.0}});
    const Tensor p = pattern_of(s);
    CHECK(p.dims == std::vector<int64_t>{2, 3});
    CHECK(p.coords == std::vector<int64_t>{0, 1, 1, 2});
    CHECK(p.vals == std::vector<double>{1.0, 1.0});
    // exp(S - m) on S's entries only, a bias added once per entry.
    const Tensor m = dense({2}, {1.0, -1.0});
    const Tensor e = evaluate(restricted_to_entries("E(i,j) = exp(S(i,j) - m(i))", "P"), {{"S", s}, {"m", m}, {"P", p}});
    check_same(e, sparse({2, 3}, {{{0, 1}, std::exp(7.0 - 1.0)}, {{1, 2}, std::exp(0.0 + 1.0)}}));
    const Tensor a = dense({2, 2}, {1, 2, 3, 4}), x = dense({2, 3}, {1, 0, 2, 0, 1, 1}), b = dense({2}, {10, 20});
    const Tensor y = evaluate(restricted_to_entries("Y(i,j) = A(i,k) * x(k,j) + b(i)", "P"), {{"A", a}, {"x", x}, {"b", b}, {"P", p}});
    check_same(y, sparse({2, 3}, {{{0, 1}, 1 * 0 + 2 * 1 + 10.0}, {{1, 2}, 3 * 2 + 4 * 1 + 20.0}}));
}

TEST_CASE("statements: split at ';' and line breaks, a line without '=' continuing the one before") {
  const std::vector<std::string> statements = spgen_ref::split_statements("# c\nt(i) = A(i,j) *\n  x(j)  # more\ny(i) = t(i); z = y(i);\n");
  CHECK(statements == std::vector<std::string>{"t(i) = A(i,j) * x(j)", "y(i) = t(i)", "z = y(i)"});
}

TEST_CASE("statements: each output feeds the next, stored dense or on a structure") {
  // A = [[1, 2], [0, 3]] (three entries), x = [1, 1].
  spgen_ref::Tensor A{{2, 2}, {0, 0, 0, 1, 1, 1}, {1, 2, 3}};
  spgen_ref::Tensor x{{2}, {0, 1}, {1, 1}};
  // t = A x = [3, 3]; m = row maxima of A = [2, 3]; E = A - m on A's entries; y = E x.
  const auto out = spgen_ref::evaluate_statements("t(i) = A(i,j) * x(j)\nm(i) = max(j: A(i,j))\nE(i,j) = A(i,j) - m(i)\ny(i) = E(i,j) * x(j) + t(i)\n",
                                                  {{"A", A}, {"x", x}},
                                                  {{"t", {true, ""}}, {"m", {true, ""}}, {"E", {false, "A"}}});
  CHECK(spgen_ref::compare(out.at("t"), spgen_ref::Tensor{{2}, {0, 1}, {3, 3}}, 0, 0).ok);
  CHECK(spgen_ref::compare(out.at("m"), spgen_ref::Tensor{{2}, {0, 1}, {2, 3}}, 0, 0).ok);
  // E on A's three entries only: (0,0) -1, (0,1) 0, (1,1) 0; not at (1,0), where A - m would be -3.
  CHECK(out.at("E").nnz() == 3);
  CHECK(spgen_ref::compare(out.at("E"), spgen_ref::Tensor{{2, 2}, {0, 0}, {-1}}, 0, 0).ok);
  CHECK(spgen_ref::compare(out.at("y"), spgen_ref::Tensor{{2}, {0, 1}, {2, 3}}, 0, 0).ok);
  // A dense output holds every coordinate.
  CHECK(out.at("t").nnz() == 2);
  CHECK(spgen_ref::densified(spgen_ref::Tensor{{3}, {1}, {5}}).vals == std::vector<double>{0, 5, 0});
}

TEST_CASE("statements: `+=` adds into what an earlier statement wrote") {
  // A = [[1, 2], [0, 3]], x = [1, 1]: t = A x = [3, 3], then t += 2 x = [5, 5], then y = t.
  spgen_ref::Tensor A{{2, 2}, {0, 0, 0, 1, 1, 1}, {1, 2, 3}};
  spgen_ref::Tensor x{{2}, {0, 1}, {1, 1}};
  const auto out = spgen_ref::evaluate_statements("t(i) = A(i,j) * x(j)\nt(i) += 2 * x(i)\ny(i) = t(i)\n", {{"A", A}, {"x", x}},
                                                  {{"t", {true, ""}}});
  CHECK(spgen_ref::compare(out.at("t"), spgen_ref::Tensor{{2}, {0, 1}, {5, 5}}, 0, 0).ok);
  CHECK(spgen_ref::compare(out.at("y"), spgen_ref::Tensor{{2}, {0, 1}, {5, 5}}, 0, 0).ok);
}
