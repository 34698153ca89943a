// A spec of several statements, in the reference's own terms: each statement evaluated in turn
// (reference.h), its result joining the inputs of the statements after it. Shares nothing with
// src/ but this directory.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ref_tensor.h"

namespace spgen_ref {

// The statements of a spec: one per line, or separated by ';'. A line without '=' (after its
// '#' comment is dropped) continues the statement before it. Empty statements are left out.
std::vector<std::string> split_statements(const std::string& spec_text);

// How a statement's output is stored, which decides what later statements read of it: `dense`,
// every coordinate (0 where the evaluation reached none); else the entries evaluate returns. With
// `structure` (an input of that statement read with the output's indices), exactly that input's
// entries (on_entries_of).
struct StoredAs {
    bool dense = false;
    std::string structure;
};

// Every statement's output, by name, evaluated in order; `stored` says how each is stored (an
// output it lacks: as evaluate returns it). A reduction inside a right-hand side (`exp(S(i,j) -
// max(j: S(i,j)))`, not the whole of it) is first evaluated as a statement of its own, innermost
// first, into a dense temporary over the indices of its expression it does not reduce, which the
// expression then reads (these temporaries are among the results, named ref_reduction_N).
// Throws as evaluate does, naming the statement.
std::map<std::string, Tensor> evaluate_statements(const std::string& spec_text, const std::map<std::string, Tensor>& inputs,
                                                  const std::map<std::string, StoredAs>& stored,
                                                  const std::map<std::string, int64_t>& extra_dims = {});

// Every coordinate of `t`'s dims, in row-major order, with t's value there (summed) or 0.
Tensor densified(const Tensor& t);

}  // namespace spgen_ref
