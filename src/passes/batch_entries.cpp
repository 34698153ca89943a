#include "passes/batch_entries.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/loop_ir_visitor.h"
#include "passes/size_variants.h"

namespace spgen {

using namespace loops;

namespace {

// What a loop body declares, writes and reads: what batching its iterations must respect.
struct BodyFacts : IRVisitor {
  std::set<std::string> declared;  // scalars, loop variables and arrays of the body's own
  std::set<std::string> assigned, loaded;
  std::vector<const Store*> stores;
  std::string unsupported;  // a statement batching cannot interleave, described

  void visit_declare(const Declare& node) override {
    declared.insert(node.name);
    IRVisitor::visit_declare(node);
  }
  void visit_for(const For& node) override {
    declared.insert(node.var);
    IRVisitor::visit_for(node);
  }
  void visit_allocate(const Allocate& node) override {
    for (const Workspace& w : node.buffers) declared.insert(w.name);
    IRVisitor::visit_allocate(node);
  }
  void visit_assign(const Assign& node) override {
    assigned.insert(node.name);
    if (node.atomic) unsupported = "an atomic step of " + node.name;
    IRVisitor::visit_assign(node);
  }
  void visit_store(const Store& node) override {
    stores.push_back(&node);
    IRVisitor::visit_store(node);
  }
  void visit_load(const Load& node) override {
    loaded.insert(node.buffer);
    IRVisitor::visit_load(node);
  }
  void visit_while(const While& node) override {
    unsupported = "a co-iteration loop over " + node.label;
    IRVisitor::visit_while(node);
  }
  void visit_sort(const Sort&) override { unsupported = "a sort"; }
  void visit_call(const Call& node) override { unsupported = "a call of " + node.callee; }
  void visit_lane_sums(const LaneSums&) override { unsupported = "lane sums already batched"; }
};

// A dot product in lanes: local arrays of partial sums around the loop over whole groups of
// lanes that fills them, the leftover iterations (summed into the scalar itself), then each
// array's sum added into its scalar (`vectorize` with `lanes`).
struct LaneReduction {
  const Allocate* allocate = nullptr;
  std::vector<const Declare*> prelude;  // the number of whole groups, and such: the same for every iteration
  const For* loop = nullptr;
  std::vector<Stmt> leftover;       // the loop over the iterations short of a group, if any
  std::vector<const Assign*> sums;  // acc += sum(acc_lanes[0:n]), one per array
};

std::optional<LaneReduction> lane_reduction(const Stmt& stmt) {
  if (stmt->kind != StmtKind::Allocate) return std::nullopt;
  const auto& allocate = static_cast<const Allocate&>(*stmt);
  if (!std::all_of(allocate.buffers.begin(), allocate.buffers.end(), [](const Workspace& w) { return w.local; })) return std::nullopt;
  std::vector<Stmt> body = statements_of(allocate.body);
  LaneReduction r{&allocate, {}, nullptr, {}, {}};
  size_t s = 0;
  for (; s < body.size() && body[s]->kind == StmtKind::Declare; ++s) r.prelude.push_back(static_cast<const Declare*>(body[s].get()));
  if (s == body.size() || !as_for(body[s])) return std::nullopt;
  r.loop = as_for(body[s]);
  for (++s; s < body.size(); ++s) {
    const auto* sum = body[s]->kind == StmtKind::Assign ? static_cast<const Assign*>(body[s].get()) : nullptr;
    if (sum && sum->accumulate && sum->value->kind == ExprKind::LaneSum) {
      r.sums.push_back(sum);
    } else if (r.sums.empty() && as_for(body[s])) {
      r.leftover.push_back(body[s]);
    } else {
      return std::nullopt;
    }
  }
  if (r.sums.empty()) return std::nullopt;
  return r;
}

// Why loop `loop` (named `name` in messages) may not run its iterations together, or "": each
// must write only its own output entry, read nothing any of them writes, and sum only into
// scalars of its own.
std::string batch_refusal(const For& loop, const BodyFacts& facts, const std::string& name) {
  const LoopAnnotations& a = loop.annotations;
  if (a.scheduled())
    return "loop " + name + " is " + (a.parallel ? "parallel" : a.vectorized ? "vectorized" : a.unroll ? "unrolled" : "bound") +
           ": batch runs its iterations together in one thread; batch a loop inside it";
  if (!a.sequential_reason.empty()) return "loop " + name + " must stay sequential: " + a.sequential_reason;
  if (!facts.unsupported.empty()) return "loop " + name + "'s body holds " + facts.unsupported + ", which batching cannot interleave";
  for (const std::string& scalar : facts.assigned)
    if (!facts.declared.count(scalar))
      return "the iterations of loop " + name + " add into " + scalar + ", which they share: only iterations that each "
             "write their own output entry can run together";
  if (a.repeats_coordinates) return "loop " + name + " walks a level whose coordinates repeat: its iterations may add into one output entry";
  for (const Store* store : facts.stores) {
    // Its own entry: one at an index made of the iteration's position or coordinate (a unique
    // level's iterations have distinct ones), as a shared structure's or a dense output's is.
    std::vector<std::string> read = vars_read(store->index);
    const bool own_entry = std::any_of(read.begin(), read.end(), [&](const std::string& n) {
      return n == loop.var || facts.declared.count(n);
    });
    if (store->atomic || (!facts.declared.count(store->buffer) && !own_entry))
      return "the iterations of loop " + name + " write " + store->buffer + " at an index that is not their own (it reads neither " +
             loop.var + " nor their coordinate): only iterations that each write their own output entry can run together";
    if (!facts.declared.count(store->buffer) && facts.loaded.count(store->buffer))
      return "the iterations of loop " + name + " read " + store->buffer + ", which they write";
  }
  return "";
}

class Batcher {
 public:
  Batcher(LoweredFunc& func, const Config& config, const sparse::Program& program, const ScheduleOp& op)
      : func_(func),
        config_(config),
        op_(op),
        batch_(std::get<BatchOp>(op.op)),
        program_(program),
        factor_(batch_factor(batch_, program, config)),
        used_(names_bound_in(func)) {}

  void run() {
    if (config_.target != Target::Cpu) fail("batch is for the cpu target");
    FindLoops finder;
    finder.visit(func_.body);
    if (std::none_of(finder.found.begin(), finder.found.end(), [&](const LoopInfo& info) { return info.loop->label == batch_.var; }))
      fail("no loop named " + batch_.var);
    func_.body = RewriteLoop(batch_.var, [&](const For& loop) { return batched(loop); }).mutate(func_.body);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { fail_schedule_op(config_, op_, message); }

  std::string fresh(const std::string& wanted) { return *used_.insert(first_unused_name(used_, wanted)).first; }

  Stmt batched(const For& loop) {
    BodyFacts facts;
    facts.visit(loop.body);
    if (const std::string why = batch_refusal(loop, facts, batch_.var); !why.empty()) fail(why);
    const std::vector<Stmt> body = statements_of(loop.body);
    const auto reduction = std::find_if(body.begin(), body.end(), [](const Stmt& s) { return lane_reduction(s).has_value(); });
    if (reduction == body.end())
      fail("loop " + batch_.var + "'s iterations sum no dot product in lanes: vectorize the loop inside it with \"lanes\" first");
    // The reduction's prelude (its count of whole groups) is shared: the fused loop's bounds read it.
    const LaneReduction lanes = *lane_reduction(*reduction);
    auto per_iteration = [&](const Expr& e) {
      std::vector<std::string> read = vars_read(e);
      return std::any_of(read.begin(), read.end(), [&](const std::string& n) { return n == loop.var || facts.declared.count(n); });
    };
    const std::string differ = "the dot products of loop " + batch_.var + "'s iterations differ in length (the loop over their "
                               "lanes depends on the iteration): only dot products of one length can run together";
    for (const Declare* d : lanes.prelude) {
      if (per_iteration(d->init)) fail(differ);
      facts.declared.erase(d->name);
    }
    if (per_iteration(lanes.loop->begin) || per_iteration(lanes.loop->end)) fail(differ);
    const int64_t f = factor_;
    // Each copy's names: the loop's position and everything the body declares.
    std::vector<std::map<std::string, std::string>> names(static_cast<size_t>(f));
    for (int64_t c = 0; c < f; ++c) {
      names[static_cast<size_t>(c)][loop.var] = fresh(loop.var + "_" + std::to_string(c));
      for (const std::string& n : facts.declared) names[static_cast<size_t>(c)][n] = fresh(n + "_" + std::to_string(c));
    }
    const std::string first = fresh(loop.var + "_first"), groups = fresh(loop.var + "_groups"), group = fresh(loop.var + "_group");
    std::vector<Stmt> jammed;
    for (int64_t c = 0; c < f; ++c)
      jammed.push_back(std::make_shared<Declare>(names[static_cast<size_t>(c)][loop.var], ScalarType::Int64,
                                                 add(var(first), add(mul(var(group), int64(f)), int64(c))), false));
    for (const Stmt& s : body) {
      if (&s == &*reduction) {
        jammed.push_back(jam(lanes, names));
        continue;
      }
      if (s->kind == StmtKind::Comment) {
        jammed.push_back(s);  // said once for the group
        continue;
      }
      for (int64_t c = 0; c < f; ++c) jammed.push_back(rename(s, names[static_cast<size_t>(c)]));
    }
    Stmt groups_loop = std::make_shared<For>(loop.label, group, int64(0), var(groups), block(std::move(jammed)), loop.annotations);
    Stmt rest = std::make_shared<For>(loop.label, loop.var, add(var(first), mul(var(groups), int64(f))), loop.end, loop.body,
                                      loop.annotations);
    // By length (no factor given), no groups unless the rows hold kShortestBatched entries or more
    // on average (else, as no row count says, unless the loop has that many).
    Expr whole_groups = binary(BinOp::Div, sub(loop.end, var(first)), int64(f));
    std::string comment = std::to_string(f) + " iterations of " + batch_.var + " at a time, then the rest";
    if (batch_.factor == 0) {
      Expr long_rows = mean_row_length_at_least(program_, func_, kShortestBatched);
      comment = std::to_string(f) + " iterations of " + batch_.var + " at a time where " +
                (long_rows ? "rows hold " + std::to_string(kShortestBatched) + " entries or more on average"
                           : "there are " + std::to_string(kShortestBatched) + " or more") +
                ", then the rest";
      if (!long_rows) long_rows = binary(BinOp::Le, int64(kShortestBatched), sub(loop.end, var(first)));
      whole_groups = select(long_rows, whole_groups, int64(0));
    }
    return block({std::make_shared<Comment>(comment), std::make_shared<Declare>(first, ScalarType::Int64, loop.begin, false),
                  std::make_shared<Declare>(groups, ScalarType::Int64, whole_groups, false), groups_loop, rest});
  }

  // The copies' lane arrays side by side, their filling loops fused into one (batched() checked
  // that its bounds are the same for every copy), and their sums finished in groups of up to 4.
  Stmt jam(const LaneReduction& r, const std::vector<std::map<std::string, std::string>>& names) const {
    std::vector<Workspace> buffers;
    std::vector<Stmt> fused;
    std::vector<std::string> sum_buffers, targets;
    for (size_t c = 0; c < names.size(); ++c) {
      std::map<std::string, std::string> copy = names[c];
      copy.erase(r.loop->var);  // the fused loop's variable is shared
      for (Workspace w : r.allocate->buffers) {
        w.name = copy.at(w.name);
        buffers.push_back(w);
      }
      fused.push_back(rename(r.loop->body, copy));
    }
    const auto& first_sum = static_cast<const LaneSum&>(*r.sums.front()->value);
    std::vector<Stmt> stmts(r.prelude.size());
    std::transform(r.prelude.begin(), r.prelude.end(), stmts.begin(), [](const Declare* d) { return std::make_shared<Declare>(*d); });
    stmts.push_back({std::make_shared<For>(r.loop->label, r.loop->var, r.loop->begin, r.loop->end, block(fused),
                                                     r.loop->annotations)});
    for (const Stmt& leftover : r.leftover)
      for (const auto& copy : names) stmts.push_back(rename(leftover, copy));
    for (const Assign* sum : r.sums) {
      const auto& lanes = static_cast<const LaneSum&>(*sum->value);
      if (lanes.lanes != first_sum.lanes || lanes.type != first_sum.type)
        fail("the lane sums of loop " + r.loop->label + " differ in width or type");
      for (size_t c = 0; c < names.size(); ++c) {
        sum_buffers.push_back(names[c].at(lanes.buffer));
        targets.push_back(names[c].count(sum->name) ? names[c].at(sum->name) : sum->name);
        if (sum_buffers.size() == 4 || (c + 1 == names.size() && names.size() == 2)) {
          stmts.push_back(std::make_shared<LaneSums>(sum_buffers, targets, first_sum.lanes, first_sum.type));
          sum_buffers.clear();
          targets.clear();
        }
      }
    }
    return std::make_shared<Allocate>(buffers, block(stmts));
  }

  LoweredFunc& func_;
  const Config& config_;
  const ScheduleOp& op_;
  const BatchOp& batch_;
  const sparse::Program& program_;
  const int64_t factor_;
  std::set<std::string> used_;
};

}  // namespace

void batch_entries(LoweredFunc& func, const Config& config, const sparse::Program& program,
                   const std::vector<const ScheduleOp*>& batch_ops) {
  for (const ScheduleOp* op : batch_ops) Batcher(func, config, program, *op).run();
}

int64_t batch_factor(const BatchOp& op, const sparse::Program& program, const Config& config) {
  if (op.factor > 0) return op.factor;
  const std::vector<sparse::Iterator>& iterators = program.iteration.iterators;
  auto walk = std::find_if(iterators.begin(), iterators.end(), [&](const sparse::Iterator& it) { return it.var == op.var; });
  int64_t bytes = program.value_type == ValueType::Float64 ? 8 : 4;
  bool summed = false;
  for (auto it = walk == iterators.end() ? walk : walk + 1; it != iterators.end(); ++it) {
    if (!it->is_reduction) continue;
    auto fixed = config.sizes.find(it->var);
    if (fixed == config.sizes.end()) return 4;  // a length known only when the kernel runs
    bytes *= fixed->second;
    summed = true;
  }
  return summed && bytes > kLongestBatchedBy4 ? 2 : 4;
}

std::string batch_refusal(const LoweredFunc& func, const std::string& var) {
  std::string why = "no loop named " + var;
  FindLoops finder;
  finder.visit(func.body);
  for (const LoopInfo& info : finder.found)
    if (info.loop->label == var) {
      BodyFacts facts;
      facts.visit(info.loop->body);
      why = batch_refusal(*info.loop, facts, var);
      if (!why.empty()) return why;
    }
  return why;
}

}  // namespace spgen
