// The output strategy of an assembled output whose entries arrive out of its storage order
// (output_order.h says when and why): the loops list each entry, keyed by its coordinates in
// storage order flattened into one int64, with its value; then the list is sorted, the repeats
// of a key summed, and the distinct entries packed level by level. On cuda the grid's threads
// share each of those loops.
#pragma once

#include <string>

namespace spgen::lowering {

// The list's names: the keys, the values (none when counting), and the number of entries listed.
struct EntryList {
  std::string keys, values, count;
};

}  // namespace spgen::lowering
