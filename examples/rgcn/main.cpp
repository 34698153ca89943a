// A relational GNN layer, Y(i,l) = sum over r, j, k of A(r,i,j) X(j,k) W(r,k,l), from the two kernels
// spgen generates here (see the Makefile): rgcn_single, the spec's one statement as one nest
// (every edge times every k and l), and rgcn_factored, the same layer as two statements with a
// temporary the kernel holds (T(r,i,k) = A(r,i,j) X(j,k), then Y(i,l) = T(r,i,k) W(r,k,l), the
// second a register-tiled dense contraction). Both are checked against a plain loop in double,
// and timed.
#include <algorithm>
#include <functional>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "rgcn_factored.h"
#include "rgcn_single.h"

namespace {

double median_ms(const std::function<void()>& run) {
  std::vector<double> times;
  for (int rep = 0; rep < 7; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t nodes = argc > 1 ? std::atoll(argv[1]) : 10000;
  const int64_t degree = argc > 2 ? std::atoll(argv[2]) : 24;  // edges per node, over all relations
  const int64_t relations = 4, features = 32, outputs = 32;    // (the kernels are generated for k = l = 32)

  // A random graph whose edges each belong to one relation, as coordinates (r, i, j).
  std::mt19937_64 rng(11);
  std::vector<int64_t> coords;
  for (int64_t i = 0; i < nodes; ++i)
    for (int64_t e = 0; e < degree; ++e) {
      coords.push_back(static_cast<int64_t>(rng() % relations));
      coords.push_back(i);
      coords.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(nodes)));
    }
  const int64_t edges = static_cast<int64_t>(coords.size() / 3);
  std::vector<float> weights(static_cast<size_t>(edges));
  for (float& w : weights) w = static_cast<float>(rng() % 1000) / 1000.0f;

  // Pack A once (both kernels store it alike: rows i, then relations r, then compressed j;
  // repeated edges are summed).
  const int64_t dims[3] = {relations, nodes, nodes};
  int64_t lengths[3];
  int status = rgcn_single_pack_A_sizes(edges, coords.data(), dims, lengths);
  std::vector<int32_t> pos(static_cast<size_t>(lengths[0])), crd(static_cast<size_t>(lengths[1]));
  std::vector<float> a(static_cast<size_t>(lengths[2]));
  if (status == SPGEN_OK)
    status = rgcn_single_pack_A(edges, coords.data(), weights.data(), dims, pos.data(), crd.data(), a.data(), lengths);
  if (status != SPGEN_OK) {
    std::fprintf(stderr, "pack failed: %s\n", rgcn_single_pack_strerror(status));
    return 1;
  }

  std::vector<float> x(static_cast<size_t>(nodes * features)), w(static_cast<size_t>(relations * features * outputs));
  for (float& v : x) v = static_cast<float>(rng() % 2000) / 1000.0f - 1.0f;
  for (float& v : w) v = static_cast<float>(rng() % 2000) / 10000.0f - 0.1f;
  std::vector<float> single(static_cast<size_t>(nodes * outputs)), factored(single.size());
  int single_status = 0, factored_status = 0;
  const double single_ms = median_ms([&] {
    single_status = rgcn_single(nodes, outputs, relations, nodes, features, single.data(), pos.data(), crd.data(), a.data(), x.data(), w.data());
  });
  const double factored_ms = median_ms([&] {
    factored_status = rgcn_factored(relations, nodes, features, nodes, outputs, factored.data(), pos.data(), crd.data(), a.data(), x.data(),
                                    w.data());
  });
  if (single_status != 0 || factored_status != 0) {
    std::fprintf(stderr, "a kernel returned a status: %d, %d\n", single_status, factored_status);
    return 1;
  }

  // The layer, straightforwardly (in double): each row's per-relation sums of neighbours, then
  // their transform. (A's rows are i, then r, as packed above.)
  double worst = 0;
  std::vector<double> t(static_cast<size_t>(relations * features));
  for (int64_t i = 0; i < nodes; ++i) {
    std::fill(t.begin(), t.end(), 0.0);
    for (int64_t r = 0; r < relations; ++r) {
      const size_t row = static_cast<size_t>(i * relations + r);
      for (int32_t p = pos[row]; p < pos[row + 1]; ++p)
        for (int64_t k = 0; k < features; ++k)
          t[static_cast<size_t>(r * features + k)] += double(a[static_cast<size_t>(p)]) * x[static_cast<size_t>(crd[static_cast<size_t>(p)] * features + k)];
    }
    for (int64_t l = 0; l < outputs; ++l) {
      double want = 0;
      for (int64_t r = 0; r < relations; ++r)
        for (int64_t k = 0; k < features; ++k)
          want += t[static_cast<size_t>(r * features + k)] * w[static_cast<size_t>((r * features + k) * outputs + l)];
      const size_t at = static_cast<size_t>(i * outputs + l);
      worst = std::fmax(worst, std::fmax(std::fabs(want - single[at]), std::fabs(want - factored[at])) / (1.0 + std::fabs(want)));
    }
  }
  const bool ok = worst < 1e-4;
  std::printf("%lld nodes, %lld edges in %lld relations, k = l = 32: one nest %.3f ms, factored %.3f ms (%.1fx), "
              "max relative error %.2e: %s\n",
              static_cast<long long>(nodes), static_cast<long long>(edges), static_cast<long long>(relations), single_ms, factored_ms,
              single_ms / factored_ms, worst, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
