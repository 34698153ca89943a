#include "passes/factor_product.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "frontend/parser.h"

namespace spgen {

namespace {

// A dense index whose size neither "sizes" nor the statistics give: a typical feature width.
constexpr double kAssumedWidth = 32;
// Without statistics ("factor": true): a sparse operand's modes, and its entries per row.
constexpr double kAssumedModeSize = 1e4;
constexpr double kAssumedRowLength = 8;

// Whether `expr` is a product of accesses only.
bool product_of_accesses(const ast::Expr& expr) {
  if (expr.kind == ast::ExprKind::Access) return !expr.access.pattern;
  return expr.kind == ast::ExprKind::Mul && product_of_accesses(*expr.lhs) && product_of_accesses(*expr.rhs);
}

std::set<std::string> vars_of(const ast::Access& access) { return {access.indices.begin(), access.indices.end()}; }

std::string access_text(const std::string& tensor, const std::vector<std::string>& indices) {
  std::string text = tensor + "(";
  for (size_t m = 0; m < indices.size(); ++m) text += (m ? "," : "") + indices[m];
  return text + ")";
}

// A name for the temporary that no tensor or index variable of the spec has.
std::string temporary_name(const ast::Spec& spec) {
  for (int n = 1;; ++n) {
    const std::string name = n == 1 ? "T" : "T" + std::to_string(n);
    if (!spec.find_tensor(name) && std::find(spec.index_vars.begin(), spec.index_vars.end(), name) == spec.index_vars.end() &&
        !is_reserved_name(name))
      return name;
  }
}

std::string count(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

}  // namespace

std::optional<Factoring> factor_product(const ast::Spec& spec, const Config& config, const std::string& config_text) {
  if (config.factor == false) return std::nullopt;
  if (!config.auto_schedule || spec.accumulate || spec.reduction != ast::Reduction::Sum || !config.output_structure.empty() ||
      !config.format_of(spec.output.tensor).all_dense() || !config.specialize.empty() || !config.row_variants.empty() ||
      !product_of_accesses(*spec.rhs))
    return std::nullopt;
  const std::vector<const ast::Access*> factors = ast::collect_accesses(*spec.rhs);
  if (factors.size() != 3) return std::nullopt;
  const ast::Access* sparse = nullptr;
  std::vector<const ast::Access*> dense;
  for (const ast::Access* access : factors) {
    if (!config.format_of(access->tensor).all_dense()) {
      if (sparse) return std::nullopt;
      sparse = access;
    } else {
      dense.push_back(access);
    }
  }
  if (!sparse || dense.size() != 2 || dense[0]->tensor == dense[1]->tensor) return std::nullopt;
  // Without statistics, only where the config asks ("factor": true), sizes assumed: a sparse
  // operand's modes of 10^4 and 8 entries per row of its last level.
  auto stats = config.stats.find(sparse->tensor);
  const bool known = stats != config.stats.end() && stats->second.dims.size() == sparse->indices.size();
  if (!known && config.factor != true) return std::nullopt;
  auto size = [&](const std::string& var) -> double {
    for (size_t m = 0; m < sparse->indices.size(); ++m)
      if (sparse->indices[m] == var) return known ? static_cast<double>(stats->second.dims[m]) : kAssumedModeSize;
    auto fixed = config.sizes.find(var);
    return fixed != config.sizes.end() ? static_cast<double>(fixed->second) : kAssumedWidth;
  };
  auto product = [&](const std::set<std::string>& vars) {
    double p = 1;
    for (const std::string& v : vars) p *= size(v);
    return p;
  };
  double rows = 1;  // the positions above the sparse operand's last level, as assumed
  for (size_t m = 0; m + 1 < sparse->indices.size(); ++m) rows *= kAssumedModeSize;
  const double nnz = known ? static_cast<double>(stats->second.nnz) : rows * kAssumedRowLength;
  const std::set<std::string> sparse_vars = vars_of(*sparse), out_vars = vars_of(spec.output);
  std::set<std::string> own;  // the dense operands' indices that S lacks
  for (const ast::Access* d : dense)
    for (const std::string& v : d->indices)
      if (!sparse_vars.count(v)) own.insert(v);
  const double single = nnz * product(own);

  std::optional<Factoring> best;
  double best_cost = config.factor == true ? INFINITY : single;
  for (size_t first = 0; first < 2; ++first) {
    const ast::Access& with = *dense[first];
    const ast::Access& other = *dense[1 - first];
    const std::set<std::string> other_vars = vars_of(other);
    // The indices only S and `with` have: summed in the first statement.
    std::vector<std::string> t_indices;
    bool contracts = false;
    auto add = [&](const std::string& v) {
      if (sparse_vars.count(v) && vars_of(with).count(v) && !other_vars.count(v) && !out_vars.count(v)) {
        contracts = true;
        return;
      }
      if (std::find(t_indices.begin(), t_indices.end(), v) == t_indices.end()) t_indices.push_back(v);
    };
    for (const std::string& v : sparse->indices) add(v);
    for (const std::string& v : with.indices) add(v);
    if (!contracts) continue;
    std::set<std::string> with_own, second_vars(t_indices.begin(), t_indices.end());
    for (const std::string& v : with.indices)
      if (!sparse_vars.count(v)) with_own.insert(v);
    second_vars.insert(other_vars.begin(), other_vars.end());
    second_vars.insert(out_vars.begin(), out_vars.end());
    const double cost = nnz * product(with_own) + product(second_vars);
    if (cost >= best_cost) continue;
    best_cost = cost;
    const std::string t = temporary_name(spec);
    const std::string t_access = access_text(t, t_indices);
    Factoring f;
    f.spec_text = t_access + " = " + ast::to_string(*sparse) + " * " + ast::to_string(with) + "\n" + ast::to_string(spec.output) +
                  " = " + t_access + " * " + ast::to_string(other) + "\n";
    // T dense, the output's indices outermost (in its order), so that the second statement's
    // rows are the output's and its tile runs over the output's last index.
    std::vector<int> order;
    for (const std::string& v : spec.output.indices)
      if (auto at = std::find(t_indices.begin(), t_indices.end(), v); at != t_indices.end()) order.push_back(static_cast<int>(at - t_indices.begin()));
    for (size_t m = 0; m < t_indices.size(); ++m)
      if (std::find(order.begin(), order.end(), static_cast<int>(m)) == order.end()) order.push_back(static_cast<int>(m));
    nlohmann::json root = nlohmann::json::parse(config_text);
    nlohmann::json levels = nlohmann::json::array();
    for (size_t m = 0; m < t_indices.size(); ++m) levels.push_back("dense");
    root["tensors"][t] = {{"temporary", true}, {"format", {{"levels", levels}, {"order", order}}}};
    root.erase("factor");  // (the two statements are the answer to it)
    f.config_text = root.dump();
    f.reason = "one nest visits " + count(single) + " points (" + sparse->tensor + "'s " + count(nnz) + " entries times the other indices); " +
               t_access + " first visits " + count(cost) + " in all" + (known ? "" : " (\"factor\": true, without statistics: sizes assumed)");
    best = std::move(f);
  }
  return best;
}

}  // namespace spgen
