// The cuda part of the stage II schedule. `bind` ops only mark loops; once every op has applied,
// this checks the bindings against the finished nest (threads racing on the output, stores that
// every thread of an index would repeat, block sizes) and completes what the CUDA backend
// prints: thread counts, the scalars a warp shuffle combines, the lane-0 guard after it, and
// the output's zero fill as a grid-stride loop. Errors name the bind op by its index.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

struct GpuBinding {
  const ScheduleOp* op;   // the bind op, for errors
  std::string label;      // the loop it bound
  std::string remainder;  // a tile's remainder loop, bound alike, or empty
};

// What the schedule knows about its loops: the index variable each label iterates, and which
// loops iterate positions of a compressed level (their index is read from a crd array).
struct LoopOrigins {
  const std::map<std::string, std::string>& index_var;
  const std::set<std::string>& positional;
};

void finish_gpu_bindings(loops::LoweredFunc& func, const sparse::Program& program, const Config& config,
                         const std::vector<GpuBinding>& bindings, const LoopOrigins& origins);

}  // namespace spgen
