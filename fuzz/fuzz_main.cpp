// One fuzz target as libFuzzer's entry point: built once per target with
// -DSPGEN_FUZZ_ENTRY=<function of fuzz_targets.h> (fuzz/meson.build, -Dfuzz=true with clang).
// The config and whole-compile targets mutate the JSON tree as well as its bytes: most byte
// mutations of a config only break its syntax, which the parser refuses at once.
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "fuzz_targets.h"

#ifndef SPGEN_FUZZ_ENTRY
#error "build with -DSPGEN_FUZZ_ENTRY=<a function of fuzz_targets.h>"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return spgen_fuzz::SPGEN_FUZZ_ENTRY(data, size); }

#ifdef SPGEN_FUZZ_JSON_MUTATOR

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// Words a config is made of: mutating into them reaches the checks behind the syntax.
const char* const kWords[] = {"dense", "csr", "csc", "coo", "dcsr", "bsr", "ell", "csf", "sv", "hyb", "cpu", "cuda",
                              "float32", "float64", "int32", "int64", "i", "j", "k", "l", "A", "B", "C", "x", "y",
                              "parallel", "split", "tile", "reorder", "vectorize", "precompute", "bind", "fuse",
                              "decompose", "prefetch", "batch", "balance", "nonzeros", "dynamic", "static", "atomic",
                              "privatize", "warp", "blockIdx.x", "threadIdx.x", "format", "block", "width", "levels",
                              "mode_order", "schedule", "op", "var", "factor", "chunk", "auto", "sizes", "tensors"};
const double kNumbers[] = {0, 1, -1, 2, 3, 4, 8, 16, 32, 1024, 2147483648.0, -2147483649.0, 1e18, 1e308, 0.5};

void mutate(nlohmann::json& node, std::mt19937& rng) {
  // Walk to a random node, then change it.
  for (int depth = 0; depth < 8 && (node.is_object() || node.is_array()) && !node.empty() && rng() % 3; ++depth) {
    auto it = node.begin();
    std::advance(it, static_cast<long>(rng() % node.size()));
    if (rng() % 4 == 0) {  // delete or duplicate a member
      if (node.is_object()) node.erase(it.key());
      else node.push_back(*it);
      return;
    }
    if (!(it->is_object() || it->is_array())) {
      nlohmann::json& leaf = *it;
      switch (rng() % 4) {
        case 0: leaf = kWords[rng() % (sizeof kWords / sizeof *kWords)]; break;
        case 1: leaf = kNumbers[rng() % (sizeof kNumbers / sizeof *kNumbers)]; break;
        case 2: leaf = static_cast<int64_t>(rng() % 70) - 3; break;
        default: leaf = nlohmann::json::array({leaf}); break;
      }
      return;
    }
    return mutate(*it, rng);
  }
  if (node.is_object()) node[kWords[rng() % (sizeof kWords / sizeof *kWords)]] = kWords[rng() % (sizeof kWords / sizeof *kWords)];
  else if (node.is_array()) node.push_back(static_cast<int64_t>(rng() % 64));
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::mt19937 rng(seed);
  std::string text(reinterpret_cast<const char*>(data), size);
  // The whole-compile target's input is a spec, "%%", a config: only the config is JSON.
  const size_t split = text.find("\n%%\n");
  const size_t json_at = split == std::string::npos ? 0 : split + 4;
  if (rng() % 2) {
    nlohmann::json config = nlohmann::json::parse(text.substr(json_at), nullptr, false);
    if (!config.is_discarded()) {
      mutate(config, rng);
      const std::string mutated = text.substr(0, json_at) + config.dump();
      if (mutated.size() <= max_size) {
        std::memcpy(data, mutated.data(), mutated.size());
        return mutated.size();
      }
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

#endif  // SPGEN_FUZZ_JSON_MUTATOR
