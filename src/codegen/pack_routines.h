// The conversion routines of a kernel: for each tensor that is not dense row-major,
// NAME_pack_T_sizes, NAME_pack_T (COO in, storage levels out) and NAME_unpack_T (the reverse),
// declared in NAME.h and defined in NAME.cpp (NAME.cu on the cuda target, where they are host
// code too). The algorithm is fixed text (templates/cpu_pack_routines.cpp.in); this file prints
// the per-tensor level tables, the extern "C" wrappers and the header's documentation.
// `spgen run`'s drivers call them too.
#pragma once

#include <string>
#include <vector>

#include "codegen/generation_context.h"
#include "frontend/config.h"
#include "ir/sparse_ir.h"

namespace spgen {

// One index array a tensor's routines take (a pos or crd array of one storage level).
struct PackArray {
  std::string name;  // the kernel's name for it: A_pos1, A_crd1
  bool is_pos = false;
  int level = 0;
};

// The routines of one tensor, and the arrays they take, in order: `arrays`, then the values.
struct PackTensor {
  std::string tensor;          // as in the spec
  int id = 0;                  // index in Program::buffers
  bool is_output = false;
  std::string structure;       // the tensor whose levels store it: itself, or the input it shares
  int structure_id = 0;
  std::vector<PackArray> arrays;  // `structure`'s pos/crd arrays
  std::string values;             // its own values array
  std::string sizes_function;     // empty for an output sharing an input's structure
  std::string pack_function;
  std::string unpack_function;
};

// The tensors that get routines, in Program::buffers order (output first).
std::vector<PackTensor> pack_tensors(const sparse::Program& program, const std::string& kernel_name);

// The fixed part of a kernel's conversion routines (templates/cpu_pack_types.cpp.in, then
// cpu_pack_routines.cpp.in), as it stands in its source: namespace NAME_pack with its types and
// the algorithm. `pack_types` is the first part: the comment, includes, the opened namespace and
// the types of its tables (its comment names `header` as where the ABI is documented);
// `pack_functions` the second, up to the namespace's end.
std::string pack_types(const std::string& kernel_name, const std::string& index_type, const std::string& value_type,
                       const std::string& header);
std::string pack_functions(const std::string& kernel_name);
// SELL-C-sigma's own routines (templates/cpu_pack_sell*.cpp.in): its type, then its functions,
// which use the algorithm's entry sorting and checks. A kernel's copy has them where it packs a
// "sell" input (`packs_sell`).
std::string pack_sell_types();
std::string pack_sell_functions();
// SELL-C-sigma's layout of rows (templates/cpu_sell_slices.cpp.in): the part of pack_sell_functions
// that the inspector's sell part shares (codegen/decompose_routines.cpp).
std::string sell_slices_function();
bool packs_sell(const sparse::Program& program);
std::string pack_algorithm(const std::string& kernel_name, const std::string& index_type, const std::string& value_type,
                           bool sell);
// The #defines of the routines' status codes (SPGEN_OK, SPGEN_ERR_...), guarded, as in NAME.h.
std::string pack_status_codes();

// The routines of the kernel `kernel_name`: header documentation, declarations and source. They
// run on the host for either target; the cuda header says so.
PackRoutines emit_pack_routines(const sparse::Program& program, const std::string& kernel_name, Target target);

}  // namespace spgen
