// cuda `cache`: a dense input that every iteration of a loop reads a contiguous slice of (a row of
// A in SDDMM, read once per nonzero of that row) is copied into the block's shared memory at the
// start of the iteration, by all of the block's threads together (coalesced), and the loop body
// reads the copy. Runs after the bindings are final: the copy and its barriers need every thread
// of the block to run the loop's iterations alike. Errors name the cache op.
#pragma once

#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

void cache_in_shared_memory(loops::LoweredFunc& func, const sparse::Program& program, const Config& config,
                            const std::vector<const ScheduleOp*>& cache_ops);

}  // namespace spgen
