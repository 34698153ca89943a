// File helpers for the CLI: whole-file reads and all-or-nothing writes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace spgen {

// Throws CompileError("PATH: error: cannot read ...") when the file cannot be read.
std::string read_file(const std::string& path);

// Writes every (path, contents) pair or none: each goes to a temporary file beside its target,
// and only when all are written are they renamed into place. Files whose contents are already
// identical are left untouched, so `make` sees no change.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace spgen
