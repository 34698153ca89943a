// Line diffs in the unified format of `diff -u`, for `spgen gen --check`.
#pragma once

#include <string>

namespace spgen {

// The unified diff that turns `before` into `after` ("--- before_name", "+++ after_name", then
// hunks with `context` unchanged lines around each change); empty when the texts are equal. A
// last line without a newline is marked as `diff` marks it.
std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_name,
                         const std::string& after_name, int context = 3);

}  // namespace spgen
