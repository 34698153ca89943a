// Which spec a config belongs to: the longest spec stem that, followed by '_', begins the
// config's stem (`specs/spmm_csr.json` → `specs/spmm.spg`).
#pragma once

#include <string>
#include <vector>

namespace spgen_test {

struct SpecConfigPair {
  std::string spec, config;  // paths
  std::string name;          // the config's stem
};

// Every config (*.json) in `config_dir` paired with a spec (*.spg) from `spec_dirs`, sorted by
// name. A config without a spec is an error (std::runtime_error).
std::vector<SpecConfigPair> spec_config_pairs(const std::vector<std::string>& spec_dirs, const std::string& config_dir);

}  // namespace spgen_test
