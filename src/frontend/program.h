// The rules between the statements of a spec (docs/spec.md, "Several statements"), and the
// config as each statement reads it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/config.h"

namespace spgen {

// Who writes and reads each tensor, and which index variables name the same extent.
struct ProgramTensors {
  std::map<std::string, size_t> writer;                // tensor -> the statement that writes it
  std::map<std::string, std::vector<size_t>> readers;  // tensor -> the statements that read it, in order
  // Index variables that index the same mode of a tensor in different statements (y written as
  // y(i), read as y(j)) have one size: each maps to the first of its class to appear.
  std::map<std::string, std::string> index_class;
  std::vector<std::string> index_vars;  // the classes' first variables, in order of appearance
  std::vector<ast::TensorUse> tensors;  // every tensor once, as first used; is_output: a statement writes it
};

// Checks what no single statement can: each tensor written once, and only read after the
// statement that writes it; a tensor's order and role the same in every statement; `+=` only in
// a spec of one statement (for now). Errors are CompileErrors at the offending access.
ProgramTensors check_program(const ast::Program& program);

struct ProgramConfig {
  std::string name;                   // the kernel's; statement k's is NAME_s<k+1>
  std::set<std::string> temporaries;  // "temporary": true
  // "fuse": statements that share their row loop run in one; where the config leaves it out,
  // `auto` decides (lower_statements.cpp).
  bool fuse = false;
  bool fuse_given = false;
  // Per statement: the config's JSON as that statement reads it (read_config): only the tensors
  // and sizes it uses, and its own kernel's name.
  std::vector<std::string> statement_json;
  std::vector<std::map<std::string, int64_t>> statement_sizes;  // the command line's --size, per statement
  // Per statement: the JSON path of its schedule in the config ("/schedule", or "/schedule/2"
  // where the schedule is given per statement), for its ops' errors.
  std::vector<std::string> schedule_paths;
};

// What the config says of the program as a whole, checked against it: every tensor it names is
// the program's, a temporary is written by one statement and read by a later one, sizes agree
// within an index class. A spec of several statements takes "schedule": "auto" (each statement
// scheduled by `auto`), or an object of schedules by statement number ({"1": "auto", "3": [ops]};
// a statement it omits gets none), and neither "specialize" nor "variants" (for now).
ProgramConfig read_program_config(const std::string& file, const std::string& text, const ast::Program& program,
                                  const ProgramTensors& tensors, const std::string& default_name,
                                  const std::map<std::string, int64_t>& sizes);

// The name of statement k's kernel in a kernel named `name`.
std::string statement_kernel_name(const std::string& name, size_t k);

}  // namespace spgen
