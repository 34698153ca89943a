// Stage II: register tiles. A local workspace whose every use is a vectorized loop of constant
// trip count (the tile `precompute` makes, and the loop that writes it out) becomes an array of
// native SIMD vectors, and those loops step one vector at a time with explicit vector loads and
// stores. GCC keeps such arrays in registers; it keeps `float acc[32]` on the stack.
#pragma once

#include "ir/loop_ir.h"

namespace spgen {

// A workspace of exactly 32 bytes (SpMV's row sum in 8 float lanes) becomes one vector of that
// size on the cpu, whatever the native width: as an array GCC kept it on the stack, and each
// step of the sum waited on the store of the one before (1.0-1.5x on 8 matrices, bench/RESULTS.md,
// session 28). Workspaces or loops that do not fit (a trip count that is not a multiple of the
// widest vector, strided accesses, a use outside such a loop) are left as they are. On the CPU a vector is the
// widest SIMD register (up to 16 floats); on the cuda target a float4 or double2, which a thread
// loads and stores in one instruction where the address is aligned (templates/cuda_vector_helpers.cu.in).
enum class VectorTarget { Cpu, Cuda };
void use_explicit_vectors(loops::LoweredFunc& func, VectorTarget target);

}  // namespace spgen
