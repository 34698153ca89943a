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
//
// Files: ref_expand.cpp (step 2), ref_storage.h (3, and the output of 5), ref_runner.cpp (4 to 6:
// running a term), ref_calls.cpp (6: materializing calls), ref_internal.h (what they share). This
// file: the evaluation as a whole - index variables and their sizes, the inputs stored per use,
// explicit max and min reductions (7) - and the public entry points.
#include "reference.h"

#include "ref_internal.h"
#include "ref_parser.h"
#include "ref_storage.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace spgen_ref {
namespace {

using namespace detail;

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
        run_term(terms[0], loop_vars, ctx, Target{point_vars, &extremum, target.magnitude});
        return extremum.result();
    }
    // Several terms: first their sum at each point (a point of any of them), an absent one reading 0.
    Accumulator sums(point_dims);
    for (const Term& term : terms) run_term(term, loop_vars, ctx, Target{point_vars, &sums, target.magnitude});
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
        run_term(term, loop_vars, ctx, target);
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
