// The compiler, as one list of passes: see compile() in lower.cpp.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/generation_context.h"
#include "frontend/ast.h"
#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"
#include "passes/decompose_operand.h"
#include "passes/size_variants.h"

namespace spgen {

extern const char* const kVersion;

struct CompileInput {
  std::string spec_path, spec_text;
  std::string config_path, config_text;
  std::optional<Target> target;  // replaces the config's (--target)
  std::map<std::string, int64_t> sizes;  // replace the config's "sizes" for these index variables (--size)
  bool python = false;                   // also NAME.py (--python)
  // Files whose statistics `auto` uses, by input tensor (--stats NAME=FILE; `spgen run`'s
  // --input files), read by `read_stats` for the sparse inputs they name. `stats_flag` names
  // them in errors; where it is "--input" they may name dense inputs too, which are left out.
  std::map<std::string, std::string> stats_files = {};
  std::function<InputStats(const std::string& path)> read_stats = nullptr;
  std::string stats_flag = "--stats";
};

struct Compilation {
  ast::Spec spec;
  Config config;
  sparse::Program program;               // stage I, after its schedule (decomposed: as declared)
  loops::LoweredFunc func;               // stage II, after its schedule (decomposed: the executor)
  std::optional<Decomposition> decomposition;  // a `decompose` op's parts
  std::vector<std::string> sum_parts;          // a sum split by summed indices: each part, described
  std::vector<loops::LoweredFunc> parts;       // their kernels (a decomposition's or a sum's), which the executor calls
  // Kernels for sizes of one index variable ("specialize", or `auto`'s choice): `parts` holds
  // them and the generic kernel, and `func` is the entry point that chooses.
  std::optional<SizeVariants> size_variants;
  // Where `auto` schedules a size variant otherwise than the generic kernel: a line per
  // difference, for the header ("for k = 64, also prefetch(...)").
  std::vector<std::string> variant_schedule_notes;
  // Kernels for rows of at least so many entries on average ("variants"), chosen on entry as
  // the size variants are.
  std::vector<RowLengthVariant> row_variants;
  std::vector<loops::LoweredFunc> assemble;  // a sparse output's assemble phases, one per compressed level
  // A spec of several statements (lower_statements.h): each statement as it reads normalised,
  // with what was applied to it (the kernels are in `parts`, and `func` is their executor), and a
  // line per temporary for the header.
  std::vector<std::string> statements;
  std::vector<std::vector<ScheduleOp>> statement_schedules;
  // The sizes each statement's kernels were made for, by its variable ("specialize" or `auto`'s):
  // what a config that gives a statement its schedule writes to keep them (spgen tune).
  std::map<std::string, std::vector<int64_t>> statement_specializations;
  std::vector<std::string> temporaries;
  std::vector<std::string> statement_notes;  // how the statements run: those fused into one loop
  std::map<std::string, Format> written_formats;  // every tensor a statement writes, as it stores it
  std::vector<ScheduleOp> schedule;      // what was applied (`auto` expanded), each op once, for the header
  // The same as a config would list it: `auto`'s choices for the parts of a sum each name their
  // part, so that config_writer's JSON of it generates this kernel (spgen tune starts from it).
  std::vector<ScheduleOp> explicit_schedule;
  std::string stage1_dump, stage2_dump;  // --emit=stage1 / --emit=stage2
  std::vector<GeneratedFile> files;      // NAME.h, then NAME.cpp or NAME.cu, then NAME.py (--python)
};

// Throws CompileError, whose message is ready to print, on any invalid input.
Compilation compile(const CompileInput& input);

}  // namespace spgen
