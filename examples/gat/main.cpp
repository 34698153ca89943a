// One GAT layer's attention, from the one kernel spgen generates from gat.spg's five statements
// (see the Makefile): edge logits with a leaky ReLU, the softmax over each node's edges (row
// maximum, exp on the edges only, row sums) and the weighted aggregation of the neighbours'
// features. The kernel holds the logits, numerators and sums itself (temporaries); it returns the
// row maxima and the output. Checked against a plain loop in double.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "gat.h"

int main(int argc, char** argv) {
  const int64_t nodes = argc > 1 ? std::atoll(argv[1]) : 20000;
  const int64_t features = argc > 2 ? std::atoll(argv[2]) : 32;

  // A random graph with skewed degrees (some nodes without edges), with self loops as GAT adds.
  std::mt19937_64 rng(7);
  std::vector<int64_t> coords;
  for (int64_t v = 0; v < nodes; ++v) {
    if (v % 997 == 5) continue;  // an isolated node: its row max is -inf, its output 0
    coords.push_back(v);
    coords.push_back(v);
    const int64_t degree = v % 101 == 0 ? 200 : static_cast<int64_t>(rng() % 10);
    for (int64_t e = 0; e < degree; ++e) {
      coords.push_back(v);
      coords.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(nodes)));
    }
  }
  const int64_t edges = static_cast<int64_t>(coords.size() / 2);
  const std::vector<float> ones(static_cast<size_t>(edges), 1.0f);

  // Pack A (repeated edges are summed: their weight counts them).
  const int64_t dims[2] = {nodes, nodes};
  int64_t lengths[3];
  int status = gat_pack_A_sizes(edges, coords.data(), dims, lengths);
  std::vector<int32_t> pos(static_cast<size_t>(lengths[0])), crd(static_cast<size_t>(lengths[1]));
  std::vector<float> a(static_cast<size_t>(lengths[2]));
  if (status == SPGEN_OK) status = gat_pack_A(edges, coords.data(), ones.data(), dims, pos.data(), crd.data(), a.data(), lengths);
  if (status != SPGEN_OK) {
    std::fprintf(stderr, "pack failed: %s\n", gat_pack_strerror(status));
    return 1;
  }
  const size_t stored = a.size();

  // Features H and the attention halves u = H a_l, v = H a_r.
  std::vector<float> h(static_cast<size_t>(nodes * features)), u(static_cast<size_t>(nodes)), v(u.size());
  std::vector<float> a_l(static_cast<size_t>(features)), a_r(a_l.size());
  for (float& x : h) x = static_cast<float>(rng() % 2000) / 1000.0f - 1.0f;
  for (size_t f = 0; f < a_l.size(); ++f) {
    a_l[f] = static_cast<float>(rng() % 2000) / 4000.0f - 0.25f;
    a_r[f] = static_cast<float>(rng() % 2000) / 4000.0f - 0.25f;
  }
  for (int64_t n = 0; n < nodes; ++n)
    for (int64_t f = 0; f < features; ++f) {
      u[static_cast<size_t>(n)] += h[static_cast<size_t>(n * features + f)] * a_l[static_cast<size_t>(f)];
      v[static_cast<size_t>(n)] += h[static_cast<size_t>(n * features + f)] * a_r[static_cast<size_t>(f)];
    }

  std::vector<float> m(static_cast<size_t>(nodes)), out(h.size());
  auto start = std::chrono::steady_clock::now();
  gat(nodes, nodes, features, m.data(), out.data(), pos.data(), crd.data(), a.data(), u.data(), v.data(), h.data());
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  // The same attention, straightforwardly (in double).
  double worst = 0;
  for (int64_t n = 0; n < nodes; ++n) {
    double top = -INFINITY, sum = 0;
    std::vector<double> logit;
    for (int32_t p = pos[static_cast<size_t>(n)]; p < pos[static_cast<size_t>(n) + 1]; ++p) {
      const double x = double(u[static_cast<size_t>(n)]) + v[static_cast<size_t>(crd[static_cast<size_t>(p)])];
      logit.push_back(a[static_cast<size_t>(p)] * (x > 0 ? x : 0.2 * x));
      top = std::fmax(top, logit.back());
    }
    if (m[static_cast<size_t>(n)] != static_cast<float>(top) && std::fabs(m[static_cast<size_t>(n)] - top) > 1e-5) worst = INFINITY;
    for (double& x : logit) sum += (x = std::exp(x - top));
    for (int64_t f = 0; f < features; ++f) {
      double want = 0;
      for (size_t q = 0; q < logit.size(); ++q) {
        const int32_t p = pos[static_cast<size_t>(n)] + static_cast<int32_t>(q);
        want += logit[q] / sum * h[static_cast<size_t>(crd[static_cast<size_t>(p)] * features + f)];
      }
      const float got = out[static_cast<size_t>(n * features + f)];
      worst = std::fmax(worst, logit.empty() ? (std::isnan(got) ? 0.0 : std::fabs(got)) : std::fabs(want - got) / (1.0 + std::fabs(want)));
    }
  }
  std::printf("%lld nodes, %zu stored edges, %lld features: attention in %.3f ms, max relative error %.2e: %s\n",
              static_cast<long long>(nodes), stored, static_cast<long long>(features), ms, worst, worst < 1e-4 ? "ok" : "WRONG");
  return worst < 1e-4 ? 0 : 1;
}
