#include "passes/lower_to_loops.h"

#include "passes/lower/lowering.h"

namespace spgen {

using namespace loops;
using namespace lowering;

ScalarType value_scalar_type(ValueType type) {
  return type == ValueType::Float32 ? ScalarType::Float32 : ScalarType::Float64;
}
ScalarType index_scalar_type(IndexType type) {
  return type == IndexType::Int32 ? ScalarType::Int32 : ScalarType::Int64;
}

}  // namespace spgen

namespace spgen::lowering {

LoweredFunc Lowering::run() {
  LoweredFunc func;
  func.name = counting_ ? assemble_function_name(program_, counted_level_) : program_.kernel_name;
  reserve_names();
  // The parts of a listed output each list in a nest of their own: they share no loops.
  if (sum_.whole && parts_listed_beside_blocks(*sum_.whole)) sum_.shared_loops = 0;
  // The parts gathered in the output's block rows share only the loops of those.
  if (sum_.whole && parts_in_block_rows(*sum_.whole)) sum_.shared_loops = static_cast<int>(sparse::block_row_loops(program_));
  if (sum_.whole) check_body_blocked_by_its_own();
  if (!refused()) plan_loops();
  if (refused()) return func;
  plan_listed();
  names_before_positions_ = used_names_;
  func.params = kernel_params({program_, assembled_, counting_, counted_level_, listed_, by_runs_});
  check_fusions();
  plan_positions();
  plan_output();
  if (sum_.whole && !refused()) check_added_parts_beside_blocks();
  if (refused()) return func;
  if (sum_.whole && !counting_) check_added_parts();
  std::vector<Stmt> body;
  if (counting_) body.push_back(clear_counts());
  if (write_.needs_zero_fill) body.push_back(zero_fill());
  Stmt nest = sum_.whole && listed_ ? listed_parts_nests() : loop_nest(0);
  if (listed_ && !rest_.blockers.empty()) nest = with_listed_rest(nest, *this);
  if (listed_) nest = list_and_pack(nest);
  body.push_back(workspaces_.empty() ? nest : std::make_shared<Allocate>(workspaces_, nest));
  if (!rest_.blockers.empty() && !rest_.in_rows && !listed_) {
    Stmt rest = lower_outside_blocks();
    if (config_.target == Target::Cuda) append(body, statements_of(rest));  // its loop a top-level kernel
    else body.push_back(rest);
  }
  if (counting_) body.push_back(prefix_sum());
  func.body = block(std::move(body));
  return func;
}

void Lowering::refuse(NestRefusal::Kind kind, std::string message) {
  if (!refusal_) refusal_ = NestRefusal{kind, std::move(message)};
}

bool Lowering::refused_by(const Lowering& part) {
  if (part.refusal_ && !refusal_) refusal_ = part.refusal_;
  return refused();
}

}  // namespace spgen::lowering

namespace spgen {

using namespace loops;
using namespace lowering;

bool output_is_assembled(const sparse::Program& program) {
  const sparse::SparseBuffer& output = program.output();
  return !output.format.all_dense() && output.shares_structure_with.empty();
}

bool output_may_be_listed(const sparse::Program& program, const Config&) {  // every target lists
  const sparse::SparseBuffer& output = program.output();
  if (!output_is_assembled(program) || output.gathered_level >= 0) return false;
  if (output.listed_blocks) return true;
  for (size_t l = 0; l < output.format.levels.size(); ++l)
    if (output.format.block(l).part != BlockPart::None) return false;
  return true;
}

std::string describe_listed_parts(const sparse::Program& program, const Config& config) {
  if (!program.parts_list_output()) return "";
  auto comma_list = [](const std::vector<std::string>& items) {
    std::string text;
    for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
    return text;
  };
  auto part = [&](const ast::ExprPtr& terms, const std::vector<std::string>& summed, const char* sign) {
    std::vector<std::string> loops;
    for (const sparse::Iterator& it : listed_part_program(program, terms, config).iteration.iterators) loops.push_back(it.var);
    const bool negated = terms->kind == ast::ExprKind::Neg;  // "- b(i)" rather than "+ -b(i)"
    return "  " + std::string(negated ? "- " : sign) + ast::to_string(negated ? *terms->lhs : *terms) + " (" +
           (summed.empty() ? std::string("no summed index") : "summed over " + comma_list(summed)) + "): a nest of its own over [" +
           comma_list(loops) + "], into the list of " + program.output().tensor + "'s entries\n";
  };
  std::vector<std::string> body_summed;
  for (const sparse::Iterator& it : listed_part_program(program, program.iteration.body, config).iteration.iterators)
    if (it.is_reduction) body_summed.push_back(it.var);
  std::string out = "  each part lists the entries of " + program.output().tensor + ", to be sorted and packed" +
                    (program.output().format.is_blocked() ? " into its blocks" : "") + ":\n";
  out += part(program.iteration.body, body_summed, "");
  for (const sparse::AddedPart& added : program.iteration.added_parts) out += part(added.body, added.summed, "+ ");
  return out;
}

bool may_list_parts_into_blocks(const sparse::Program& program) {
  const sparse::SparseBuffer& output = program.output();
  return output_is_assembled(program) && output.format.is_blocked() && !output.listed_blocks;
}

bool may_list_union_parts(const sparse::Program& program) {
  return program.iteration.added_parts.empty() && output_is_assembled(program) && !program.blocked_vars.empty() &&
         ast::distributed_terms(program.iteration.body, program.output().indices).size() >= 2;
}

std::vector<int> assembled_levels(const sparse::Program& program) {
  std::vector<int> levels;
  if (!output_is_assembled(program)) return levels;
  const Format& format = program.output().format;
  for (size_t l = 0; l < format.levels.size(); ++l)
    if (format.levels[l] == LevelKind::Compressed || format.levels[l] == LevelKind::CompressedNonUnique ||
        format.levels[l] == LevelKind::DenseVariable || format.levels[l] == LevelKind::SparseFixed)
      levels.push_back(static_cast<int>(l));
  return levels;
}

std::string assemble_function_name(const sparse::Program& program, int level) {
  std::string name = program.kernel_name + "_assemble";
  return assembled_levels(program).size() > 1 ? name + "_level" + std::to_string(level) : name;
}

namespace {

LoweredNest lowered_by(Lowering&& lowering) {
  LoweredNest nest;
  nest.func = lowering.run();
  nest.refusal = lowering.refusal();
  if (nest.refusal) nest.func = LoweredFunc{};
  return nest;
}

}  // namespace

LoweredNest lower_to_loops(const sparse::Program& program, const Config& config, LoweringPhase phase, int level) {
  if (program.iteration.added_parts.empty()) return lowered_by(Lowering(program, config, phase, level));
  // The body's nest, over its loops; the added parts' nests join it (loop_and_added_parts).
  sparse::Program body = program;
  body.iteration.added_parts.clear();
  body.iteration.iterators = program.iteration.loops_of(*program.iteration.body, program.blocked_vars);
  if (parts_listed_beside_blocks(program)) {
    std::optional<LoopOrderConflict> conflict;
    body = listed_part_program(program, program.iteration.body, config, &conflict);
    if (conflict) return {LoweredFunc{}, NestRefusal{NestRefusal::Kind::LoopOrder, conflict->what()}};
  }
  if (parts_in_block_rows(program)) body = block_row_part_program(program, program.iteration.body);
  return lowered_by(Lowering(body, config, phase, level, &program));
}

}  // namespace spgen
