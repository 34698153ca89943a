#include "passes/factor_product.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <map>
#include <set>

#include "frontend/parser.h"
#include "passes/auto_schedule.h"
#include "support/text.h"

namespace spgen {

namespace {

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

}  // namespace

std::optional<Factoring> factor_product(const ast::Spec& spec, const Config& config, const std::string& config_text) {
  if (config.factor == false) return std::nullopt;
  if (!config.auto_schedule || spec.accumulate || spec.reduction != ast::Reduction::Sum || !config.output_structure.empty() ||
      !config.format_of(spec.output.tensor).all_dense() || !config.specialize.empty() || !config.row_variants.empty() ||
      !product_of_accesses(*spec.rhs))
    return std::nullopt;
  const std::vector<const ast::Access*> factors = ast::collect_accesses(*spec.rhs);
  if (factors.size() != 3 || factors[0]->tensor == factors[1]->tensor || factors[0]->tensor == factors[2]->tensor ||
      factors[1]->tensor == factors[2]->tensor)
    return std::nullopt;
  auto is_sparse = [&](const ast::Access* a) { return !config.format_of(a->tensor).all_dense(); };
  const size_t sparse_count = static_cast<size_t>(std::count_if(factors.begin(), factors.end(), is_sparse));
  if (sparse_count == 0 || sparse_count == 3) return std::nullopt;
  // Sizes and entry counts from the sparse operands' statistics; without them, only where the
  // config asks ("factor": true), assumed: modes of 10^4, 8 entries per row of the last level.
  bool known = true;
  std::map<std::string, double> dims, entries;
  for (const ast::Access* a : factors) {
    if (!is_sparse(a)) continue;
    auto stats = config.stats.find(a->tensor);
    const bool has = stats != config.stats.end() && stats->second.dims.size() == a->indices.size();
    known = known && has;
    double rows = 1;
    for (size_t m = 0; m < a->indices.size(); ++m) {
      const double dim = has ? static_cast<double>(stats->second.dims[m]) : kAssumedModeSize;
      dims.emplace(a->indices[m], dim);
      if (m + 1 < a->indices.size()) rows *= dim;
    }
    entries[a->tensor] = has ? static_cast<double>(stats->second.nnz) : rows * kAssumedRowLength;
  }
  if (!known && config.factor != true) return std::nullopt;
  auto size = [&](const std::string& var) -> double {
    if (auto d = dims.find(var); d != dims.end()) return d->second;
    auto fixed = config.sizes.find(var);
    return fixed != config.sizes.end() ? static_cast<double>(fixed->second) : static_cast<double>(kAssumedFeatureWidth);
  };
  auto product = [&](const std::set<std::string>& vars) {
    double p = 1;
    for (const std::string& v : vars) p *= size(v);
    return p;
  };
  // The points a nest over these operands visits (a dense temporary counts as dense): a sparse
  // operand's entries times the sizes of the indices it lacks; two sparse ones meet where their
  // shared coordinates agree (entries of each, over the sizes they share).
  struct Operand {
    std::set<std::string> vars;
    double entries = 0;  // 0: dense
  };
  auto points = [&](const std::vector<Operand>& operands) {
    std::set<std::string> all, shared;
    double p = 1;
    std::vector<const Operand*> sparse;
    for (const Operand& o : operands) {
      all.insert(o.vars.begin(), o.vars.end());
      if (o.entries > 0) sparse.push_back(&o);
    }
    std::set<std::string> stored;
    for (const Operand* o : sparse) {
      p *= o->entries;
      for (const std::string& v : o->vars)
        if (!stored.insert(v).second) shared.insert(v);
    }
    for (const std::string& v : all)
      if (!stored.count(v)) p *= size(v);
    return p / product(shared);
  };
  auto operand = [&](const ast::Access* a) { return Operand{vars_of(*a), is_sparse(a) ? entries.at(a->tensor) : 0.0}; };
  const std::set<std::string> out_vars = vars_of(spec.output);
  const double single = points({operand(factors[0]), operand(factors[1]), operand(factors[2])});

  std::optional<Factoring> best;
  double best_cost = config.factor == true ? INFINITY : single;
  for (size_t x = 0; x < 3; ++x)
    for (size_t y = x + 1; y < 3; ++y) {
      const ast::Access& a = *factors[x];
      const ast::Access& b = *factors[y];
      const ast::Access& other = *factors[3 - x - y];
      const std::set<std::string> other_vars = vars_of(other);
      // The indices only a and b have: summed in the first statement.
      std::vector<std::string> t_indices;
      bool contracts = false;
      auto add = [&](const std::string& v) {
        if (vars_of(a).count(v) && vars_of(b).count(v) && !other_vars.count(v) && !out_vars.count(v)) {
          contracts = true;
          return;
        }
        if (std::find(t_indices.begin(), t_indices.end(), v) == t_indices.end()) t_indices.push_back(v);
      };
      for (const std::string& v : a.indices) add(v);
      for (const std::string& v : b.indices) add(v);
      if (!contracts) continue;
      const double cost = points({operand(&a), operand(&b)}) +
                          points({Operand{std::set<std::string>(t_indices.begin(), t_indices.end()), 0.0}, operand(&other)});
      if (cost >= best_cost) continue;
      best_cost = cost;
      const std::string t = temporary_name(spec);
      const std::string t_access = access_text(t, t_indices);
      Factoring f;
      f.spec_text = t_access + " = " + ast::to_string(a) + " * " + ast::to_string(b) + "\n" + ast::to_string(spec.output) + " = " +
                    t_access + " * " + ast::to_string(other) + "\n";
      // T dense, the output's indices outermost (in its order), so that the second statement's
      // rows are the output's and a tile runs over the output's last index.
      std::vector<int> order;
      for (const std::string& v : spec.output.indices)
        if (auto at = std::find(t_indices.begin(), t_indices.end(), v); at != t_indices.end()) order.push_back(static_cast<int>(at - t_indices.begin()));
      for (size_t m = 0; m < t_indices.size(); ++m)
        if (std::find(order.begin(), order.end(), static_cast<int>(m)) == order.end()) order.push_back(static_cast<int>(m));
      nlohmann::json root = nlohmann::json::parse(config_text);
      nlohmann::json levels = nlohmann::json::array();
      for (size_t m = 0; m < t_indices.size(); ++m) levels.push_back("dense");
      nlohmann::json format = t_indices.empty() ? nlohmann::json("dense") : nlohmann::json{{"levels", levels}, {"order", order}};
      root["tensors"][t] = {{"temporary", true}, {"format", format}};
      root.erase("factor");  // (the two statements are the answer to it)
      f.config_text = root.dump();
      f.reason = "one nest visits " + format_number("%.3g", single) + " points; " + t_access + " first visits " + format_number("%.3g", cost) + " in all" +
                 (known ? "" : " (\"factor\": true, without statistics: sizes assumed)");
      best = std::move(f);
    }
  return best;
}

}  // namespace spgen
