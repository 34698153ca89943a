#include "passes/lower/lowering.h"

namespace spgen::lowering {

// ---- located inside the blocks ----
// A level of another operand on an index that a blocked operand splits (A bsr .* B csr): the
// block loops produce its coordinates a block at a time, and no cursor can follow them across
// blocks, so each coordinate is located under the level's parent position, by the level's kind:
// - compressed: binary search in the parent's crd range;
// - ragged (dense-variable): direct, at position pos[p] + coordinate, stored below pos[p+1];
// - ELL: binary search in the parent's W slots (increasing up to the padding, whose coordinate
//   is negative: "0 <= crd < coordinate" holds on a prefix);
// - COO: the run of equal coordinates (a compressed-nonunique level, or a singleton above the
//   last level) by a lower and an upper bound, inside the parent's run; the last singleton
//   by one search there;
// - a level blocked apart from the loops (B bsr 4x4 beside A bsr 2x2): the same, at the
//   coordinate / its block (block level) or % its block (in-block level).
// (The rest of a union, lower_outside_blocks, locates the blocked operand's own blocks so.)
bool Lowering::is_located_in_blocks(const sparse::Axis& axis) const {
  const sparse::BlockedVar* blocked = program_.blocked(axis.index_var);
  if (axis.tensor == program_.output().tensor) return false;  // a block-row workspace gathers its blocks
  if (axis.kind == sparse::AxisKind::DenseFixed) return false;
  // A rest locates the blocks it skips, their unblocked sparse levels too (DCSR-like rows).
  if (axis.block_part == BlockPart::None && skips_blocks_of(axis.tensor) && !reads(axis.tensor)) return true;
  if (located_vars_.count(axis.index_var)) return true;  // (a cuda rest's outer loop: see lower_outside_blocks)
  return (blocked && blocked->tensor != axis.tensor) || axis.blocked_apart();
}

bool Lowering::skips_blocks_of(const std::string& tensor) const {
  return std::any_of(rest_.skip_blocks_of.begin(), rest_.skip_blocks_of.end(), [&](const Conjunction& c) { return c.count(tensor) > 0; });
}

std::string Lowering::locate_strategy(const sparse::Axis& axis, bool in_run) {
  return level_access(axis)->locate_strategy(in_run);
}

std::vector<Stmt> Lowering::locate_in_blocks(const LevelPosition& position) const {
  const sparse::Axis& axis = *position.searched;
  const std::string& p = position.name;
  const Expr parent = position.value;
  auto [begin, last] = level_access(axis)->positions_under(parent, position.parent_run_end, index_type_);
  // An absent parent has no entries: a located level above that is not found, or a merge
  // around here that found no entry of this tensor (its cursor may sit past the end).
  Expr parent_found = position.parent_found.empty() ? nullptr : var(position.parent_found, ScalarType::Bool);
  if (auto merged = presence_.find(axis.tensor); merged != presence_.end())
    for (const std::string& flag : merged->second) parent_found = logical_and(parent_found, var(flag, ScalarType::Bool));
  if (parent_found) {
    begin = select(parent_found, begin, int64(0));
    last = select(parent_found, last, int64(0));
  }
  const Expr coordinate = level_coordinate(axis);
  const sparse::BlockedVar* blocked = program_.blocked(axis.index_var);
  std::string why = located_vars_.count(axis.index_var)
                        ? "each thread takes its own coordinates of " + axis.index_var + ", so no cursor can follow them"
                    : blocked ? blocked->tensor + " splits " + axis.index_var + " into blocks, so no cursor can follow it"
                    : reads(axis.tensor) && !program_.output().shares_structure_with.empty()
                        ? "the loops follow the entries of " + program_.output().shares_structure_with + ", whose structure " +
                              program_.output().tensor + " shares"
                        : "to skip the blocks of " + axis.tensor + ", done above";
  std::vector<Stmt> stmts = {std::make_shared<Comment>("locate " + level_coordinate_prose(axis) + " in " + axis.tensor + " by " +
                                                       locate_strategy(axis, !position.parent_run_end.empty()) + " (" +
                                                       why + ")")};
  const SearchNames names = {p, position.end, position.high, position.middle, position.found, position.run_end, position.run_middle};
  std::vector<Stmt> search = level_access(axis)->locate(names, parent, begin, last, parent_found, coordinate,
                                                        !position.parent_run_end.empty(), index_type_);
  stmts.insert(stmts.end(), search.begin(), search.end());
  return stmts;
}

Stmt Lowering::innermost_statement() const {
  Stmt statement;
  if (counting_) statement = write_output(nullptr);
  else if (write_.scalar_accumulator) statement = reduce_into_accumulator(product(write_.inner_factors));
  else statement = write_output(product(write_.inner_factors));
  if (rest_.skip_blocks_of.empty()) return statement;
  // The blocks of the blocked operands were done before (lower_outside_blocks).
  Expr in_blocks;
  for (const Conjunction& visited : rest_.skip_blocks_of) {
    Expr all;
    for (const std::string& tensor : visited) {
      auto levels = rest_.skip_levels_above.find(tensor);
      all = logical_and(all, presence(tensor, levels == rest_.skip_levels_above.end() ? INT_MAX : levels->second));
    }
    in_blocks = logical_or(in_blocks, all);
  }
  return std::make_shared<If>(binary(BinOp::Eq, in_blocks, std::make_shared<IntImm>(0, ScalarType::Bool)), statement, nullptr);
}

// ---- the rest of a union beside a blocked operand ----
// A + B, A bsr: the block loops visit A's blocks (B located inside them); then B's entries
// outside them, with A gone from the expression (it is zero there): the same spec, unblocked,
// whose loops follow B, locate A's block at each coordinate (as an operand blocked otherwise)
// and skip the coordinate where A stores it. It adds into the output, zeroed before the blocks.
Stmt Lowering::lower_outside_blocks() {
  sparse::Program rest = rest_program();
  auto lower_rest = [&](const std::set<std::string>& located_vars) {
    RestInputs inputs = rest_inputs();
    inputs.located_vars = located_vars;
    return std::make_unique<Lowering>(rest, config_, LoweringPhase::Compute, -1, inputs);
  };
  std::unique_ptr<Lowering> rest_lowering = lower_rest({});
  LoweredFunc func = rest_lowering->run();
  if (refused_by(*rest_lowering)) return block({});
  // On the GPU the rest's outer loop is spread over the grid, where a merge's cursors cannot
  // be shared out: where it merges (B and D dcsr), it visits every coordinate instead, each
  // operand's level there located by binary search (as inside the blocks; an absent row has
  // no entries), so that each thread has rows of its own.
  if (config_.target == Target::Cuda && rest_lowering->plans_.front().kind == LoopKind::Merge) {
    rest_lowering = lower_rest({rest.iteration.iterators.front().var});
    func = rest_lowering->run();
    if (refused_by(*rest_lowering)) return block({});
  }
  Lowering& lowering = *rest_lowering;
  used_names_.insert(lowering.used_names_.begin(), lowering.used_names_.end());
  Stmt comment = std::make_shared<Comment>("the other operands outside " + blocks_of() + ", where " + zero() + ": " +
                                           ast::to_string(*rest.iteration.body));
  Stmt body = relabel_shared_loops(func.body);
  if (config_.target != Target::Cuda) return block({comment, body});
  // On the GPU the block loops' kernel would run the rest in every thread: the rest is a kernel
  // of its own after it, its outer loop spread over the grid. Iterations that may meet on an
  // output entry (a summed outer loop, COO rows that repeat) add into it atomically; a merge's
  // cursors cannot be shared out.
  std::vector<Stmt> top;
  std::function<void(const Stmt&)> flatten = [&](const Stmt& s) {
    if (s->kind == StmtKind::Block) for (const Stmt& t : static_cast<const Block&>(*s).stmts) flatten(t);
    else top.push_back(s);
  };
  flatten(body);
  // Its loop, then the kernels of its own rest, if any (beside a second operand blocked otherwise).
  std::vector<Stmt> own_rest(top.begin() + (top.empty() ? 0 : 1), top.end());
  bool own_rest_kernels = std::all_of(own_rest.begin(), own_rest.end(), [](const Stmt& s) {
    return s->kind == StmtKind::Comment || (as_for(s) && as_for(s)->annotations.own_kernel);
  });
  const For* loop = !top.empty() && own_rest_kernels ? as_for(top.front()) : nullptr;
  const sparse::Iterator& outer = rest.iteration.iterators.front();
  const LoopPlan& plan = lowering.plans_.front();
  if (plan.kind != LoopKind::Dense && plan.kind != LoopKind::Driven)
    throw_unsupported("the entries of " + names(tensors_read(rest)) + " outside " + blocks_of() +
                      " follow in a kernel of their own on the cuda target, its outer loop spread over the threads "
                      "of the grid, but that loop (" + outer.var + ") merges " + names(tensors_read(rest)) +
                      " with cursors that no thread can share; run it on the cpu target, or store " + outer.var +
                      " in a dense level in all but one of them (csr rather than dcsr)");
  if (!loop)
    throw_unsupported("the entries of " + names(tensors_read(rest)) + " outside " + blocks_of() +
                      " follow in a kernel of their own on the cuda target, but its loops do not form one nest; run it "
                      "on the cpu target");
  bool distinct_rows = !outer.is_reduction && (plan.kind == LoopKind::Dense || !lowering.repeats(rest.axes[plan.stream()]));
  LoopAnnotations annotations = loop->annotations;
  annotations.own_kernel = true;
  if (!distinct_rows) annotations.bind_reduction = "atomic";
  std::vector<Stmt> kernels = {comment, std::make_shared<For>(loop->label, loop->var, loop->begin, loop->end, loop->body, annotations)};
  kernels.insert(kernels.end(), own_rest.begin(), own_rest.end());
  return block(std::move(kernels));
}

// "A's blocks", "A's and E's blocks"; "A is zero", "A and E are zero".
// Where the operands blocked alike multiply: "the blocks A and B both store"; "A .* B is zero".
std::string Lowering::blocks_of() const {
  std::vector<std::string> owners;
  bool products = std::any_of(rest_.blocks_done.begin(), rest_.blocks_done.end(), [](const Conjunction& c) { return c.size() > 1; });
  if (products) {
    for (const Conjunction& c : rest_.blocks_done) owners.push_back(names(std::vector<std::string>(c.begin(), c.end())));
    return "the blocks " + names(owners) + (rest_.blocks_done.size() == 1 ? " both store" : " store together");
  }
  for (const std::string& t : rest_.blockers) owners.push_back(t + "'s");
  return names(owners) + " blocks";
}

std::string Lowering::zero() const {
  bool products = std::any_of(rest_.blocks_done.begin(), rest_.blocks_done.end(), [](const Conjunction& c) { return c.size() > 1; });
  if (products) {
    std::vector<std::string> terms;
    for (const Conjunction& c : rest_.blocks_done) {
      std::string term;
      for (const std::string& t : c) term += (term.empty() ? "" : " .* ") + t;
      terms.push_back(term);
    }
    return names(terms) + (terms.size() > 1 ? " are zero" : " is zero");
  }
  return names(rest_.blockers) + (rest_.blockers.size() > 1 ? " are zero" : " is zero");
}

// The operands whose blocks a rest skips.
std::vector<std::string> Lowering::skipped_tensors() const {
  std::vector<std::string> tensors;
  for (const Conjunction& c : rest_.skip_blocks_of)
    for (const std::string& t : c)
      if (!std::count(tensors.begin(), tensors.end(), t)) tensors.push_back(t);
  return tensors;
}

Lowering::Lowering(const sparse::Program& rest, const Config& config, LoweringPhase phase, int counted_level, const RestInputs& inputs)
    : Lowering(rest, config, phase, counted_level) {
  used_names_ = inputs.names;
  rest_.skip_blocks_of = inputs.skip_blocks_of;
  rest_.skip_levels_above = inputs.skip_levels_above;
  rest_.block_row_owner = inputs.block_row_owner;
  located_vars_ = inputs.located_vars;
  sum_.listing_rest = inputs.listing;
}

// A rest's own rest (beside a second operand blocked otherwise) skips both operands' blocks.
// Where the loop over A's unblocked level merges the others' coordinates, the block loops did
// A's block rows whole: the rest skips those (skip_levels_above), not only A's entries in them.
Lowering::RestInputs Lowering::rest_inputs() const {
  RestInputs inputs;
  inputs.names = used_names_;
  inputs.skip_blocks_of = rest_.skip_blocks_of;
  inputs.skip_blocks_of.insert(inputs.skip_blocks_of.end(), rest_.blocks_done.begin(), rest_.blocks_done.end());
  inputs.skip_levels_above = rest_.skip_levels_above;
  return inputs;
}

// The rest beside the blocked operands, as a program of its own (passes/lower/part_programs.h).
sparse::Program Lowering::rest_program() {
  const RestOfBlocks rest{rest_.blockers, rest_.in_rows, blocked_otherwise(rest_.blockers), rows_.row_depth, blocks_of()};
  return lowering::rest_program(program_, config_, rest, [this](const std::string& wanted) { return fresh_name(wanted); });
}

// The rest's loops named as this nest's (k in both, or i_in) get labels of their own: schedule
// ops find loops by label and mean this nest's; the rest's loops stay as lowered.
Stmt Lowering::relabel_shared_loops(const Stmt& rest) {
  struct Relabel : IRMutator {
    Lowering& owner;
    std::map<std::string, std::string> labels;
    explicit Relabel(Lowering& o) : owner(o) {}
    Stmt mutate_for(const For& node, const Stmt& self) override {
      Stmt inner = IRMutator::mutate_for(node, self);
      const auto& loops = owner.program_.iteration.iterators;
      if (std::none_of(loops.begin(), loops.end(), [&](const sparse::Iterator& it) { return it.var == node.label; }))
        return inner;
      if (!labels.count(node.label)) labels[node.label] = owner.fresh_name(node.label);
      const For& loop = static_cast<const For&>(*inner);
      return std::make_shared<For>(labels[node.label], loop.var, loop.begin, loop.end, loop.body, loop.annotations);
    }
  } relabel(*this);
  return relabel.mutate(rest);
}

// The variable of a gathered output's key level (its blocks' columns: j of j / c).
bool Lowering::output_gathered_var(const std::string& var) const {
  const sparse::SparseBuffer& output = program_.output();
  return output.gathered_level >= 0 && program_.axes[output.axes[output.gathered_level]].mode_var == var;
}

// A gathered output's rest (C bsr = A bsr + B csr): the other operands' entries outside the
// blocked operand's blocks, lowered as rest_program says for the loops inside this block row
// (the loops down to the row are this one's), scattered into this block row's workspace.
Stmt Lowering::rest_in_block_row() {
  sparse::Program rest = rest_program();
  RestInputs inputs = rest_inputs();
  inputs.block_row_owner = this;
  Lowering lowering(rest, config_, counting_ ? LoweringPhase::Assemble : LoweringPhase::Compute, counted_level_, inputs);
  Stmt body = lowering.run_in_block_row();
  if (refused_by(lowering)) return block({});
  used_names_.insert(lowering.used_names_.begin(), lowering.used_names_.end());
  body = relabel_shared_loops(body);
  return block({std::make_shared<Comment>("the other operands outside " + blocks_of() + ", where " + zero() +
                                          ", into the same block row: " + ast::to_string(*rest.iteration.body)),
                body});
}

// A rest inside its owner's block row appends to the same output rows: the output's positions
// above the gathered level (a block-DCSR block row's cursor) and the flags that open them are
// the owner's, declared and advanced by its loops.
void Lowering::share_owner_rows() {
  const sparse::SparseBuffer& output = program_.output();
  std::vector<LevelPosition>& mine = positions_.at(output.tensor);
  const std::vector<LevelPosition>& owners = rest_.block_row_owner->positions_.at(output.tensor);
  const int levels = std::min({output.gathered_level + 1, static_cast<int>(mine.size()), static_cast<int>(owners.size())});
  for (int level = 0; level < levels; ++level) {
    if (mine[level].name == owners[level].name) continue;
    mine[level].name = owners[level].name;
    rest_.owner_rows.insert(owners[level].name);
  }
}

void Lowering::share_owner_flags() {
  for (OpenLevel& open : open_levels_)
    for (const OpenLevel& owner : rest_.block_row_owner->open_levels_)
      if (owner.level == open.level) {
        open.flag = owner.flag;
        open.cursor = owner.cursor;
        open.every_iteration = owner.every_iteration;
      }
}

// The loops of a block row's rest, below the owner's loops down to the row (see rest_in_block_row).
Stmt Lowering::run_in_block_row() {
  reserve_names();
  plan_loops();
  if (refused()) return block({});
  check_fusions();
  plan_positions();
  plan_output();
  if (refused()) return block({});
  const auto& mine = program_.iteration.iterators;
  const auto& owners = rest_.block_row_owner->program_.iteration.iterators;
  bool same_rows = rows_.row_depth == rest_.block_row_owner->rows_.row_depth;
  for (int d = 0; same_rows && d <= rows_.row_depth; ++d) same_rows = mine[d].var == owners[d].var;
  if (!same_rows)
    throw_unsupported("the loops of " + program_.output().tensor + "'s block rows differ between " + names(skipped_tensors()) +
                      "'s blocks and the other operands' entries outside them, so they cannot share a block row; "
                      "reorder so the block rows are outermost");
  std::vector<Stmt> body;
  for (int d = -1; d <= rows_.row_depth; ++d)
    for (const Stmt& declare : position_declares(d))
      if (declare->kind != StmtKind::Declare || !rest_.owner_rows.count(static_cast<const Declare&>(*declare).name)) body.push_back(declare);
  body.push_back(loops_from(rows_.row_depth + 1));  // (the owner's loops declare and advance the output's open levels)
  // Its loops follow an operand blocked otherwise (A 2x3 + B 3x2 - 3 * D into bsr 2x3): the
  // entries outside its blocks too follow, into the same block row.
  if (!rest_.blockers.empty()) body.push_back(rest_in_block_row());
  return block(std::move(body));
}

}  // namespace spgen::lowering
