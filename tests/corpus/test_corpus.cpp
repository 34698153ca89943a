// The output corpus: what spgen makes of every config in the repository (stage I and II dumps,
// header, source, or a refusal's message) matches tests/corpus/manifest.txt byte for byte, so a
// refactor (issue #21's lowering redesign) provably changes no output. A deliberate change of
// output regenerates the manifest: SPGEN_REGENERATE_CORPUS=1 meson test -C build corpus, then
// review `git diff tests/corpus/manifest.txt` with dump.py's directory mode (docs/testing.md).
#include <doctest/doctest.h>

#include <cstdlib>

#include "process.h"

using namespace spgen_test;

TEST_CASE("corpus: every config's outputs are byte-identical to the recorded manifest") {
  const std::string script = source_root() + "/tests/corpus/dump.py";
  const std::string manifest = source_root() + "/tests/corpus/manifest.txt";
  const char* regenerate = std::getenv("SPGEN_REGENERATE_CORPUS");
  const bool write = regenerate && std::string(regenerate) == "1";
  ProcessResult r = run_process({"python3", script, spgen_binary(), write ? "--write-manifest" : "--check", manifest});
  INFO(r.out);
  INFO(r.err);
  CHECK(r.exit_code == 0);
}
