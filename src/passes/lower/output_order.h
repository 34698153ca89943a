// The order in which a nest's loops produce an assembled output's entries, which decides how the
// output is written: appended through cursors where they come in storage order (in place by a
// fused loop over a csr operand's entries, appends_rows_in_order), else listed, sorted and
// packed (out_of_order_reason says why). Questions about the program, the config and the loop
// plans only.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontend/config.h"
#include "ir/sparse_ir.h"
#include "passes/lower/blocked_analysis.h"
#include "passes/lower/loop_plan.h"
#include "passes/lower/runs.h"

namespace spgen::lowering {

class OutputOrder {
 public:
  // `by_runs`: plan_runs's choice; `whole`: the scoped sum whose body this nest is, if any;
  // `nested`: the nest of an added part or of a part listing into another's list.
  OutputOrder(const sparse::Program& program, const Config& config, const std::vector<LoopPlan>& plans,
              const std::set<int>& by_runs, bool assembled, const sparse::Program* whole, bool nested)
      : program_(program), config_(config), plans_(plans), whole_(whole), nested_(nested), runs_(program, by_runs),
        blocked_(program, plans, assembled, whole) {}

  // The fused tensor's two levels (its root and the level below).
  std::pair<const sparse::Axis*, const sparse::Axis*> fused_axes(const sparse::Fusion& f) const;

  // A dense root over a compressed level (csr), rather than COO's levels.
  bool fuses_rows(const sparse::Fusion& f) const;

  // An assembled output whose entries the loops produce out of storage order: a summed loop sits
  // outside a compressed level above the last (C = A^T B with A csr and C dcsr: the loop order
  // is k, i, j, so each row i comes back for every k), outside the rows of a last level that is
  // appended to (C csr there: no row is finished before the next begins), or a loop repeats the
  // coordinates of such a level; or an ELL level sits above the last one (its slots hold the
  // first W distinct coordinates of each parent, which only a sorted view gives). Then no cursor
  // or row workspace can follow the entries: the loops list each entry as (key, value), the key
  // being its coordinates flattened in storage order, the list is sorted by key, repeats are
  // summed, and the sorted list is packed level by level (as the pack routines do from COO).
  // Each phase does so: an assemble phase counts its level's entries per parent from the list.
  // Returns why, or "" when the entries come in order.
  std::string out_of_order_reason(const sparse::SparseBuffer& output) const;

  // A COO output (one segment over all its levels) has one cursor and no rows to close: a fused
  // loop over a csr operand's entries, which come in the output's storage order (the checks
  // before say so) and once each (no summed variable fused), appends them in place on the cpu.
  bool appends_in_order(const sparse::SparseBuffer& output) const;

  // An output with rows (csr: dense, compressed; dcsr: compressed, compressed) on the two fused
  // variables, row over column, filled by a sequential fused loop over the entries of a csr
  // operand at the top of the nest: its entries come in storage order (the checks of
  // out_of_order_reason say so), once each (the operand's levels are unique, no summed variable
  // is fused, and each entry writes one: the loops inside are summed into a scalar). Then the
  // assemble phases count the entries per row (a compressed row level: the rows holding one, as
  // the entry's row changes), and the fill appends each entry at one cursor that runs through the
  // whole output (fused_row_change: the row level's cursor moves on as the row changes). Into
  // csr the fused loop may also run in parallel (fuses_rows_in_parallel); into dcsr a parallel
  // loop (or, for either, a schedule left to auto) keeps the list, whose threads list apart.
  bool appends_rows_in_order(const sparse::SparseBuffer& output) const;

  // A parallel fused loop into csr rows (dense, compressed) appended in place: each entry of the
  // fused operand at position p gives one entry of the output, in storage order, so the output's
  // entry sits at position C_pos1[0] + (p - A_pos1[0]) (the rows' counts are the operand's):
  // computed from p alone, with no cursor shared by the threads, and the same at every run. Its
  // assemble phase counts each entry into its row atomically (integers: the same counts in any
  // order). Only the fused loop itself, with no reduction or balance (any schedule: no entry
  // depends on the thread that writes it); a dcsr output's row positions would need the number
  // of non-empty rows before each row, which no entry knows alone: it keeps the list.
  bool fuses_rows_in_parallel(const sparse::SparseBuffer& output, const sparse::Fusion& f, const ParallelOp& parallel) const;

 private:
  bool repeats(const sparse::Axis& axis) const { return runs_.repeats(axis); }
  std::string blocked_entries_reason(const sparse::SparseBuffer& output) const { return blocked_.blocked_entries_reason(output); }

  const sparse::Program& program_;
  const Config& config_;
  const std::vector<LoopPlan>& plans_;
  const sparse::Program* whole_;
  bool nested_;
  Runs runs_;
  BlockedAnalysis blocked_;
};

}  // namespace spgen::lowering
