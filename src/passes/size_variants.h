// Passes 5d and 5e: one kernel per listed size of one index variable, or per threshold of the
// mean row length, and an entry point that chooses among them on each call. A kernel specialized
// for dim_k = 32 (passes/specialize_sizes.h) has constant trip counts, so its register tiles and
// dot products compile to straight-line vector code without remainder loops; a kernel for long
// rows sums them in lanes. Any other input runs the generic kernel. The entry point's ABI is the
// generic kernel's: a caller cannot tell the variants apart except by speed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/config.h"
#include "ir/loop_ir.h"
#include "ir/sparse_ir.h"

namespace spgen {

struct SizeVariants {
  std::string var;             // the index variable
  std::vector<int64_t> sizes;  // ascending, each a kernel of its own
  std::string reason;          // why, for the header
};

// The widths `auto` specializes for: GNN feature and hidden widths.
inline const std::vector<int64_t> kAutoVariantSizes = {16, 32, 64, 128};

// The variants the config asks for ("specialize"), or `auto`'s: the first index variable of the
// spec that the applied schedule tiles or vectorizes in lanes (SpMM's register tile over k,
// SDDMM's dot product) when its size is not fixed, on the cpu, into an output that is dense or
// shares an input's structure. None otherwise. Throws CompileError where "specialize" names a
// kernel that cannot have variants (an output the kernel assembles, no size parameter).
std::optional<SizeVariants> choose_size_variants(const Config& config, const sparse::Program& program,
                                                 const loops::LoweredFunc& generic, bool assembles_output,
                                                 const std::vector<ScheduleOp>& applied);

// The name of the kernel specialized for `size`: NAME_k32.
std::string variant_name(const std::string& kernel, const SizeVariants& variants, int64_t size);

// One kernel of several: `callee` where `condition` holds (the first case that holds wins).
struct DispatchCase {
  loops::Expr condition;
  std::string callee;
};
// The entry point `name`: the generic kernel's parameters, and a body that calls the first case
// whose condition holds, else `generic`, after `comment`.
loops::LoweredFunc build_dispatch(const std::string& name, const loops::LoweredFunc& generic, const std::vector<DispatchCase>& cases,
                                  const std::string& comment);

// dim_VAR == size, read from `generic`'s parameters (choose_size_variants checked it has one).
loops::Expr size_equals(const loops::LoweredFunc& generic, const std::string& var, int64_t size);

// Rows of at least `min` stored entries on average: pos[dim] >= min * dim, over the compressed
// level right below the dense level of the outermost loop's variable (CSR's rows), read from
// `generic`'s parameters; null where the kernel has no such level.
loops::Expr mean_row_length_at_least(const sparse::Program& program, const loops::LoweredFunc& generic, int64_t min);

// The name of the kernel for rows of at least `min` entries: NAME_rows12.
std::string row_variant_name(const std::string& kernel, int64_t min);

// The header's lines on the variants ("Schedule" section): the sizes, then each row-length
// variant's schedule.
std::vector<std::string> describe_variants(const std::optional<SizeVariants>& sizes, const std::vector<RowLengthVariant>& rows);

// `auto` may schedule a variant otherwise than the generic kernel (a narrower tile, a prefetch
// that pays at this width only): a header line per op that differs, "for k = 16: tile(k, 16 ->
// k0, k1) in place of tile(k, 32 -> k0, k1): reason". `which` names the variant ("k = 16").
std::vector<std::string> schedule_differences(const std::vector<ScheduleOp>& generic, const std::vector<ScheduleOp>& variant,
                                              const std::string& which);

// The parameter that holds the variable's size, or null.
const loops::Param* size_param(const loops::LoweredFunc& func, const std::string& var);

}  // namespace spgen
