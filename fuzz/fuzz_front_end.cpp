// Fuzz targets of the front end: the spec parser, the config reader, the whole compile.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "frontend/config.h"
#include "frontend/parser.h"
#include "frontend/program.h"
#include "fuzz_targets.h"
#include "lower.h"
#include "support/diagnostics.h"

namespace spgen_fuzz {

namespace {

// Bad input must end in a CompileError (file:line:col: error: ...); anything else is what the
// CLI reports as an internal error (exit 70): a finding.
template <class F>
int expect_precise_errors(F run) {
  try {
    run();
  } catch (const spgen::CompileError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spgen fuzz: internal error: %s\n", e.what());
    std::abort();
  }
  return 0;
}

int64_t compiled = 0;  // whole_compile's inputs that compiled

const char* const kSpecs[] = {
    "y(i) = A(i,j) * x(j)",
    "C(i,k) = A(i,j) * B(j,k)",
    "Y(i,j) = X(i,j) * A(i,k) * B(j,k)",
    "C(i,j) = A(i,j) + B(i,j)",
    "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
};

}  // namespace

int spec_parser(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return expect_precise_errors([&] {
    const spgen::ast::Program program = spgen::parse_program("fuzz.spg", text);
    spgen::check_program(program);
  });
}

int config_reader(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const char* spec_text = kSpecs[size % (sizeof kSpecs / sizeof *kSpecs)];
  const spgen::ast::Spec spec = spgen::parse_spec("fuzz.spg", spec_text);
  return expect_precise_errors([&] { spgen::read_config("fuzz.json", text, spec, "fuzz"); });
}

int whole_compile(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const size_t split = text.find("\n%%\n");
  if (split == std::string::npos) return 0;
  spgen::CompileInput input;
  input.spec_path = "fuzz.spg";
  input.spec_text = text.substr(0, split + 1);
  input.config_path = "fuzz.json";
  input.config_text = text.substr(split + 4);
  if (size % 2) input.target = spgen::Target::Cuda;  // half the inputs on the other backend
  input.python = size % 4 == 2;                       // and a quarter with the Python module
  return expect_precise_errors([&] {
    const spgen::Compilation c = spgen::compile(input);
    // A compile that succeeds writes a header and a source (and the module), and dumps both stages.
    if (c.files.size() != (input.python ? 3u : 2u) || (input.python && c.files[2].text.empty()) || c.files[0].text.empty() || c.files[1].text.empty() || c.stage1_dump.empty() ||
        c.stage2_dump.empty()) {
      std::fprintf(stderr, "spgen fuzz: a compile succeeded without its files or dumps\n");
      std::abort();
    }
    ++compiled;
  });
}

int64_t whole_compile_successes() { return compiled; }

}  // namespace spgen_fuzz
