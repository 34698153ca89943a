// What the backends print besides the IR: where the kernel came from, for the files' comments.
// Only file names (never directories), so output is the same on every machine.
#pragma once

#include <string>
#include <vector>

namespace spgen {

// A kernel's conversion routines (codegen/pack_routines.h), host code on either target; empty for
// kernels whose tensors are all dense.
struct PackRoutines {
  std::string header_docs;          // NAME.h: comment lines documenting them, after the kernel's ABI
  std::string header_declarations;  // NAME.h: the status codes and the extern "C" declarations
  std::string source;               // NAME.cpp (NAME.cu): appended after the kernel
};

struct GenerationContext {
  std::string version;         // spgen's version
  std::string spec_file;       // base name of the spec file
  std::string config_file;     // base name of the config file
  std::string spec_text;       // the normalised assignment
  std::vector<std::string> formats;   // one line per tensor
  std::vector<std::string> sizes;     // one line per size fixed at generation ("sizes")
  std::vector<std::string> schedule;  // one line per applied schedule op
  bool auto_schedule = false;
  std::vector<std::string> auto_inputs;  // the inputs whose statistics `auto` used, described
  PackRoutines pack;
};

struct GeneratedFile {
  std::string name;  // file name, no directory
  std::string text;
};

}  // namespace spgen
