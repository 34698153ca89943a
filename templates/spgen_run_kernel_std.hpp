// The standard headers that every cpu kernel file includes (cpu_kernel_preamble.cpp.in) and those
// of its conversion routines' types (cpu_pack_types.cpp.in), which `spgen run` precompiles for
// the kernel's compile in its drivers: parsing them took most of a small kernel's build. The
// kernel's own #includes of them then add nothing.
#include <algorithm>
#include <limits>
#include <new>
#include <stdexcept>
#include <stdint.h>
#include <vector>
