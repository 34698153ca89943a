// Uses the kernel spgen generates from ../../specs/spmm.spg and gnn_aggregate.json: builds a
// random graph with skewed degrees, packs its adjacency into CSR with the generated pack
// routine, aggregates the node features, and checks the result against a plain loop.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "gnn_aggregate.h"

int main(int argc, char** argv) {
  const int64_t nodes = argc > 1 ? std::atoll(argv[1]) : 20000;
  const int64_t features = argc > 2 ? std::atoll(argv[2]) : 64;  // any width: 32-wide tiles + a remainder

  // Edges as a coordinate list (row, column), in no particular order, a few nodes with many.
  std::mt19937_64 rng(42);
  std::vector<int64_t> coords;
  std::vector<float> weights;
  for (int64_t v = 0; v < nodes; ++v) {
    int64_t degree = v % 101 == 0 ? 300 : static_cast<int64_t>(rng() % 12);
    for (int64_t e = 0; e < degree; ++e) {
      coords.push_back(v);
      coords.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(nodes)));
      weights.push_back(1.0f / static_cast<float>(degree));
    }
  }
  const int64_t nnz = static_cast<int64_t>(weights.size());

  // Pack A: ask for the array lengths, allocate, pack (repeated edges are summed).
  const int64_t dims[2] = {nodes, nodes};
  int64_t lengths[3];
  int status = gnn_aggregate_pack_A_sizes(nnz, coords.data(), dims, lengths);
  std::vector<int32_t> pos(static_cast<size_t>(lengths[0])), crd(static_cast<size_t>(lengths[1]));
  std::vector<float> vals(static_cast<size_t>(lengths[2]));
  if (status == SPGEN_OK)
    status = gnn_aggregate_pack_A(nnz, coords.data(), weights.data(), dims, pos.data(), crd.data(), vals.data(),
                                  lengths);
  if (status != SPGEN_OK) {
    std::fprintf(stderr, "pack failed: %s\n", gnn_aggregate_pack_strerror(status));
    return 1;
  }

  std::vector<float> h(static_cast<size_t>(nodes * features)), out(h.size());
  for (float& x : h) x = static_cast<float>(rng() % 1000) / 1000.0f;

  auto start = std::chrono::steady_clock::now();
  gnn_aggregate(nodes, features, nodes, out.data(), pos.data(), crd.data(), vals.data(), h.data());
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  // The same sum, straightforwardly (in double).
  double worst = 0;
  for (int64_t v = 0; v < nodes; ++v)
    for (int64_t f = 0; f < features; ++f) {
      double sum = 0;
      for (int32_t p = pos[v]; p < pos[v + 1]; ++p) sum += double(vals[p]) * h[crd[p] * features + f];
      worst = std::fmax(worst, std::fabs(sum - out[v * features + f]) / (1.0 + std::fabs(sum)));
    }
  std::printf("%lld nodes, %lld stored edges, %lld features: %.3f ms, max relative error %.2e: %s\n",
              static_cast<long long>(nodes), static_cast<long long>(lengths[2]), static_cast<long long>(features), ms,
              worst, worst < 1e-4 ? "ok" : "WRONG");
  return worst < 1e-4 ? 0 : 1;
}
