// Pass 4: stage I schedule. `reorder` ops that name only index variables reorder the sparse
// iteration itself, respecting axis dependencies (a sparse level stays inside its parents).
#pragma once

#include <vector>

#include "frontend/config.h"
#include "ir/sparse_ir.h"

namespace spgen {

// True if `op` is a stage I op: a reorder naming only index variables of the iteration.
bool is_sparse_reorder(const ScheduleOp& op, const sparse::Program& program);

// Reorders the iteration's loops as `op` says, or returns the op's error (then `program` is to
// be dropped): a blocked index named, a loop named twice, a sparse level put outside its parent.
[[nodiscard]] std::string apply_sparse_reorder(sparse::Program& program, const Config& config, const ScheduleOp& op);

}  // namespace spgen
