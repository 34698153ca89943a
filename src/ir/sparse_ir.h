// Stage I IR, after SparseTIR: sparse axes (one per storage level), sparse buffers that hold
// values over a list of axes, and one sparse iteration whose iterators are the index variables.
// Axes are separate from buffers so that several buffers can share one structure: the output of
// SDDMM is stored over the axes of its sparse input.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/config.h"

namespace spgen::sparse {

enum class AxisKind {
  DenseFixed,      // every coordinate in [0, length)
  DenseVariable,   // ragged: a pos array; coordinates 0 .. n-1 under each parent
  SparseFixed,     // ELL: `width` coordinates per parent in a crd array, padded with -1
  SparseVariable,  // a pos/crd pair: a variable number of stored coordinates per parent position
  Singleton,       // COO's lower levels: one coordinate per parent position, crd only
};
const char* axis_kind_name(AxisKind kind);  // SparseTIR spelling: "dense_fixed", ...
AxisKind axis_kind_of(LevelKind kind);

struct Axis {
  std::string name;       // "A.1": tensor A, level 1
  AxisKind kind;
  std::string tensor;     // the tensor whose storage defines it
  int level = 0;          // storage level within that tensor
  int mode = 0;           // tensor mode the level stores
  std::string index_var;  // index variable the level's coordinates bind in this spec
  int parent = -1;        // axis id of the level above, -1 at the root
  std::string length;     // the dimension parameter bounding its coordinates ("dim_j")
  std::string pos, crd;   // names of its position and coordinate arrays, where it has them
  int64_t width = 0;      // SparseFixed: entries per parent
  // SparseFixed under the top level: slots stored slot-major in groups of this many parent
  // positions (counted from the top level's first position): slot s of parent p is at
  // (p / C) * C * width + s * C + p % C. 0: p * width + s.
  int64_t interleave = 0;
  // An interleaved SparseFixed level whose width varies by group (SELL-C-sigma's slices, with
  // `width` 0): group g of C parent positions holds pos[g+1] - pos[g] slots, and slot s of
  // parent p is at (pos[p / C] + s) * C + p % C.
  bool sliced = false;
  // A compressed top level that lists every coordinate exactly once (SELL's rows), so a loop it
  // drives alone visits them all; `ordered` false: not in increasing order, so no merge.
  bool lists_every_coordinate = false;
  bool ordered = true;
  bool unique = true;     // false for COO's top level: one position per entry, coordinates repeat
  // A level of a blocked format (BSR): it stores `mode_var` floordiv `block` (its index_var is
  // the block loop, "i_blk") or mode_var mod `block` (the in-block loop, "i_in"). `length`
  // stays the logical dimension of mode_var.
  BlockPart block_part = BlockPart::None;
  int64_t block = 0;
  std::string mode_var;  // the spec's index variable of the level's mode
  // A blocked level whose blocks are not the loops' (B bsr 4x4 beside A bsr 2x2 on the same
  // index): it binds the spec's variable itself, and is reached at its coordinate / or % block.
  bool blocked_apart() const { return block_part != BlockPart::None && index_var == mode_var; }
};

// An index variable that a blocked operand splits into two loops: `outer` over blocks and
// `inner` inside one, with var = outer * size + inner (the last block may be partial).
struct BlockedVar {
  std::string var, outer, inner;
  int64_t size = 0;
  std::string tensor;  // the operand whose format blocks it
};

struct SparseBuffer {
  std::string tensor;
  std::vector<int> axes;  // axis ids, storage order (outermost first)
  std::vector<std::string> indices;  // index variable per tensor mode, as accessed in the spec
  Format format;
  bool is_output = false;
  std::string shares_structure_with;  // tensor whose axes this output reuses, or empty
  bool format_inferred = false;       // the output's format came from its operands (infer_output_format)
  std::string format_reason;          // ... why, per index variable (passes/output_fill.h)
  bool previous_output = false;       // an input holding the output's value before a `+=` kernel (read_previous_output)
  // An assembled output blocked where no operand is (C bsr = A csr + B csr): this compressed
  // level's coordinate keys a workspace that gathers one parent position's blocks (a block row)
  // whole, with the dense levels below as each block's values; -1 otherwise. The levels above it
  // give the loops (i_blk, i_in); this level's variable stays one loop, and its blocked levels
  // are reached at its coordinate / and % their block (blocked_apart).
  int gathered_level = -1;
  // An assembled output blocked otherwise than the operands' block loops give its indices
  // (blocked on some of them only, by other blocks, or beside a term outside the blocks where no
  // block-row workspace serves): its levels bind the spec's variables (blocked_apart), and its
  // entries are listed, sorted and packed into its blocks (passes/lower_to_loops.cpp).
  bool listed_blocks = false;
  // An unblocked assembled output whose parts cannot share one nest beside a blocked operand (the
  // shared loops skip coordinates where another part has entries): each part lists its entries
  // in a nest of its own, sorted and packed (a NestRefusal::SharedBlocks answered: passes/nest_plan.h).
  bool parts_listed = false;
  // C_prev of a `+=` into such a listed output, whose storage order conflicts with the other
  // operands' (C bsr 2x2 += A bsr 2x1): its term is a part of the sum of its own
  // (place_sum_parts), whose nest follows its own storage order (infer_loop_order ignores it
  // for the others' loops, lower_to_loops orders its part's loops by it alone).
  bool ordered_apart = false;
  std::string values;                 // name of the values array
};

struct Iterator {
  std::string var;
  bool is_reduction = false;  // summed: absent from the output
};

// Stage I `fuse`: the loops of `outer` and `inner` (adjacent, in that order) become one loop
// named `into` over the stored entries of `tensor`'s levels that store them.
struct Fusion {
  std::string outer, inner, into;
  std::string tensor;
  std::string op_path;  // the fuse op's JSON pointer, for errors found while lowering
};

// Terms of a sum that sum over other index variables than the iteration's body (TACO's scoped
// sums: the bias of `C(i,j) = A(i,k) * B(k,j) + D(i,j)`), lowered in the body's loop nest into an
// assembled output: inside the loops outside the first summed one (the shared loops), over
// their own loops below them, adding into the row workspace or the scalar sum that the body's
// summed loops add into (passes/place_sum_parts.h).
struct AddedPart {
  std::vector<std::string> summed;  // the index variables its terms sum over, none for a bias
  ast::ExprPtr body;                // its terms, with their signs
};

struct SparseIteration {
  std::string name;
  std::vector<Iterator> iterators;  // loop order, outermost first
  std::vector<Fusion> fusions;
  ast::Access output;
  bool accumulate = false;
  ast::Reduction reduction = ast::Reduction::Sum;  // how the reduction loops combine body's values
  ast::ExprPtr body;
  std::vector<AddedPart> added_parts;  // added to body in its loop nest (empty: body is the whole sum)
  // The loops outside the first summed loop: those that body and the added parts share.
  size_t shared_loops() const;
  // The loops of the nest that computes `terms` (body or an added part's): the shared loops,
  // then those below them over the output's index variables and those `terms` reads (a blocked
  // one's block loops), in loop order.
  std::vector<Iterator> loops_of(const ast::Expr& terms, const std::vector<BlockedVar>& blocked = {}) const;
};

struct Program {
  std::string kernel_name;
  std::string spec_text;  // normalised assignment, for comments and docs
  ValueType value_type = ValueType::Float32;
  IndexType index_type = IndexType::Int32;
  std::vector<std::string> index_vars;  // first-appearance order: dimension parameters follow it
  // A spec of several statements: index variables that index the same mode of a tensor share a
  // size, that of the first of their class (ProgramTensors::index_class), which index_vars lists
  // alone. Empty: every variable is its own.
  std::map<std::string, std::string> index_class;
  // The index variable whose size `var` has: the first of its class.
  const std::string& size_var(const std::string& var) const;
  std::vector<Axis> axes;
  std::vector<BlockedVar> blocked_vars;
  std::vector<SparseBuffer> buffers;  // output first, then inputs in order of appearance
  SparseIteration iteration;

  const SparseBuffer& buffer(const std::string& tensor) const;
  const SparseBuffer& output() const { return buffers.front(); }
  // The buffer whose axes (and arrays) store `buffer`'s structure: itself, or the input it shares.
  const SparseBuffer& structure_of(const SparseBuffer& buffer) const;
  // Position in the loop order, -1 if absent. A blocked variable is known in its inner loop.
  int depth_of(const std::string& var) const;
  const BlockedVar* blocked(const std::string& var) const;  // the split of a spec variable, or null
  const BlockedVar* blocked_loop(const std::string& loop) const;  // the split whose outer or inner loop it is
  // The first buffer that is a part of the sum of its own (SparseBuffer::ordered_apart), or null.
  const SparseBuffer* ordered_apart_buffer() const;
  // Whether each part of the sum lists the output's entries in a nest of its own, rather than
  // sharing the body's loops: the output is listed into its blocks, or by each part, or a part
  // follows its own storage order.
  bool parts_list_output() const;
};

// A loop-order constraint from a tensor's storage: `before` must be iterated outside `after`.
struct OrderConstraint {
  std::string before, after;
  std::string tensor;  // whose storage imposes it
};

// Constraints that no schedule may break: a level below a compressed one can only be reached
// through its parents, so their coordinates must be bound first.
std::vector<OrderConstraint> hard_order_constraints(const Program& program);

// A part of a scoped sum (its body already set) takes `kept` as its blocked variables and the
// whole's loops less its removed block loops (`unblocked`: a removed loop -> the index's loop in
// its place, "" for none), ordered for its terms.
void set_part_loops(Program& part, const Program& whole, std::vector<BlockedVar> kept,
                    const std::map<std::string, std::string>& unblocked);

// A sum whose terms sum over different indices (added parts) into an output gathered in
// block-row workspaces, where the body does not read an operand that blocks an index (D bsr in
// `C bsr = A csr B + D`): each part is lowered blocked only by its own operands
// (block_row_part_program), the parts sharing the output's block-row loops (block_row_loops).
bool parts_in_block_rows(const Program& whole);
Program block_row_part_program(const Program& whole, const ast::ExprPtr& terms);
size_t block_row_loops(const Program& part);

// `--emit=stage1`.
std::string dump_stage1(const Program& program);

}  // namespace spgen::sparse
