// The fuzz targets (fuzz/) on their seeds, on every input that ever broke spgen
// (fuzz/regressions/TARGET/), and on a few thousand inputs made here from a fixed seed: what CI
// runs of the fuzzing, briefly and without libFuzzer. A finding aborts this program (the
// targets call abort on an internal error or an inconsistent result), so the test fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_targets.h"
#include "spec_pairs.h"

namespace fs = std::filesystem;

namespace {

std::string source_root() {
  const char* root = std::getenv("SPGEN_SOURCE_ROOT");
  return root ? root : ".";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The files of `dir` (sorted; none when it does not exist), those ending in `extension` if given.
std::vector<fs::path> files_in(const fs::path& dir, const std::string& extension = "") {
  std::vector<fs::path> found;
  if (!fs::is_directory(dir)) return found;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && (extension.empty() || entry.path().extension() == extension)) found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

using Target = int (*)(const uint8_t*, size_t);

int feed(Target target, const std::string& input) {
  return target(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

// Runs the target on every file of its regression directory; returns how many there were.
size_t replay_regressions(Target target, const std::string& name) {
  size_t n = 0;
  for (const fs::path& file : files_in(fs::path(source_root()) / "fuzz" / "regressions" / name)) {
    INFO(file.string());
    CHECK(feed(target, read_file(file)) == 0);
    ++n;
  }
  return n;
}

// Byte-level mutations of `seeds`, as a fuzzer's first steps: flips, cuts, repeats and splices.
void mutate_and_feed(Target target, const std::vector<std::string>& seeds, int count, unsigned seed) {
  std::mt19937 rng(seed);
  for (int k = 0; k < count; ++k) {
    std::string input = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !input.empty(); ++e) {
      const size_t at = rng() % input.size();
      switch (rng() % 5) {
        case 0: input[at] = static_cast<char>(rng() % 256); break;
        case 1: input.erase(at, 1 + rng() % 8); break;
        case 2: input.insert(at, input.substr(at, 1 + rng() % 16)); break;
        case 3: input.insert(at, seeds[rng() % seeds.size()].substr(0, 1 + rng() % 32)); break;
        default: input[at] = "0123456789{}[]\",:-+.eE()*=_ \n"[rng() % 29]; break;
      }
    }
    feed(target, input);
  }
}

}  // namespace

TEST_CASE("fuzz target spec_parser: the specs, the regressions, mutations") {
  std::vector<std::string> seeds;
  for (const char* dir : {"specs", "tests/e2e/cases"})
    for (const fs::path& file : files_in(fs::path(source_root()) / dir, ".spg")) seeds.push_back(read_file(file));
  REQUIRE(seeds.size() > 20);
  for (const std::string& seed : seeds) CHECK(feed(spgen_fuzz::spec_parser, seed) == 0);
  replay_regressions(spgen_fuzz::spec_parser, "spec_parser");
  mutate_and_feed(spgen_fuzz::spec_parser, seeds, 3000, 1);
}

TEST_CASE("fuzz target config_reader: every config, the regressions, mutations") {
  std::vector<std::string> seeds;
  for (const char* dir : {"specs", "tests/e2e/cases"})
    for (const fs::path& file : files_in(fs::path(source_root()) / dir, ".json")) seeds.push_back(read_file(file));
  REQUIRE(seeds.size() > 100);
  for (const std::string& seed : seeds) CHECK(feed(spgen_fuzz::config_reader, seed) == 0);
  replay_regressions(spgen_fuzz::config_reader, "config_reader");
  mutate_and_feed(spgen_fuzz::config_reader, seeds, 3000, 2);
}

TEST_CASE("fuzz target whole_compile: the regressions (the two inputs of issue 23 among them), every spec and config pair, mutations") {
  const size_t regressions = replay_regressions(spgen_fuzz::whole_compile, "whole_compile");
  CHECK(regressions >= 2);
  const std::string root = source_root();
  std::vector<std::string> seeds;
  for (const char* dir : {"/specs", "/tests/e2e/cases"})
    for (const spgen_test::SpecConfigPair& pair : spgen_test::spec_config_pairs({root + "/specs", root + "/tests/e2e/cases"}, root + dir))
      seeds.push_back(read_file(pair.spec) + "\n%%\n" + read_file(pair.config));
  REQUIRE(seeds.size() > 100);
  // Every pair once (half of them, by length, also on the cuda target), then mutations of some.
  const int64_t before = spgen_fuzz::whole_compile_successes();
  for (const std::string& seed : seeds) CHECK(feed(spgen_fuzz::whole_compile, seed) == 0);
  // Most seeds are accepted configs (some are refused on the cuda target, or are refusal cases).
  CHECK(spgen_fuzz::whole_compile_successes() - before > static_cast<int64_t>(seeds.size()) / 2);
  const int64_t compiled = spgen_fuzz::whole_compile_successes() - before;
  MESSAGE(compiled << " of " << seeds.size() << " seeds compiled");
  mutate_and_feed(spgen_fuzz::whole_compile, seeds, 600, 3);
}

TEST_CASE("fuzz target tensor_reader: the seeds, the regressions, mutations") {
  std::vector<std::string> seeds;
  for (const fs::path& file : files_in(fs::path(source_root()) / "fuzz" / "seeds" / "tensor_reader")) seeds.push_back(read_file(file));
  REQUIRE(seeds.size() >= 4);
  for (const std::string& seed : seeds) CHECK(feed(spgen_fuzz::tensor_reader, seed) == 0);
  replay_regressions(spgen_fuzz::tensor_reader, "tensor_reader");
  mutate_and_feed(spgen_fuzz::tensor_reader, seeds, 5000, 4);
}

TEST_CASE("fuzz target unpack_routines: random packed arrays and entries for every format's routines") {
  replay_regressions(spgen_fuzz::unpack_routines, "unpack_routines");
  std::mt19937 rng(5);
  for (int k = 0; k < 20000; ++k) {
    std::string input(static_cast<size_t>(rng() % 200), '\0');
    for (char& c : input) c = static_cast<char>(rng() % 256);
    feed(spgen_fuzz::unpack_routines, input);
  }
}
