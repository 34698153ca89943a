// The fixed cost of an OpenMP parallel region on this machine: an empty `parallel for` of two
// iterations, timed 20000 times (bench/RESULTS.md, session 34: what bounds SpMV on small graphs).
//   g++ -O2 -fopenmp -o /tmp/omp_region_cost bench/handmade/omp_region_cost.cpp && OMP_NUM_THREADS=2 /tmp/omp_region_cost
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
int main() {
  volatile int sink = 0;
  std::vector<double> t;
  for (int r = 0; r < 20000; ++r) {
    auto a = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (int i = 0; i < 2; ++i) sink = sink + i;
    auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  std::printf("empty parallel for, %d threads: median %.2f us, p10 %.2f, p90 %.2f\n", omp_get_max_threads(), t[t.size()/2], t[t.size()/10], t[t.size()*9/10]);
}
