#include "spec_pairs.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace spgen_test {

std::vector<SpecConfigPair> spec_config_pairs(const std::vector<std::string>& spec_dirs, const std::string& config_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> spec_stems, spec_paths;
  for (const std::string& dir : spec_dirs)
    for (const fs::directory_entry& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".spg") {
        spec_stems.push_back(e.path().stem().string());
        spec_paths.push_back(e.path().string());
      }
  std::vector<SpecConfigPair> pairs;
  for (const fs::directory_entry& e : fs::directory_iterator(config_dir)) {
    if (e.path().extension() != ".json") continue;
    std::string name = e.path().stem().string();
    size_t best = spec_stems.size();
    for (size_t s = 0; s < spec_stems.size(); ++s)
      if (name.rfind(spec_stems[s] + "_", 0) == 0 && (best == spec_stems.size() || spec_stems[s].size() > spec_stems[best].size()))
        best = s;
    if (best == spec_stems.size()) throw std::runtime_error("no spec for config " + e.path().string());
    pairs.push_back({spec_paths[best], e.path().string(), name});
  }
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return pairs;
}

}  // namespace spgen_test
