// Kernels that `spgen tune` chose per matrix, loaded by bench_kernels --tuned DIR: each is a
// shared library DIR/STEM.so (STEM: spmv-MATRIX, spmm32-MATRIX, sddmm128-MATRIX, ...) built by
// bench/build_tuned.py from a tuned config, exporting `bench_tuned_call` with the signature of
// bench_kernels' own kernels of that op.
#pragma once

#include <string>

// The library's `bench_tuned_call`, or null where DIR has no STEM.so (an error that stops the
// bench where it has one that does not load).
void* load_tuned_kernel(const std::string& dir, const std::string& stem);
