// The lowering of one sparse iteration into a loop nest (pass 5, lower_to_loops.h): per-kernel
// state and the steps that build the nest. The steps are defined by concern:
//   passes/lower_to_loops.cpp        the driver (run) and the refusals
//   lower/lowering_plan.cpp          names, the loop plan, runs, fused rows
//   lower/lowering_exprs.cpp         expressions and presence
//   lower/lowering_output.cpp        positions, the output's strategy, open levels, writes
//   lower/lowering_blocks.cpp        the rest of a sum outside a blocked operand's blocks
//   lower/lowering_sum_parts.cpp     the added parts of a sum (beside, inside, or listed)
//   lower/lowering_loops.cpp         the loops: dense, driven, co-iterated (merge)
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "passes/lower_to_loops.h"
#include "ir/loop_ir_visitor.h"
#include "passes/infer_loop_order.h"
#include "passes/lower/abi_params.h"
#include "passes/lower/block_row_workspace.h"
#include "passes/lower/blocked_analysis.h"
#include "passes/lower/iteration_space.h"
#include "passes/lower/level_access.h"
#include "passes/lower/level_position.h"
#include "passes/lower/open_levels.h"
#include "passes/lower/listed_output.h"
#include "passes/lower/loop_plan.h"
#include "passes/lower/output_levels.h"
#include "passes/lower/output_order.h"
#include "passes/lower/output_strategy.h"
#include "passes/lower/part_programs.h"
#include "passes/lower/row_workspace.h"
#include "passes/lower/runs.h"

namespace spgen::lowering {

using namespace loops;
using sparse::block_row_part_program;
using sparse::parts_in_block_rows;

class Lowering {
 public:
  // `whole`: the program whose iteration has added parts, when `program` is its body's nest.
  Lowering(const sparse::Program& program, const Config& config, LoweringPhase phase, int counted_level,
           const sparse::Program* whole = nullptr)
      : program_(program), config_(config), value_type_(value_scalar_type(program.value_type)),
        index_type_(index_scalar_type(program.index_type)), assembled_(output_is_assembled(program)),
        counting_(phase == LoweringPhase::Assemble), counted_level_(counted_level) {
    if (counting_ && counted_level_ < 0) counted_level_ = assembled_levels(program).back();
    sum_.whole = whole;
    if (sum_.whole) sum_.shared_loops = static_cast<int>(sum_.whole->iteration.shared_loops());
  }

  // What the lowering of a rest outside a blocked operand's blocks (rest_program) is given by
  // the lowering whose blocks it follows (rest_inputs), read once, here.
  struct RestInputs {
    std::set<std::string> names;                   // the names taken so far
    IterationSpace skip_blocks_of;                 // the blocks done before it: the follower's own, then its blocks_done
    std::map<std::string, int> skip_levels_above;  // ... by tensor, where only its levels above one were done
    std::set<std::string> located_vars;            // variables located at each coordinate (a cuda rest: lower_outside_blocks)
    const Lowering* block_row_owner = nullptr;     // runs inside this lowering's block row (rest_in_block_row)
    bool listing = false;                          // lists into the output's list (listed_rest)
  };
  Lowering(const sparse::Program& rest, const Config& config, LoweringPhase phase, int counted_level, const RestInputs& inputs);

  // The nest; where refused() it is unfinished, and refusal() says why.
  LoweredFunc run();
  const std::optional<NestRefusal>& refusal() const { return refusal_; }

 private:
  // Names, the loop plan, runs and fused rows (lower/lowering_plan.cpp).
  void reserve_names();
  std::string fresh_name(const std::string& wanted);
  int compressed_axis(const std::string& tensor, const std::string& var) const;
  IterationSpace iteration_space(const ast::Expr& expr, const std::string& var) const;
  [[noreturn]] void throw_unsupported(const std::string& message) const;
  void plan_loops();
  void defer_located_terms(LoopPlan& plan, const std::string& loop, bool shared) const;
  void check_searched_terms();
  BlockedAnalysis blocked_analysis() const;
  std::vector<std::string> blocked_alike(const std::string& blocker) const;
  IterationSpace blocks_visited(const std::string& blocker) const;
  bool inside_blocks_visited(const Conjunction& term, const std::string& blocker) const;
  bool blocks_visit_every_coordinate(const std::string& blocker) const;
  bool rows_visited_for_parts_only() const;
  std::string outside_blocks_refusal(const std::string& blocker) const;
  int ungated_merge_level(const std::string& blocker, const std::string& tensor = "") const;
  std::string blocked_otherwise(const std::vector<std::string>& alike) const;
  bool reads(const std::string& tensor) const;
  int gathered_row_depth() const;
  std::string stored_as(const sparse::Axis& axis) const;
  bool visits_every_coordinate(int depth) const;
  void plan_runs();
  Runs runs() const;
  static bool is_coo_level(const sparse::Axis& axis);
  bool is_last_level(const sparse::Axis& axis) const;
  bool iterates_run(const sparse::Axis& axis) const;
  bool repeats(const sparse::Axis& axis) const;
  int axis_id(const sparse::Axis& axis) const;
  const sparse::Fusion* fusion_at(int depth) const;
  void check_fusions() const;
  Stmt fused_rows_loop(int depth, const sparse::Fusion& f);
  std::vector<Stmt> fused_row_changes() const;
  bool iterates_axis(int depth, int axis) const;
  // Expressions and presence flags (lower/lowering_exprs.cpp).
  void split_hoistable_factors();
  static void collect_factors(const ast::ExprPtr& expr, std::vector<ast::ExprPtr>& out);
  int max_depth(const ast::Expr& expr) const;
  Expr product(const std::vector<ast::ExprPtr>& factors) const;
  Expr lower_expr(const ast::Expr& expr) const;
  Expr lower_call(const ast::Expr& call) const;  // a function of its lowered arguments
  // The reduction's value over no entries (0, -inf for max, +inf for min), and `acc += value`
  // or `acc = max(acc, value)`.
  Expr reduction_identity() const;
  Stmt reduce_into_accumulator(Expr value) const;
  // The flags that hold inside the calls being lowered (each call's guard), so that what is
  // inside one is not guarded by the same flags again.
  mutable std::vector<Expr> known_present_;
  static void conjuncts(const Expr& condition, std::vector<Expr>& out);  // the operands of an && chain
  bool known_present(const Expr& present) const;  // every conjunct of `present` is known
  Expr presence(const std::string& tensor, int above_level = INT_MAX) const;
  // The merge loops' presence flags of the tensor's structure, and the found flags of those of
  // its levels located by binary search that `counts(structure, level)` keeps.
  template <class KeepSearched>
  Expr presence_with_searched(const std::string& tensor, const KeepSearched& counts) const {
    const std::string& structure = program_.structure_of(program_.buffer(tensor)).tensor;
    Expr all;
    if (auto found = presence_.find(structure); found != presence_.end())
      for (const std::string& flag : found->second) all = logical_and(all, var(flag, ScalarType::Bool));
    if (auto found = searched_flags_.find(structure); found != searched_flags_.end())
      for (const auto& [level, flag] : found->second)
        if (counts(structure, level)) all = logical_and(all, var(flag, ScalarType::Bool));
    return all;
  }

  Expr structure_size(const sparse::SparseBuffer& buffer, size_t levels = SIZE_MAX) const;

  // Positions, the output and its writes (lower/lowering_output.cpp).
  void plan_positions();
  Expr value_position(const std::string& tensor) const;
  bool scattered() const;
  bool block_rows() const;
  void plan_output();
  static bool dense_below_compressed_or_ragged(const Format& format);
  void plan_open_levels(const sparse::SparseBuffer& output);
  std::string summed_outside_compressed_level(const sparse::SparseBuffer& output, int level, const std::string& summed) const;
  void open_ragged_level(const sparse::SparseBuffer& output, int level);
  bool writes_every_iteration(int depth) const;
  bool inside_marked_blocks(int depth) const;
  Stmt with_open_flags(int depth, Stmt body) const;
  std::vector<Stmt> open_levels() const;
  Stmt store_ragged_length(const sparse::Axis& axis, Expr slot) const;
  Stmt store_open_coordinate(int first_level, int last_level, const std::string& cursor) const;
  Stmt zero_fill();
  Stmt write_output(Expr value, int enclosing = INT_MAX) const;
  OutputContext output_context() const;
  void plan_workspace();
  Stmt scatter(Expr value) const;
  Stmt around_row(Stmt row_loops);
  OutputOrder output_order() const;
  std::pair<const sparse::Axis*, const sparse::Axis*> fused_axes(const sparse::Fusion& f) const;
  bool fuses_rows(const sparse::Fusion& f) const;
  std::string out_of_order_reason(const sparse::SparseBuffer& output) const;
  bool appends_rows_in_order(const sparse::SparseBuffer& output) const;
  void plan_listed();
  Stmt list_entry(Expr value) const;
  Stmt list_and_pack(Stmt nest);
  void plan_block_workspace();
  Stmt scatter_into_block(Expr value) const;
  Stmt around_block_row(Stmt row_loops);
  std::string why_blocks_gathered() const;
  LoopAnnotations loop_annotations(int depth) const;
  Stmt clear_counts();
  Stmt prefix_sum();
  Expr parent_count(const sparse::SparseBuffer& output) const;
  std::vector<Stmt> position_declares(int depth) const;

  // The rest of a sum beside a blocked operand's blocks (lower/lowering_blocks.cpp).
  bool is_located_in_blocks(const sparse::Axis& axis) const;
  bool skips_blocks_of(const std::string& tensor) const;
  static std::string locate_strategy(const sparse::Axis& axis, bool in_run = true);
  std::vector<Stmt> locate_in_blocks(const LevelPosition& position) const;
  Stmt innermost_statement() const;
  Stmt lower_outside_blocks();
  std::string blocks_of() const;
  std::string zero() const;
  std::vector<std::string> skipped_tensors() const;
  sparse::Program rest_program();
  RestInputs rest_inputs() const;  // for the lowering of this one's rest
  Stmt relabel_shared_loops(const Stmt& rest);
  bool output_gathered_var(const std::string& var) const;
  Stmt rest_in_block_row();
  void share_owner_rows();
  void share_owner_flags();
  Stmt run_in_block_row();

  // The added parts of a sum (lower/lowering_sum_parts.cpp).
  ast::ExprPtr whole_sum();
  static bool reads(const ast::Expr& expr, const std::string& tensor);
  const LevelPosition* shared_position(const sparse::SparseBuffer& buffer, size_t level) const;
  static std::string describe_terms(const ast::Expr& terms, const std::vector<std::string>& summed);
  std::string summed_outside_added_parts() const;
  std::string why_added_parts_join() const;
  std::vector<std::string> blocked_operands() const;
  void check_body_blocked_by_its_own();
  bool parts_share_block_rows() const;
  void check_added_parts_beside_blocks();
  void check_part_without_rest();
  void check_added_parts() const;
  bool parts_add_into_sum() const;
  Stmt where_body_present(Stmt nest) const;
  Expr presence_in_shared_loops(const std::string& tensor) const;
  static Stmt only_where(Expr condition, Stmt stmt);
  Stmt loop_and_added_parts(int depth);
  Stmt listed_parts_nests();
  bool whole_loop(const std::string& label) const;
  static bool has_loop_labelled(const Stmt& stmt, const std::string& label);
  static Stmt own_listing_kernel(const Stmt& nest, std::set<std::string>& names);
  Stmt lower_listed_part(const Lowering& into, const std::set<std::string>& names, bool with_rest = false,
                         bool list_rest = true);
  Stmt with_listed_rest(const Stmt& nest, const Lowering& into);
  std::vector<Stmt> listed_rest(const Lowering& into);
  Stmt lower_added_part(const Lowering& body);

  // The loops: dense, driven, co-iterated (lower/lowering_loops.cpp).
  Stmt loop_nest(int depth);
  Stmt loops_from(int depth);
  static void append(std::vector<Stmt>& to, std::vector<Stmt> more);
  Stmt loop(int depth);
  Expr coordinate_count(const std::string& index_var) const;
  Stmt dense_loop(int depth);
  std::pair<Expr, Expr> level_range(const sparse::Axis& axis) const;
  // One stored level in a co-iterated loop, and how the loop reaches it: a cursor that streams
  // its coordinates in increasing order, or a direct lookup of the loop's coordinate.
  struct Operand {
    const sparse::Axis* axis = nullptr;
    bool located = false;
    std::string position;  // its position variable (a cursor, or the looked-up position)
    std::string begin;     // a ragged level's first position under the parent (its coordinate 0)
    std::string end;       // the end of its positions under the parent
    std::string coordinate;  // a two-finger merge: the coordinate under the cursor
    std::string present;     // it stores the loop's current coordinate (empty: a driving loop's own level)
    std::string run_end;     // a run-wise COO level: the end of the current run
  };

  Expr coordinate_at(const Operand& o) const;
  Expr not_done(const Operand& o) const;
  std::string describe(const Operand& o) const;
  std::string describe_all(const std::vector<Operand>& operands) const;
  std::vector<Operand> locate_setup(int depth, std::vector<Stmt>& setup);
  static void locate(const std::vector<Operand>& lookups, const std::string& index_var, std::vector<Stmt>& body);
  Stmt guarded_nest(int depth, const std::vector<Operand>& operands);
  Stmt driven_loop(int depth);
  Stmt slot_walk(int depth, const LevelAccess& level, std::vector<Stmt> setup, std::vector<Operand> operands);
  Stmt merge_loop(int depth);
  // Per conjunction of the iteration space, its operands that `counts`, leaving out those whose
  // operands include another's (A || A && B is A).
  template <class Counts>
  static std::vector<std::vector<const Operand*>> minimal_conjunctions(const LoopPlan& plan, const std::vector<Operand>& operands,
                                                                      Counts counts) {
    std::vector<std::vector<const Operand*>> all;
    for (const Conjunction& conjunction : plan.space) {
      std::vector<const Operand*> members;
      for (const Operand& o : operands)
        if (conjunction.count(o.axis->tensor) && counts(o)) members.push_back(&o);
      all.push_back(members);
    }
    std::vector<std::vector<const Operand*>> minimal;
    for (size_t a = 0; a < all.size(); ++a) {
      bool absorbed = false;
      for (size_t b = 0; b < all.size() && !absorbed; ++b)
        absorbed = b != a && std::includes(all[a].begin(), all[a].end(), all[b].begin(), all[b].end()) &&
                   (all[a] != all[b] || b < a);
      if (!absorbed) minimal.push_back(all[a]);
    }
    return minimal;
  }

  Stmt guarded(const LoopPlan& plan, const std::vector<Operand>& operands, Stmt inner) const;
  Stmt where_some_term_present(const LoopPlan& plan, const std::vector<Operand>& operands, Stmt inner) const;
  const sparse::Program& program_;
  const Config& config_;
  // A part of a scoped sum or a union (a nest of its own beside the body's, or inside it).
  struct SumParts {
    const sparse::Program* whole = nullptr;  // the program with added parts, when this is its body's nest
    int shared_loops = -1;                   // ... the loops that body and added parts share
    ast::ExprPtr whole_sum;                  // ... the body and the added parts as one sum (whole_sum)
    const Lowering* added_to = nullptr;      // lowering an added part: the body's Lowering
    bool adds_to_parent_sum = false;         // ... which sums the entry in a scalar: this adds into it
    const Lowering* lists_into = nullptr;    // a part of a sum whose entries join this Lowering's list
    bool listing_rest = false;               // lists the rest of a sum outside a blocked operand's blocks (listed_rest)
    std::vector<Stmt> listed_rests;          // a listed part's rests outside the blocks, after its nest (listed_rest)
  };
  SumParts sum_;
  ScalarType value_type_, index_type_;
  std::set<std::string> used_names_;
  // Operands blocked where others are not (C = A + B, A bsr): the entries outside the blocks
  // are a rest, lowered as a nest of its own (lower_outside_blocks, rest_in_block_row).
  struct BlockedRest {
    // The blocked operands (the first gives the block loops, the others are blocked alike) whose
    // blocks other operands' entries lie outside of; lowering that rest, those whose blocks it skips.
    std::vector<std::string> blockers;
    IterationSpace blocks_done;     // ... the blocks its loops visit (blocks_visited), of those operands
    IterationSpace skip_blocks_of;  // lowering a rest: the blocks done before (each all of a conjunction's)
    // ... by tensor, where only its levels above one were done (ungated_merge_level): their count
    std::map<std::string, int> skip_levels_above;
    const Lowering* block_row_owner = nullptr;  // ... inside this lowering's block row, into its workspace
    // The output's blocks are gathered per block row (in this phase, or the levels above counted):
    // a rest beside a blocked operand runs inside each block row (rest_in_block_row).
    bool in_rows = false;
    std::set<std::string> owner_rows;  // a rest's own names for the owner's output positions (not declared)
  };
  BlockedRest rest_;
  bool assembled_;  // the output's structure is built here (see LoweringPhase)
  OutputStrategy output_strategy_ = OutputStrategy::InPlace;  // how it is written (plan_output)
  BlockRows blocks_;  // ... whole blocks of them, keyed by the gathered level (plan_block_workspace)
  bool coo_segment_ = false;  // ... and it ends in a COO segment (compressed-nonunique, singletons)
  RowWorkspace rows_;  // ... the workspace of its rows (or block rows): see plan_workspace
  std::vector<Workspace> workspaces_;
  bool counting_;   // this is the assemble phase
  int counted_level_ = -1;  // ... which counts this compressed level of the output
  std::vector<OpenLevel> open_levels_;  // compressed (or counted ragged) output levels above the last (plan_open_levels)
  int append_depth_ = -1;  // loops deeper than this share the output's cursors or counts
  bool listed_ = false;    // the output's entries are listed, sorted and packed (plan_listed)
  bool fused_rows_append_ = false;  // a fused loop appends the output's rows in place (appends_rows_in_order)
  bool fused_rows_parallel_ = false;  // ... and runs in parallel: no cursor (fuses_rows_in_parallel)
  std::set<std::string> names_before_positions_;  // used_names_ once the loops and the list are planned
  EntryList list_;  // ... the list's names (plan_listed)
  std::vector<LoopPlan> plans_;  // per loop depth
  // Variables whose stored levels are all located at each coordinate of a dense loop, as inside
  // the blocks (a cuda rest's outer loop, spread over the grid: see lower_outside_blocks).
  std::set<std::string> located_vars_;
  std::set<int> by_runs_;        // COO levels visited once per run of equal coordinates (plan_runs)
  // Per tensor, the "present here" flags of the merge loops around the code being built: where
  // one is false the tensor stores nothing, so its value reads as zero and its children are empty.
  std::map<std::string, std::vector<std::string>> presence_;
  std::map<std::string, std::vector<std::pair<int, std::string>>> searched_flags_;  // by tensor: (level, flag) of its searched levels
  std::map<std::string, std::vector<LevelPosition>> positions_;
  // How the body's value reaches the output (plan_output).
  struct OutputWrite {
    int depth = -1;  // the depth of the output's innermost index's loop
    bool scalar_accumulator = false;  // the loops inside it sum into a scalar, written once after them
    bool overwrites = false;          // each value is written once (no sum outside, no `+=`)
    bool needs_zero_fill = false;     // zeroed first: the loops skip entries or add into them
    std::string accumulator;          // the scalar's name
    // With a scalar accumulator, the top-level product's factors applied after the sum (outer)
    // and those inside it (split_hoistable_factors).
    std::vector<ast::ExprPtr> outer_factors, inner_factors;
  };
  OutputWrite write_;
  // The refusal of this program's nest plan, made in the plan phase of this lowering or of a
  // part's own (NestRefusal): the lowering stops building its nest where it sees one.
  std::optional<NestRefusal> refusal_;
  void refuse(NestRefusal::Kind kind, std::string message);
  bool refused() const { return refusal_.has_value(); }
  // A part's lowering's refusal becomes this lowering's; true where there is one.
  bool refused_by(const Lowering& part);
};

}  // namespace spgen::lowering
