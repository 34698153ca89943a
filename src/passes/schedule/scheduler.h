// The scheduler of pass 6 (schedule_loops.h): one object per kernel, which applies the ops in
// turn. Its ops are defined by kind: schedule_loops.cpp (finding loops, names, finishing),
// schedule/loop_ops.cpp (split, tile, precompute, reorder, fuse), schedule/parallel_ops.cpp
// (parallel, vectorize, unroll, bind and the ops applied at the end) and schedule/balance_ops.cpp
// (parallel's balanced parts).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/loop_ir_visitor.h"
#include "ir/sparse_ir.h"
#include "passes/gpu_bindings.h"
#include "passes/schedule_loops.h"

namespace spgen::scheduling {

using namespace loops;

// The body `precompute` turns into a register tile: declarations, the sum starting at zero, the
// loop that only adds into it (and stores nothing), then plain stores of it. `refusal` says why
// a loop's body is not of that shape (empty when it is).
struct PrecomputeShape {
  std::vector<Stmt> lets, after;
  const Declare* sum = nullptr;
  const For* summing = nullptr;
  std::set<std::string> depends_on_loop;  // the loop's variable and the declarations after it
  // The summing loop's range starts where the loop's iteration says but runs a trip count that
  // does not depend on it (ELL's slots of a row: [p * W, p * W + W)): the count, else null.
  Expr invariant_trips;
  // The summing loop's end, read where it stands, depends on the loop only through arithmetic
  // that a tile made plain (a SELL slice's slots, the same for the lanes of a group): that end
  // as it reads outside the loop, else null. Found only where precompute_shape has `scope`.
  Expr folded_end;
  std::string refusal;
  bool refused_for_bounds = false;  // `refusal` is about the summing loop's bounds
};

std::vector<std::string> merge_loop_labels(const Stmt& stmt);
bool has_store(const Stmt& stmt);
bool is_zero(const Expr& expr);
bool only_accumulates(const Stmt& body, const std::string& scalar);
// `scope`: the function body holding `loop`, where the summing loop's bounds may be folded.
PrecomputeShape precompute_shape(const For& loop, const Stmt* scope = nullptr);

class Scheduler {
 public:
  Scheduler(LoweredFunc& func, const sparse::Program& program, const Config& config)
      : func_(func), program_(program), config_(config) {
    for (const sparse::Iterator& it : program.iteration.iterators) origin_[it.var] = it.var;
    // A fused loop races when either of its variables is summed: it stands for that one.
    for (const sparse::Fusion& f : program.iteration.fusions) origin_[f.into] = is_reduction(f.outer) ? f.outer : f.inner;
    for (const LoopInfo& info : loops())
      if (info.loop->var != info.loop->label) positional_.insert(info.loop->label);
  }
  bool has_loops_named_by(const ScheduleOp& op) const;
  void apply(const ScheduleOp& op);
  void finish();

 private:
  // Finding loops, fresh names (schedule_loops.cpp).
  [[noreturn]] void fail(const std::string& message) const;
  std::vector<LoopInfo> loops() const;
  LoopInfo find(const std::string& label) const;
  static std::string unscheduled_nest_text();
  std::string main_loop_labels() const;
  bool is_reduction(const std::string& label) const;
  void set_annotations(const std::string& label, const std::function<void(LoopAnnotations&)>& change);
  std::string fresh(const std::string& wanted);
  void check_new_name(const std::string& name) const;

  // The ops that make and move loops (schedule/loop_ops.cpp).
  void apply_op(const DecomposeOp&);
  void apply_op(const SplitOp& split);
  // Where tile_loop puts the loop's range: its first iteration, its trip count, and how many of
  // the returned statements declare them (bounds that read memory are read once).
  struct TiledBounds {
    Expr begin, extent;
    int declared = 0;
  };
  std::vector<Stmt> tile_loop(const For& loop, int64_t factor, const std::string& outer, const std::string& inner,
                              const std::string& rest, const Stmt& main_body, const LoopAnnotations& inner_annotations,
                              TiledBounds* bounds = nullptr, const LoopAnnotations& outer_annotations = {});
  // What keeps a loop sequential (cursors it advances, coordinates that repeat), for the loops
  // a split or tile makes of it.
  LoopAnnotations kept_sequential(const For& loop) const;
  void apply_op(const TileOp& tile);
  void apply_op(const PrecomputeOp& precompute);
  static std::vector<Stmt> lets_read_by(const std::vector<Stmt>& lets, const std::vector<Stmt>& stmts);
  static std::set<std::string> names_read(const Stmt& stmt);
  void apply_op(const ReorderOp& reorder);
  Stmt outermost_stmt(const For* loop) const;
  static bool all_bound(const Expr& expr, const std::set<std::string>& bound);
  void apply_op(const FuseOp& fuse);

  // The ops that run loops in parallel, in lanes or on the GPU grid, and those applied in
  // finish() (schedule/parallel_ops.cpp).
  bool has_workspace() const;
  void refuse_sequential(const LoopInfo& info, const char* action) const;
  void apply_op(const ParallelOp& parallel);
  void refuse_overwrites(const For& loop) const;
  Stmt listed_per_thread(const For& loop);
  Stmt privatized(const Stmt& loop, const std::string& copy);
  // Balanced parts (schedule/balance_ops.cpp).
  std::string balanced_rows_positions(const For& loop, const std::string& balance) const;
  Stmt balance_by_nonzeros(const For& loop, const Stmt& body, LoopAnnotations annotations, int64_t parts);
  Stmt balance_by_runs(const For& loop, const Stmt& body, LoopAnnotations annotations, int64_t parts);
  Stmt balance_by_merge_path(const For& loop, const Stmt& body, LoopAnnotations annotations, int64_t parts);
  std::string merge_path_refusal(const For& loop, const std::string& pos) const;
  void cut_rows();
  // The parts a balanced loop is cut into: `parts` of them, or (0) one per thread, the count read
  // once before the loop over them (loop_over_parts).
  struct BalancedParts {
    int64_t fixed = 0;       // `parts`, or 0
    std::string per_thread;  // ... else the count's variable
    Expr count;
    std::string described;   // "8", or "i_parts (one per thread)"
  };
  BalancedParts balanced_parts(const std::string& row, int64_t parts);
  Stmt loop_over_parts(const std::string& part, const BalancedParts& parts, std::vector<Stmt> body, const LoopAnnotations& annotations) const;
  std::string row_positions(const For& loop) const;
  void apply_op(const VectorizeOp& vectorize);
  void check_cuda_vectorize(const VectorizeOp& vectorize, const For& loop) const;
  void vectorize_in_lanes(const For& loop, int64_t lanes, const std::vector<std::string>& scalars, bool masked_tail);
  Expr masked_tail_limit(const For& loop) const;
  const Declare* find_declare(const std::string& name) const;
  static Expr zero_of(ScalarType type);
  bool writes_output(const For& loop) const;
  static std::vector<std::string> accumulated_scalars(const For& loop);
  // How a loop reduces `scalars`: by adding (also where none), or by max or min (a max reduction).
  BinOp reduction_combine(const For& loop, const std::vector<std::string>& scalars) const;
  void refuse_unroll_beside_openmp(const std::string& label, const char* openmp_kind) const;
  void apply_op(const UnrollOp& unroll);
  void apply_op(const BindOp& bind);
  bool has_loop(const std::string& label) const;
  void apply_op(const CacheOp& cache);
  void apply_op(const PrefetchOp&);
  void apply_op(const BatchOp&);

  LoweredFunc& func_;
  const sparse::Program& program_;
  const Config& config_;
  const ScheduleOp* op_ = nullptr;
  const ScheduleOp* cut_op_ = nullptr;  // a parallel op balanced by merge path, cut in finish()
  std::map<std::string, std::string> origin_;  // loop label → index variable it iterates
  std::set<std::string> positional_;           // loops over positions of a compressed level
  std::vector<GpuBinding> bindings_;           // bind ops, in the order they applied
  std::vector<const ScheduleOp*> cache_ops_;
  std::vector<const ScheduleOp*> prefetch_ops_;
  std::vector<const ScheduleOp*> batch_ops_;
  std::set<std::string> register_tile_loops_;  // the loops over a precompute's local array
  std::map<std::string, std::string> tile_rest_;  // a tile's outer loop → its remainder loop
  bool any_parallel_ = false;
};

}  // namespace spgen::scheduling
