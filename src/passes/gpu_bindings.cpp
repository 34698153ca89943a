#include "passes/gpu_bindings.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "ir/loop_ir_printer.h"
#include "ir/loop_ir_visitor.h"
#include "support/text.h"

namespace spgen {

using namespace loops;

namespace {

constexpr int64_t kWarpSize = 32;
// Threads of a thread-bound loop whose trip count has no constant bound (it strides): one warp,
// enough for coalesced accesses. Splitting the loop first chooses any other count.
constexpr int64_t kDefaultThreads = 32;
constexpr int64_t kZeroFillThreads = 256;
constexpr int64_t kMaxBlockThreads = 1024;  // every GPU since compute capability 2.0

bool is_zero_fill(const For& loop) { return loop.label.rfind("zero ", 0) == 0; }
// An assemble phase's prefix sum over the counts: each iteration adds the one before.
bool is_prefix_sum(const For& loop) { return loop.label.rfind("prefix sum", 0) == 0; }
bool runs_as_own_kernel(const For& loop) { return is_zero_fill(loop) || is_prefix_sum(loop) || loop.annotations.own_kernel; }

// A shuffle leaves a warp's sums in lane 0; a shared-memory reduction a block's in thread 0
// (threadIdx.x == 0 either way).
bool combines_in_one_thread(const LoopAnnotations& a) { return a.bind_reduction == "shuffle" || a.bind_reduction == "shared"; }

// Warp lanes are threadIdx.x: a warp-bound loop runs in blocks 32 threads wide.
std::string axis_of(const std::string& bind) { return bind == "warp" ? "threadIdx.x" : bind; }
bool on_threads(const std::string& bind) { return bind.rfind("blockIdx", 0) != 0; }

// A constant bound on a loop's trip count: `[0, c)`, or `[0, min(c, ...))` as split makes.
std::optional<int64_t> constant_trip_bound(const For& loop) {
  if (!is_const_int(loop.begin, 0)) return std::nullopt;
  if (loop.end->kind == ExprKind::IntImm) return static_cast<const IntImm&>(*loop.end).value;
  if (loop.end->kind == ExprKind::Binary) {
    const auto& min = static_cast<const Binary&>(*loop.end);
    if (min.op == BinOp::Min && min.a->kind == ExprKind::IntImm) return static_cast<const IntImm&>(*min.a).value;
  }
  return std::nullopt;
}

// An enclosing loop: a For, or a co-iteration While (loop == nullptr), which is never bound.
struct Scope {
  std::string label;
  const For* loop;
};

// The main nest as the checks see it: every loop and every store into the output, with the
// loops around it. The zero fill is left out: it is a kernel of its own.
class NestSnapshot : public IRVisitor {
 public:
  struct LoopSite {
    const For* loop;
    std::vector<Scope> enclosing;  // outermost first
    const Block* parent;           // the block that holds the loop directly, if any
  };
  struct StoreSite {
    const Store* store;
    std::vector<Scope> enclosing;
    bool after_shuffle;  // follows a shuffle-reduced loop in its block: only lane 0 will run it
    bool listed;         // into an entry list, at a slot of its own (an atomic cursor's)
  };

  // `output`: the arrays of the output that the nest writes (values; positions and coordinates
  // where it assembles a sparse output).
  explicit NestSnapshot(std::set<std::string> output) : output_(std::move(output)) {}
  std::vector<LoopSite> loops;
  std::vector<StoreSite> stores;
  std::set<std::string> lists;  // entry lists: each entry stored once, by whichever thread lists it

 protected:
  void visit_block(const Block& node) override {
    bool after_shuffle = after_shuffle_;
    for (const Stmt& s : node.stmts) {
      parent_ = &node;
      visit(s);
      if (const For* loop = as_for(s); loop && combines_in_one_thread(loop->annotations)) after_shuffle_ = true;
    }
    after_shuffle_ = after_shuffle;
  }
  void visit_for(const For& node) override {
    if (stack_.empty() && runs_as_own_kernel(node)) return;
    loops.push_back({&node, stack_, parent_});
    enter({node.label, &node}, [&] { IRVisitor::visit_for(node); });
  }
  void visit_while(const While& node) override {
    enter({node.label, nullptr}, [&] { IRVisitor::visit_while(node); });
  }
  void visit_if(const If& node) override {
    parent_ = nullptr;
    IRVisitor::visit_if(node);
  }
  void visit_store(const Store& node) override {
    if (output_.count(node.buffer) || lists.count(node.buffer))
      stores.push_back({&node, stack_, after_shuffle_, lists.count(node.buffer) > 0});
  }
  // An output's entry list (lower_to_loops.cpp, list_and_pack): what follows its sort (summing
  // repeats, packing) is bound there already, in kernels of its own (cuda_backend.cpp); the loops
  // that list the entries are the nest.
  void visit_allocate(const Allocate& node) override {
    if (std::none_of(node.buffers.begin(), node.buffers.end(), [](const Workspace& w) { return w.growable; }))
      return IRVisitor::visit_allocate(node);
    for (const Workspace& w : node.buffers) lists.insert(w.name);
    const Block* block = node.body->kind == StmtKind::Block ? static_cast<const Block*>(node.body.get()) : nullptr;
    for (const Stmt& s : statements_of(node.body)) {
      if (s->kind == StmtKind::Sort) break;
      parent_ = block;
      visit(s);
    }
  }

 private:
  void enter(Scope scope, const std::function<void()>& visit_children) {
    parent_ = nullptr;
    stack_.push_back(std::move(scope));
    visit_children();
    stack_.pop_back();
  }

  std::set<std::string> output_;
  std::vector<Scope> stack_;
  const Block* parent_ = nullptr;
  bool after_shuffle_ = false;
};

// Gives the loops it names (by label) new annotations.
class SetAnnotations : public IRMutator {
 public:
  explicit SetAnnotations(std::map<std::string, LoopAnnotations> annotations) : annotations_(std::move(annotations)) {}

 protected:
  Stmt mutate_for(const For& node, const Stmt& self) override {
    Stmt visited = IRMutator::mutate_for(node, self);
    auto annotations = annotations_.find(node.label);
    if (annotations == annotations_.end()) return visited;
    const auto& loop = static_cast<const For&>(*visited);
    return std::make_shared<For>(loop.label, loop.var, loop.begin, loop.end, loop.body, annotations->second);
  }

 private:
  std::map<std::string, LoopAnnotations> annotations_;
};

// After a shuffle-reduced loop only lane 0 holds the sums (thread 0 after a shared-memory
// reduction), so the statements that follow it in its block (the stores of those sums) run there alone.
class GuardLanesAfterShuffle : public IRMutator {
 protected:
  Stmt mutate_block(const Block& node, const Stmt& self) override {
    Stmt visited = IRMutator::mutate_block(node, self);
    const std::vector<Stmt>& stmts = static_cast<const Block&>(*visited).stmts;
    for (size_t k = 0; k + 1 < stmts.size(); ++k) {
      const For* loop = as_for(stmts[k]);
      if (!loop || !combines_in_one_thread(loop->annotations)) continue;
      std::vector<Stmt> guarded(stmts.begin(), stmts.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      bool shuffle = loop->annotations.bind_reduction == "shuffle";
      const bool sums = loop->annotations.bind_combine == BinOp::Add;
      guarded.push_back(std::make_shared<Comment>(shuffle ? std::string("lane 0 holds the warp's ") + (sums ? "sums" : "result")
                                                          : "thread 0 holds the block's sums"));
      Expr lane_zero = binary(BinOp::Eq, var("threadIdx.x"), int64(0));
      guarded.push_back(std::make_shared<If>(
          lane_zero, block(std::vector<Stmt>(stmts.begin() + static_cast<std::ptrdiff_t>(k) + 1, stmts.end())), nullptr));
      return block(std::move(guarded));
    }
    return visited;
  }
};

class GpuBindings {
 public:
  GpuBindings(LoweredFunc& func, const sparse::Program& program, const Config& config,
              const std::vector<GpuBinding>& bindings, const LoopOrigins& origins)
      : func_(func), program_(program), config_(config), bindings_(bindings), origins_(origins),
        output_(program.output().tensor) {}

  void run() {
    std::set<std::string> output_arrays = {program_.output().values};
    for (const Param& p : func_.params)
      if (p.tensor == output_ && p.is_array && !p.is_const) output_arrays.insert(p.name);
    NestSnapshot nest(output_arrays);
    nest.visit(func_.body);
    lists_ = nest.lists;
    std::map<std::string, LoopAnnotations> completed;
    for (const GpuBinding& b : bindings_)
      if (!has_site(nest, b.label))  // (the snapshot leaves out the loops of kernels of their own)
        fail(b, "loop " + b.label + " is in a nest that lists entries of " + output_ + " in kernels of its own, its outer loop "
                    "spread over the grid (an added part of the sum, or the first term's nest where a part has a loop "
                    "of its outer loop's label), which no op binds");
    for (const GpuBinding& b : bindings_) {
      const NestSnapshot::LoopSite& site = site_of(nest, b.label);
      completed[b.label] = site.loop->annotations;
      completed[b.label].bind_scalars = check_reduction(b, site);
      completed[b.label].bind_combine = combine_of(b, site, completed[b.label].bind_scalars);
    }
    check_axes();
    for (const auto& [label, threads] : thread_counts(nest)) completed[label].bind_threads = threads;
    for (const GpuBinding& b : bindings_)
      if (!b.remainder.empty()) {
        completed[b.remainder] = site_of(nest, b.remainder).loop->annotations;
        completed[b.remainder].bind_threads = completed[b.label].bind_threads;
      }
    for (const NestSnapshot::StoreSite& site : nest.stores) check_store(site);
    func_.body = SetAnnotations(std::move(completed)).mutate(func_.body);
    func_.body = GuardLanesAfterShuffle().mutate(func_.body);
    bind_zero_fill();
  }

 private:
  [[noreturn]] void fail(const GpuBinding& b, const std::string& message) const {
    fail_schedule_op(config_, *b.op, message);
  }

  const GpuBinding& binding_of(const std::string& label) const {
    return *std::find_if(bindings_.begin(), bindings_.end(), [&](const GpuBinding& b) { return b.label == label; });
  }

  static bool has_site(const NestSnapshot& nest, const std::string& label) {
    return std::any_of(nest.loops.begin(), nest.loops.end(), [&](const NestSnapshot::LoopSite& s) { return s.loop->label == label; });
  }

  static const NestSnapshot::LoopSite& site_of(const NestSnapshot& nest, const std::string& label) {
    return *std::find_if(nest.loops.begin(), nest.loops.end(),
                         [&](const NestSnapshot::LoopSite& s) { return s.loop->label == label; });
  }

  const std::string& index_of(const std::string& label) const { return origins_.index_var.at(label); }

  bool is_reduction(const std::string& label) const {
    auto origin = origins_.index_var.find(label);
    if (origin == origins_.index_var.end()) return false;
    for (const sparse::Iterator& it : program_.iteration.iterators)
      if (it.var == origin->second) return it.is_reduction;
    return false;
  }

  static bool declares(const Block& block, const std::string& name) {
    return std::any_of(block.stmts.begin(), block.stmts.end(), [&](const Stmt& s) {
      return s->kind == StmtKind::Declare && static_cast<const Declare&>(*s).name == name;
    });
  }

  // Checks how a bound loop's iterations combine; returns the scalars a shuffle must reduce.
  std::vector<std::string> check_reduction(const GpuBinding& b, const NestSnapshot::LoopSite& site) const {
    const For& loop = *site.loop;
    const std::string& strategy = loop.annotations.bind_reduction;
    bool reduction = is_reduction(b.label);
    // Per-loop state set with `=` (a fused loop's row cursor) is every thread's own, as a
    // parallel loop's is on the cpu: only the scalars added into are sums.
    std::vector<std::string> scalars = scalars_assigned_outside(loop.body);
    const std::vector<std::string> state = scalars_assigned_outside(loop.body, /*overwrites_only=*/true);
    std::erase_if(scalars, [&](const std::string& s) { return std::find(state.begin(), state.end(), s) != state.end(); });
    if (reduction && strategy.empty())
      fail(b, "threads would race on " + output_ + ": loop " + b.label + " iterates the reduction index " +
                  index_of(b.label) + ", whose iterations add into the same entries of " + output_ +
                  " (add \"reduction\": \"atomic\", or bind to warp with \"reduction\": \"shuffle\" when the loop "
                  "sums into a scalar)");
    if (strategy == "shared") check_block_uniform(b, site);
    if (strategy == "shuffle" || strategy == "shared") {
      if (strategy == "shuffle" && loop.annotations.bind != "warp")
        fail(b, "a shuffle combines the lanes of one warp: bind " + b.label + " to warp, or use \"reduction\": \"atomic\"");
      if (!reduction)
        fail(b, "loop " + b.label + " iterates the spatial index " + index_of(b.label) +
                    ": its iterations write different entries of " + output_ + ", so there is nothing to combine");
      if (stores_into(loop.body, program_.output().values))
        fail(b, "loop " + b.label + " adds into " + output_ + " directly, but a " + strategy +
                    " reduction combines sums kept in scalars (use \"reduction\": \"atomic\")");
      for (const std::string& list : lists_)
        if (scalars.empty() && stores_into(loop.body, list))
          fail(b, "loop " + b.label + " lists the entries of " + output_ + " (they arrive out of order), one slot each, "
                      "and sums into no scalar, so a " + strategy + " reduction has nothing to combine (use \"reduction\": "
                      "\"atomic\")");
      for (const std::string& s : scalars)
        if (!site.parent || !declares(*site.parent, s))
          fail(b, "loop " + b.label + " sums into " + s + ", but " + s + " is declared outside the loop around " +
                      b.label + ", which every lane runs: bind the loop that the block of " + s +
                      " holds (bind before splitting)");
      return scalars;
    }
    if (!scalars.empty())
      fail(b, "loop " + b.label + " sums into " + join(scalars) +
                  ", declared outside it, so each thread would hold only part of the sum (bind it to warp with "
                  "\"reduction\": \"shuffle\", or to threadIdx.x with \"reduction\": \"shared\")");
    if (strategy == "atomic") check_atomic_stores(b, loop.body);
    return {};
  }

  // How a bound loop's shuffle combines its scalars: by adding, or by max/min (a max reduction,
  // which only a warp's shuffle takes).
  BinOp combine_of(const GpuBinding& b, const NestSnapshot::LoopSite& site, const std::vector<std::string>& scalars) const {
    const std::set<BinOp> ops = reduction_combines(site.loop->body, scalars);
    if (ops.size() > 1) fail(b, "loop " + b.label + " reduces scalars both by adding and by max or min: one reduction per loop");
    const BinOp combine = ops.empty() ? BinOp::Add : *ops.begin();
    if (combine != BinOp::Add && site.loop->annotations.bind_reduction != "shuffle")
      fail(b, "loop " + b.label + " takes a max or min: bind it to warp with \"reduction\": \"shuffle\"");
    return combine;
  }

  // A shared-memory reduction synchronizes the block (__syncthreads), so every thread of the
  // block must reach it, as often as the others: the loop spans the block's threads on
  // threadIdx.x, in whole warps, and no loop around it is spread over threads.
  void check_block_uniform(const GpuBinding& b, const NestSnapshot::LoopSite& site) const {
    const For& loop = *site.loop;
    if (loop.annotations.bind != "threadIdx.x")
      fail(b, "a shared reduction combines the threads of a block along threadIdx.x: bind " + b.label +
                  " to threadIdx.x (a warp's lanes combine with \"reduction\": \"shuffle\")");
    int64_t threads = threads_of(b, loop);
    if (threads % kWarpSize != 0)
      fail(b, "a shared reduction adds up whole warps: give loop " + b.label + " a multiple of 32 threads (it has " +
                  std::to_string(threads) + "; set \"threads\")");
    for (const Scope& outer : site.enclosing)
      if (outer.loop && on_threads(outer.loop->annotations.bind) && !outer.loop->annotations.bind.empty())
        fail(b, "a shared reduction synchronizes the whole block, but loop " + outer.label + " around " + b.label +
                    " is spread over " + outer.loop->annotations.bind +
                    ", so threads would reach the barrier unequally often (bind " + outer.label +
                    " to a block index, or use \"reduction\": \"shuffle\" on a warp)");
    struct InnerBinding : IRVisitor {
      const For* found = nullptr;
      void visit_for(const For& node) override {
        if (!node.annotations.bind.empty() && !found) found = &node;
        IRVisitor::visit_for(node);
      }
    } inner;
    inner.visit(loop.body);
    if (inner.found)
      fail(b, "a shared reduction synchronizes the whole block, but loop " + inner.found->label + " inside " + b.label +
                  " is bound too (bind only the loops around it to blocks)");
  }

  // Threads on a thread-bound loop: the bind op's own count, else one warp for lanes, else a
  // constant trip count, else the default for a strided loop.
  static int64_t threads_of(const GpuBinding& b, const For& loop) {
    if (int64_t threads = std::get<BindOp>(b.op->op).threads) return threads;
    if (loop.annotations.bind == "warp") return kWarpSize;
    std::optional<int64_t> bound = constant_trip_bound(loop);
    return bound ? std::max<int64_t>(*bound, 1) : kDefaultThreads;
  }

  void check_atomic_stores(const GpuBinding& b, const Stmt& body) const {
    struct Finder : IRVisitor {
      const std::string* buffer;
      const Store* overwrite = nullptr;
      void visit_store(const Store& node) override {
        if (node.buffer == *buffer && !node.accumulate && !overwrite) overwrite = &node;
      }
    } finder;
    finder.buffer = &program_.output().values;
    finder.visit(body);
    if (finder.overwrite)
      fail(b, "atomics only add, but loop " + b.label + " overwrites " + describe(*finder.overwrite));
  }

  // Each GPU index is bound once; warp lanes are threadIdx.x.
  void check_axes() const {
    std::map<std::string, const GpuBinding*> by_axis;
    for (const GpuBinding& b : bindings_) {
      const std::string& bind = std::get<BindOp>(b.op->op).to;
      auto [other, inserted] = by_axis.emplace(axis_of(bind), &b);
      if (inserted) continue;
      const std::string& other_bind = std::get<BindOp>(other->second->op->op).to;
      if (other_bind == bind) fail(b, "loop " + other->second->label + " is already bound to " + bind);
      fail(b, "warp lanes are threadIdx.x, and loop " + other->second->label + " is already bound to " + other_bind);
    }
  }

  // The block's size along each thread index.
  std::map<std::string, int64_t> thread_counts(const NestSnapshot& nest) const {
    std::map<std::string, int64_t> counts;
    int64_t block_threads = 1;
    for (const GpuBinding& b : bindings_) {
      const For& loop = *site_of(nest, b.label).loop;
      if (!on_threads(loop.annotations.bind)) continue;
      int64_t threads = threads_of(b, loop);
      block_threads *= threads;
      if (block_threads > kMaxBlockThreads)
        fail(b, "a block would have " + std::to_string(block_threads) + " threads, more than the " +
                    std::to_string(kMaxBlockThreads) + " a GPU allows (split by a smaller factor)");
      counts[b.label] = threads;
    }
    return counts;
  }

  // A store into the output or its entry list must be inside a loop bound to every GPU index in
  // use (or follow a shuffle, which leaves it to lane 0), else each thread on the missing index
  // would repeat it. Without atomics, threads must reach distinct entries (a list's slots are).
  void check_store(const NestSnapshot::StoreSite& site) const {
    std::set<std::string> covered;
    bool atomic = false;
    for (const Scope& scope : site.enclosing)
      if (scope.loop && !scope.loop->annotations.bind.empty()) {
        covered.insert(axis_of(scope.loop->annotations.bind));
        atomic |= scope.loop->annotations.bind_reduction == "atomic";
      }
    if (site.after_shuffle) covered.insert("threadIdx.x");
    for (const GpuBinding& b : bindings_) {
      const std::string& bind = std::get<BindOp>(b.op->op).to;
      if (!covered.count(axis_of(bind)))
        fail(b, describe(*site.store) + " lies outside loop " + b.label + ", so every thread on " + bind +
                    " would repeat it (bind a loop around it instead)");
    }
    if (atomic || site.listed) return;
    // A position loop's entries differ between threads only for the same parent position: if an
    // enclosing reduction loop runs in full in every thread, threads meet on the same entries.
    for (size_t k = 0; k < site.enclosing.size(); ++k) {
      const Scope& bound = site.enclosing[k];
      if (!bound.loop || bound.loop->annotations.bind.empty() || !origins_.positional.count(bound.label)) continue;
      for (size_t u = 0; u < k; ++u) {
        const Scope& outer = site.enclosing[u];
        bool runs_in_full = !outer.loop || outer.loop->annotations.bind.empty();
        if (runs_in_full && is_reduction(outer.label))
          fail(binding_of(bound.label),
               "threads would race on " + output_ + ": loop " + bound.label + " iterates positions under loop " +
                   outer.label + ", a reduction loop that every thread runs in full, so threads reach the same "
                   "entries of " + output_ + " from different iterations of " + outer.label +
                   " (add \"reduction\": \"atomic\")");
      }
    }
  }

  // The zero fill is a kernel of its own: every thread of the grid takes a share. So is a prefix
  // sum, which one block computes as a scan.
  void bind_zero_fill() {
    if (func_.body->kind != StmtKind::Block) return;
    std::vector<Stmt> stmts = static_cast<const Block&>(*func_.body).stmts;
    for (Stmt& s : stmts) {
      const For* loop = as_for(s);
      if (!loop || !runs_as_own_kernel(*loop)) continue;
      LoopAnnotations a = loop->annotations;
      a.bind = is_prefix_sum(*loop) ? "scan" : "grid";
      a.bind_threads = is_prefix_sum(*loop) ? kMaxBlockThreads : kZeroFillThreads;
      s = std::make_shared<For>(loop->label, loop->var, loop->begin, loop->end, loop->body, a);
    }
    func_.body = block(std::move(stmts));
    func_.body = BindListingKernels().mutate(func_.body);
  }

  // The added parts' nests that list entries in kernels of their own (lower_to_loops.cpp:
  // own_listing_kernel): each entry takes its slot atomically, so the grid's threads share the
  // outer loop (a part's loop of one trip runs in one thread).
  class BindListingKernels : public IRMutator {
   protected:
    Stmt mutate_allocate(const Allocate& node, const Stmt& self) override {
      if (std::none_of(node.buffers.begin(), node.buffers.end(), [](const Workspace& w) { return w.growable; })) return self;
      return IRMutator::mutate_allocate(node, self);
    }
    Stmt mutate_for(const For& node, const Stmt& self) override {
      if (!node.annotations.own_kernel || !node.annotations.bind.empty()) return self;
      LoopAnnotations a = node.annotations;
      a.bind = "grid";
      a.bind_threads = kZeroFillThreads;
      return std::make_shared<For>(node.label, node.var, node.begin, node.end, node.body, a);
    }
  };

  static std::string describe(const Store& store) {
    return "the store into " + store.buffer + "[" + ExprPrinter().print(store.index) + "]";
  }

  LoweredFunc& func_;
  const sparse::Program& program_;
  const Config& config_;
  const std::vector<GpuBinding>& bindings_;
  const LoopOrigins& origins_;
  std::string output_;
  std::set<std::string> lists_;  // the output's entry lists, if it has them
};

}  // namespace

void finish_gpu_bindings(LoweredFunc& func, const sparse::Program& program, const Config& config,
                         const std::vector<GpuBinding>& bindings, const LoopOrigins& origins) {
  GpuBindings(func, program, config, bindings, origins).run();
}

}  // namespace spgen
