#include "tune/cost_model.h"

#include <cmath>
#include <utility>

namespace spgen::tune {

CostModel::CostModel(const SearchSpace& space) : space_(space) {
  for (const Knob& knob : space.knobs) {
    offset_.push_back(columns_);
    columns_ += knob.values.size() - 1;
  }
}

std::vector<double> CostModel::encode(const Point& point) const {
  std::vector<double> x(columns_, 0.0);
  x[0] = 1;
  for (size_t k = 0; k < point.size(); ++k)
    if (point[k] > 0) x[offset_[k] + static_cast<size_t>(point[k]) - 1] = 1;
  return x;
}

void CostModel::add(const Point& point, double ms) {
  xs_.push_back(encode(point));
  ys_.push_back(std::log(ms));
}

// (X^T X + ridge I) w = X^T y, by Gaussian elimination with partial pivoting; the intercept is not
// penalized, so an unmeasured choice's effect stays 0 (as good as auto's, until seen).
void CostModel::fit(double ridge) {
  weights_.clear();
  if (ys_.size() < 2) return;
  const size_t n = columns_;
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (size_t r = 0; r < ys_.size(); ++r)
    for (size_t i = 0; i < n; ++i) {
      if (xs_[r][i] == 0) continue;
      for (size_t j = 0; j < n; ++j) a[i][j] += xs_[r][i] * xs_[r][j];
      a[i][n] += xs_[r][i] * ys_[r];
    }
  for (size_t i = 1; i < n; ++i) a[i][i] += ridge;
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    if (std::fabs(a[pivot][c]) < 1e-12) continue;
    std::swap(a[c], a[pivot]);
    for (size_t r = 0; r < n; ++r) {
      if (r == c || a[r][c] == 0) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t j = c; j <= n; ++j) a[r][j] -= f * a[c][j];
    }
  }
  weights_.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    if (std::fabs(a[i][i]) >= 1e-12) weights_[i] = a[i][n] / a[i][i];
}

double CostModel::predict_log_ms(const Point& point) const {
  if (weights_.empty()) return 0;
  std::vector<double> x = encode(point);
  double y = 0;
  for (size_t i = 0; i < columns_; ++i) y += x[i] * weights_[i];
  return y;
}

double CostModel::effect(size_t knob, int choice) const {
  if (weights_.empty() || choice <= 0) return 0;
  return weights_[offset_[knob] + static_cast<size_t>(choice) - 1];
}

}  // namespace spgen::tune
