// Statistics of sparse inputs (--stats, `spgen run`'s inputs): how they are checked, and what
// `auto` decides from them.
#include <doctest/doctest.h>

#include "compile_helpers.h"

using namespace spgen_test;

namespace {

// A matrix whose entries lie `reach` rows from the diagonal on average, as if read from `path`.
spgen::InputStats matrix_stats(const std::string& path, double reach) {
  spgen::InputStats stats;
  stats.source = path;
  stats.dims = {2708, 2708};
  stats.nnz = 10556;
  stats.row_mean = 3.9;
  stats.row_cv = 1.3;
  stats.row_max = 168;
  stats.bandwidth_mean = reach;
  stats.static_split_imbalance = path == "even.mtx" ? 1.02 : 1.25;  // (cora's row blocks: 1.25)
  if (path == "uniform.mtx") stats.row_cv = 0.07;  // (wing's rows: 3.9 each, all alike)
  if (path == "long.mtx") stats.row_mean = 14.5;   // (astro-ph's)
  if (path == "wing.mtx" || path == "padded.mtx") {  // (wing's: 62032 rows of 2 to 4, 3.9 on average)
    stats.dims = {62032, 62032};
    stats.nnz = 243088;
    stats.row_mean = 3.92;
    stats.row_cv = 0.07;
    stats.row_max = path == "wing.mtx" ? 4 : 5;  // 5 slots a row would be 28 % padding
  }
  // (the block fills of the shared matrices, as tune::input_features measures them)
  stats.block_fill = {{2, 0.270}, {3, 0.125}, {4, 0.072}, {8, 0.019}};  // (cora's)
  if (path == "bcsstk16.mtx" || path == "half_full.mtx" || path == "full2.mtx") {  // (bcsstk16: 4884 rows of 59.5, in 3x3 blocks)
    stats.dims = {4884, 4884};
    stats.nnz = 290378;
    stats.row_mean = 59.5;
    stats.row_cv = 0.29;
    stats.row_max = 150;
    stats.block_fill = {{2, 0.797}, {3, path == "half_full.mtx" ? 0.85 : 0.981}, {4, 0.582}, {8, 0.418}};
    if (path == "full2.mtx") stats.block_fill = {{2, 1.0}, {3, 0.6}, {4, 0.5}, {8, 0.3}};
  }
  return stats;
}

spgen::Compilation compile_with_stats(const std::string& spec, const std::string& config,
                                      const std::map<std::string, std::string>& files, double reach,
                                      const std::string& flag = "--stats") {
  spgen::CompileInput input{"t.spg", spec, "c.json", config, std::nullopt, {}};
  input.stats_files = files;
  input.read_stats = [reach](const std::string& path) {
    if (path == "vector.mtx") {
      spgen::InputStats v = matrix_stats(path, 0);
      v.dims = {2708};
      return v;
    }
    if (path == "broken.mtx") throw std::runtime_error("broken.mtx:3: expected 3 fields");
    return matrix_stats(path, reach);
  };
  input.stats_flag = flag;
  return spgen::compile(input);
}

std::vector<std::string> described(const spgen::Compilation& c) {
  std::vector<std::string> out;
  for (const spgen::ScheduleOp& op : c.schedule) out.push_back(spgen::describe_schedule_op(op));
  return out;
}

std::string error_with_stats(const std::string& spec, const std::string& config, const std::map<std::string, std::string>& files,
                             const std::string& flag = "--stats") {
  try {
    compile_with_stats(spec, config, files, 800, flag);
  } catch (const spgen::CompileError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* const kSddmmAuto = R"({"tensors": {"X": {"format": "csr"}}, "schedule": "auto"})";
// A matrix whose format is left to spgen, under `auto`.
const char* const kAutoFormat = R"({"tensors": {"A": {"format": "auto"}}, "schedule": "auto"})";

}  // namespace

TEST_CASE("auto: SDDMM prefetches the rows of B, unless the input's statistics show them near one another") {
  // No statistics: a graph's rows assumed far apart, as in GNNs; the reason says so.
  spgen::Compilation assumed = compile(kSddmm, kSddmmAuto);
  CHECK(described(assumed) ==
        std::vector<std::string>{"parallel(i, dynamic, 128)", "vectorize(k, 16 lanes)", "prefetch(B at j, 8 ahead)", "batch(j)"});
  CHECK(contains(assumed.files[0].text, "//   auto, chose:\n"));
  CHECK(contains(assumed.files[0].text, "prefetch(B at j, 8 ahead): the rows of B read at X's coordinates assumed far apart "
                                         "(no statistics of X: --stats)"));
  CHECK(contains(assumed.stage2_dump, "# prefetch the row of B read 8 stored entries ahead"));
  // 837 rows of 32 floats apart (k fixed at 32): 105 KiB, far: prefetched, the figures named.
  spgen::Compilation far = compile_with_stats(kSddmm, R"({"sizes": {"k": 32}, "tensors": {"X": {"format": "csr"}}, "schedule": "auto"})",
                                              {{"X", "cora.mtx"}}, 837);
  CHECK(described(far)[2] == "prefetch(B at j, 8 ahead)");
  CHECK(contains(far.files[0].text, "lie far apart (X's mean |i - j| 837 rows of 128 bytes: 105 KiB)"));
  CHECK(contains(far.files[0].text, "//   auto, from the statistics of\n"
                                    "//     X (cora.mtx: 2708 x 2708, 10556 entries, 3.9 per row (at most 168), mean |i - j| 837, equal row blocks within 1.25x of even)\n"
                                    "//   chose:\n"));
  // 77 rows apart (a banded FEM matrix): 9.6 KiB, near: no prefetch.
  spgen::Compilation near = compile_with_stats(kSddmm, R"({"sizes": {"k": 32}, "tensors": {"X": {"format": "csr"}}, "schedule": "auto"})",
                                               {{"X", "bcsstk16.mtx"}}, 77);
  CHECK(described(near) == std::vector<std::string>{"parallel(i, dynamic, 128)", "vectorize(k, 16 lanes)", "batch(j)"});
  CHECK(!contains(near.stage2_dump, "prefetch"));
  // The same reach decides per width: 300 rows of 16 floats (19 KiB) are near, of 128 (150 KiB) far.
  auto prefetches = [](int64_t k) {
    spgen::Compilation c = compile_with_stats(kSddmm, R"({"sizes": {"k": )" + std::to_string(k) +
                                                          R"(}, "tensors": {"X": {"format": "csr"}}, "schedule": "auto"})",
                                              {{"X", "ego.mtx"}}, 300);
    return contains(c.stage2_dump, "prefetch B");
  };
  CHECK(!prefetches(16));
  CHECK(prefetches(128));
  // Auto's kernels per width decide each for its width; the header names those that differ.
  const std::string per_width = compile_with_stats(kSddmm, kSddmmAuto, {{"X", "ego.mtx"}}, 300).files[0].text;
  CHECK(contains(per_width, "//   for k = 64: prefetch(B at j, 8 ahead) as well: the rows of B read at X's coordinates lie far apart "
                            "(X's mean |i - j| 300 rows of 256 bytes: 75 KiB)"));
  CHECK(contains(per_width, "//   for k = 128: prefetch(B at j, 8 ahead) as well"));
  CHECK(!contains(per_width, "for k = 16:"));
  CHECK(!contains(per_width, "for k = 32:"));
  CHECK(contains(compile(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})").files[0].text,
                 "//   for k = 16: tile(k, 16 -> k0, k1) in place of tile(k, 32 -> k0, k1): 16 columns of the output's row at a time\n"));
  // Without a fixed width, k is taken as 32 and the reason says so.
  CHECK(contains(compile_with_stats(kSddmm, R"({"specialize": {}, "tensors": {"X": {"format": "csr"}}, "schedule": "auto"})",
                                    {{"X", "cora.mtx"}}, 837)
                     .files[0]
                     .text,
                 "rows of 128 bytes, k taken as 32: 105 KiB"));
  // SpMV reads one value of x per entry, no row: nothing to prefetch.
  CHECK(described(compile_with_stats(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})", {{"A", "cora.mtx"}}, 837)) ==
        std::vector<std::string>{"parallel(i, dynamic, 512)", "vectorize(j, 8 lanes, masked tail)"});
}

TEST_CASE("--stats: auto splits SpMV's rows statically where equal row blocks hold nearly equal entries") {
  const std::string config = R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})";
  spgen::Compilation even = compile_with_stats(kSpmv, config, {{"A", "even.mtx"}}, 20);
  CHECK(described(even) == std::vector<std::string>{"parallel(i, static)", "vectorize(j, 8 lanes, masked tail)"});
  CHECK(contains(even.files[0].text, "parallel(i, static): race-free outer loop; static: equal blocks of A's rows (2, 4, 8) hold "
                                     "within 1.02x of even entries"));
  // Uneven blocks (cora: 1.25x), or no statistics: dynamic, and the reason gives the figure.
  spgen::Compilation uneven = compile_with_stats(kSpmv, config, {{"A", "cora.mtx"}}, 837);
  CHECK(described(uneven)[0] == "parallel(i, dynamic, 512)");
  CHECK(contains(uneven.files[0].text, "(equal blocks of A's rows (2, 4, 8) hold up to 1.25x of even entries)"));
  // Without statistics the kernel checks on each call, from A's row positions (even_rows).
  CHECK(described(compile(kSpmv, config))[0] == "parallel(i, even_rows, 512)");
  // Only a row's walk in lanes (SpMV) takes it: SpMM's register tile stays dynamic.
  CHECK(described(compile_with_stats(kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})", {{"A", "even.mtx"}}, 20))[1] ==
        "parallel(i, dynamic, 128)");
}

TEST_CASE("--stats: each names a sparse input of the spec, of its order; a bad file is a precise error") {
  CHECK(error_with_stats(kSddmm, kSddmmAuto, {{"Z", "cora.mtx"}}) ==
        "spgen: error: --stats Z=cora.mtx: the spec has no input Z (its inputs: A, B, X)\n");
  CHECK(error_with_stats(kSddmm, kSddmmAuto, {{"Y", "cora.mtx"}}) ==
        "spgen: error: --stats Y=cora.mtx: the spec has no input Y (its inputs: A, B, X)\n");
  CHECK(error_with_stats(kSddmm, kSddmmAuto, {{"B", "cora.mtx"}}) ==
        "spgen: error: --stats B=cora.mtx: B is stored dense (dense): statistics describe the structure of a sparse input\n");
  CHECK(error_with_stats(kSddmm, kSddmmAuto, {{"X", "vector.mtx"}}) ==
        "spgen: error: --stats X=vector.mtx: an order-1 tensor, but X has 2 indices in the spec\n");
  CHECK(error_with_stats(kSddmm, kSddmmAuto, {{"X", "broken.mtx"}}) == "spgen: error: --stats X=broken.mtx: broken.mtx:3: expected 3 fields\n");
  // `spgen run` passes every --input file: those of dense inputs are left out, not refused.
  CHECK(error_with_stats(kSddmm, kSddmmAuto, {{"B", "b.mtx"}, {"X", "cora.mtx"}}, "--input") == "(no error)");
  // ... and so are files it cannot read, or of another order (a vector written as n x 1): the
  // driver reads them itself and reports what is wrong.
  CHECK(error_with_stats(kSddmm, kSddmmAuto, {{"X", "broken.mtx"}}, "--input") == "(no error)");
  CHECK(error_with_stats(kSddmm, kSddmmAuto, {{"X", "vector.mtx"}}, "--input") == "(no error)");
  spgen::Compilation run = compile_with_stats(kSddmm, kSddmmAuto, {{"A", "a.mtx"}, {"X", "cora.mtx"}}, 837, "--input");
  CHECK(run.config.stats.size() == 1);
  CHECK(run.config.stats.count("X") == 1);
  // An explicit schedule reads them without effect; the header names them only for `auto`.
  spgen::Compilation fixed = compile_with_stats(kSddmm, R"({"tensors": {"X": {"format": "csr"}}, "schedule": [{"op": "parallel", "var": "i"}]})",
                                                {{"X", "cora.mtx"}}, 837);
  CHECK(!contains(fixed.files[0].text, "statistics"));
}

TEST_CASE("auto decomposes an SpMV matrix whose format is \"auto\" into SELL where its rows are short and uneven") {
  const spgen::Compilation sell = compile_with_stats(kSpmv, kAutoFormat, {{"A", "cora.mtx"}}, 800);
  REQUIRE(sell.decomposition);
  CHECK(sell.decomposition->op.format == "sell");
  CHECK(sell.decomposition->op.interleave == 8);
  CHECK(sell.decomposition->op.sigma == 512);
  CHECK(contains(sell.files[0].text, "decompose(A, sell, slices of 8, sorted in windows of 512): \"format\": \"auto\" on A, whose rows "
                                     "are short and uneven (3.9 entries a row, coefficient of variation 1.30)"));
  CHECK(contains(sell.files[0].text, "\"auto\": read as csr and decomposed as its statistics say"));
  // Not where the rows are of one length or long, without statistics, with the format or the
  // schedule given, in doubles, or where y's rows are A's columns.
  auto decomposed = [](const spgen::Compilation& c) { return c.decomposition.has_value(); };
  CHECK(!decomposed(compile_with_stats(kSpmv, kAutoFormat, {{"A", "uniform.mtx"}}, 800)));
  CHECK(!decomposed(compile_with_stats(kSpmv, kAutoFormat, {{"A", "long.mtx"}}, 800)));
  CHECK(!decomposed(compile_with_stats(kSpmv, kAutoFormat, {}, 800)));
  CHECK(!decomposed(compile_with_stats(kSpmv, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto"})", {{"A", "cora.mtx"}}, 800)));
  CHECK(!decomposed(compile_with_stats(kSpmv, R"({"tensors": {"A": {"format": "auto"}}, "schedule": []})", {{"A", "cora.mtx"}}, 800)));
  CHECK(!decomposed(compile_with_stats(kSpmv, R"({"tensors": {"A": {"format": "auto"}}, "types": {"value": "float64"}, "schedule": "auto"})",
                                       {{"A", "cora.mtx"}}, 800)));
  CHECK(!decomposed(compile_with_stats("y(j) = A(i,j) * x(i)", R"({"tensors": {"A": {"format": "auto"}, "y": {"format": "dense"}}, "schedule": "auto"})",
                                       {{"A", "cora.mtx"}}, 800)));
  // SpMM (an output of rows of k) keeps csr: SELL is measured on SpMV only.
  CHECK(!decomposed(compile_with_stats(kSpmm, kAutoFormat, {{"A", "cora.mtx"}}, 800)));
}

TEST_CASE("auto decomposes an SpMV matrix whose format is \"auto\" into interleaved ELL where its rows are short and of nearly one length") {
  const spgen::Compilation ell = compile_with_stats(kSpmv, kAutoFormat, {{"A", "wing.mtx"}}, 800);
  REQUIRE(ell.decomposition);
  CHECK(ell.decomposition->op.format == "ell+coo");
  CHECK(ell.decomposition->op.width == 4);
  CHECK(ell.decomposition->op.interleave == 16);
  CHECK(contains(ell.files[0].text, "\"format\": \"auto\" on A, whose rows are short and of nearly one length (at most 4, 3.9 on "
                                    "average): ELL slots of that width, interleaved by 16 rows, fill vector lanes"));
  // Each part scheduled by auto: a tile of 16 rows in vector lanes over the ELL part.
  CHECK(contains(ell.files[0].text, "tile(i, 16 -> i_group, i_lane): the rows in groups of 16, as A_ell stores them"));
  // Not where the widest row would leave over a quarter of the slots padding, nor in SpMM.
  CHECK(!compile_with_stats(kSpmv, kAutoFormat, {{"A", "padded.mtx"}}, 800).decomposition);
  CHECK(!compile_with_stats(kSpmm, kAutoFormat, {{"A", "wing.mtx"}}, 800).decomposition);
}

TEST_CASE("auto decomposes an SpMV matrix whose format is \"auto\" into BSR where its blocks are nearly full") {
  const spgen::Compilation bsr = compile_with_stats(kSpmv, kAutoFormat, {{"A", "bcsstk16.mtx"}}, 800);
  REQUIRE(bsr.decomposition);
  CHECK(bsr.decomposition->op.format == "bsr");
  CHECK(bsr.decomposition->op.block_rows == 3);
  CHECK(bsr.decomposition->op.block_cols == 3);
  CHECK(contains(bsr.files[0].text, "\"format\": \"auto\" on A, whose 3x3 blocks are nearly full (98 % of their slots hold entries)"));
  // Of the block sizes at least 90 % full, the one of fewest bytes an entry: 2x2 blocks all full
  // (5 bytes an entry) are taken too.
  const spgen::Compilation full2 = compile_with_stats(kSpmv, kAutoFormat, {{"A", "full2.mtx"}}, 800);
  REQUIRE(full2.decomposition);
  CHECK(full2.decomposition->op.block_rows == 2);
  // Not where no block size is 90 % full (cora, and bcsstk16's 3x3 blocks at 85 %), nor in SpMM.
  CHECK(!compile_with_stats(kSpmv, kAutoFormat, {{"A", "half_full.mtx"}}, 800).decomposition);
  CHECK(compile_with_stats(kSpmv, kAutoFormat, {{"A", "cora.mtx"}}, 800).decomposition->op.format == "sell");
  CHECK(!compile_with_stats(kSpmm, kAutoFormat, {{"A", "bcsstk16.mtx"}}, 800).decomposition);
}
