#include "passes/build_executor.h"

#include <algorithm>
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
    case PartKind::Bsr:
      return std::to_string(d.op.block_rows) + "x" + std::to_string(d.op.block_cols) + " blocks that hold enough entries, as BSR";
    case PartKind::Csr: return "the entries outside those blocks, as CSR";
  }
  return "";
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

  std::vector<Stmt> body;
  for (size_t k = 0; k < parts.size(); ++k) {
    const DecomposedPart& part = decomposition.parts[k];
    body.push_back(std::make_shared<Comment>("part " + part.name + " (" + part.tensor + "): " + describe(decomposition, part) +
                                             (k == 0 ? "" : "; adds into the output")));
    std::vector<Expr> args;
    for (const Param& p : parts[k].params) args.push_back(var(p.name));
    body.push_back(std::make_shared<Call>(parts[k].name, std::move(args)));
  }
  executor.body = block(std::move(body));
  return executor;
}

}  // namespace spgen
