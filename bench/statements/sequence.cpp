// Attention and a GAT layer three ways in one process, in interleaved rounds: the five statements
// as five spgen kernels of their own called in turn (the caller holding S, m, E and l, allocated
// once), the statements in one spgen kernel each in its own loop ("apart", `"fuse": false`), and
// fused into one row loop (`"fuse": true`). Built by bench/statements/run.sh against the kernels it
// generates (bench/statements/parts, attention.spg, examples/gat/gat.spg):
//   sequence MASK.mtx WIDTH ROUNDS CALLS
// prints each way's median over every call (ms), and the largest difference between their outputs
// relative to the largest output value (they must agree).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "aggregate.h"
#include "attention_apart.h"
#include "attention_fused.h"
#include "gat_apart.h"
#include "gat_fused.h"
#include "gat_scores.h"
#include "numerators.h"
#include "rowmax.h"
#include "rowsum.h"
#include "scores.h"

namespace {

struct Csr {
  int64_t rows = 0, cols = 0;
  std::vector<int32_t> pos, crd;
  std::vector<float> vals;
};

// A Matrix Market file as CSR (a symmetric one mirrored; a pattern's values 1).
Csr read_csr(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  const bool symmetric = line.find("symmetric") != std::string::npos, pattern = line.find("pattern") != std::string::npos;
  while (std::getline(in, line) && !line.empty() && line[0] == '%') {
  }
  Csr m;
  int64_t stored = 0;
  std::istringstream(line) >> m.rows >> m.cols >> stored;
  std::vector<std::pair<std::pair<int64_t, int64_t>, float>> entries;
  for (int64_t e = 0; e < stored && std::getline(in, line); ++e) {
    int64_t i = 0, j = 0;
    double v = 1;
    std::istringstream fields(line);
    fields >> i >> j;
    if (!pattern) fields >> v;
    entries.push_back({{i - 1, j - 1}, static_cast<float>(v)});
    if (symmetric && i != j) entries.push_back({{j - 1, i - 1}, static_cast<float>(v)});
  }
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  m.pos.assign(static_cast<size_t>(m.rows) + 1, 0);
  for (size_t e = 0; e < entries.size(); ++e) {
    if (e > 0 && entries[e].first == entries[e - 1].first) {
      m.vals.back() += entries[e].second;
      continue;
    }
    m.crd.push_back(static_cast<int32_t>(entries[e].first.second));
    m.vals.push_back(entries[e].second);
    m.pos[static_cast<size_t>(entries[e].first.first) + 1] += 1;
  }
  for (int64_t i = 0; i < m.rows; ++i) m.pos[static_cast<size_t>(i) + 1] += m.pos[static_cast<size_t>(i)];
  return m;
}

std::vector<float> random_values(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<float>(static_cast<double>(seed >> 11) * 0x1.0p-53 * 2 - 1);
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs each way `calls` times per round, rounds interleaved; prints medians and agreement.
void compare(const char* what, const std::vector<std::pair<std::string, std::function<void(float*)>>>& ways, size_t out_size,
             int rounds, int calls) {
  std::vector<std::vector<double>> ms(ways.size());
  std::vector<std::vector<float>> out(ways.size(), std::vector<float>(out_size));
  for (int r = 0; r < rounds; ++r)
    for (size_t w = 0; w < ways.size(); ++w) {
      ways[w].second(out[w].data());  // warm-up
      for (int c = 0; c < calls; ++c) {
        const auto start = std::chrono::steady_clock::now();
        ways[w].second(out[w].data());
        ms[w].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      }
    }
  double scale = 0, apart = 0;
  for (float x : out[0]) scale = std::max(scale, static_cast<double>(std::fabs(x)));
  for (size_t w = 1; w < ways.size(); ++w)
    for (size_t e = 0; e < out_size; ++e) apart = std::max(apart, std::fabs(static_cast<double>(out[w][e]) - out[0][e]));
  std::printf("%s:", what);
  for (size_t w = 0; w < ways.size(); ++w) std::printf(" %s %.4f ms%s", ways[w].first.c_str(), median(ms[w]), w + 1 < ways.size() ? ";" : "");
  std::printf(" (outputs within %.1e of the largest, %.3g)\n", scale > 0 ? apart / scale : apart, scale);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: sequence MASK.mtx WIDTH ROUNDS CALLS\n");
    return 2;
  }
  const Csr m = read_csr(argv[1]);
  const int64_t width = std::atoll(argv[2]), n = m.rows, j = m.cols, nnz = static_cast<int64_t>(m.crd.size());
  const int rounds = std::atoi(argv[3]), calls = std::atoi(argv[4]);
  const std::vector<float> q = random_values(static_cast<size_t>(n * width), 1), k = random_values(static_cast<size_t>(j * width), 2),
                           v = random_values(static_cast<size_t>(j * width), 3), u = random_values(static_cast<size_t>(n), 4),
                           w = random_values(static_cast<size_t>(j), 5);
  // The temporaries of the five kernels, held by their caller.
  std::vector<float> s(static_cast<size_t>(nnz)), e(static_cast<size_t>(nnz)), mx(static_cast<size_t>(n)), l(static_cast<size_t>(n));
  const int32_t *pos = m.pos.data(), *crd = m.crd.data();
  const float* vals = m.vals.data();
  auto softmax_and_aggregate = [&](float* out) {
    rowmax(n, j, mx.data(), pos, crd, s.data());
    numerators(n, j, e.data(), pos, crd, s.data(), mx.data());
    rowsum(n, j, l.data(), pos, crd, e.data());
    aggregate(n, width, j, out, pos, crd, e.data(), v.data(), l.data());
  };
  compare("attention",
          {{"five kernels",
            [&](float* out) {
              scores(n, j, width, s.data(), pos, crd, vals, q.data(), k.data());
              softmax_and_aggregate(out);
            }},
           {"one kernel apart", [&](float* out) { attention_apart(n, j, width, width, out, pos, crd, vals, q.data(), k.data(), v.data()); }},
           {"one kernel fused", [&](float* out) { attention_fused(n, j, width, width, out, pos, crd, vals, q.data(), k.data(), v.data()); }}},
          static_cast<size_t>(n * width), rounds, calls);
  compare("gat",
          {{"five kernels",
            [&](float* out) {
              gat_scores(n, j, s.data(), pos, crd, vals, u.data(), w.data());
              softmax_and_aggregate(out);
            }},
           {"one kernel apart", [&](float* out) { gat_apart(n, j, width, out, pos, crd, vals, u.data(), w.data(), v.data()); }},
           {"one kernel fused", [&](float* out) { gat_fused(n, j, width, out, pos, crd, vals, u.data(), w.data(), v.data()); }}},
          static_cast<size_t>(n * width), rounds, calls);
  return 0;
}
