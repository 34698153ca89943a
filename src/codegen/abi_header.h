// NAME.h for any target: the extern "C" declaration and the ABI in a comment. Plain C++ (no
// target types), so host code of any kind can include it.
#pragma once

#include <string>

#include "codegen/generation_context.h"
#include "ir/loop_ir.h"

namespace spgen {

// `extra_params` are appended after the kernel's own (e.g. a CUDA stream), as C declarations;
// `target_types` declares the types they need (lines of C, placed after the includes).
GeneratedFile emit_abi_header(const loops::LoweredFunc& func, const GenerationContext& context,
                              const std::string& return_type = "void",
                              const std::vector<std::string>& extra_params = {},
                              const std::vector<std::string>& extra_docs = {},
                              const std::string& target_types = "",
                              const std::vector<loops::LoweredFunc>& assemble = {});  // a sparse output's assemble phases

std::string header_file_name(const loops::LoweredFunc& func);

// A source file's opening (`preamble`: its template), which names its inputs and its header.
// `includes`: system includes the body needs beyond the template's ("#include <cmath>\n").
std::string source_preamble(const std::string& preamble, const std::string& file_name, const loops::LoweredFunc& func,
                            const GenerationContext& context, const std::string& includes = "");

}  // namespace spgen
