// spgen tune's parts on their own: input features, the search space, the cost model, the search
// (with a fake evaluator: deterministic, no compiler), and the tuning database.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "compile_helpers.h"
#include "frontend/config_writer.h"
#include "tune/cost_model.h"
#include "tune/features.h"
#include "tune/format_space.h"
#include "tune/search.h"
#include "tune/search_space.h"
#include "tune/tuning_db.h"

using namespace spgen;
using namespace spgen::tune;

namespace {

spgen_ref::Tensor matrix(std::vector<int64_t> dims, std::vector<std::pair<int64_t, int64_t>> entries) {
  spgen_ref::Tensor t;
  t.dims = dims;
  for (auto [i, j] : entries) {
    t.coords.push_back(i);
    t.coords.push_back(j);
    t.vals.push_back(1.0);
  }
  return t;
}

// The space around the auto schedule of `spec` with `tensors` (a config's "tensors" object), a
// choice kept where the config with it compiles.
struct AutoSpace {
  AutoSpace(const std::string& spec, const nlohmann::json& tensors, const std::vector<std::string>& dense_inputs)
      : c(spgen_test::compile(spec, nlohmann::json{{"tensors", tensors}, {"schedule", "auto"}}.dump())),
        space(build_search_space(c.explicit_schedule, c.config, dense_inputs, c.spec.index_vars, [&](const std::vector<ScheduleOp>& ops) {
          nlohmann::json config = {{"tensors", tensors}, {"schedule", nlohmann::json::parse(schedule_json(ops).dump())}};
          return spgen_test::error_of(spec, config.dump()) == "(no error)";
        })) {}
  Compilation c;
  SearchSpace space;
};

// SpMM's (a parallel loop, a register tile, a prefetch to add).
struct SpmmSpace : AutoSpace {
  SpmmSpace() : AutoSpace(spgen_test::kSpmm, {{"A", {{"format", "csr"}}}}, {"B"}) {}
};

const Knob* knob_named(const SearchSpace& space, const std::string& prefix) {
  for (const Knob& k : space.knobs)
    if (k.name.rfind(prefix, 0) == 0) return &k;
  return nullptr;
}

// A fake evaluator: each point costs `cost(point)` ms, `noise(point, n)` added to its n-th
// measurement; each measurement takes `seconds` of a fake clock.
struct FakeEvaluator : Evaluator {
  std::function<double(const Point&)> cost;
  std::function<double(const Point&, int)> noise = [](const Point&, int) { return 0.0; };
  double seconds = 1;
  double clock = 0;
  int interrupt_after = -1;
  std::map<Point, int> count;
  std::vector<Point> order;
  Measurement measure(const Point& p) override {
    clock += seconds;
    order.push_back(p);
    const double ms = cost(p) + noise(p, count[p]++);
    if (ms <= 0) return {false, 0, "refused"};
    return {true, ms, ""};
  }
  double elapsed_s() const override { return clock; }
  bool interrupted() const override { return interrupt_after >= 0 && static_cast<int>(order.size()) >= interrupt_after; }
};

// An additive cost: each knob's choice c costs `base[k][c]`; auto's point costs 10 ms.
std::function<double(const Point&)> additive(const SearchSpace& space, int favourite_knob, int favourite_choice) {
  return [=, &space](const Point& p) {
    double ms = 10;
    for (size_t k = 0; k < space.knobs.size(); ++k)
      ms += p[k] == 0 ? 0 : (static_cast<int>(k) == favourite_knob && p[k] == favourite_choice ? -4 : 0.5 + 0.1 * p[k]);
    return ms;
  };
}

}  // namespace

TEST_CASE("tune features: row statistics, empty rows, histogram, block fill, structure hash") {
  // Rows of lengths 2, 0, 1, 4 in a 4 x 8 matrix.
  spgen_ref::Tensor t = matrix({4, 8}, {{0, 0}, {0, 1}, {2, 5}, {3, 0}, {3, 1}, {3, 2}, {3, 3}});
  InputFeatures f = input_features(t);
  CHECK(f.nnz == 7);
  CHECK(f.row_mean == doctest::Approx(7.0 / 4));
  CHECK(f.row_max == 4);
  CHECK(f.empty_rows == 1);
  CHECK(f.row_log2_histogram == std::vector<int64_t>{1, 1, 1, 1});  // 0 | 1 | 2-3 | 4-7
  CHECK(f.row_cv > 0.5);
  CHECK(f.col_max == 2);
  // 2 x 2 blocks: {0,0} holds 2 entries... (0,0),(0,1) | (2,5) | (3,0),(3,1) | (3,2),(3,3): 4 blocks.
  CHECK(f.block_fill_2 == doctest::Approx(7.0 / 16));
  CHECK(f.bandwidth_mean == doctest::Approx((0 + 1 + 3 + 3 + 2 + 1 + 0) / 7.0));
  CHECK(input_features(t).structure_hash == f.structure_hash);
  spgen_ref::Tensor moved = matrix({4, 8}, {{0, 0}, {0, 1}, {2, 5}, {3, 0}, {3, 1}, {3, 2}, {3, 4}});
  CHECK(input_features(moved).structure_hash != f.structure_hash);
  InputFeatures back = InputFeatures::from_json(f.to_json());
  CHECK(back.to_json() == f.to_json());
  CHECK(feature_distance(f, back) == 0);
  CHECK(feature_distance(f, input_features(matrix({400, 800}, {{1, 1}}))) > 1);
}

TEST_CASE("static_split_imbalance: OpenMP's static blocks of 2, 4 and 8, the worst over the mean") {
  // 8 rows of one entry: every split is even.
  std::vector<std::pair<int64_t, int64_t>> diagonal;
  for (int64_t r = 0; r < 8; ++r) diagonal.push_back({r, r});
  CHECK(static_split_imbalance(matrix({8, 8}, diagonal)) == doctest::Approx(1.0));
  // 9 rows of one: libgomp gives the first block the extra row (5 + 4; 3 + 2 + 2 + 2; 2 + 1 x 7),
  // and 8 blocks are the worst: 2 / (9 / 8).
  diagonal.push_back({8, 8});
  CHECK(static_split_imbalance(matrix({9, 9}, diagonal)) == doctest::Approx(2.0 / (9.0 / 8.0)));
  // All entries in the first half: 2x at 2 blocks, 8x at 8 blocks... of 16 rows.
  std::vector<std::pair<int64_t, int64_t>> top;
  for (int64_t r = 0; r < 2; ++r) top.push_back({r, 0});
  CHECK(static_split_imbalance(matrix({16, 4}, top)) == doctest::Approx(8.0));
  CHECK(static_split_imbalance(matrix({16, 4}, {})) == 0);
}

TEST_CASE("tune features: a hypersparse matrix costs its entries, not its dimensions") {
  // 3 x 3037000499 with entries in rows 0 and 2 (one column twice): arrays sized by the
  // dimensions would take 24 GB (spgen run's --stats read it so, and was killed for memory).
  const int64_t wide = 3037000499;
  InputFeatures f = input_features(matrix({3, wide}, {{0, wide - 1}, {2, 7}, {2, wide - 1}}));
  CHECK(f.empty_rows == 1);
  CHECK(f.row_max == 2);
  CHECK(f.row_mean == doctest::Approx(1.0));
  CHECK(f.row_log2_histogram == std::vector<int64_t>{1, 1, 1});  // 0 | 1 | 2-3
  CHECK(f.col_max == 2);
  CHECK(f.col_mean == doctest::Approx(3.0 / static_cast<double>(wide)));
  // Rows of lengths 1, 0, 2: mean 1, variance 2/3.
  CHECK(f.row_cv == doctest::Approx(std::sqrt(2.0 / 3.0)));
}

TEST_CASE("tune search space: knobs around SpMM's auto schedule, each choice legal") {
  SpmmSpace s;
  const Knob* parallel = knob_named(s.space, "parallel");
  const Knob* tile = knob_named(s.space, "tile");
  const Knob* prefetch = knob_named(s.space, "prefetch");
  REQUIRE(parallel);
  REQUIRE(tile);
  REQUIRE(prefetch);
  CHECK(parallel->labels.front() == "dynamic,128");  // auto's own choice first
  CHECK(parallel->labels.size() >= 7);
  CHECK(tile->labels == std::vector<std::string>{"32", "8", "16", "64"});
  CHECK(prefetch->labels.front() == "none");
  CHECK(std::find(prefetch->labels.begin(), prefetch->labels.end(), "B at j +8") != prefetch->labels.end());
  // The origin is auto's schedule; a point changes only its knobs' ops.
  CHECK(describe_point(s.space, s.space.origin()) == "auto");
  Point p = s.space.origin();
  const size_t tile_knob = static_cast<size_t>(tile - s.space.knobs.data());
  p[tile_knob] = 2;
  std::vector<ScheduleOp> ops = schedule_at(s.space, p);
  CHECK(std::get<TileOp>(ops[tile->op_index].op).factor == 16);
  CHECK(describe_point(s.space, p) == "tile k=16");
  CHECK(point_from_labels(s.space, point_labels(s.space, p)) == p);
  nlohmann::json unknown = point_labels(s.space, p);
  unknown["tile k"] = "24";
  CHECK(!point_from_labels(s.space, unknown));
  CHECK(s.space.size() == parallel->values.size() * tile->values.size() * prefetch->values.size());
}

TEST_CASE("tune search space: SpMV's row sum in lanes, its tail masked or one by one") {
  AutoSpace spmv(spgen_test::kSpmv, {{"A", {{"format", "csr"}}}}, {"x"});
  const Knob* lanes = knob_named(spmv.space, "lanes j");
  const Knob* tail = knob_named(spmv.space, "tail j");
  REQUIRE(lanes);
  REQUIRE(tail);
  CHECK(lanes->labels.front() == "8");  // auto's own
  CHECK(tail->labels == std::vector<std::string>{"masked", "scalar"});
  Point p = spmv.space.origin();
  p[static_cast<size_t>(tail - spmv.space.knobs.data())] = 1;
  const std::vector<ScheduleOp> ops = schedule_at(spmv.space, p);
  CHECK(!std::get<VectorizeOp>(ops[tail->op_index].op).masked_tail);
  CHECK(describe_point(spmv.space, p) == "tail j=scalar");
  // (The scalar tail compiles: AutoSpace kept only choices whose config compiles.)
  CHECK(spgen_test::error_of(spgen_test::kSpmv, nlohmann::json{{"tensors", {{"A", {{"format", "csr"}}}}},
                                                               {"schedule", nlohmann::json::parse(schedule_json(ops).dump())}}
                                                     .dump()) == "(no error)");
  // dcsr rows refuse a masked tail (no dense row loop bounds its reads): auto gives none, and
  // the knob offers none.
  AutoSpace dcsr(spgen_test::kSpmv, {{"y", {{"format", "dense"}}}, {"A", {{"format", "dcsr"}}}}, {"x"});
  CHECK(!knob_named(dcsr.space, "tail"));
}

TEST_CASE("tune search space: a float64 kernel sized k = 8 tiles by at most 8") {
  Compilation c = spgen_test::compile(spgen_test::kSpmm, R"({"tensors": {"A": {"format": "csr"}}, "schedule": "auto", "types": {"value": "float64"}, "sizes": {"k": 8}})");
  SearchSpace space = build_search_space(c.explicit_schedule, c.config, {"B"}, c.spec.index_vars, [](const auto&) { return true; });
  const Knob* tile = knob_named(space, "tile");
  REQUIRE(tile);
  for (const nlohmann::json& v : tile->values) CHECK(v.get<int64_t>() <= 8);
}

TEST_CASE("tune cost model: fitted effects rank an additive cost") {
  SpmmSpace s;
  CostModel model(s.space);
  auto cost = additive(s.space, 0, 3);
  std::vector<Point> seen = {s.space.origin()};
  for (size_t k = 0; k < s.space.knobs.size(); ++k)
    for (int c = 1; c < static_cast<int>(s.space.knobs[k].values.size()); ++c) {
      Point p = s.space.origin();
      p[k] = c;
      seen.push_back(p);
    }
  CHECK(model.predict_log_ms(s.space.origin()) == 0);  // unfitted
  for (const Point& p : seen) model.add(p, cost(p));
  model.fit();
  CHECK(model.effect(0, 3) < -0.2);
  CHECK(model.effect(0, 1) > 0);
  Point best = s.space.origin();
  best[0] = 3;
  Point worse = s.space.origin();
  worse[0] = 1;
  CHECK(model.predict_log_ms(best) < model.predict_log_ms(s.space.origin()));
  CHECK(model.predict_log_ms(worse) > model.predict_log_ms(s.space.origin()));
}

TEST_CASE("tune search: finds the faster choice, deterministically for a seed") {
  SpmmSpace s;
  FakeEvaluator a, b;
  a.cost = b.cost = additive(s.space, 0, 3);
  SearchOptions options;
  options.budget_s = 40;
  options.seed = 7;
  SearchResult r = run_search(s.space, a, options);
  SearchResult again = run_search(s.space, b, options);
  CHECK(a.order == b.order);
  Point want = s.space.origin();
  want[0] = 3;
  CHECK(r.best == want);
  CHECK(r.best_ms == doctest::Approx(6));
  CHECK(r.auto_ms == doctest::Approx(10));
  CHECK(r.stop_reason != "");
  // The leaders were measured again, interleaved with auto.
  CHECK(std::count_if(r.trials.begin(), r.trials.end(), [&](const Trial& t) { return t.round == -1 && t.point == s.space.origin(); }) == 5);
  // Within the budget (the confirmation rounds come after the 85 % mark).
  CHECK(a.clock <= 40 + 5 * 4);
}

TEST_CASE("tune search: never returns a point slower than auto, nor one faster only by noise") {
  SpmmSpace s;
  SearchOptions options;
  options.budget_s = 30;
  SUBCASE("every candidate slower") {
    FakeEvaluator e;
    e.cost = [&](const Point& p) { return p == s.space.origin() ? 1.0 : 1.5; };
    SearchResult r = run_search(s.space, e, options);
    CHECK(r.best == s.space.origin());
  }
  SUBCASE("a candidate 2 % faster: below the 3 % margin") {
    FakeEvaluator e;
    e.cost = [&](const Point& p) { return p == s.space.origin() ? 1.0 : p[0] == 2 ? 0.98 : 1.2; };
    CHECK(run_search(s.space, e, options).best == s.space.origin());
  }
  SUBCASE("a candidate faster at first, slower than auto in two of the five interleaved rounds") {
    FakeEvaluator e;
    e.cost = [&](const Point& p) { return p == s.space.origin() ? 1.0 : p[0] == 2 ? 0.7 : 1.2; };
    e.noise = [&](const Point& p, int n) { return p[0] == 2 && (n == 2 || n == 4) ? 0.5 : 0.0; };
    CHECK(run_search(s.space, e, options).best == s.space.origin());
  }
  SUBCASE("... and slower in one round only: a burst of load, it still wins") {
    FakeEvaluator e;
    e.cost = [&](const Point& p) { return p == s.space.origin() ? 1.0 : p[0] == 2 ? 0.7 : 1.2; };
    e.noise = [&](const Point& p, int n) { return p[0] == 2 && n == 2 ? 0.5 : 0.0; };
    CHECK(run_search(s.space, e, options).best[0] == 2);
  }
  SUBCASE("refused candidates are skipped") {
    FakeEvaluator e;
    e.cost = [&](const Point& p) { return p == s.space.origin() ? 1.0 : p[0] == 1 ? 0.5 : -1; };
    SearchResult r = run_search(s.space, e, options);
    CHECK(r.best[0] == 1);
    CHECK(std::any_of(r.trials.begin(), r.trials.end(), [](const Trial& t) { return !t.result.ok; }));
  }
}

TEST_CASE("tune search: stops when interrupted, and seeds come first") {
  SpmmSpace s;
  FakeEvaluator e;
  e.cost = additive(s.space, 0, 3);
  e.interrupt_after = 3;
  SearchOptions options;
  Point seed = s.space.origin();
  seed[1] = 2;
  options.seeds = {seed};
  SearchResult r = run_search(s.space, e, options);
  CHECK(r.stop_reason == "interrupted");
  CHECK(e.order.size() == 3);
  // auto twice (its first run only sizes the later ones), then the seed.
  CHECK(e.order[0] == s.space.origin());
  CHECK(e.order[1] == s.space.origin());
  CHECK(e.order[2] == seed);
  CHECK(r.best == s.space.origin());  // no confirmation rounds: auto stays
}

TEST_CASE("tune search: auto's first run, the evaluator's calibration, gives way to the second") {
  SpmmSpace s;
  FakeEvaluator e;
  int auto_runs = 0;
  // The first run of auto caught a burst of other work: 1000x its time.
  e.cost = [&](const Point& p) { return p == s.space.origin() ? (auto_runs++ == 0 ? 1000.0 : 1.0) : 3.0; };
  SearchResult r = run_search(s.space, e, SearchOptions{});
  CHECK(r.auto_ms == doctest::Approx(1.0));
  CHECK(r.best == s.space.origin());
  // No candidate 3x slower than auto went to the confirmation rounds (round -1).
  CHECK(std::none_of(r.trials.begin(), r.trials.end(), [&](const Trial& t) { return t.round == -1; }));
}

TEST_CASE("tune database: records round-trip; other schemas and broken lines are skipped") {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "spgen-test-tune-db.jsonl";
  std::filesystem::remove(path);
  CHECK(read_tuning_db(path).empty());
  DbRecord r{"key1", {{"A", {{"nnz", 3}}}}, {{"parallel i", "static"}}, 1.5, true, true};
  REQUIRE(append_tuning_db(path, {r, r}));
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"schema\": 99, \"key\": \"x\"}\nnot json\n{\"schema\": 1, \"key\": \"partial\"}\n";
  }
  REQUIRE(append_tuning_db(path, {DbRecord{"key2", {}, {}, 2.0, false, false}}));
  std::vector<DbRecord> back = read_tuning_db(path);
  REQUIRE(back.size() == 3);
  CHECK(back[0].key == "key1");
  CHECK(back[0].labels == r.labels);
  CHECK(back[0].median_ms == 1.5);
  CHECK(back[0].winner);
  CHECK(back[2].key == "key2");
  CHECK(!back[2].ok);
  std::filesystem::remove(path);
  CHECK(tuning_db_path("off").empty());
  CHECK(tuning_db_path("/tmp/x.jsonl") == "/tmp/x.jsonl");
}

TEST_CASE("tune search space: SDDMM's auto schedule gets lanes, prefetch and batch knobs") {
  AutoSpace sddmm(spgen_test::kSddmm, {{"X", {{"format", "csr"}}}}, {"A", "B"});
  const SearchSpace& space = sddmm.space;
  const Knob* lanes = knob_named(space, "lanes");
  const Knob* batch = knob_named(space, "batch");
  REQUIRE(lanes);
  REQUIRE(batch);
  CHECK(lanes->labels.front() == "16");
  // auto batches j by the dot products' length: the knob starts there, and may leave it out or
  // fix a factor, one batch at a time.
  CHECK(batch->labels == std::vector<std::string>{"j by length", "none", "j x2", "j x4", "j x8"});
  // auto prefetches B's rows: the knob starts there, and may leave it out or change its distance,
  // one prefetch at a time.
  const Knob* prefetch = knob_named(space, "prefetch");
  REQUIRE(prefetch);
  CHECK(prefetch->labels == std::vector<std::string>{"B at j +8", "none", "B at j +4", "B at j +16"});
  auto prefetches = [&](int choice) {
    Point q = space.origin();
    q[static_cast<size_t>(prefetch - space.knobs.data())] = choice;
    std::vector<std::string> found;
    for (const ScheduleOp& op : schedule_at(space, q))
      if (std::holds_alternative<PrefetchOp>(op.op)) found.push_back(describe_schedule_op(op));
    return found;
  };
  CHECK(prefetches(0) == std::vector<std::string>{"prefetch(B at j, 8 ahead)"});
  CHECK(prefetches(1).empty());
  CHECK(prefetches(3) == std::vector<std::string>{"prefetch(B at j, 16 ahead)"});
  Point p = space.origin();
  p[static_cast<size_t>(batch - space.knobs.data())] = 3;
  std::vector<ScheduleOp> ops = schedule_at(space, p);
  REQUIRE(std::holds_alternative<BatchOp>(ops.back().op));
  CHECK(std::get<BatchOp>(ops.back().op).factor == 4);
  CHECK(std::count_if(ops.begin(), ops.end(), [](const ScheduleOp& op) { return std::holds_alternative<BatchOp>(op.op); }) == 1);
  p[static_cast<size_t>(batch - space.knobs.data())] = 1;
  const std::vector<ScheduleOp> none = schedule_at(space, p);
  CHECK(std::none_of(none.begin(), none.end(), [](const ScheduleOp& op) { return std::holds_alternative<BatchOp>(op.op); }));
}

TEST_CASE("tune formats: the default first, then what the features make worth a run") {
  auto labels = [](const std::vector<FormatChoice>& choices) {
    std::vector<std::string> out;
    for (const FormatChoice& c : choices) out.push_back(c.label);
    return out;
  };
  // Unknown features (a random input): only the formats that need none.
  CHECK(labels(format_choices("A", 2, nullptr, true)) == std::vector<std::string>{"csr", "csc"});
  // Where auto decomposes the default itself (SELL from the statistics), plain csr is a choice too.
  const std::vector<spgen::tune::FormatChoice> decomposed = format_choices("A", 2, nullptr, true, 0, "decompose(A, sell)");
  CHECK(labels(decomposed) == std::vector<std::string>{"csr, decompose(A, sell) by auto", "csr", "csc"});
  CHECK(decomposed[1].entry == nlohmann::json{{"format", "csr"}});
  CHECK(decomposed[1].schedule.is_null());
  CHECK(labels(format_choices("x", 1, nullptr, true)) == std::vector<std::string>{"sv", "dense"});
  CHECK(labels(format_choices("B", 3, nullptr, true)) == std::vector<std::string>{"csf", "coo"});
  CHECK(format_choices("s", 0, nullptr, true).empty());
  // Four full 2 x 2 blocks of an 8 x 8 matrix, one in each 4 x 4 quarter: bsr 2x2 (fill 1), not
  // 4x4 or 8x8 (fill 0.25); rows of 2 entries each: ell 2, no padding.
  std::vector<std::pair<int64_t, int64_t>> entries;
  for (auto [bi, bj] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {2, 6}, {4, 2}, {6, 4}})
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j) entries.push_back({bi + i, bj + j});
  const InputFeatures blocks = input_features(matrix({8, 8}, entries));
  const std::vector<FormatChoice> choices = format_choices("A", 2, &blocks, false);
  CHECK(labels(choices) == std::vector<std::string>{"csr", "csc", "ell 2", "bsr 2x2"});
  CHECK(choices[2].entry == nlohmann::json{{"format", "ell"}, {"width", 2}});
  CHECK(choices[3].entry == nlohmann::json{{"format", "bsr"}, {"block", {2, 2}}});
  // Three full 3 x 3 blocks on the diagonal of a 9 x 9 matrix (a FEM matrix of 3 degrees of
  // freedom per node): bsr 3x3.
  std::vector<std::pair<int64_t, int64_t>> nodes;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) nodes.push_back({3 * b + i, 3 * b + j});
  const InputFeatures fem = input_features(matrix({9, 9}, nodes));
  CHECK(fem.block_fill_3 == doctest::Approx(1.0));
  const std::vector<std::string> fem_labels = labels(format_choices("A", 2, &fem, false));
  CHECK(std::find(fem_labels.begin(), fem_labels.end(), "bsr 3x3") != fem_labels.end());
  // One long row among empty ones: ELL would pad every row to it (refused); most rows empty: dcsr.
  const InputFeatures skewed = input_features(matrix({10, 10}, {{0, 0}, {0, 3}, {0, 5}, {0, 9}, {7, 1}}));
  CHECK(labels(format_choices("A", 2, &skewed, false)) == std::vector<std::string>{"csr", "csc", "dcsr"});
  // Where the schedule is open, hyb too: buckets up to the width that holds 99 % of the rows
  // (here every row: 8 empty rows, one of 1 entry, one of 4), each bucket scheduled by auto.
  const std::vector<FormatChoice> composed = format_choices("A", 2, &skewed, true);
  REQUIRE(composed.back().label == "hyb 1-8");
  CHECK(composed.back().entry == nlohmann::json{{"format", "csr"}});
  CHECK(composed.back().schedule == nlohmann::json::parse(R"([
    {"op": "decompose", "tensor": "A", "format": "hyb", "buckets": [1, 2, 4, 8]}, "auto"])"));
  // With lanes, hyb with its buckets interleaved by them (SELL-C) as well, and SELL-C-sigma in
  // slices of half and all the lanes.
  const std::vector<FormatChoice> lanes = format_choices("A", 2, &skewed, true, 16);
  REQUIRE(lanes.size() == composed.size() + 3);
  const FormatChoice& sell = lanes[composed.size()];
  CHECK(sell.label == "hyb 1-8 in 16 lanes");
  CHECK(labels(lanes).back() == "sell 16-1024");
  CHECK(lanes[lanes.size() - 2].label == "sell 8-512");
  CHECK(lanes.back().entry == nlohmann::json{{"format", "csr"}});
  CHECK(lanes.back().schedule == nlohmann::json::parse(R"([
    {"op": "decompose", "tensor": "A", "format": "sell", "interleave": 16, "sigma": 1024}, "auto"])"));
  // ELL that pays (rows of 2 entries) comes interleaved as well: ell+coo whose coo part stays empty.
  const std::vector<FormatChoice> ell = format_choices("A", 2, &blocks, true, 16);
  const FormatChoice& ell_lanes = ell.back();
  REQUIRE(ell_lanes.label == "ell 2 in 16 lanes");
  CHECK(ell_lanes.entry == nlohmann::json{{"format", "csr"}});
  CHECK(ell_lanes.schedule == nlohmann::json::parse(R"([
    {"op": "decompose", "tensor": "A", "format": "ell+coo", "width": 2, "interleave": 16}, "auto"])"));
  CHECK(sell.schedule == nlohmann::json::parse(R"([
    {"op": "decompose", "tensor": "A", "format": "hyb", "buckets": [1, 2, 4, 8], "interleave": 16}, "auto"])"));
}

TEST_CASE("tune formats: a knob per open input, choices its compile check refuses left out") {
  std::map<std::string, InputFeatures> features = {{"A", input_features(matrix({4, 4}, {{0, 0}, {1, 1}, {2, 2}, {3, 3}}))}};
  auto all_but = [](const std::string& refused) {
    return [refused](const std::string&, const FormatChoice& choice) { return choice.entry.at("format") != refused; };
  };
  SearchSpace space = build_format_space({{"A", 2}, {"x", 1}}, features, false, 16, all_but("csc"));
  REQUIRE(space.knobs.size() == 2);
  CHECK(space.knobs[0].kind == KnobKind::Format);
  CHECK(space.knobs[0].name == "format A");
  CHECK(space.knobs[0].tensor == "A");
  // (csc refused; a diagonal: rows of 1, 2 x 2 blocks half full)
  CHECK(space.knobs[0].labels == std::vector<std::string>{"csr", "ell 1", "bsr 2x2"});
  CHECK(space.knobs[1].labels == std::vector<std::string>{"sv", "dense"});
  CHECK(space.base.empty());
  Point p = space.origin();
  p[0] = 1;
  const std::map<std::string, nlohmann::json> formats = formats_at(space, p);
  CHECK(formats.at("A") == nlohmann::json{{"format", "ell"}, {"width", 1}});
  CHECK(formats.at("x") == nlohmann::json{{"format", "sv"}});
  CHECK(schedule_at(space, p).empty());  // a format changes no op
  CHECK(describe_point(space, p) == "format A=ell 1");
  // A tensor left with its default alone has no knob.
  CHECK(build_format_space({{"x", 1}}, {}, false, 16, all_but("dense")).knobs.empty());
  CHECK(format_schedule(space, p).is_null());  // no composed format
}

TEST_CASE("tune fuse: fused and apart offered where each makes a kernel other than auto's") {
  // auto runs these statements apart: "fuse": false is auto's kernel, so only fused is offered.
  SearchSpace space = build_fuse_space([](bool fuse) { return fuse; });
  REQUIRE(space.knobs.size() == 1);
  CHECK(space.knobs[0].kind == KnobKind::Fuse);
  CHECK(space.knobs[0].labels == std::vector<std::string>{"auto's", "fused"});
  CHECK(fuse_at(space, space.origin()).is_null());  // (the config silent: auto's choice)
  Point p = space.origin();
  p[0] = 1;
  CHECK(fuse_at(space, p) == true);
  CHECK(describe_point(space, p) == "fuse=fused");
  CHECK(schedule_at(space, p).empty());  // no op: the config's "fuse"
  // Both differ where auto's kernel is neither (its own grouping): both offered.
  CHECK(build_fuse_space([](bool) { return true; }).knobs[0].labels == std::vector<std::string>{"auto's", "fused", "apart"});
  // Neither: nothing to search.
  CHECK(build_fuse_space([](bool) { return false; }).knobs.empty());
}

TEST_CASE("tune statements: each statement's knobs in one space, named by statement, split back") {
  SpmmSpace a, b;
  const size_t na = a.space.knobs.size(), nb = b.space.knobs.size();
  REQUIRE(na > 0);
  StatementSpaces spaces = join_statement_spaces({SearchSpace{}, a.space, b.space});  // (statement 1: no knobs)
  REQUIRE(spaces.joined.knobs.size() == na + nb);
  CHECK(spaces.joined.knobs[0].name == "statement 2: " + a.space.knobs[0].name);
  CHECK(spaces.joined.knobs[na].name == "statement 3: " + b.space.knobs[0].name);
  Point p = spaces.joined.origin();
  p[na] = 1;  // statement 3's first knob
  const std::vector<Point> points = spaces.split(p);
  REQUIRE(points.size() == 3);
  CHECK(points[0].empty());
  CHECK(points[1] == a.space.origin());
  CHECK(points[2][0] == 1);
  CHECK(describe_point(spaces.joined, p) == "statement 3: " + describe_point(b.space, points[2]));
}

TEST_CASE("tune search: a search started late on the clock (after another) gets its own rounds") {
  SpmmSpace s;
  FakeEvaluator a;
  a.cost = additive(s.space, 0, 3);
  a.clock = 30;  // an earlier search (the formats') spent 30 s of a 60 s budget
  SearchOptions options;
  options.budget_s = 60;
  SearchResult r = run_search(s.space, a, options);
  CHECK(std::count_if(r.trials.begin(), r.trials.end(), [](const Trial& t) { return t.round >= 1; }) >= 4);
}

TEST_CASE("tune search: a candidate far slower than auto is not measured again to confirm") {
  SpmmSpace s;
  FakeEvaluator a;
  a.cost = [&](const Point& p) { return p == s.space.origin() ? 10.0 : 10.0 * (2.0 + p[0] + p.size()); };  // all > 2x auto
  SearchOptions options;
  options.budget_s = 40;
  SearchResult r = run_search(s.space, a, options);
  CHECK(r.best == s.space.origin());
  CHECK(std::none_of(r.trials.begin(), r.trials.end(), [](const Trial& t) { return t.round == -1; }));
  CHECK(std::count_if(r.trials.begin(), r.trials.end(), [](const Trial& t) { return t.round >= 1; }) >= 4);
}
