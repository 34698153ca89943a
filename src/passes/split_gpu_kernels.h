// Where a CUDA kernel function begins and ends in a lowered function's nest: the top-level
// statements grouped into __global__ functions (the zero fill, the main nest, an assemble
// phase's prefix sum, an entry list's counting, listing and packing kernels).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/loop_ir.h"

namespace spgen::cuda {

using namespace loops;

// An output's list of entries that arrive out of order (lower_to_loops.cpp, list_and_pack): an
// Allocate of growable lists around the loops that append to them, the Sort of the list, and
// the loops that sum its repeats and pack it. On the GPU the loops run twice, first only
// counting the entries (the list's length, which the host reads back to allocate the list),
// then listing them, each thread taking its entry's slot from an atomic cursor; the host sorts
// the list (spgen_sort_entries), and the packing loops (kernels over the grid, scans by one
// block) sum the repeats and pack it.
struct EntryList {
  std::string tensor;
  std::string keys, values;  // values: empty where an assemble phase lists keys only
  ScalarType value_type = ScalarType::Float32;
  // The packing's other arrays (marks and their running sums, the summed entries): one element
  // more than the list, allocated with it, zeroed.
  std::vector<std::pair<std::string, ScalarType>> work;
  std::string count;  // the list's length so far; on the host, once counted, its length
  std::string cursor() const { return "spgen_" + count; }  // device: the next free slot
  std::string spare(const std::string& list) const { return "spgen_" + list + "_spare"; }  // the sort's other half
};


// How a kernel prints an entry list's loops: counting the entries, or listing them.
enum class Listing { None, Count, List };

// One __global__ function: some top-level statements of the nest and how they are launched.
struct Kernel {
  std::string name;
  std::vector<Stmt> body;
  std::map<std::string, const For*> bound;  // `bind` annotation → the loop that has it
  std::vector<const Param*> params;         // those the body uses, in ABI order
  std::vector<Workspace> workspaces;        // its row workspaces, one parameter each after the params
  // An entry list's kernels: its loops counting or listing the entries, or its packing.
  std::shared_ptr<const EntryList> list;
  Listing listing = Listing::None;
  bool packs_list = false;
  bool ends_list = false;  // the list's last packing kernel, after which the host frees it
  std::vector<Param> list_params;  // the list's arrays (and cursor or length), after the params
};

// The row workspaces of a kernel: heap workspaces, which wrap the whole nest.
std::vector<Workspace> row_workspaces(const std::vector<Stmt>& body);

// The entry list (growable workspaces) the statement allocates, if it is one.
const Allocate* as_entry_list(const Stmt& stmt);

// The zero fill (bound to the whole grid) and an assemble phase's prefix sum (a scan by one
// block) are kernels of their own; the rest of the nest is the main kernel. They are launched in
// the nest's order: the zero fill first, the prefix sum after the counts.
std::vector<Kernel> split_into_kernels(const LoweredFunc& func);

}  // namespace spgen::cuda
