// What `spgen tune` may change in a schedule: knobs, each a list of choices for one parameter of
// the schedule `auto` chose (its parallel loop's schedule, its register tile's width, its dot
// product's lanes) or an op it may add (prefetching a dense operand's rows, batching a loop's
// dot products). A point of the space
// is a choice per knob; choice 0 of every knob is `auto`'s own schedule.
#pragma once

#include <functional>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/config.h"

namespace spgen::tune {

enum class KnobKind {
  Parallel,   // the parallel op's OpenMP schedule, chunk, or nonzero balance
  TileWidth,  // a tile op's factor
  Lanes,      // a vectorize op's partial sums (0: a plain vectorized loop)
  Tail,       // a vectorize op in lanes: the rest of a row in one masked sum, or one by one
  Prefetch,   // no prefetch, or a prefetch op added at the end
  Batch,      // no batch, or a batch op added at the end (2, 4 or 8 iterations of a loop at once)
  Format,     // a tensor's format, where the config leaves it to spgen (tune/format_space.h): no op
  Fuse,       // a spec of several statements: whether the statements sharing a row loop run in one: no op
};

struct Knob {
  KnobKind kind;
  std::string name;                   // "parallel i", "tile k", "lanes k", "prefetch"
  size_t op_index = 0;                // the op it changes (not for Prefetch)
  std::vector<nlohmann::json> values; // per choice: its parameters (see search_space.cpp)
  std::vector<std::string> labels;    // per choice, for people: "dynamic,512"
  std::string tensor = {};            // Format: whose
};

using Point = std::vector<int>;  // a choice per knob

struct SearchSpace {
  std::vector<ScheduleOp> base;  // auto's schedule, explicit
  std::vector<Knob> knobs;
  size_t size() const;            // points in the space (saturating at 2^62)
  Point origin() const { return Point(knobs.size(), 0); }
};

// The space around `base` (a compilation's explicit schedule). A choice is kept only where
// `compiles` accepts the schedule with it alone changed, so every knob's choices are each legal
// (their combinations are checked when measured).
SearchSpace build_search_space(const std::vector<ScheduleOp>& base, const Config& config,
                               const std::vector<std::string>& dense_inputs, const std::vector<std::string>& index_vars,
                               const std::function<bool(const std::vector<ScheduleOp>&)>& compiles);

// The schedule at a point.
std::vector<ScheduleOp> schedule_at(const SearchSpace& space, const Point& point);

// "parallel i=dynamic,512 tile k=16": the choices that differ from auto's ("auto" when none).
std::string describe_point(const SearchSpace& space, const Point& point);

// {"parallel i": "dynamic,512", ...}: every knob's choice, as the tuning database keeps it.
nlohmann::json point_labels(const SearchSpace& space, const Point& point);
// The point with these labels (knobs or labels missing from the space: nullopt).
std::optional<Point> point_from_labels(const SearchSpace& space, const nlohmann::json& labels);

// A spec of several statements: one knob, whether the statements that share their row loop run
// in one loop (the config's "fuse"). Choice 0 is auto's (the key left out); "fused" and "apart"
// are offered where `differs_from_auto(true or false)` says that value makes another kernel.
SearchSpace build_fuse_space(const std::function<bool(bool)>& differs_from_auto);
// The config's "fuse" at a point: null where it is auto's choice.
nlohmann::json fuse_at(const SearchSpace& space, const Point& point);

// The spaces of several statements run apart, searched as one: `joined` holds every statement's
// knobs, each named "statement N: " and its own name, and `split` gives each statement's point.
struct StatementSpaces {
  std::vector<SearchSpace> each;
  SearchSpace joined;
  std::vector<Point> split(const Point& point) const;
};
StatementSpaces join_statement_spaces(std::vector<SearchSpace> each);

}  // namespace spgen::tune
