// Golden tests: for every spec/config pair in specs/, the generated files equal those in golden/
// (and for a few, their Python modules).
// To regenerate deliberately (then review `git diff golden/`):
//   SPGEN_REGENERATE_GOLDEN=1 meson test -C build golden
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "lower.h"
#include "process.h"
#include "spec_pairs.h"
#include "support/files.h"

using namespace spgen_test;

namespace {

bool regenerating() {
  const char* flag = std::getenv("SPGEN_REGENERATE_GOLDEN");
  return flag && std::string(flag) == "1";
}

// The configs whose Python module (--python) is kept too: a dense output, an assembled one, one
// that shares an input's structure, and a decomposition.
bool with_python(const SpecConfigPair& pair) {
  for (const char* name : {"spmm_csr", "spgemm_csr", "sddmm_csr", "spmm_hyb"})
    if (pair.name == name) return true;
  return false;
}

spgen::Compilation compile_pair(const SpecConfigPair& pair) {
  return spgen::compile({pair.spec, spgen::read_file(pair.spec), pair.config, spgen::read_file(pair.config), std::nullopt, {},
                         with_python(pair)});
}

}  // namespace

TEST_CASE("generated kernels match golden files") {
  std::string root = source_root();
  std::vector<SpecConfigPair> pairs = spec_config_pairs({root + "/specs"}, root + "/specs");
  REQUIRE(pairs.size() >= 8);
  std::vector<std::string> expected_files;
  for (const SpecConfigPair& pair : pairs) {
    CAPTURE(pair.config);
    spgen::Compilation c = compile_pair(pair);
    for (const spgen::GeneratedFile& file : c.files) {
      std::string golden = root + "/golden/" + file.name;
      expected_files.push_back(file.name);
      if (regenerating()) {
        spgen::write_files_atomically({{golden, file.text}});
        continue;
      }
      CAPTURE(golden);
      REQUIRE_MESSAGE(std::filesystem::exists(golden), "missing golden file; regenerate deliberately (see README)");
      CHECK_MESSAGE(read_text(golden) == file.text, "generated " << file.name << " differs from " << golden);
    }
  }
  // No stale golden files for configs that no longer exist.
  for (const auto& entry : std::filesystem::directory_iterator(root + "/golden")) {
    std::string name = entry.path().filename().string();
    if (name == "README.md") continue;
    CHECK_MESSAGE(std::find(expected_files.begin(), expected_files.end(), name) != expected_files.end(),
                  "golden/" << name << " belongs to no config in specs/");
  }
}

TEST_CASE("generation is deterministic and independent of how paths are spelled") {
  std::string root = source_root();
  for (const SpecConfigPair& pair : spec_config_pairs({root + "/specs"}, root + "/specs")) {
    CAPTURE(pair.config);
    spgen::Compilation first = compile_pair(pair);
    SpecConfigPair absolute{std::filesystem::absolute(pair.spec).string(),
                            std::filesystem::absolute(pair.config).string(), pair.name};
    spgen::Compilation second = compile_pair(absolute);
    REQUIRE(first.files.size() == second.files.size());
    for (size_t f = 0; f < first.files.size(); ++f) CHECK(first.files[f].text == second.files[f].text);
    CHECK(first.stage1_dump == second.stage1_dump);
    CHECK(first.stage2_dump == second.stage2_dump);
  }
}
