// Features of a sparse input, from one pass over its entries: what `spgen tune` records beside each
// measurement, and how it finds the previously tuned inputs most like this one (OSKI's and WACO's
// inputs to a model, in their cheapest form).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ref_tensor.h"

namespace spgen::tune {

struct InputFeatures {
  std::vector<int64_t> dims;
  int64_t nnz = 0;  // stored entries, duplicates summed
  // Along mode 0 ("rows" of a matrix, slices of a higher-order tensor):
  double row_mean = 0, row_max = 0, row_cv = 0;  // length mean, maximum, coefficient of variation
  int64_t empty_rows = 0;
  std::vector<int64_t> row_log2_histogram;  // [b]: rows of length in [2^(b-1), 2^b) (b = 0: empty)
  double col_mean = 0, col_max = 0;          // along mode 1, for a matrix
  double bandwidth_mean = 0;                 // a matrix's mean |i - j| over its entries
  // Blocks of r x r (r = 2, 4, 8) of a matrix: stored entries / (occupied blocks x r x r), the
  // fill that a blocked format would store (OSKI's fill ratio, inverted: 1 is full blocks).
  double block_fill_2 = 0, block_fill_4 = 0, block_fill_8 = 0;
  double block_fill_3 = 0;  // FEM matrices of 3 degrees of freedom per node
  std::string structure_hash;  // FNV-1a of dims and coordinates: the same structure, the same hash

  nlohmann::json to_json() const;
  static InputFeatures from_json(const nlohmann::json& j);
};

InputFeatures input_features(const spgen_ref::Tensor& tensor);

// The rows (mode 0) cut into 2, 4 and 8 blocks of equal row counts, as OpenMP's static schedule
// cuts them: the most entries a block holds over the mean block's, the largest of the three
// (1: even). 0 for a tensor with no rows or no entries.
double static_split_imbalance(const spgen_ref::Tensor& tensor);

// How unlike two inputs are, for seeding a search from earlier ones: distance between their log
// sizes, mean row lengths and row-length spreads (0: alike in every feature compared).
double feature_distance(const InputFeatures& a, const InputFeatures& b);

}  // namespace spgen::tune
