// Pass 4b: stage I `fuse`. Fusing the index variables of a sparse level and its parent makes one
// flat loop over the level's stored entries (edge-parallel SDDMM, nonzero-balanced SpMM).
#pragma once

#include "frontend/config.h"
#include "ir/sparse_ir.h"

namespace spgen {

// True if `op` is a stage I fuse: both names are index variables and some operand stores the
// inner one in a sparse level. Fuses of dense loops are stage II ops.
bool is_sparse_fuse(const ScheduleOp& op, const sparse::Program& program);

// Checks the fuse against the formats and records it in the iteration; the lowering emits the
// fused loop. Else returns the op's error, which names the op.
[[nodiscard]] std::string apply_sparse_fuse(sparse::Program& program, const Config& config, const ScheduleOp& op);

}  // namespace spgen
