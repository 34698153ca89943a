// What the backends print besides the IR: where the kernel came from, for the files' comments.
// Only file names (never directories), so output is the same on every machine.
#pragma once

#include <string>
#include <vector>

namespace spgen {

struct GenerationContext {
  std::string version;         // spgen's version
  std::string spec_file;       // base name of the spec file
  std::string config_file;     // base name of the config file
  std::string spec_text;       // the normalised assignment
  std::vector<std::string> formats;   // one line per tensor
  std::vector<std::string> schedule;  // one line per applied schedule op
  bool auto_schedule = false;
};

struct GeneratedFile {
  std::string name;  // file name, no directory
  std::string text;
};

}  // namespace spgen
