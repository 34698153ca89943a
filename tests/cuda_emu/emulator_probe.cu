// Kernels that probe the CUDA emulator (tests/cuda_emu/test_emulator.cpp builds this file with
// nvcc-emu and runs one probe per process: `emulator_probe NAME`). Each probe prints what it saw.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* device = nullptr;
  cudaMalloc(&device, host.size() * sizeof(T));
  cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return device;
}

template <class T>
std::vector<T> host_copy(const T* device, size_t n) {
  std::vector<T> host(n);
  cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost);
  return host;
}

// Warp primitives, two warps per block: lane l of warp w holds 100 * w + l + 1.
__global__ void warp_primitives(int* out) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int value = 100 * warp + lane + 1;
  int down = value;
  for (int offset = 16; offset > 0; offset /= 2) down += __shfl_down_sync(0xffffffffu, down, offset);
  int butterfly = value;
  for (int offset = 16; offset > 0; offset /= 2) butterfly += __shfl_xor_sync(0xffffffffu, butterfly, offset);
  int scan = value;  // inclusive prefix sum
  for (int offset = 1; offset < 32; offset *= 2) {
    int other = __shfl_up_sync(0xffffffffu, scan, offset);
    if (lane >= offset) scan += other;
  }
  int broadcast = __shfl_sync(0xffffffffu, value, 5);
  int half_sum = value;  // sums over each 16-lane half
  for (int offset = 8; offset > 0; offset /= 2) half_sum += __shfl_down_sync(0xffffffffu, half_sum, offset, 16);
  unsigned odd = __ballot_sync(0xffffffffu, lane % 2);
  __syncwarp();
  int* mine = out + 6 * threadIdx.x;
  mine[0] = down;
  mine[1] = butterfly;
  mine[2] = scan;
  mine[3] = broadcast;
  mine[4] = half_sum;
  mine[5] = (int)odd;
}

int probe_warp() {
  std::vector<int> zeros(64 * 6, 0);
  int* out = device_copy(zeros);
  warp_primitives<<<1, 64>>>(out);
  if (cudaGetLastError() != cudaSuccess) return 1;
  std::vector<int> got = host_copy(out, zeros.size());
  for (int t = 0; t < 64; ++t) {
    const int* v = &got[6 * t];
    std::printf("thread %d: down=%d xor=%d scan=%d broadcast=%d half=%d ballot=%x\n", t, v[0], v[1], v[2], v[3], v[4],
                (unsigned)v[5]);
  }
  return 0;
}

// Shared memory across warps: every thread writes its slot (warp 0 late), then reads a slot of
// another warp after __syncthreads; twice per block, in three blocks.
__global__ void shared_exchange(int* out) {
  __shared__ int tile[256];
  const int t = threadIdx.x;
  for (int round = 0; round < 2; ++round) {
    if (t < 32) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    tile[t] = 1000 * (int)blockIdx.x + 10 * t + round;
    __syncthreads();
    out[(blockIdx.x * 2 + round) * 256 + t] = tile[(t + 224) % 256];  // warps 1..7 read warp 0's slots
    __syncthreads();
  }
}

int probe_shared() {
  std::vector<int> zeros(3 * 2 * 256, -1);
  int* out = device_copy(zeros);
  shared_exchange<<<3, 256>>>(out);
  if (cudaGetLastError() != cudaSuccess) return 1;
  std::vector<int> got = host_copy(out, zeros.size());
  int wrong = 0;
  for (int b = 0; b < 3; ++b)
    for (int round = 0; round < 2; ++round)
      for (int t = 0; t < 256; ++t)
        if (got[(b * 2 + round) * 256 + t] != 1000 * b + 10 * ((t + 224) % 256) + round) ++wrong;
  std::printf("shared: %d wrong of %d\n", wrong, 3 * 2 * 256);
  return 0;
}

// The dynamic shared buffer, sized by the launch: a block's sum of its threads' values.
__global__ void dynamic_sum(double* out) {
  extern __shared__ double partial[];
  partial[threadIdx.x] = threadIdx.x + 1.0;
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) sum += partial[i];
    out[blockIdx.x] = sum;
  }
}

int probe_dynamic_shared() {
  double* out = device_copy(std::vector<double>(2, 0.0));
  dynamic_sum<<<2, 100, 100 * sizeof(double)>>>(out);
  if (cudaGetLastError() != cudaSuccess) return 1;
  std::vector<double> got = host_copy(out, 2);
  std::printf("dynamic: %g %g\n", got[0], got[1]);
  return 0;
}

// Block and warp votes: __syncthreads_count/and/or, __any_sync, __all_sync, over 100 threads
// (the last warp has 4 lanes).
__global__ void votes(int* out) {
  const int t = (int)threadIdx.x;
  int* mine = out + 7 * t;
  mine[0] = __syncthreads_count(t % 3 == 0);
  mine[1] = __syncthreads_and(t % 3 == 0);
  mine[2] = __syncthreads_and(t < 100);
  mine[3] = __syncthreads_or(t == 99);
  mine[4] = __syncthreads_or(t > 99);
  mine[5] = __any_sync(__activemask(), t == 40);
  mine[6] = __all_sync(__activemask(), t % 32 != 7);
}

int probe_votes() {
  int* out = device_copy(std::vector<int>(7 * 100, -1));
  votes<<<1, 100>>>(out);
  if (cudaGetLastError() != cudaSuccess) return 1;
  std::vector<int> got = host_copy(out, 7 * 100);
  for (int t = 0; t < 100; t += 33) {
    const int* v = &got[7 * t];
    std::printf("thread %d: count=%d and=%d and=%d or=%d or=%d any=%d all=%d\n", t, v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
  }
  return 0;
}

__global__ void divergent_syncthreads(int* out) {
  if (threadIdx.x < 16) __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void divergent_shuffle(int* out) {
  int value = 1;
  if (threadIdx.x % 32 < 16) value = __shfl_down_sync(0xffffffffu, value, 1);
  out[threadIdx.x] = value;
}

// Thread 0 never reaches the barrier the others wait at: only the watchdog can end this.
__global__ void stuck_thread(volatile int* flag) {
  if (threadIdx.x == 0)
    while (*flag == 0) {
    }
  __syncthreads();
}

int probe_divergent(const char* which) {
  int* out = device_copy(std::vector<int>(64, 0));
  if (std::strcmp(which, "syncthreads") == 0) divergent_syncthreads<<<dim3(2, 1, 1), 64>>>(out);
  if (std::strcmp(which, "shuffle") == 0) divergent_shuffle<<<1, 64>>>(out);
  if (std::strcmp(which, "stuck") == 0) stuck_thread<<<1, 32>>>(out);
  std::printf("finished\n");
  return 0;
}

__global__ void mark(int* flag) {
  if (threadIdx.x == 0) *flag = 1;
}
__global__ void __launch_bounds__(64) small_kernel(int* flag) {
  if (threadIdx.x == 0) *flag = 1;
}
__global__ void big_static_shared(int* flag) {
  static __shared__ float tile[32 * 256];                // 32 KiB
  __shared__ __align__(16) float more[8][256 /* 8 KiB */];  // and 8 more
  tile[threadIdx.x] = 1.0f;
  more[1][threadIdx.x] = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) *flag = (int)(tile[31] * more[1][31]);
}

// Each bad launch must not run and must leave its error for cudaGetLastError, which clears it.
int probe_launch_errors() {
  int* flag = device_copy(std::vector<int>(1, 0));
  auto report = [&](const char* what) {
    cudaError_t error = cudaGetLastError();
    int ran = host_copy(flag, 1)[0];
    std::printf("%s: %s ran=%d\n", what, cudaGetErrorName(error), ran);
    cudaMemset(flag, 0, sizeof(int));
  };
  mark<<<1, 32>>>(flag);
  report("good");
  mark<<<0, 32>>>(flag);
  report("grid.x=0");
  mark<<<dim3(1, 65536), 32>>>(flag);
  report("grid.y=65536");
  mark<<<dim3(1, 1, 65536), 32>>>(flag);
  report("grid.z=65536");
  mark<<<1, 1025>>>(flag);
  report("block=1025");
  mark<<<1, dim3(1, 1, 65)>>>(flag);
  report("block.z=65");
  mark<<<1, dim3(64, 32)>>>(flag);
  report("block=64x32");
  mark<<<1, 32, 48 * 1024 + 1>>>(flag);
  report("dynamic shared 48K+1");
  big_static_shared<<<1, 32, 8 * 1024 + 1>>>(flag);
  report("static 40K + dynamic 8K+1");
  big_static_shared<<<1, 32, 8 * 1024>>>(flag);
  report("static 40K + dynamic 8K");
  small_kernel<<<1, 128>>>(flag);
  report("launch bounds 64, 128 threads");
  small_kernel<<<1, 64>>>(flag);
  report("launch bounds 64, 64 threads");
  int host = 0;
  std::printf("memcpy past the end: %s\n", cudaGetErrorName(cudaMemcpy(&host, flag + 1, sizeof(int), cudaMemcpyDeviceToHost)));
  std::printf("memcpy from host as device: %s\n", cudaGetErrorName(cudaMemcpy(flag, &host, sizeof(int), cudaMemcpyDeviceToDevice)));
  report("after the memcpy errors");
  return 0;
}

// A grid-stride loop: the sum must not depend on how many blocks run.
__global__ void grid_stride(int64_t n, const float* x, float* y, unsigned* widest_grid) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = 2.0f * x[i] + 1.0f;
  atomicMax(widest_grid, gridDim.x);
}

int probe_grid_cap() {
  const int64_t n = 100000;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = (float)(i % 1000);
  float* dx = device_copy(x);
  float* dy = device_copy(std::vector<float>(n, 0.0f));
  unsigned* widest = device_copy(std::vector<unsigned>(1, 0));
  grid_stride<<<(n + 127) / 128, 128>>>(n, dx, dy, widest);
  if (cudaGetLastError() != cudaSuccess) return 1;
  std::vector<float> y = host_copy(dy, n);
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += y[i] != 2.0f * x[i] + 1.0f;
  std::printf("grid: asked %lld blocks, ran %u, %lld wrong\n", (long long)((n + 127) / 128), host_copy(widest, 1)[0],
              (long long)wrong);
  return 0;
}

// Atomics from every thread of 4 blocks of 256.
__global__ void atomics(float* f, double* d, int* i, unsigned long long* u, int* biggest, int* smallest, int* cas_count,
                        int* exchanged, long long* exchanged_out) {
  const int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(f, 1.0f);
  atomicAdd(d, 0.5);
  atomicAdd(i, 2);
  atomicAdd(u, 3ull);
  atomicMax(biggest, (t * 37) % 1021);
  atomicMin(smallest, 5000 - t);
  // An increment made of atomicCAS: retried until no other thread came between.
  int old = 0, assumed;  // a guess: the first atomicCAS returns the real value
  do {
    assumed = old;
    old = atomicCAS(cas_count, assumed, assumed + 1);
  } while (old != assumed);
  // Each exchange hands on one value: those handed out plus the last one are all of them.
  atomicAdd(exchanged_out, (long long)atomicExch(exchanged, t));
}

int probe_atomics() {
  float* f = device_copy(std::vector<float>(1, 0.0f));
  double* d = device_copy(std::vector<double>(1, 0.0));
  int* i = device_copy(std::vector<int>(1, 0));
  unsigned long long* u = device_copy(std::vector<unsigned long long>(1, 0));
  int* biggest = device_copy(std::vector<int>(1, -1));
  int* smallest = device_copy(std::vector<int>(1, 1 << 30));
  int* cas_count = device_copy(std::vector<int>(1, 0));
  int* exchanged = device_copy(std::vector<int>(1, 7));
  long long* exchanged_out = device_copy(std::vector<long long>(1, 0));
  atomics<<<4, 256>>>(f, d, i, u, biggest, smallest, cas_count, exchanged, exchanged_out);
  if (cudaGetLastError() != cudaSuccess) return 1;
  std::printf("atomics: f=%g d=%g i=%d u=%llu max=%d min=%d cas=%d exch=%lld\n", host_copy(f, 1)[0],
              host_copy(d, 1)[0], host_copy(i, 1)[0], host_copy(u, 1)[0], host_copy(biggest, 1)[0],
              host_copy(smallest, 1)[0], host_copy(cas_count, 1)[0],
              host_copy(exchanged_out, 1)[0] + host_copy(exchanged, 1)[0]);
  return 0;
}

// Every thread adds into one of 8 counters, with atomicAdd or (a race) without.
__global__ void counters(int* count, bool atomic) {
  if (atomic)
    atomicAdd(&count[threadIdx.x % 8], 1);
  else
    count[threadIdx.x % 8] += 1;
}

int probe_race(bool atomic) {
  int* count = device_copy(std::vector<int>(8, 0));
  counters<<<2, 64>>>(count, atomic);
  std::vector<int> got = host_copy(count, 8);
  int total = 0;
  for (int c : got) total += c;
  std::printf("counted %d\n", total);
  return 0;
}

// A float4 load through a pointer that is not 16-byte aligned (a GPU fault).
__global__ void load_float4(const float* x, int offset, float* out) {
  const float4 v = reinterpret_cast<const float4*>(x + offset)[0];
  *out = v.x + v.y + v.z + v.w;
}

int probe_misaligned(bool aligned) {
  float* x = device_copy(std::vector<float>(8, 1.0f));
  float* out = device_copy(std::vector<float>(1, 0.0f));
  load_float4<<<1, 1>>>(x, aligned ? 4 : 1, out);
  std::printf("float4 sum %g\n", host_copy(out, 1)[0]);
  return 0;
}

// A double2 store to an address that is 8 but not 16-byte aligned (also a GPU fault).
__global__ void store_double2(double* y, int offset) {
  *reinterpret_cast<double2*>(y + offset) = make_double2(1.0, 2.0);
}

int probe_misaligned_store(bool aligned) {
  double* y = device_copy(std::vector<double>(4, 0.0));
  store_double2<<<1, 1>>>(y, aligned ? 2 : 1);
  std::vector<double> got = host_copy(y, 4);
  std::printf("double2 stored %g %g %g %g\n", got[0], got[1], got[2], got[3]);
  return 0;
}

// Each thread of each block marks its thread id once, after a barrier: launches of different
// sizes in a row (the emulator reuses its threads across launches) each run every thread of
// every block once, and no thread twice.
__global__ void mark_thread(int* marks) {
  __syncthreads();
  atomicAdd(&marks[threadIdx.x], 1);
}

int probe_relaunch() {
  for (int threads : {64, 1024, 32, 256, 1024}) {
    int* marks = device_copy(std::vector<int>(1024, 0));
    mark_thread<<<3, threads>>>(marks);
    std::vector<int> got = host_copy(marks, 1024);
    int wrong = 0;
    for (int t = 0; t < 1024; ++t) wrong += got[t] != (t < threads ? 3 : 0);
    std::printf("%d threads: %d wrong\n", threads, wrong);
    cudaFree(marks);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* probe = argv[1];
  if (!std::strcmp(probe, "warp")) return probe_warp();
  if (!std::strcmp(probe, "shared")) return probe_shared();
  if (!std::strcmp(probe, "dynamic-shared")) return probe_dynamic_shared();
  if (!std::strcmp(probe, "votes")) return probe_votes();
  if (!std::strcmp(probe, "divergent") && argc > 2) return probe_divergent(argv[2]);
  if (!std::strcmp(probe, "launch-errors")) return probe_launch_errors();
  if (!std::strcmp(probe, "grid-cap")) return probe_grid_cap();
  if (!std::strcmp(probe, "relaunch")) return probe_relaunch();
  if (!std::strcmp(probe, "atomics")) return probe_atomics();
  if (!std::strcmp(probe, "atomic-counters")) return probe_race(true);
  if (!std::strcmp(probe, "racy-counters")) return probe_race(false);
  if (!std::strcmp(probe, "aligned-float4")) return probe_misaligned(true);
  if (!std::strcmp(probe, "misaligned-float4")) return probe_misaligned(false);
  if (!std::strcmp(probe, "aligned-double2-store")) return probe_misaligned_store(true);
  if (!std::strcmp(probe, "misaligned-double2-store")) return probe_misaligned_store(false);
  return 2;
}
