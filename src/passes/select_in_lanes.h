// Stage II, cpu: in a vectorized loop, `if (c) tile[l] += e` (a guarded add into a local
// workspace: ELL padding inside a register tile's lanes) becomes `tile[l] += c ? e : 0`. The
// add is the same (zero where c fails; e is still read only where c holds, so the compiler
// masks the loads), but the tile's store is no longer masked: a masked store to the stack does
// not forward to the next slot's load, and that stall bounded SELL-C's lanes (pubmed, hyb
// interleaved by 16: 0.0773 ms guarded, 0.0676 ms selected; bench/RESULTS.md, session 28).
#pragma once

#include "ir/loop_ir.h"

namespace spgen {

void select_in_lanes(loops::LoweredFunc& func);

}  // namespace spgen
