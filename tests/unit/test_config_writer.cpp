// frontend/config_writer: schedule ops written as JSON read back as the same ops, and an `auto`
// schedule written out explicitly generates the same kernel (what `spgen tune` relies on).
#include <doctest/doctest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "compile_helpers.h"
#include "frontend/config_writer.h"
#include "spec_pairs.h"
#include "support/files.h"

using namespace spgen;
using json = nlohmann::ordered_json;

namespace {

std::vector<std::string> described(const std::vector<ScheduleOp>& ops) {
  std::vector<std::string> lines;
  for (const ScheduleOp& op : ops) lines.push_back(describe_schedule_op(op) + (op.part.empty() ? "" : " part " + op.part));
  return lines;
}

std::vector<spgen_test::SpecConfigPair> every_config() {
  const char* root = std::getenv("SPGEN_SOURCE_ROOT");
  REQUIRE(root);
  std::string r = root;
  std::vector<spgen_test::SpecConfigPair> pairs = spgen_test::spec_config_pairs({r + "/specs"}, r + "/specs");
  for (auto& p : spgen_test::spec_config_pairs({r + "/specs", r + "/tests/e2e/cases"}, r + "/tests/e2e/cases")) pairs.push_back(p);
  return pairs;
}

Compilation compile_pair(const std::string& spec_path, const std::string& config_path, const std::string& config_text) {
  return compile({spec_path, read_file(spec_path), config_path, config_text, std::nullopt, {}});
}

}  // namespace

TEST_CASE("config_writer: each op kind reads back as itself") {
  const char* config = R"({"schedule": [
    {"op": "reorder", "order": ["i", "k", "j"]},
    {"op": "tile", "var": "k", "factor": 16, "into": ["ko", "ki"]},
    {"op": "precompute", "var": "ki"},
    {"op": "vectorize", "var": "ki"},
    {"op": "parallel", "var": "i", "schedule": "dynamic", "chunk": 64}]})";
  Compilation c = spgen_test::compile(spgen_test::kSpmm, config);
  json written = schedule_json(c.config.schedule);
  CHECK(written[1] == json::parse(R"({"op": "tile", "var": "k", "factor": 16, "into": ["ko", "ki"]})"));
  CHECK(written[4] == json::parse(R"({"op": "parallel", "var": "i", "schedule": "dynamic", "chunk": 64})"));
  Compilation again = spgen_test::compile(spgen_test::kSpmm, json{{"schedule", written}}.dump());
  CHECK(described(again.config.schedule) == described(c.config.schedule));
  CHECK(again.files[1].text == c.files[1].text);
}

TEST_CASE("config_writer: every config's schedule reads back as the same ops") {
  int checked = 0;
  for (const spgen_test::SpecConfigPair& pair : every_config()) {
    CAPTURE(pair.config);
    std::string text = read_file(pair.config);
    json root = json::parse(text);
    if (!root.contains("schedule") || root["schedule"] == "auto") continue;
    Compilation c;
    try {
      c = compile_pair(pair.spec, pair.config, text);
    } catch (const CompileError&) {
      continue;  // a config some test expects to be refused
    }
    root["schedule"] = schedule_json(c.config.schedule);
    Compilation again = compile_pair(pair.spec, pair.config, root.dump());
    CHECK(described(again.config.schedule) == described(c.config.schedule));
    ++checked;
  }
  CHECK(checked > 100);
}

// `auto` expanded into explicit ops (Compilation::explicit_schedule) is the kernel auto generated: the
// same source, only the header's reasons differ. So are its kernels for fixed sizes, from the same
// ops, a register tile narrowed where the size is smaller.
TEST_CASE("config_writer: an auto schedule written out generates the same kernel") {
  int checked = 0;
  for (const spgen_test::SpecConfigPair& pair : every_config()) {
    std::string text = read_file(pair.config);
    json root = json::parse(text);
    // (`"auto"`, or [decompose, "auto"]: each part's choices are written out for that part)
    const bool auto_parts = root.contains("schedule") && root["schedule"].is_array() && !root["schedule"].empty() &&
                            root["schedule"].back() == "auto";
    if (!root.contains("schedule") || (root["schedule"] != "auto" && !auto_parts)) continue;
    CAPTURE(pair.config);
    Compilation c = compile_pair(pair.spec, pair.config, text);
    // (A product auto factored into statements is no schedule of ops: spgen tune refuses it too.)
    if (!c.statements.empty()) continue;
    root["schedule"] = schedule_json(c.explicit_schedule);
    // Auto's kernels for sizes of one index variable: written out as "specialize".
    if (c.size_variants) root["specialize"] = {{c.size_variants->var, c.size_variants->sizes}};
    // Auto's kernel for long rows: written out as "variants".
    if (!c.row_variants.empty()) root["variants"] = spgen::variants_json(c.row_variants);
    Compilation explicit_ops = compile_pair(pair.spec, pair.config, root.dump());
    CHECK(explicit_ops.files[1].text == c.files[1].text);
    CHECK(explicit_ops.stage2_dump == c.stage2_dump);
    ++checked;
  }
  CHECK(checked > 10);
}
