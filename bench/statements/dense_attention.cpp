// The peer of the attention spec (attention.spg) as a dense model would run it: Eigen's row-major
// GEMMs for the scores Q K^T and for P V, the mask added to the whole score matrix as a bias (-inf
// where it stores nothing, built before the timed runs), and a row softmax over every column. Prints the median of its runs:
//   dense_attention MASK.mtx FEATURES RUNS THREADS
// Q, K, V are random in [-1, 1) (the timings do not depend on them); the mask's values are
// ignored (its pattern is what matters), as the spec multiplies by M's values and they are 1 in
// the shared graphs.
#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: dense_attention MASK.mtx FEATURES RUNS THREADS\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  std::string line;
  bool symmetric = false;
  while (std::getline(in, line) && !line.empty() && line[0] == '%')
    if (line.find("symmetric") != std::string::npos) symmetric = true;
  long rows = 0, cols = 0, stored = 0;
  std::istringstream(line) >> rows >> cols >> stored;
  if (rows <= 0 || cols <= 0 || rows != cols) {
    std::fprintf(stderr, "%s: expected a square matrix\n", argv[1]);
    return 1;
  }
  std::vector<std::vector<long>> mask(static_cast<size_t>(rows));
  for (long e = 0; e < stored && std::getline(in, line); ++e) {
    long i = 0, j = 0;
    std::istringstream(line) >> i >> j;
    mask[static_cast<size_t>(i - 1)].push_back(j - 1);
    if (symmetric && i != j) mask[static_cast<size_t>(j - 1)].push_back(i - 1);
  }
  const long features = std::atol(argv[2]);
  const int runs = std::atoi(argv[3]);
  Eigen::setNbThreads(std::atoi(argv[4]));
  const Matrix q = Matrix::Random(rows, features), k = Matrix::Random(cols, features), v = Matrix::Random(cols, features);
  // The mask as a dense model holds it: an additive bias, 0 where M stores an entry, -inf elsewhere.
  const float inf = std::numeric_limits<float>::infinity();
  Matrix bias = Matrix::Constant(rows, cols, -inf);
  for (long i = 0; i < rows; ++i)
    for (long j : mask[static_cast<size_t>(i)]) bias(i, j) = 0;
  Matrix scores(rows, cols), out(rows, features);
  std::vector<double> ms;
  for (int run = 0; run <= runs; ++run) {
    const auto start = std::chrono::steady_clock::now();
    scores.noalias() = q * k.transpose();
    scores += bias;
    for (long i = 0; i < rows; ++i) {  // the row softmax, over every column (Eigen's vectorized exp)
      const float top = scores.row(i).maxCoeff();
      if (top == -inf) {
        scores.row(i).setZero();  // a row the mask leaves empty
        continue;
      }
      scores.row(i) = (scores.row(i).array() - top).exp();
      scores.row(i) /= scores.row(i).sum();
    }
    out.noalias() = scores * v;
    const auto stop = std::chrono::steady_clock::now();
    if (run > 0) ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());  // the first warms up
  }
  std::sort(ms.begin(), ms.end());
  std::printf("time_ms median=%.4f runs=%d checksum=%.6g\n", ms[ms.size() / 2], runs, static_cast<double>(out.sum()));
  return 0;
}
