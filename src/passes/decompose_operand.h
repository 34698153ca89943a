// Stage I `decompose` (SparseTIR's composable formats): one sparse input stored as several
// parts, each in a format of its own (ELL rows, COO, BSR blocks, CSR), each with its own loop
// nest and schedule. A part is the whole kernel over that part alone: the spec with the tensor
// renamed (A -> A_ell) and stored in the part's format. The executor (passes/build_executor.h)
// runs the parts in turn, every part after the first adding into the output, and the generated
// inspector (codegen/decompose_routines.h) splits a CSR input into the parts.
#pragma once

#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/config.h"

namespace spgen {

// What one part holds, for the inspector. Rows of a bucket or COO part are listed (their
// coordinates may repeat: a row longer than the widest bucket is split over several).
enum class PartKind {
  Ell,     // every row: its first `width` entries, padded
  Coo,     // every entry an ELL part left over
  Bucket,  // hyb: rows whose entries in column partition `partition` fit `width` (and not the next smaller bucket)
  Bsr,     // blocks holding at least `fill` of their entries
  Csr,     // every entry the BSR part left over
  Sell,    // every row, in slices of `interleave` rows padded to their longest (SELL-C-sigma)
};

struct DecomposedPart {
  std::string name;    // how schedule ops name it: "ell", "coo", "p0_b4", "bsr", "csr"
  std::string tensor;  // the part's tensor in its spec: "A_ell"
  PartKind kind = PartKind::Csr;
  int64_t width = 0;      // Ell, Bucket: entries per row
  int64_t partition = 0;  // Bucket: its column partition
  bool unique_rows = true;  // Bucket, Coo: false when a row may appear in several of its rows
  ast::Spec spec;         // the original with `tensor` in place of the decomposed one
  Config config;          // its format set, its name NAME_part, and the ops that schedule it
};

struct Decomposition {
  DecomposeOp op;
  std::string op_path;  // the decompose op's JSON pointer
  std::vector<DecomposedPart> parts;

  // `tensor` is one of the parts (A_ell): its arrays are the inspector's output.
  bool is_part_tensor(const std::string& tensor) const;
};

// Whether the op (after the decompose) schedules that part: it names the part, or names none
// and no op for the part replaces it (one of the same kind on the same loop).
bool schedules_part(const Config& config, const ScheduleOp& op, const std::string& part);

// The config's first schedule op is a decompose.
bool has_decomposition(const Config& config);

// Why `tensor` cannot be decomposed in this kernel (read as csr, a dense output, a sum the kernel
// is linear in), or empty.
std::string decompose_refusal(const ast::Spec& spec, const Config& config, const std::string& tensor);

// Checks that the decomposition applies (a csr input that the kernel is linear in, a dense
// output, the cpu target, parts that the ops name exist) and derives each part's spec and config.
Decomposition decompose_operand(const ast::Spec& spec, const Config& config);

}  // namespace spgen
