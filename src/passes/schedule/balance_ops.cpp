// The balanced loops of `parallel`'s "balance": a loop over rows or over runs of repeated
// coordinates cut into parts that hold equal shares of the work, found by searching the row
// positions on each call.
#include "passes/schedule/scheduler.h"

namespace spgen::scheduling {

// A loop over the rows of a compressed level (its body reads pos[row]) becomes a loop over
// parts: ranges of rows holding equal shares of the work, each row counting as one unit plus
// its nonzeros (merge-based SpMV's diagonals, rows not cut). Each part finds its rows by binary
// search in pos. `parts` 0: one part per thread (the count read once before the loop), so each
// thread searches twice; else that many, a static schedule giving each thread a contiguous run
// of them. A row longer than a part lands in one part whole (exact, if less balanced).
Stmt Scheduler::balance_by_nonzeros(const For& loop, const Stmt& body, LoopAnnotations annotations, int64_t parts) {
  if (loop.var != loop.label || !is_const_int(loop.begin, 0))
    fail("balance nonzeros needs a loop over rows: " + loop.label +
         " is a loop over positions or a split loop; balance the dense loop whose rows a compressed level stores");
  std::string pos = row_positions(loop);
  if (pos.empty())
    fail("balance nonzeros needs a loop over the rows of a compressed level, but no compressed level stores its "
         "entries under the rows of " + loop.label + " (for csr A(i,j), balance i)");
  ScalarType index_type = config_.index_type == IndexType::Int32 ? ScalarType::Int32 : ScalarType::Int64;
  auto pos_at = [&](Expr row) { return cast(ScalarType::Int64, load(pos, std::move(row), index_type)); };
  const std::string& row = loop.var;
  std::string part = fresh(row + "_part");
  Expr rows = loop.end;
  Expr first = pos_at(int64(0));
  // The work before row r: its rows and their nonzeros.
  auto work_before = [&](Expr r) { return add(sub(pos_at(r), first), r); };
  Expr total = work_before(rows);
  const BalancedParts cut = balanced_parts(row, parts);
  std::vector<Stmt> stmts;
  // The first row whose work starts at or after `target`, in [0, rows].
  auto search = [&](const std::string& result, Expr target) {
    std::string high = fresh(result + "_high"), middle = fresh(result + "_mid");
    stmts.push_back(std::make_shared<Declare>(result, ScalarType::Int64, int64(0), true));
    stmts.push_back(std::make_shared<Declare>(high, ScalarType::Int64, rows, true));
    Stmt step = block({std::make_shared<Declare>(middle, ScalarType::Int64,
                                                 binary(BinOp::Div, add(var(result), var(high)), int64(2)), false),
                       std::make_shared<If>(binary(BinOp::Lt, work_before(var(middle)), target),
                                            std::make_shared<Assign>(result, add(var(middle), int64(1)), false),
                                            std::make_shared<Assign>(high, var(middle), false))});
    stmts.push_back(std::make_shared<While>("search " + result, binary(BinOp::Lt, var(result), var(high)), step));
  };
  auto target = [&](Expr k) { return binary(BinOp::Div, mul(total, k), cut.count); };
  std::string begin = fresh(row + "_begin"), end = fresh(row + "_end");
  stmts.push_back(std::make_shared<Comment>("iterations [" + begin + ", " + end + ") hold share " + part + " of " + cut.described +
                                            " equal shares of the rows and the nonzeros in " + pos));
  search(begin, target(var(part)));
  Expr next = add(var(part), int64(1));
  search(end, target(next));
  // The last part also takes the empty rows after the last nonzero.
  stmts.push_back(std::make_shared<If>(binary(BinOp::Eq, next, cut.count), std::make_shared<Assign>(end, rows, false), nullptr));
  LoopAnnotations serial = loop.annotations;
  stmts.push_back(std::make_shared<For>(loop.label, loop.var, var(begin), var(end), body, serial));
  origin_[part] = origin_.at(loop.label);
  return loop_over_parts(part, cut, std::move(stmts), annotations);
}

// A loop over the positions of a level whose coordinates repeat in runs (COO's rows) becomes a
// loop over parts: equal shares of the positions, each share's first position moved forward to
// the start of a run, so that each part holds its runs whole and no two parts write one entry
// of the output. `parts` 0: one per thread, as balance_by_nonzeros. Moving forward scans at most
// one run per boundary.
Stmt Scheduler::balance_by_runs(const For& loop, const Stmt& body, LoopAnnotations annotations, int64_t parts) {
  const std::string crd = runs_coordinates(program_, loop);
  if (crd.empty())
    fail("balance nonzeros needs a loop over rows or over the runs of a non-unique level (COO's rows), but loop " + loop.label +
         " walks neither");
  ScalarType index_type = config_.index_type == IndexType::Int32 ? ScalarType::Int32 : ScalarType::Int64;
  auto crd_at = [&](Expr p) { return cast(ScalarType::Int64, load(crd, std::move(p), index_type)); };
  const std::string& row = loop.label;
  std::string part = fresh(row + "_part");
  const BalancedParts cut = balanced_parts(row, parts);
  std::string begin = fresh(row + "_begin"), end = fresh(row + "_end");
  std::vector<Stmt> stmts;
  stmts.push_back(std::make_shared<Comment>("positions [" + begin + ", " + end + ") hold share " + part + " of " + cut.described +
                                            " equal shares of the entries, each begun at a run of equal " + row + " in " + crd));
  // Share k's first position, then the first position of the run it falls in or after.
  auto run_start = [&](const std::string& result, Expr k) {
    stmts.push_back(std::make_shared<Declare>(
        result, ScalarType::Int64, add(loop.begin, binary(BinOp::Div, mul(sub(loop.end, loop.begin), k), cut.count)), true));
    Expr inside_run = binary(BinOp::And,
                             binary(BinOp::And, binary(BinOp::Lt, loop.begin, var(result)), binary(BinOp::Lt, var(result), loop.end)),
                             binary(BinOp::Eq, crd_at(var(result)), crd_at(sub(var(result), int64(1)))));
    stmts.push_back(std::make_shared<While>("run " + result, inside_run, std::make_shared<Assign>(result, add(var(result), int64(1)), false)));
  };
  run_start(begin, var(part));
  run_start(end, add(var(part), int64(1)));
  stmts.push_back(std::make_shared<For>(loop.label, loop.var, var(begin), var(end), body, loop.annotations));
  origin_[part] = origin_.at(loop.label);
  annotations.repeats_coordinates = false;  // (the parts own their runs)
  annotations.sequential_reason.clear();
  return loop_over_parts(part, cut, std::move(stmts), annotations);
}

Scheduler::BalancedParts Scheduler::balanced_parts(const std::string& row, int64_t parts) {
  BalancedParts cut;
  cut.fixed = parts;
  if (parts) {
    cut.count = int64(parts);
    cut.described = std::to_string(parts);
  } else {
    cut.per_thread = fresh(row + "_parts");
    cut.count = var(cut.per_thread);
    cut.described = cut.per_thread + " (one per thread)";
  }
  return cut;
}

Stmt Scheduler::loop_over_parts(const std::string& part, const BalancedParts& cut, std::vector<Stmt> body,
                                const LoopAnnotations& annotations) const {
  Stmt parts_loop = std::make_shared<For>(part, part, int64(0), cut.count, block(std::move(body)), annotations);
  if (cut.fixed) return parts_loop;
  return block({std::make_shared<Declare>(cut.per_thread, ScalarType::Int64, std::make_shared<ThreadCount>(), false), parts_loop});
}

// The pos array of a compressed level whose parent position is the loop's variable itself.
std::string Scheduler::row_positions(const For& loop) const {
  std::set<std::string> pos_arrays;
  for (const Param& p : func_.params)
    if (p.kind == ParamKind::Pos && p.is_const) pos_arrays.insert(p.name);
  struct Finder : IRVisitor {
    const std::set<std::string>* pos;
    const std::string* row;
    std::string found;
    void visit_load(const Load& node) override {
      if (found.empty() && pos->count(node.buffer) && node.index->kind == ExprKind::Var &&
          static_cast<const Var&>(*node.index).name == *row)
        found = node.buffer;
      IRVisitor::visit_load(node);
    }
  } finder;
  finder.pos = &pos_arrays;
  finder.row = &loop.var;
  finder.visit(loop.body);
  return finder.found;
}

}  // namespace spgen::scheduling
