// Pass 6: stage II schedule. Applies split, reorder (of loops), parallel, vectorize, unroll and
// (cuda) bind to the loop nest, in config order, refusing what would change the result (a race
// on the output, a loop moved outside the loop its bounds depend on). Errors name the op by its
// index.
#pragma once

#include <string>
#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

// What to do with an op that names a loop the nest does not have.
enum class MissingLoops {
  Error,
  Skip,                 // leave it out: an assemble phase, which lacks the summed loops
  SkipUnlessPartNamed,  // a decomposition's part: leave out the ops meant for every part
};

// Why `precompute` cannot keep the sums of `loop` in a register tile (its body is not:
// declarations, a sum starting at zero, a loop that only adds into it, then plain stores of the
// sum), or "" when its body has that shape. `auto` asks before it chooses a register tile.
std::string precompute_refusal(const loops::For& loop);
// The same, leaving out the summing loop's bounds, which a tile of `loop` may yet make the same
// for every iteration (a SELL slice's slots): `auto` asks before it tiles and precomputes.
std::string precompute_body_refusal(const loops::For& loop);

// The pos array of a compressed level right under a dense top level that `loop` (over that
// level's rows, unsplit, from 0) iterates, whose entries pos[0 .. end] tell "even_rows" how evenly
// the rows hold them; "" where there is none. `auto` asks before it chooses "even_rows".
std::string rows_positions(const sparse::Program& program, const loops::For& loop);

// The crd array of the non-unique level whose positions `loop` walks (COO's rows), whose runs of
// equal coordinates "balance" gives each part whole; "" where there is none. `auto` asks before
// it balances COO's entries.
std::string runs_coordinates(const sparse::Program& program, const loops::For& loop);

// Whether `vectorize` with "tail": "masked" applies to `loop` (`refusal` says why not, else
// empty) and the length of the arrays its masked sums may read up to (`limit`). `auto` asks
// before it chooses one.
// The one sum a loop's body makes: the scalar and the value added, the body's declarations
// substituted (its own variable left free); else why the body is not one sum.
struct MaskedSumOf {
  std::string scalar;
  loops::Expr value;
  std::string refusal;
};
MaskedSumOf masked_sum_of(const loops::For& loop);

struct MaskedTailPlan {
  std::string refusal;
  loops::Expr limit;
};
MaskedTailPlan plan_masked_tail(const loops::For& loop, const sparse::Program& program);

// The factor a tile uses: its own, or, where "sizes" fixes its index to fewer iterations, halved
// until it fits (down to 4): columns past the fixed size would only ever run the tile's remainder.
int64_t tile_factor(const TileOp& tile, const Config& config);

// Returns, per op, whether it applied.
std::vector<bool> schedule_loops(loops::LoweredFunc& func, const sparse::Program& program, const Config& config,
                                 const std::vector<ScheduleOp>& ops, MissingLoops missing = MissingLoops::Error);

}  // namespace spgen
