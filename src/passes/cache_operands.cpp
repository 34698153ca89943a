#include "passes/cache_operands.h"

#include <algorithm>
#include <set>

#include "ir/loop_ir_visitor.h"

namespace spgen {

using namespace loops;

namespace {

// Loads of `buffer` read `tile` instead, at their index minus `base`.
class ReadFromTile : public IRMutator {
 public:
  ReadFromTile(std::string buffer, std::string tile, Expr base)
      : buffer_(std::move(buffer)), tile_(std::move(tile)), base_(std::move(base)) {}
  int replaced = 0;

 protected:
  Expr mutate_load(const Load& node, const Expr& self) override {
    if (node.buffer != buffer_) return IRMutator::mutate_load(node, self);
    ++replaced;
    Expr index = is_const_int(base_, 0) ? node.index : sub(node.index, base_);
    return std::make_shared<Load>(tile_, index, node.type, node.vector, "", node.lanes);
  }

 private:
  std::string buffer_, tile_;
  Expr base_;
};

class CacheOperand {
 public:
  CacheOperand(LoweredFunc& func, const sparse::Program& program, const Config& config, const ScheduleOp& op)
      : func_(func), program_(program), config_(config), op_(op), cache_(std::get<CacheOp>(op.op)) {}

  void run() {
    const sparse::SparseBuffer& buffer = checked_buffer();
    FindLoops finder;
    finder.visit(func_.body);
    auto site = std::find_if(finder.found.begin(), finder.found.end(),
                             [&](const LoopInfo& info) { return info.loop->label == cache_.var; });
    if (site == finder.found.end()) fail("no loop named " + cache_.var);
    const For& loop = *site->loop;
    check_uniform(*site);
    // A fused row loop's rows come from its cursor, which each entry may move: the tile's
    // position has no row variable to read.
    for (const sparse::Fusion& f : program_.iteration.fusions)
      if (program_.axes[program_.buffer(f.tensor).axes[0]].kind == sparse::AxisKind::DenseFixed)
        for (int axis_id : buffer.axes)
          if (program_.axes[static_cast<size_t>(axis_id)].index_var == f.outer)
            fail(cache_.tensor + " is read at " + f.outer + ", the row that fused loop " + f.into +
                 " finds for each entry of " + f.tensor + "; caching it there is not supported");

    // The loop body: its leading declarations (the index a position loop reads) stay first, as
    // the tile's position may need them; the rest reads the tile.
    std::vector<Stmt> stmts = statements_of(loop.body);
    size_t leading = 0;
    while (leading < stmts.size() && stmts[leading]->kind == StmtKind::Declare) ++leading;
    Stmt rest = block(std::vector<Stmt>(stmts.begin() + static_cast<std::ptrdiff_t>(leading), stmts.end()));
    std::set<std::string> varying = names_bound_in(rest);  // names that change inside an iteration

    // Storage levels whose index is fixed in an iteration come first; the tile spans the rest.
    Expr base_position = nullptr;  // the fixed levels' position, row-major
    Expr tile_size = int64(1);
    bool in_tile = false;
    for (int axis_id : buffer.axes) {
      const sparse::Axis& axis = program_.axes[static_cast<size_t>(axis_id)];
      bool fixed = !varying.count(axis.index_var);
      in_tile |= !fixed;
      Expr length = var(axis.length);
      if (!in_tile)
        base_position = base_position ? add(mul(base_position, length), var(axis.index_var)) : var(axis.index_var);
      else
        tile_size = is_const_int(tile_size, 1) ? length : mul(tile_size, length);
    }
    if (!in_tile)
      fail(cache_.tensor + " is read at a single entry in each iteration of loop " + cache_.var +
           ": there is nothing to share (cache it at a loop further out)");
    Expr base = base_position ? (is_const_int(tile_size, 1) ? base_position : mul(base_position, tile_size)) : int64(0);

    std::string tile = cache_.tensor + "_tile";
    ReadFromTile reader(buffer.values, tile, base);
    Stmt reads_tile = reader.mutate(rest);
    if (!reader.replaced) fail("loop " + cache_.var + " does not read " + cache_.tensor);

    // Every thread of the block copies a share, coalesced; the barriers make the copy visible
    // before the body reads it, and keep the next iteration from overwriting it too early.
    LoopAnnotations spread;
    spread.bind = "block";
    std::string t = tile + "_at";
    Stmt copy = std::make_shared<For>(tile + " copy", t, int64(0), tile_size,
                                      std::make_shared<Store>(tile, var(t), load(buffer.values, add(base, var(t)),
                                                                                 value_type()), false),
                                      spread);
    Workspace w;
    w.name = tile;
    w.type = value_type();
    w.size = tile_size;
    w.shared = true;
    std::vector<Stmt> body(stmts.begin(), stmts.begin() + static_cast<std::ptrdiff_t>(leading));
    body.push_back(std::make_shared<Comment>("the block copies the part of " + cache_.tensor + " this iteration reads"));
    body.push_back(std::make_shared<Allocate>(
        std::vector<Workspace>{w},
        block({copy, std::make_shared<Barrier>(), reads_tile, std::make_shared<Barrier>()})));
    Stmt new_body = block(std::move(body));
    func_.body = RewriteLoop(cache_.var, [&](const For& node) {
                   return std::make_shared<For>(node.label, node.var, node.begin, node.end, new_body, node.annotations);
                 }).mutate(func_.body);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { fail_schedule_op(config_, op_, message); }

  ScalarType value_type() const {
    return program_.value_type == ValueType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
  }

  const sparse::SparseBuffer& checked_buffer() const {
    if (config_.target != Target::Cuda) fail("cache keeps a tile in GPU shared memory: it is for the cuda target");
    const sparse::SparseBuffer& buffer = program_.buffer(cache_.tensor);
    if (!buffer.format.all_dense() || buffer.format.is_blocked())
      fail(cache_.tensor + " is stored sparse (" + buffer.format.name +
           "): only a dense input is cached (its tile's size is known before the loop)");
    int uses = 0;
    for (const sparse::SparseBuffer& b : program_.buffers) uses += b.tensor == cache_.tensor;
    if (uses != 1) fail(cache_.tensor + " is read through several accesses: cache an input read through one");
    return buffer;
  }

  // The copy and the barriers need every thread of the block in every iteration of the loop:
  // neither it nor a loop around it may be spread over threads.
  void check_uniform(const LoopInfo& site) const {
    std::vector<const For*> chain = site.enclosing;
    chain.push_back(site.loop);
    for (const For* loop : chain) {
      const std::string& bind = loop->annotations.bind;
      if (!bind.empty() && bind.rfind("blockIdx", 0) != 0)
        fail("loop " + loop->label + (loop == site.loop ? "" : " around " + cache_.var) + " is spread over " + bind +
             ", but the threads of a block copy the tile together and wait for each other (cache at a loop bound "
             "to blockIdx, or unbound outside the thread-bound loops)");
    }
  }

  LoweredFunc& func_;
  const sparse::Program& program_;
  const Config& config_;
  const ScheduleOp& op_;
  const CacheOp& cache_;
};

}  // namespace

void cache_in_shared_memory(LoweredFunc& func, const sparse::Program& program, const Config& config,
                            const std::vector<const ScheduleOp*>& cache_ops) {
  for (const ScheduleOp* op : cache_ops) CacheOperand(func, program, config, *op).run();
}

}  // namespace spgen
