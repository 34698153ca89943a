#include "tuned_kernels.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

void* load_tuned_kernel(const std::string& dir, const std::string& stem) {
  if (dir.empty()) return nullptr;
  const std::string path = dir + "/" + stem + ".so";
  if (!std::filesystem::exists(path)) return nullptr;
  // Kept open for the process's life: the bench calls it until the end.
  void* handle = dlopen(std::filesystem::absolute(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "bench_kernels: %s: %s\n", path.c_str(), dlerror());
    std::exit(2);
  }
  void* call = dlsym(handle, "bench_tuned_call");
  if (!call) {
    std::fprintf(stderr, "bench_kernels: %s has no bench_tuned_call (build it with bench/build_tuned.py)\n", path.c_str());
    std::exit(2);
  }
  return call;
}
