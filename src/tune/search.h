// The search of `spgen tune`: measure auto's schedule, then in rounds propose candidates (each
// knob changed alone from the best so far, the combination of every knob's best-fitted choice,
// and seeded random points), rank them by the cost model, measure the best few, refit; stop at
// the budget, when no candidate is left, or after `patience` rounds without a gain. Then the
// leaders and auto are measured again in interleaved rounds, and a candidate replaces auto only
// when it was faster than auto in 4 rounds of 5, and by `min_gain` at the median of its
// per-round ratios: the result is never slower than auto, as measured under the same load.
// Measuring is the Evaluator's (compile and run a kernel; a fake in the unit tests), so the search
// is deterministic for a given seed and sequence of measurements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tune/search_space.h"

namespace spgen::tune {

struct Measurement {
  bool ok = false;        // compiled, ran, and matched the reference
  double median_ms = 0;   // of the run's repetitions
  std::string error;      // why not ok
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual Measurement measure(const Point& point) = 0;
  // The points about to be measured, in order: an evaluator may build them at once.
  virtual void prepare(const std::vector<Point>& /*points*/) {}
  virtual double elapsed_s() const = 0;  // since the search began
  virtual bool interrupted() const { return false; }  // Ctrl-C: stop, keep the best so far
  virtual void progress(size_t /*measured*/, size_t /*planned*/, double /*best_ms*/, double /*auto_ms*/) {}
};

struct SearchOptions {
  double budget_s = 60;
  uint64_t seed = 1;
  int per_round = 4;        // candidates measured per round
  int random_per_round = 2; // random points proposed per round
  int patience = 3;         // rounds without a 1 % gain before stopping
  int confirm_top = 3;      // leaders measured again with auto at the end
  int confirm_rounds = 5;
  double min_gain = 0.03;   // a winner must beat auto by this share at least
  // A leader slower than auto by more than this factor (as first measured) is not measured again:
  // noise on a shared machine moves a median by up to 2x, a hopeless candidate by far more (csc
  // with the rows' loop parallel inside each column: 1,600x), and its rounds would eat the budget.
  double finalist_slack = 2.0;
  std::vector<Point> seeds;                          // proposed first (similar inputs' winners)
  std::vector<std::pair<Point, double>> prior;       // earlier measurements (ms) for the model
};

struct Trial {
  Point point;
  Measurement result;
  int round = 0;           // 0: auto; -1: the confirmation rounds
  double elapsed_s = 0;    // when it ended
};

struct SearchResult {
  std::vector<Trial> trials;
  Point best;               // auto's origin unless a candidate won
  double best_ms = 0;       // auto_ms times its median ratio to auto in the confirmation rounds (auto's: auto_ms)
  double auto_ms = 0;       // median of auto's measurements
  double spread = 0;        // auto's (max - min) / median over its measurements (run-to-run noise)
  std::vector<std::pair<Point, double>> ranking;  // every ok point by its median, fastest first
  std::string stop_reason;  // "budget", "no further candidates", "interrupted"
  bool auto_ok = false;     // auto's kernel ran and matched the reference
};

SearchResult run_search(const SearchSpace& space, Evaluator& evaluator, const SearchOptions& options);

}  // namespace spgen::tune
