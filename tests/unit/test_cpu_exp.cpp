// templates/cpu_exp.cpp.in, the exp of generated cpu kernels: within one unit in the last place of
// the exact value (std::exp in double, rounded, for float; glibc's std::exp for double) over a
// sweep of every float bit pattern in steps and of random doubles, and std::exp's special values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "../../templates/cpu_exp.cpp.in"

namespace {

template <typename Float, typename Bits>
int64_t ulps_apart(Float a, Float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  if (a == b) return 0;
  if (std::isinf(a) || std::isinf(b)) return INT64_MAX;
  Bits x, y;
  std::memcpy(&x, &a, sizeof a);
  std::memcpy(&y, &b, sizeof b);
  return x > y ? static_cast<int64_t>(x) - static_cast<int64_t>(y) : static_cast<int64_t>(y) - static_cast<int64_t>(x);
}

}  // namespace

TEST_CASE("cpu exp: float within one unit in the last place, over every 1009th bit pattern") {
  int64_t worst = 0;
  float worst_at = 0;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 1009) {
    const uint32_t pattern = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &pattern, sizeof x);
    const int64_t apart = ulps_apart<float, int32_t>(spgen_exp_f32(x), static_cast<float>(std::exp(static_cast<double>(x))));
    if (apart > worst) worst = apart, worst_at = x;
  }
  CAPTURE(worst_at);
  CHECK(worst <= 1);
}

TEST_CASE("cpu exp: double within one unit in the last place on random arguments") {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> wide(-750.0, 712.0), near_zero(-2.0, 2.0);
  int64_t worst = 0;
  double worst_at = 0;
  for (int k = 0; k < 1000000; ++k) {
    const double x = k % 2 ? wide(random) : near_zero(random);
    const int64_t apart = ulps_apart<double, int64_t>(spgen_exp_f64(x), std::exp(x));
    if (apart > worst) worst = apart, worst_at = x;
  }
  CAPTURE(worst_at);
  CHECK(worst <= 1);
}

TEST_CASE("cpu exp: special values as std::exp") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(spgen_exp_f32(0.0f) == 1.0f);
  CHECK(spgen_exp_f32(-0.0f) == 1.0f);
  CHECK(spgen_exp_f32(inf) == inf);
  CHECK(spgen_exp_f32(-inf) == 0.0f);
  CHECK(std::isnan(spgen_exp_f32(std::nanf(""))));
  CHECK(spgen_exp_f32(88.73f) == inf);                           // overflows
  CHECK(spgen_exp_f32(-103.0f) == std::exp(-103.0f));            // subnormal
  CHECK(spgen_exp_f32(-104.5f) == 0.0f);                         // underflows
  const double dinf = std::numeric_limits<double>::infinity();
  CHECK(spgen_exp_f64(dinf) == dinf);
  CHECK(spgen_exp_f64(-dinf) == 0.0);
  CHECK(std::isnan(spgen_exp_f64(std::nan(""))));
  CHECK(spgen_exp_f64(709.79) == dinf);
  CHECK(spgen_exp_f64(-745.1) == std::exp(-745.1));
  CHECK(spgen_exp_f64(-746.5) == 0.0);
}
