// Sparse attention with a banded mask (each token attends to the tokens within `band` of it), from
// the one kernel spgen generates from attention.spg's five statements (see the Makefile): the
// scores on the mask's entries, each row's softmax over them, and the weighted sum of the values.
// The mask's values carry the scores' scale, 1 / sqrt(k). Checked against a plain loop in double.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "attention.h"

int main(int argc, char** argv) {
  const int64_t tokens = argc > 1 ? std::atoll(argv[1]) : 8192;
  const int64_t band = argc > 2 ? std::atoll(argv[2]) : 32;
  const int64_t k = 32, d = 32;

  // The mask: |i - j| <= band, each entry 1 / sqrt(k).
  std::vector<int64_t> coords;
  for (int64_t i = 0; i < tokens; ++i)
    for (int64_t j = std::max<int64_t>(0, i - band); j <= std::min(tokens - 1, i + band); ++j) {
      coords.push_back(i);
      coords.push_back(j);
    }
  const int64_t entries = static_cast<int64_t>(coords.size() / 2);
  const std::vector<float> scale(static_cast<size_t>(entries), static_cast<float>(1.0 / std::sqrt(double(k))));
  const int64_t dims[2] = {tokens, tokens};
  int64_t lengths[3];
  int status = attention_pack_M_sizes(entries, coords.data(), dims, lengths);
  std::vector<int32_t> pos(static_cast<size_t>(lengths[0])), crd(static_cast<size_t>(lengths[1]));
  std::vector<float> mask(static_cast<size_t>(lengths[2]));
  if (status == SPGEN_OK)
    status = attention_pack_M(entries, coords.data(), scale.data(), dims, pos.data(), crd.data(), mask.data(), lengths);
  if (status != SPGEN_OK) {
    std::fprintf(stderr, "pack failed: %s\n", attention_pack_strerror(status));
    return 1;
  }

  std::mt19937_64 rng(5);
  auto fill = [&](std::vector<float>& v) {
    for (float& x : v) x = static_cast<float>(rng() % 2000) / 1000.0f - 1.0f;
  };
  std::vector<float> q(static_cast<size_t>(tokens * k)), kk(q.size()), v(static_cast<size_t>(tokens * d)), out(v.size());
  fill(q);
  fill(kk);
  fill(v);
  const auto start = std::chrono::steady_clock::now();
  attention(tokens, tokens, k, d, out.data(), pos.data(), crd.data(), mask.data(), q.data(), kk.data(), v.data());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  // The same attention, straightforwardly (in double).
  double worst = 0;
  for (int64_t i = 0; i < tokens; ++i) {
    std::vector<double> score;
    double top = -INFINITY, sum = 0;
    for (int32_t p = pos[static_cast<size_t>(i)]; p < pos[static_cast<size_t>(i) + 1]; ++p) {
      double dot = 0;
      for (int64_t c = 0; c < k; ++c) dot += double(q[static_cast<size_t>(i * k + c)]) * kk[static_cast<size_t>(crd[static_cast<size_t>(p)] * k + c)];
      score.push_back(mask[static_cast<size_t>(p)] * dot);
      top = std::fmax(top, score.back());
    }
    for (double& s : score) sum += (s = std::exp(s - top));
    for (int64_t c = 0; c < d; ++c) {
      double want = 0;
      for (size_t e = 0; e < score.size(); ++e)
        want += score[e] / sum * v[static_cast<size_t>(crd[static_cast<size_t>(pos[static_cast<size_t>(i)]) + e] * d + c)];
      worst = std::fmax(worst, std::fabs(want - out[static_cast<size_t>(i * d + c)]) / (1.0 + std::fabs(want)));
    }
  }
  const bool ok = worst < 1e-4;
  std::printf("%lld tokens, band %lld (%lld mask entries), k = d = 32: attention in %.3f ms, max relative error %.2e: %s\n",
              static_cast<long long>(tokens), static_cast<long long>(band), static_cast<long long>(entries), ms, worst, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
