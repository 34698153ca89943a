#include "passes/lower/listed_output.h"

#include <climits>

#include "passes/lower/level_access.h"
#include "passes/lower/output_levels.h"

namespace spgen::lowering {

using namespace loops;

namespace {

// The code of one listed output, with the lowering's names for what it reads.
class ListedOutput {
 public:
  ListedOutput(const OutputContext& o, const EntryList& list, const FreshName& fresh_name, std::string why_listed = "")
      : program_(o.program), config_(o.config), counting_(o.counting), counted_level_(o.counted_level),
        value_type_(o.value_type), index_type_(o.index_type), list_(list), fresh_name(fresh_name),
        why_listed_(std::move(why_listed)) {}

  // The output's level `level` (its coordinate's extent: the number of blocks, or the block, where
  // it is blocked).
  const sparse::Axis& output_axis(size_t level) const { return program_.axes[program_.output().axes[level]]; }

  // The product of the extents of the output's levels from `from` down.
  Expr extent_below(size_t from) const {
    Expr product = int64(1);
    for (size_t l = from; l < program_.output().axes.size(); ++l) product = mul(product, axis_length(output_axis(l)));
    return product;
  }

  // One more entry: its key (coordinates in storage order, flattened) and, filling, its value.
  // On cuda the count advances first, as one atomic step that takes the entry's slot (threads
  // may list at once), and the entry goes to the slot before it.
  Stmt list_entry(Expr value) const {
    const sparse::SparseBuffer& output = program_.output();
    Expr key = int64(0);
    for (size_t l = 0; l < output.axes.size(); ++l) {
      const sparse::Axis& axis = output_axis(l);
      Expr coordinate = var(axis.index_var);  // (a blocked level binds the spec's variable: blocked_apart)
      if (axis.block_part == BlockPart::Block) coordinate = binary(BinOp::Div, coordinate, int64(axis.block));
      if (axis.block_part == BlockPart::InBlock) coordinate = binary(BinOp::Mod, coordinate, int64(axis.block));
      key = add(mul(key, axis_length(axis)), coordinate);
    }
    const bool cuda = config_.target == Target::Cuda;
    Expr slot = cuda ? sub(var(list_.count), int64(1)) : var(list_.count);
    std::vector<Stmt> stmts;
    if (cuda) stmts.push_back(std::make_shared<Assign>(list_.count, int64(1), true, /*atomic=*/true));
    stmts.push_back(std::make_shared<Store>(list_.keys, slot, key, false));
    if (!counting_) stmts.push_back(std::make_shared<Store>(list_.values, slot, std::move(value), false));
    if (!cuda) stmts.push_back(std::make_shared<Assign>(list_.count, int64(1), true));
    return block(std::move(stmts));
  }

  // The loops list the entries; then the list is sorted, repeats summed, and packed.
  Stmt list_and_pack(Stmt nest) {
    const sparse::SparseBuffer& output = program_.output();
    std::vector<Workspace> lists = {{list_.keys, ScalarType::Int64, int64(0), int64(0)}};
    lists.back().growable = true;
    if (!counting_) {
      lists.push_back({list_.values, value_type_, int64(0), std::make_shared<FloatImm>(0.0, "0", value_type_)});
      lists.back().growable = true;
    }
    std::string distinct = fresh_name(output.tensor + "_distinct");
    std::vector<Stmt> body = {
        std::make_shared<Comment>("list the entries of " + output.tensor + " as the loops produce them (out of order: " +
                                  why_listed_ + "), keyed by their coordinates in storage order"),
        std::make_shared<Declare>(list_.count, ScalarType::Int64, int64(0), true),
        nest,
        std::make_shared<Comment>("sort the list by key and sum the repeats of each key"),
        std::make_shared<Sort>(list_.keys, int64(0), var(list_.count), counting_ ? "" : list_.values)};
    std::string keys = list_.keys, values = list_.values;  // the sorted entries, repeats summed
    if (config_.target == Target::Cuda) {
      append(body, sum_repeats_in_parallel(distinct, lists, keys, values));
    } else {
      append(body, sum_repeats(distinct));
    }
    Stmt packing = std::make_shared<Comment>(counting_ ? "count the entries of level " + std::to_string(counted_level_) + " per parent position"
                                                       : "store the entries level by level, in storage order");
    if (config_.target != Target::Cuda) body.push_back(packing);
    // An ELL level above the last: its slots start as padding (the last one's are, by zero_fill).
    for (size_t l = 0; l + 1 < output.axes.size() && !counting_; ++l) {
      const sparse::Axis& axis = output_axis(l);
      if (axis.kind != sparse::AxisKind::SparseFixed) continue;
      std::string p = fresh_name("p");
      // (cuda: a kernel named after the loop, one per ELL level)
      const std::string label = config_.target == Target::Cuda ? "pad level " + std::to_string(l) + " of " + output.tensor : "pad " + output.tensor;
      body.push_back(std::make_shared<For>(label, p, int64(0), structure_size(program_, output, index_type_, l + 1),
                                           std::make_shared<Store>(axis.crd, var(p), cast(index_type_, int64(-1)), false),
                                           config_.target == Target::Cuda ? over_grid() : LoopAnnotations{}));
    }
    std::vector<Stmt> pack = pack_list(distinct, keys, values, lists);
    if (config_.target == Target::Cuda) pack.insert(pack.end() - 1, packing);  // cuda: it describes the packing loop's kernel
    append(body, pack);
    return std::make_shared<Allocate>(lists, block(std::move(body)));
  }

  // Repeats of a key are adjacent once sorted: keep the first, adding the others' values into it.
  std::vector<Stmt> sum_repeats(const std::string& distinct) {
    const sparse::SparseBuffer& output = program_.output();
    std::string e = fresh_name("e");
    Expr key = load(list_.keys, var(e), ScalarType::Int64);
    Expr previous = load(list_.keys, sub(var(distinct), int64(1)), ScalarType::Int64);
    std::vector<Stmt> keep = {std::make_shared<Store>(list_.keys, var(distinct), key, false)};
    Stmt add_repeat;
    if (!counting_) {
      keep.push_back(std::make_shared<Store>(list_.values, var(distinct), load(list_.values, var(e), value_type_), false));
      add_repeat = std::make_shared<Store>(list_.values, sub(var(distinct), int64(1)), load(list_.values, var(e), value_type_), true);
    }
    keep.push_back(std::make_shared<Assign>(distinct, int64(1), true));
    Stmt first = std::make_shared<If>(logical_or(binary(BinOp::Eq, var(distinct), int64(0)), binary(BinOp::Ne, key, previous)),
                                      block(std::move(keep)), add_repeat);
    return {std::make_shared<Declare>(distinct, ScalarType::Int64, int64(0), true),
            std::make_shared<For>("sum repeats of " + output.tensor, e, int64(0), var(list_.count), first)};
  }

  // cuda: loops over the list that the grid's threads share, each a kernel of its own; and the
  // one-block scan that makes marks[1 .. n] their running sums (marks[0] is 0).
  static LoopAnnotations over_grid() {
    LoopAnnotations a;
    a.bind = "grid";
    a.bind_threads = 256;
    return a;
  }
  static Stmt scan_marks(const std::string& label, const std::string& marks, const Expr& n) {
    LoopAnnotations a;
    a.bind = "scan";
    a.bind_threads = 1024;
    std::string p = "p";
    return std::make_shared<For>(label, p, int64(0), n,
                                 std::make_shared<Store>(marks, add(var(p), int64(1)), load(marks, var(p), ScalarType::Int64), true), a);
  }

  // One more array of the list's length + 1 (cuda: the host allocates it with the list, zeroed).
  std::string list_array(const std::string& wanted, ScalarType type, std::vector<Workspace>& lists) {
    std::string name = fresh_name(wanted);
    Expr zero = type == ScalarType::Int64 ? int64(0) : std::make_shared<FloatImm>(0.0, "0", type);
    lists.push_back({name, type, int64(0), zero});
    lists.back().growable = true;
    return name;
  }

  // cuda: the sum of repeats in parallel. Each entry that starts a new key is marked; a scan of
  // the marks gives each distinct key its slot in new arrays (`keys`, `values`); the key's first
  // entry sums its run, in sorted order as one thread would, so the result is the same at every run.
  std::vector<Stmt> sum_repeats_in_parallel(const std::string& distinct, std::vector<Workspace>& lists, std::string& keys,
                                            std::string& values) {
    const sparse::SparseBuffer& output = program_.output();
    std::string heads = list_array(output.tensor + "_heads", ScalarType::Int64, lists);
    keys = list_array(output.tensor + "_distinct_keys", ScalarType::Int64, lists);
    if (!counting_) values = list_array(output.tensor + "_sums", value_type_, lists);
    Expr n = var(list_.count);
    std::string e = fresh_name("e");
    Expr key = load(list_.keys, var(e), ScalarType::Int64);
    Expr starts_key = logical_or(binary(BinOp::Eq, var(e), int64(0)),
                                 binary(BinOp::Ne, key, load(list_.keys, sub(var(e), int64(1)), ScalarType::Int64)));
    std::vector<Stmt> out = {
        std::make_shared<Comment>("mark each sorted entry that starts a new key; the marks' running sums give each key its slot"),
        std::make_shared<For>("mark keys of " + output.tensor, e, int64(0), n,
                              std::make_shared<Store>(heads, add(var(e), int64(1)), select(starts_key, int64(1), int64(0)), false),
                              over_grid()),
        scan_marks("slot keys of " + output.tensor, heads, n)};
    std::string slot = fresh_name("slot");
    std::vector<Stmt> keep = {std::make_shared<Declare>(slot, ScalarType::Int64, sub(load(heads, add(var(e), int64(1)), ScalarType::Int64), int64(1)), false),
                              std::make_shared<Store>(keys, var(slot), key, false)};
    if (!counting_) {
      std::string sum = fresh_name("sum"), r = fresh_name("r");
      keep.push_back(std::make_shared<Declare>(sum, value_type_, load(list_.values, var(e), value_type_), true));
      keep.push_back(std::make_shared<Declare>(r, ScalarType::Int64, add(var(e), int64(1)), true));
      Expr repeats = logical_and(binary(BinOp::Lt, var(r), n), binary(BinOp::Eq, load(list_.keys, var(r), ScalarType::Int64), key));
      keep.push_back(std::make_shared<While>("repeats of " + output.tensor, repeats,
                                             block({std::make_shared<Assign>(sum, load(list_.values, var(r), value_type_), true),
                                                    std::make_shared<Assign>(r, int64(1), true)})));
      keep.push_back(std::make_shared<Store>(values, var(slot), var(sum), false));
    }
    out.push_back(std::make_shared<Comment>("each key's first entry sums its repeats, in sorted order, into the key's slot"));
    out.push_back(std::make_shared<For>("sum repeats of " + output.tensor, e, int64(0), n,
                                        std::make_shared<If>(starts_key, block(std::move(keep)), nullptr), over_grid()));
    out.push_back(std::make_shared<Declare>(distinct, ScalarType::Int64, load(heads, n, ScalarType::Int64), false));
    return out;
  }

  // Packs the sorted, distinct list (`keys`, `values`): per entry, each level's position from
  // its parent's (dense: arithmetic; ragged: located; compressed: the next position where the
  // entry's coordinates down to that level differ from the previous entry's; COO: one position
  // per entry; ELL: the parent's next slot). An assemble phase stops at its level and counts there.
  // On cuda, without ELL levels, the grid's threads share the entries: a compressed level's
  // position is the running sum of its marks (where the coordinates down to it change), which a
  // scan computes first, and a counted ragged level is set by its parent's last entry only.
  std::vector<Stmt> pack_list(const std::string& distinct, const std::string& keys, const std::string& values,
                              std::vector<Workspace>& lists) {
    const sparse::SparseBuffer& output = program_.output();
    const size_t levels = output.axes.size();
    const size_t stop = counting_ ? static_cast<size_t>(counted_level_) : levels;
    const bool parallel = config_.target == Target::Cuda;
    std::vector<Stmt> marks;  // parallel: the loops that mark and scan each compressed or ELL level's positions
    std::string u = fresh_name("u"), key = fresh_name(output.tensor + "_key"), previous = fresh_name(output.tensor + "_previous");
    std::vector<Stmt> before;
    // strides[l]: the extent of the levels below l, so that key / strides[l] is the entry's
    // coordinates down to level l, and that modulo level l's extent its coordinate there.
    std::vector<Expr> strides(levels);
    for (size_t l = 0; l < levels; ++l) {
      std::string stride = fresh_name(output.tensor + "_stride" + std::to_string(l));
      before.push_back(std::make_shared<Declare>(stride, ScalarType::Int64, extent_below(l + 1), false));
      strides[l] = var(stride);
    }
    auto prefix = [&](const std::string& of, size_t l) { return binary(BinOp::Div, var(of), strides[l]); };
    // The entry differs from the previous one in its coordinates down to level l (the first entry
    // differs from none).
    auto changed_at = [&](size_t l, const std::string& entry, const std::string& its_key, const std::string& its_previous) {
      return logical_or(binary(BinOp::Eq, var(entry), int64(0)), binary(BinOp::Ne, prefix(its_key, l), prefix(its_previous, l)));
    };
    auto changed = [&](size_t l) { return changed_at(l, u, key, previous); };
    // parallel: an ELL level's slot for an entry is its rank among the distinct coordinates under
    // its parent: the running sum of the marks where the coordinates down to the level change
    // (`counts`, none at the last level, whose entries are distinct: the entry's index), less
    // that sum before the parent's first entry (`starts`, indexed by the parent's running sum of
    // marks, `parents`; none at level 0, whose one parent starts at entry 0).
    struct EllRanks {
      std::string counts, parents, starts;
      int64_t width = 0;
    };
    std::vector<EllRanks> ells;  // the ELL levels above the level being packed
    auto rank_of = [&](const EllRanks& ell, const Expr& entry) {
      Expr rank = ell.counts.empty() ? entry : sub(load(ell.counts, add(entry, int64(1)), ScalarType::Int64), int64(1));
      if (ell.parents.empty()) return rank;
      return sub(rank, load(ell.starts, sub(load(ell.parents, add(entry, int64(1)), ScalarType::Int64), int64(1)), ScalarType::Int64));
    };
    // The ELL levels above keep the entry (within its parents' W slots); null where none is above.
    auto kept = [&](const std::string& entry) {
      Expr all;
      for (const EllRanks& ell : ells) all = logical_and(all, binary(BinOp::Lt, rank_of(ell, var(entry)), int64(ell.width)));
      return all;
    };
    // An entry's key and the previous entry's (-1 before the first).
    auto entry_keys = [&](const std::string& entry, const std::string& its_key, const std::string& its_previous) {
      return std::vector<Stmt>{
          std::make_shared<Declare>(its_key, ScalarType::Int64, load(keys, var(entry), ScalarType::Int64), false),
          std::make_shared<Declare>(its_previous, ScalarType::Int64,
                                    select(binary(BinOp::Lt, int64(0), var(entry)), load(keys, sub(var(entry), int64(1)), ScalarType::Int64), int64(-1)),
                                    false)};
    };
    // at[l]: level l's statements, which wrap those of the levels below (guarded by guards[l]:
    // an ELL level stores nothing past a parent's W slots); at[levels]: the value's store.
    std::vector<std::vector<Stmt>> at(levels + 1);
    std::vector<Expr> guards(levels + 1);
    Expr parent = int64(0);
    for (size_t l = 0; l < levels && l <= stop; ++l) {
      const sparse::Axis& axis = output_axis(l);
      const bool counted = counting_ && l == stop;
      const bool nonunique = output.format.levels[l] == LevelKind::CompressedNonUnique;
      Expr coordinate = binary(BinOp::Mod, prefix(key, l), axis_length(axis));
      Expr count_slot = add(parent, int64(1));  // counts sit one slot up, for the prefix sum
      // A compressed or ELL level gets a new position where the coordinates down to it change (the
      // last level's keys are distinct); a COO segment's compressed-nonunique level, at every entry,
      // or where the coordinates down to its last singleton change if levels lie below it.
      const size_t last_of_level = nonunique ? static_cast<size_t>(segment_end(output.format, static_cast<int>(l))) : l;
      Expr is_new = last_of_level + 1 == levels ? nullptr : changed(last_of_level);
      std::vector<Stmt>& stmts = at[l];
      Expr here;
      if (axis.kind == sparse::AxisKind::DenseFixed) {
        here = add(mul(parent, axis_length(axis)), coordinate);
      } else if (axis.kind == sparse::AxisKind::Singleton) {
        if (!counting_) stmts.push_back(std::make_shared<Store>(axis.crd, parent, cast(index_type_, coordinate), false));
        here = parent;
      } else if (axis.kind == sparse::AxisKind::DenseVariable && counted) {
        Expr length = binary(BinOp::Max, load(axis.pos, count_slot, index_type_), cast(index_type_, add(coordinate, int64(1))));
        Stmt count = std::make_shared<Store>(axis.pos, count_slot, length, false);
        if (parallel) {  // threads share parents: the parent's last entry, its longest, sets it alone
          Expr next_key = load(keys, add(var(u), int64(1)), ScalarType::Int64);
          Expr last = binary(BinOp::Eq, add(var(u), int64(1)), var(distinct));
          if (l > 0) last = logical_or(last, binary(BinOp::Ne, binary(BinOp::Div, next_key, strides[l - 1]), prefix(key, l - 1)));
          count = std::make_shared<If>(last, count, nullptr);
        }
        stmts.push_back(count);
      } else if (axis.kind == sparse::AxisKind::DenseVariable) {
        here = add(cast(ScalarType::Int64, load(axis.pos, parent, index_type_)), coordinate);
      } else if (counted) {
        Stmt count = std::make_shared<Store>(axis.pos, count_slot, cast(index_type_, int64(1)), true);
        stmts.push_back(is_new ? std::make_shared<If>(is_new, count, nullptr) : count);
      } else if (counting_ && l + 1 < stop && output_axis(l + 1).kind == sparse::AxisKind::SparseVariable) {
        // A compressed level's positions count its distinct prefixes whatever its parent's are:
        // counting further down, this level's are not needed.
        continue;
      } else if (parallel && axis.kind == sparse::AxisKind::SparseFixed) {
        // The parent's slot at the entry's rank under it: marks where the coordinates down to
        // this level change and where the parent changes, their running sums, and for each parent
        // the running sum before its first entry; the ranks past the width are dropped (the
        // assemble phase counted them, so that the caller reports the overflow).
        std::string what = "level " + std::to_string(l) + " of " + output.tensor;
        EllRanks ell;
        ell.width = axis.width;
        std::string m = fresh_name("m"), mark_key = fresh_name(output.tensor + "_key"),
                    mark_previous = fresh_name(output.tensor + "_previous");
        std::vector<Stmt> mark = entry_keys(m, mark_key, mark_previous);
        if (is_new) {
          ell.counts = list_array(output.tensor + "_distinct" + std::to_string(l), ScalarType::Int64, lists);
          mark.push_back(std::make_shared<Store>(ell.counts, add(var(m), int64(1)),
                                                 select(changed_at(l, m, mark_key, mark_previous), int64(1), int64(0)), false));
        }
        if (l > 0) {
          ell.parents = list_array(output.tensor + "_parents" + std::to_string(l), ScalarType::Int64, lists);
          ell.starts = list_array(output.tensor + "_starts" + std::to_string(l), ScalarType::Int64, lists);
          mark.push_back(std::make_shared<Store>(ell.parents, add(var(m), int64(1)),
                                                 select(changed_at(l - 1, m, mark_key, mark_previous), int64(1), int64(0)), false));
        }
        if (is_new || l > 0) {
          marks.push_back(std::make_shared<Comment>("an entry's slot in the ELL " + what + " is its rank among the distinct coordinates under its "
                                                    "parent: mark where they change and where the parent changes"));
          marks.push_back(std::make_shared<For>("mark slots of " + what, m, int64(0), var(distinct), block(std::move(mark)), over_grid()));
        }
        if (is_new) marks.push_back(scan_marks("count coordinates of " + what, ell.counts, var(distinct)));
        if (l > 0) {
          marks.push_back(scan_marks("number parents of " + what, ell.parents, var(distinct)));
          std::string s = fresh_name("m"), start_key = fresh_name(output.tensor + "_key"),
                      start_previous = fresh_name(output.tensor + "_previous");
          std::vector<Stmt> start = entry_keys(s, start_key, start_previous);
          Expr before_parent = ell.counts.empty() ? var(s) : load(ell.counts, var(s), ScalarType::Int64);
          start.push_back(std::make_shared<If>(
              changed_at(l - 1, s, start_key, start_previous),
              std::make_shared<Store>(ell.starts, sub(load(ell.parents, add(var(s), int64(1)), ScalarType::Int64), int64(1)), before_parent, false),
              nullptr));
          marks.push_back(std::make_shared<Comment>("each parent's first entry keeps the coordinates' running sum before it"));
          marks.push_back(std::make_shared<For>("start slots of " + what, s, int64(0), var(distinct), block(std::move(start)), over_grid()));
        }
        std::string rank = fresh_name("r" + output.tensor + std::to_string(l));
        stmts.push_back(std::make_shared<Declare>(rank, ScalarType::Int64, rank_of(ell, var(u)), false));
        guards[l] = binary(BinOp::Lt, var(rank), int64(axis.width));
        here = add(mul(parent, int64(axis.width)), var(rank));
        if (!counting_) {
          Stmt store = std::make_shared<If>(guards[l], std::make_shared<Store>(axis.crd, here, cast(index_type_, coordinate), false), nullptr);
          stmts.push_back(is_new ? std::make_shared<If>(is_new, store, nullptr) : store);
        }
        ells.push_back(ell);
      } else if (parallel) {
        // The position is the number of new positions up to this entry: the running sum of the
        // marks (every entry's, where is_new is always true). Below an ELL level, only the
        // entries it keeps take positions.
        Expr keeps = kept(u);
        if (is_new || keeps) {
          std::string level_marks = list_array(output.tensor + "_new" + std::to_string(l), ScalarType::Int64, lists);
          std::string m = fresh_name("m"), mark_key = fresh_name(output.tensor + "_key"),
                      mark_previous = fresh_name(output.tensor + "_previous");
          std::vector<Stmt> mark = entry_keys(m, mark_key, mark_previous);
          Expr starts = logical_and(is_new ? changed_at(last_of_level, m, mark_key, mark_previous) : nullptr, kept(m));
          mark.push_back(std::make_shared<Store>(level_marks, add(var(m), int64(1)), select(starts, int64(1), int64(0)), false));
          std::string what = "level " + std::to_string(l) + " of " + output.tensor;
          marks.push_back(std::make_shared<Comment>("mark the entries that start a new position of " + what + "; the marks' running sums are the positions"));
          marks.push_back(std::make_shared<For>("mark " + what, m, int64(0), var(distinct), block(std::move(mark)), over_grid()));
          marks.push_back(scan_marks("positions of " + what, level_marks, var(distinct)));
          here = sub(load(level_marks, add(var(u), int64(1)), ScalarType::Int64), int64(1));
        } else {
          here = var(u);
        }
        if (!counting_) {
          Stmt store = std::make_shared<Store>(axis.crd, here, cast(index_type_, coordinate), false);
          stmts.push_back(is_new ? std::make_shared<If>(is_new, store, nullptr) : store);
        }
      } else {
        // The next free position (compressed, COO), or the parent's next slot (ELL).
        std::string next = fresh_name("q" + output.tensor + std::to_string(l));
        before.push_back(std::make_shared<Declare>(next, ScalarType::Int64, int64(0), true));
        Expr row_end;
        if (axis.kind == sparse::AxisKind::SparseFixed) {
          Expr parent_changed = l == 0 ? binary(BinOp::Eq, var(u), int64(0)) : changed(l - 1);
          stmts.push_back(std::make_shared<If>(parent_changed, std::make_shared<Assign>(next, mul(parent, int64(axis.width)), false), nullptr));
          row_end = mul(add(parent, int64(1)), int64(axis.width));
        }
        std::vector<Stmt> advance;
        if (!counting_) {
          Stmt store = std::make_shared<Store>(axis.crd, var(next), cast(index_type_, coordinate), false);
          advance.push_back(row_end ? std::make_shared<If>(binary(BinOp::Lt, var(next), row_end), store, nullptr) : store);
        }
        advance.push_back(std::make_shared<Assign>(next, int64(1), true));
        stmts.push_back(is_new ? std::make_shared<If>(is_new, block(std::move(advance)), nullptr) : block(std::move(advance)));
        here = sub(var(next), int64(1));
        if (row_end) guards[l] = binary(BinOp::Lt, here, row_end);
      }
      if (counted) break;
      std::string position = fresh_name("p" + output.tensor + std::to_string(l));
      stmts.push_back(std::make_shared<Declare>(position, ScalarType::Int64, here, false));
      parent = var(position);
    }
    if (!counting_) at[levels].push_back(std::make_shared<Store>(output.values, parent, load(values, var(u), value_type_), false));
    Stmt inner;
    for (size_t l = levels + 1; l-- > 0;) {
      std::vector<Stmt> stmts = std::move(at[l]);
      if (inner) stmts.push_back(guards[l] ? std::make_shared<If>(guards[l], inner, nullptr) : inner);
      if (!stmts.empty()) inner = block(std::move(stmts));
    }
    std::vector<Stmt> entry = entry_keys(u, key, previous);
    entry.push_back(inner);
    append(before, marks);
    // (cuda: a kernel named after the loop, which must not be the pack routine's NAME_pack_C)
    before.push_back(std::make_shared<For>((parallel ? "pack the entries of " : "pack ") + output.tensor, u, int64(0), var(distinct),
                                           block(std::move(entry)), parallel ? over_grid() : LoopAnnotations{}));
    return before;
  }

 private:
  static void append(std::vector<Stmt>& to, std::vector<Stmt> more) {
    for (Stmt& s : more) to.push_back(std::move(s));
  }

  const sparse::Program& program_;
  const Config& config_;
  const bool counting_;
  const int counted_level_;
  const ScalarType value_type_, index_type_;
  const EntryList& list_;
  const FreshName& fresh_name;
  const std::string why_listed_;  // why the entries arrive out of order (output_order.h)
};

}  // namespace

Stmt list_entry(const OutputContext& output, const EntryList& list, Expr value) {
  return ListedOutput(output, list, nullptr).list_entry(std::move(value));
}

Stmt list_and_pack(const OutputContext& output, const EntryList& list, Stmt nest, const std::string& why_listed,
                   const FreshName& fresh_name) {
  return ListedOutput(output, list, fresh_name, why_listed).list_and_pack(std::move(nest));
}

}  // namespace spgen::lowering
