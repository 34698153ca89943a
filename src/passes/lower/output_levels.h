// Facts about the levels of a format that outputs are written through: where a COO segment
// ends, and which level's positions are the entries.
#pragma once

#include "frontend/config.h"

namespace spgen::lowering {

// The last level of the COO segment that starts at `level` (its singletons share its positions).
int segment_end(const Format& format, int level);

// The output level whose positions are its entries: a COO segment's compressed-nonunique level
// where the segment ends the format (the singletons below it share its positions), else the last
// level (below a COO segment, whose positions are then its distinct coordinates).
int entry_level(const Format& format);

}  // namespace spgen::lowering
