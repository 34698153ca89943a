// The cost model `spgen tune` ranks unmeasured candidates by: log time as a sum of one effect per
// knob choice (against auto's choice), fitted by ridge regression to the measurements at hand
// (this run's, and the tuning database's for the same input and machine). It is refitted after
// every round, so it learns which choices pay on this matrix, on this machine; with fewer than
// two measurements it predicts nothing and candidates keep the order the search proposed them.
#pragma once

#include <vector>

#include "tune/search_space.h"

namespace spgen::tune {

class CostModel {
 public:
  explicit CostModel(const SearchSpace& space);
  void add(const Point& point, double ms);
  void fit(double ridge = 0.3);
  double predict_log_ms(const Point& point) const;  // 0 until fitted
  size_t observations() const { return ys_.size(); }
  // The fitted effect of choice c of knob k on log time (negative: faster than auto's choice).
  double effect(size_t knob, int choice) const;

 private:
  std::vector<double> encode(const Point& point) const;
  const SearchSpace& space_;
  std::vector<size_t> offset_;  // first column of each knob's choices (choice 0 has none)
  size_t columns_ = 1;          // the intercept, then a column per non-auto choice
  std::vector<std::vector<double>> xs_;
  std::vector<double> ys_;
  std::vector<double> weights_;
};

}  // namespace spgen::tune
