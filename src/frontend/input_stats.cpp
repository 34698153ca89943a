#include "frontend/input_stats.h"

#include <cmath>
#include <cstdio>

#include "frontend/config.h"
#include "support/diagnostics.h"
#include "support/text.h"

namespace spgen {

std::string InputStats::describe() const {
  std::string text = source + ": ";
  for (size_t m = 0; m < dims.size(); ++m) text += (m ? " x " : "") + std::to_string(dims[m]);
  text += ", " + std::to_string(nnz) + " entries, " + format_number("%.1f", row_mean) + " per row (at most " + std::to_string(row_max) + ")";
  if (dims.size() == 2) text += ", mean |i - j| " + std::to_string(std::llround(bandwidth_mean));
  if (static_split_imbalance > 0) text += ", equal row blocks within " + format_number("%.2f", static_split_imbalance) + "x of even";
  return text;
}

std::map<std::string, InputStats> read_input_stats(const ast::Spec& spec, const Config& config,
                                                   const std::map<std::string, std::string>& files,
                                                   const std::function<InputStats(const std::string&)>& read,
                                                   const std::string& flag) {
  const bool of_any_input = flag == "--input";
  std::map<std::string, const ast::Access*> inputs;
  for (const ast::Access* access : ast::collect_accesses(*spec.rhs)) inputs.emplace(access->tensor, access);
  std::map<std::string, InputStats> stats;
  for (const auto& [name, path] : files) {
    const std::string prefix = "spgen: error: " + flag + " " + name + "=" + path + ": ";
    auto input = inputs.find(name);
    if (input == inputs.end()) {
      if (of_any_input) continue;
      std::string names;
      for (const auto& [tensor, access] : inputs) names += (names.empty() ? "" : ", ") + tensor;
      throw CompileError(prefix + "the spec has no input " + name + " (its inputs: " + names + ")\n");
    }
    if (config.format_of(name).all_dense()) {
      if (of_any_input) continue;
      throw CompileError(prefix + name + " is stored dense (" + config.format_of(name).name +
                         "): statistics describe the structure of a sparse input\n");
    }
    // (`spgen run`'s driver reads its inputs itself and reports their errors, vectors written as
    // n x 1 matrices included: a file it would accept or refuse gives no statistics here.)
    InputStats read_stats;
    try {
      read_stats = read(path);
    } catch (const std::exception& e) {  // a file that cannot be read, or is not a tensor
      if (of_any_input) continue;
      throw CompileError(prefix + e.what() + "\n");
    }
    const size_t order = input->second->indices.size();
    if (read_stats.dims.size() != order) {
      if (of_any_input) continue;
      throw CompileError(prefix + "an order-" + std::to_string(read_stats.dims.size()) + " tensor, but " + name + " has " +
                         std::to_string(order) + " indices in the spec\n");
    }
    stats.emplace(name, std::move(read_stats));
  }
  return stats;
}

}  // namespace spgen
