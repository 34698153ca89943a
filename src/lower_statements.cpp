// A spec of several statements, each lowered as a kernel of its own and joined by an executor
// that materializes the temporaries (docs/architecture.md, step 1'). With "fuse", statements that
// share their row loop run in one (passes/fuse_statements.h); the temporaries stay whole arrays.
#include "lower_statements.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "frontend/parser.h"
#include "ir/loop_ir_printer.h"
#include "passes/size_variants.h"
#include "passes/specialize_sizes.h"
#include "passes/fuse_statements.h"
#include "passes/row_temporaries.h"
#include "passes/statement_sequence.h"
#include "support/text.h"

namespace spgen {

namespace {

// The header's line on a temporary: how the executor holds it.
std::string describe_temporary(const sparse::SparseBuffer& buffer, const StatementKernels& kernels, size_t writer, bool row_held,
                               bool scalar_held) {
  std::string line = buffer.tensor + ": temporary, written by statement " + std::to_string(writer + 1);
  for (size_t k = writer + 1; k < kernels.programs.size(); ++k)  // (a later statement's `+=` into it)
    if (kernels.programs[k].output().tensor == buffer.tensor) line += ", added into by statement " + std::to_string(k + 1);
  line += " and held by the kernel: ";
  if (scalar_held) return line + "one value per row, in a register of the fused row loop (its statements fused)";
  if (row_held)
    return line + "a row at a time, in a workspace per thread as long as the longest row of " + kernels.structure_root.at(buffer.tensor) +
           " (its statements fused)";
  if (auto root = kernels.structure_root.find(buffer.tensor); root != kernels.structure_root.end())
    return line + buffer.format.name + ", one value per stored entry of " + root->second + ", whose structure it shares";
  return line + "dense, " + (buffer.indices.empty() ? "one value" : "one value per coordinate of (" + join(buffer.indices, ",") + ")");
}

// Refuses what the executor cannot yet hold or pass: an output whose structure its statement
// builds (the executor would have to size it between the statements' calls).
void check_statement_output(const Compilation& s) {
  const sparse::SparseBuffer& output = s.program.output();
  const bool builds_structure = !s.assemble.empty() || (!output.format.all_dense() && output.shares_structure_with.empty());
  if (!builds_structure) return;
  throw CompileError(format_source_error(s.spec.file, s.spec.text, s.spec.output.loc,
                                         "this statement builds the structure of its sparse output " + output.tensor + " (" +
                                             output.format.name + "), which a spec of several statements does not do yet: give " +
                                             output.tensor + " a \"structure\" (a sparse operand read with its indices), or a dense format"));
}

// Statement k's config, its ops' paths those of the config as written ("/schedule/2/0" where the
// schedule is given per statement: the statement's view of the config has it at "/schedule").
Config read_statement_config(const CompileInput& input, const ProgramConfig& config, size_t k, const ast::Spec& statement,
                             const std::map<std::string, Format>& written) {
  const std::string& path = config.schedule_paths[k];
  auto moved = [&](const std::string& at) { return path + at.substr(std::string("/schedule").size()); };
  Config read;
  try {
    read = read_config(input.config_path, config.statement_json[k], statement, statement_kernel_name(config.name, k), input.target,
                       config.statement_sizes[k], &written);
  } catch (const CompileError& e) {
    std::string message = e.what();
    const std::string prefix = input.config_path + ": /schedule";
    if (path != "/schedule" && message.rfind(prefix, 0) == 0) message = input.config_path + ": " + moved(message.substr(input.config_path.size() + 2));
    throw CompileError(message);
  }
  for (ScheduleOp& op : read.schedule) op.path = moved(op.path);
  return read;
}

// The temporaries the group's statements write that no statement after the group reads: what the
// fused kernel may hold itself.
std::vector<const sparse::SparseBuffer*> group_temporaries(const StatementGroup& group, const ProgramTensors& tensors,
                                                           const StatementKernels& kernels, const std::vector<Compilation>& statements) {
  std::vector<const sparse::SparseBuffer*> held;
  const size_t end = group.first + group.count;
  for (size_t k = group.first; k < end; ++k) {
    const sparse::SparseBuffer& output = statements[k].program.output();
    if (!kernels.temporaries.count(output.tensor) || statements[k].spec.accumulate) continue;
    const std::vector<size_t>& readers = tensors.readers.at(output.tensor);
    if (std::none_of(readers.begin(), readers.end(), [&](size_t r) { return r >= end; })) held.push_back(&output);
  }
  return held;
}

// Of those, the ones on a structure of rows over a compressed level (CSR's): held a row at a time
// (passes/row_temporaries.h).
std::vector<RowTemporary> row_temporaries(const StatementGroup& group, const ProgramTensors& tensors, const StatementKernels& kernels,
                                          const std::vector<Compilation>& statements, const sparse::Program& whole) {
  std::vector<RowTemporary> held;
  for (const sparse::SparseBuffer* output : group_temporaries(group, tensors, kernels, statements)) {
    auto root = kernels.structure_root.find(output->tensor);
    if (root == kernels.structure_root.end()) continue;
    const sparse::SparseBuffer& structure = whole.buffer(root->second);
    const std::vector<LevelKind>& levels = structure.format.levels;
    if (levels.size() != 2 || levels[0] != LevelKind::Dense || levels[1] != LevelKind::Compressed || structure.format.is_blocked())
      continue;
    held.push_back({output->tensor, output->values, whole.axes.at(static_cast<size_t>(structure.axes.at(1))).pos});
  }
  return held;
}

// ... and the dense ones of one value per row of the fused loop: held in a scalar of the row.
std::vector<RowTemporary> row_scalar_temporaries(const StatementGroup& group, const ProgramTensors& tensors,
                                                 const StatementKernels& kernels, const std::vector<Compilation>& statements) {
  std::vector<RowTemporary> held;
  for (const sparse::SparseBuffer* output : group_temporaries(group, tensors, kernels, statements))
    if (!kernels.structure_root.count(output->tensor) && output->indices == std::vector<std::string>{group.row} &&
        output->format.all_dense())
      held.push_back({output->tensor, output->values, ""});
  return held;
}

// Whether `auto` fuses a group the config leaves to it: where every statement is `auto`'s (none
// specialized), and the sparse temporaries it would hold a row at a time, sized by their
// structure's statistics, would fill a quarter of a 1 MiB L2 cache (`why` then says so). Apart,
// such temporaries leave the cache between their writer and readers while the dense operands
// stream through (pubmed's attention: 1.15-1.35x fused); smaller ones stay, and fused rows that
// short stall on reading what the row just stored (cora: 0.75x), so they stay apart. Without
// statistics nothing is known: apart.
bool fusion_pays(const StatementGroup& group, const ProgramTensors& tensors, const StatementKernels& kernels,
                 const std::vector<Compilation>& statements, const sparse::Program& whole,
                 const std::map<std::string, InputStats>& stats, std::string& why) {
  constexpr double kCacheBytes = 1 << 20, kShare = 0.25;
  for (size_t k = group.first; k < group.first + group.count; ++k)
    if (!statements[k].config.auto_schedule || statements[k].config.specialize_given) return false;
  const std::vector<RowTemporary> rows = row_temporaries(group, tensors, kernels, statements, whole);
  const double value_bytes = whole.value_type == ValueType::Float64 ? 8 : 4;
  double bytes = 0;
  std::vector<std::string> names;
  for (const RowTemporary& row : rows) {
    auto known = stats.find(kernels.structure_root.at(row.tensor));
    if (known == stats.end()) return false;
    bytes += static_cast<double>(known->second.nnz) * value_bytes;
    names.push_back(row.tensor);
  }
  if (bytes < kShare * kCacheBytes) return false;
  why = "its temporaries " + join(names, ", ") + " hold " + format_number("%.0f", bytes / 1024) + " KiB apart, over a quarter of a 1 MiB L2";
  return true;
}

// The fused statements' kernels per feature width: each statement that `auto` would give kernels
// per size of a variable (passes/size_variants.h) is lowered again with that variable's class
// fixed at the width, for each of `auto`'s widths, every such class at the same width (a
// transformer's query and value widths are one), and the group fused again; `fused` becomes the
// entry point choosing among them, its generic kernel joining `c.parts`. A width at which the
// statements no longer fuse is left to the generic kernel.
void add_fused_size_variants(loops::LoweredFunc& fused, const StatementGroup& group, const ast::Program& program,
                             const ProgramTensors& tensors, const std::vector<Compilation>& reads,
                             const std::vector<Compilation>& statements, const std::vector<loops::LoweredFunc>& statement_funcs,
                             const std::vector<RowTemporary>& scalars, const std::vector<RowTemporary>& rows,
                             const std::function<void(Compilation&)>& lower_kernel, Compilation& c) {
  std::set<std::string> classes;  // the variables' classes that some statement would specialize
  std::vector<std::string> vars;  // one variable of each, as the fused kernel names its size
  for (size_t k = group.first; k < group.first + group.count; ++k) {
    const Compilation& s = statements[k];
    if (!s.config.auto_schedule || !s.parts.empty()) return;
    if (std::optional<SizeVariants> sized = choose_size_variants(s.config, s.program, s.func, false, s.schedule))
      if (classes.insert(tensors.index_class.at(sized->var)).second) vars.push_back(sized->var);
  }
  if (vars.empty()) return;
  const std::string name = fused.name;
  std::vector<DispatchCase> cases;
  std::vector<loops::LoweredFunc> variants;
  std::vector<int64_t> widths;
  for (int64_t width : kAutoVariantSizes) {
    std::vector<loops::LoweredFunc> funcs;
    std::string suffix;
    for (const std::string& var : vars) suffix += "_" + var + std::to_string(width);
    for (size_t k = group.first; k < group.first + group.count; ++k) {
      Compilation v = reads[k];
      for (const std::string& var : v.spec.index_vars)
        if (classes.count(tensors.index_class.at(var))) v.config.sizes[var] = width;
      lower_kernel(v);
      specialize_sizes(v.func, v.config.sizes);
      v.func.fixed_sizes.clear();  // (the entry point checks them)
      funcs.push_back(std::move(v.func));
    }
    std::vector<loops::LoweredFunc> all = statement_funcs;
    for (size_t k = 0; k < funcs.size(); ++k) all[group.first + k] = funcs[k];
    const std::vector<StatementGroup> regrouped = fusable_statements(program, all);
    if (std::none_of(regrouped.begin(), regrouped.end(),
                     [&](const StatementGroup& g) { return g.first == group.first && g.count == group.count; }))
      continue;
    std::vector<const loops::LoweredFunc*> members;
    for (const loops::LoweredFunc& f : funcs) members.push_back(&f);
    variants.push_back(fuse_statement_kernels(name + suffix, members));
    hold_row_values_in_scalars(variants.back(), scalars);
    hold_rows_in_workspaces(variants.back(), rows);
    loops::Expr condition;
    for (const std::string& var : vars) condition = loops::logical_and(condition, size_equals(fused, var, width));
    cases.push_back({condition, variants.back().name});
    widths.push_back(width);
    c.stage2_dump += "// the fused kernel for " + join(vars, " = ") + " = " + std::to_string(width) + "\n" + loops::dump_stage2(variants.back());
  }
  if (cases.empty()) return;
  std::string listed;
  for (size_t k = 0; k < widths.size(); ++k)
    listed += (k == 0 ? "" : k + 1 == widths.size() ? " and " : ", ") + std::to_string(widths[k]);
  c.statement_notes.push_back("  " + join(vars, " = ") + ": a fused kernel for each of " + listed +
                              " (constant trip counts), chosen on entry; any other sizes run the generic one");
  loops::LoweredFunc generic = std::move(fused);
  generic.name = name + "_generic";
  fused = build_dispatch(name, generic, cases, "the fused kernel compiled for these sizes, where there is one (constant trip counts)");
  c.stage2_dump += "// entry point\n" + loops::dump_stage2(fused);
  for (loops::LoweredFunc& v : variants) c.parts.push_back(std::move(v));
  c.parts.push_back(std::move(generic));
}

}  // namespace

void lower_statements(Compilation& c, const ast::Program& program, const ProgramTensors& tensors, const ProgramConfig& config,
                      const CompileInput& input, const std::function<void(Compilation&)>& lower_kernel, const AddVariants& add_variants,
                      const ast::Spec* abi_order) {
  StatementKernels kernels{tensors, config.temporaries, {}, {}, {}, {}, {}, abi_order};
  std::map<std::string, Format> written;  // as each statement stored its output
  std::vector<Compilation> statements;
  std::vector<Compilation> reads;  // each statement before lowering, for kernels per size of fused ones
  // Each statistics file is read once, however many statements read its tensor (a failed read is
  // left to the next, which reports it as the first would).
  std::map<std::string, InputStats> stats_read;
  std::map<std::string, InputStats> structure_stats;  // the kernel's sparse inputs whose statistics `auto` knows
  auto read_stats = [&](const std::string& path) {
    auto known = stats_read.find(path);
    return known != stats_read.end() ? known->second : stats_read.emplace(path, input.read_stats(path)).first->second;
  };
  for (size_t k = 0; k < program.statements.size(); ++k) {
    Compilation s;
    s.spec = program.statements[k];
    s.config = read_statement_config(input, config, k, s.spec, written);
    // `auto` knows the statistics of the statement's inputs that are the kernel's.
    std::map<std::string, std::string> stats_files;
    for (const auto& [tensor, path] : input.stats_files)
      if (s.spec.find_tensor(tensor) && !tensors.writer.count(tensor)) stats_files.emplace(tensor, path);
    if (!stats_files.empty()) s.config.stats = read_input_stats(s.spec, s.config, stats_files, read_stats, input.stats_flag);
    // ... and of what an earlier statement wrote on an input's structure (S on M's entries): the same rows.
    for (const ast::TensorUse& t : s.spec.tensors) {
      auto root = kernels.structure_root.find(t.name);
      if (t.is_output || s.config.stats.count(t.name) || root == kernels.structure_root.end()) continue;
      auto known = structure_stats.find(root->second);
      if (known == structure_stats.end()) continue;
      InputStats same = known->second;
      same.source = root->second + "'s structure, " + same.source;
      s.config.stats.emplace(t.name, std::move(same));
    }
    for (const auto& [tensor, stats] : s.config.stats)
      if (!tensors.writer.count(tensor)) structure_stats.emplace(tensor, stats);
    const std::string text = ast::to_string(s.spec);  // (as written: lowering may rewrite it)
    reads.push_back(s);
    lower_kernel(s);
    check_statement_output(s);
    const sparse::SparseBuffer& output = s.program.output();
    written[output.tensor] = s.config.format_of(output.tensor);
    if (!output.shares_structure_with.empty()) {
      auto further = kernels.structure_root.find(output.shares_structure_with);
      kernels.structure_root[output.tensor] = further != kernels.structure_root.end() ? further->second : output.shares_structure_with;
    }
    kernels.programs.push_back(s.program);
    kernels.texts.push_back(text);
    statements.push_back(std::move(s));
  }
  for (const auto& file : input.stats_files) {
    const std::string& tensor = file.first;  // (clang 14 cannot capture a structured binding)
    if (std::none_of(tensors.tensors.begin(), tensors.tensors.end(), [&](const ast::TensorUse& t) { return t.name == tensor && !t.is_output; }))
      throw CompileError("spgen: error: " + input.stats_flag + " " + tensor + "=" + file.second + ": the spec has no input " + tensor + "\n");
  }

  // The kernel as a whole: its ABI's tensors, the config they are read with, and each statement's
  // kernels (a statement's own parts before its entry point) for the executor to call.
  c.spec = program.statements.back();
  c.config = statements.front().config;
  c.config.name = config.name;
  c.config.formats.clear();
  c.config.sizes.clear();
  c.config.auto_formats.clear();
  c.config.stats.clear();
  c.config.output_structure.clear();
  c.config.infer_output_format = false;
  c.program = statement_sequence_program(config.name, kernels);
  for (const Compilation& s : statements) {
    for (const sparse::SparseBuffer& buffer : c.program.buffers)
      if (s.config.formats.count(buffer.tensor)) c.config.formats.emplace(buffer.tensor, s.config.format_of(buffer.tensor));
    for (const auto& [var, size] : s.config.sizes) c.config.sizes[tensors.index_class.at(var)] = size;
    c.config.auto_formats.insert(s.config.auto_formats.begin(), s.config.auto_formats.end());
    for (const auto& [tensor, stats] : s.config.stats)
      if (!tensors.writer.count(tensor)) c.config.stats.emplace(tensor, stats);  // (the header names the kernel's inputs)
  }
  // With "fuse" on the cpu: statements that share their row loop run in one (passes/fuse_statements.h).
  std::vector<loops::LoweredFunc> funcs;
  for (const Compilation& s : statements) funcs.push_back(s.func);
  std::vector<StatementGroup> groups;
  std::map<size_t, std::string> auto_fused;  // first statement of a group `auto` fused -> why
  for (const StatementGroup& group : c.config.target == Target::Cpu ? fusable_statements(program, funcs) : std::vector<StatementGroup>{}) {
    std::string why;
    const bool fuse = group.count > 1 && (config.fuse_given ? config.fuse : fusion_pays(group, tensors, kernels, statements, c.program, structure_stats, why));
    if (fuse) {
      groups.push_back(group);
      if (!config.fuse_given) auto_fused[group.first] = why;
    } else {
      for (size_t k = group.first; k < group.first + group.count; ++k) groups.push_back({k, 1, ""});
    }
  }
  if (groups.empty())
    for (size_t k = 0; k < statements.size(); ++k) groups.push_back({k, 1, ""});
  for (const StatementGroup& group : groups) {
    // Statements fused: one kernel, whose temporaries of the group's rows alone it holds a row at a time.
    loops::LoweredFunc fused;
    std::string what;
    std::vector<RowTemporary> rows, scalars;
    std::set<std::string> row_held, scalar_held;
    if (group.count > 1) {
      std::vector<const loops::LoweredFunc*> members;
      for (size_t k = group.first; k < group.first + group.count; ++k) members.push_back(&statements[k].func);
      const std::string span = std::to_string(group.first + 1) + "-" + std::to_string(group.first + group.count);
      fused = fuse_statement_kernels(config.name + "_s" + std::to_string(group.first + 1) + "_" + std::to_string(group.first + group.count),
                                     members);
      what = "statements " + span + " fused: one loop over " + group.row + ", each row computing them in turn";
      if (auto fused_by = auto_fused.find(group.first); fused_by != auto_fused.end()) what = "auto: " + what + " (" + fused_by->second + ")";
      // (the tensors of `held`, joined for the note, and into `into`)
      auto names = [](const std::vector<RowTemporary>& held, std::set<std::string>& into) {
        std::vector<std::string> tensors;
        for (const RowTemporary& t : held) tensors.push_back(t.tensor);
        into.insert(tensors.begin(), tensors.end());
        return join(tensors, ", ");
      };
      scalars = hold_row_values_in_scalars(fused, row_scalar_temporaries(group, tensors, kernels, statements));
      if (!scalars.empty()) what += "; " + names(scalars, scalar_held) + " held in a register per row";
      rows = row_temporaries(group, tensors, kernels, statements, c.program);
      if (hold_rows_in_workspaces(fused, rows)) what += "; " + names(rows, row_held) + " held a row at a time";
      else rows.clear();
    }
    for (size_t k = group.first; k < group.first + group.count; ++k) {
      Compilation& s = statements[k];
      if (group.count == 1) add_variants(s, reads[k]);
      const std::string heading = "// statement " + std::to_string(k + 1) + ": " + kernels.texts[k] + "\n";
      c.stage1_dump += heading + s.stage1_dump;
      if (group.count == 1) c.stage2_dump += heading + s.stage2_dump;
      c.statements.push_back(kernels.texts[k]);
      c.statement_schedules.push_back(s.schedule);
      if (s.size_variants) c.statement_specializations[s.size_variants->var] = s.size_variants->sizes;
      // `auto`'s kernels per size of the statement, and how their schedules differ.
      const std::string which = "statement " + std::to_string(k + 1);
      for (const std::string& line : describe_variants(s.size_variants, {}))
        c.statement_notes.push_back(line.rfind("  ", 0) == 0 ? line : which + ", " + line);
      for (const std::string& line : s.variant_schedule_notes) c.statement_notes.push_back(which + ", " + line);
      if (config.temporaries.count(s.program.output().tensor) && !s.spec.accumulate)  // (a later `+=` into it: its writer's line)
        c.temporaries.push_back(describe_temporary(s.program.output(), kernels, k, row_held.count(s.program.output().tensor) > 0,
                                                   scalar_held.count(s.program.output().tensor) > 0));
      for (loops::LoweredFunc& part : s.parts) c.parts.push_back(std::move(part));
    }
    if (group.count == 1) {
      kernels.funcs.push_back(statements[group.first].func);
      kernels.comments.push_back("statement " + std::to_string(group.first + 1) + ": " + kernels.texts[group.first]);
      c.parts.push_back(std::move(statements[group.first].func));
      continue;
    }
    c.stage2_dump += "// " + what + "\n" + loops::dump_stage2(fused);
    c.statement_notes.push_back(what);
    if (c.config.target == Target::Cpu)
      add_fused_size_variants(fused, group, program, tensors, reads, statements, funcs, scalars, rows, lower_kernel, c);
    kernels.funcs.push_back(fused);
    kernels.comments.push_back(what);
    c.parts.push_back(std::move(fused));
  }
  c.written_formats = written;
  c.func = build_statement_executor(config.name, c.program, kernels);
  c.stage2_dump += "// executor\n" + loops::dump_stage2(c.func);
}

void lower_factored(Compilation& c, const Factoring& factored, const CompileInput& input,
                    const std::function<void(Compilation&)>& lower_kernel, const AddVariants& add_variants) {
  const ast::Spec original = c.spec;
  const ast::Program program = parse_program(input.spec_path, factored.spec_text);
  const ProgramTensors tensors = check_program(program);
  const std::string name = std::filesystem::path(input.spec_path).stem().string();
  const ProgramConfig config = read_program_config(input.config_path, factored.config_text, program, tensors, name, input.sizes);
  // The statistics the statement was read with, not read again.
  CompileInput known = input;
  std::map<std::string, InputStats> by_path;
  for (const auto& [tensor, path] : input.stats_files)
    if (auto stats = c.config.stats.find(tensor); stats != c.config.stats.end()) by_path.emplace(path, stats->second);
  known.read_stats = [by_path, read = input.read_stats](const std::string& path) {
    auto stats = by_path.find(path);
    return stats != by_path.end() ? stats->second : read(path);
  };
  Compilation f;
  lower_statements(f, program, tensors, config, known, lower_kernel, add_variants, &original);
  specialize_sizes(f.func, f.config.sizes);
  f.spec = original;
  f.program.spec_text = ast::to_string(original);
  f.statement_notes.insert(f.statement_notes.begin(), "auto factored the product into the statements above: " + factored.reason);
  c = std::move(f);
}

}  // namespace spgen
