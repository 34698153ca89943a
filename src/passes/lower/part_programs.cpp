#include "passes/lower/part_programs.h"

#include <algorithm>
#include <map>
#include <set>

#include "passes/infer_loop_order.h"
#include "support/diagnostics.h"
#include "passes/lower/blocked_analysis.h"
#include "passes/lower_to_loops.h"

namespace spgen::lowering {

bool parts_listed_beside_blocks(const sparse::Program& whole) {
  const sparse::SparseBuffer& output = whole.output();
  if (whole.iteration.added_parts.empty() || !output_is_assembled(whole)) return false;
  if (whole.parts_list_output()) return true;
  if (output.format.is_blocked()) return false;
  for (const sparse::BlockedVar& b : whole.blocked_vars)
    if (std::find(output.indices.begin(), output.indices.end(), b.var) != output.indices.end()) return true;
  return false;
}

sparse::Program listed_part_program(const sparse::Program& whole, const ast::ExprPtr& terms, const Config& config,
                                    std::optional<LoopOrderConflict>* conflict) {
  sparse::Program part = whole;
  part.iteration.body = terms;
  part.iteration.added_parts.clear();
  // (The output blocks no loop of a part: it is unblocked, or listed into its blocks.)
  std::set<std::string> read;
  for (const ast::Access* access : ast::collect_accesses(*terms)) read.insert(access->tensor);
  std::vector<sparse::BlockedVar> kept;
  std::map<std::string, std::string> unblocked;  // a removed loop -> the index's loop in its place ("" for none)
  for (sparse::BlockedVar b : whole.blocked_vars) {
    std::string alike;
    for (const sparse::Axis& axis : part.axes)
      if (read.count(axis.tensor) && (axis.index_var == b.outer || axis.index_var == b.inner) && alike.empty())
        alike = axis.tensor;
    if (alike.empty()) {
      for (const sparse::Axis& axis : part.axes)
        if (read.count(axis.tensor) && axis.blocked_apart() && axis.mode_var == b.var && alike.empty()) {
          alike = axis.tensor;
          b.size = axis.block;
        }
      for (sparse::Axis& axis : part.axes)
        if (read.count(axis.tensor) && axis.blocked_apart() && axis.mode_var == b.var && axis.block == b.size)
          axis.index_var = axis.block_part == BlockPart::Block ? b.outer : b.inner;
    }
    if (alike.empty()) {
      // The index's loop takes the in-block loop's place, the later: the loops between the two
      // (another index's in-block loop, k_in) may give what an unblocked level on it needs (B(k,j)
      // csr beside D bsr: j after k_in).
      unblocked[b.outer] = "";
      unblocked[b.inner] = b.var;
      continue;
    }
    if (!read.count(b.tensor)) b.tensor = alike;
    kept.push_back(b);
  }
  sparse::set_part_loops(part, whole, std::move(kept), unblocked);
  // (C_prev of `+=` is kept a part alone, lower_iteration: its order serves no other tensor. A
  // union's term apart orders its loops by its own tensors.)
  // A tensor that gets its own block loops here (blocked apart in the whole: B block-DCSR 1x2
  // beside C_prev's 3x1 blocks) may need them in another order than the whole's: the part's
  // loops follow its own tensors then. (found by fuzzing: its block levels were iterated out of
  // order, reading a position not yet bound)
  if (std::any_of(read.begin(), read.end(), [&](const std::string& t) { return part.buffer(t).ordered_apart; }) ||
      !loop_order_holds(part, read)) {
    if (!conflict) infer_loop_order(part, config, read);
    else *conflict = infer_loop_order_or_conflict(part, config, read);
  }
  return part;
}

ast::ExprPtr without(const ast::ExprPtr& expr, const std::string& tensor) {
  auto with = [&](ast::ExprPtr lhs, ast::ExprPtr rhs) {
    auto copy = std::make_shared<ast::Expr>(*expr);
    copy->lhs = std::move(lhs);
    copy->rhs = std::move(rhs);
    return ast::ExprPtr(copy);
  };
  switch (expr->kind) {
    case ast::ExprKind::Access: return expr->access.tensor == tensor ? nullptr : expr;
    case ast::ExprKind::Literal: return expr;
    case ast::ExprKind::Neg: {
      ast::ExprPtr operand = without(expr->lhs, tensor);
      return operand ? with(operand, nullptr) : nullptr;
    }
    case ast::ExprKind::Mul:
    case ast::ExprKind::Div: {
      ast::ExprPtr lhs = without(expr->lhs, tensor), rhs = without(expr->rhs, tensor);
      return lhs && rhs ? with(lhs, rhs) : nullptr;  // (a divisor is never the blocked operand: checked)
    }
    case ast::ExprKind::Call: {
      // The tensor reads 0 where it is gone; a call left with no tensor is evaluated nowhere.
      auto zero_if_gone = [&](const ast::ExprPtr& arg) -> ast::ExprPtr {
        if (!arg) return nullptr;
        ast::ExprPtr rest = without(arg, tensor);
        if (rest) return rest;
        auto zero = std::make_shared<ast::Expr>();
        zero->kind = ast::ExprKind::Literal;
        zero->literal = "0";
        zero->loc = arg->loc;
        return zero;
      };
      ast::ExprPtr call = with(zero_if_gone(expr->lhs), zero_if_gone(expr->rhs));
      return ast::is_constant(*call) ? nullptr : call;
    }
    case ast::ExprKind::Add:
    case ast::ExprKind::Sub: {
      ast::ExprPtr lhs = without(expr->lhs, tensor), rhs = without(expr->rhs, tensor);
      if (lhs && rhs) return with(lhs, rhs);
      if (lhs) return lhs;
      if (!rhs || expr->kind == ast::ExprKind::Add) return rhs;
      auto negated = std::make_shared<ast::Expr>(*expr);
      negated->kind = ast::ExprKind::Neg;
      negated->lhs = rhs;
      negated->rhs = nullptr;
      return ast::ExprPtr(negated);
    }
  }
  return expr;
}

std::vector<std::string> tensors_read(const sparse::Program& program) {
  std::vector<std::string> tensors;
  for (const ast::Access* access : ast::collect_accesses(*program.iteration.body))
    if (std::find(tensors.begin(), tensors.end(), access->tensor) == tensors.end()) tensors.push_back(access->tensor);
  return tensors;
}

// The same spec with the blocked operand gone (zero) and its blocks apart from the loops. A
// gathered output keeps the block loops of its indices that the blocked operand gave (i_blk,
// i_in, now the output's, as where no operand blocks it): they share the block row.
// (Moved from the lowering: `program_`, `outside_blocks_of_` keep their names there.)
sparse::Program rest_program(const sparse::Program& program_, const Config& config, const RestOfBlocks& inputs,
                             const FreshName& fresh_name) {
  const std::vector<std::string>& outside_blocks_of_ = inputs.blockers;
  // A gathered output's index that its key level stores (the block row's gathered level).
  auto output_gathered_var = [&](const std::string& var) {
    const sparse::SparseBuffer& output = program_.output();
    return output.gathered_level >= 0 && program_.axes[output.axes[output.gathered_level]].mode_var == var;
  };
  sparse::Program rest = program_;
  const sparse::SparseBuffer& output = program_.output();
  const bool gathered = inputs.gathered;
  std::set<std::string> kept;  // the variables whose block loops the rest keeps
  rest.blocked_vars.clear();
  const std::string& blocker = outside_blocks_of_.front();
  auto removed = [&](const std::string& tensor) { return std::count(outside_blocks_of_.begin(), outside_blocks_of_.end(), tensor) > 0; };
  for (const sparse::BlockedVar& b : program_.blocked_vars) {
    if (b.tensor != blocker) rest.blocked_vars.push_back(b);
    else if (gathered && !output_gathered_var(b.var)) rest.blocked_vars.push_back({b.var, b.outer, b.inner, b.size, output.tensor});
    else continue;
    kept.insert(b.var);
  }
  // An operand blocked otherwise gives the rest its block loops, in place of the blocker's,
  // under the same names: into a dense output, on every index it blocks (in its level order,
  // below); into a gathered output, on the index of its key level only (the
  // block row's loops stay the output's, the operand located in them at i / and % its block),
  // those loops then inside the block row's, where the key's plain loop would be, and the
  // output's levels on that index reached at its coordinate / and % their block.
  const std::string& otherwise = inputs.otherwise;
  std::set<std::string> by_otherwise;  // the variables whose block loops `otherwise` gives
  for (const sparse::BlockedVar& b : program_.blocked_vars) {
    if (b.tensor != blocker || otherwise.empty() || (gathered && !output_gathered_var(b.var))) continue;
    bool blocks = false;
    for (sparse::Axis& axis : rest.axes)
      if (axis.tensor == otherwise && axis.mode_var == b.var && axis.block_part != BlockPart::None) {
        axis.index_var = axis.block_part == BlockPart::Block ? b.outer : b.inner;
        if (axis.block_part == BlockPart::Block) rest.blocked_vars.push_back({b.var, b.outer, b.inner, axis.block, otherwise});
        blocks |= axis.block_part == BlockPart::Block;
      }
    if (!blocks) continue;  // (gathered: `otherwise` stores the key's index unblocked, and drives its plain loop)
    kept.insert(b.var);
    by_otherwise.insert(b.var);
  }
  for (sparse::Axis& axis : rest.axes)
    if (removed(axis.tensor) || (axis.tensor == output.tensor && axis.block_part != BlockPart::None &&
                                 (!kept.count(axis.mode_var) || by_otherwise.count(axis.mode_var))))
      axis.index_var = axis.mode_var;  // now blocked_apart()
  rest.iteration.body = program_.iteration.body;
  for (const std::string& tensor : outside_blocks_of_) rest.iteration.body = without(rest.iteration.body, tensor);
  rest.iteration.accumulate = true;
  rest.iteration.iterators.clear();
  for (const sparse::Iterator& it : program_.iteration.iterators) {
    const sparse::BlockedVar* blocked = program_.blocked_loop(it.var);
    if (gathered && blocked && blocked->tensor == blocker && by_otherwise.count(blocked->var)) {
      if (it.var == blocked->inner)
        for (const std::string& loop : {blocked->outer, blocked->inner}) rest.iteration.iterators.push_back({loop, it.is_reduction});
      continue;
    }
    if (!blocked || blocked->tensor != blocker || kept.count(blocked->var)) rest.iteration.iterators.push_back(it);
    else if (it.var == blocked->inner) rest.iteration.iterators.push_back({blocked->var, it.is_reduction});
  }
  // Into a dense output, the loops that follow an operand blocked otherwise go in its level
  // order (block-CSC B beside bsr A: j_blk, i_blk, j_in, i_in), in the places they held.
  if (!gathered && !otherwise.empty()) {
    const sparse::SparseBuffer& theirs = rest.buffer(otherwise);
    auto rank = [&](const std::string& loop) {
      for (size_t l = 0; l < theirs.axes.size(); ++l)
        if (rest.axes[theirs.axes[l]].index_var == loop) return static_cast<int>(l);
      return -1;
    };
    std::vector<size_t> places;
    std::vector<sparse::Iterator> theirs_loops;
    for (size_t d = 0; d < rest.iteration.iterators.size(); ++d)
      if (rank(rest.iteration.iterators[d].var) >= 0) {
        places.push_back(d);
        theirs_loops.push_back(rest.iteration.iterators[d]);
      }
    std::stable_sort(theirs_loops.begin(), theirs_loops.end(),
                     [&](const sparse::Iterator& a, const sparse::Iterator& b) { return rank(a.var) < rank(b.var); });
    const std::vector<sparse::Iterator> unsorted = rest.iteration.iterators;
    for (size_t k = 0; k < places.size(); ++k) rest.iteration.iterators[places[k]] = theirs_loops[k];
    // ... unless that order would iterate another operand's level before its parents' loops
    // (A csr beside D in blocks of rows over dense columns: j between D's i_blk and i_in, A's
    // row i not known yet); then they keep the places they held, where those serve.
    const std::vector<std::string> read = tensors_read(rest);
    const std::set<std::string> tensors(read.begin(), read.end());
    if (!loop_order_holds(rest, tensors)) {
      rest.iteration.iterators = unsorted;
      if (!loop_order_holds(rest, tensors))
        throw CompileError(format_config_error(
            config.file, "/tensors",
            "the entries of " + names(read) + " outside " + inputs.blocks + " follow " + otherwise +
                "'s blocks, but no order of those loops iterates every operand's levels inside their "
                "parents; store " + otherwise + " with its blocks' levels together (bsr), or unblocked"));
    }
  }
  // The block loops the rest keeps get names of their own (schedule ops find loops by name, and
  // name the blocker's), but for those of the block row it shares.
  std::set<std::string> shared;
  for (int d = 0; gathered && d <= inputs.row_depth; ++d) shared.insert(program_.iteration.iterators[d].var);
  std::map<std::string, std::string> renamed;
  for (sparse::BlockedVar& b : rest.blocked_vars)
    for (std::string* loop : {&b.outer, &b.inner})
      if (!shared.count(*loop)) {
        if (!renamed.count(*loop)) renamed[*loop] = fresh_name(*loop);
        *loop = renamed[*loop];
      }
  for (sparse::Axis& axis : rest.axes)
    if (auto to = renamed.find(axis.index_var); to != renamed.end()) axis.index_var = to->second;
  for (sparse::Iterator& it : rest.iteration.iterators)
    if (auto to = renamed.find(it.var); to != renamed.end()) it.var = to->second;
  return rest;
}

}  // namespace spgen::lowering
