#include "passes/auto_schedule.h"

#include <algorithm>
#include <set>

#include "ir/loop_ir_visitor.h"

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

ScheduleOp make_op(decltype(ScheduleOp::op) op, int index) {
  ScheduleOp result;
  result.op = std::move(op);
  result.index = index;
  result.path = "/schedule (auto, op " + std::to_string(index) + ")";
  return result;
}

// `wanted`, or `wanted_2`, ...: a name no loop, declaration, parameter or index variable has.
std::string unused_name(const LoweredFunc& func, const sparse::Program& program, const std::string& wanted) {
  std::set<std::string> used = names_bound_in(func);
  used.insert(program.index_vars.begin(), program.index_vars.end());
  std::string name = wanted;
  for (int k = 2; used.count(name); ++k) name = wanted + "_" + std::to_string(k);
  return name;
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
  const For* lanes = nullptr;
  if (spine.size() > 1 && !is_reduction(program, outer->label)) {
    const For* inner = spine.back();
    if (inner->var == inner->label && suits_lanes(*inner)) lanes = inner;
    else if (strategy(*spine[1]) == "shuffle" && suits_lanes(*spine[1])) lanes = spine[1];
  }
  std::string blocks = unused_name(func, program, outer->label + "0");
  std::string threads = unused_name(func, program, outer->label + "1");
  add(SplitOp{outer->label, lanes ? 4 : 128, blocks, threads});
  add(BindOp{blocks, "blockIdx.x", outer_strategy});
  add(BindOp{threads, lanes ? "threadIdx.y" : "threadIdx.x", outer_strategy});
  if (lanes) add(BindOp{lanes->label, "warp", strategy(*lanes)});
  return ops;
}

}  // namespace

std::vector<ScheduleOp> auto_schedule(const LoweredFunc& func, const sparse::Program& program, Target target) {
  std::vector<ScheduleOp> ops;
  std::vector<const For*> spine = loop_spine(func.body);
  if (spine.empty()) return ops;
  if (target == Target::Cuda) return auto_schedule_cuda(func, program, spine);
  const For* outer = spine.front();
  // A listed output's outer loop stays sequential: its per-thread lists and their join cost more
  // than the loop saves while the sort after it is sequential (docs/formats.md, listed outputs).
  bool outer_parallel_ok = !is_reduction(program, outer->label) && outer->annotations.sequential_reason.empty() &&
                           outer->annotations.listed.keys.empty() && labels_one_loop(func.body, outer->label);
  if (outer_parallel_ok)
    ops.push_back(make_op(ParallelOp{outer->label, OmpSchedule::Dynamic, 16, {}, {}, 0}, static_cast<int>(ops.size())));
  // Vectorize an innermost dense loop (contiguous accesses) unless it sums into one output entry.
  const For* inner = spine.back();
  bool dense_loop = inner->var == inner->label;
  bool sums_into_output = is_reduction(program, inner->label) && stores_into(inner->body, program.output().values);
  bool innermost = !contains_loop(inner->body) && inner->annotations.sequential_reason.empty();
  if (inner != outer && dense_loop && innermost && !sums_into_output && schedulable(program, inner->label) &&
      labels_one_loop(func.body, inner->label))
    ops.push_back(make_op(VectorizeOp{inner->label}, static_cast<int>(ops.size())));
  return ops;
}

}  // namespace spgen
