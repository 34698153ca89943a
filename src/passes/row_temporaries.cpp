#include "passes/row_temporaries.h"

#include <algorithm>
#include <map>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

// How far past a row's end a vector or a masked tail may read: the widest vector of a register
// tile or lanes (64 bytes of float64s and more), with room to spare.
constexpr int64_t kReachPastRow = 128;

class RowIndexing : public IRMutator {
 public:
  RowIndexing(std::map<std::string, std::pair<std::string, std::string>> rows) : rows_(std::move(rows)) {}

 protected:
  Expr mutate_load(const Load& node, const Expr& self) override {
    auto row = rows_.find(node.buffer);
    if (row == rows_.end()) return IRMutator::mutate_load(node, self);
    return std::make_shared<Load>(row->second.first, sub(mutate(node.index), var(row->second.second)), node.type, node.vector,
                                  node.gather_lane, node.lanes);
  }
  Stmt mutate_store(const Store& node, const Stmt& self) override {
    auto row = rows_.find(node.buffer);
    if (row == rows_.end()) return IRMutator::mutate_store(node, self);
    return std::make_shared<Store>(row->second.first, sub(mutate(node.index), var(row->second.second)), mutate(node.value),
                                   node.accumulate, node.atomic, node.vector, node.lanes);
  }

 private:
  std::map<std::string, std::pair<std::string, std::string>> rows_;  // values -> workspace, row start
};

// Each value of a row held in a scalar: its array's reads become the scalar, its writes assignments.
class RowScalars : public IRMutator {
 public:
  explicit RowScalars(std::map<std::string, std::string> scalars) : scalars_(std::move(scalars)) {}

 protected:
  Expr mutate_load(const Load& node, const Expr& self) override {
    auto scalar = scalars_.find(node.buffer);
    return scalar == scalars_.end() ? IRMutator::mutate_load(node, self) : var(scalar->second, node.type);
  }
  Stmt mutate_store(const Store& node, const Stmt& self) override {
    auto scalar = scalars_.find(node.buffer);
    if (scalar == scalars_.end()) return IRMutator::mutate_store(node, self);
    return std::make_shared<Assign>(scalar->second, mutate(node.value), node.accumulate);
  }

 private:
  std::map<std::string, std::string> scalars_;  // values array -> scalar
};

// Whether every access of `array` in `stmt` reads or writes one scalar at the coordinate `row`.
bool accessed_at_row_only(const Stmt& stmt, const std::string& array, const std::string& row) {
  struct Check : IRVisitor {
    const std::string &array, &row;
    bool ok = true;
    Check(const std::string& a, const std::string& r) : array(a), row(r) {}
    bool at_row(const Expr& index) const {
      return index->kind == ExprKind::Var && static_cast<const Var&>(*index).name == row;
    }
    void visit_load(const Load& node) override {
      if (node.buffer == array) ok = ok && !node.vector && node.gather_lane.empty() && at_row(node.index);
      IRVisitor::visit_load(node);
    }
    void visit_store(const Store& node) override {
      if (node.buffer == array) ok = ok && !node.vector && !node.atomic && at_row(node.index);
      IRVisitor::visit_store(node);
    }
    void visit_lane_sum(const LaneSum& node) override { ok = ok && node.buffer != array; }
  } check(array, row);
  check.visit(stmt);
  return check.ok;
}

}  // namespace

std::vector<RowTemporary> hold_row_values_in_scalars(LoweredFunc& fused, const std::vector<RowTemporary>& temporaries) {
  const For* rows = as_for(fused.body);
  if (!rows) return {};
  std::set<std::string> used = names_bound_in(fused);
  std::map<std::string, std::string> scalars;
  std::vector<RowTemporary> held;
  std::vector<Stmt> body;
  for (const RowTemporary& t : temporaries) {
    auto param = std::find_if(fused.params.begin(), fused.params.end(), [&](const Param& p) { return p.name == t.values; });
    if (param == fused.params.end() || !accessed_at_row_only(rows->body, t.values, rows->var)) continue;
    const std::string scalar = first_unused_name(used, t.tensor + "_of_row");
    used.insert(scalar);
    scalars[t.values] = scalar;
    held.push_back(t);
    body.push_back(std::make_shared<Declare>(scalar, param->type, std::make_shared<FloatImm>(0.0, "0", param->type), true));
  }
  if (held.empty()) return {};
  for (const Stmt& s : statements_of(RowScalars(scalars).mutate(rows->body))) body.push_back(s);
  fused.body = std::make_shared<For>(rows->label, rows->var, rows->begin, rows->end, block(std::move(body)), rows->annotations);
  fused.params.erase(std::remove_if(fused.params.begin(), fused.params.end(), [&](const Param& p) { return scalars.count(p.name) > 0; }),
                     fused.params.end());
  return held;
}

bool hold_rows_in_workspaces(LoweredFunc& fused, const std::vector<RowTemporary>& temporaries) {
  const For* rows = as_for(fused.body);
  if (temporaries.empty() || !rows) return false;
  std::set<std::string> used = names_bound_in(fused);
  std::map<std::string, std::pair<std::string, std::string>> held;
  std::vector<Stmt> row_body;
  std::vector<Stmt> before;
  std::vector<Workspace> workspaces;
  std::map<std::string, std::string> longest;  // pos -> the variable holding its longest row
  std::map<std::string, std::string> starts;   // pos -> the row's first position, declared once
  for (const RowTemporary& t : temporaries) {
    auto param = [&](const std::string& name) {
      return std::find_if(fused.params.begin(), fused.params.end(), [&](const Param& p) { return p.name == name; });
    };
    if (param(t.values) == fused.params.end() || param(t.pos) == fused.params.end()) return false;
    const std::string workspace = first_unused_name(used, t.tensor + "_row");
    used.insert(workspace);
    // (Temporaries on one structure share its row's first position: S and E on M's, M_row_start.)
    if (!starts.count(t.pos)) {
      const std::string owner = param(t.pos)->tensor.empty() ? t.tensor : param(t.pos)->tensor;
      const std::string start = first_unused_name(used, owner + "_row_start");
      used.insert(start);
      starts[t.pos] = start;
      row_body.push_back(
          std::make_shared<Declare>(start, ScalarType::Int64, cast(ScalarType::Int64, load(t.pos, var(rows->var), ScalarType::Int32)), false));
    }
    held[t.values] = {workspace, starts[t.pos]};
    if (!longest.count(t.pos)) {
      // The longest row, once per call: for r in rows: longest = max(longest, pos[r + 1] - pos[r]).
      const std::string name = first_unused_name(used, "longest_row");
      used.insert(name);
      const std::string r = first_unused_name(used, "r");
      used.insert(r);
      Expr length = sub(cast(ScalarType::Int64, load(t.pos, add(var(r), int64(1)), ScalarType::Int32)),
                        cast(ScalarType::Int64, load(t.pos, var(r), ScalarType::Int32)));
      before.push_back(std::make_shared<Declare>(name, ScalarType::Int64, int64(0), true));
      before.push_back(std::make_shared<For>(r, r, rows->begin, rows->end,
                                             std::make_shared<Assign>(name, binary(BinOp::Max, var(name), length), false)));
      longest[t.pos] = name;
    }
    const ScalarType type = param(t.values)->type;
    workspaces.push_back({workspace, type, add(var(longest[t.pos]), int64(kReachPastRow)), nullptr});
  }
  for (const Stmt& s : statements_of(rows->body)) row_body.push_back(s);
  const Stmt body = RowIndexing(held).mutate(block(std::move(row_body)));
  const Stmt loop = std::make_shared<For>(rows->label, rows->var, rows->begin, rows->end, body, rows->annotations);
  before.push_back(std::make_shared<Allocate>(std::move(workspaces), loop));
  fused.body = block(std::move(before));
  fused.params.erase(std::remove_if(fused.params.begin(), fused.params.end(), [&](const Param& p) { return held.count(p.name) > 0; }),
                     fused.params.end());
  return true;
}

}  // namespace spgen
