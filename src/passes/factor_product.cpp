#include "passes/factor_product.h"

#include <algorithm>
#include <cmath>
#include <functional>
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
// The most operands a product may have to be factored.
constexpr size_t kMostFactors = 6;

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

// A name for a temporary that no tensor or index variable of the spec has, nor `taken`.
std::string temporary_name(const ast::Spec& spec, const std::set<std::string>& taken) {
  for (int n = 1;; ++n) {
    const std::string name = n == 1 ? "T" : "T" + std::to_string(n);
    if (!spec.find_tensor(name) && std::find(spec.index_vars.begin(), spec.index_vars.end(), name) == spec.index_vars.end() &&
        !is_reserved_name(name) && !taken.count(name))
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
  // (Up to kMostFactors: 6 operands have 2,700 orders of contraction.)
  if (factors.size() < 3 || factors.size() > kMostFactors) return std::nullopt;
  auto is_sparse = [&](const ast::Access* a) { return !config.format_of(a->tensor).all_dense(); };
  const size_t sparse_count = static_cast<size_t>(std::count_if(factors.begin(), factors.end(), is_sparse));
  if (sparse_count == 0 || sparse_count == factors.size()) return std::nullopt;
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
  const std::set<std::string> out_vars = vars_of(spec.output);
  // The operands a statement multiplies: the spec's accesses, then the temporaries of earlier
  // statements (first in the list, as they replace the pair they contract).
  struct Factor {
    std::string tensor, text;
    std::vector<std::string> indices;
    Operand operand;
  };
  std::vector<Factor> start;
  for (const ast::Access* a : factors)
    start.push_back({a->tensor, ast::to_string(*a), a->indices, Operand{vars_of(*a), is_sparse(a) ? entries.at(a->tensor) : 0.0}});
  // A statement reads a tensor through one access only (A(i,j) * A(j,k) is two statements).
  auto one_access_each = [](const std::vector<const Factor*>& read) {
    for (size_t x = 0; x < read.size(); ++x)
      for (size_t y = x + 1; y < read.size(); ++y)
        if (read[x]->tensor == read[y]->tensor && read[x]->indices != read[y]->indices) return false;
    return true;
  };
  auto operands_of = [](const std::vector<Factor>& list) {
    std::vector<Operand> operands;
    for (const Factor& f : list) operands.push_back(f.operand);
    return operands;
  };
  const double single = points(operands_of(start));

  // Every order of contracting pairs, a statement each, until two operands or more are left for
  // the last statement: 3 operands have 3 orders, 5 have 180. A pair contracts the indices only
  // it has (it must have one); its temporary is dense, the output's indices outermost (in the
  // output's order), so that the next statement's rows are the output's and a tile runs over its
  // last index.
  struct Temporary {
    std::string name, access;
    std::vector<std::string> indices;
  };
  struct Plan {  // the statements before the last, their temporaries, and the last one's product
    std::vector<std::string> statements;
    std::vector<Temporary> temporaries;
    std::string product;
  };
  std::optional<Plan> best;
  double best_cost = config.factor == true ? INFINITY : single;
  std::vector<std::string> statements;
  std::vector<Temporary> temporaries;
  std::function<void(const std::vector<Factor>&, double)> search = [&](const std::vector<Factor>& list, double cost) {
    if (!temporaries.empty()) {
      const double total = cost + points(operands_of(list));
      std::vector<const Factor*> last;
      for (const Factor& f : list) last.push_back(&f);
      if (total < best_cost && one_access_each(last)) {
        best_cost = total;
        std::string product;
        for (const Factor& f : list) product += (product.empty() ? "" : " * ") + f.text;
        best = Plan{statements, temporaries, product};
      }
    }
    if (list.size() < 3) return;
    for (size_t x = 0; x < list.size(); ++x)
      for (size_t y = x + 1; y < list.size(); ++y) {
        const Factor& a = list[x];
        const Factor& b = list[y];
        std::set<std::string> elsewhere = out_vars;
        for (size_t o = 0; o < list.size(); ++o)
          if (o != x && o != y) elsewhere.insert(list[o].operand.vars.begin(), list[o].operand.vars.end());
        // The indices only a and b have: summed in the pair's statement.
        std::vector<std::string> t_indices;
        bool contracts = false;
        auto add = [&](const std::string& v) {
          if (a.operand.vars.count(v) && b.operand.vars.count(v) && !elsewhere.count(v)) {
            contracts = true;
            return;
          }
          if (std::find(t_indices.begin(), t_indices.end(), v) == t_indices.end()) t_indices.push_back(v);
        };
        for (const std::string& v : a.indices) add(v);
        for (const std::string& v : b.indices) add(v);
        if (!contracts || !one_access_each({&a, &b})) continue;
        const std::set<std::string> t_vars(t_indices.begin(), t_indices.end());
        const double pair_cost = cost + points({a.operand, b.operand});
        if (pair_cost >= best_cost) continue;  // (the last statement costs more still)
        std::set<std::string> taken;
        for (const Temporary& t : temporaries) taken.insert(t.name);
        const std::string name = temporary_name(spec, taken);
        const std::string access = access_text(name, t_indices);
        std::vector<Factor> next = {{name, access, t_indices, Operand{t_vars, 0.0}}};
        for (size_t o = 0; o < list.size(); ++o)
          if (o != x && o != y) next.push_back(list[o]);
        statements.push_back(access + " = " + a.text + " * " + b.text);
        temporaries.push_back({name, access, t_indices});
        search(next, pair_cost);
        temporaries.pop_back();
        statements.pop_back();
      }
  };
  search(start, 0);
  if (!best) return std::nullopt;

  // The cheapest plan as statements, and the config with its temporaries.
  Factoring f;
  for (const std::string& statement : best->statements) f.spec_text += statement + "\n";
  f.spec_text += ast::to_string(spec.output) + " = " + best->product + "\n";
  nlohmann::json root = nlohmann::json::parse(config_text);
  std::string accesses;
  for (const Temporary& t : best->temporaries) {
    std::vector<int> order;
    for (const std::string& v : spec.output.indices)
      if (auto at = std::find(t.indices.begin(), t.indices.end(), v); at != t.indices.end()) order.push_back(static_cast<int>(at - t.indices.begin()));
    for (size_t m = 0; m < t.indices.size(); ++m)
      if (std::find(order.begin(), order.end(), static_cast<int>(m)) == order.end()) order.push_back(static_cast<int>(m));
    nlohmann::json levels = nlohmann::json::array();
    for (size_t m = 0; m < t.indices.size(); ++m) levels.push_back("dense");
    nlohmann::json format = t.indices.empty() ? nlohmann::json("dense") : nlohmann::json{{"levels", levels}, {"order", order}};
    root["tensors"][t.name] = {{"temporary", true}, {"format", format}};
    accesses += (accesses.empty() ? "" : ", then ") + t.access;
  }
  root.erase("factor");  // (the statements are the answer to it)
  f.config_text = root.dump();
  f.reason = "one nest visits " + format_number("%.3g", single) + " points; " + accesses +
             (best->temporaries.size() == 1 ? " first visits " : " first visit ") + format_number("%.3g", best_cost) + " in all" +
             (known ? "" : " (\"factor\": true, without statistics: sizes assumed)");
  return f;
}

}  // namespace spgen
