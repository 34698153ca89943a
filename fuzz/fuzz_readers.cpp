// Fuzz target of the run driver's readers of Matrix Market and FROSTT files
// (templates/spgen_run_runtime.hpp). A file they refuse throws, and the driver prints the error
// (`PATH:LINE: error: ...`, exit 1); a crash, a sanitizer report or a hang is a finding.
#include <exception>

#include "fuzz_targets.h"
#include "spgen_run_runtime.hpp"

namespace spgen_fuzz {

int tensor_reader(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool matrix_market = size > 0 && (data[0] == '%' || data[0] == 'M');
  try {
    const spgen_run::Coo t = matrix_market ? spgen_run::detail::read_mtx("fuzz.mtx", text)
                                           : spgen_run::detail::read_tns("fuzz.tns", text);
    // What was read is consistent: every coordinate inside the dimensions.
    for (int64_t e = 0; e < t.nnz(); ++e)
      for (int m = 0; m < t.order(); ++m)
        if (t.coord(e, m) < 0 || t.coord(e, m) >= t.dims[static_cast<size_t>(m)]) std::abort();
  } catch (const std::exception&) {
    // the driver's precise error
  }
  return 0;
}

}  // namespace spgen_fuzz
