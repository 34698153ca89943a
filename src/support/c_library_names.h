// Names the generated files cannot give their extern "C" entry points: the functions of the C
// library that their includes declare (<cmath>, <cstdlib>, <cstring>, <cstdio>, <ctime>, ...), and
// OpenMP's. A kernel named `exp` would redeclare libm's exp.
#pragma once

#include <string>

namespace spgen {

bool is_c_library_name(const std::string& name);

}  // namespace spgen
