// Shared by the pass tests: compile inline specs and configs, and look at what comes out.
#pragma once

#include <string>

#include "lower.h"

namespace spgen_test {

inline spgen::Compilation compile(const std::string& spec, const std::string& config) {
  return spgen::compile({"t.spg", spec, "c.json", config, std::nullopt, {}});
}

// The CompileError's message, or "(no error)" when the input compiles.
inline std::string error_of(const std::string& spec, const std::string& config) {
  try {
    compile(spec, config);
  } catch (const spgen::CompileError& e) {
    return e.what();
  }
  return "(no error)";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline const char* const kSpmv = "y(i) = A(i,j) * x(j)";
inline const char* const kSpmm = "C(i,k) = A(i,j) * B(j,k)";
inline const char* const kSddmm = "Y(i,j) = X(i,j) * A(i,k) * B(j,k)";
inline const char* const kMttkrp = "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)";

}  // namespace spgen_test
