// The CUDA emulator itself (tests/cuda_emu): emulator_probe.cu, built once with nvcc-emu, runs
// one probe per process; each test checks what a probe printed against values computed here.
#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "process.h"

using namespace spgen_test;

namespace {

// The probe program built with nvcc-emu (with NVCC_EMU_SANITIZE=`sanitize` if not empty; with
// `define`, a -D flag, if not empty), on first use, in a directory that lives as long as the
// test program.
std::string build_probe(const std::string& sanitize, const std::string& define = "") {
  static TempDir dir;
  std::string out = dir.file("emulator_probe" + sanitize + define);
  std::vector<std::string> command = {source_root() + "/tests/cuda_emu/nvcc-emu", "-std=c++17", "-O1", "-arch=native", "-o", out};
  if (!define.empty()) command.push_back("-D" + define);
  command.push_back(source_root() + "/tests/cuda_emu/emulator_probe.cu");
  ProcessResult build = run_process(command, {"NVCC_EMU_SANITIZE=" + sanitize, "NVCC_EMU_CACHE="});
  INFO("nvcc-emu: " << build.out << build.err);
  REQUIRE(build.exit_code == 0);
  return out;
}

const std::string& probe_binary() {
  static const std::string binary = build_probe("");
  return binary;
}

// The default build runs a block's threads as fibers; this one as OS threads.
const std::string& os_threads_binary() {
  static const std::string binary = build_probe("", "SPGEN_EMU_OS_THREADS");
  return binary;
}

ProcessResult probe(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                    const std::string& binary = probe_binary()) {
  std::vector<std::string> command = {binary};
  command.insert(command.end(), args.begin(), args.end());
  return run_process(command, env);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) result.push_back(line);
  return result;
}

}  // namespace

TEST_CASE("warp shuffles, ballot and a warp sum exchange values among the 32 lanes of each warp") {
  ProcessResult run = probe({"warp"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> got = lines(run.out);
  REQUIRE(got.size() == 64);
  for (int t = 0; t < 64; ++t) {
    const int warp = t / 32, lane = t % 32;
    auto value = [&](int l) { return 100 * warp + l + 1; };
    int sum = 0, prefix = 0, low_half = 0, high_half = 0;
    for (int l = 0; l < 32; ++l) sum += value(l);
    for (int l = 0; l <= lane; ++l) prefix += value(l);
    for (int l = 0; l < 16; ++l) low_half += value(l), high_half += value(l + 16);
    int down, butterfly, scan, broadcast, half;
    unsigned ballot;
    CAPTURE(got[t]);
    REQUIRE(std::sscanf(got[t].c_str(), "thread %*d: down=%d xor=%d scan=%d broadcast=%d half=%d ballot=%x", &down,
                        &butterfly, &scan, &broadcast, &half, &ballot) == 6);
    if (lane == 0) CHECK(down == sum);  // the tree sum of spgen_warp_sum: lane 0 holds it
    CHECK(butterfly == sum);            // xor: every lane holds it
    CHECK(scan == prefix);              // up: inclusive prefix sums
    CHECK(broadcast == value(5));
    if (lane == 0) CHECK(half == low_half);  // width 16: each half sums on its own
    if (lane == 16) CHECK(half == high_half);
    CHECK(ballot == 0xaaaaaaaau);  // the odd lanes
  }
}

TEST_CASE("__syncthreads orders shared memory between the warps of a block, in every block") {
  // Warp 0 writes late; the other warps read its slots after the barrier.
  ProcessResult run = probe({"shared"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out == "shared: 0 wrong of 1536\n");
}

TEST_CASE("dynamic shared memory is sized by the launch and shared by the threads of a block") {
  ProcessResult run = probe({"dynamic-shared"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out == "dynamic: 5050 5050\n");  // 1 + 2 + ... + 100 in each of 2 blocks
}

TEST_CASE("block votes (__syncthreads_count, _and, _or) and warp votes (__any_sync, __all_sync)") {
  ProcessResult run = probe({"votes"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  // 100 threads: 34 multiples of 3; thread 40 is in warp 1; lane 7 is in warps 0 to 2, not in
  // the 4-lane warp 3.
  CHECK(run.out ==
        "thread 0: count=34 and=0 and=1 or=1 or=0 any=0 all=0\n"
        "thread 33: count=34 and=0 and=1 or=1 or=0 any=1 all=0\n"
        "thread 66: count=34 and=0 and=1 or=1 or=0 any=0 all=0\n"
        "thread 99: count=34 and=0 and=1 or=1 or=0 any=0 all=1\n");
}

TEST_CASE("a barrier not every thread reaches ends the program with a message instead of hanging") {
  SUBCASE("__syncthreads in divergent code") {
    ProcessResult run = probe({"divergent", "syncthreads"});
    CHECK(run.exit_code == 3);
    CHECK(run.out.find("finished") == std::string::npos);
    CHECK(run.err == "cuda emulator: __syncthreads not reached by every thread of block (0,0,0) (16 of 64 arrived)\n");
  }
  SUBCASE("a shuffle in divergent code") {
    ProcessResult run = probe({"divergent", "shuffle"});
    CHECK(run.exit_code == 3);
    CHECK(run.err.find("cuda emulator: __shfl_down_sync not reached by every lane of warp ") == 0);
    CHECK(run.err.find("(16 of 32 arrived)") != std::string::npos);
  }
  SUBCASE("a thread that never comes back: the watchdog (fibers: the others have not started)") {
    ProcessResult run = probe({"divergent", "stuck"}, {"SPGEN_CUDA_EMU_TIMEOUT=1"});
    CHECK(run.exit_code == 3);
    CHECK(run.err ==
          "cuda emulator: thread 0 of block (0,0,0) ran for 1 s without reaching a barrier or returning, while the "
          "block's 31 other threads wait for it (the emulator runs a block's threads one at a time)\n");
  }
  SUBCASE("a thread that never comes back: the watchdog (OS threads: the others wait at the barrier)") {
    ProcessResult run = probe({"divergent", "stuck"}, {"SPGEN_CUDA_EMU_TIMEOUT=1"}, os_threads_binary());
    CHECK(run.exit_code == 3);
    CHECK(run.err ==
          "cuda emulator: __syncthreads not reached by every thread of block (0,0,0) (31 of 32 arrived, no progress in 1 s)\n");
  }
  SUBCASE("divergent barriers with OS threads") {
    ProcessResult run = probe({"divergent", "syncthreads"}, {}, os_threads_binary());
    CHECK(run.exit_code == 3);
    CHECK(run.err == "cuda emulator: __syncthreads not reached by every thread of block (0,0,0) (16 of 64 arrived)\n");
    run = probe({"divergent", "shuffle"}, {}, os_threads_binary());
    CHECK(run.exit_code == 3);
    CHECK(run.err.find("(16 of 32 arrived)") != std::string::npos);
  }
}

TEST_CASE("a bad launch configuration does not run and sets the error the GPU sets") {
  ProcessResult run = probe({"launch-errors"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out ==
        "good: cudaSuccess ran=1\n"
        "grid.x=0: cudaErrorInvalidConfiguration ran=0\n"
        "grid.y=65536: cudaErrorInvalidConfiguration ran=0\n"
        "grid.z=65536: cudaErrorInvalidConfiguration ran=0\n"
        "block=1025: cudaErrorInvalidConfiguration ran=0\n"
        "block.z=65: cudaErrorInvalidConfiguration ran=0\n"
        "block=64x32: cudaErrorInvalidConfiguration ran=0\n"
        "dynamic shared 48K+1: cudaErrorInvalidValue ran=0\n"
        "static 40K + dynamic 8K+1: cudaErrorInvalidValue ran=0\n"
        "static 40K + dynamic 8K: cudaSuccess ran=1\n"
        "launch bounds 64, 128 threads: cudaErrorLaunchOutOfResources ran=0\n"
        "launch bounds 64, 64 threads: cudaSuccess ran=1\n"
        "memcpy past the end: cudaErrorInvalidValue\n"
        "memcpy from host as device: cudaErrorInvalidValue\n"
        "after the memcpy errors: cudaErrorInvalidValue ran=0\n");
}

TEST_CASE("the grid cap runs fewer blocks and a grid-stride kernel still covers everything") {
  SUBCASE("the default cap, 16") {
    ProcessResult run = probe({"grid-cap"});
    INFO(run.err);
    CHECK(run.out == "grid: asked 782 blocks, ran 16, 0 wrong\n");
  }
  SUBCASE("SPGEN_CUDA_EMU_MAX_BLOCKS=3") {
    ProcessResult run = probe({"grid-cap"}, {"SPGEN_CUDA_EMU_MAX_BLOCKS=3"});
    INFO(run.err);
    CHECK(run.out == "grid: asked 782 blocks, ran 3, 0 wrong\n");
  }
  SUBCASE("no cap") {
    ProcessResult run = probe({"grid-cap"}, {"SPGEN_CUDA_EMU_MAX_BLOCKS=100000"});
    INFO(run.err);
    CHECK(run.out == "grid: asked 782 blocks, ran 782, 0 wrong\n");
  }
}

TEST_CASE("launches of different sizes in a row run every thread of every block once") {
  ProcessResult run = probe({"relaunch"});
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out == "64 threads: 0 wrong\n1024 threads: 0 wrong\n32 threads: 0 wrong\n256 threads: 0 wrong\n1024 threads: 0 wrong\n");
}

TEST_CASE("atomics from 1024 threads lose no update") {
  int biggest = -1;
  for (int t = 0; t < 1024; ++t) biggest = std::max(biggest, (t * 37) % 1021);
  long long exchanged = 7;  // the initial value, then every thread's t once
  for (int t = 0; t < 1024; ++t) exchanged += t;
  ProcessResult run = probe({"atomics"});
  INFO(run.err);
  char want[200];
  std::snprintf(want, sizeof want, "atomics: f=1024 d=512 i=2048 u=3072 max=%d min=%d cas=1024 exch=%lld\n", biggest,
                5000 - 1023, exchanged);
  CHECK(run.out == want);
}

TEST_CASE("a misaligned vector load or store is caught (it faults on the GPU)") {
  ProcessResult aligned = probe({"aligned-float4"});
  CHECK(aligned.exit_code == 0);
  CHECK(aligned.out == "float4 sum 4\n");
  ProcessResult misaligned = probe({"misaligned-float4"});
  CHECK(misaligned.exit_code == 3);
  CHECK(misaligned.err.find("misaligned address") != std::string::npos);
  CHECK(misaligned.err.find("float4 load") != std::string::npos);
  CHECK(misaligned.err.find("16-byte alignment") != std::string::npos);

  ProcessResult stored = probe({"aligned-double2-store"});
  CHECK(stored.exit_code == 0);
  CHECK(stored.out == "double2 stored 0 0 1 2\n");
  ProcessResult misstored = probe({"misaligned-double2-store"});
  CHECK(misstored.exit_code == 3);
  CHECK(misstored.err.find("misaligned address") != std::string::npos);
  CHECK(misstored.err.find("double2 store") != std::string::npos);
  CHECK(misstored.out.empty());  // stopped before it printed
}

TEST_CASE("with NVCC_EMU_SANITIZE=thread, threads that race on memory are reported; the emulator itself is race-free") {
  const std::string tsan = build_probe("thread");
  ProcessResult racy = probe({"racy-counters"}, {}, tsan);
  CHECK(racy.exit_code != 0);
  CHECK(racy.err.find("WARNING: ThreadSanitizer: data race") != std::string::npos);
  CHECK(racy.err.find("counters") != std::string::npos);  // the kernel's frame
  ProcessResult atomic = probe({"atomic-counters"}, {}, tsan);
  INFO(atomic.err);
  CHECK(atomic.exit_code == 0);
  CHECK(atomic.out == "counted 128\n");
  // Barriers, shuffles, shared memory and atomics give every access an order TSan sees.
  for (const char* name : {"warp", "shared", "dynamic-shared", "votes", "atomics", "grid-cap", "launch-errors", "relaunch"}) {
    CAPTURE(name);
    ProcessResult run = probe({name}, {}, tsan);
    INFO(run.err);
    CHECK(run.exit_code == 0);
    CHECK(run.err.find("ThreadSanitizer") == std::string::npos);
  }
}

TEST_CASE("a block's threads as fibers and as OS threads (SPGEN_EMU_OS_THREADS) give the same results") {
  for (const char* name : {"warp", "shared", "dynamic-shared", "votes", "atomics", "grid-cap", "launch-errors", "relaunch",
                           "atomic-counters"}) {
    CAPTURE(name);
    ProcessResult fibers = probe({name});
    ProcessResult threads = probe({name}, {}, os_threads_binary());
    INFO(fibers.err << threads.err);
    CHECK(fibers.exit_code == 0);
    CHECK(threads.exit_code == 0);
    CHECK(!fibers.out.empty());
    CHECK(fibers.out == threads.out);
  }
}
