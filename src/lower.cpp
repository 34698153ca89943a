// The whole compiler, top to bottom. Each pass is a small file with one entry point; the IR
// after each stage's schedule is kept for --emit.
#include "lower.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>

#include "codegen/abi_header.h"
#include "compilation_context.h"
#include "lower_statements.h"
#include "lower_variants.h"
#include "codegen/cpu_backend.h"
#include "codegen/cuda_backend.h"
#include "codegen/decompose_routines.h"
#include "codegen/pack_routines.h"
#include "codegen/python_module.h"
#include "frontend/parser.h"
#include "frontend/program.h"
#include "ir/loop_ir_printer.h"
#include "ir/loop_ir_visitor.h"
#include "passes/auto_schedule.h"
#include "passes/choose_input_format.h"
#include "passes/build_executor.h"
#include "passes/build_sparse_ir.h"
#include "passes/decompose_operand.h"
#include "passes/explicit_vectors.h"
#include "passes/factor_product.h"
#include "passes/full_blocks.h"
#include "passes/hoist_reciprocals.h"
#include "passes/hold_block_sums.h"
#include "passes/infer_loop_order.h"
#include "passes/infer_output_format.h"
#include "passes/lower_to_loops.h"
#include "passes/max_min_schedule.h"
#include "passes/nest_plan.h"
#include "passes/output_fill.h"
#include "passes/place_sum_parts.h"
#include "passes/read_previous_output.h"
#include "passes/restrict_to_structure.h"
#include "passes/fold_lane_arithmetic.h"
#include "passes/select_in_lanes.h"
#include "passes/simplify_declares.h"
#include "passes/schedule_loops.h"
#include "passes/sparse_fuse.h"
#include "passes/sparse_reorder.h"
#include "passes/specialize_sizes.h"
#include "passes/split_gpu_kernels.h"
#include "passes/split_sum.h"
#include "passes/unswitch_loops.h"

namespace spgen {

const char* const kVersion = "0.1.0";

namespace {

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// Stages I and II of one sparse iteration: the whole kernel, or one part of a decomposition.
struct LoweredIteration {
  sparse::Program program;
  loops::LoweredFunc func;
  std::vector<loops::LoweredFunc> assemble;
  std::vector<ScheduleOp> schedule;  // what applied (`auto` expanded)
  std::vector<bool> applied;         // per op of the config's schedule
  std::string stage1_dump, stage2_dump;
};

// Stage I as `options` build it, in storage-concordant order where one exists. Blocks of rows
// beside an operand that stores their rows outside their columns (csr) are lowered as BSR r x 1
// (the same arrays), the other operand located inside the blocks, where only that admits a loop
// order: `config` then gains the rewritten formats.
sparse::Program stage_one_program(const ast::Spec& spec, Config& config, const StageOneOptions& options) {
  sparse::Program program = build_sparse_ir(spec, config, options.list_output, options.previous_apart, options.apart);
  if (loop_order_exists(program, config)) return program;
  Config blocked = config;
  if (block_levels_inside_row_blocks(blocked).empty()) return program;
  sparse::Program rewritten = build_sparse_ir(spec, blocked, options.list_output, options.previous_apart, options.apart);
  if (!loop_order_exists(rewritten, blocked)) return program;
  config = std::move(blocked);
  return rewritten;
}

// Lowering one iteration: its stages, or the refusal of one nest for its terms where no nest
// plan answers it but a nest per term might (lower_term_parts: a loop-order conflict, or a
// union's one nest beside a blocked operand), the user's error where the caller has no nest per
// term to give.
struct IterationOutcome {
  LoweredIteration lowered;
  std::optional<std::string> one_nest_refused;
};

// Why a plan's stage I cannot be built: its loops have no order (`loop_order`: the operands'
// storage orders conflict), or an op of the config's stage I schedule fails on it (the op's
// error).
struct StageOneFailure {
  std::string message;
  bool loop_order = false;
};

// `config` gains the output's format where it is inferred.
IterationOutcome lower_iteration(const ast::Spec& spec, Config& config, MissingLoops missing) {
  IterationOutcome outcome;
  LoweredIteration& it = outcome.lowered;
  std::vector<ScheduleOp> loop_ops;
  std::vector<size_t> loop_op_index;
  const bool has_previous_output = !spec.previous_output.empty();
  // Stage I as `plan` builds it (passes/nest_plan.h), or why it cannot be built; `apart`: the
  // operands ordered apart, for the plans that take them.
  auto stage_one = [&](NestPlan plan, const std::set<std::string>& apart = {}) -> std::optional<StageOneFailure> {
    const StageOneOptions options = options_for(plan, has_previous_output, apart);
    it.applied.assign(config.schedule.size(), false);
    it.schedule.clear();
    loop_ops.clear();
    loop_op_index.clear();
    // 2. Stage I: sparse axes, buffers and the sparse iteration, in storage-concordant order.
    it.program = stage_one_program(spec, config, options);
    if (std::optional<LoopOrderConflict> conflict = infer_loop_order_or_conflict(it.program, config))
      return StageOneFailure{conflict->what(), true};
    // `auto` (cpu): a dense free index leaves the sparse sum it sits in, for a register tile.
    if (config.auto_schedule)
      if (std::optional<ScheduleOp> reorder = auto_reorder(it.program, config)) {
        if (std::string error = apply_sparse_reorder(it.program, config, *reorder); !error.empty())
          throw std::logic_error("auto's reorder fails: " + error);
        it.schedule.push_back(*reorder);
      }

    // 3. Stage I schedule: reorders of index variables and fuses of sparse levels, up to the
    // first loop-level op.
    for (size_t k = 0; k < config.schedule.size(); ++k) {
      const ScheduleOp& op = config.schedule[k];
      std::string error;
      if (loop_ops.empty() && is_sparse_reorder(op, it.program)) {
        error = it.program.iteration.fusions.empty()
                    ? apply_sparse_reorder(it.program, config, op)
                    : schedule_op_error(config, op, "reorder the index variables before fusing them");
      } else if (loop_ops.empty() && is_sparse_fuse(op, it.program)) {
        error = apply_sparse_fuse(it.program, config, op);
      } else {
        loop_ops.push_back(op);
        loop_op_index.push_back(k);
        continue;
      }
      if (!error.empty()) return StageOneFailure{error, false};
      it.schedule.push_back(op);
      it.applied[k] = true;
    }
    // The output's format, when the config leaves it to the operands, follows this loop order.
    if (config.infer_output_format)
      if (std::optional<LoopOrderConflict> conflict = infer_output_format(it.program, config, spec))
        return StageOneFailure{conflict->what(), true};
    // A sum whose terms sum over different indices, into an output only one loop nest can build.
    place_sum_parts(it.program, spec, options.union_apart);
    // Unblocked, its parts beside a blocked operand: each lists its entries.
    if (options.parts_listed) it.program.buffers.front().parts_listed = true;
    return std::nullopt;
  };
  // A loop-order conflict of one nest for the whole iteration (asked of the program
  // stage_one(OneNest) would build, on a copy of the config). Stage I is then built by a plan
  // that orders C_prev or terms apart, and where that plan fails, the conflict, which says more,
  // is what the caller hears.
  std::optional<LoopOrderConflict> conflict;
  {
    Config probe = config;
    const sparse::Program program = stage_one_program(spec, probe, options_for(NestPlan::OneNest, has_previous_output));
    conflict = loop_order_conflict(program, probe);
  }
  auto refused_for_terms = [](const std::string& message) {
    IterationOutcome refused;
    refused.one_nest_refused = message;
    return refused;
  };
  // A stage I that cannot be built outside the plans after the conflict: an op's error is the
  // user's; a loop-order conflict the caller's to answer with a nest per term.
  auto stage_one_failed = [&](const StageOneFailure& failure) {
    if (!failure.loop_order) throw CompileError(failure.message);
    return refused_for_terms(failure.message);
  };
  // The plan stage I is built by; the operands ordered apart after the conflict, and whether
  // their parts are the groups of terms that sum over the same indices (then every term apart
  // is left to try).
  NestPlan plan = NestPlan::OneNest;
  std::set<std::string> apart;
  bool by_groups = false;
  if (!conflict) {
    if (std::optional<StageOneFailure> failure = stage_one(NestPlan::OneNest)) return stage_one_failed(*failure);
  } else {
    // `+=` whose C_prev's storage order conflicts with the operands' (C csr += A csc; C bsr 2x2
    // += A bsr 2x1: A's 1-wide blocks of j are located inside C_prev's): C_prev and the operands
    // list C's entries each in a nest of their own order, sorted and packed into C.
    // (Only where C_prev alone is a part: its nest's order serves no other operand.)
    auto previous_alone = [&] {
      auto alone = [&](const ast::ExprPtr& terms) {
        return terms->kind == ast::ExprKind::Access && terms->access.tensor == spec.previous_output;
      };
      const sparse::SparseIteration& iteration = it.program.iteration;
      return alone(iteration.body) ||
             std::any_of(iteration.added_parts.begin(), iteration.added_parts.end(),
                         [&](const sparse::AddedPart& part) { return alone(part.body); });
    };
    // Stage I by `p`, where it has a loop order and the config's stage I ops apply to it.
    auto built = [&](NestPlan p) { return !stage_one(plan = p, apart); };
    const bool placed = !spec.previous_output.empty() && built(NestPlan::PreviousApart) && previous_alone();
    // A union whose terms' storage orders conflict (C csr = A csr + B csc), into an output the
    // kernel assembles: each term a part of its own, in its own order, listing C's entries; the
    // operands the first term does not read order no loop of the others'.
    if (!placed) {
      const std::vector<ast::SignedTerm> terms = ast::distributed_terms(spec.rhs, spec.output.indices);
      const Format& output = config.format_of(spec.output.tensor);
      if (terms.size() < 2 || output.all_dense() || !find_shared_structure(spec, config).empty())
        return refused_for_terms(conflict->what());
      apart = operands_apart(spec, config);
      by_groups = apart_by_groups(spec);
      if (!built(by_groups ? NestPlan::TermsApartByGroups : NestPlan::EveryTermApartOf)) {
        if (!by_groups) return refused_for_terms(conflict->what());
        by_groups = false;
        if (!built(NestPlan::EveryTermApartOf)) return refused_for_terms(conflict->what());
      }
    }
  }

  // A max or min reduction takes only the ops that do not add partial results (for now).
  if (it.program.iteration.reduction != ast::Reduction::Sum)
    for (size_t k = 0; k < config.schedule.size(); ++k)
      if (const std::string why = max_min_refusal(config.schedule, k, it.program); !why.empty())
        fail_schedule_op(config, config.schedule[k], why);

  // 4. Lower to stage II: loop nests over position space, the compute phase and an assemble
  // phase per level of a sparse output the kernel builds (scheduled after stage II's schedule,
  // below). Where the lowering refuses the plan stage I was built by (NestRefusal), stage I is
  // built again by the plan that answers the refusal (plan_after_refusal) and lowered again.
  std::vector<loops::LoweredFunc> assemble_phases;
  auto lower_phases = [&]() -> std::optional<NestRefusal> {
    LoweredNest compute = lower_to_loops(it.program, config);
    if (compute.refusal) return compute.refusal;
    it.func = std::move(compute.func);
    assemble_phases.clear();
    for (int level : assembled_levels(it.program)) {
      LoweredNest assemble = lower_to_loops(it.program, config, LoweringPhase::Assemble, level);
      if (assemble.refusal) return assemble.refusal;
      assemble_phases.push_back(std::move(assemble.func));
    }
    return std::nullopt;
  };
  // The first plan's refusal: where the config's ops fail on the nests of the plans that answer
  // it, it says more than the op's error. `refusal`: the last plan's, where none answers it;
  // `stage_failure`: why the stage I of the plan that answers it cannot be built.
  std::optional<NestRefusal> retried, refusal;
  std::optional<StageOneFailure> stage_failure;
  retried = refusal = lower_phases();
  while (refusal) {
    const std::optional<NestPlan> next = plan_after_refusal(*refusal, plan, it.program, spec);
    if (!next) break;
    if ((stage_failure = stage_one(plan = *next))) break;
    refusal = lower_phases();
  }
  // A refusal no plan answers: the caller's to answer with a nest per term (a union's one
  // nest, a listed part's loop-order conflict), or the user's error.
  auto unanswered = [&](const NestRefusal& r) {
    if (r.kind != NestRefusal::Kind::SharedBlocks) return refused_for_terms(r.message);
    throw CompileError(r.message);
  };
  if (!conflict) {
    if (stage_failure) return stage_one_failed(*stage_failure);
    if (refusal) return unanswered(*refusal);
  } else if (refusal || stage_failure) {
    // After the conflict, a refusal no plan answers means: every term apart, where the terms
    // went apart by groups, else the conflict.
    if (!by_groups || stage_one(NestPlan::EveryTermApartOf, apart) || lower_phases()) return refused_for_terms(conflict->what());
  }
  it.stage1_dump = sparse::dump_stage1(it.program) + describe_listed_parts(it.program, config);
  simplify_declares(it.func);

  // 5. Stage II schedule: split, reorder, parallel, vectorize, unroll, bind (or `auto`'s choice).
  if (config.auto_schedule) {
    loop_ops = auto_schedule(it.func, it.program, config);
    if (it.program.iteration.reduction != ast::Reduction::Sum) loop_ops = max_min_safe(loop_ops, it.program);
    loop_op_index.clear();
  }
  // (Where the nests are a plan's that answered a refusal or a conflict, an op's error about
  // them says less than that refusal, which the user hears instead.)
  std::vector<bool> applied;
  try {
    applied = schedule_loops(it.func, it.program, config, loop_ops, missing);
  } catch (const CompileError&) {
    if (retried && !config.auto_schedule) throw CompileError(retried->message);
    if (conflict && !config.auto_schedule) throw CompileError(conflict->what());
    throw;
  }
  for (size_t k = 0; k < loop_ops.size(); ++k) {
    if (!applied[k]) continue;
    it.schedule.push_back(loop_ops[k]);
    if (auto* tile = std::get_if<TileOp>(&it.schedule.back().op); tile && tile_factor(*tile, config) != tile->factor) {
      tile->factor = tile_factor(*tile, config);
      it.schedule.back().reason += std::string(it.schedule.back().reason.empty() ? "" : "; ") + "narrowed to the fixed size of " + tile->var;
    }
    if (k < loop_op_index.size()) it.applied[loop_op_index[k]] = true;
  }
  specialize_sizes(it.func, config.sizes);  // constant trip counts where "sizes" fixes them
  fold_lane_arithmetic(it.func);            // an interleaved level's groups and lanes, where tiles make them plain
  simplify_declares(it.func);
  if (config.target == Target::Cpu) {
    hold_block_sums(it.func, it.program);              // a block row's sums held across the walk over its blocks
    version_full_blocks(it.func, it.program);          // whole blocks' loops of constant length
    unswitch_loops(it.func);                           // loop-invariant tests (ELL padding) out of inner loops
    hoist_reciprocals(it.func);                        // a loop-invariant divisor's reciprocal, once before the loop
    select_in_lanes(it.func);                          // the tests left in a tile's lanes as selects
    use_explicit_vectors(it.func, VectorTarget::Cpu);  // register tiles
  } else {
    use_explicit_vectors(it.func, VectorTarget::Cuda);  // register tiles as float4 / double2
  }
  it.stage2_dump = loops::dump_stage2(it.func);

  // 4b/5b. A sparse output the kernel builds gets an assemble phase per compressed level,
  // scheduled by the same ops where they name its loops (it has no summed loops to schedule).
  // An assemble phase reads no values, so it has nothing to `cache`.
  std::vector<ScheduleOp> assemble_ops;
  for (const ScheduleOp& op : loop_ops)
    if (!std::holds_alternative<CacheOp>(op.op)) assemble_ops.push_back(op);
  std::string assemble_dumps;
  for (loops::LoweredFunc& assemble : assemble_phases) {
    simplify_declares(assemble);
    schedule_loops(assemble, it.program, config, assemble_ops, MissingLoops::Skip);
    simplify_declares(assemble);
    assemble_dumps += loops::dump_stage2(assemble);
    it.assemble.push_back(std::move(assemble));
  }
  it.stage2_dump = assemble_dumps + it.stage2_dump;
  return outcome;
}

// Under `auto`, a part's choices (`chosen`): each listed once for the header (`listed`), and
// written out for that part (`written`, with "part").
void add_part_choices(const std::vector<ScheduleOp>& chosen, const std::string& part, std::vector<ScheduleOp>& listed,
                      std::vector<ScheduleOp>& written) {
  for (const ScheduleOp& op : chosen) {
    if (std::none_of(listed.begin(), listed.end(), [&](const ScheduleOp& o) { return describe_schedule_op(o) == describe_schedule_op(op); }))
      listed.push_back(op);
    written.push_back(op);
    written.back().part = part;
  }
}

// Marks which of the config's ops (from `first` on) applied, after lowering one part of a
// decomposition or of a sum: the part's config lists, in order, the ops that schedule it
// (schedules_part), and `part_applied` says which of those applied. An op for every part that a
// part's own op replaces there counts as used.
void mark_part_ops(const Config& config, const std::string& part, const std::vector<bool>& part_applied, size_t first,
                   std::vector<bool>& applied) {
  size_t n = 0;
  for (size_t i = first; i < config.schedule.size(); ++i) {
    const ScheduleOp& op = config.schedule[i];
    if (schedules_part(config, op, part)) applied[i] = part_applied[n++] || applied[i];
    else if (op.part.empty()) applied[i] = true;
  }
}

// 2'-5'. Stage I decompose: the kernel becomes one iteration per part, each lowered and
// scheduled on its own, and an executor that calls them in turn.
void lower_decomposition(Compilation& c) {
  c.decomposition = decompose_operand(c.spec, c.config);
  const Decomposition& d = *c.decomposition;
  c.program = build_sparse_ir(c.spec, c.config);  // the declared formats: the inspector's input
  if (c.config.infer_output_format) {  // (dense: decompose_operand checked)
    c.program.buffers.front().format_inferred = true;
    c.program.buffers.front().format_reason = describe_fill(c.spec, expected_fill(c.spec, c.config));
  }
  std::vector<bool> applied(c.config.schedule.size(), false);
  applied[0] = true;
  std::vector<ScheduleOp> auto_ops, part_ops;  // under auto: its choices, and per part
  for (const DecomposedPart& part : d.parts) {
    Config config = part.config;
    auto in_part = [&](const std::string& message) {
      return CompileError(message + c.config.file + ": " + d.op_path + ": note: in part " + part.name + " of the decomposition (" +
                          part.tensor + ", stored as " + part.config.format_of(part.tensor).name + ")\n");
    };
    IterationOutcome outcome;
    try {
      outcome = lower_iteration(part.spec, config, MissingLoops::SkipUnlessPartNamed);
    } catch (const CompileError& e) {
      throw in_part(e.what());
    }
    if (outcome.one_nest_refused) throw in_part(*outcome.one_nest_refused);
    LoweredIteration& it = outcome.lowered;
    mark_part_ops(c.config, part.name, it.applied, 1, applied);
    // [decompose, "auto"]: `auto` chooses ops per part.
    if (c.config.auto_schedule) add_part_choices(it.schedule, part.name, auto_ops, part_ops);
    std::string heading = "// part " + part.name + " of " + describe_schedule_op(c.config.schedule.front()) + "\n";
    c.stage1_dump += heading + it.stage1_dump;
    c.stage2_dump += heading + it.stage2_dump;
    c.parts.push_back(std::move(it.func));
  }
  for (size_t i = 1; i < c.config.schedule.size(); ++i)
    if (!applied[i])
      fail_schedule_op(c.config, c.config.schedule[i], "no part of the decomposition has the loops it names");
  c.schedule = c.config.schedule;
  c.explicit_schedule = c.schedule;
  c.schedule.insert(c.schedule.end(), auto_ops.begin(), auto_ops.end());
  for (ScheduleOp& op : part_ops) {  // (numbered as they are written out)
    op.index = static_cast<int>(c.explicit_schedule.size());
    op.path = "/schedule/" + std::to_string(op.index);
    c.explicit_schedule.push_back(op);
  }
  c.func = build_executor(c.config.name, d, c.parts);
  c.stage2_dump += "// executor\n" + loops::dump_stage2(c.func);
}

// The stage I program of a kernel split into parts, whose buffers the header, the pack routines
// and `spgen run` read: the whole spec's tensors in their formats. An output that shares an
// input's structure in every part (split_sum checked) shares it here too, as it would where that
// input multiplies the whole right-hand side.
sparse::Program whole_program(const ast::Spec& spec, const Config& config, const SumPart& first_part, bool inferred) {
  ast::Spec whole = spec;
  if (std::string shared = find_shared_structure(first_part.spec, first_part.config); !shared.empty()) {
    for (const ast::Access* access : ast::collect_accesses(*spec.rhs))
      if (access->tensor == shared) {
        whole.rhs = ast::make_operator(ast::ExprKind::Mul, spec.rhs->loc, spec.rhs, ast::make_access(*access));
        break;
      }
  }
  sparse::Program program = build_sparse_ir(whole, config);
  program.spec_text = ast::to_string(spec);
  program.buffers.front().format_inferred = inferred;
  if (inferred) program.buffers.front().format_reason = describe_fill(spec, expected_fill(spec, config));
  return program;
}

// 2''-5''. A sum whose terms sum over different index variables: one iteration per part, each
// lowered and scheduled on its own (an op applies to every part that has its loops), and an
// executor that calls them in turn. A part whose terms cannot share one nest (the refusal, with
// its note, is returned) may have a nest per term instead: lower_term_parts.
// `why`: the note's reason for the nests, after a part's error.
std::optional<std::string> lower_split_sum(
    Compilation& c, std::vector<SumPart> parts, bool output_format_inferred,
    const std::string& why = "the right-hand side sums its terms over different indices: a loop nest for each") {
  c.program = whole_program(c.spec, c.config, parts.front(), output_format_inferred);
  std::vector<bool> applied(c.config.schedule.size(), false);
  std::vector<std::string> comments;
  for (size_t k = 0; k < parts.size(); ++k) {
    SumPart& part = parts[k];
    std::string description = part.name + " of " + std::to_string(parts.size()) + " of the sum: " +
                              part.description();
    auto in_part = [&](const std::string& message) { return message + c.spec.file + ": note: in " + description + " (" + why + ")\n"; };
    IterationOutcome outcome;
    try {
      outcome = lower_iteration(part.spec, part.config, MissingLoops::SkipUnlessPartNamed);
    } catch (const CompileError& e) {
      throw CompileError(in_part(e.what()));
    }
    if (outcome.one_nest_refused) return in_part(*outcome.one_nest_refused);
    LoweredIteration& it = outcome.lowered;
    if (!it.assemble.empty()) throw std::logic_error("a part of a sum assembles its output");
    mark_part_ops(c.config, part.name, it.applied, 0, applied);
    // `auto` chooses ops per part.
    if (c.config.auto_schedule) add_part_choices(it.schedule, part.name, c.schedule, c.explicit_schedule);
    std::string heading = "// " + description + "\n";
    c.stage1_dump += heading + it.stage1_dump;
    c.stage2_dump += heading + it.stage2_dump;
    comments.push_back(description + (k == 0 ? "" : "; adds into the output"));
    c.sum_parts.push_back(part.name + ": " + part.description());
    c.parts.push_back(std::move(it.func));
  }
  std::string loops;
  for (const SumPart& part : parts) {
    std::string vars;
    for (const std::string& var : part.spec.index_vars) vars += (vars.empty() ? "" : ", ") + var;
    loops += (loops.empty() ? "" : "; ") + ast::to_string(*part.spec.rhs) + ": " + vars;
  }
  for (size_t i = 0; i < applied.size(); ++i)
    if (!applied[i])
      fail_schedule_op(c.config, c.config.schedule[i],
                       "no part of the sum has the loops it names (the parts' loops: " + loops + ")");
  if (!c.config.auto_schedule) c.schedule = c.explicit_schedule = c.config.schedule;
  c.func = build_executor(c.config.name, c.spec, c.parts, comments);
  c.stage2_dump += "// executor\n" + loops::dump_stage2(c.func);
  return std::nullopt;
}

// A nest per term (split_terms) into a dense output, where more than `nests` (the nests that
// were refused, for the reason `refused`) would result; else `refused` is the user's error.
void lower_term_parts(Compilation& c, bool output_format_inferred, size_t nests, const std::string& refused) {
  Config config = c.config;
  std::vector<SumPart> term_parts = split_terms(c.spec, config);
  if (term_parts.size() <= nests) throw CompileError(refused);
  Compilation split = c;
  split.config = std::move(config);
  if (std::optional<std::string> part_refused =
          lower_split_sum(split, std::move(term_parts), output_format_inferred,
                          "the terms cannot share one loop nest, so each has its own, adding into the dense output " + c.spec.output.tensor))
    throw CompileError(*part_refused);
  c = std::move(split);
}

// 2-5 for the kernel as one iteration. Where its terms cannot share one loop nest (their
// storage orders conflict, or one without a blocked operand cannot follow the blocks) and the
// output is dense, each term becomes a nest of its own, adding into the output in place, as
// the parts of a sum do (split_terms).
void lower_whole(Compilation& c, bool output_format_inferred) {
  IterationOutcome outcome = lower_iteration(c.spec, c.config, MissingLoops::Error);
  if (outcome.one_nest_refused) return lower_term_parts(c, output_format_inferred, 1, *outcome.one_nest_refused);
  LoweredIteration& it = outcome.lowered;
  c.program = std::move(it.program);
  c.func = std::move(it.func);
  c.assemble = std::move(it.assemble);
  c.schedule = std::move(it.schedule);
  c.explicit_schedule = c.schedule;
  c.stage1_dump = std::move(it.stage1_dump);
  c.stage2_dump = std::move(it.stage2_dump);
}

// 1b-5: stages I and II of `c.spec` under `c.config` (as read): of the kernel, of each part of a
// decomposed operand, or of each part of a sum.
void lower_kernel(Compilation& c) {
  // 1a. An output with a "structure": the right-hand side on that input's entries only.
  restrict_to_structure(c.spec, c.config);
  // 1b. A sum whose terms sum over different index variables: one part per set.
  std::vector<SumPart> sum_parts;
  const bool output_format_inferred = c.config.infer_output_format;
  if (!has_decomposition(c.config)) sum_parts = split_sum(c.spec, c.config);
  // `+=` into an output the kernel assembles reads the output's previous value as an input.
  if (sum_parts.empty()) read_previous_output(c.spec, c.config);

  // 2-5. Stage I, its schedule, stage II and its schedule.
  if (has_decomposition(c.config)) {
    lower_decomposition(c);
  } else if (!sum_parts.empty()) {
    const size_t nests = sum_parts.size();
    Compilation split = c;
    // A part's terms that cannot share its nest: a nest per term, where that gives more.
    if (std::optional<std::string> refused = lower_split_sum(split, std::move(sum_parts), output_format_inferred))
      lower_term_parts(c, output_format_inferred, nests, *refused);
    else
      c = std::move(split);
  } else {
    lower_whole(c, output_format_inferred);
  }
}

}  // namespace

Compilation compile(const CompileInput& input) {
  Compilation c;
  // 1. Parse the spec's statements, check what they write and read, and read the config.
  const ast::Program program = parse_program(input.spec_path, input.spec_text);
  const ProgramTensors tensors = check_program(program);
  const ProgramConfig program_config =
      read_program_config(input.config_path, input.config_text, program, tensors, stem(input.spec_path), input.sizes);
  // `auto`'s kernels per size for a statement where its schedule wants them (lower_statements
  // asks only for statements that run alone: fusion merges loops, not entry points).
  auto add_statement_variants = [](Compilation& s, const Compilation& read) {
    specialize_sizes(s.func, s.config.sizes);
    add_size_variants(s, read, lower_kernel);
  };
  if (program.statements.size() > 1) {
    // 1b-5 for each statement, a kernel of its own, and the executor that calls them in turn.
    lower_statements(c, program, tensors, program_config, input, lower_kernel, add_statement_variants);
    specialize_sizes(c.func, c.config.sizes);
  } else {
    c.spec = program.statements.front();
    c.config = read_config(input.config_path, input.config_text, c.spec, stem(input.spec_path), input.target, input.sizes);
    if (!input.stats_files.empty())
      c.config.stats = read_input_stats(c.spec, c.config, input.stats_files, input.read_stats, input.stats_flag);
    // 1c. `auto`: an input whose format is "auto", decomposed where its statistics say so.
    choose_input_formats(c.spec, c.config);
    const Compilation read = c;

    // 1d. `auto`: a product that costs less as two statements becomes them.
    if (std::optional<Factoring> factored = factor_product(c.spec, c.config, input.config_text)) {
      lower_factored(c, *factored, input, lower_kernel, add_statement_variants);
    } else {
      // 1b-5. Lowering and scheduling: of the kernel, of each part of a decomposed operand, or of
      // each part of a sum.
      lower_kernel(c);

      // 5c. The entry point (an executor calling parts too) checks the sizes its kernels assume.
      specialize_sizes(c.func, c.config.sizes);
      // 5d. Kernels for the sizes of one index variable that "specialize" (or `auto`) lists.
      add_size_variants(c, read, lower_kernel);
      // 5e. Kernels for long rows that "variants" (or `auto`) lists.
      add_row_length_variants(c, read, lower_kernel);
    }
  }
  // 5f. cuda: the __global__ functions each host function launches, in order.
  // The dump lists them in the order the source defines the functions: assemble phases, parts,
  // else the kernel itself (with parts, c.func is their executor, a host function).
  if (c.config.target == Target::Cuda) {
    for (loops::LoweredFunc& phase : c.assemble) {
      split_gpu_kernels(phase);
      c.stage2_dump += dump_gpu_kernels(phase);
    }
    for (loops::LoweredFunc& part : c.parts) {
      split_gpu_kernels(part);
      c.stage2_dump += dump_gpu_kernels(part);
    }
    split_gpu_kernels(c.func);
    if (c.parts.empty()) c.stage2_dump += dump_gpu_kernels(c.func);
  }

  // 6. Emit the header and the source: C++ with OpenMP, or CUDA.
  // Both targets get the host routines that pack and unpack each tensor (NAME_pack_T, NAME_unpack_T).
  GenerationContext context = make_context(c, input);
  context.pack = emit_pack_routines(c.program, c.func.name, c.config.target);
  if (c.decomposition) {
    PackRoutines inspector = emit_decompose_routines(*c.decomposition, c.program, c.func);  // NAME_decompose_T
    context.pack.header_docs += inspector.header_docs;
    context.pack.header_declarations += inspector.header_declarations;
    context.pack.source += inspector.source;
  }
  if (c.config.target == Target::Cuda) {
    c.files.push_back(emit_cuda_header(c.func, context, c.assemble));
    c.files.push_back(emit_cuda_source(c.func, context, c.assemble, c.parts));
  } else {
    c.files.push_back(emit_abi_header(c.func, context, "void", {}, {}, "", c.assemble));
    c.files.push_back(emit_cpu_source(c.func, context, c.assemble, c.parts));
  }
  // 7. A Python module that builds and calls the kernel (--python).
  if (input.python)
    c.files.push_back(emit_python_module(c.func, c.program, c.config.target, c.assemble,
                                         c.decomposition ? &*c.decomposition : nullptr, context));
  return c;
}

}  // namespace spgen
