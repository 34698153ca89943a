#include "passes/fuse_statements.h"

#include <algorithm>
#include <map>

#include "passes/hoist_invariant_loads.h"
#include "passes/lower/abi_params.h"

namespace spgen {

using namespace loops;

namespace {

// The kernel's one loop over every row of an index variable, [0, dim_v), or null.
const For* row_loop(const LoweredFunc& func) {
  const std::vector<Stmt> body = statements_of(func.body);
  const For* loop = body.size() == 1 ? as_for(body.front()) : nullptr;
  if (!loop || loop->var != loop->label || !is_const_int(loop->begin, 0)) return nullptr;
  const auto* end = loop->end->kind == ExprKind::Var ? static_cast<const Var*>(loop->end.get()) : nullptr;
  return end && end->name == lowering::dim_name(loop->var) ? loop : nullptr;
}

// Where `tensor`'s row is: the mode its writer indexes by that statement's row variable, or -1.
int row_mode(const ast::Spec& writer, const std::string& row) {
  const std::vector<std::string>& indices = writer.output.indices;
  auto it = std::find(indices.begin(), indices.end(), row);
  return it == indices.end() ? -1 : static_cast<int>(it - indices.begin());
}

}  // namespace

std::vector<StatementGroup> fusable_statements(const ast::Program& program, const std::vector<LoweredFunc>& funcs) {
  std::vector<StatementGroup> groups;
  std::map<std::string, size_t> writer;  // within the current group
  for (size_t k = 0; k < funcs.size(); ++k) {
    const ast::Spec& statement = program.statements[k];
    const For* loop = row_loop(funcs[k]);
    // A statement writes only its own row when its output is indexed by the row variable.
    const bool row_local = loop && row_mode(statement, loop->var) >= 0;
    bool joins = false;
    if (row_local && !groups.empty()) {
      const StatementGroup& group = groups.back();
      const For* first = row_loop(funcs[group.first]);
      joins = first && first->var == loop->var && first->annotations.parallel == loop->annotations.parallel &&
              row_mode(program.statements[group.first], first->var) >= 0;
      // Each tensor the group wrote is read at this row only.
      for (const ast::Access* access : ast::collect_accesses(*statement.rhs)) {
        auto w = writer.find(access->tensor);
        if (!joins || w == writer.end()) continue;
        const int mode = row_mode(program.statements[w->second], loop->var);
        joins = mode >= 0 && access->indices[static_cast<size_t>(mode)] == loop->var;
      }
    }
    if (joins) {
      ++groups.back().count;
    } else {
      groups.push_back({k, 1, loop ? loop->var : ""});
      writer.clear();
    }
    writer[statement.output.tensor] = k;
  }
  return groups;
}

LoweredFunc fuse_statement_kernels(const std::string& name, const std::vector<const LoweredFunc*>& kernels) {
  LoweredFunc fused;
  fused.name = name;
  std::vector<Stmt> rows;
  for (const LoweredFunc* kernel : kernels) {
    for (const Param& p : kernel->params) {
      auto same = std::find_if(fused.params.begin(), fused.params.end(), [&](const Param& e) { return e.name == p.name; });
      if (same == fused.params.end()) fused.params.push_back(p);
      else same->is_const = same->is_const && p.is_const;
    }
    for (const auto& size : kernel->fixed_sizes)
      if (std::find(fused.fixed_sizes.begin(), fused.fixed_sizes.end(), size) == fused.fixed_sizes.end()) fused.fixed_sizes.push_back(size);
    rows.push_back(std::make_shared<Allocate>(std::vector<Workspace>{}, as_for(statements_of(kernel->body).front())->body));
  }
  const For& first = *as_for(statements_of(kernels.front()->body).front());
  fused.body = std::make_shared<For>(first.label, first.var, first.begin, first.end, block(std::move(rows)), first.annotations);
  // A row's values that one statement wrote and a later one reads in a loop (m(i) in exp(S - m)):
  // read once, so that the compiler may vectorize that loop.
  hoist_invariant_loads(fused);
  return fused;
}

}  // namespace spgen
