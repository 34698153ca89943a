// The fuzz targets of spgen's front end and of the run driver's readers (see fuzz/README.md).
// Each takes one input and returns 0; a crash, a sanitizer report, an internal error (an
// exception that is not the precise error of bad input: abort) or a hang is a finding.
// fuzz_main.cpp wraps one of them as libFuzzer's LLVMFuzzerTestOneInput; the replay test
// (tests/fuzz) runs every seed and every regression file through all of them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spgen_fuzz {

// A spec (.spg text): parse_spec.
int spec_parser(const uint8_t* data, size_t size);
// A config (JSON) read against one of a few specs, chosen by the input's length.
int config_reader(const uint8_t* data, size_t size);
// A spec, a line "%%", and a config: the whole compile (stage I and II dumps, header, source),
// for the cpu and the cuda target.
int whole_compile(const uint8_t* data, size_t size);
// How many of whole_compile's inputs compiled (for the replay test to check its seeds reach the
// backends, not only the parser).
int64_t whole_compile_successes();
// A Matrix Market file (first byte 'M' or '%') or else a FROSTT .tns file: the run driver's readers.
int tensor_reader(const uint8_t* data, size_t size);
// Arbitrary packed arrays given to the generated unpack routines of csr, coo, bsr, ell, dcsr and
// csf kernels: each must be refused with an error code or read within its arrays.
int unpack_routines(const uint8_t* data, size_t size);

}  // namespace spgen_fuzz
