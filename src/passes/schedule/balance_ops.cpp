// The balanced loops of `parallel`'s "balance": a loop over rows or over runs of repeated
// coordinates cut into parts that hold equal shares of the work, found by searching the row
// positions on each call.
#include "passes/schedule/scheduler.h"

#include <algorithm>

namespace spgen::scheduling {

namespace {

// Appends a binary search for the first r in [low, high_value) where `before(r)` fails
// (high_value if it holds throughout): `result`, with `high` and `middle` its working names.
void append_search(std::vector<Stmt>& stmts, const std::string& result, const std::string& high, const std::string& middle,
                   Expr low, Expr high_value, const std::function<Expr(Expr)>& before) {
  stmts.push_back(std::make_shared<Declare>(result, ScalarType::Int64, std::move(low), true));
  stmts.push_back(std::make_shared<Declare>(high, ScalarType::Int64, std::move(high_value), true));
  Stmt step = block({std::make_shared<Declare>(middle, ScalarType::Int64, binary(BinOp::Div, add(var(result), var(high)), int64(2)), false),
                     std::make_shared<If>(before(var(middle)), std::make_shared<Assign>(result, add(var(middle), int64(1)), false),
                                          std::make_shared<Assign>(high, var(middle), false))});
  stmts.push_back(std::make_shared<While>("search " + result, binary(BinOp::Lt, var(result), var(high)), step));
}

}  // namespace

// The pos array whose rows `loop` (balanced by `balance`) runs over, or the op's error.
std::string Scheduler::balanced_rows_positions(const For& loop, const std::string& balance) const {
  if (loop.var != loop.label || !is_const_int(loop.begin, 0))
    fail("balance " + balance + " needs a loop over rows: " + loop.label +
         " is a loop over positions or a split loop; balance the dense loop whose rows a compressed level stores");
  std::string pos = row_positions(loop);
  if (pos.empty())
    fail("balance " + balance + " needs a loop over the rows of a compressed level, but no compressed level stores its "
         "entries under the rows of " + loop.label + " (for csr A(i,j), balance i)");
  return pos;
}

// A loop over the rows of a compressed level (its body reads pos[row]) becomes a loop over
// parts: ranges of rows holding equal shares of the work, each row counting as one unit plus
// its nonzeros (merge-based SpMV's diagonals, rows not cut). Each part finds its rows by binary
// search in pos. `parts` 0: one part per thread (the count read once before the loop), so each
// thread searches twice; else that many, a static schedule giving each thread a contiguous run
// of them. A row longer than a part lands in one part whole (exact, if less balanced).
Stmt Scheduler::balance_by_nonzeros(const For& loop, const Stmt& body, LoopAnnotations annotations, int64_t parts) {
  const std::string pos = balanced_rows_positions(loop, "nonzeros");
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
    const std::string high = fresh(result + "_high"), middle = fresh(result + "_mid");
    append_search(stmts, result, high, middle, int64(0), rows, [&](Expr r) { return binary(BinOp::Lt, work_before(std::move(r)), target); });
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

// Merge-based SpMV (Merrill and Garland, 2016): the rows and the entries of a compressed level are
// one merged sequence, cut into equal shares wherever the cut falls, inside a row too. A part
// starts at (row, entry) on its diagonal, found by binary search, sums the rows it finishes, and
// leaves its share of the row it cannot finish in a carry of its own, which is added into the
// output after the parallel loop. So one long row spreads over several threads, with no atomics.
// The loop is marked here and cut in two in finish() (cut_rows), after the ops on its body.
Stmt Scheduler::balance_by_merge_path(const For& loop, const Stmt& body, LoopAnnotations annotations, int64_t parts) {
  const std::string pos = balanced_rows_positions(loop, "merge_path");
  const std::string refusal = merge_path_refusal(loop, pos);
  if (!refusal.empty()) fail("balance merge_path cuts rows, and " + refusal + "; use \"balance\": \"nonzeros\", which keeps rows whole");
  const sparse::SparseBuffer& output = program_.output();
  ScalarType index_type = config_.index_type == IndexType::Int32 ? ScalarType::Int32 : ScalarType::Int64;
  ScalarType value_type = config_.value_type == ValueType::Float32 ? ScalarType::Float32 : ScalarType::Float64;
  auto pos_at = [&](Expr row) { return cast(ScalarType::Int64, load(pos, std::move(row), index_type)); };
  const std::string& row = loop.var;
  const std::string part = fresh(row + "_part");
  const Expr rows = loop.end;
  const std::string first_name = fresh(pos + "_first"), entries_name = fresh(pos + "_entries");
  const Expr first = var(first_name), entries = var(entries_name);
  const BalancedParts cut = balanced_parts(row, parts);
  // The output's entries per row: its other modes' sizes.
  Expr row_size = int64(1);
  for (size_t m = 1; m < output.indices.size(); ++m) {
    Expr dim = var("dim_" + program_.size_var(output.indices[m]));
    row_size = is_const_int(row_size, 1) ? dim : mul(row_size, dim);
  }
  const std::string carry = fresh(output.tensor + "_carry"), carry_row = fresh(row + "_carry_row");
  std::vector<Stmt> stmts;
  const std::string begin = fresh(row + "_begin"), end = fresh(row + "_end");
  const std::string begin_entry = fresh(row + "_begin_entry"), end_entry = fresh(row + "_end_entry");
  stmts.push_back(std::make_shared<Comment>("share " + part + " of " + cut.described + " of the rows and entries in " + pos +
                                            " merged: rows [" + begin + ", " + end + "), from entry " + begin_entry +
                                            ", then the entries of row " + end + " before " + end_entry));
  // The point on diagonal `diagonal` of the merge of the rows' ends with the entries: the rows
  // that end before it (the first whose end falls after it) and the entries before it.
  auto search = [&](const std::string& found, const std::string& entry, Expr diagonal) {
    const std::string d = fresh(found + "_diagonal"), high = fresh(found + "_high"), middle = fresh(found + "_mid");
    stmts.push_back(std::make_shared<Declare>(d, ScalarType::Int64, std::move(diagonal), false));
    // Row r ends before the point (on a tie, a row's end comes before the next entry).
    append_search(stmts, found, high, middle, binary(BinOp::Max, int64(0), sub(var(d), entries)), min(var(d), rows), [&](Expr r) {
      return binary(BinOp::Le, sub(pos_at(add(r, int64(1))), first), sub(sub(var(d), r), int64(1)));
    });
    stmts.push_back(std::make_shared<Declare>(entry, ScalarType::Int64, add(first, sub(var(d), var(found))), false));
  };
  auto diagonal = [&](Expr k) { return binary(BinOp::Div, mul(add(rows, entries), k), cut.count); };
  search(begin, begin_entry, diagonal(var(part)));
  search(end, end_entry, diagonal(add(var(part), int64(1))));
  stmts.push_back(std::make_shared<Store>(carry_row, var(part), var(end), false));
  LoopAnnotations rows_annotations = loop.annotations;
  rows_annotations.cut = {pos, var(begin_entry), var(end_entry), end, rows, output.values, carry, part, row_size};
  stmts.push_back(std::make_shared<For>(loop.label, loop.var, var(begin), min(add(var(end), int64(1)), rows), body, rows_annotations));
  origin_[part] = origin_.at(loop.label);
  cut_op_ = op_;

  // After the parallel loop: each part's carry into the row it left unfinished.
  const std::string k = fresh(row + "_part"), e = fresh(output.tensor + "_entry");
  const Expr carried_row = load(carry_row, var(k), ScalarType::Int64);
  Stmt add_carry = std::make_shared<Store>(output.values, add(mul(carried_row, row_size), var(e)),
                                           load(carry, add(mul(var(k), row_size), var(e)), value_type), true);
  Stmt add_row = is_const_int(row_size, 1)
                     ? Stmt(std::make_shared<Store>(output.values, carried_row, load(carry, var(k), value_type), true))
                     : Stmt(std::make_shared<For>("carry " + output.tensor, e, int64(0), row_size, add_carry));
  Stmt carries = std::make_shared<For>("carry " + row, k, int64(0), cut.count,
                                       std::make_shared<If>(binary(BinOp::Lt, carried_row, rows), add_row, nullptr));
  std::vector<Workspace> shared = {{carry, value_type, mul(cut.count, row_size), std::make_shared<FloatImm>(0.0, "0", value_type)},
                                   {carry_row, ScalarType::Int64, cut.count, int64(0)}};
  Stmt parts_loop = std::make_shared<For>(part, part, int64(0), cut.count, block(std::move(stmts)), annotations);
  // (The comment first: workspaces around a parallel loop would be per thread; these are shared.)
  Stmt body_with_carries = std::make_shared<Allocate>(
      shared, block({std::make_shared<Comment>("each part's share of the row it leaves unfinished, added in after the parts"),
                     parts_loop, carries}));
  std::vector<Stmt> outer = {std::make_shared<Declare>(first_name, ScalarType::Int64, pos_at(int64(0)), false),
                             std::make_shared<Declare>(entries_name, ScalarType::Int64, sub(pos_at(rows), first), false)};
  if (!cut.fixed) outer.insert(outer.begin(), std::make_shared<Declare>(cut.per_thread, ScalarType::Int64, std::make_shared<ThreadCount>(), false));
  outer.push_back(body_with_carries);
  return block(std::move(outer));
}

// Why the rows of `loop` cannot be cut, or empty: each part's share of a row must add into the
// output row, so the row's value must be a sum over its entries alone, written into a dense
// output row of its own.
std::string Scheduler::merge_path_refusal(const For& loop, const std::string& pos) const {
  const sparse::SparseBuffer& output = program_.output();
  const sparse::Axis* level = nullptr;
  for (const sparse::Axis& axis : program_.axes)
    if (axis.pos == pos) level = &axis;
  const std::string tensor = level ? level->tensor : "";
  // (A ragged level's coordinates count from its row's first position, which a cut would move.)
  if (!level || level->kind != sparse::AxisKind::SparseVariable)
    return "the level under " + loop.label + " is not compressed";
  if (origin_.at(loop.label) != loop.label || program_.blocked_loop(loop.label))
    return "loop " + loop.label + " runs over blocks of rows";
  if (!output.format.is_row_major_dense() || !output.shares_structure_with.empty())
    return "the output " + output.tensor + " is not dense row-major (" + output.format.name + ")";
  if (output.indices.empty() || output.indices.front() != origin_.at(loop.label))
    return "the output " + output.tensor + "'s rows are not " + loop.label;
  if (program_.iteration.reduction != ast::Reduction::Sum) return "the rows take a max or a min, not a sum";
  if (!program_.iteration.added_parts.empty())
    return "the sum has terms outside " + tensor + "'s entries";
  for (size_t b = 1; b < program_.buffers.size(); ++b)
    if (program_.buffers[b].tensor != tensor && !program_.buffers[b].format.all_dense())
      return "it co-iterates " + tensor + " with the sparse " + program_.buffers[b].tensor;
  if (ast::linear_degree(*program_.iteration.body, tensor) != 1)
    return "the right-hand side is not a sum of terms each a product with one entry of " + tensor;
  if (loads_from(loop.body, output.values)) return "the loop reads " + output.tensor + " back";
  return "";
}

// finish(): the loop balance_by_merge_path marked becomes its rows up to the part's last, then
// that last row, whose stores go to the part's carry. Both read only the part's positions.
void Scheduler::cut_rows() {
  if (!cut_op_) return;
  const For* marked = nullptr;
  int count = 0;
  for (const LoopInfo& info : loops())
    if (!info.loop->annotations.cut.pos.empty()) {
      marked = info.loop;
      ++count;
    }
  op_ = cut_op_;
  if (count != 1 || marked->var != marked->label)
    fail("balance merge_path cuts the loop over rows after the ops that follow it, and one of them split, tiled or "
         "moved that loop; put the parallel op after the ops on its loop");
  const LoopAnnotations::CutRows cut = marked->annotations.cut;
  const std::string row = marked->var;
  // A row's positions, clipped to the part's: pos[row] from no earlier than `first`, and where
  // `ends`, pos[row + 1] to no later than `end`.
  struct Clip : IRMutator {
    const LoopAnnotations::CutRows* cut;
    std::string row;
    bool ends = true;
    int unclipped = 0;
    int which(const Load& node) const {
      if (node.buffer != cut->pos) return -1;
      if (node.index->kind == ExprKind::Var && static_cast<const Var&>(*node.index).name == row) return 0;
      if (node.index->kind == ExprKind::Binary) {
        const auto& sum = static_cast<const Binary&>(*node.index);
        if (sum.op == BinOp::Add && sum.a->kind == ExprKind::Var && static_cast<const Var&>(*sum.a).name == row &&
            is_const_int(sum.b, 1))
          return 1;
      }
      return reads_var(node.index, row) ? 2 : -1;
    }
    Expr clipped(int end, Expr position) const {
      return end ? min(std::move(position), cut->end) : binary(BinOp::Max, std::move(position), cut->first);
    }
    Expr mutate_cast(const Cast& node, const Expr& self) override {
      if (node.type == ScalarType::Int64 && node.a->kind == ExprKind::Load) {
        const int w = which(static_cast<const Load&>(*node.a));
        if (w == 0 || (w == 1 && ends)) return clipped(w, self);
      }
      return IRMutator::mutate_cast(node, self);
    }
    Expr mutate_load(const Load& node, const Expr& self) override {
      const int w = which(node);
      if (w == 0 || (w == 1 && ends)) return cast(node.type, clipped(w, cast(ScalarType::Int64, self)));
      if (w == 2) ++unclipped;
      return IRMutator::mutate_load(node, self);
    }
  } clip;
  clip.cut = &cut;
  clip.row = row;
  Stmt clipped = clip.mutate(marked->body);
  clip.ends = false;
  Stmt clipped_start = clip.mutate(marked->body);
  if (clip.unclipped)
    fail("balance merge_path clips each row's positions in " + cut.pos + " to the part's, but the loop over " + row +
         " reads them otherwise than at " + row + " and " + row + " + 1");
  // The part's last row: its stores into the output go to the part's row of the carry.
  struct ToCarry : IRMutator {
    const LoopAnnotations::CutRows* cut;
    std::string row;
    // The output row-major, a store into row `row` at row * row_size + e goes to part * row_size + e.
    Expr carry_index(const Expr& index) const {
      auto is_row = [&](const Expr& e) { return e->kind == ExprKind::Var && static_cast<const Var&>(*e).name == row; };
      if (is_row(index) && is_const_int(cut->row_size, 1)) return var(cut->part);
      if (index->kind == ExprKind::Binary) {
        const auto& sum = static_cast<const Binary&>(*index);
        if (sum.op == BinOp::Add && sum.a->kind == ExprKind::Binary) {
          const auto& product = static_cast<const Binary&>(*sum.a);
          if (product.op == BinOp::Mul && is_row(product.a) && same_expr(product.b, cut->row_size))
            return add(mul(var(cut->part), cut->row_size), sum.b);
        }
      }
      return add(index, mul(sub(var(cut->part), var(row)), cut->row_size));
    }
    Stmt mutate_store(const Store& node, const Stmt& self) override {
      if (node.buffer != cut->output) return IRMutator::mutate_store(node, self);
      Expr index = carry_index(node.index);

      return std::make_shared<Store>(cut->carry, index, mutate(node.value), node.accumulate, false, node.vector, node.lanes);
    }
  } to_carry;
  to_carry.cut = &cut;
  to_carry.row = row;
  LoopAnnotations annotations = marked->annotations;
  annotations.cut = {};
  // Three loops, so that the rows between the first and the last read their positions unclipped
  // (a clip in every row cost SpMV on pubmed 1.7x at one thread).
  const Expr second = add(marked->begin, int64(1)), last_row = var(cut.last_row);
  Stmt replacement = block(
      {std::make_shared<Comment>("the first row may have begun in an earlier part: from this part's first entry"),
       std::make_shared<For>(marked->label, row, marked->begin, min(second, last_row), clipped_start, annotations),
       std::make_shared<For>(marked->label, row, second, last_row, marked->body, annotations),
       std::make_shared<Comment>("row " + cut.last_row + " goes on in the next part: this part's share into " + cut.carry),
       std::make_shared<For>(marked->label, row, last_row, min(add(last_row, int64(1)), cut.rows), to_carry.mutate(clipped), annotations)});
  struct Replace : IRMutator {
    const For* marked;
    Stmt replacement;
    Stmt mutate_for(const For& node, const Stmt& self) override {
      return &node == marked ? replacement : IRMutator::mutate_for(node, self);
    }
  } replace;
  replace.marked = marked;
  replace.replacement = replacement;
  func_.body = replace.mutate(func_.body);
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
