// Internal to the reference evaluator (reference.cpp states its method): the declarations its
// files share - product terms and the helpers on expression trees (ref_expand.cpp), the state of
// one evaluation (accesses, function calls, variable sizes) and where a term's values go, and the
// entry points of the term runner (ref_runner.cpp) and of function calls (ref_calls.cpp). Not
// part of the public API (reference.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ref_parser.h"
#include "ref_tensor.h"

namespace spgen_ref::detail {

// Expansion into a sum of product terms (ref_expand.cpp)

struct Term {
    double coef = 1;
    std::vector<const Expr*> factors;      // tensor accesses
    std::vector<const Expr*> calls;        // function calls that read a tensor (factors too)
    std::vector<const Expr*> reciprocals;  // denominators with index variables, evaluated pointwise
};

bool has_access(const Expr& e);
bool has_call(const Expr& e);
double constant_value(const Expr& e);
void fold_constant_calls(std::unique_ptr<Expr>& e);
std::vector<Term> expand(const Expr& e);
void collect_indices_in_order(const Expr& e, std::vector<std::string>& out);
std::set<std::string> term_indices(const Term& term);

// Defined here so that it still inlines where terms run and where a reduction combines values.
inline double apply(Func func, double a, double b) {
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

// The stored tensors (ref_storage.h)
class StoredTensor;
class Accumulator;

// The state of one evaluation (set up by reference.cpp) and where a term's values go; terms run
// in ref_runner.cpp

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

// Plans `term` as nested loops over `loop_vars` (all of the term's variables and the target's
// output variables) and adds its values into target.output.
void run_term(const Term& term, const std::set<int>& loop_vars, Context& context, const Target& target);

// Function calls (ref_calls.cpp)

// The slot of an access to the call's points and values (absolute: |values|), stored exactly.
int materialize(Context& ctx, CallInfo& call, bool absolute);

// Whether `e` (inside a call, so its accesses are stored exactly) is present at every point.
bool everywhere(const Context& ctx, const Expr& e);

}  // namespace spgen_ref::detail
