#include "passes/lower/lowering.h"

namespace spgen::lowering {

// A sum whose terms sum over different indices, into an assembled output: the body's nest is
// lowered here; each added part gets a nest of its own inside the shared loops (those outside
// the first summed one), after the body's loops there, lowered by a Lowering of its own that
// takes over the shared loops' positions, the output's cursors and flags, and the row
// workspace or scalar sum the body adds into.

// The body and the added parts as one sum: what the shared loops visit.
ast::ExprPtr Lowering::whole_sum() {
  if (!sum_.whole_sum) {
    sum_.whole_sum = program_.iteration.body;
    for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts)
      sum_.whole_sum = ast::make_operator(ast::ExprKind::Add, part.body->loc, sum_.whole_sum, part.body);
  }
  return sum_.whole_sum;
}

bool Lowering::reads(const ast::Expr& expr, const std::string& tensor) {
  for (const ast::Access* access : ast::collect_accesses(expr))
    if (access->tensor == tensor) return true;
  return false;
}

// Lowering an added part: the position the body's nest gives this level, where it is known in
// the shared loops (so are the output's appended levels: written through the same cursors).
const LevelPosition* Lowering::shared_position(const sparse::SparseBuffer& buffer, size_t level) const {
  if (!sum_.added_to) return nullptr;
  auto found = sum_.added_to->positions_.find(buffer.tensor);
  if (found == sum_.added_to->positions_.end() || level >= found->second.size()) return nullptr;
  const LevelPosition& position = found->second[level];
  if (position.ready_depth < sum_.shared_loops) return &position;
  // Below the shared loops, an output level located from its coordinate (dense, ragged) is
  // located again by this nest's own loops; the others are written through the same cursors.
  const sparse::AxisKind kind = program_.axes[buffer.axes[level]].kind;
  const bool located = kind == sparse::AxisKind::DenseFixed || kind == sparse::AxisKind::DenseVariable;
  return buffer.is_output && !located ? &position : nullptr;
}

// "A(i,k) * B(k,j) (summed over k)"
std::string Lowering::describe_terms(const ast::Expr& terms, const std::vector<std::string>& summed) {
  std::string text = ast::to_string(terms) + " (";
  if (summed.empty()) return text + "no summed index)";
  text += "summed over ";
  for (size_t k = 0; k < summed.size(); ++k) text += (k ? ", " : "") + summed[k];
  return text + ")";
}

// The added parts join the body's nest where the shared loops end: in a row workspace that
// gathers the output's last level (SpGEMM), or in the scalar sum of one output entry.
std::string Lowering::summed_outside_added_parts() const {
  if (parts_in_block_rows(*sum_.whole))  // (the whole's loops are not the body's: block_row_part_program)
    for (const sparse::Iterator& it : program_.iteration.iterators)
      if (it.is_reduction) return it.var;
  return sum_.whole->iteration.iterators[static_cast<size_t>(sum_.shared_loops)].var;
}

// Why the added parts need a place in the body's nest (the start of each refusal below).
std::string Lowering::why_added_parts_join() const {
  const sparse::SparseBuffer& output = program_.output();
  const std::string summed = summed_outside_added_parts();
  std::vector<std::string> body_summed;
  for (const sparse::Iterator& it : program_.iteration.iterators)
    if (it.is_reduction) body_summed.push_back(it.var);
  std::string terms = describe_terms(*program_.iteration.body, body_summed);
  for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts) terms += "; " + describe_terms(*part.body, part.summed);
  return "the right-hand side sums its terms over different indices (" + terms + "), and " + output.tensor + " (" +
         output.format.name + ") is a sparse output the kernel assembles, so they share one loop nest: the terms without " +
         summed + " are added where the loops outside " + summed + " end";
}

// The operands blocked otherwise than the output (C_prev of `+=` is blocked as the output is).
std::vector<std::string> Lowering::blocked_operands() const {
  std::vector<std::string> tensors;
  for (const sparse::BlockedVar& b : program_.blocked_vars)
    if (b.tensor != program_.output().tensor && std::find(tensors.begin(), tensors.end(), b.tensor) == tensors.end())
      tensors.push_back(b.tensor);
  return tensors;
}

// Into a blocked output, the parts share the loops of the body's blocks (its block rows): an
// operand of another part that blocks an index (D bsr in `A B + D`, C_prev of `C += A B`, C
// bsr) would split the body's loops into blocks that the body does not read.
void Lowering::check_body_blocked_by_its_own() {
  if (parts_listed_beside_blocks(*sum_.whole)) return;
  if (parts_in_block_rows(*sum_.whole) && parts_share_block_rows()) return;
  std::set<std::string> read;
  for (const ast::Access* access : ast::collect_accesses(*program_.iteration.body)) read.insert(access->tensor);
  const sparse::SparseBuffer& output = program_.output();
  for (const sparse::BlockedVar& b : program_.blocked_vars) {
    if (b.tensor == output.tensor || read.count(b.tensor)) continue;
    const bool previous = program_.buffer(b.tensor).previous_output;
    return refuse(NestRefusal::Kind::SharedBlocks, format_config_error(
        config_.file, "/tensors/" + (previous ? output.tensor : b.tensor) + "/format",
        why_added_parts_join() + "; " +
            (previous ? b.tensor + ", the value of " + output.tensor + " before `+=`, stored as " + output.tensor + " is,"
                      : b.tensor + " (" + program_.buffer(b.tensor).format.name + ")") +
            " splits index " + b.var + " into blocks, which the shared loops would follow, but the terms " +
            ast::to_string(*program_.iteration.body) + " do not read " + b.tensor +
            ", which is not supported; " +
            (previous ? "store " + output.tensor + " unblocked (its entries are then listed), or make it dense"
                      : "store " + b.tensor + " unblocked, or " + output.tensor + " unblocked (its entries are then listed)")));
  }
}

// Every part's program begins with the block-row loops, spatial and dense in the output (its
// block rows visited whole), in the same order: the body's nest can hold the parts'.
bool Lowering::parts_share_block_rows() const {
  const sparse::SparseBuffer& output = program_.output();
  if (sum_.shared_loops < 1) return false;
  for (int level = 0; level < output.gathered_level; ++level)
    if (program_.axes[output.axes[level]].kind != sparse::AxisKind::DenseFixed) return false;
  auto begins_alike = [&](const sparse::Program& part) {
    if (static_cast<int>(part.iteration.iterators.size()) <= sum_.shared_loops) return false;
    for (int d = 0; d < sum_.shared_loops; ++d) {
      const sparse::Iterator& it = part.iteration.iterators[d];
      if (it.var != program_.iteration.iterators[d].var || it.is_reduction) return false;
    }
    return true;
  };
  if (!begins_alike(program_)) return false;
  for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts)
    if (!begins_alike(block_row_part_program(*sum_.whole, part.body))) return false;
  return true;
}

// Beside a blocked operand each part's nest goes over that operand's blocks where it reads it,
// and over its own operands' entries elsewhere. A listed output takes both in any order
// (listed_parts_nests: a nest per part); a row or block-row workspace takes both where the
// shared loops visit every coordinate (a dense block-row level), as the parts' coordinates
// need not lie in the blocked operand's block rows. A part whose own terms hold a term
// without the blocked operand (its entries outside the blocks: lower_outside_blocks) has no
// place in either (check_part_without_rest).
void Lowering::check_added_parts_beside_blocks() {
  const std::vector<std::string> blocked = blocked_operands();
  if (blocked.empty()) return;
  // The body's own term without its blocked operand (A B + E B + D, A bsr) follows the blocks:
  // into the list (listed_parts_nests), or in each block row (rest_in_block_row).
  if (!listed_ && !rest_.in_rows) check_part_without_rest();
  if (listed_ || refused()) return;
  const sparse::SparseBuffer& output = program_.output();
  const bool previous = program_.buffer(blocked.front()).previous_output;
  for (int d = 0; d < sum_.shared_loops; ++d)
    if (!visits_every_coordinate(d))
      return refuse(NestRefusal::Kind::SharedBlocks, format_config_error(
          config_.file, "/tensors/" + (previous ? output.tensor : blocked.front()) + "/format",
          why_added_parts_join() + ", which beside a blocked operand (" + names(blocked) +
              (previous ? ", the value of " + output.tensor + " before `+=`, stored as " + output.tensor + " is" : "") +
              ") needs the shared loops to visit every coordinate, but the loop " + program_.iteration.iterators[d].var +
              " visits only the stored ones, and the other parts' entries may lie elsewhere; store " +
              (previous ? output.tensor : blocked.front()) + "'s levels above " + program_.iteration.iterators[d].var +
              " dense (bsr), or make " + output.tensor + " dense"));
}

// A part of a scoped sum (the body, an added or a listed part) beside a blocked operand: its
// own terms must all hold the blocked operand, or none of them its index's blocks.
void Lowering::check_part_without_rest() {
  if (rest_.blockers.empty()) return;
  const sparse::SparseBuffer& output = program_.output();
  // (lower.cpp then gives each term a part of its own, where that helps: NestRefusal::UnionNest.)
  refuse(NestRefusal::Kind::UnionNest, format_config_error(
      config_.file, "/tensors/" + rest_.blockers.front() + "/format",
      "the right-hand side sums its terms over different indices, and " + output.tensor + " (" + output.format.name +
          ") is a sparse output the kernel assembles; the part " + ast::to_string(*program_.iteration.body) +
          " holds a term without " + names(rest_.blockers) +
          ", whose entries outside its blocks would be a second nest of that part, which is not supported; "
          "store " + rest_.blockers.front() + " unblocked, or make " + output.tensor + " dense"));
}

void Lowering::check_added_parts() const {
  const sparse::SparseBuffer& output = program_.output();
  const std::string summed = summed_outside_added_parts();
  const std::string why = why_added_parts_join();
  for (const sparse::Fusion& f : program_.iteration.fusions)
    throw CompileError(format_config_error(config_.file, f.op_path,
                                           "fuse: " + why + ", which a fused loop over " + f.outer + " and " + f.inner +
                                               " does not have; leave out the fuse, or make " + output.tensor + " dense"));
  if (listed_) return;  // each part lists its entries in a nest of its own (listed_parts_nests)
  const std::string where = "/tensors/" + output.tensor + "/format";
  bool into_rows = scattered() && !block_rows() && rows_.row_depth + 1 == sum_.shared_loops;
  // A blocked output's block row (its loops outside the summed one: plan_block_workspace)
  // gathers every entry under it, the parts' too.
  bool into_blocks = block_rows() && rows_.row_depth < sum_.shared_loops;
  // A dense or ragged last level below the summed loop: its entries are located, not appended,
  // so each part adds into them where its own loops find them (the levels above are bound by
  // the shared loops, else the entries would be listed).
  const LevelKind last = output.format.levels.back();
  bool into_entries = !scattered() && !block_rows() && write_.depth >= sum_.shared_loops &&
                      (last == LevelKind::Dense || last == LevelKind::DenseVariable);
  if (!into_rows && !into_blocks && !parts_add_into_sum() && !into_entries)
    throw CompileError(format_config_error(
        config_.file, where,
        why + ", into a row workspace (a summed loop just outside the output's last level, compressed), a scalar "
              "sum (summed loops inside all of the output's) or the located entries of a dense or ragged last level, but " +
            summed + " lies outside the output's last level, " + level_kind_name(output.format.levels.back()) +
            ", where none of these gathers them; store " + output.tensor + "'s last level compressed, or make " +
            output.tensor + " dense"));
}

// The added parts add into the scalar sum of one output entry: the shared loops bind the
// output's, and the body's summed loops inside them sum into it.
bool Lowering::parts_add_into_sum() const { return write_.scalar_accumulator && write_.depth + 1 == sum_.shared_loops; }

// Where the shared loops visit a coordinate that only other parts store (a union), each term
// of this nest's body lacks a stored operand, so the body adds zeros: its loops are skipped.
// Null where some term is stored wherever the shared loops go.
Stmt Lowering::where_body_present(Stmt nest) const {
  return only_where(some_term_present(tensor_terms(*program_.iteration.body),
                                      [&](const std::string& tensor) { return presence_in_shared_loops(tensor); }),
                    std::move(nest));
}

// presence(tensor) as the shared loops know it: a level located inside the blocks below them
// (a binary search per coordinate) is searched by the nest itself.
Expr Lowering::presence_in_shared_loops(const std::string& tensor) const {
  return presence_with_searched(tensor, [&](const std::string& structure, int level) {
    return positions_.at(structure)[static_cast<size_t>(level)].ready_depth < sum_.shared_loops;
  });
}

Stmt Lowering::only_where(Expr condition, Stmt stmt) {
  return condition ? std::make_shared<If>(std::move(condition), std::move(stmt), nullptr) : stmt;
}

// The loop at `depth` and, where the shared loops end, the added parts' nests after it.
Stmt Lowering::loop_and_added_parts(int depth) {
  if (!sum_.whole || depth != sum_.shared_loops) return loop(depth);
  std::vector<Stmt> stmts = {where_body_present(loop(depth))};
  for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts) {
    // (Parts gathered in the output's block rows are each blocked by their own operands.)
    sparse::Program added = parts_in_block_rows(*sum_.whole) ? block_row_part_program(*sum_.whole, part.body) : *sum_.whole;
    if (!parts_in_block_rows(*sum_.whole)) {
      added.iteration.body = part.body;
      added.iteration.added_parts.clear();
      added.iteration.iterators = sum_.whole->iteration.loops_of(*part.body, sum_.whole->blocked_vars);
    }
    Lowering lowering(added, config_, counting_ ? LoweringPhase::Assemble : LoweringPhase::Compute, counted_level_);
    Stmt added_nest = lowering.lower_added_part(*this);
    if (refused_by(lowering)) return block({});
    used_names_ = lowering.used_names_;
    std::string into = parts_add_into_sum() ? "the sum " + write_.accumulator
                       : block_rows()      ? "the block row workspace of " + program_.output().tensor
                       : scattered()       ? "the row workspace of " + program_.output().tensor
                                          : "the entries of " + program_.output().tensor;
    const bool negated = part.body->kind == ast::ExprKind::Neg;  // "- b(i)" rather than "+ -b(i)"
    stmts.push_back(std::make_shared<Comment>((negated ? "- " : "+ ") + describe_terms(negated ? *part.body->lhs : *part.body, part.summed) +
                                              ", into " + into));
    stmts.push_back(added_nest);
  }
  return block(std::move(stmts));
}

// An output whose entries are listed (plan_listed) needs no shared loops: the body and each
// added part list their entries in a nest of their own, one after the other, and the one list
// is sorted and packed after them all.
Stmt Lowering::listed_parts_nests() {
  std::vector<Stmt> nests;
  std::set<std::string> names = names_before_positions_;  // (this Lowering's own nest is not built)
  auto list_part = [&](const ast::ExprPtr& terms, const std::vector<std::string>& summed, bool first) {
    std::optional<LoopOrderConflict> conflict;
    sparse::Program part = listed_part_program(*sum_.whole, terms, config_, &conflict);
    if (conflict) return refuse(NestRefusal::Kind::LoopOrder, conflict->what());
    Lowering lowering(part, config_, counting_ ? LoweringPhase::Assemble : LoweringPhase::Compute, counted_level_);
    // (The body's own rest lists after every part's nest: run's with_listed_rest.)
    Stmt nest = lowering.lower_listed_part(*this, names, true, !first);
    if (refused_by(lowering)) return;
    names = lowering.used_names_;
    const bool negated = !first && terms->kind == ast::ExprKind::Neg;  // "- b(i)" rather than "+ -b(i)"
    nests.push_back(std::make_shared<Comment>((first ? "" : negated ? "- " : "+ ") +
                                              describe_terms(negated ? *terms->lhs : *terms, summed) + ", into the list of " +
                                              program_.output().tensor + "'s entries"));
    nests.push_back(nest);
    // An added part with a term without its blocked operand (D + E, D bsr, E csr): E's entries
    // outside D's blocks list after the part's nest (each rest a comment and a nest).
    for (const Stmt& rest : lowering.sum_.listed_rests) nests.push_back(rest);
  };
  std::vector<std::string> body_summed;
  for (const sparse::Iterator& it : program_.iteration.iterators)
    if (it.is_reduction) body_summed.push_back(it.var);
  list_part(program_.iteration.body, body_summed, true);
  for (const sparse::AddedPart& part : sum_.whole->iteration.added_parts)
    if (!refused()) list_part(part.body, part.summed, false);
  if (refused()) return block({});
  if (config_.target == Target::Cuda) {
    // nests: a comment and a nest per part. The first term's nest is scheduled as one (its
    // ops name its loops), unless an added part's nest has a loop of its outer loop's label,
    // which no op could tell apart: then it too lists in kernels of its own.
    const For* first_outer = statements_of(nests[1]).size() == 1 ? as_for(statements_of(nests[1]).front()) : nullptr;
    bool shared_label = false;
    for (size_t k = 3; k < nests.size() && first_outer; k += 2) shared_label |= has_loop_labelled(nests[k], first_outer->label);
    // (So too where no op can name its outer loop, no loop of the whole sum: A B over i, k, j
    // unsplit by D's blocks, listed into C's.)
    const bool unscheduled = first_outer && !whole_loop(first_outer->label);
    for (size_t k = shared_label || unscheduled ? 1 : 3; k < nests.size(); k += 2) nests[k] = own_listing_kernel(nests[k], names);
  }
  used_names_.insert(names.begin(), names.end());
  return block(std::move(nests));
}

// A loop of the whole sum's iteration (or a fused one), which schedule ops may name.
bool Lowering::whole_loop(const std::string& label) const {
  for (const sparse::Iterator& it : sum_.whole->iteration.iterators)
    if (it.var == label) return true;
  for (const sparse::Fusion& f : sum_.whole->iteration.fusions)
    if (f.into == label) return true;
  return false;
}

bool Lowering::has_loop_labelled(const Stmt& stmt, const std::string& label) {
  struct Find : IRVisitor {
    const std::string& label;
    bool found = false;
    explicit Find(const std::string& l) : label(l) {}
    void visit_for(const For& node) override {
      found |= node.label == label;
      IRVisitor::visit_for(node);
    }
  } find(label);
  find.visit(stmt);
  return find.found;
}

// On cuda an added part's nest lists its entries in kernels of its own (cuda_backend.cpp:
// listing_kernels), after the body's, its outer loop spread over the grid (gpu_bindings.cpp);
// each entry takes its slot atomically, so any iterations may run at once. A nest that is no
// such loop (a merge, or a loop that advances co-iteration cursors) runs in one thread, inside
// a loop of one trip.
// A nest around heap workspaces (allocated once per kernel, for every thread) stays as it is:
// the first term's kernel runs it, or one of its own between nests that are.
Stmt Lowering::own_listing_kernel(const Stmt& nest, std::set<std::string>& names) {
  if (nest->kind == StmtKind::Allocate) {
    const auto& buffers = static_cast<const Allocate&>(*nest).buffers;
    if (std::any_of(buffers.begin(), buffers.end(), [](const Workspace& w) { return !w.local && !w.shared; })) return nest;
  }
  LoopAnnotations annotations;
  annotations.own_kernel = true;
  const std::vector<Stmt> stmts = statements_of(nest);
  const For* loop = stmts.size() == 1 ? as_for(stmts.front()) : nullptr;
  // (Iterations that meet on an entry of the output, COO rows that repeat, list it twice; the
  // sort sums them: that reason alone keeps no loop sequential here.)
  const std::string repeat_reason = "its coordinates repeat";
  if (loop && (loop->annotations.sequential_reason.empty() ||
               (loop->annotations.repeats_coordinates && loop->annotations.sequential_reason.rfind(repeat_reason, 0) == 0))) {
    LoopAnnotations own = loop->annotations;
    own.sequential_reason.clear();
    own.own_kernel = true;
    return std::make_shared<For>(loop->label, loop->var, loop->begin, loop->end, loop->body, own);
  }
  std::string once = "once";
  for (int suffix = 2; names.count(once); ++suffix) once = "once_" + std::to_string(suffix);
  names.insert(once);
  return std::make_shared<For>("one thread", once, int64(0), int64(1), nest, annotations);
}

// This Lowering's program is one part of a sum into `into`'s listed output: the whole nest of
// its terms, appending to `into`'s list.
// A part's own rest outside its blocked operand's blocks (`with_rest`) lists after it: built
// here into sum_.listed_rests where `list_rest`.
Stmt Lowering::lower_listed_part(const Lowering& into, const std::set<std::string>& names, bool with_rest,
                                 bool list_rest) {
  sum_.lists_into = &into;
  used_names_ = names;
  plan_loops();
  if (!sum_.listing_rest && !with_rest && !refused()) check_part_without_rest();  // (a rest lists its own rest: listed_rest)
  if (refused()) return block({});
  plan_listed();
  check_fusions();
  plan_positions();
  plan_output();
  if (refused()) return block({});
  Stmt nest = loop_nest(0);
  if (!workspaces_.empty()) nest = std::make_shared<Allocate>(workspaces_, nest);
  if (!rest_.blockers.empty() && list_rest) sum_.listed_rests = listed_rest(into);  // (the caller places them after the nest)
  return nest;
}

// Into a listed output (C csr = A bsr + B csr), the rest of the sum outside the blocked
// operand's blocks lists its entries into the same list, before the sort: loops of its own, as
// into a dense output (lower_outside_blocks), appending rather than adding. On cuda it lists in
// kernels of its own, after the block loops'.
Stmt Lowering::with_listed_rest(const Stmt& nest, const Lowering& into) {
  std::vector<Stmt> stmts = statements_of(nest);
  append(stmts, listed_rest(into));
  return block(std::move(stmts));
}

// The rest's comment and nest, then its own rest's (beside a second operand blocked otherwise),
// each a kernel of its own on cuda.
std::vector<Stmt> Lowering::listed_rest(const Lowering& into) {
  sparse::Program rest = rest_program();
  RestInputs inputs = rest_inputs();
  inputs.listing = true;
  Lowering lowering(rest, config_, counting_ ? LoweringPhase::Assemble : LoweringPhase::Compute, counted_level_, inputs);
  Stmt rest_nest = lowering.lower_listed_part(into, used_names_);
  if (refused_by(lowering)) return {};
  used_names_.insert(lowering.used_names_.begin(), lowering.used_names_.end());
  if (config_.target == Target::Cuda) rest_nest = own_listing_kernel(rest_nest, used_names_);
  std::vector<Stmt> stmts = {std::make_shared<Comment>("the other operands outside " + blocks_of() + ", where " + zero() +
                                                       ", into the list of " + program_.output().tensor + "'s entries: " +
                                                       ast::to_string(*rest.iteration.body)),
                             rest_nest};
  append(stmts, lowering.sum_.listed_rests);
  for (Stmt& stmt : stmts) stmt = relabel_shared_loops(stmt);
  return stmts;
}

// This Lowering's program is an added part's (its loops: the shared ones, then its own): its
// nest inside the shared loops of `body`'s Lowering, writing where that one writes.
Stmt Lowering::lower_added_part(const Lowering& body) {
  sum_.added_to = &body;
  sum_.shared_loops = body.sum_.shared_loops;
  used_names_ = body.used_names_;
  plan_loops();
  // Into a block-row workspace, a term of the part without its blocked operand (D + E, D bsr,
  // E csr: E's entries outside D's blocks) follows in the same block row (rest_in_block_row),
  // as beside the body's blocks; elsewhere it would be a second nest of the part.
  if (refused()) return block({});
  const bool rest_in_block_row = body.block_rows() && !rest_.blockers.empty();
  if (!rest_in_block_row) check_part_without_rest();
  if (refused()) return block({});
  plan_positions();
  output_strategy_ = body.output_strategy_;
  rest_.in_rows = body.rest_.in_rows;
  blocks_ = body.blocks_;
  coo_segment_ = body.coo_segment_;
  rows_ = body.rows_;
  open_levels_ = body.open_levels_;
  append_depth_ = body.append_depth_;
  write_.overwrites = false;
  presence_ = body.presence_;
  write_.depth = -1;
  for (const std::string& var : program_.output().indices) write_.depth = std::max(write_.depth, program_.depth_of(var));
  if (body.parts_add_into_sum()) {
    // Into the body's sum of the entry, before it is written.
    write_.scalar_accumulator = sum_.adds_to_parent_sum = true;
    write_.accumulator = body.write_.accumulator;
  } else {
    // Into the row workspace or the located entries; summed loops inside the output's have a
    // sum of their own.
    write_.scalar_accumulator = write_.depth < static_cast<int>(program_.iteration.iterators.size()) - 1;
    if (write_.scalar_accumulator) write_.accumulator = fresh_name("acc");
  }
  split_hoistable_factors();
  Stmt nest = loops_from(sum_.shared_loops);
  if (sum_.shared_loops < static_cast<int>(program_.iteration.iterators.size())) nest = where_body_present(nest);
  return rest_in_block_row ? block({nest, this->rest_in_block_row()}) : nest;
}

}  // namespace spgen::lowering
