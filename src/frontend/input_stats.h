// What `auto` may know of a sparse input's structure: `spgen gen --stats NAME=FILE` reads it from
// a file the kernel will run on, and `spgen run` from its --input files. Without it `auto` decides
// from the spec and config alone (docs/config.md, "auto").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace spgen {

struct InputStats {
  std::string source;  // the file, as given: named in the header
  std::vector<int64_t> dims;
  int64_t nnz = 0;             // stored entries, duplicates summed
  double row_mean = 0;         // entries per row (along mode 0)
  double row_cv = 0;           // their coefficient of variation
  int64_t row_max = 0;         // the longest row
  double bandwidth_mean = 0;   // a matrix's mean |i - j| over its entries: how far apart its rows reach
  // The rows cut into 2, 4 and 8 parts of equal row counts (OpenMP's static split): the most
  // entries a part holds over the mean, the largest of the three. 1 is perfectly even.
  double static_split_imbalance = 0;
  // A matrix cut into r x r blocks (r = 2, 3, 4, 8): its entries over the occupied blocks'
  // slots, 1 when every occupied block is full (OSKI's fill ratio, inverted). Empty: not known.
  std::map<int64_t, double> block_fill;

  // "cora.mtx: 2708 x 2708, 10556 entries, 3.9 per row (at most 168), mean |i - j| 837, equal
  // row blocks within 1.25x of even"
  std::string describe() const;
};

}  // namespace spgen
