#include "compilation_context.h"

#include <filesystem>

#include "passes/choose_input_format.h"
#include "passes/decompose_operand.h"
#include "passes/size_variants.h"

namespace spgen {

namespace {

std::string base_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

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
    if (buffer.format.sliced)
      line += ", slices of " + std::to_string(buffer.format.interleave) + " rows padded to their longest" +
              (buffer.format.sigma > 1 ? ", the rows sorted by length in windows of " + std::to_string(buffer.format.sigma)
                                       : ", the rows in order");
    if (buffer.format_inferred) line += ", inferred from the operands (" + buffer.format_reason + ")";
    if (c.config.auto_formats.count(buffer.tensor)) {
      const ScheduleOp* chosen = decomposition_chosen_by_auto(c.config);
      const bool decomposed_by_auto = chosen && std::get<DecomposeOp>(chosen->op).tensor == buffer.tensor;
      line += decomposed_by_auto ? ", \"auto\": read as csr and decomposed as its statistics say (the schedule below)"
                                 : ", \"auto\": the default sparse format of its order, unmeasured (spgen tune measures the others)";
    }
    if (!buffer.shares_structure_with.empty()) line += ", sharing the structure of " + buffer.shares_structure_with;
    if (buffer.previous_output)
      line += ", the value of " + c.program.output().tensor + " before the call (`+=`: " + c.program.output().tensor +
              " is assembled anew)";
    context.formats.push_back(line);
  }
  context.formats.insert(context.formats.end(), c.temporaries.begin(), c.temporaries.end());
  if (c.decomposition)
    for (size_t k = 0; k < c.decomposition->parts.size(); ++k) {
      const DecomposedPart& part = c.decomposition->parts[k];
      const Format& format = part.config.format_of(part.tensor);
      std::string line = (k ? "  " : c.decomposition->op.tensor + " is decomposed into ") + part.tensor + ": " + format.name + " (levels";
      for (size_t l = 0; l < format.levels.size(); ++l) line += std::string(l ? ", " : " ") + level_kind_name(format.levels[l]);
      context.formats.push_back(line + ")");
    }
  if (!c.sum_parts.empty()) {
    context.schedule.push_back(std::to_string(c.sum_parts.size()) + " loop nests in turn, one per set of summed indices:");
    for (const std::string& part : c.sum_parts) context.schedule.push_back("  " + part);
  }
  for (const std::string& line : describe_variants(c.size_variants, c.row_variants))
    context.sizes.push_back(line);
  for (const auto& [var, size] : c.config.sizes)
    context.sizes.push_back("size of " + var + " fixed at " + std::to_string(size) + " (\"sizes\"): constant trip counts, dim_" + var +
                               " checked on entry");
  for (const ScheduleOp& op : c.schedule)
    context.schedule.push_back(describe_schedule_op(op) + (op.reason.empty() ? "" : ": " + op.reason));
  for (size_t k = 0; k < c.statements.size(); ++k) {
    const std::vector<ScheduleOp>& ops = c.statement_schedules.at(k);
    context.schedule.push_back("statement " + std::to_string(k + 1) + ", " + c.statements[k] + (ops.empty() ? ": no ops" : ":"));
    for (const ScheduleOp& op : ops) context.schedule.push_back("  " + describe_schedule_op(op) + (op.reason.empty() ? "" : ": " + op.reason));
  }
  context.schedule.insert(context.schedule.end(), c.statement_notes.begin(), c.statement_notes.end());
  context.schedule.insert(context.schedule.end(), c.variant_schedule_notes.begin(), c.variant_schedule_notes.end());
  context.auto_schedule = c.config.auto_schedule;
  if (c.config.auto_schedule)
    for (const auto& [tensor, stats] : c.config.stats) context.auto_inputs.push_back(tensor + " (" + stats.describe() + ")");
  return context;
}

}  // namespace spgen
