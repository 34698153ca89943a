#include "passes/choose_input_format.h"

#include "passes/decompose_operand.h"

#include <optional>
#include "support/text.h"

namespace spgen {

namespace {

// Rows this short on average are one masked vector step and one horizontal sum each in csr's
// row sums, which SELL's slices of 8 rows share (SELL-8-512 over `auto`'s csr with statistics:
// citeseer (2.8 a row) 1.32x, cora (3.9) 1.14x, pubmed (4.5) 1.31x on one thread, 1.05-1.12x,
// 1.02-1.03x, 1.24-1.31x on two; astro-ph (14.5) 1.05x and 0.91x: bench/RESULTS.md, session 34).
constexpr double kShortRows = 8;
// ... and uneven: rows of one length (wing: 3.9 a row, cv 0.07) gain nothing from slices sorted
// by length (1.02x and 0.94-0.96x).
constexpr double kUnevenRows = 0.5;
// Slices of half an AVX-512 vector of floats, sorted within windows of 64 slices (session 34:
// slices of 8 beat 16 wherever SELL won; wider windows pad less, but on two threads windows of
// thousands of rows gave the first thread the long rows).
constexpr int64_t kSliceRows = 8;
constexpr int64_t kSortWindow = 64 * kSliceRows;
// Rows of nearly one short length (wing: at most 4, 3.9 on average) instead fill ELL slots of
// that width, interleaved by an AVX-512 vector of floats, with next to no padding: 1.30-1.39x
// over `auto`'s csr on wing, three runs of bench_kernels --tuned, where `spgen tune` had chosen
// it (bench/RESULTS.md, session 36). At most a quarter of the slots padding.
constexpr int64_t kEllLanes = 16;
constexpr double kEllPadding = 1.25;

// Blocks nearly full (a FEM matrix of 3 degrees of freedom a node: bcsstk16's 3x3 blocks hold
// 98 % of their slots) store a value per slot and a column per block: BSR reads 4.5 bytes an
// entry there against csr's 8, and the r x r product needs no horizontal sums. Taken where the
// cheapest block size reads at most 2/3 of csr's bytes and its blocks are at least 90 % full, so
// little of x is multiplied by padding. bcsstk16, 2 threads: 1.18x over `auto`'s csr in tune's
// interleaved rounds, 1.3-2.1x by the same peers in three runs (bench/RESULTS.md, session 37);
// bsr+csr lost to csr there, its csr part walking every row for 2 % of the entries.
constexpr double kFullBlocks = 0.9;
constexpr double kBlockBytesShare = 2.0 / 3.0;

// The r x r blocks (r of s.block_fill) whose slots and column indices read the fewest bytes an
// entry (4-byte values and indices), if few enough.
std::optional<int64_t> block_size_for(const InputStats& s) {
  std::optional<int64_t> best;
  double best_bytes = kBlockBytesShare * 8.0;
  for (const auto& [r, fill] : s.block_fill) {
    if (fill < kFullBlocks) continue;
    const double bytes = (4.0 + 4.0 / static_cast<double>(r * r)) / fill;
    if (bytes <= best_bytes) best = r, best_bytes = bytes;
  }
  return best;
}

// The decomposition that suits these rows, or none.
std::optional<DecomposeOp> decomposition_for(const std::string& tensor, const InputStats& s, std::string& why) {
  const int64_t rows = s.dims[0];
  if (const std::optional<int64_t> r = block_size_for(s)) {
    const std::string block = std::to_string(*r) + "x" + std::to_string(*r);
    why = "whose " + block + " blocks are nearly full (" + format_number("%.0f", 100 * s.block_fill.at(*r)) +
          " % of their slots hold entries): stored as BSR, a column index a block";
    return DecomposeOp{tensor, "bsr", 1, {}, 0, *r, *r, 0.5, 0, 1};
  }
  if (s.row_mean <= kShortRows && s.row_cv >= kUnevenRows) {
    why = "whose rows are short and uneven (" + format_number("%.1f", s.row_mean) + " entries a row, coefficient of variation " +
          format_number("%.2f", s.row_cv) + "): slices of " + std::to_string(kSliceRows) + " rows fill vector lanes";
    return DecomposeOp{tensor, "sell", 1, {}, 0, 0, 0, 0.5, kSliceRows, kSortWindow};
  }
  if (s.row_max > 0 && s.row_max <= kShortRows && static_cast<double>(s.row_max * rows) <= kEllPadding * static_cast<double>(s.nnz)) {
    why = "whose rows are short and of nearly one length (at most " + std::to_string(s.row_max) + ", " +
          format_number("%.1f", s.row_mean) + " on average): ELL slots of that width, interleaved by " +
          std::to_string(kEllLanes) + " rows, fill vector lanes";
    return DecomposeOp{tensor, "ell+coo", 1, {}, s.row_max, 0, 0, 0.5, kEllLanes, 1};
  }
  return std::nullopt;
}

}  // namespace

void choose_input_formats(const ast::Spec& spec, Config& config) {
  if (!config.auto_schedule || !config.schedule.empty() || config.target != Target::Cpu ||
      config.value_type != ValueType::Float32 || spec.output.indices.size() != 1)
    return;
  for (const std::string& tensor : config.auto_formats) {
    const auto stats = config.stats.find(tensor);
    if (stats == config.stats.end() || stats->second.dims.size() != 2) continue;
    std::string why;
    const std::optional<DecomposeOp> decomposition = decomposition_for(tensor, stats->second, why);
    if (!decomposition) continue;
    // The output's rows are the matrix's (y(i) = A(i,j) x(j), not A's transpose).
    const ast::Access* access = nullptr;
    for (const ast::Access* a : ast::collect_accesses(*spec.rhs))
      if (a->tensor == tensor) access = a;
    if (!access || access->indices.front() != spec.output.indices.front()) continue;
    if (!decompose_refusal(spec, config, tensor).empty()) continue;
    ScheduleOp op;
    op.op = *decomposition;
    op.path = "/schedule";
    op.reason = "\"format\": \"auto\" on " + tensor + ", " + why + "; call the inspector, " + config.name + "_decompose_" +
                tensor + ", on the csr arrays first";
    config.schedule.push_back(std::move(op));
    return;  // (one decomposition a kernel)
  }
}

const ScheduleOp* decomposition_chosen_by_auto(const Config& config) {
  if (!config.auto_schedule || config.schedule.empty() || config.schedule.front().reason.empty()) return nullptr;
  return std::holds_alternative<DecomposeOp>(config.schedule.front().op) ? &config.schedule.front() : nullptr;
}

}  // namespace spgen
