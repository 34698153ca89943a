// Pass 1c: `auto` for an input whose format is "auto", from its statistics (--stats, or `spgen
// run`'s input files). Without statistics such an input stays in its order's default sparse
// format (csr for a matrix: frontend/config.h, auto_input_format). With them, a matrix of short,
// uneven rows summed into a vector (SpMV) is decomposed into SELL-C-sigma, whose slices fill
// vector lanes with several rows (bench/RESULTS.md, session 34), and one of short rows of nearly
// one length into ELL slots of that width interleaved by a vector's lanes (session 36). The kernel then takes the
// parts' arrays, which the generated inspector makes from csr, as with `[decompose, "auto"]`
// written in the config: choosing the format is what "auto" on the input allows.
#pragma once

#include "frontend/ast.h"
#include "frontend/config.h"

namespace spgen {

// Where the schedule is "auto" (no ops), makes the decompose op that the statistics call for its
// one op (with its reason, which the header shows); else leaves the config as it is.
void choose_input_formats(const ast::Spec& spec, Config& config);

// The decompose op choose_input_formats added (first in the schedule, with its reason), or null
// where the config's decomposition, if any, is the user's.
const ScheduleOp* decomposition_chosen_by_auto(const Config& config);

}  // namespace spgen
