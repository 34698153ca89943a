#include "passes/lower/lowering.h"

namespace spgen::lowering {

// ---- positions of each tensor's levels (passes/lower/level_position.h) ----
void Lowering::plan_positions() {
  for (const sparse::SparseBuffer& buffer : program_.buffers) {
    if (!buffer.shares_structure_with.empty()) continue;
    std::vector<LevelPosition>& levels = positions_[buffer.tensor];
    if (buffer.is_output && listed_) continue;  // its entries are listed, then packed (list_and_pack)
    Expr parent = int64(0);
    int parent_depth = -1;
    std::string found_above;  // the flag of the nearest level above located inside the blocks
    for (size_t level = 0; level < buffer.axes.size(); ++level) {
      // Levels below the one an assemble phase counts play no part in it.
      if (buffer.is_output && assembled_ && counting_ && static_cast<int>(level) > counted_level_) break;
      const sparse::Axis& axis = program_.axes[buffer.axes[level]];
      int depth = program_.depth_of(axis.index_var);
      if (const LevelPosition* outer = shared_position(buffer, level)) {
        // An added part's nest: the shared loops' positions and the output's, declared there.
        LevelPosition position = *outer;
        position.declare_depth = INT_MIN;
        // Visited by runs (its singleton child iterates the run) as the shared loop visits it.
        if (sum_.added_to->by_runs_.count(buffer.axes[level])) by_runs_.insert(buffer.axes[level]);
        else by_runs_.erase(buffer.axes[level]);
        // Located inside the blocks by the shared loops: this nest runs only where it was found.
        if (position.searched) searched_flags_[buffer.tensor].push_back({static_cast<int>(level), position.found});
        parent = var(position.name);
        parent_depth = position.ready_depth;
        levels.push_back(position);
        continue;
      }
      // Below the shared loops (anywhere, when listed), a nest of a sum's part has no positions
      // of a tensor only other parts read. (A rest listed beside a blocked operand still locates
      // the blocks it skips, below.)
      if (((sum_.lists_into && rest_.skip_blocks_of.empty()) || ((sum_.whole || sum_.added_to) && (depth < 0 || depth >= sum_.shared_loops))) && !buffer.is_output &&
          !reads(*program_.iteration.body, buffer.tensor))
        break;
      // Nor has a rest beside a blocked operand of a tensor it neither reads nor skips the blocks
      // of (B csr in A .* B + D, A bsr: B is zero outside A's blocks, so the rest is D alone).
      if (!rest_.skip_blocks_of.empty() && !buffer.is_output && !reads(buffer.tensor) && !skips_blocks_of(buffer.tensor)) break;
      // ... nor of the levels of one whose skip counts only those above them.
      if (auto above = rest_.skip_levels_above.find(buffer.tensor);
          above != rest_.skip_levels_above.end() && !reads(buffer.tensor) && static_cast<int>(level) >= above->second)
        break;
      LevelPosition position;
      position.name = fresh_name("p" + buffer.tensor + std::to_string(level));
      if (axis.kind == sparse::AxisKind::DenseFixed) {
        position.ready_depth = std::max(parent_depth, depth);
        position.value = add(mul(parent, axis_length(axis)), level_coordinate(axis));
      } else if (is_located_in_blocks(axis)) {
        position.searched = &axis;
        position.ready_depth = std::max(parent_depth, depth);
        position.value = parent;
        position.found = fresh_name(position.name + "_found");
        position.end = fresh_name(position.name + "_end");
        position.high = fresh_name(position.name + "_high");
        position.middle = fresh_name(position.name + "_mid");
        position.parent_found = found_above;
        if (level > 0) position.parent_run_end = levels.back().run_end;
        found_above = position.found;  // (false also when a level above is absent)
        searched_flags_[buffer.tensor].push_back({static_cast<int>(level), position.found});
      } else if (axis.kind == sparse::AxisKind::Singleton && !iterates_run(axis)) {
        position.ready_depth = depth;  // one entry per parent position: the same position
        position.value = parent;
      } else if (buffer.is_output && assembled_ && counting_ && static_cast<int>(level) == counted_level_) {
        // The counted level: its counts are indexed by the parent position.
        position.ready_depth = parent_depth;
        position.value = parent;
      } else if (buffer.is_output && assembled_ && axis.kind == sparse::AxisKind::DenseVariable) {
        // A ragged row holds 0 .. its largest coordinate: the entry is located, not appended.
        position.ready_depth = std::max(parent_depth, depth);
        position.value = add(cast(ScalarType::Int64, load(axis.pos, parent, index_type_)), var(axis.index_var));
      } else if (buffer.is_output && assembled_) {
        // A cursor, opened where the parent is known. The last level's is advanced by each
        // appended entry; a level above it is the next free position, and moves past the current
        // coordinate once that coordinate turns out to hold entries (see open_levels_).
        bool last = static_cast<int>(level) == entry_level(buffer.format) || static_cast<int>(level) == buffer.gathered_level;
        position.declare_depth = parent_depth;
        position.ready_depth = last ? parent_depth : depth;
        // An ELL row starts at its first slot; its positions only say how many it needs.
        position.value = axis.kind == sparse::AxisKind::SparseFixed ? mul(parent, int64(axis.width))
                                                                    : cast(ScalarType::Int64, load(axis.pos, parent, index_type_));
        // Under a ragged level, a coordinate past its row's largest one that holds entries has
        // no position there (nothing is written under it): its cursor must not read past the
        // pos array.
        bool under_ragged = false;
        for (size_t above = 0; above < level; ++above)
          under_ragged |= program_.axes[buffer.axes[above]].kind == sparse::AxisKind::DenseVariable;
        if (under_ragged && axis.kind != sparse::AxisKind::SparseFixed)
          position.value = select(binary(BinOp::Lt, parent, structure_size(buffer, level)), position.value, int64(0));
        position.is_cursor = true;
        // A fused loop appending in storage order: the last level's cursor runs through all
        // rows, declared before the loop (appends_rows_in_order).
        if (fused_rows_append_ && last && !counting_) {
          position.declare_depth = -1;
          position.value = cast(ScalarType::Int64, load(axis.pos, int64(0), index_type_));
          // In parallel, each entry's own position, declared by the fused loop (fused_rows_loop).
          if (fused_rows_parallel_) position.declare_depth = INT_MIN;
        }
      } else {
        if (!iterates_axis(depth, buffer.axes[level]))
          throw std::logic_error("compressed level " + axis.name + " is not iterated by its loop");
        position.ready_depth = depth;
      }
      if (!(buffer.is_output && assembled_ && position.is_cursor)) position.declare_depth = position.ready_depth;
      if (by_runs_.count(buffer.axes[level])) position.run_end = fresh_name(position.name + "_run_end");
      if (position.searched && !position.run_end.empty()) position.run_middle = fresh_name(position.name + "_run_mid");
      parent = var(position.name);
      parent_depth = position.ready_depth;
      levels.push_back(position);
      // The levels below a block-row workspace's are its blocks' values, written whole by the append.
      if (buffer.is_output && assembled_ && static_cast<int>(level) == buffer.gathered_level) break;
    }
  }
}

// The position of `tensor`'s last level (its value's index), and the depth where it is known.
Expr Lowering::value_position(const std::string& tensor) const {
  const sparse::SparseBuffer& structure = program_.structure_of(program_.buffer(tensor));
  const std::vector<LevelPosition>& levels = positions_.at(structure.tensor);
  return levels.empty() ? int64(0) : var(levels.back().name);
}

// ---- the output ----
// Its rows (or block rows) are gathered in a workspace, then appended.
bool Lowering::scattered() const {
  return output_strategy_ == OutputStrategy::RowWorkspace || output_strategy_ == OutputStrategy::BlockRowWorkspace;
}

bool Lowering::block_rows() const { return output_strategy_ == OutputStrategy::BlockRowWorkspace; }

void Lowering::plan_output() {
  const sparse::SparseBuffer& output = program_.output();
  int loops = static_cast<int>(program_.iteration.iterators.size());
  write_.depth = -1;
  for (const std::string& var : output.indices) write_.depth = std::max(write_.depth, program_.depth_of(var));
  bool reduction_outside = false;
  for (int d = 0; d < write_.depth; ++d) reduction_outside |= program_.iteration.iterators[d].is_reduction;
  // A fused row loop holds both variables: the output's entries are complete only after it.
  bool fused_output_index = false;
  for (const sparse::Fusion& f : program_.iteration.fusions) {
    int d = program_.depth_of(f.outer);
    if (!fuses_rows(f) || write_.depth < d) continue;
    if (write_.depth == d) write_.depth = d + 1;
    reduction_outside |= program_.iteration.iterators[d].is_reduction || program_.iteration.iterators[d + 1].is_reduction;
    for (const std::string& var : output.indices) fused_output_index |= var == f.outer || var == f.inner;
  }
  write_.scalar_accumulator = write_.depth < loops - 1;
  bool accumulate = program_.iteration.accumulate;
  // A non-unique level visits an output coordinate once per entry: those visits must add up.
  bool output_repeats = false;
  for (const std::string& var : output.indices) {
    const LoopPlan& plan = plans_[program_.depth_of(var)];
    for (int id : plan.axes) output_repeats |= repeats(program_.axes[id]);
  }
  reduction_outside |= output_repeats;
  // Reductions outside the last compressed level (or COO segment) scatter into a row workspace;
  // below a dense or ragged last level they just add into its entries. Counting a level above
  // the last needs no workspace: a row holds an entry as soon as anything is written under it.
  coo_segment_ = assembled_ && output.format.levels[entry_level(output.format)] == LevelKind::CompressedNonUnique;
  OutputFacts facts;
  facts.assembled = assembled_;
  facts.listed = listed_;
  if (assembled_) {  // (a dense output may have no levels: a scalar)
    facts.reduction_outside = reduction_outside;
    facts.last_level_gathers = output.format.levels.back() == LevelKind::Compressed ||
                               output.format.levels.back() == LevelKind::SparseFixed || coo_segment_;
    facts.entry_level = entry_level(output.format);
    facts.gathered_level = output.gathered_level;
    facts.counted_level = counting_ ? counted_level_ : -1;
  }
  output_strategy_ = choose_output_strategy(facts);
  rest_.in_rows = assembled_ && !listed_ && output.gathered_level >= 0 && (!counting_ || counted_level_ <= output.gathered_level);
  if (rest_.block_row_owner) share_owner_rows();
  if (assembled_ && !listed_) plan_open_levels(output);
  if (refused()) return;
  if (rest_.in_rows && !rest_.blockers.empty())  // (the rest raises the flags too)
    for (OpenLevel& open : open_levels_) open.every_iteration = false;
  if (rest_.block_row_owner) share_owner_flags();
  if (rest_.in_rows && !block_rows() && (!rest_.blockers.empty() || rest_.block_row_owner)) {
    // Counting a compressed level above the gathered one (block-DCSR's block rows): the rest
    // still runs inside each block row, raising the same flag.
    rows_.row_depth = gathered_row_depth();
  }
  if (block_rows()) plan_block_workspace();
  else if (scattered()) plan_workspace();
  if (refused()) return;
  write_.overwrites = !accumulate && !reduction_outside;
  bool some_entry_unvisited = false;
  if (output.shares_structure_with.empty())
    for (const std::string& var : output.indices) {
      some_entry_unvisited |= !visits_every_coordinate(program_.depth_of(var));
      if (const sparse::BlockedVar* blocked = program_.blocked(var))
        some_entry_unvisited |= !visits_every_coordinate(program_.depth_of(blocked->outer));
    }
  some_entry_unvisited |= fused_output_index && output.shares_structure_with.empty();  // rows without entries
  // An output in an input X's structure has a value at each of X's positions: where the loop
  // over one of X's stored levels visits only coordinates that other operands store too (X .* B,
  // or X's block levels merged with those of an operand blocked alike), X's other entries are
  // never visited and must hold zeros.
  if (!output.shares_structure_with.empty())
    for (int id : program_.structure_of(output).axes) {
      const sparse::Axis& axis = program_.axes[id];
      int depth = program_.depth_of(axis.index_var);
      if (depth < 0 || visits_every_coordinate(depth)) continue;
      if (axis.kind == sparse::AxisKind::DenseFixed) {  // (a loop that follows another operand's level)
        some_entry_unvisited = true;
        continue;
      }
      const IterationSpace& space = plans_[depth].space;
      some_entry_unvisited |= std::none_of(space.begin(), space.end(), [&](const Conjunction& c) {
        return c.size() == 1 && c.count(output.shares_structure_with) > 0;
      });
    }
  // ELL padding positions of a shared structure are never visited but must hold zeros.
  for (int id : program_.structure_of(output).axes) some_entry_unvisited |= program_.axes[id].kind == sparse::AxisKind::SparseFixed;
  some_entry_unvisited |= !rest_.blockers.empty();  // the rest adds into the output
  write_.needs_zero_fill = !assembled_ && !accumulate && (reduction_outside || some_entry_unvisited);
  // Dense levels below a compressed (or ragged, or ELL) one store every coordinate under an entry,
  // written or not. So do the gaps of a ragged row.
  // So do an ELL row's slots past its entries (padding).
  if (assembled_ && !counting_)
    write_.needs_zero_fill = dense_below_compressed_or_ragged(output.format) || output.format.levels.back() == LevelKind::DenseVariable ||
                       output.format.levels.back() == LevelKind::SparseFixed;
  if (block_rows()) write_.needs_zero_fill = false;  // each block is appended whole, its zeros included
  if (write_.scalar_accumulator) write_.accumulator = fresh_name("acc");
  if (program_.iteration.reduction != ast::Reduction::Sum) {
    // A max or min keeps its value in the scalar accumulator: nothing else writes it (for now).
    std::string why;
    if (assembled_) why = output.tensor + " is stored sparse";
    else if (reduction_outside) why = "a reduced loop is outside " + output.tensor + "'s, in this loop order (the operands' storage order)";
    else if (!program_.iteration.added_parts.empty() || !rest_.blockers.empty()) why = "this one needs nests of their own for its terms";
    else if (!write_.scalar_accumulator) why = "this one needs no reduced loop inside the output's";
    if (!why.empty())
      throw CompileError(format_config_error(config_.file, "/tensors/" + output.tensor,
                                             std::string("a ") + ast::reduction_name(program_.iteration.reduction) +
                                                 " reduction is supported into a dense output whose loops are all outside the reduced "
                                                 "ones, in one loop nest (for now): " + why + "; store " + output.tensor +
                                                 " dense and the operands in row-major order (csr)"));
  }
  split_hoistable_factors();
}

bool Lowering::dense_below_compressed_or_ragged(const Format& format) {
  auto first = std::find_if(format.levels.begin(), format.levels.end(), [](LevelKind k) {
    return k == LevelKind::Compressed || k == LevelKind::CompressedNonUnique || k == LevelKind::DenseVariable ||
           k == LevelKind::SparseFixed;
  });
  return std::find(first, format.levels.end(), LevelKind::Dense) != format.levels.end();
}

// An assembled output's compressed levels above its last one hold a coordinate only where the
// loops below it produce an entry (the iteration space, so a computed zero stays stored). Each
// such level gets a flag, declared in its coordinate's loop body and raised by every entry
// written below; after the body the flag advances the level's cursor (or, counting that level,
// its count).
void Lowering::plan_open_levels(const sparse::SparseBuffer& output) {
  const std::vector<LevelPosition>& levels = positions_.at(output.tensor);
  int last_open = output.gathered_level >= 0 ? output.gathered_level : entry_level(output.format);
  for (int level = 0; level < last_open; ++level) {
    const sparse::Axis& axis = program_.axes[output.axes[level]];
    if (counting_ && level > counted_level_) break;
    if (axis.kind == sparse::AxisKind::DenseVariable) {
      if (counting_ && level == counted_level_) open_ragged_level(output, level);
      continue;
    }
    if (axis.kind != sparse::AxisKind::SparseVariable) continue;
    // A COO segment above the last level holds a position per distinct coordinates of its
    // levels: it is open until the loop of the segment's innermost index.
    const int last_of_level = axis.unique ? level : segment_end(output.format, level);
    int depth = program_.depth_of(axis.index_var);
    for (int l = level; l <= last_of_level; ++l)
      depth = std::max(depth, program_.depth_of(program_.axes[output.axes[l]].index_var));
    for (int d = 0; d < depth; ++d)
      if (program_.iteration.iterators[d].is_reduction) {
        const std::string message = format_config_error(config_.file, "/tensors/" + output.tensor + "/format",
                                                        summed_outside_compressed_level(output, level, program_.iteration.iterators[d].var));
        // (A blocked output's entries can be listed into its blocks instead, as an unblocked
        // output's are listed where they arrive out of order: NestRefusal::SharedBlocks.)
        if (output.format.is_blocked() && !output.listed_blocks) return refuse(NestRefusal::Kind::SharedBlocks, message);
        throw CompileError(message);
      }
    for (int l = level; l <= last_of_level; ++l) {
      const std::string& var_l = program_.axes[output.axes[l]].index_var;
      for (int id : plans_[program_.depth_of(var_l)].axes)
        if (repeats(program_.axes[id]))
          throw_unsupported("sparse output " + output.tensor + " (" + output.format.name + ") stores " + var_l +
                            " in compressed level " + std::to_string(l) + ", but the loop over " + var_l +
                            " visits each coordinate once per entry of " + program_.axes[id].tensor +
                            " (a non-unique level), so it cannot be appended to; make that level of " + output.tensor +
                            " dense");
    }
    OpenLevel open;
    open.level = level;
    open.last_level = last_of_level;
    open.depth = depth;
    open.flag = fresh_name(output.tensor + std::to_string(level) + "_nonempty");
    open.counted = counting_ && open.level == counted_level_;
    if (!open.counted) open.cursor = levels[level].name;
    open.every_iteration = writes_every_iteration(depth);
    if (fused_rows_append_) open.fused_row = fresh_name(output.tensor + std::to_string(level) + "_row");
    open_levels_.push_back(open);
  }
  // Cursors and counts are shared by the loops inside the first compressed (ragged, ELL) level's parent.
  for (size_t level = 0; level < output.axes.size(); ++level)
    if (program_.axes[output.axes[level]].kind == sparse::AxisKind::SparseVariable ||
        program_.axes[output.axes[level]].kind == sparse::AxisKind::DenseVariable ||
        program_.axes[output.axes[level]].kind == sparse::AxisKind::SparseFixed) {
      append_depth_ = level == 0 ? -1 : levels[level - 1].ready_depth;
      break;
    }
}

// Why a summed loop outside a compressed level above the last is refused, and what to store
// instead: dense or ragged levels are located (their positions follow from the coordinates), so
// their coordinates may come in any order and repeatedly. A last level that is appended to
// (compressed, ELL, COO) would also get its rows out of order, so it must change too.
std::string Lowering::summed_outside_compressed_level(const sparse::SparseBuffer& output, int level, const std::string& summed) const {
  const sparse::Axis& axis = program_.axes[output.axes[level]];
  LevelKind last = output.format.levels[entry_level(output.format)];
  bool last_appended = last != LevelKind::Dense && last != LevelKind::DenseVariable;
  return "sparse output " + output.tensor + " (" + output.format.name + ") is summed over " + summed +
         " outside its compressed level " + std::to_string(level) + " (index " + axis.index_var +
         "), whose coordinates would then arrive out of order and repeatedly, but a compressed level appends each "
         "coordinate once, in increasing order; reorder so the output's loops are outermost, or store " +
         output.tensor + (last_appended ? " with dense or dense-variable levels only"
                                        : " with dense or dense-variable levels above its last one") +
         " (their positions are located from the coordinates, which may come in any order)";
}

// A ragged level above the output's last one, counted: its row (the parent position) is as long
// as its largest coordinate that holds entries below, + 1. Maxima do not depend on the order the
// coordinates come in, and the fill locates each coordinate's position (pos[p] + coordinate), so
// summed loops outside it are no obstacle, and nothing is opened when filling.
void Lowering::open_ragged_level(const sparse::SparseBuffer& output, int level) {
  OpenLevel open;
  open.level = open.last_level = level;
  open.depth = program_.depth_of(program_.axes[output.axes[level]].index_var);
  open.flag = fresh_name(output.tensor + std::to_string(level) + "_nonempty");
  open.counted = true;
  open.every_iteration = writes_every_iteration(open.depth);
  open_levels_.push_back(open);
}

// Only the dense in-block loops of blocked indices (a blocked output's whole blocks) lie between
// the loop at `depth` and the output's entries: each of its iterations writes some.
bool Lowering::writes_every_iteration(int depth) const {
  if (scattered() || depth >= write_.depth) return false;
  for (int d = depth + 1; d <= write_.depth; ++d) {
    const std::string& loop_var = program_.iteration.iterators[d].var;
    const sparse::BlockedVar* blocked = program_.blocked_loop(loop_var);
    if (!blocked || loop_var != blocked->inner || plans_[d].kind != LoopKind::Dense || fusion_at(d)) return false;
  }
  return true;
}

// Below the last marked level only whole blocks are written (dense positions, no cursor), and
// every level above was marked before them: those loops share nothing.
bool Lowering::inside_marked_blocks(int depth) const {
  if (open_levels_.empty()) return false;
  for (const OpenLevel& open : open_levels_)
    if (!open.every_iteration || depth <= open.depth) return false;
  const sparse::SparseBuffer& output = program_.output();
  return program_.axes[output.axes[entry_level(output.format)]].kind == sparse::AxisKind::DenseFixed;
}

// The statements of the open levels (passes/lower/open_levels.h).
Stmt Lowering::with_open_flags(int depth, Stmt body) const {
  if (std::none_of(open_levels_.begin(), open_levels_.end(), [&](const OpenLevel& open) { return open.depth == depth; }))
    return body;
  const bool counts_here = std::any_of(open_levels_.begin(), open_levels_.end(),
                                       [&](const OpenLevel& open) { return open.depth == depth && open.counted; });
  return lowering::with_open_flags(output_context(), open_levels_, depth, std::move(body),
                                   counts_here ? value_position(program_.output().tensor) : nullptr);
}

std::vector<Stmt> Lowering::open_levels() const { return lowering::open_levels(output_context(), open_levels_); }

Stmt Lowering::store_ragged_length(const sparse::Axis& axis, Expr slot) const { return lowering::store_ragged_length(output_context(), axis, std::move(slot)); }

Stmt Lowering::store_open_coordinate(int first_level, int last_level, const std::string& cursor) const {
  return lowering::store_open_coordinate(output_context(), first_level, last_level, cursor);
}

Stmt Lowering::zero_fill() {
  const sparse::SparseBuffer& output = program_.output();
  std::string p = fresh_name("p");
  Stmt store = std::make_shared<Store>(output.values, var(p), reduction_identity(), false);
  std::string why = write_.overwrites ? "the loops below skip entries that must be zero" : "the loops below add into it";
  if (program_.iteration.reduction != ast::Reduction::Sum)
    why = std::string("the loops below skip entries, whose ") + ast::reduction_name(program_.iteration.reduction) + " over no entries is " +
          (program_.iteration.reduction == ast::Reduction::Max ? "-inf" : "+inf");
  // (A scalar output has no levels: its one value is the whole structure.)
  const sparse::Axis* last = output.axes.empty() ? nullptr : &program_.axes[output.axes.back()];
  if (assembled_ && last && last->kind == sparse::AxisKind::SparseFixed) {
    // Every slot starts as padding; the fill overwrites a row's first ones.
    why = "every slot starts as padding";
    store = block({store, std::make_shared<Store>(last->crd, var(p), cast(index_type_, int64(-1)), false)});
  }
  return block({std::make_shared<Comment>("zero " + output.tensor + ": " + why),
                std::make_shared<For>("zero " + output.tensor, p, int64(0), structure_size(program_.structure_of(output)), store)});
}

// `enclosing`: the number of loops around the write (all of them by default; the loops outside
// a scalar sum's).
Stmt Lowering::write_output(Expr value, int enclosing) const {
  const sparse::SparseBuffer& output = program_.output();
  // (A term whose located factor is absent is zero: listed, it would be an explicit zero in
  // the output's structure, one per coordinate the loops visit, as where E is located in the
  // dense block loops of B beside A's blocks. Only the factors located by the loops around the
  // write count: a scalar sum's are gone.)
  if (listed_)
    return only_where(some_term_present(tensor_terms(*program_.iteration.body),
                                        [&](const std::string& tensor) {
                                          return presence_with_searched(tensor, [&](const std::string& structure, int level) {
                                            return positions_.at(structure)[static_cast<size_t>(level)].ready_depth < enclosing;
                                          });
                                        }),
                      list_entry(std::move(value)));
  if (!assembled_)
    return std::make_shared<Store>(output.values, value_position(output.tensor), std::move(value), !write_.overwrites);
  if (block_rows()) return scatter_into_block(std::move(value));
  if (scattered()) return scatter(std::move(value));
  std::vector<Stmt> stmts = open_levels();
  Expr cursor = value_position(output.tensor);
  int entries = entry_level(output.format);
  const sparse::Axis& axis = program_.axes[output.axes[entries]];
  if (counting_) {
    // One more entry under this parent (counts sit one slot up, for the prefix sum); a level
    // above the last one counts its flag instead, after its coordinate's loop.
    if (counted_level_ == entries && axis.kind == sparse::AxisKind::DenseVariable) {
      stmts.push_back(store_ragged_length(axis, add(cursor, int64(1))));
    } else if (counted_level_ == entries) {
      stmts.push_back(std::make_shared<Store>(axis.pos, add(cursor, int64(1)), cast(index_type_, int64(1)), true,
                                              /*atomic=*/fused_rows_parallel_));
    }
  } else if (axis.kind == sparse::AxisKind::SparseVariable) {
    // The entry's coordinates: the level's own, and those of the singletons below it (COO).
    const std::string& name = positions_.at(output.tensor)[entries].name;
    for (size_t level = entries; level < output.axes.size(); ++level) {
      const sparse::Axis& stored = program_.axes[output.axes[level]];
      stmts.push_back(std::make_shared<Store>(stored.crd, var(name), cast(index_type_, var(stored.index_var)), false));
    }
    stmts.push_back(std::make_shared<Store>(output.values, var(name), std::move(value), false));
    if (!fused_rows_parallel_) stmts.push_back(std::make_shared<Assign>(name, int64(1), true));
  } else if (axis.kind == sparse::AxisKind::SparseFixed) {
    // The next of the row's slots.
    const std::string& name = positions_.at(output.tensor)[entries].name;
    Expr row = entries == 0 ? int64(0) : var(positions_.at(output.tensor)[entries - 1].name);
    Stmt slot = block({std::make_shared<Store>(axis.crd, var(name), cast(index_type_, var(axis.index_var)), false),
                       std::make_shared<Store>(output.values, var(name), std::move(value), false)});
    stmts.push_back(within_ell_row(axis, row, name, slot));
    stmts.push_back(std::make_shared<Assign>(name, int64(1), true));
  } else {  // a dense or ragged last level, zeroed first
    stmts.push_back(std::make_shared<Store>(output.values, cursor, std::move(value), !write_.overwrites));
  }
  return stmts.size() == 1 ? stmts.front() : block(std::move(stmts));
}

// A scattered sparse output: its rows gathered in a workspace (passes/lower/row_workspace.h).
OutputContext Lowering::output_context() const {
  static const std::vector<LevelPosition> none;  // (before the positions are planned)
  const auto positions = positions_.find(program_.output().tensor);
  return {program_, config_, positions == positions_.end() ? none : positions->second, counting_, counted_level_, coo_segment_,
          value_type_, index_type_};
}

void Lowering::plan_workspace() {
  rows_ = plan_row_workspace(output_context(), [this](const std::string& wanted) { return fresh_name(wanted); }, workspaces_);
}

Stmt Lowering::scatter(Expr value) const {
  return scatter_into_row(output_context(), rows_, std::move(value), open_levels(), value_position(program_.output().tensor));
}

Stmt Lowering::around_row(Stmt row_loops) {
  return append_row(output_context(), rows_, std::move(row_loops), [this](const std::string& wanted) { return fresh_name(wanted); });
}

// ---- a list of the output's entries ----
// The order the output's entries arrive in (passes/lower/output_order.h).
OutputOrder Lowering::output_order() const {
  return OutputOrder(program_, config_, plans_, by_runs_, assembled_, sum_.whole, sum_.added_to || sum_.lists_into);
}

std::pair<const sparse::Axis*, const sparse::Axis*> Lowering::fused_axes(const sparse::Fusion& f) const { return output_order().fused_axes(f); }

bool Lowering::fuses_rows(const sparse::Fusion& f) const { return output_order().fuses_rows(f); }

std::string Lowering::out_of_order_reason(const sparse::SparseBuffer& output) const { return output_order().out_of_order_reason(output); }

bool Lowering::appends_rows_in_order(const sparse::SparseBuffer& output) const { return output_order().appends_rows_in_order(output); }

void Lowering::plan_listed() {
  if (sum_.lists_into) {
    // A part of a sum into a listed output: its entries join the one list.
    listed_ = true;
    list_ = sum_.lists_into->list_;
    return;
  }
  if (!assembled_) return;
  const sparse::SparseBuffer& output = program_.output();
  if (output.gathered_level >= 0) return;
  for (size_t l = 0; l < output.format.levels.size() && !output.listed_blocks; ++l)
    if (output.format.block(l).part != BlockPart::None) return;  // appended in the block loops' order
  const std::string why = out_of_order_reason(output);
  if (why.empty()) {
    fused_rows_append_ = appends_rows_in_order(output);
    if (fused_rows_append_)
      for (const ScheduleOp& op : config_.schedule) fused_rows_parallel_ |= std::holds_alternative<ParallelOp>(op.op);
    return;
  }
  listed_ = true;
  list_.keys = fresh_name(output.tensor + "_keys");
  list_.values = fresh_name(output.tensor + "_entries");
  list_.count = fresh_name(output.tensor + "_listed");
}

// The list's code (passes/lower/listed_output.h).
Stmt Lowering::list_entry(Expr value) const { return lowering::list_entry(output_context(), list_, std::move(value)); }

Stmt Lowering::list_and_pack(Stmt nest) {
  return lowering::list_and_pack(output_context(), list_, std::move(nest), out_of_order_reason(program_.output()),
                                 [this](const std::string& wanted) { return fresh_name(wanted); });
}

// ---- a block-row workspace (passes/lower/block_row_workspace.h) ----
void Lowering::plan_block_workspace() {
  const std::string refusal =
      plan_block_row_workspace(output_context(), [this](const std::string& wanted) { return fresh_name(wanted); }, workspaces_,
                               rest_.block_row_owner ? &rest_.block_row_owner->rows_ : nullptr, rows_, blocks_);
  if (!refusal.empty()) refuse(NestRefusal::Kind::SharedBlocks, refusal);
}

Stmt Lowering::scatter_into_block(Expr value) const {
  return lowering::scatter_into_block(output_context(), rows_, blocks_, std::move(value), open_levels());
}

Stmt Lowering::around_block_row(Stmt row_loops) {
  return append_block_row(output_context(), rows_, blocks_, std::move(row_loops), why_blocks_gathered(),
                          [this](const std::string& wanted) { return fresh_name(wanted); });
}

// Why the output's blocks are gathered in a workspace, for the kernel's comment.
std::string Lowering::why_blocks_gathered() const {
  const sparse::SparseBuffer& output = program_.output();
  if (!rest_.blockers.empty()) return blocks_of() + ", and the other operands' entries outside them";
  if (sum_.whole && parts_in_block_rows(*sum_.whole)) return "the parts of the sum gather into it, each blocked only by its own operands";
  if (std::any_of(program_.blocked_vars.begin(), program_.blocked_vars.end(),
                  [&](const sparse::BlockedVar& b) { return b.tensor != output.tensor; }))
    return "the operands give only some of " + output.tensor + "'s blocked indices";
  return "no operand gives " + output.tensor + "'s blocks";
}

// Loops inside a row share its workspace: they stay sequential.
LoopAnnotations Lowering::loop_annotations(int depth) const {
  LoopAnnotations annotations;
  if (listed_) {
    // On cuda each entry takes its slot of the list atomically: any loop may run on threads. On
    // the cpu the outermost loop may run in parallel, each thread listing into lists of its own
    // that join the list in thread order (schedule_loops' parallel); the loops inside stay
    // sequential.
    if (config_.target == Target::Cuda) return annotations;
    // (A part of a scoped sum appends to the list after the parts before it: its loops stay
    // sequential, listed_parts_nests.)
    if (depth == 0 && sum_.lists_into == nullptr) {
      annotations.listed.keys = list_.keys;
      annotations.listed.count = list_.count;
      if (!counting_) annotations.listed.values = list_.values;
    } else {
      annotations.sequential_reason = "it appends to the list of " + program_.output().tensor + "'s entries";
    }
    return annotations;
  }
  if (assembled_ && depth > append_depth_ && depth <= write_.depth && !inside_marked_blocks(depth))  // (summed loops inside touch neither)
    annotations.sequential_reason = std::string(counting_ ? "it counts" : "it appends") + " the entries of " +
                                    program_.output().tensor + " under one parent position";
  if (scattered() && depth > rows_.row_depth)
    annotations.sequential_reason = "it adds into the row workspace of " + program_.output().tensor;
  // A summed loop above a ragged output's rows: its lengths and values have no private copies.
  if (assembled_ && depth <= append_depth_ && program_.iteration.iterators[depth].is_reduction)
    annotations.sequential_reason = std::string(counting_ ? "it counts" : "it adds into") + " the rows of " +
                                    program_.output().tensor + ", which are assembled, not privatized";
  return annotations;
}

// Assemble phase: zero the counts, and turn them into positions after the loops.
Stmt Lowering::clear_counts() {
  const sparse::SparseBuffer& output = program_.output();
  const sparse::Axis& axis = program_.axes[output.axes[counted_level_]];
  std::string p = fresh_name("p");
  Expr parents = parent_count(output);
  return block({std::make_shared<Comment>("count the entries of " + output.tensor + " under each parent position"),
                std::make_shared<For>("zero " + output.tensor, p, int64(0), add(parents, int64(1)),
                                      std::make_shared<Store>(axis.pos, var(p), cast(index_type_, int64(0)), false))});
}

Stmt Lowering::prefix_sum() {
  const sparse::SparseBuffer& output = program_.output();
  const sparse::Axis& axis = program_.axes[output.axes[counted_level_]];
  std::string p = fresh_name("p");
  Stmt step = std::make_shared<Store>(axis.pos, add(var(p), int64(1)), load(axis.pos, var(p), index_type_), true);
  return block({std::make_shared<Comment>("prefix sum: counts become positions"),
                std::make_shared<For>("prefix sum", p, int64(0), parent_count(output), step)});
}

// Parent positions of the counted level of an assembled output.
Expr Lowering::parent_count(const sparse::SparseBuffer& output) const {
  return structure_size(output, static_cast<size_t>(counted_level_));
}

// Declarations of the positions that become known at `depth`.
std::vector<Stmt> Lowering::position_declares(int depth) const {
  std::vector<Stmt> declares;
  for (const sparse::SparseBuffer& buffer : program_.buffers) {
    auto found = positions_.find(buffer.tensor);
    if (found == positions_.end()) continue;
    for (const LevelPosition& position : found->second)
      if (position.searched && position.declare_depth == depth)
        append(declares, locate_in_blocks(position));
      else if (position.value && position.declare_depth == depth)
        declares.push_back(std::make_shared<Declare>(position.name, ScalarType::Int64, position.value, position.is_cursor));
  }
  return declares;
}

}  // namespace spgen::lowering
