#include "passes/auto_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include "ir/loop_ir_visitor.h"
#include "passes/batch_entries.h"
#include "passes/prefetch_rows.h"
#include "passes/schedule_loops.h"

namespace spgen {

using namespace loops;

namespace {

bool is_reduction(const sparse::Program& program, const std::string& var) {
  for (const sparse::Iterator& it : program.iteration.iterators)
    if (it.var == var) return it.is_reduction;
  return true;
}

// A loop that schedule ops may name: an iterator of the program, or a fused one. (The nest of a
// listed part of a sum, unsplit by another part's blocks, has loops of its own: listed_part_program.)
bool schedulable(const sparse::Program& program, const std::string& label) {
  for (const sparse::Iterator& it : program.iteration.iterators)
    if (it.var == label) return true;
  for (const sparse::Fusion& f : program.iteration.fusions)
    if (f.into == label) return true;
  return false;
}

// Whether one loop only has this label: an op names a loop by its label, and the parts of a sum
// (several nests, each with loops over i) cannot be told apart by it.
bool labels_one_loop(const Stmt& body, const std::string& label) {
  FindLoops finder;
  finder.visit(body);
  return std::count_if(finder.found.begin(), finder.found.end(), [&](const LoopInfo& info) { return info.loop->label == label; }) == 1;
}

// The chain of first loops from the top of the nest: outermost to innermost.
std::vector<const For*> loop_spine(const Stmt& body) {
  std::vector<const For*> spine;
  Stmt current = body;
  while (current) {
    const For* next = nullptr;
    if (current->kind == StmtKind::Allocate) {  // workspaces around the nest
      current = static_cast<const Allocate&>(*current).body;
      continue;
    }
    if (const For* loop = as_for(current)) {
      next = loop;
    } else if (current->kind == StmtKind::Block) {
      for (const Stmt& s : static_cast<const Block&>(*current).stmts) {
        if (s->kind == StmtKind::Allocate) {
          current = s;
          break;
        }
        if (const For* loop = as_for(s); loop && loop->label.rfind("zero ", 0) != 0) {
          next = loop;
          break;
        }
      }
      if (!next && current->kind == StmtKind::Allocate) continue;
    }
    if (!next) break;
    spine.push_back(next);
    current = next->body;
  }
  return spine;
}

ScheduleOp make_op(decltype(ScheduleOp::op) op, int index, std::string reason = "") {
  ScheduleOp result;
  result.op = std::move(op);
  result.index = index;
  result.path = "/schedule (auto, op " + std::to_string(index) + ")";
  result.reason = std::move(reason);
  return result;
}

// Whether every level that stores `var`, in any tensor, is dense: its loop counts, no operand
// filters it.
bool only_dense_levels_store(const sparse::Program& program, const std::string& var) {
  return std::all_of(program.axes.begin(), program.axes.end(),
                     [&](const sparse::Axis& axis) { return axis.index_var != var || axis.kind == sparse::AxisKind::DenseFixed; });
}

// The width of a register tile over a free index: 32 floats or 16 doubles (a few vector
// registers), or less where "sizes" fixes the index smaller; 0 where even the smallest is too wide.
int64_t register_tile_width(const sparse::Program& program, const Config& config, const std::string& var) {
  int64_t width = program.value_type == ValueType::Float64 ? 16 : 32;
  auto fixed = config.sizes.find(var);
  if (fixed == config.sizes.end()) return width;
  while (width > 4 && width > fixed->second) width /= 2;
  return width <= fixed->second ? width : 0;
}

// `wanted`, or `wanted_2`, ...: a name no loop, declaration, parameter or index variable has.
std::string unused_name(const LoweredFunc& func, const sparse::Program& program, const std::string& wanted) {
  std::set<std::string> used = names_bound_in(func);
  used.insert(program.index_vars.begin(), program.index_vars.end());
  return first_unused_name(used, wanted);
}

// The interleaved ELL level (decompose's "interleave") that `loop` walks slot by slot, or null.
const sparse::Axis* interleaved_walk(const sparse::Program& program, const For& loop) {
  for (const sparse::Axis& axis : program.axes)
    if (axis.index_var == loop.label && axis.tensor == loop.annotations.walks && axis.interleave > 0) return &axis;
  return nullptr;
}

// cuda: the outermost loop is spread over blocks and threads. When the innermost loop is dense
// (SpMM's and SDDMM's k, MTTKRP's j), or the loop inside the outermost sums into a scalar (CSR
// SpMV's row sum), each warp takes one outer iteration ("warp per row", 4 rows per block) and
// its lanes share that inner loop; otherwise each thread takes one outer iteration, 128 threads
// per block. Reduction loops spread over threads combine with a shuffle when they sum into a
// scalar, else with atomics; a nest that sums into one scalar output runs on one warp.
std::vector<ScheduleOp> auto_schedule_cuda(const LoweredFunc& func, const sparse::Program& program,
                                           const std::vector<const For*>& spine) {
  const For* outer = spine.front();
  if (!outer->annotations.sequential_reason.empty()) return {};
  if (outer->annotations.own_kernel) return {};  // a listing nest of a sum's part, already over the grid
  if (!schedulable(program, outer->label)) return {};  // a listed part's own nest: one thread lists
  if (!labels_one_loop(func.body, outer->label)) return {};  // (the parts' nests)
  auto strategy = [&](const For& loop) -> std::string {
    if (!is_reduction(program, loop.label)) return "";
    bool sums_into_scalar = !scalars_assigned_outside(loop.body).empty();
    return sums_into_scalar && !stores_into(loop.body, program.output().values) ? "shuffle" : "atomic";
  };
  std::vector<ScheduleOp> ops;
  auto add = [&](decltype(ScheduleOp::op) op) { ops.push_back(make_op(std::move(op), static_cast<int>(ops.size()))); };
  std::string outer_strategy = strategy(*outer);
  if (outer_strategy == "shuffle") {  // the whole nest sums into one scalar: one warp's lanes share it
    add(BindOp{outer->label, "warp", "shuffle"});
    return ops;
  }
  // A blocked format's in-block loop (BSR's j_in) runs at most a block's width: most lanes of
  // a warp would idle on it.
  auto suits_lanes = [&](const For& loop) {
    const sparse::BlockedVar* blocked = program.blocked_loop(loop.label);
    return loop.annotations.sequential_reason.empty() && !(blocked && blocked->inner == loop.label) &&
           schedulable(program, loop.label) && labels_one_loop(func.body, loop.label);
  };
  // An interleaved ELL level's slots (decompose's "interleave") stay in one thread: consecutive
  // threads take consecutive rows, whose slots lie side by side, so each slot's loads coalesce.
  const For* lanes = nullptr;
  if (spine.size() > 1 && !is_reduction(program, outer->label)) {
    const For* inner = spine.back();
    if (inner->var == inner->label && suits_lanes(*inner)) lanes = inner;
    else if (strategy(*spine[1]) == "shuffle" && suits_lanes(*spine[1]) && !interleaved_walk(program, *spine[1])) lanes = spine[1];
  }
  std::string blocks = unused_name(func, program, outer->label + "0");
  std::string threads = unused_name(func, program, outer->label + "1");
  add(SplitOp{outer->label, lanes ? 4 : 128, blocks, threads});
  add(BindOp{blocks, "blockIdx.x", outer_strategy});
  add(BindOp{threads, lanes ? "threadIdx.y" : "threadIdx.x", outer_strategy});
  if (lanes) add(BindOp{lanes->label, "warp", strategy(*lanes)});
  return ops;
}

// Whether each iteration of `loop` is one walk over a sparse level (SpMV's row): the loops inside
// it walk stored coordinates (none counts its coordinates) and none is nested in another.
bool one_sparse_walk_per_row(const For& loop) {
  FindLoops finder;
  finder.visit(loop.body);
  return !finder.found.empty() && std::all_of(finder.found.begin(), finder.found.end(), [](const LoopInfo& info) {
    return info.loop->var != info.loop->label && info.enclosing.empty();
  });
}

// cpu: a dense free loop (not the outermost) whose body sums over a sparse level into one scalar
// per iteration, in the shape `precompute` keeps in a register tile (SpMM's k after
// auto_reorder); or over one dense loop, or two nested dense loops that `fuse` makes one (a dense
// contraction after auto_reorder: RGCN's factored Y = T W). `sums`: the two loops to fuse first.
struct RegisterTile {
  const For* loop = nullptr;
  std::vector<const For*> sums;
};
RegisterTile register_tile_loop(const LoweredFunc& func, const sparse::Program& program, const std::vector<const For*>& spine) {
  auto dense_sum = [&](const For* loop) {
    return loop && loop->var == loop->label && is_reduction(program, loop->label) && loop->annotations.sequential_reason.empty() &&
           schedulable(program, loop->label) && labels_one_loop(func.body, loop->label);
  };
  for (size_t d = 1; d < spine.size(); ++d) {
    const For& loop = *spine[d];
    if (loop.var != loop.label || is_reduction(program, loop.label) || !loop.annotations.sequential_reason.empty() ||
        !schedulable(program, loop.label) || !labels_one_loop(func.body, loop.label) || !precompute_refusal(loop).empty())
      continue;
    // A block's rows (BSR's i_in): a few, held across the walk over the blocks by hold_block_sums.
    if (const sparse::BlockedVar* blocked = program.blocked_loop(loop.label); blocked && blocked->inner == loop.label) continue;
    const For* summing = d + 1 < spine.size() ? spine[d + 1] : nullptr;
    if (summing && summing->var != summing->label && is_reduction(program, summing->label)) return {&loop, {}};
    // A dense sum, the innermost loop or around one more that is.
    const For* inner = d + 2 < spine.size() ? spine[d + 2] : nullptr;
    if (dense_sum(summing) && d + 2 == spine.size() && !contains_loop(summing->body)) return {&loop, {}};
    if (dense_sum(summing) && dense_sum(inner) && d + 3 == spine.size() && !contains_loop(inner->body)) return {&loop, {summing, inner}};
  }
  return {};
}

}  // namespace

std::optional<ScheduleOp> auto_reorder(const sparse::Program& program, const Config& config) {
  const sparse::SparseIteration& it = program.iteration;
  if (config.target != Target::Cpu || it.iterators.size() < 2 || !it.fusions.empty() || !it.added_parts.empty() ||
      !program.blocked_vars.empty())
    return std::nullopt;
  const sparse::SparseBuffer& output = program.output();
  const std::string& free = it.iterators.back().var;
  if (it.iterators.back().is_reduction || !output.format.is_row_major_dense() || output.indices.empty() || output.indices.back() != free ||
      !only_dense_levels_store(program, free) || register_tile_width(program, config, free) == 0)
    return std::nullopt;
  // The sums right before the free index: every one of the iteration's.
  size_t sums = 0;
  while (sums + 1 < it.iterators.size() && it.iterators[it.iterators.size() - 2 - sums].is_reduction) ++sums;
  const size_t all_sums = static_cast<size_t>(
      std::count_if(it.iterators.begin(), it.iterators.end(), [](const sparse::Iterator& i) { return i.is_reduction; }));
  if (sums == 0 || sums != all_sums) return std::nullopt;
  const std::string& summed = it.iterators[it.iterators.size() - 2].var;
  ReorderOp reorder;
  for (const sparse::Iterator& i : it.iterators) reorder.order.push_back(i.var);
  // A sparse sum (SpMM's j): the free index moves outside it. Under sums over sparse levels
  // (MTTKRP over CSF's k and l), outside the innermost only: the tile sums one walk, and the
  // factors of the outer sums' indices (C(k,j)) multiply it once per walk, not once per entry.
  auto sparse_sum = [&](size_t from_back) {
    return !only_dense_levels_store(program, it.iterators[it.iterators.size() - 2 - from_back].var);
  };
  bool all_sparse = true;
  for (size_t s = 0; s < sums; ++s) all_sparse = all_sparse && sparse_sum(s);
  if (all_sparse) {
    std::swap(reorder.order[reorder.order.size() - 1], reorder.order[reorder.order.size() - 2]);
    return make_op(reorder, 0,
                   free + " outside the sum over " + summed + ", for a register tile of the output's row" +
                       (sums > 1 ? " (the factors of the outer sums' indices then multiply the tile once per walk over " + summed + ")"
                                 : std::string()));
  }
  // One or two dense sums (a dense contraction: RGCN's factored T W): the free index moves outside
  // them all (stage II fuses two into one loop for the tile).
  const std::vector<sparse::Iterator> dense(it.iterators.end() - 1 - static_cast<std::ptrdiff_t>(sums), it.iterators.end() - 1);
  if (sums > 2 || !std::all_of(dense.begin(), dense.end(), [&](const sparse::Iterator& i) { return only_dense_levels_store(program, i.var); }))
    return std::nullopt;
  reorder.order.pop_back();
  reorder.order.insert(reorder.order.end() - static_cast<std::ptrdiff_t>(sums), free);
  std::string names;
  for (const sparse::Iterator& i : dense) names += (names.empty() ? "" : " and ") + i.var;
  return make_op(reorder, 0, free + " outside the dense sum" + (sums > 1 ? "s" : "") + " over " + names + ", for a register tile of the output's row");
}

namespace {

// The outermost loop iterates an output index, one loop of that label, and keeps no lists of a
// listed output's entries: it may run in parallel where nothing else keeps it sequential.
bool outer_spatial(const LoweredFunc& func, const sparse::Program& program, const For& outer) {
  return !is_reduction(program, outer.label) && outer.annotations.listed.keys.empty() && labels_one_loop(func.body, outer.label);
}

// A row's walk over a sparse level that sums into a scalar (SpMV's j), under a parallel-ready
// row loop: the loop `auto` keeps in lanes, or null.
const For* row_sum_walk(const LoweredFunc& func, const sparse::Program& program, const Config& config) {
  std::vector<const For*> spine = loop_spine(func.body);
  if (config.target != Target::Cpu || spine.size() != 2) return nullptr;
  const For& outer = *spine.front();
  const For& walk = *spine.back();
  const bool outer_parallel_ok = outer_spatial(func, program, outer) && outer.annotations.sequential_reason.empty();
  if (!outer_parallel_ok || !one_sparse_walk_per_row(outer) || walk.var == walk.label || !is_reduction(program, walk.label) ||
      contains_loop(walk.body) || !walk.annotations.sequential_reason.empty() || !schedulable(program, walk.label) ||
      stores_into(walk.body, program.output().values) || scalars_assigned_outside(walk.body).empty())
    return nullptr;
  return &walk;
}

// A row's sum over a sparse level: 8 lanes, for float32 one 256-bit vector; 16 lanes measured
// 1.09x slower (geomean of 8 matrices, 1.13-1.20x on rows of 15-78 entries, equal on rows of 3-4:
// bench/RESULTS.md, session 26). Doubles too: 4 lanes ran 1.07-1.09x faster on MIT8 and bcsstk16
// but 1.08x and 1.33x slower on ego-facebook and wing.
constexpr int64_t kRowSumLanes = 8;

// Without statistics, the SpMV row loop checks the same on each call from its row positions
// ("even_rows": static or dynamic 512; 2 threads: cora 1.38x, wing 1.10x, MIT8 and bcsstk16
// 1.03x over dynamic 512, astro-ph left dynamic, ego-facebook 0.97x: bench/RESULTS.md, session
// 28). A static split of the rows, where the statistics show equal row blocks holding nearly equal
// entries: each thread then walks contiguous rows, with no chunk to claim (SpMV in 8 lanes,
// 2 threads: static ran 1.05-1.23x faster than dynamic 512 on 7 of the 8 matrices of
// ../shared/data, and 1.18x slower on astro-ph, whose halves hold 1.35x of even: bench/RESULTS.md,
// session 26). The blocks of 2, 4 and 8 threads must all lie within this of even, so that the
// kernel serves up to 8 threads.
constexpr double kEvenSplit = 1.15;

// The interleaved ELL level (decompose's "interleave") that a row's sum walks, directly under
// the rows' loop: SpMV's j over a hyb bucket stored SELL-C. Null elsewhere.
const sparse::Axis* interleaved_row_sum(const LoweredFunc& func, const sparse::Program& program, const std::vector<const For*>& spine) {
  if (spine.size() != 2) return nullptr;
  const For& walk = *spine[1];
  if (walk.var == walk.label || !is_reduction(program, walk.label) || contains_loop(walk.body) ||
      !walk.annotations.sequential_reason.empty() || stores_into(walk.body, program.output().values) ||
      scalars_assigned_outside(walk.body).empty() || !labels_one_loop(func.body, spine[0]->label) ||
      !precompute_body_refusal(*spine[0]).empty())
    return nullptr;
  return interleaved_walk(program, walk);
}

// What the statistics of the walked input say of a static split: `even` where its blocks lie
// within kEvenSplit; `why` empty without statistics.
struct RowSplit {
  bool even = false;
  std::string why;
};
// The compressed level a walk over stored positions iterates (its loop says whose), or null.
const sparse::Axis* walked_axis(const sparse::Program& program, const For& walk) {
  if (walk.var == walk.label) return nullptr;
  for (const sparse::Axis& axis : program.axes)
    if (axis.index_var == walk.label && axis.tensor == walk.annotations.walks && axis.kind == sparse::AxisKind::SparseVariable)
      return &axis;
  return nullptr;
}

RowSplit static_row_split(const sparse::Program& program, const Config& config, const For& walk) {
  const sparse::Axis* axis = walked_axis(program, walk);
  if (!axis) return {};
  auto stats = config.stats.find(axis->tensor);
  if (stats == config.stats.end() || stats->second.static_split_imbalance <= 0) return {};
  char within[32];
  std::snprintf(within, sizeof within, "%.2f", stats->second.static_split_imbalance);
  const bool even = stats->second.static_split_imbalance <= kEvenSplit;
  return {even, "equal blocks of " + axis->tensor + "'s rows (2, 4, 8) hold " + (even ? "within " : "up to ") + within +
                    "x of even entries"};
}

// Rows of a dense operand that nearby stored entries read are "near" when the mean distance
// between an entry's row and column (|i - j|, in rows of that operand) spans less than this many
// bytes: they stay in the caches and the hardware prefetcher follows them, so a prefetch only
// costs (bench/RESULTS.md, session 25: bcsstk16, 9.9 and 39 KiB, lost 1.29x and 1.15x with it;
// ego-facebook at 37 KiB lost 1.06x and at 148 KiB gained 1.30x).
constexpr double kNearRowsBytes = 64 * 1024;

// The stored-entry walk `walk` reads a row of a dense operand at each coordinate (SDDMM's B(j, :)
// in the walk over X's row i): `prefetch` of those rows 8 entries ahead, unless the statistics
// of the walked input show its rows read near one another. Without statistics the rows are
// assumed far apart, as in the graphs of GNNs. Null where no such operand is read.
std::optional<std::pair<PrefetchOp, std::string>> auto_prefetch(const LoweredFunc& func, const sparse::Program& program,
                                                                const Config& config, const For& walk) {
  const sparse::Axis* walked = walked_axis(program, walk);
  if (!walked) return std::nullopt;
  for (const sparse::SparseBuffer& rows : program.buffers) {
    if (&rows == &program.output() || rows.format.levels.size() < 2 || !rows.format.all_dense() ||
        rows.indices[static_cast<size_t>(rows.format.mode_order[0])] != walk.label ||
        !prefetch_refusal(func, program, rows.tensor, walk.label).empty())
      continue;
    double row_bytes = program.value_type == ValueType::Float64 ? 8 : 4;
    std::string width;
    for (size_t l = 1; l < rows.format.levels.size(); ++l) {
      const std::string& index = rows.indices[static_cast<size_t>(rows.format.mode_order[l])];
      auto fixed = config.sizes.find(index);
      row_bytes *= static_cast<double>(fixed != config.sizes.end() ? fixed->second : kAssumedFeatureWidth);
      if (fixed == config.sizes.end()) width = ", " + index + " taken as " + std::to_string(kAssumedFeatureWidth);
    }
    PrefetchOp prefetch{rows.tensor, walk.label, 8};
    const std::string what = "the rows of " + rows.tensor + " read at " + walked->tensor + "'s coordinates";
    auto stats = config.stats.find(walked->tensor);
    if (stats == config.stats.end())
      return std::make_pair(prefetch, what + " assumed far apart (no statistics of " + walked->tensor +
                                          ": --stats): each fetched 8 stored entries ahead");
    const double reach = stats->second.bandwidth_mean * row_bytes;
    const std::string measured = walked->tensor + "'s mean |i - j| " + std::to_string(std::llround(stats->second.bandwidth_mean)) +
                                 " rows of " + std::to_string(std::llround(row_bytes)) + " bytes" + width + ": " +
                                 std::to_string(std::llround(reach / 1024)) + " KiB";
    if (reach < kNearRowsBytes) return std::nullopt;
    return std::make_pair(prefetch, what + " lie far apart (" + measured + "): each fetched 8 stored entries ahead");
  }
  return std::nullopt;
}

// The walk over stored entries (SDDMM's j) runs several at a time: their dot products finish in
// one transposing tree and share each load of A's row (`batch` by the dot products' length:
// batch_factor; on rows of 16 entries or more on average). Measured against one at a time,
// 1.06-1.25x on rows of 40 entries and more, 0.95-1.03x on rows of 4 (bench/RESULTS.md,
// session 32).
// Null where a fixed length is shorter than the lanes, or the iterations may not run together.
std::optional<std::pair<BatchOp, std::string>> auto_batch(const LoweredFunc& func, const sparse::Program& program,
                                                          const Config& config, const For& walk, const For& dot, int64_t lanes) {
  auto fixed = config.sizes.find(dot.var);
  if ((fixed != config.sizes.end() && fixed->second < lanes) || !walked_axis(program, walk) ||
      !batch_refusal(func, walk.label).empty())
    return std::nullopt;
  return std::make_pair(BatchOp{walk.label, 0}, "where rows hold " + std::to_string(kShortestBatched) +
                                                    " entries or more on average, 4 at a time (2 where a dot product is fixed above " +
                                                    std::to_string(kLongestBatchedBy4) + " bytes), their dot products finished by one transposing tree");
}

}  // namespace

std::vector<ScheduleOp> auto_schedule(const LoweredFunc& func, const sparse::Program& program, const Config& config) {
  std::vector<ScheduleOp> ops;
  std::vector<const For*> spine = loop_spine(func.body);
  if (spine.empty()) return ops;
  if (config.target == Target::Cuda) return auto_schedule_cuda(func, program, spine);
  auto add = [&](decltype(ScheduleOp::op) op, std::string reason) {
    ops.push_back(make_op(std::move(op), static_cast<int>(ops.size()), std::move(reason)));
  };
  const For* outer = spine.front();
  // A listed output's outer loop stays sequential: its per-thread lists and their join cost more
  // than the loop saves while the sort after it is sequential (docs/formats.md, listed outputs).
  const bool spatial = outer_spatial(func, program, *outer);
  bool outer_parallel_ok = spatial && outer->annotations.sequential_reason.empty();
  // Rows of an interleaved ELL level in its groups' lanes: a tile of C rows is a group of the
  // storage, so each slot's C columns and values are contiguous loads and only x is gathered
  // (SELL-C; bench/RESULTS.md, session 28). The rows of one hyb bucket cost about the same:
  // static. Where rows repeat (the widest bucket's pieces), each lane's sum is added atomically.
  if (const sparse::Axis* interleaved = interleaved_row_sum(func, program, spine); interleaved && spatial) {
    const int64_t lanes = interleaved->interleave;
    const std::string groups = unused_name(func, program, outer->label + "_group");
    const std::string lane = unused_name(func, program, outer->label + "_lane");
    add(TileOp{outer->label, lanes, groups, lane}, "the rows in groups of " + std::to_string(lanes) + ", as " + interleaved->tensor + " stores them");
    add(PrecomputeOp{lane}, "a row's sum per lane, across the walk over the group's slots");
    add(VectorizeOp{lane, 0}, "a slot of the group's rows at once: contiguous columns and values");
    if (outer->annotations.sequential_reason.empty())
      add(ParallelOp{groups, OmpSchedule::Static, 0, {}, {}, 0}, "race-free groups of rows of about equal length");
    else if (outer->annotations.repeats_coordinates)
      add(ParallelOp{groups, OmpSchedule::Static, 0, "atomic", {}, 0}, "rows that repeat (cut into pieces): each lane's sum added atomically");
    return ops;
  }
  // A row's sum over a csr level (SpMV), which the masked lanes below take.
  const For* walk = row_sum_walk(func, program, config);
  // (A row's max or min takes no masked tail: a plain simd loop, below.)
  const bool row_extremum = program.iteration.reduction != ast::Reduction::Sum;
  if (walk && !row_extremum && !plan_masked_tail(*walk, program).refusal.empty()) walk = nullptr;
  // Dynamic, for skewed rows, in chunks large enough that taking one costs little beside its
  // rows (bench/RESULTS.md, session 18): 512 rows where a row is one walk over a sparse level
  // (SpMV: chunks of 64 measured 1.31x, of 512 1.19x of each matrix's best schedule), else 128
  // (SpMM's register tile: chunks of 16 measured 1.78x of 128's time at N = 32). Static where the
  // statistics show SpMV's rows split evenly (static_row_split).
  if (outer_parallel_ok) {
    const bool light_rows = one_sparse_walk_per_row(*outer);
    const RowSplit split = walk ? static_row_split(program, config, *walk) : RowSplit{};
    if (split.even)
      add(ParallelOp{outer->label, OmpSchedule::Static, 0, {}, {}, 0}, "race-free outer loop; static: " + split.why);
    else if (walk && split.why.empty() && !rows_positions(program, *outer).empty())
      add(ParallelOp{outer->label, OmpSchedule::EvenRows, 512, {}, {}, 0},
          "race-free outer loop; static where the rows' positions show them even (checked on each call), else dynamic "
          "in large chunks: a row is one sparse walk");
    else
      add(ParallelOp{outer->label, OmpSchedule::Dynamic, light_rows ? 512 : 128, {}, {}, 0},
          std::string(light_rows ? "race-free outer loop; dynamic in large chunks: a row is one sparse walk"
                                 : "race-free outer loop; dynamic for skewed rows") +
              (split.why.empty() ? "" : " (" + split.why + ")"));
  }
  // Rows that repeat (hyb's widest bucket, whose long rows are cut into pieces): where each
  // iteration sums its piece in a walk of its own and adds it into the output once, one atomic
  // add per piece costs little beside it. (COO's entries, an add each, are split at runs below.)
  auto sums_then_adds_once = [&](const For& rows) {
    FindLoops walks;
    walks.visit(rows.body);
    return one_sparse_walk_per_row(rows) && std::none_of(walks.found.begin(), walks.found.end(), [&](const LoopInfo& w) {
             return stores_into(w.loop->body, program.output().values);
           });
  };
  if (!outer_parallel_ok && spatial && outer->annotations.repeats_coordinates && sums_then_adds_once(*outer))
    add(ParallelOp{outer->label, OmpSchedule::Dynamic, 128, "atomic", {}, 0},
        "rows that repeat (cut into pieces): each piece's sum added atomically");
  // COO's entries, in runs of equal rows, into a dense output: one part per thread of equal
  // entries, each begun at a run, so that each thread owns its rows whole and adds without atomics.
  else if (!outer_parallel_ok && spatial && outer->annotations.repeats_coordinates && program.output().format.all_dense() &&
           !runs_coordinates(program, *outer).empty() && !is_reduction(program, outer->label))
    add(ParallelOp{outer->label, OmpSchedule::Static, 0, {}, "nonzeros", 0},
        "entries in runs of equal " + outer->label + " (a non-unique level): a part of equal entries per thread, each begun at a "
        "run, so each thread owns its rows whole");
  // A register tile: the free loop in tiles of a few vectors, each tile's sums kept across the
  // sparse sum and written once.
  if (const RegisterTile tile = register_tile_loop(func, program, spine); tile.loop) {
    const For* tiled = tile.loop;
    if (!tile.sums.empty())
      add(FuseOp{{tile.sums[0]->label, tile.sums[1]->label}, unused_name(func, program, tile.sums[0]->label + tile.sums[1]->label)},
          "the two sums as one loop, for the tile to stay in registers across both");
    const int64_t width = register_tile_width(program, config, tiled->label);
    const std::string tiles = unused_name(func, program, tiled->label + "0");
    const std::string in_tile = unused_name(func, program, tiled->label + "1");
    add(TileOp{tiled->label, width, tiles, in_tile}, std::to_string(width) + " columns of the output's row at a time");
    add(PrecomputeOp{in_tile}, "their sums stay in registers across the sum");
    add(VectorizeOp{in_tile, 0}, "vector registers");
    return ops;
  }
  // A row's sum over a csr level (SpMV) in lanes, the rest of each row, and all of a short one,
  // in one masked sum: no branch ends a row at an unpredictable point (bench/RESULTS.md, session 24).
  if (walk && row_extremum) {
    add(VectorizeOp{walk->label, 0}, std::string("the row's ") + ast::reduction_name(program.iteration.reduction) +
                                         " in a simd loop (OpenMP's reduction(" + ast::reduction_name(program.iteration.reduction) + ": ...))");
    return ops;
  }
  if (walk) {
    const int64_t lanes = kRowSumLanes;
    add(VectorizeOp{walk->label, lanes, true},
        "the row's sum in " + std::to_string(lanes) + " lanes; the rest of a row, and a short row, in one masked sum");
    return ops;
  }
  const For* inner = spine.back();
  bool dense_loop = inner->var == inner->label;
  bool sums_into_output = is_reduction(program, inner->label) && stores_into(inner->body, program.output().values);
  bool innermost = !contains_loop(inner->body) && inner->annotations.sequential_reason.empty();
  if (inner == outer || !dense_loop || !innermost || sums_into_output || !schedulable(program, inner->label) ||
      !labels_one_loop(func.body, inner->label))
    return ops;
  // A blocked format's in-block loop (BSR's j_in) runs a block's few columns: the compiler
  // unrolls it; lanes or a simd loop around so short a sum cost more than it (bcsstk16, bsr 4x4:
  // 2.4x and 1.6x slower; bench/RESULTS.md, session 27).
  if (const sparse::BlockedVar* blocked = program.blocked_loop(inner->label); blocked && blocked->inner == inner->label)
    return ops;
  // A dot product (SDDMM's k) sums in lanes, added in registers after the loop; another innermost
  // dense loop (contiguous accesses) is vectorized as it is.
  if (is_reduction(program, inner->label) && !scalars_assigned_outside(inner->body).empty()) {
    const int64_t lanes = program.value_type == ValueType::Float64 ? 8 : 16;
    add(VectorizeOp{inner->label, lanes}, "a dot product: " + std::to_string(lanes) + " partial sums in vector registers");
    if (spine.size() >= 2) {
      if (auto prefetch = auto_prefetch(func, program, config, *spine[spine.size() - 2])) add(prefetch->first, prefetch->second);
      if (auto batch = auto_batch(func, program, config, *spine[spine.size() - 2], *inner, lanes)) add(batch->first, batch->second);
    }
  } else {
    add(VectorizeOp{inner->label, 0}, "innermost dense loop");
  }
  return ops;
}

}  // namespace spgen
