#include "passes/lower/output_levels.h"

#include <algorithm>

namespace spgen::lowering {

int segment_end(const Format& format, int level) {
  while (level + 1 < static_cast<int>(format.levels.size()) && format.levels[level + 1] == LevelKind::Singleton) ++level;
  return level;
}

int entry_level(const Format& format) {
  auto coo = std::find(format.levels.begin(), format.levels.end(), LevelKind::CompressedNonUnique);
  int last = static_cast<int>(format.levels.size()) - 1;
  if (coo == format.levels.end()) return last;
  int level = static_cast<int>(coo - format.levels.begin());
  return segment_end(format, level) == last ? level : last;
}

}  // namespace spgen::lowering
