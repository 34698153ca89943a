// The output strategy of an assembled output whose entries arrive out of its storage order
// (output_order.h says when and why): the loops list each entry, keyed by its coordinates in
// storage order flattened into one int64, with its value; then the list is sorted, the repeats
// of a key summed, and the distinct entries packed level by level. On cuda the grid's threads
// share each of those loops.
#pragma once

#include <string>

#include "ir/loop_ir.h"
#include "passes/lower/output_context.h"

namespace spgen::lowering {

// The list's names: the keys, the values (none when counting), and the number of entries listed.
struct EntryList {
  std::string keys, values, count;
};

// One more entry: its key (coordinates in storage order, flattened) and, filling, its value.
// On cuda the count advances first, as one atomic step that takes the entry's slot (threads
// may list at once), and the entry goes to the slot before it.
loops::Stmt list_entry(const OutputContext& output, const EntryList& list, loops::Expr value);

// The loops (`nest`) list the entries; then the list is sorted, repeats summed, and packed
// (counting: the counted level's entries counted per parent position). `why_listed` goes into
// the kernel's comment.
loops::Stmt list_and_pack(const OutputContext& output, const EntryList& list, loops::Stmt nest, const std::string& why_listed,
                          const FreshName& fresh_name);

}  // namespace spgen::lowering
