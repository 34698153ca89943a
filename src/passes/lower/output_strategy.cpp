#include "passes/lower/output_strategy.h"

namespace spgen::lowering {

const char* output_strategy_name(OutputStrategy strategy) {
  switch (strategy) {
    case OutputStrategy::InPlace: return "in place";
    case OutputStrategy::Appended: return "appended";
    case OutputStrategy::RowWorkspace: return "row workspace";
    case OutputStrategy::BlockRowWorkspace: return "block-row workspace";
    case OutputStrategy::Listed: return "listed";
  }
  return "?";
}

OutputStrategy choose_output_strategy(const OutputFacts& f) {
  const bool computing = f.counted_level < 0;
  if (f.listed) return OutputStrategy::Listed;  // (a part of a sum lists into the whole's list, assembled there)
  if (!f.assembled) return OutputStrategy::InPlace;
  if (f.gathered_level >= 0 && (computing || f.counted_level == f.gathered_level)) return OutputStrategy::BlockRowWorkspace;
  if (f.reduction_outside && f.last_level_gathers && (computing || f.counted_level == f.entry_level))
    return OutputStrategy::RowWorkspace;
  return OutputStrategy::Appended;
}

}  // namespace spgen::lowering
