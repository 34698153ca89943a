// cpu `prefetch`: a loop over the stored coordinates of a csr-like level (SDDMM's and SpMM's j)
// reads a row of a dense operand at each coordinate (B's row j), and rows far apart in memory
// miss the cache one after another. Each iteration now first asks for the cache lines of the row
// that the iteration `distance` positions ahead will read (in this row of the sparse operand or
// the next ones), so they arrive while the rows in between are computed. Runs after the other
// ops, on the final nest. Errors name the prefetch op.
#pragma once

#include <string>
#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

// Why `prefetch` of `tensor`'s rows at loop `var` does not apply to `func`, or "" where it does:
// what prefetch_rows refuses, and what `auto` asks before it proposes one.
std::string prefetch_refusal(const loops::LoweredFunc& func, const sparse::Program& program, const std::string& tensor,
                             const std::string& var);

void prefetch_rows(loops::LoweredFunc& func, const sparse::Program& program, const Config& config,
                   const std::vector<const ScheduleOp*>& prefetch_ops);

}  // namespace spgen
