#include "passes/lower/lowering.h"

namespace spgen::lowering {

// The loops at `depth` and below, with the flags of the output levels the enclosing loop binds.
Stmt Lowering::loop_nest(int depth) { return with_open_flags(depth - 1, loops_from(depth)); }

Stmt Lowering::loops_from(int depth) {
  const auto& iterators = program_.iteration.iterators;
  std::vector<Stmt> body;
  if (depth == 0) append(body, position_declares(-1));  // order-0 tensors, dense roots without loops
  if (depth == static_cast<int>(iterators.size())) {
    body.push_back(innermost_statement());
    return block(std::move(body));
  }
  if (rest_.in_rows && !block_rows() && !rest_.blockers.empty() && depth - 1 == rows_.row_depth && !sum_.added_to &&
      !rest_.block_row_owner) {
    body.push_back(block({loop_and_added_parts(depth), rest_in_block_row()}));
    return block(std::move(body));
  }
  if (scattered() && depth - 1 == rows_.row_depth && !sum_.added_to && !rest_.block_row_owner) {
    if (block_rows() && !rest_.blockers.empty())
      body.push_back(around_block_row(block({loop_and_added_parts(depth), rest_in_block_row()})));
    else body.push_back(block_rows() ? around_block_row(loop_and_added_parts(depth)) : around_row(loop_and_added_parts(depth)));
    return block(std::move(body));
  }
  if (depth - 1 == write_.depth && write_.scalar_accumulator && counting_) {
    body.push_back(write_output(nullptr, depth));  // the summed loops do not change which entries exist
    return block(std::move(body));
  }
  if (depth - 1 == write_.depth && write_.scalar_accumulator && !sum_.adds_to_parent_sum) {
    // Just inside the output's last loop: sum the remaining loops into a scalar.
    body.push_back(std::make_shared<Declare>(write_.accumulator, value_type_, reduction_identity(), true));
    body.push_back(loop_and_added_parts(depth));
    Expr total = var(write_.accumulator, value_type_);
    if (!write_.outer_factors.empty()) total = binary(BinOp::Mul, product(write_.outer_factors), total);
    body.push_back(write_output(total, depth));
    return block(std::move(body));
  }
  body.push_back(loop_and_added_parts(depth));
  return block(std::move(body));
}

void Lowering::append(std::vector<Stmt>& to, std::vector<Stmt> more) {
  for (Stmt& s : more) to.push_back(std::move(s));
}

Stmt Lowering::loop(int depth) {
  if (const sparse::Fusion* f = fusion_at(depth); f && fuses_rows(*f)) return fused_rows_loop(depth, *f);
  switch (plans_[depth].kind) {
    case LoopKind::Dense: return dense_loop(depth);
    case LoopKind::Driven: return driven_loop(depth);
    case LoopKind::Merge: return merge_loop(depth);
  }
  return nullptr;
}

// How many coordinates a loop over every coordinate visits: the dimension, or the blocks of a
// blocked index (the in-block loop's extent depends on its block: see dense_loop).
Expr Lowering::coordinate_count(const std::string& index_var) const {
  const sparse::BlockedVar* blocked = program_.blocked_loop(index_var);
  if (blocked && index_var == blocked->outer) return block_count(dim_name(blocked->var), blocked->size);
  return var(dim_name(index_var));
}

Stmt Lowering::dense_loop(int depth) {
  const std::string& index_var = program_.iteration.iterators[depth].var;
  std::vector<Stmt> body;
  Expr end = coordinate_count(index_var);
  if (const sparse::BlockedVar* blocked = program_.blocked_loop(index_var)) {
    if (index_var != blocked->outer) {
      // The last block may stick out of the dimension: its padding is never visited.
      Expr start = mul(var(blocked->outer), int64(blocked->size));
      end = min(int64(blocked->size), sub(var(dim_name(blocked->var)), start));
      body.push_back(std::make_shared<Declare>(blocked->var, ScalarType::Int64, add(start, var(index_var)), false));
    }
  }
  append(body, position_declares(depth));
  body.push_back(loop_nest(depth + 1));
  return std::make_shared<For>(index_var, index_var, int64(0), end, block(std::move(body)), loop_annotations(depth));
}

// The range of a stored level's positions under its parent: pos[p] .. pos[p+1], an ELL row's
// slots, or (a singleton below a run-wise COO level) the parent's run. Empty where the parent
// is absent in an enclosing merge.
std::pair<Expr, Expr> Lowering::level_range(const sparse::Axis& axis) const {
  const std::vector<LevelPosition>& levels = positions_.at(axis.tensor);
  Expr parent = axis.level == 0 ? int64(0) : var(levels[axis.level - 1].name);
  const std::string parent_run_end = axis.level == 0 ? "" : levels[axis.level - 1].run_end;
  auto [begin, end] = level_access(axis)->positions_under(parent, parent_run_end, index_type_);
  if (Expr present = presence(axis.tensor, axis.level)) {
    begin = select(present, begin, int64(0));
    end = select(present, end, int64(0));
  }
  return {begin, end};
}

Expr Lowering::coordinate_at(const Operand& o) const {
  return level_access(*o.axis)->coordinate_at(o.position, o.begin.empty() ? nullptr : var(o.begin), index_type_);
}

// The cursor has coordinates left: before the end, and (ELL) before the padding.
Expr Lowering::not_done(const Operand& o) const { return level_access(*o.axis)->not_done(o.position, o.end, coordinate_at(o)); }

// For the stage II comment: the operand, and what its cursor visits where that is not plain.
std::string Lowering::describe(const Operand& o) const {
  const sparse::Axis& axis = *o.axis;
  if (o.located) return axis.tensor + " (ragged: position " + axis.pos + "[parent] + coordinate)";
  return level_access(axis)->describe(by_runs_.count(axis_id(axis)) > 0, iterates_run(axis));
}

std::string Lowering::describe_all(const std::vector<Operand>& operands) const {
  std::string names;
  for (const Operand& o : operands) names += (names.empty() ? "" : ", ") + describe(o);
  return names;
}

// The located levels of the loop at `depth`: their ranges, declared before the loop.
std::vector<Lowering::Operand> Lowering::locate_setup(int depth, std::vector<Stmt>& setup) {
  std::vector<Operand> lookups;
  for (int id : plans_[depth].located) {
    Operand o;
    o.axis = &program_.axes[id];
    o.located = true;
    o.position = positions_.at(o.axis->tensor)[o.axis->level].name;
    o.begin = fresh_name(o.position + "_begin");
    o.end = fresh_name(o.position + "_end");
    o.present = fresh_name("in" + o.axis->tensor);
    auto [begin, end] = level_range(*o.axis);
    setup.push_back(std::make_shared<Declare>(o.begin, ScalarType::Int64, begin, false));
    setup.push_back(std::make_shared<Declare>(o.end, ScalarType::Int64, end, false));
    lookups.push_back(o);
  }
  return lookups;
}

// Once the loop's coordinate is known: each located level's position, and whether it is stored.
void Lowering::locate(const std::vector<Operand>& lookups, const std::string& index_var, std::vector<Stmt>& body) {
  for (const Operand& o : lookups) {
    body.push_back(std::make_shared<Declare>(o.position, ScalarType::Int64, add(var(o.begin), var(index_var)), false));
    body.push_back(std::make_shared<Declare>(o.present, ScalarType::Bool, binary(BinOp::Lt, var(o.position), var(o.end)), false));
  }
}

// The loops below, run where the iteration space holds. Inside, an operand that some
// conjunction can do without reads through its presence flag (absent: zero, no children).
Stmt Lowering::guarded_nest(int depth, const std::vector<Operand>& operands) {
  const LoopPlan& plan = plans_[depth];
  std::vector<const Operand*> maybe_absent;
  for (const Operand& o : operands)
    if (!o.present.empty() && (plan.dense_universe || !in_every_conjunction(plan.space, o.axis->tensor)))
      maybe_absent.push_back(&o);
  for (const Operand* o : maybe_absent) presence_[o->axis->tensor].push_back(o->present);
  Stmt inner = loop_nest(depth + 1);
  for (const Operand* o : maybe_absent) presence_[o->axis->tensor].pop_back();
  return guarded(plan, operands, inner);
}

Stmt Lowering::driven_loop(int depth) {
  const LoopPlan& plan = plans_[depth];
  const std::string& index_var = program_.iteration.iterators[depth].var;
  const sparse::Axis& axis = program_.axes[plan.stream()];
  const std::vector<LevelPosition>& levels = positions_.at(axis.tensor);
  const std::string& position = levels[axis.level].name;
  Expr parent = axis.level == 0 ? int64(0) : var(levels[axis.level - 1].name);
  auto coordinate = [&](Expr at) { return cast(ScalarType::Int64, load(axis.crd, std::move(at), index_type_)); };
  std::vector<Stmt> setup;
  std::vector<Operand> operands = locate_setup(depth, setup);
  Operand driver;
  driver.axis = &axis;
  operands.insert(operands.begin(), driver);
  if (!plan.located.empty())
    setup.insert(setup.begin(), std::make_shared<Comment>("co-iterate " + index_var + ": the entries of " + describe(driver) +
                                                          ", with direct lookup into " +
                                                          describe_all({operands.begin() + 1, operands.end()})));
  std::vector<Stmt> body;
  const std::unique_ptr<LevelAccess> level = level_access(axis);
  if (level->one_per_parent() && !iterates_run(axis)) {
    // No loop: the parent's entry has exactly one coordinate here.
    body.push_back(std::make_shared<Declare>(index_var, ScalarType::Int64, coordinate(parent), false));
    locate({operands.begin() + 1, operands.end()}, index_var, body);
    append(body, position_declares(depth));
    body.push_back(guarded_nest(depth, operands));
    append(setup, std::move(body));
    return block(std::move(setup));
  }
  if (level->walks_slots()) return slot_walk(depth, *level, std::move(setup), std::move(operands));
  auto [begin, end] = level_range(axis);
  Expr value = level->coordinate_at(position, begin, index_type_);
  body.push_back(std::make_shared<Declare>(index_var, ScalarType::Int64, value, false));
  locate({operands.begin() + 1, operands.end()}, index_var, body);
  append(body, position_declares(depth));
  body.push_back(level->only_stored(index_var, guarded_nest(depth, operands)));
  LoopAnnotations annotations = loop_annotations(depth);
  annotations.walks = axis.tensor;
  // COO's top level fused with the singleton below: already one loop over the entries, now
  // named by the fuse; its iterations are distinct entries (parallel asks for a reduction
  // where several entries meet in one output entry).
  const sparse::Fusion* fused = fusion_at(depth);
  if (fused) {
    body.insert(body.begin(), std::make_shared<Comment>("fuse " + fused->outer + ", " + fused->inner +
                                                        ": one loop over the entries of " + fused->tensor));
  } else if (repeats(axis) && !program_.iteration.iterators[depth].is_reduction && annotations.listed.keys.empty()) {
    annotations.sequential_reason = "its coordinates repeat (a non-unique level of " + axis.tensor +
                                    "), so iterations may write the same entry of " + program_.output().tensor;
    annotations.repeats_coordinates = true;
  }
  setup.push_back(std::make_shared<For>(fused ? fused->into : index_var, position, begin, end, block(std::move(body)), annotations));
  return setup.size() == 1 ? setup.front() : block(std::move(setup));
}

// An interleaved ELL level (SELL-C), streamed alone: a loop over the parent's slots, each
// slot's position computed from the parent's group and lane (level_access.h).
Stmt Lowering::slot_walk(int depth, const LevelAccess& level, std::vector<Stmt> setup, std::vector<Operand> operands) {
  const std::string& index_var = program_.iteration.iterators[depth].var;
  const sparse::Axis& axis = *operands.front().axis;
  const std::vector<LevelPosition>& levels = positions_.at(axis.tensor);
  const std::string& position = levels[axis.level].name;
  if (axis.level != 1 || presence(axis.tensor, axis.level))
    throw_unsupported("the interleaved ELL slots of " + axis.tensor + " must lie under its top level, which no merge may skip");
  const sparse::Axis& top = program_.axes[program_.buffer(axis.tensor).axes[0]];
  Expr first = top.kind == sparse::AxisKind::DenseFixed ? int64(0) : level_access(top)->positions_under(int64(0), "", index_type_).first;
  const std::string slot = fresh_name(position + "_slot");
  std::vector<Stmt> body;
  body.push_back(std::make_shared<Declare>(position, ScalarType::Int64,
                                           level.slot_position(var(levels[0].name), first, var(slot), index_type_), false));
  body.push_back(std::make_shared<Declare>(index_var, ScalarType::Int64, level.coordinate_at(position, nullptr, index_type_), false));
  locate({operands.begin() + 1, operands.end()}, index_var, body);
  append(body, position_declares(depth));
  body.push_back(level.only_stored(index_var, guarded_nest(depth, operands)));
  LoopAnnotations annotations = loop_annotations(depth);
  annotations.walks = axis.tensor;
  Expr slots = level.slot_count(var(levels[0].name), first, index_type_);
  setup.push_back(std::make_shared<For>(index_var, slot, int64(0), slots, block(std::move(body)), annotations));
  return setup.size() == 1 ? setup.front() : block(std::move(setup));
}

// Co-iteration. With a dense term, a dense loop visits every coordinate and each streamed
// level keeps a cursor that advances when its coordinate comes up. Otherwise a two-finger
// merge visits the coordinates of the streamed levels in increasing order, runs the body
// where the iteration space holds (A and B for a product, A or B for a sum), and advances
// every cursor that sat on the coordinate (a run-wise COO level past the whole run). Located
// levels are looked up at each coordinate.
Stmt Lowering::merge_loop(int depth) {
  const LoopPlan& plan = plans_[depth];
  const std::string& index_var = program_.iteration.iterators[depth].var;
  std::vector<Operand> cursors;
  std::vector<Stmt> setup;
  for (int id : plan.axes) {
    if (plan.locates(id)) continue;
    Operand c;
    c.axis = &program_.axes[id];
    const LevelPosition& level = positions_.at(c.axis->tensor)[c.axis->level];
    c.position = level.name;
    c.run_end = level.run_end;
    c.end = fresh_name(c.position + "_end");
    c.coordinate = fresh_name(index_var + c.axis->tensor);
    c.present = fresh_name("in" + c.axis->tensor);
    auto [begin, end] = level_range(*c.axis);
    if (level_access(*c.axis)->coordinate_is_offset()) {
      c.begin = fresh_name(c.position + "_begin");
      setup.push_back(std::make_shared<Declare>(c.begin, ScalarType::Int64, begin, false));
      begin = var(c.begin);
    }
    setup.push_back(std::make_shared<Declare>(c.position, ScalarType::Int64, begin, true));
    setup.push_back(std::make_shared<Declare>(c.end, ScalarType::Int64, end, false));
    cursors.push_back(c);
  }
  std::vector<Operand> lookups = locate_setup(depth, setup);

  std::vector<Stmt> body;
  if (!plan.dense_universe && cursors.size() == 1) {
    // One cursor (a run-wise COO level): its coordinate is the loop's, and always present.
    cursors.front().present.clear();
    body.push_back(std::make_shared<Declare>(index_var, ScalarType::Int64, coordinate_at(cursors.front()), false));
  } else if (!plan.dense_universe) {
    // The next coordinate: the least one under any cursor (exhausted cursors never win).
    Expr least;
    for (const Operand& c : cursors) {
      body.push_back(std::make_shared<Declare>(
          c.coordinate, ScalarType::Int64,
          select(not_done(c), coordinate_at(c), int64(std::numeric_limits<int64_t>::max())), false));
      least = least ? min(least, var(c.coordinate)) : var(c.coordinate);
    }
    body.push_back(std::make_shared<Declare>(index_var, ScalarType::Int64, least, false));
    for (const Operand& c : cursors)
      body.push_back(std::make_shared<Declare>(c.present, ScalarType::Bool,
                                               binary(BinOp::Eq, var(c.coordinate), var(index_var)), false));
  } else {
    for (const Operand& c : cursors)
      body.push_back(std::make_shared<Declare>(
          c.present, ScalarType::Bool,
          logical_and(not_done(c), binary(BinOp::Eq, coordinate_at(c), var(index_var))), false));
  }
  // A run-wise COO level on the coordinate: its run is every position that repeats it.
  for (const Operand& c : cursors) {
    if (c.run_end.empty()) continue;
    Operand next = c;
    next.position = c.run_end;
    Expr present = c.present.empty() ? nullptr : var(c.present, ScalarType::Bool);
    Expr repeats = logical_and(logical_and(present, not_done(next)), binary(BinOp::Eq, coordinate_at(next), var(index_var)));
    body.push_back(std::make_shared<Declare>(c.run_end, ScalarType::Int64, var(c.position), true));
    body.push_back(std::make_shared<While>("run of " + c.position, repeats, std::make_shared<Assign>(c.run_end, int64(1), true)));
  }
  locate(lookups, index_var, body);
  append(body, position_declares(depth));
  std::vector<Operand> operands = cursors;
  operands.insert(operands.end(), lookups.begin(), lookups.end());
  body.push_back(guarded_nest(depth, operands));
  for (const Operand& c : cursors)
    body.push_back(c.run_end.empty() && !c.present.empty()
                       ? std::make_shared<Assign>(c.position, cast(ScalarType::Int64, var(c.present, ScalarType::Bool)), true)
                       : std::make_shared<Assign>(c.position, var(c.run_end), false));

  std::string streamed = describe_all(cursors);
  std::string looked_up = lookups.empty() ? "" : "direct lookup into " + describe_all(lookups);
  Stmt loop;
  if (plan.dense_universe) {
    std::string how = cursors.empty() ? "with " + looked_up
                                      : "with cursors into " + streamed + (lookups.empty() ? "" : "; " + looked_up);
    setup.insert(setup.begin(), std::make_shared<Comment>("co-iterate " + index_var + ": every coordinate, " + how));
    // What keeps any loop at this depth sequential (an output appended to under one parent) ...
    LoopAnnotations annotations = loop_annotations(depth);
    if (!cursors.empty()) {  // ... and the cursors it advances

      std::string names;
      for (const Operand& c : cursors) names += (names.empty() ? "" : ", ") + c.axis->tensor;
      annotations.sequential_reason = "it advances co-iteration cursors into " + names;
    }
    loop = std::make_shared<For>(index_var, index_var, int64(0), coordinate_count(index_var), block(std::move(body)), annotations);
  } else {
    // Keep going while some conjunction of the iteration space can still hold: while all its
    // streamed operands have coordinates left.
    Expr more;
    for (const std::vector<const Operand*>& streams : minimal_conjunctions(plan, cursors, [](const Operand&) { return true; })) {
      Expr all;
      for (const Operand* c : streams) all = logical_and(all, not_done(*c));
      more = logical_or(more, all);
    }
    std::string how = cursors.size() == 1 ? "a cursor over " + streamed : "two-finger merge of " + streamed;
    setup.insert(setup.begin(), std::make_shared<Comment>("co-iterate " + index_var + ": " + how +
                                                          (lookups.empty() ? "" : "; " + looked_up)));
    loop = std::make_shared<While>(index_var, more, block(std::move(body)));
  }
  setup.push_back(loop);
  return block(std::move(setup));
}

// Runs `inner` only where the iteration space holds; a pure union needs no test (the least
// coordinate is present in some operand by construction), nor does a conjunction that holds
// wherever the loop goes (the driving level alone).
Stmt Lowering::guarded(const LoopPlan& plan, const std::vector<Operand>& operands, Stmt inner) const {
  if (plan.dense_universe) return where_some_term_present(plan, operands, std::move(inner));
  bool pure_union = std::all_of(plan.space.begin(), plan.space.end(), [](const Conjunction& c) { return c.size() == 1; });
  if (pure_union) return inner;
  Expr holds;
  for (const std::vector<const Operand*>& present : minimal_conjunctions(plan, operands, [](const Operand& o) { return !o.present.empty(); })) {
    if (present.empty()) return inner;
    Expr all;
    for (const Operand* o : present) all = logical_and(all, var(o->present, ScalarType::Bool));
    holds = logical_or(holds, all);
  }
  return std::make_shared<If>(holds, inner, nullptr);
}

// A loop that visits every coordinate for a term that is absent here (its dense level lies
// under a parent an enclosing merge may lack: E(i,j) with E's i compressed) would give an
// assembled output entries where no term is stored: those run only where some term is.
// Values there are zeros anyway, so a dense output (or one sharing a structure) needs no test.
Stmt Lowering::where_some_term_present(const LoopPlan& plan, const std::vector<Operand>& operands, Stmt inner) const {
  if (!assembled_) return inner;
  return only_where(some_term_present(plan.terms,
                                      [&](const std::string& tensor) {
                                        const std::string& structure = program_.structure_of(program_.buffer(tensor)).tensor;
                                        auto here = std::find_if(operands.begin(), operands.end(), [&](const Operand& o) {
                                          return o.axis->tensor == structure;
                                        });
                                        // An operand of this loop is absent where its parent is (its range is
                                        // empty there); else the enclosing merges' flags (a searched level's flag
                                        // is declared further in, out of scope here).
                                        return here != operands.end() && !here->present.empty()
                                                   ? var(here->present, ScalarType::Bool)
                                                   : presence(tensor, 0);
                                      }),
                    std::move(inner));
}

}  // namespace spgen::lowering
