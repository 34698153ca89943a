// spgen_run_glue.hpp: what the glue of a `spgen run` driver (run_driver.cpp, written for each
// kernel) needs of the driver's runtime, in plain types and functions. The runtime itself
// (spgen_run_runtime.hpp: file I/O, packing, timing) is compiled once per index and value types
// and kept in spgen run's cache; the glue describes the kernel in the tables below and calls it.
// Keeping this interface free of templates and standard headers is what makes a glue compile in
// a tenth of a second: it used to instantiate the runtime's containers for every kernel.
#ifndef SPGEN_RUN_GLUE_HPP
#define SPGEN_RUN_GLUE_HPP

#include <stdint.h>

namespace spgen_run_glue {

// Storage level kinds, numbered as spgen_run::Level (spgen_run_runtime.hpp) numbers them.
enum LevelKind { kDense, kCompressed, kCompressedNonUnique, kSingleton, kDenseVariable, kSparseFixed };

// A tensor of the kernel, as spgen_run::TensorInfo describes it.
struct Tensor {
  const char* name;
  bool is_output;
  int order;
  const int* modes;            // index-variable id of each mode
  int level_count;             // storage levels (a blocked mode has two)
  const int* levels;           // LevelKind of each storage level, outermost first
  const int* mode_order;       // levels[l] stores mode mode_order[l]
  int shares_structure_with;   // tensor id whose pos/crd arrays this one uses, or -1
  const int64_t* widths;       // per level: a sparse-fixed level's width; null: none
  const int64_t* blocks;       // per level: a blocked level's block size; null: none
  bool sliced = false;         // SELL-C-sigma (spgen_run::TensorInfo::sliced)
};

// The runtime's packed tensors while the kernel runs (opaque).
struct Run;

int64_t dim(Run* run, int var);
// The arrays the kernel takes, by tensor id and level (null where the level has none).
void* pos(Run* run, int t, int l);
void* crd(Run* run, int t, int l);
void* values(Run* run, int t);
// Sizes level l's pos array of output t for an assemble phase (one zeroed count per parent).
void size_assembled_level(Run* run, int t, int l);
// The packed arrays of tensor t itself (not those of the structure it shares), with their lengths.
const void* stored_array(Run* run, int t, bool is_pos, int l, int64_t* length);
const void* stored_values(Run* run, int t, int64_t* length);
const int64_t* stored_dims(Run* run, int t);
// Throws the runtime's error: a kernel's non-zero status, or a conversion routine's.
[[noreturn]] void fail_kernel_status(const char* kernel, int status);
[[noreturn]] void fail_status(const char* doing, const char* what, int status, const char* message);

// One input tensor's entries, for the kernel's pack routine: coordinates in the tensor's own
// mode order, values already of the kernel's value type. packed_array and packed_values give
// the storage to fill (owned by the runtime).
struct Entries {
  int64_t nnz;
  const int64_t* coords;
  const void* vals;
  const int64_t* dims;
  void* target;
};
void* packed_array(const Entries& entries, bool is_pos, int l, int64_t length);
void* packed_values(const Entries& entries, int64_t length);

using KernelFn = void (*)(Run* run);
// A kernel's conversion routine for one tensor: returns its status (0: SPGEN_OK).
using PackFn = int (*)(const Entries& entries);
// Called twice: for the entry count (coords null), then for the entries.
using UnpackFn = int (*)(Run* run, int64_t* nnz, int64_t* coords, void* vals);

struct Kernel {
  const char* name;
  int var_count;
  const char* const* vars;
  int tensor_count;
  const Tensor* tensors;
  bool accumulate;      // the kernel adds into its output (`+=`)
  int previous_output;  // the input holding a `+=` output's previous value, or -1
  bool lists_output;    // the kernel lists its output's entries by flattened coordinates
  KernelFn invoke;
  KernelFn assemble;    // null unless the kernel builds its sparse output
  KernelFn prepare;     // null unless a decomposition's inspector runs once after packing
  const PackFn* pack;   // by tensor id, null entries (or a null table): the runtime's own
  const UnpackFn* unpack;
  const char* (*pack_strerror)(int status);  // null where the kernel has no conversion routines
  int fixed_count;      // index variables the kernel is specialized for, and their sizes
  const char* const* fixed_vars;
  const int64_t* fixed_sizes;
};

// The driver's entry point: returns 0, or 1 after printing an error.
int main(int argc, char** argv, const Kernel& kernel);

// The kernel's arguments, typed: what the glue's calls read.
template <class Index, class Value>
struct Arrays {
  Run* run;
  int64_t dim(int var) const { return spgen_run_glue::dim(run, var); }
  Index* pos(int t, int l) const { return static_cast<Index*>(spgen_run_glue::pos(run, t, l)); }
  Index* crd(int t, int l) const { return static_cast<Index*>(spgen_run_glue::crd(run, t, l)); }
  Value* values(int t) const { return static_cast<Value*>(spgen_run_glue::values(run, t)); }
};

}  // namespace spgen_run_glue

#endif  // SPGEN_RUN_GLUE_HPP
