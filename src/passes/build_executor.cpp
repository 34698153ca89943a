#include "passes/build_executor.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace spgen {

using namespace loops;

namespace {

std::string describe(const Decomposition& d, const DecomposedPart& part) {
  switch (part.kind) {
    case PartKind::Ell: return "its first " + std::to_string(part.width) + " entries of every row, as ELL";
    case PartKind::Coo: return "the entries of longer rows past the first " + std::to_string(d.op.width) + ", as COO";
    case PartKind::Bucket: {
      std::string rows = "listed rows with their entries of column partition " + std::to_string(part.partition) +
                         " in ELL rows of " + std::to_string(part.width);
      return part.unique_rows ? rows : rows + " (a longer row is split over several, which add into one output row)";
    }
    case PartKind::Bsr: {
      const std::string block = std::to_string(d.op.block_rows) + "x" + std::to_string(d.op.block_cols);
      return d.op.format == "bsr" ? "every occupied " + block + " block, as BSR" : block + " blocks that hold enough entries, as BSR";
    }
    case PartKind::Csr: return "the entries outside those blocks, as CSR";
    case PartKind::Sell:
      return "every row, in slices of " + std::to_string(d.op.interleave) + " rows padded to their longest" +
             (d.op.sigma > 1 ? ", sorted by length within windows of " + std::to_string(d.op.sigma) + " rows" : "");
  }
  return "";
}

// One call per part, each after its comment, with the part's own parameters as arguments.
Stmt calls_in_turn(const std::vector<LoweredFunc>& parts, const std::vector<std::string>& comments) {
  std::vector<Stmt> body;
  for (size_t k = 0; k < parts.size(); ++k) {
    body.push_back(std::make_shared<Comment>(comments[k]));
    std::vector<Expr> args;
    for (const Param& p : parts[k].params) args.push_back(var(p.name));
    body.push_back(std::make_shared<Call>(parts[k].name, std::move(args)));
  }
  return block(std::move(body));
}

}  // namespace

LoweredFunc build_executor(const std::string& name, const Decomposition& decomposition, const std::vector<LoweredFunc>& parts) {
  LoweredFunc executor;
  executor.name = name;
  // The first part's parameters, with every part's arrays where the first part's are.
  bool parts_placed = false;
  for (const Param& param : parts.front().params) {
    if (!decomposition.is_part_tensor(param.tensor)) {
      executor.params.push_back(param);
      continue;
    }
    if (parts_placed) continue;
    parts_placed = true;
    for (const LoweredFunc& part : parts)
      for (const Param& p : part.params)
        if (decomposition.is_part_tensor(p.tensor)) executor.params.push_back(p);
  }
  // Every part shares the other parameters: the same spec, with one tensor renamed.
  for (const LoweredFunc& part : parts)
    for (const Param& p : part.params)
      if (std::none_of(executor.params.begin(), executor.params.end(), [&](const Param& e) { return e.name == p.name; }))
        throw std::logic_error("decomposition part " + part.name + " has a parameter " + p.name + " the others lack");

  std::vector<std::string> comments;
  for (size_t k = 0; k < parts.size(); ++k) {
    const DecomposedPart& part = decomposition.parts[k];
    comments.push_back("part " + part.name + " (" + part.tensor + "): " + describe(decomposition, part) +
                       (k == 0 ? "" : "; adds into the output"));
  }
  executor.body = calls_in_turn(parts, comments);
  return executor;
}

LoweredFunc build_executor(const std::string& name, const ast::Spec& spec, const std::vector<LoweredFunc>& parts,
                           const std::vector<std::string>& comments) {
  LoweredFunc executor;
  executor.name = name;
  // Every parameter of a part, once, in the order the whole spec gives them: the sizes by
  // index variable, then each tensor's arrays (the same in every part that reads the tensor).
  auto rank = [&](const Param& p) -> size_t {
    if (p.kind == ParamKind::Dim)
      return static_cast<size_t>(std::find(spec.index_vars.begin(), spec.index_vars.end(), p.index_var) - spec.index_vars.begin());
    for (size_t t = 0; t < spec.tensors.size(); ++t)
      if (spec.tensors[t].name == p.tensor) return spec.index_vars.size() + t;
    throw std::logic_error("a part's parameter " + p.name + " belongs to no tensor of the spec");
  };
  std::map<size_t, std::vector<Param>> ranked;
  for (const LoweredFunc& part : parts)
    for (const Param& p : part.params) {
      std::vector<Param>& slot = ranked[rank(p)];
      auto same = std::find_if(slot.begin(), slot.end(), [&](const Param& e) { return e.name == p.name; });
      if (same == slot.end()) slot.push_back(p);
      else if (same->kind != p.kind || same->type != p.type || same->is_array != p.is_array || same->is_const != p.is_const)
        throw std::logic_error("the parts of a sum pass " + p.name + " differently");
    }
  for (auto& [_, params] : ranked) executor.params.insert(executor.params.end(), params.begin(), params.end());
  executor.body = calls_in_turn(parts, comments);
  return executor;
}

}  // namespace spgen
