#include "tune/search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "tune/cost_model.h"

namespace spgen::tune {

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// splitmix64: the same sequence on every platform (std's distributions are not).
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

class Search {
 public:
  Search(const SearchSpace& space, Evaluator& evaluator, const SearchOptions& options)
      : space_(space), evaluator_(evaluator), options_(options), model_(space), random_{options.seed} {
    for (const auto& [point, ms] : options.prior) model_.add(point, ms);
  }

  SearchResult run() {
    const Point origin = space_.origin();
    const double start = evaluator_.elapsed_s();  // (an earlier search may have spent some)
    measure(origin, 0);
    cost_per_point_ = evaluator_.elapsed_s() - start;
    result_.auto_ok = times_.count(origin) > 0;
    // auto's first run is the evaluator's calibration (a few calls, to size the later runs): on
    // a busy machine one descheduled thread could make it 1000x auto's time (cora's SpMV 8 ms
    // for 0.005), every slower candidate then a finalist. Its time gives way to a sized run.
    if (result_.auto_ok && !stop()) {
      measure(origin, 0);
      if (times_[origin].size() > 1) times_[origin].erase(times_[origin].begin());
    }
    if (!result_.auto_ok) {
      result_.stop_reason = "auto's kernel failed";
      return finish(origin);
    }
    std::vector<Point> pending = options_.seeds;
    int idle_rounds = 0;  // rounds since the best time last improved by 1 %
    for (int round = 1;; ++round) {
      if (stop()) break;
      if (idle_rounds >= options_.patience) {
        result_.stop_reason = "no gain in " + std::to_string(idle_rounds) + " rounds";
        break;
      }
      const double best_before = median_of(times_[best_point()]);
      model_.fit();
      std::vector<Point> pool = proposals(pending);
      pending.clear();
      if (pool.empty()) {
        result_.stop_reason = "no further candidates";
        break;
      }
      // As many as fit in what is left of the budget, at the last round's cost per candidate.
      const double left = screening_deadline() - evaluator_.elapsed_s();
      const size_t fit = cost_per_point_ > 0 ? static_cast<size_t>(std::max(0.0, left / cost_per_point_)) : pool.size();
      if (fit == 0) {
        result_.stop_reason = "budget";
        break;
      }
      pool.resize(std::min({pool.size(), static_cast<size_t>(options_.per_round), fit}));
      const double round_start = evaluator_.elapsed_s();
      evaluator_.prepare(pool);
      for (size_t k = 0; k < pool.size() && !stop(); ++k) measure(pool[k], round);
      cost_per_point_ = (evaluator_.elapsed_s() - round_start) / static_cast<double>(pool.size());
      idle_rounds = median_of(times_[best_point()]) < best_before * 0.99 ? 0 : idle_rounds + 1;
    }
    confirm();
    return finish(origin);
  }

 private:
  bool stop() {
    if (evaluator_.interrupted()) {
      result_.stop_reason = "interrupted";
      return true;
    }
    if (evaluator_.elapsed_s() >= screening_deadline()) {
      result_.stop_reason = "budget";
      return true;
    }
    return false;
  }

  // When new candidates stop: the last part of the budget is kept for measuring the leaders again.
  double screening_deadline() const { return options_.budget_s * 0.85; }

  bool seen(const Point& p) const { return tried_.count(p) > 0; }

  // This round's candidates, best predicted first: seeds, the best point's neighbours, the
  // combination of the model's best choices, random points; none measured before.
  std::vector<Point> proposals(const std::vector<Point>& seeds) {
    std::vector<Point> pool;
    auto propose = [&](const Point& p) {
      if (!seen(p) && std::find(pool.begin(), pool.end(), p) == pool.end()) pool.push_back(p);
    };
    for (const Point& p : seeds)
      if (p.size() == space_.knobs.size()) propose(p);
    const size_t seeded = pool.size();  // (a seed measured before is not proposed again)
    const Point best = best_point();
    for (size_t k = 0; k < space_.knobs.size(); ++k)
      for (int c = 0; c < static_cast<int>(space_.knobs[k].values.size()); ++c) {
        Point p = best;
        p[k] = c;
        propose(p);
      }
    if (model_.observations() >= 2) {
      Point combined(space_.knobs.size(), 0);
      for (size_t k = 0; k < space_.knobs.size(); ++k)
        for (int c = 1; c < static_cast<int>(space_.knobs[k].values.size()); ++c)
          if (model_.effect(k, c) < model_.effect(k, combined[k])) combined[k] = c;
      propose(combined);
    }
    for (int r = 0; r < options_.random_per_round && space_.size() > tried_.size(); ++r) {
      Point p(space_.knobs.size());
      for (size_t k = 0; k < space_.knobs.size(); ++k) p[k] = static_cast<int>(random_.next() % space_.knobs[k].values.size());
      propose(p);
    }
    // Seeds first, as given; the rest by predicted time (a stable sort keeps the proposal order
    // among equals, so an unfitted model leaves it as it is).
    std::stable_sort(pool.begin() + static_cast<long>(seeded), pool.end(), [&](const Point& a, const Point& b) {
      return model_.predict_log_ms(a) < model_.predict_log_ms(b);
    });
    return pool;
  }

  Point best_point() const {
    Point best = space_.origin();
    double best_ms = 0;
    for (const auto& [p, ms] : times_) {
      double m = median_of(ms);
      if (best_ms == 0 || m < best_ms) {
        best = p;
        best_ms = m;
      }
    }
    return best;
  }

  void measure(const Point& point, int round) {
    tried_.insert(point);
    Trial trial{point, evaluator_.measure(point), round, 0};
    trial.elapsed_s = evaluator_.elapsed_s();
    if (trial.result.ok) {
      times_[point].push_back(trial.result.median_ms);
      model_.add(point, trial.result.median_ms);
    }
    result_.trials.push_back(trial);
    const Point best = best_point();
    evaluator_.progress(result_.trials.size(), space_.size(), times_.count(best) ? median_of(times_[best]) : 0,
                        times_.count(space_.origin()) ? median_of(times_[space_.origin()]) : 0);
  }

  // The leaders and auto, again, interleaved: each round measures every one once.
  void confirm() {
    std::vector<std::pair<Point, double>> ranked = ranking();
    std::vector<Point> finalists = {space_.origin()};
    const double auto_ms = times_.count(space_.origin()) ? median_of(times_.at(space_.origin())) : 0;
    for (const auto& [p, ms] : ranked)
      if (p != space_.origin() && static_cast<int>(finalists.size()) <= options_.confirm_top && ms <= options_.finalist_slack * auto_ms)
        finalists.push_back(p);
    if (finalists.size() < 2) return;
    for (int r = 0; r < options_.confirm_rounds && !evaluator_.interrupted(); ++r) {
      std::map<Point, double> round;
      for (const Point& p : finalists) {
        if (evaluator_.interrupted()) break;
        measure(p, -1);
        if (result_.trials.back().result.ok) round[p] = result_.trials.back().result.median_ms;
      }
      if (round.size() == finalists.size()) confirm_rounds_.push_back(round);
    }
  }

  // Whether `p` beat auto in at least 4 of 5 complete confirmation rounds (all of them, if
  // fewer were completed), and by `min_gain` at the median of its ratios to auto's time in the
  // same round. The rounds are interleaved, so both saw the same load on the machine; one round
  // in five may still catch a burst of another process's work.
  bool beats_auto(const Point& p) const {
    const std::vector<double> ratios = ratios_to_auto(p);
    if (ratios.empty()) return false;
    const size_t faster = static_cast<size_t>(std::count_if(ratios.begin(), ratios.end(), [](double r) { return r < 1; }));
    const size_t needed = ratios.size() < 5 ? ratios.size() : (ratios.size() * 4 + 4) / 5;
    return faster >= needed && median_of(ratios) <= 1 - options_.min_gain;
  }

  // `p`'s time over auto's in each complete confirmation round; empty if a round lacks it.
  std::vector<double> ratios_to_auto(const Point& p) const {
    std::vector<double> ratios;
    for (const auto& round : confirm_rounds_) {
      auto at = round.find(p);
      if (at == round.end()) return {};
      ratios.push_back(at->second / round.at(space_.origin()));
    }
    return ratios;
  }

  std::vector<std::pair<Point, double>> ranking() const {
    std::vector<std::pair<Point, double>> ranked;
    for (const auto& [p, ms] : times_) ranked.push_back({p, median_of(ms)});
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    return ranked;
  }

  SearchResult finish(const Point& origin) {
    result_.ranking = ranking();
    result_.best = origin;
    if (!times_.count(origin)) return result_;
    const std::vector<double>& auto_times = times_[origin];
    result_.auto_ms = median_of(auto_times);
    const auto [lo, hi] = std::minmax_element(auto_times.begin(), auto_times.end());
    result_.spread = result_.auto_ms > 0 ? (*hi - *lo) / result_.auto_ms : 0;
    result_.best_ms = result_.auto_ms;
    // The winner's time is auto's scaled by the ratio the confirmation measured, side by side:
    // the medians of all measurements mix rounds taken under different loads (a burst of other
    // work during the confirmation once made a winner's overall median 300x auto's).
    for (const auto& [p, ms] : result_.ranking) {
      if (p == origin || !beats_auto(p)) continue;
      result_.best = p;
      result_.best_ms = result_.auto_ms * median_of(ratios_to_auto(p));
      break;
    }
    return result_;
  }

  const SearchSpace& space_;
  Evaluator& evaluator_;
  const SearchOptions& options_;
  CostModel model_;
  Random random_;
  std::set<Point> tried_;
  std::map<Point, std::vector<double>> times_;  // ok measurements of each point
  std::vector<std::map<Point, double>> confirm_rounds_;  // complete rounds: every finalist's time
  double cost_per_point_ = 0;                    // seconds a candidate took, building included
  SearchResult result_;
};

}  // namespace

SearchResult run_search(const SearchSpace& space, Evaluator& evaluator, const SearchOptions& options) {
  return Search(space, evaluator, options).run();
}

}  // namespace spgen::tune
