// The whole compiler, top to bottom. Each pass is a small file with one entry point; the IR
// after each stage's schedule is kept for --emit.
#include "lower.h"

#include <filesystem>

#include "codegen/abi_header.h"
#include "codegen/cpu_backend.h"
#include "codegen/cuda_backend.h"
#include "codegen/pack_routines.h"
#include "frontend/parser.h"
#include "ir/loop_ir_printer.h"
#include "passes/auto_schedule.h"
#include "passes/build_sparse_ir.h"
#include "passes/explicit_vectors.h"
#include "passes/infer_loop_order.h"
#include "passes/infer_output_format.h"
#include "passes/lower_to_loops.h"
#include "passes/simplify_declares.h"
#include "passes/schedule_loops.h"
#include "passes/sparse_fuse.h"
#include "passes/sparse_reorder.h"

namespace spgen {

const char* const kVersion = "0.1.0";

namespace {

std::string base_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }
std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

GenerationContext make_context(const Compilation& c, const CompileInput& input) {
  GenerationContext context;
  context.version = kVersion;
  context.spec_file = base_name(input.spec_path);
  context.config_file = base_name(input.config_path);
  context.spec_text = c.program.spec_text;
  for (const sparse::SparseBuffer& buffer : c.program.buffers) {
    std::string line = buffer.tensor + ": " + buffer.format.name + " (levels";
    for (size_t l = 0; l < buffer.format.levels.size(); ++l) {
      line += std::string(l ? ", " : " ") + level_kind_name(buffer.format.levels[l]) + " " +
              buffer.indices[buffer.format.mode_order[l]];
      LevelBlock block = buffer.format.block(l);
      if (block.part != BlockPart::None)
        line += (block.part == BlockPart::Block ? " floordiv " : " mod ") + std::to_string(block.size);
    }
    if (buffer.format.levels.empty()) line += " none: a scalar";
    line += ")";
    if (buffer.format_inferred) line += ", inferred from the operands";
    if (!buffer.shares_structure_with.empty()) line += ", sharing the structure of " + buffer.shares_structure_with;
    context.formats.push_back(line);
  }
  for (const ScheduleOp& op : c.schedule) context.schedule.push_back(describe_schedule_op(op));
  context.auto_schedule = c.config.auto_schedule;
  return context;
}

}  // namespace

Compilation compile(const CompileInput& input) {
  Compilation c;
  // 1. Parse the spec and read the config against it.
  c.spec = parse_spec(input.spec_path, input.spec_text);
  c.config = read_config(input.config_path, input.config_text, c.spec, stem(input.spec_path));

  // 2. Stage I: sparse axes, buffers and the sparse iteration, in storage-concordant order.
  c.program = build_sparse_ir(c.spec, c.config);
  infer_loop_order(c.program, c.config);

  // 3. Stage I schedule: reorders of index variables and fuses of sparse levels, up to the
  // first loop-level op.
  std::vector<ScheduleOp> loop_ops;
  for (const ScheduleOp& op : c.config.schedule) {
    if (loop_ops.empty() && is_sparse_reorder(op, c.program)) {
      if (!c.program.iteration.fusions.empty())
        fail_schedule_op(c.config, op, "reorder the index variables before fusing them");
      apply_sparse_reorder(c.program, c.config, op);
      c.schedule.push_back(op);
    } else if (loop_ops.empty() && is_sparse_fuse(op, c.program)) {
      apply_sparse_fuse(c.program, c.config, op);
      c.schedule.push_back(op);
    } else {
      loop_ops.push_back(op);
    }
  }
  // The output's format, when the config leaves it to the operands, follows this loop order.
  if (c.config.infer_output_format) infer_output_format(c.program, c.config, c.spec);
  c.stage1_dump = sparse::dump_stage1(c.program);

  // 4. Lower to stage II: loop nests over position space.
  c.func = lower_to_loops(c.program, c.config);
  simplify_declares(c.func);

  // 5. Stage II schedule: split, reorder, parallel, vectorize, unroll, bind (or `auto`'s choice).
  if (c.config.auto_schedule) loop_ops = auto_schedule(c.func, c.program, c.config.target);
  schedule_loops(c.func, c.program, c.config, loop_ops);
  c.schedule.insert(c.schedule.end(), loop_ops.begin(), loop_ops.end());
  simplify_declares(c.func);
  if (c.config.target == Target::Cpu) use_explicit_vectors(c.func);  // register tiles
  c.stage2_dump = loops::dump_stage2(c.func);

  // 4b/5b. A sparse output the kernel builds gets an assemble phase per compressed level,
  // scheduled by the same ops where they name its loops (it has no summed loops to schedule).
  if (output_is_assembled(c.program) && c.config.target == Target::Cuda)
    throw CompileError(format_config_error(input.config_path, "/target",
                                           "assembling a sparse output is not supported on the cuda target yet"));
  std::string assemble_dumps;
  for (int level : assembled_levels(c.program)) {
    loops::LoweredFunc assemble = lower_to_loops(c.program, c.config, LoweringPhase::Assemble, level);
    simplify_declares(assemble);
    schedule_loops(assemble, c.program, c.config, loop_ops, /*skip_ops_on_missing_loops=*/true);
    simplify_declares(assemble);
    assemble_dumps += loops::dump_stage2(assemble);
    c.assemble.push_back(std::move(assemble));
  }
  c.stage2_dump = assemble_dumps + c.stage2_dump;

  // 6. Emit the header and the source: C++ with OpenMP, or CUDA.
  GenerationContext context = make_context(c, input);
  if (c.config.target == Target::Cuda) {
    c.files.push_back(emit_cuda_header(c.func, context));
    c.files.push_back(emit_cuda_source(c.func, context));
  } else {
    context.pack = emit_pack_routines(c.program, c.func.name);  // NAME_pack_T / NAME_unpack_T (cuda: none yet)
    c.files.push_back(emit_abi_header(c.func, context, "void", {}, {}, "", c.assemble));
    c.files.push_back(emit_cpu_source(c.func, context, c.assemble));
  }
  return c;
}

}  // namespace spgen
