// A CPU emulation of the parts of the CUDA runtime that spgen's generated kernels and its
// `spgen run` CUDA driver use, so that they compile with g++ (through tests/cuda_emu/nvcc-emu,
// which rewrites the launches `k<<<grid, block, shmem, stream>>>(args)` and the `__shared__`
// declarations) and run on a machine without a GPU. See docs/testing.md.
//
// Each launch runs its blocks one after another. The threads of a block are fibers on the
// launching thread (x86-64 Linux): each runs until it reaches a barrier (`__syncthreads()`, a
// warp shuffle or vote) or returns, then the next ready one runs, so a barrier costs two stack
// switches instead of a sleep and a wake-up in the kernel. Under ThreadSanitizer or
// AddressSanitizer (which do not follow hand-made stack switches), elsewhere, or with
// SPGEN_EMU_OS_THREADS defined, every thread is a real std::thread of a pool kept across
// launches. Either way the warp primitives are real exchanges among the 32 lanes of a warp, and a
// barrier that not every thread (or lane) reaches aborts the program with a message instead of
// hanging. Launches are synchronous.
#pragma once

#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>  // (the real cuda_runtime.h brings the math functions: expf, fabs, ...)
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SPGEN_EMU_OS_THREADS 1
#endif
#endif
#if defined(SPGEN_EMU_OS_THREADS) || defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__) || \
    !defined(__x86_64__) || !defined(__linux__)
#define SPGEN_EMU_FIBERS 0
#else
#define SPGEN_EMU_FIBERS 1
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
// Static shared arrays are `static` locals of the kernel: blocks run one at a time, so the
// threads of a block, and only they, share them. (nvcc-emu adds their size to each launch.)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __constant__

// ---- vector types, aligned as on the GPU -------------------------------------------------------

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// A vector loaded or stored whole from an address that is not a multiple of its size faults on
// the GPU. Here each such copy checks its source and destination: a generated kernel reads
// vectors with `*reinterpret_cast<const float4*>(p)` and writes them by assignment, so the copy
// constructor and assignment see the address. (A check in the types, rather than UBSan's
// -fsanitize=alignment over the whole unit, costs nothing to compile and works with any compiler.)
namespace spgen_emu {
[[noreturn]] inline void misaligned_vector(const void* address, const char* type, size_t alignment, const char* access);
inline void check_vector_address(const void* address, const char* type, size_t alignment, const char* access) {
  // Opaque to the optimizer: it may assume that a float4& is aligned and drop the test.
  uintptr_t bits = reinterpret_cast<uintptr_t>(address);
  asm volatile("" : "+r"(bits));
  if (bits % alignment != 0) misaligned_vector(address, type, alignment, access);
}
}  // namespace spgen_emu

#define SPGEN_EMU_VECTOR_COPIES(name, align)                                                          \
  name(const name& other) {                                                                            \
    spgen_emu::check_vector_address(&other, #name, align, "load");                                     \
    __builtin_memcpy(static_cast<void*>(this), static_cast<const void*>(&other), sizeof(name));        \
  }                                                                                                    \
  name& operator=(const name& other) {                                                                 \
    spgen_emu::check_vector_address(&other, #name, align, "load");                                     \
    spgen_emu::check_vector_address(this, #name, align, "store");                                      \
    __builtin_memcpy(static_cast<void*>(this), static_cast<const void*>(&other), sizeof(name));        \
    return *this;                                                                                      \
  }
#define SPGEN_EMU_VECTOR2(T, name, align)                                          \
  struct alignas(align) name {                                                     \
    T x, y;                                                                        \
    name() = default;                                                              \
    constexpr name(T vx, T vy) : x(vx), y(vy) {}                                   \
    SPGEN_EMU_VECTOR_COPIES(name, align)                                           \
  };                                                                               \
  inline name make_##name(T x, T y) { return name{x, y}; }
#define SPGEN_EMU_VECTOR4(T, name, align)                                                    \
  struct alignas(align) name {                                                               \
    T x, y, z, w;                                                                            \
    name() = default;                                                                        \
    constexpr name(T vx, T vy, T vz, T vw) : x(vx), y(vy), z(vz), w(vw) {}                   \
    SPGEN_EMU_VECTOR_COPIES(name, align)                                                     \
  };                                                                                         \
  inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }
SPGEN_EMU_VECTOR2(float, float2, 8)
SPGEN_EMU_VECTOR4(float, float4, 16)
SPGEN_EMU_VECTOR2(double, double2, 16)
SPGEN_EMU_VECTOR2(int, int2, 8)
SPGEN_EMU_VECTOR4(int, int4, 16)
SPGEN_EMU_VECTOR2(long long, longlong2, 16)
#undef SPGEN_EMU_VECTOR2
#undef SPGEN_EMU_VECTOR4
#undef SPGEN_EMU_VECTOR_COPIES

inline thread_local uint3 threadIdx{0, 0, 0};
inline thread_local uint3 blockIdx{0, 0, 0};
inline thread_local dim3 blockDim{1, 1, 1};
inline thread_local dim3 gridDim{1, 1, 1};
inline constexpr int warpSize = 32;

// ---- errors -------------------------------------------------------------------------------------

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorLaunchOutOfResources = 701,
};
typedef cudaError_t cudaError;

inline const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
  }
  return "cudaErrorUnknown";
}

inline const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
  }
  return "unknown error";
}

namespace spgen_emu {

[[noreturn]] inline void fail(const std::string& message) {
  std::fprintf(stderr, "cuda emulator: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(3);
}

[[noreturn]] inline void misaligned_vector(const void* address, const char* type, size_t alignment, const char* access) {
  char message[160];
  std::snprintf(message, sizeof message, "misaligned address %p for a %s %s (a GPU fault: it needs %zu-byte alignment)",
                address, type, access, alignment);
  fail(message);
}

inline cudaError_t& last_error() {
  static cudaError_t error = cudaSuccess;
  return error;
}

inline cudaError_t record(cudaError_t error) {
  if (error != cudaSuccess) last_error() = error;
  return error;
}

}  // namespace spgen_emu

inline cudaError_t cudaGetLastError() {
  cudaError_t error = spgen_emu::last_error();
  spgen_emu::last_error() = cudaSuccess;
  return error;
}
inline cudaError_t cudaPeekAtLastError() { return spgen_emu::last_error(); }

// ---- device memory ------------------------------------------------------------------------------

struct CUstream_st;
typedef CUstream_st* cudaStream_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

namespace spgen_emu {

// Every live cudaMalloc block (start -> bytes), so copies can check they stay inside one.
struct Allocations {
  std::mutex mutex;
  std::map<const char*, size_t> blocks;
};
inline Allocations& allocations() {
  static Allocations a;
  return a;
}

// Whether [p, p + bytes) lies inside one device allocation.
inline bool is_device_range(const void* p, size_t bytes) {
  Allocations& a = allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  const char* c = static_cast<const char*>(p);
  auto it = a.blocks.upper_bound(c);
  if (it == a.blocks.begin()) return false;
  --it;
  return c >= it->first && c + bytes <= it->first + it->second;
}

}  // namespace spgen_emu

inline cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  if (!pointer) return spgen_emu::record(cudaErrorInvalidValue);
  // 256-byte aligned like the GPU's allocations, and exactly `bytes` long (AddressSanitizer sees
  // the end); filled with NaN bytes, as device memory is not zeroed.
  void* block = nullptr;
  if (posix_memalign(&block, 256, bytes ? bytes : 1) != 0) return spgen_emu::record(cudaErrorMemoryAllocation);
  std::memset(block, 0xff, bytes);
  spgen_emu::Allocations& a = spgen_emu::allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  a.blocks[static_cast<const char*>(block)] = bytes;
  *pointer = block;
  return cudaSuccess;
}
template <class T>
inline cudaError_t cudaMalloc(T** pointer, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}

inline cudaError_t cudaFree(void* pointer) {
  if (!pointer) return cudaSuccess;
  spgen_emu::Allocations& a = spgen_emu::allocations();
  std::lock_guard<std::mutex> lock(a.mutex);
  auto it = a.blocks.find(static_cast<const char*>(pointer));
  if (it == a.blocks.end()) return spgen_emu::record(cudaErrorInvalidDevicePointer);
  a.blocks.erase(it);
  std::free(pointer);
  return cudaSuccess;
}

// Stream-ordered allocation: launches run synchronously, so it is the plain one.
inline cudaError_t cudaMallocAsync(void** pointer, size_t bytes, cudaStream_t) { return cudaMalloc(pointer, bytes); }
template <class T>
inline cudaError_t cudaMallocAsync(T** pointer, size_t bytes, cudaStream_t stream) {
  return cudaMallocAsync(reinterpret_cast<void**>(pointer), bytes, stream);
}
inline cudaError_t cudaFreeAsync(void* pointer, cudaStream_t) { return cudaFree(pointer); }

// Emulated device memory is host memory: report 1 GiB, all free, so that kernels sizing their
// workspaces by the free memory stay modest here.
namespace spgen_emu {
inline constexpr size_t kDeviceBytes = size_t{1} << 30;
}  // namespace spgen_emu
inline cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return spgen_emu::record(cudaErrorInvalidValue);
  *free_bytes = *total_bytes = spgen_emu::kDeviceBytes;
  return cudaSuccess;
}

inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind > cudaMemcpyDefault) return spgen_emu::record(cudaErrorInvalidMemcpyDirection);
  if (kind != cudaMemcpyDefault && kind != cudaMemcpyHostToHost &&
      ((dst_device && !spgen_emu::is_device_range(dst, bytes)) || (src_device && !spgen_emu::is_device_range(src, bytes))))
    return spgen_emu::record(cudaErrorInvalidValue);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t = nullptr) {
  return cudaMemcpy(dst, src, bytes, kind);
}
inline cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!spgen_emu::is_device_range(dst, bytes)) return spgen_emu::record(cudaErrorInvalidValue);
  std::memset(dst, value, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t = nullptr) {
  return cudaMemset(dst, value, bytes);
}

// ---- device, streams, events --------------------------------------------------------------------

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
};

// Launches run synchronously, so there is nothing to wait for.
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  if (!stream) return spgen_emu::record(cudaErrorInvalidValue);
  *stream = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return spgen_emu::record(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* device) {
  if (!device) return spgen_emu::record(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : spgen_emu::record(cudaErrorInvalidValue); }

inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  if (!value || device != 0) return spgen_emu::record(cudaErrorInvalidValue);
  switch (attribute) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; return cudaSuccess;
    case cudaDevAttrMaxBlockDimX: *value = 1024; return cudaSuccess;
    case cudaDevAttrMaxBlockDimY: *value = 1024; return cudaSuccess;
    case cudaDevAttrMaxBlockDimZ: *value = 64; return cudaSuccess;
    case cudaDevAttrMaxGridDimX: *value = 2147483647; return cudaSuccess;
    case cudaDevAttrMaxGridDimY: *value = 65535; return cudaSuccess;
    case cudaDevAttrMaxGridDimZ: *value = 65535; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 * 1024; return cudaSuccess;
    case cudaDevAttrWarpSize: *value = 32; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = 2; return cudaSuccess;  // a small GPU
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = 2048; return cudaSuccess;
  }
  return spgen_emu::record(cudaErrorInvalidValue);
}

struct CUevent_st {
  std::chrono::steady_clock::time_point time;
  bool recorded = false;
};
typedef CUevent_st* cudaEvent_t;

inline cudaError_t cudaEventCreate(cudaEvent_t* event) {
  if (!event) return spgen_emu::record(cudaErrorInvalidValue);
  *event = new CUevent_st;
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t = nullptr) {
  if (!event) return spgen_emu::record(cudaErrorInvalidResourceHandle);
  event->time = std::chrono::steady_clock::now();
  event->recorded = true;
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return event ? cudaSuccess : spgen_emu::record(cudaErrorInvalidResourceHandle);
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  if (!ms) return spgen_emu::record(cudaErrorInvalidValue);
  if (!start || !stop || !start->recorded || !stop->recorded) return spgen_emu::record(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(stop->time - start->time).count();
  return cudaSuccess;
}

// ---- blocks, barriers and warps -------------------------------------------------------------------

namespace spgen_emu {

// The block of a grid, and the thread of a block, at a linear index (x fastest).
inline uint3 block_index(uint64_t linear, dim3 grid) {
  return uint3{static_cast<unsigned>(linear % grid.x), static_cast<unsigned>(linear / grid.x % grid.y),
               static_cast<unsigned>(linear / (static_cast<uint64_t>(grid.x) * grid.y))};
}
inline uint3 thread_index(int thread, dim3 block) {
  const unsigned t = static_cast<unsigned>(thread);
  return uint3{t % block.x, t / block.x % block.y, t / (block.x * block.y)};
}

inline std::string block_name() {
  return "(" + std::to_string(blockIdx.x) + "," + std::to_string(blockIdx.y) + "," + std::to_string(blockIdx.z) + ")";
}

// Seconds threads may wait at a barrier without any thread of their block arriving anywhere,
// before the program is aborted as hung (SPGEN_CUDA_EMU_TIMEOUT; deadlocks among the block's
// own threads are found at once, this only catches a thread that never comes back).
inline double barrier_timeout_s() {
  static const double seconds = [] {
    const char* text = std::getenv("SPGEN_CUDA_EMU_TIMEOUT");
    double s = text && *text ? std::atof(text) : 0;
    return s > 0 ? s : 10.0;
  }();
  return seconds;
}

// One barrier: the threads it needs, those that arrived, and what they called.
struct Barrier {
  int expected = 0;
  int arrived = 0;
  std::atomic<uint32_t> generation{0};  // completed rounds (waiters wait on it, unlocked)
  const char* what = nullptr;           // the primitive the first arrival called
  unsigned mask = 0;                    // warp barriers: the lanes taking part
  std::vector<int> waiters;             // fibers: the threads waiting for this round
};

// The state of the block that is running. Every barrier of the block uses one mutex, so that a
// thread about to wait can see whether every other live thread already waits too: a deadlock
// (a barrier in divergent code, or a thread that left the kernel while others wait for it),
// reported at once.
struct Block {
  std::mutex mutex;
  int threads = 0;        // blockDim.x * y * z
  int live = 0;           // threads still inside the kernel for this block
  int waiting = 0;        // live threads waiting at a barrier that has not completed
  std::atomic<uint64_t> progress{0};  // counts arrivals, for the watchdog
  Barrier block_barrier;
  std::unique_ptr<Barrier[]> warps;
  size_t warp_count = 0;
  // Warp exchange slots, two rounds deep: [round parity][warp * 32 + lane]. A lane writes round
  // r + 2 only after round r + 1 completed, which needs every lane done reading round r.
  std::vector<unsigned char> slots[2];
  // __syncthreads_count's sums, two rounds deep the same way.
  int predicate_count[2] = {0, 0};
  std::vector<unsigned char> dynamic_shared;
  int finished = 0;  // threads done with the current block
  uint64_t block_generation = 0;
  std::condition_variable next_block;
  std::atomic<int> running{-1};  // fibers: the thread that runs now, for the watchdog
};

inline thread_local Block* current_block = nullptr;
inline thread_local int current_thread = 0;  // linear thread id in the block

inline int lane_id() { return current_thread % 32; }
inline int warp_id() { return current_thread / 32; }
// The lanes that exist in a warp (the last warp of a block may be partial).
inline unsigned warp_lanes(const Block& b, int warp) {
  int lanes = b.threads - warp * 32;
  return lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1u;
}

inline constexpr size_t kSlotBytes = 16;

inline std::string where(bool is_warp, int warp) {
  return is_warp ? "warp " + std::to_string(warp) + " of block " + block_name() : "block " + block_name();
}

[[noreturn]] inline void report_unreached(const Barrier& barrier, bool is_warp, int warp, const std::string& detail) {
  fail(std::string(barrier.what) + " not reached by every " + (is_warp ? "lane of " : "thread of ") +
       where(is_warp, warp) + " (" + std::to_string(barrier.arrived) + " of " + std::to_string(barrier.expected) +
       " arrived" + detail + ")");
}

// A deadlock: every live thread waits, so none of their barriers can complete.
inline void check_deadlock(Block& b) {
  if (b.live == 0 || b.waiting < b.live) return;
  if (b.block_barrier.arrived > 0) report_unreached(b.block_barrier, false, 0, "");
  for (size_t w = 0; w < b.warp_count; ++w)
    if (b.warps[w].arrived > 0) report_unreached(b.warps[w], true, static_cast<int>(w), "");
  fail("every thread of block " + block_name() + " waits, at no barrier");
}

// Sleeps until `word` no longer holds `value`. On Linux straight into the kernel's futex:
// std::atomic::wait first spins and yields, and with a block's 1024 threads on a few cores the
// waiting threads mostly yield to each other while those they wait for cannot run (an assembled
// output's prefix sum ran twice as long). Ordering comes from the atomic itself (acquire here,
// release at the store that completes the round), as ThreadSanitizer sees it.
inline void wait_while_equal(std::atomic<uint32_t>& word, uint32_t value) {
#ifdef __linux__
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex is a 32-bit word");
  while (word.load(std::memory_order_acquire) == value)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, value, nullptr, nullptr, 0);
#else
  while (word.load(std::memory_order_acquire) == value) word.wait(value, std::memory_order_acquire);
#endif
}

// Wakes up to `count` of the threads sleeping in wait_while_equal(word, ...).
inline void wake(std::atomic<uint32_t>& word, int count) {
#ifdef __linux__
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
#else
  (void)count;
  word.notify_all();
#endif
}

// Wakes every thread sleeping in wait_while_equal(word, ...).
inline void wake_all(std::atomic<uint32_t>& word) { wake(word, INT_MAX); }

#if SPGEN_EMU_FIBERS
// Saves the callee-saved registers and the floating-point control words on the running stack,
// stores the stack pointer in *save, and continues on the stack `load`, saved the same way (or
// laid out so by Fibers::start). Hand-written because swapcontext makes a system call at
// every switch (the signal mask), and a switch is all a barrier costs here.
// (noipa: GCC must not assume what it clobbers; clang assumes nothing of a naked function.)
#if defined(__clang__)
__attribute__((naked, noinline)) inline void switch_stack(void** /*save*/, void* /*load*/) {
#else
__attribute__((naked, noinline, noipa)) inline void switch_stack(void** /*save*/, void* /*load*/) {
#endif
  asm volatile(
      "pushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n\t"
      "subq $8, %rsp\n\tstmxcsr (%rsp)\n\tfnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\tmovq %rsi, %rsp\n\t"
      "ldmxcsr (%rsp)\n\tfldcw 4(%rsp)\n\taddq $8, %rsp\n\t"
      "popq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n\tret");
}

// The threads of the running block as fibers on the launching thread, each on a stack of its
// own (kept for the next launch). `run` starts them in thread order; a thread that waits at a
// barrier calls `suspend`, and the thread that completes the barrier makes the waiters ready
// again (`make_ready`); ready threads run in the order they became ready.
class Fibers {
 public:
  static Fibers& instance() {
    static Fibers fibers;
    return fibers;
  }

  // Runs body(t) for every t in [0, count), each on a fiber of its own, until all have
  // returned; `on_switch(t)` runs on the launching thread before each switch to thread t.
  template <class Body, class OnSwitch>
  void run(int count, const Body& body, const OnSwitch& on_switch) {
    while (static_cast<int>(stacks_.size()) < count) stacks_.push_back(new_stack());
    saved_.resize(static_cast<size_t>(count));
    ready_.assign(static_cast<size_t>(count), 0);
    body_ = [](const void* b, int thread) { (*static_cast<const Body*>(b))(thread); };
    body_object_ = &body;
    for (int t = 0; t < count; ++t) {
      saved_[static_cast<size_t>(t)] = start_frame(stacks_[static_cast<size_t>(t)]);
      ready_[static_cast<size_t>(t)] = t;
    }
    head_ = 0;
    queued_ = count;
    while (queued_ > 0) {
      running_ = ready_[head_];
      head_ = (head_ + 1) % ready_.size();
      --queued_;
      on_switch(running_);
      switch_stack(&scheduler_, saved_[static_cast<size_t>(running_)]);
    }
    running_ = -1;
  }

  // The running thread waits until another one makes it ready.
  void suspend() { switch_stack(&saved_[static_cast<size_t>(running_)], scheduler_); }
  void make_ready(int thread) {
    ready_[(head_ + queued_) % ready_.size()] = thread;
    ++queued_;
  }
  int running() const { return running_; }

 private:
  static constexpr size_t kStackBytes = size_t{512} << 10;  // mapped lazily: pages touched only
  static constexpr size_t kGuardBytes = size_t{4} << 10;     // below it, an overflow faults

  Fibers() = default;

  static char* new_stack() {
    void* memory = mmap(nullptr, kStackBytes + kGuardBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (memory == MAP_FAILED) fail("cannot map a stack for a thread of the block");
    mprotect(memory, kGuardBytes, PROT_NONE);
    return static_cast<char*>(memory) + kGuardBytes + kStackBytes;  // stacks grow down
  }

  // A stack that switch_stack enters at `entry`, as if entry had been called (the stack pointer
  // 8 bytes off 16 at its first instruction, a zero return address it never uses).
  static void* start_frame(char* top) {
    uint64_t* sp = reinterpret_cast<uint64_t*>(top);
    *--sp = 0;                                          // entry's return address
    *--sp = reinterpret_cast<uint64_t>(&entry);         // where switch_stack's ret goes
    for (int r = 0; r < 6; ++r) *--sp = 0;              // rbp, rbx, r12 to r15
    *--sp = uint64_t{0x037f} << 32 | uint64_t{0x1f80};  // x87 control word, MXCSR: the defaults
    return sp;
  }

  [[noreturn]] static void entry() {
    Fibers& f = instance();
    f.body_(f.body_object_, f.running_);
    void* unused = nullptr;
    switch_stack(&unused, f.scheduler_);  // never resumed: the next block starts a new frame
    __builtin_unreachable();
  }

  std::vector<char*> stacks_;  // the top of each thread's stack
  std::vector<void*> saved_;   // each thread's saved stack pointer
  void* scheduler_ = nullptr;  // the launching thread's, while a thread runs
  std::vector<int> ready_;     // a ring of the ready threads
  size_t head_ = 0;
  int queued_ = 0;
  int running_ = -1;
  void (*body_)(const void*, int) = nullptr;
  const void* body_object_ = nullptr;
};
#endif


// Arrives at `barrier`, which completes when `expected` threads have arrived, and waits for that
// (unlocked: the completing thread wakes the others through the generation's futex).
// `publish(round)` runs at arrival, under the lock; returns the round that completed.
template <class Publish>
inline uint32_t arrive_and_wait(Block& b, std::unique_lock<std::mutex>& lock, Barrier& barrier, const char* what,
                                bool is_warp, int warp, Publish publish) {
  if (barrier.arrived == 0) {
    barrier.what = what;
  } else if (std::strcmp(barrier.what, what) != 0) {
    fail(std::string(what) + " and " + barrier.what + " met in " + where(is_warp, warp) + ": " +
         (is_warp ? "the lanes of a warp" : "the threads of a block") + " must call the same barrier");
  }
  const uint32_t round = barrier.generation.load(std::memory_order_relaxed);
  publish(round);
  b.progress.fetch_add(1, std::memory_order_relaxed);
  if (++barrier.arrived == barrier.expected) {
    barrier.arrived = 0;
    barrier.what = nullptr;
    b.waiting -= barrier.expected - 1;
    barrier.generation.store(round + 1, std::memory_order_release);
#if SPGEN_EMU_FIBERS
    for (int waiter : barrier.waiters) Fibers::instance().make_ready(waiter);
    barrier.waiters.clear();
#else
    wake_all(barrier.generation);
#endif
    return round;
  }
  ++b.waiting;
  check_deadlock(b);
#if SPGEN_EMU_FIBERS
  barrier.waiters.push_back(Fibers::instance().running());
  lock.unlock();
  Fibers::instance().suspend();
#else
  lock.unlock();
  wait_while_equal(barrier.generation, round);
#endif
  return round;
}

inline void block_barrier(const char* what) {
  Block& b = *current_block;
  std::unique_lock<std::mutex> lock(b.mutex);
  arrive_and_wait(b, lock, b.block_barrier, what, false, 0, [](uint32_t) {});
}

// A block barrier that also counts the threads whose predicate is non-zero.
inline int block_barrier_count(const char* what, int predicate) {
  Block& b = *current_block;
  std::unique_lock<std::mutex> lock(b.mutex);
  uint32_t round = arrive_and_wait(b, lock, b.block_barrier, what, false, 0, [&](uint32_t r) {
    if (b.block_barrier.arrived == 0) b.predicate_count[r & 1] = 0;  // the round's first arrival
    b.predicate_count[r & 1] += predicate ? 1 : 0;
  });
  if (lock.owns_lock()) return b.predicate_count[round & 1];  // this thread completed the round
  lock.lock();
  return b.predicate_count[round & 1];
}

// A warp exchange: every lane of `mask` stores `value` (up to 16 bytes); once all have, `read`
// gets this warp's slots of that round and the lanes taking part.
template <class T, class Read>
inline auto warp_exchange(const char* what, unsigned mask, T value, Read read) {
  static_assert(sizeof(T) <= kSlotBytes && std::is_trivially_copyable<T>::value, "exchanged type too large");
  Block& b = *current_block;
  const int warp = warp_id(), lane = lane_id();
  std::unique_lock<std::mutex> lock(b.mutex);
  const unsigned lanes = warp_lanes(b, warp);
  if (!(mask >> lane & 1u))
    fail(std::string(what) + " called by lane " + std::to_string(lane) + " of " + where(true, warp) +
         ", which is not in its mask");
  Barrier& barrier = b.warps[static_cast<size_t>(warp)];
  if (barrier.arrived == 0) {
    barrier.mask = mask;
    barrier.expected = __builtin_popcount(mask & lanes);
  } else if (barrier.mask != mask) {
    fail(std::string(what) + " called with different masks in " + where(true, warp));
  }
  const size_t base = static_cast<size_t>(warp) * 32 * kSlotBytes;
  uint32_t round = arrive_and_wait(b, lock, barrier, what, true, warp, [&](uint32_t r) {
    std::memcpy(&b.slots[r & 1][base + static_cast<size_t>(lane) * kSlotBytes], &value, sizeof(T));
  });
  return read(&b.slots[round & 1][base], mask & lanes);
}

// A shuffle: each lane gets the value of the lane `source(lane)` names, its own where that is -1
// (a source outside the lane's `width` segment).
template <class T, class Source>
inline T shuffle(const char* what, unsigned mask, T value, Source source) {
  const int lane = lane_id();
  return warp_exchange(what, mask, value, [&](const unsigned char* slots, unsigned lanes) {
    int from = source(lane);
    if (from < 0 || from == lane) return value;
    if (from > 31 || !(lanes >> from & 1u))
      fail(std::string(what) + " in " + where(true, warp_id()) + ": lane " + std::to_string(lane) + " reads lane " +
           std::to_string(from) + ", which is not in the mask or not in the block");
    T result;
    std::memcpy(&result, slots + static_cast<size_t>(from) * kSlotBytes, sizeof(T));
    return result;
  });
}

}  // namespace spgen_emu

inline void __syncthreads() { spgen_emu::block_barrier("__syncthreads"); }
inline int __syncthreads_count(int predicate) { return spgen_emu::block_barrier_count("__syncthreads_count", predicate); }
inline int __syncthreads_and(int predicate) {
  return spgen_emu::block_barrier_count("__syncthreads_and", predicate) == spgen_emu::current_block->threads;
}
inline int __syncthreads_or(int predicate) { return spgen_emu::block_barrier_count("__syncthreads_or", predicate) > 0; }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  spgen_emu::warp_exchange("__syncwarp", mask, 0, [](const unsigned char*, unsigned) { return 0; });
}

template <class T>
inline T __shfl_sync(unsigned mask, T value, int source_lane, int width = 32) {
  return spgen_emu::shuffle("__shfl_sync", mask, value, [&](int lane) {
    return lane / width * width + ((source_lane % width) + width) % width;
  });
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  return spgen_emu::shuffle("__shfl_down_sync", mask, value, [&](int lane) {
    int from = lane + static_cast<int>(delta);
    return from / width == lane / width ? from : -1;
  });
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  return spgen_emu::shuffle("__shfl_up_sync", mask, value, [&](int lane) {
    int from = lane - static_cast<int>(delta);
    return from >= lane / width * width ? from : -1;
  });
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  return spgen_emu::shuffle("__shfl_xor_sync", mask, value, [&](int lane) {
    int from = lane ^ lane_mask;
    return from / width == lane / width ? from : -1;
  });
}

// A bit for each lane of `mask` whose predicate is non-zero.
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return spgen_emu::warp_exchange("__ballot_sync", mask, predicate ? 1 : 0, [](const unsigned char* slots, unsigned lanes) {
    unsigned bits = 0;
    for (int lane = 0; lane < 32; ++lane) {
      int value = 0;
      std::memcpy(&value, slots + static_cast<size_t>(lane) * spgen_emu::kSlotBytes, sizeof(int));
      if ((lanes >> lane & 1u) && value) bits |= 1u << lane;
    }
    return bits;
  });
}

inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) == (mask & spgen_emu::warp_lanes(*spgen_emu::current_block, spgen_emu::warp_id()));
}

// The emulator's lanes meet only at barriers, so the active lanes are the whole (existing part
// of the) warp.
inline unsigned __activemask() { return spgen_emu::warp_lanes(*spgen_emu::current_block, spgen_emu::warp_id()); }

// ---- atomics and loads ---------------------------------------------------------------------------

template <class T>
inline T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}
template <class T>
inline T atomicSub(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_sub(value);
}
template <class T>
inline T atomicExch(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value);
}
template <class T>
inline T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;
}
template <class T>
inline T atomicMax(T* address, T value) {
  static_assert(std::is_integral<T>::value, "atomicMax is for integers");
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (old < value && !ref.compare_exchange_weak(old, value)) {
  }
  return old;
}
template <class T>
inline T atomicMin(T* address, T value) {
  static_assert(std::is_integral<T>::value, "atomicMin is for integers");
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (value < old && !ref.compare_exchange_weak(old, value)) {
  }
  return old;
}

template <class T>
inline T __ldg(const T* address) {
  return *address;
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz(static_cast<unsigned>(x)) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline float __fmaf_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return __builtin_fma(a, b, c); }
inline float rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }

// ---- launches -----------------------------------------------------------------------------------

namespace spgen_emu {

// What nvcc-emu knows of a kernel from its source: its static shared bytes and launch bounds.
struct KernelInfo {
  const char* name;
  size_t static_shared_bytes;
  unsigned max_threads;  // __launch_bounds__, 0 when absent
};

inline unsigned max_blocks_per_dimension() {
  static const unsigned cap = [] {
    const char* text = std::getenv("SPGEN_CUDA_EMU_MAX_BLOCKS");
    long value = text && *text ? std::atol(text) : 16;
    return static_cast<unsigned>(value > 0 ? value : 16);
  }();
  return cap;
}

inline dim3 to_dim3(dim3 d) { return d; }
template <class Integer, class = std::enable_if_t<std::is_integral<Integer>::value>>
inline dim3 to_dim3(Integer n) {
  return dim3(static_cast<unsigned>(n));
}

// The checks the GPU makes before it runs a launch; cudaSuccess when the launch may run.
inline cudaError_t validate(const KernelInfo& info, dim3 grid, dim3 block, size_t dynamic_shared) {
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
    return cudaErrorInvalidConfiguration;
  if (grid.x > 2147483647u || grid.y > 65535u || grid.z > 65535u) return cudaErrorInvalidConfiguration;
  if (block.x > 1024u || block.y > 1024u || block.z > 64u) return cudaErrorInvalidConfiguration;
  uint64_t threads = static_cast<uint64_t>(block.x) * block.y * block.z;
  if (threads > 1024u) return cudaErrorInvalidConfiguration;
  if (info.static_shared_bytes + dynamic_shared > 48u * 1024u) return cudaErrorInvalidValue;
  if (info.max_threads && threads > info.max_threads) return cudaErrorLaunchOutOfResources;
  return cudaSuccess;
}

// Aborts the program when threads of the running block wait at a barrier and no thread of the
// block has arrived anywhere for barrier_timeout_s() (a thread that never comes back). Deadlocks
// among the waiting threads themselves are found at once, by check_deadlock.
class Watchdog {
 public:
  Watchdog(Block& block, dim3 grid) : thread_([this, &block, grid] { watch(block, grid); }) {}
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void watch(Block& b, dim3 grid) {
    using Clock = std::chrono::steady_clock;
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t seen = b.progress.load();
    Clock::time_point since = Clock::now();
    while (!done_) {
      wake_.wait_for(lock, std::chrono::milliseconds(200));
      if (done_) return;
      uint64_t progress = b.progress.load();
      if (progress != seen) {
        seen = progress;
        since = Clock::now();
        continue;
      }
      if (std::chrono::duration<double>(Clock::now() - since).count() < barrier_timeout_s()) continue;
      std::lock_guard<std::mutex> block_lock(b.mutex);
#if SPGEN_EMU_FIBERS
      // One thread has run all this time without a switch: a hang unless it is the block's last.
      if (b.live <= 1) continue;
#else
      if (b.waiting == 0) continue;  // long work without barriers is no hang
#endif
      const uint64_t linear = b.block_generation;
      blockIdx = block_index(linear, grid);
      char detail[64];
      std::snprintf(detail, sizeof detail, ", no progress in %g s", barrier_timeout_s());
      if (b.block_barrier.arrived > 0) report_unreached(b.block_barrier, false, 0, detail);
      for (size_t w = 0; w < b.warp_count; ++w)
        if (b.warps[w].arrived > 0) report_unreached(b.warps[w], true, static_cast<int>(w), detail);
#if SPGEN_EMU_FIBERS
      // Nothing arrived yet: the running thread went first and the others have not started.
      const int thread = b.running.load(std::memory_order_relaxed);
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g s", barrier_timeout_s());
      fail("thread " + std::to_string(thread) + " of block " + block_name() + " ran for " + seconds +
           " without reaching a barrier or returning, while the block's " + std::to_string(b.live - 1) +
           " other threads wait for it (the emulator runs a block's threads one at a time)");
#endif
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

// The threads that run the threads of a launch's blocks, kept for the next launch: creating and
// joining a thread costs about 30 us of CPU (its stack's mapping and page faults), so 1024-thread
// launches paid ~30 ms each. Between launches the workers sleep on a futex; a launch wakes them,
// each claims a thread id of the launch (the ones left over go back to sleep), and the last one
// done wakes the launching thread. The pool grows to the largest launch and lives as long as the
// program (its workers are detached and asleep at exit).
class ThreadPool {
 public:
  static ThreadPool& instance() {
    static ThreadPool* pool = new ThreadPool;  // never destroyed: its workers may outlive main
    return *pool;
  }

  // Runs body(t) for every t in [0, count), each on a thread of its own, and returns when all
  // have returned.
  template <class Body>
  void run(int count, const Body& body) {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    const uint32_t generation = generation_.load(std::memory_order_relaxed);
    while (workers_ < count) {
      std::thread(&ThreadPool::work, this, generation).detach();
      ++workers_;
    }
    body_ = [](const void* b, int thread) { (*static_cast<const Body*>(b))(thread); };
    body_object_ = &body;
    finished_.store(0, std::memory_order_relaxed);
    // The launch's generation, its thread count and the next thread id to claim, in one word, so
    // that a claim sees all three of the same launch.
    claims_.store(static_cast<uint64_t>(generation + 1) << 32 | static_cast<uint64_t>(count) << 16,
                  std::memory_order_release);
    generation_.store(generation + 1, std::memory_order_release);
    // As many as the launch needs: sleeping workers are alike, and each one woken claims a thread
    // id (or finds them all taken by workers that had not gone to sleep yet).
    wake(generation_, count);
    wait_while_equal(done_, generation);
  }

 private:
  ThreadPool() = default;

  void work(uint32_t seen) {
    for (;;) {
      wait_while_equal(generation_, seen);
      uint64_t claims = claims_.load(std::memory_order_acquire);
      for (;;) {
        const uint32_t count = static_cast<uint32_t>(claims >> 16 & 0xffff), thread = static_cast<uint32_t>(claims & 0xffff);
        seen = static_cast<uint32_t>(claims >> 32);
        if (thread >= count) break;  // every thread id of this launch is taken
        if (!claims_.compare_exchange_weak(claims, claims + 1, std::memory_order_acq_rel, std::memory_order_acquire))
          continue;
        body_(body_object_, static_cast<int>(thread));
        if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == count) {
          done_.store(seen, std::memory_order_release);
          wake_all(done_);
        }
        break;
      }
    }
  }

  std::mutex launch_mutex_;                // one launch at a time
  int workers_ = 0;
  void (*body_)(const void*, int) = nullptr;
  const void* body_object_ = nullptr;
  std::atomic<uint32_t> generation_{0};   // launches started; workers sleep on it
  std::atomic<uint64_t> claims_{0};       // generation << 32 | thread count << 16 | next thread id
  std::atomic<uint32_t> finished_{0};     // threads of the current launch done
  std::atomic<uint32_t> done_{0};         // the last launch done; the launching thread sleeps on it
};

// A launch, whatever its kernel: runs thread_body(kernel_call) as every thread of every block.
// One function for every kernel (only the small thunk of Launch::run is the kernel's own):
// compiled once per unit instead of once per kernel, which was most of a generated .cu file's
// compile time (a unit of seven kernels: its -O0 compile took 2.0 s of CPU).
class Launcher {
 public:
  static void run(const KernelInfo& info, dim3 grid_asked, dim3 block, size_t dynamic_shared,
                  void (*thread_body)(const void*), const void* kernel_call) {
    cudaError_t error = validate(info, grid_asked, block, dynamic_shared);
    if (error != cudaSuccess) {
      record(error);
      return;
    }
    // Bound loops stride over the grid, so a capped grid gives the same result, faster.
    const unsigned cap = max_blocks_per_dimension();
    dim3 grid(grid_asked.x < cap ? grid_asked.x : cap, grid_asked.y < cap ? grid_asked.y : cap,
              grid_asked.z < cap ? grid_asked.z : cap);
    Block state;
    state.threads = static_cast<int>(block.x * block.y * block.z);
    const size_t warps = static_cast<size_t>(state.threads + 31) / 32;
    state.warps = std::make_unique<Barrier[]>(warps);
    state.warp_count = warps;
    state.slots[0].assign(warps * 32 * kSlotBytes, 0);
    state.slots[1].assign(warps * 32 * kSlotBytes, 0);
    state.dynamic_shared.assign(dynamic_shared + 16, 0);
    state.block_barrier.expected = state.threads;
    state.live = state.threads;
    const uint64_t blocks = static_cast<uint64_t>(grid.x) * grid.y * grid.z;
#if SPGEN_EMU_FIBERS
    current_block = &state;
    blockDim = block;
    gridDim = grid;
    auto body = [&](int) {
      thread_body(kernel_call);
      leave_block(state);
    };
    auto on_switch = [&](int thread) {
      current_thread = thread;
      threadIdx = thread_index(thread, block);
      state.running.store(thread, std::memory_order_relaxed);
      state.progress.fetch_add(1, std::memory_order_relaxed);
    };
    Watchdog watchdog(state, grid);
    for (uint64_t linear = 0; linear < blocks; ++linear) {
      blockIdx = block_index(linear, grid);
      {
        std::lock_guard<std::mutex> lock(state.mutex);
        state.block_generation = linear;
        state.live = state.threads;
        state.waiting = 0;
        start_block(state);
      }
      Fibers::instance().run(state.threads, body, on_switch);
    }
    current_block = nullptr;
#else
    auto body = [&](int thread) {
      current_block = &state;
      current_thread = thread;
      blockDim = block;
      gridDim = grid;
      threadIdx = thread_index(thread, block);
      for (uint64_t linear = 0; linear < blocks; ++linear) {
        blockIdx = block_index(linear, grid);
        thread_body(kernel_call);
        finish_block(state);
      }
    };
    start_block(state);
    Watchdog watchdog(state, grid);
    ThreadPool::instance().run(state.threads, body);
#endif
  }

 private:
  static void start_block(Block& b) {
    // Shared memory starts as garbage on the GPU: NaN bytes make a read before a write visible.
    std::memset(b.dynamic_shared.data(), 0xff, b.dynamic_shared.size());
  }

  // A fiber's end of its block: leaving while others wait at a barrier that needs it is a deadlock.
  static void leave_block(Block& b) {
    std::lock_guard<std::mutex> lock(b.mutex);
    --b.live;
    b.progress.fetch_add(1, std::memory_order_relaxed);
    check_deadlock(b);
  }

  // The end of a thread's block: a thread leaving the kernel while others wait at a barrier that
  // needs it is a deadlock; the last one out starts the next block.
  static void finish_block(Block& b) {
    std::unique_lock<std::mutex> lock(b.mutex);
    --b.live;
    b.progress.fetch_add(1, std::memory_order_relaxed);
    check_deadlock(b);
    uint64_t generation = b.block_generation;
    if (++b.finished == b.threads) {
      b.finished = 0;
      b.live = b.threads;
      b.waiting = 0;
      ++b.block_generation;
      start_block(b);
      b.next_block.notify_all();
      return;
    }
    b.next_block.wait(lock, [&] { return b.block_generation != generation; });
  }
};

template <class... Params>
class Launch {
 public:
  Launch(const KernelInfo& info, dim3 grid, dim3 block, size_t dynamic_shared = 0, cudaStream_t = nullptr)
      : info_(info), grid_(grid), block_(block), dynamic_shared_(dynamic_shared) {}

  template <class... Args>
  void run(void (*kernel)(Params...), Args&&... args) {
    struct Call {
      void (*kernel)(Params...);
      std::tuple<Params...> params;
    };
    const Call call{kernel, std::tuple<Params...>(std::forward<Args>(args)...)};
    Launcher::run(info_, grid_, block_, dynamic_shared_, [](const void* c) {
      const Call& call = *static_cast<const Call*>(c);
      std::tuple<Params...> mine = call.params;  // parameters are per-thread copies
      std::apply(call.kernel, mine);
    }, &call);
  }

 private:
  KernelInfo info_;
  dim3 grid_, block_;
  size_t dynamic_shared_;
};

// `kernel<<<grid, block, shared, stream>>>(args)` is `make_launch(kernel, info, grid, block,
// shared, stream).run(kernel, args)` (nvcc-emu writes it).
template <class... Params, class Grid, class BlockShape>
Launch<Params...> make_launch(void (*)(Params...), const KernelInfo& info, Grid grid, BlockShape block,
                              size_t dynamic_shared = 0, cudaStream_t stream = nullptr) {
  return Launch<Params...>(info, to_dim3(grid), to_dim3(block), dynamic_shared, stream);
}

// `extern __shared__ T name[];` becomes a pointer to this (nvcc-emu rewrites it).
inline void* dynamic_shared() {
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(current_block->dynamic_shared.data()) + 15) & ~uintptr_t{15});
}

}  // namespace spgen_emu
