// The JSON config: per-tensor formats, value and index types, target and schedule.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "frontend/ast.h"
#include "frontend/input_stats.h"

namespace spgen {

enum class LevelKind {
  Dense,                // TACO dense / SparseTIR dense-fixed: every coordinate stored, no arrays
  Compressed,           // TACO compressed / SparseTIR sparse-variable: pos + crd arrays
  CompressedNonUnique,  // COO's top level: pos + crd with one position per entry, coordinates repeat
  Singleton,            // COO's lower levels: crd only, one coordinate per parent position
  DenseVariable,        // SparseTIR dense-variable (ragged): pos only, a prefix 0..n-1 under each parent
  SparseFixed,          // SparseTIR sparse-fixed (ELL): crd only, `width` per parent, padded with -1
};

bool level_has_pos(LevelKind kind);
bool level_has_crd(LevelKind kind);

struct Format;
// SELL-C-sigma, a format of its own: an order-2 input whose top level lists every row once
// (sorted by length within windows of `sigma`) and whose second level holds slices of
// `interleave` rows, each padded to its longest row, slot by slot.
Format sell_format(int64_t interleave, int64_t sigma);

enum class ValueType { Float32, Float64 };
enum class IndexType { Int32, Int64 };
enum class Target { Cpu, Cuda };

const char* level_kind_name(LevelKind kind);  // "dense", "compressed", ...
const char* value_type_name(ValueType type);  // "float32", ...
const char* index_type_name(IndexType type);

// A level of a blocked format (BSR) stores a block map of its mode, as MLIR's `floordiv` and
// `mod` do: the block coordinate (mode floordiv size) or the coordinate inside the block
// (mode mod size). A blocked mode has both levels, the block level above the in-block one.
enum class BlockPart { None, Block, InBlock };
struct LevelBlock {
  BlockPart part = BlockPart::None;
  int64_t size = 0;  // the block's extent along the mode (0 when part is None)
  bool operator==(const LevelBlock&) const = default;
};

struct Format {
  std::string name;  // shorthand it came from ("csr"), or "custom"
  std::vector<LevelKind> levels;  // outermost first
  std::vector<int> mode_order;    // levels[l] stores tensor mode mode_order[l] (twice for a blocked mode)
  std::vector<int64_t> widths = {};  // per level: the ELL width of a SparseFixed level, else 0
  std::vector<LevelBlock> blocks = {};  // per level: its block map; empty when no level has one
  // A SparseFixed level under the top level, stored slot-major in groups of `interleave` parent
  // positions (made by decompose's "interleave" and by the "sell" format; 0: row-major, the default).
  int64_t interleave = 0;
  // That level's width varies by group (SELL-C-sigma's slices): a pos array holds each group's
  // first slot, and `widths` holds 0 for it (decompose's "sell" and the "sell" format).
  bool sliced = false;
  // SELL-C-sigma: the rows are sorted by decreasing length within windows of `sigma` rows (1: kept
  // in order). Pack sorts them so; the kernel only needs rows_unordered().
  int64_t sigma = 1;
  // The top (compressed) level lists every row exactly once (SELL's rows); with a `sigma` above 1
  // not in increasing order (sorted by length within windows: rows_unordered()).
  bool every_row_listed = false;
  bool all_dense() const;
  bool rows_unordered() const { return every_row_listed && sigma > 1; }
  // Whether level `level` holds every coordinate of its mode under each parent: a dense level, or
  // SELL's top level, which lists every row (so an output need not be sparse along it).
  bool lists_every_coordinate(size_t level) const {
    return levels[level] == LevelKind::Dense || (level == 0 && every_row_listed);
  }
  int64_t width(size_t level) const { return level < widths.size() ? widths[level] : 0; }
  LevelBlock block(size_t level) const { return level < blocks.size() ? blocks[level] : LevelBlock{}; }
  bool is_blocked() const;
  // Whether it stores entries its coordinates do not list: ELL slots past a row's length, the
  // zeros inside a block, a dense level under a sparse one.
  bool stores_padding() const;
  bool is_row_major_dense() const;  // all dense in the identity order
};

Format dense_format(int order);
// What `"format": "auto"` on an input of this order stores when nothing is measured: csr for a
// matrix, csf above, a sparse vector (sv) for a vector, dense for a scalar.
Format auto_input_format(int order);

// Schedule operations, in the order the config lists them. `path` is the op's JSON pointer
// (e.g. "/schedule/2"), used in every error about it.
struct ReorderOp { std::vector<std::string> order; };
struct SplitOp { std::string var; int64_t factor = 0; std::string outer, inner; };
// A split whose inner loop runs exactly `factor` times: whole groups, then a remainder loop.
struct TileOp { std::string var; int64_t factor = 0; std::string outer, inner; };
// The sum that each iteration of `var` computes (over a loop inside it) goes into a workspace
// indexed by `var`, and `var` moves inside that loop.
struct PrecomputeOp { std::string var; };
// EvenRows: a loop over the rows of a csr-like operand chooses on each call, from the operand's
// row positions: static where equal blocks of rows (one per thread) hold their entries evenly,
// else dynamic in chunks (`chunk`, default 512).
enum class OmpSchedule { Static, Dynamic, Guided, EvenRows };
const char* omp_schedule_name(OmpSchedule schedule);  // as the config spells it: "static", ..., "even_rows"
// `reduction`: how iterations that add into the same output entries combine: "atomic" (atomic
// adds) or "privatize" (per-thread copies of the output, added up after the loop); empty: none
// may race. `balance`: "nonzeros" cuts a loop over rows into `parts` ranges of equal nonzero
// counts (see docs/config.md); empty: iterations are shared by count.
struct ParallelOp {
  std::string var;
  OmpSchedule schedule = OmpSchedule::Static;
  int64_t chunk = 0;
  std::string reduction;
  std::string balance;
  int64_t parts = 0;  // with balance: how many ranges (0: the default)
};
// `lanes` (0: none): a loop that sums into scalars keeps that many partial sums per scalar,
// added up as a tree after the loop, instead of OpenMP's simd reduction.
// `lanes`: partial sums kept in that many lanes; `masked_tail`: the elements left after the
// whole groups of lanes are summed in one masked vector step where the arrays reach past them.
struct VectorizeOp {
  std::string var;
  int64_t lanes = 0;
  bool masked_tail = false;
};
struct UnrollOp { std::string var; int64_t factor = 0; };
// cuda: spread a loop's iterations over a GPU index. `to`: blockIdx.x, blockIdx.y, threadIdx.x,
// threadIdx.y or warp (the 32 lanes of a warp); `reduction`: "shuffle", "shared", "atomic" or
// empty; `threads`: the block's size along a threadIdx index (0: from the loop's trip count).
struct BindOp {
  std::string var, to, reduction;
  int64_t threads = 0;
};
// Two nested loops become one loop named `into`: over the stored entries of a sparse level and
// its parent (stage I, when `vars` are index variables that one operand stores that way), or
// over the product of two dense loops (stage II).
struct FuseOp { std::vector<std::string> vars; std::string into; };
// Stage I: store `tensor` (an order-2 csr input) as a composition of formats, each part with its
// own loop nest and schedule (passes/decompose_operand.h). `format` is "hyb" (`partitions`
// column parts x ELL `buckets`), "ell+coo" (ELL of `width`, the rest of each row in COO),
// "bsr+csr" (`block` rows x cols blocks holding at least `fill` of their entries, the rest CSR),
// "bsr" (every occupied block: BSR made from CSR by the inspector) or "sell" (SELL-C-sigma:
// slices of `interleave` rows, each padded to its longest row, the rows sorted by length within
// windows of `sigma`).
struct DecomposeOp {
  std::string tensor;
  std::string format;
  int64_t partitions = 1;
  std::vector<int64_t> buckets;
  int64_t width = 0;
  int64_t block_rows = 0, block_cols = 0;
  double fill = 0.5;
  // hyb, ell+coo: the ELL slots of each group of `interleave` rows stored slot by slot (the
  // rows' first slots, then their second ...), so that a loop over a group's rows in vector
  // lanes loads a slot's columns and values contiguously (SELL-C); 0: row by row.
  int64_t interleave = 0;
  // sell: rows sorted by decreasing length within each window of this many rows (1: not sorted).
  int64_t sigma = 1;
};

// cuda: at the start of each iteration of loop `var`, the threads of the block copy the part of
// `tensor` (a dense input) that the iteration reads into shared memory, and read it from there
// (passes/cache_operands.h). JSON: {"op": "cache", "tensor": "A", "at": "i"}.
struct CacheOp { std::string tensor, var; };

// cpu: in each iteration of loop `var` (over a csr-like compressed level's positions), prefetch
// the row of `tensor` (a dense input whose first level that loop's variable indexes) that the
// iteration `distance` positions ahead will read (passes/prefetch_rows.h). JSON: {"op":
// "prefetch", "tensor": "B", "at": "j", "distance": 8}.
struct PrefetchOp {
  std::string tensor, var;
  int64_t distance = 8;
};

// cpu: loop `var` (SDDMM's walk over a row's stored entries) runs `factor` iterations at once:
// their inner loops fused into one (unroll and jam), and the dot products they sum in lanes
// finished together by one transposing tree (passes/batch_entries.h). JSON: {"op": "batch",
// "var": "j", "factor": 4}; without a factor (0 here), by the dot products' length
// (batch_factor).
struct BatchOp {
  std::string var;
  int64_t factor = 0;
};

struct ScheduleOp {
  std::variant<ReorderOp, SplitOp, ParallelOp, VectorizeOp, UnrollOp, BindOp, TileOp, PrecomputeOp, FuseOp, DecomposeOp,
               CacheOp, PrefetchOp, BatchOp>
      op;
  int index = 0;     // position in the list
  std::string path;  // "/schedule/<index>"
  // After a decompose: the part the op schedules ("coo", "p0_b4"), or empty for every part whose
  // loops it names.
  std::string part;
  std::string reason;  // why `auto` chose it (shown in the header); empty for the config's own ops
  std::string name() const;  // "reorder", "split", ...
};

// "variants": [{"min_entries_per_row": 12, "schedule": [...]}]: a kernel scheduled otherwise for
// inputs whose rows hold at least that many stored entries on average, chosen on entry
// (passes/size_variants.h).
struct RowLengthVariant {
  int64_t min_entries_per_row = 0;
  std::vector<ScheduleOp> schedule;
  std::string path;  // "/variants/0", for errors
};

struct Config {
  std::string file;  // for diagnostics
  std::string name;  // kernel name: a C identifier
  Target target = Target::Cpu;
  ValueType value_type = ValueType::Float32;
  IndexType index_type = IndexType::Int32;
  std::map<std::string, Format> formats;  // every tensor of the spec, defaults filled in
  // The output's format is omitted or "auto": infer_output_format replaces its dense placeholder.
  bool infer_output_format = false;
  // Inputs whose format is "auto": stored in their order's default sparse format
  // (auto_input_format), which `spgen tune` measures against the alternatives.
  std::set<std::string> auto_formats;
  bool auto_schedule = false;             // "schedule": "auto"
  std::vector<ScheduleOp> schedule;
  // "sizes": index variable -> the size the kernel is specialized for (passes/specialize_sizes.h).
  std::map<std::string, int64_t> sizes;
  // "specialize": {"k": [16, 32]}: an index variable and the sizes that each get a kernel compiled
  // for that size, chosen on entry; other sizes run the generic kernel (passes/size_variants.h).
  // Unset: `auto` may choose (specialize_given false); {} given: none.
  std::map<std::string, std::vector<int64_t>> specialize;
  bool specialize_given = false;
  // "variants", largest threshold first.
  std::vector<RowLengthVariant> row_variants;
  // "structure": "S" on the output: it has exactly S's stored entries (S a sparse input read with
  // the output's indices, stored alike), and the right-hand side is evaluated there only.
  std::string output_structure;
  // "factor": whether `auto` rewrites a product of a sparse and two dense operands as two
  // statements (passes/factor_product.h): unset, where the statistics say it pays; false, never;
  // true, whenever such a form exists (the one its sizes say is cheapest).
  std::optional<bool> factor;
  // What `auto` knows of sparse inputs' structure, by tensor (--stats, or `spgen run`'s inputs).
  std::map<std::string, InputStats> stats;

  const Format& format_of(const std::string& tensor) const { return formats.at(tensor); }
};

// Pass 1b: read and validate the config against the spec. `default_name` is used when the
// config has no "name" (the spec file's stem). `target`, when given (the command line's
// --target), replaces the config's, and so do `sizes` (--size) for the index variables they name.
// `written`: in a spec of several statements, the formats of the tensors earlier statements
// wrote, which this statement reads as they were stored (whatever the config says of them).
// Errors are CompileError with the JSON path.
Config read_config(const std::string& file, const std::string& text, const ast::Spec& spec,
                   const std::string& default_name, std::optional<Target> target = std::nullopt,
                   const std::map<std::string, int64_t>& sizes = {}, const std::map<std::string, Format>* written = nullptr);

// The statistics of the spec's sparse inputs that `files` names (tensor -> path), each read by
// `read` (which throws std::exceptions on a bad file), checked: each names an input of the spec,
// stored sparse, and has its order. Errors are CompileErrors that name `flag` ("--stats"); where
// it is "--input" (`spgen run`, which passes every input file, and whose driver reports their
// errors itself) files of dense inputs, or that cannot be read or are of another order, are left
// out rather than refused.
std::map<std::string, InputStats> read_input_stats(const ast::Spec& spec, const Config& config,
                                                   const std::map<std::string, std::string>& files,
                                                   const std::function<InputStats(const std::string&)>& read,
                                                   const std::string& flag);

// One line per op, as it reads in a comment: `split(i, 32 -> i0, i1)`.
std::string describe_schedule_op(const ScheduleOp& op);

// "config.json: /schedule/1: error: <op>: message"
std::string schedule_op_error(const Config& config, const ScheduleOp& op, const std::string& message);
// ... thrown.
[[noreturn]] void fail_schedule_op(const Config& config, const ScheduleOp& op, const std::string& message);

}  // namespace spgen
