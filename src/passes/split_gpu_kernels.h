// Where a CUDA kernel function begins and ends in a lowered function's nest: the top-level
// statements grouped into __global__ functions (the zero fill, the main nest, an assemble
// phase's prefix sum, an entry list's counting, listing and packing kernels).
#pragma once

#include <string>
#include <vector>

#include "ir/loop_ir.h"

namespace spgen {

// The row workspaces of a kernel: heap workspaces, which wrap the whole nest.
std::vector<loops::Workspace> row_workspaces(const std::vector<loops::Stmt>& body);

// The entry list (growable workspaces) the statement allocates, if it is one.
const loops::Allocate* as_entry_list(const loops::Stmt& stmt);

// Sets func.gpu_kernels: the zero fill (bound to the whole grid) and an assemble phase's prefix
// sum (a scan by one block) are kernels of their own; so are an entry list's counting, listing and
// packing nests; the rest of the nest is the main kernel. They are launched in the nest's order:
// the zero fill first, the prefix sum after the counts. The last stage II pass of a cuda function.
void split_gpu_kernels(loops::LoweredFunc& func);

// "blockIdx.x over i0, warp over j": which loop each GPU index of the kernel runs.
std::string describe_gpu_kernel(const loops::GpuKernel& kernel);

// For --emit=stage2: the function's kernels in launch order, one comment line each (its name,
// its geometry, and its part in an entry list).
std::string dump_gpu_kernels(const loops::LoweredFunc& func);

}  // namespace spgen
