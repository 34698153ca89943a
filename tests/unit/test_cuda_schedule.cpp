// The cuda target: `bind` legality (races, GPU indices, block sizes), the stage II annotations
// it leaves, and what the CUDA backend prints for them (launch geometry, shuffles, atomics).
#include <doctest/doctest.h>

#include "compile_helpers.h"
#include "lower.h"

using namespace spgen_test;

namespace {

// A cuda config: CSR (or `format`) A, a dense output y for the formats that would make it
// sparse, and these schedule ops.
std::string cuda(const std::string& ops, const std::string& format = "csr") {
  std::string output = format == "csr" ? "" : R"("y": {"format": "dense"}, )";
  return R"({"target": "cuda", "tensors": {)" + output + R"("A": {"format": ")" + format + R"("}}, "schedule": [)" + ops + "]}";
}

const char* kWarpPerRow = R"({"op": "split", "var": "i", "factor": 4, "into": ["i0", "i1"]},
                             {"op": "bind", "var": "i0", "to": "blockIdx.x"},
                             {"op": "bind", "var": "i1", "to": "threadIdx.y"})";

}  // namespace

TEST_CASE("cuda: binding a reduction loop without a strategy is a race, named by its op") {
  std::string e = error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "blockIdx.x"},
                                          {"op": "bind", "var": "j", "to": "threadIdx.x"})"));
  CHECK(contains(e, "c.json: /schedule/1: error: bind: threads would race on y: loop j iterates the reduction index j"));
  CHECK(contains(e, "\"reduction\": \"atomic\""));
  // Position loops under a reduction loop that every thread runs in full meet on the same rows.
  e = error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "threadIdx.x"})", "csc"));
  CHECK(contains(e, "/schedule/0: error: bind: threads would race on y: loop i iterates positions under loop j"));
  // Atomics resolve it: the scatter into y becomes atomicAdd.
  std::string source = compile(kSpmv, cuda(R"({"op": "bind", "var": "j", "to": "blockIdx.x", "reduction": "atomic"},
                                              {"op": "bind", "var": "i", "to": "threadIdx.x"})", "csc")).files[1].text;
  CHECK(contains(source, "atomicAdd(&y_vals[i], A_vals[pA1] * x_vals[j]);"));
}

TEST_CASE("cuda: reduction strategies must fit the loop") {
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "j", "to": "threadIdx.x", "reduction": "shuffle"})")),
                 "/schedule/0: error: bind: a shuffle combines the lanes of one warp: bind j to warp"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "warp", "reduction": "shuffle"})")),
                 "bind: loop i iterates the spatial index i: its iterations write different entries of y"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "j", "to": "warp", "reduction": "atomic"})")),
                 "bind: loop j sums into acc, declared outside it, so each thread would hold only part of the sum"));
  // SpMM's j adds into C directly: no scalar for a shuffle to combine.
  CHECK(contains(error_of(kSpmm, cuda(R"({"op": "bind", "var": "j", "to": "warp", "reduction": "shuffle"})")),
                 "bind: loop j adds into C directly, but a shuffle reduction combines sums kept in scalars"));
  // The sum must be combined right after the loop that its scalar's block holds.
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "split", "var": "j", "factor": 32},
                                         {"op": "bind", "var": "j1", "to": "warp", "reduction": "shuffle"})")),
                 "bind: loop j1 sums into acc, but acc is declared outside the loop around j1"));
}

TEST_CASE("cuda: GPU indices, block sizes and op targets are checked") {
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "blockIdx.z"})")),
                 "c.json: /schedule/0/to: error: unknown GPU index \"blockIdx.z\" (expected blockIdx.x, blockIdx.y, "
                 "threadIdx.x, threadIdx.y or warp)"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "warp", "reduction": "sum"})")),
                 "/schedule/0/reduction: error: unknown reduction strategy \"sum\" (expected shuffle, shared or atomic)"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "parallel", "var": "i"})")),
                 "/schedule/0: error: parallel: parallel is OpenMP's, for the cpu target: use bind on the cuda target"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "vectorize", "var": "j"})")),
                 "/schedule/0: error: vectorize: on the cuda target, vectorize makes float4 loads of a register tile: "
                 "loop j must iterate one made by precompute"));
  CHECK(contains(error_of(kSpmv, R"({"schedule": [{"op": "bind", "var": "i", "to": "blockIdx.x"}]})"),
                 "/schedule/0: error: bind: bind is for the cuda target"));
  std::string twice = cuda(std::string(kWarpPerRow) + R"(, {"op": "bind", "var": "j", "to": "threadIdx.y", "reduction": "atomic"})");
  CHECK(contains(error_of(kSpmm, twice), "/schedule/3: error: bind: loop i1 is already bound to threadIdx.y"));
  CHECK(contains(error_of(kSpmm, cuda(R"({"op": "bind", "var": "i", "to": "threadIdx.x"},
                                         {"op": "bind", "var": "k", "to": "warp"})")),
                 "/schedule/1: error: bind: warp lanes are threadIdx.x, and loop i is already bound to threadIdx.x"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "split", "var": "i", "factor": 2048},
                                         {"op": "bind", "var": "i1", "to": "threadIdx.x"})")),
                 "/schedule/1: error: bind: a block would have 2048 threads, more than the 1024 a GPU allows"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "blockIdx.x"},
                                         {"op": "split", "var": "i", "factor": 4})")),
                 "/schedule/1: error: split: split i before binding it"));
}

TEST_CASE("cuda: a thread count for a strided loop; a shared-memory reduction over a block") {
  const char* block_per_row = R"({"op": "bind", "var": "i", "to": "blockIdx.x"},
                                 {"op": "bind", "var": "j", "to": "threadIdx.x", "threads": 256, "reduction": "shared"})";
  spgen::Compilation c = compile(kSpmv, cuda(block_per_row));
  CHECK(contains(c.stage2_dump, "bind(threadIdx.x, 256 threads, shared +acc):"));
  CHECK(contains(c.stage2_dump, "if threadIdx.x == 0:\n      y_vals[i] = acc"));
  const std::string& source = c.files[1].text;
  CHECK(contains(source, "pA1 += 256) {"));
  CHECK(contains(source, "    acc = spgen_block_sum<8>(acc);\n    // thread 0 holds the block's sums\n    if (threadIdx.x == 0) {"));
  CHECK(contains(source, "static __device__ __forceinline__ T spgen_block_sum(T value) {"));
  CHECK(contains(source, "t_main<<<spgen_grid_dim(blocks_x, 2147483647), 256, 0, stream>>>("));
  // The helper is printed only where it is used.
  CHECK(!contains(compile(kSpmv, cuda(std::string(kWarpPerRow) + R"(, {"op": "bind", "var": "j", "to": "warp",
                                       "reduction": "shuffle"})")).files[1].text, "spgen_block_sum"));

  // Errors: the count's index and range; the reduction's loop, warps and uniformity.
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "warp", "threads": 64})")),
                 "/schedule/0/threads: error: only a loop bound to threadIdx.x or threadIdx.y takes a thread count"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "threadIdx.x", "threads": 2048})")),
                 "/schedule/0/threads: error: a block has at most 1024 threads"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "j", "to": "threadIdx.y", "reduction": "shared"})")),
                 "/schedule/0: error: bind: a shared reduction combines the threads of a block along threadIdx.x"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "j", "to": "threadIdx.x", "threads": 48, "reduction": "shared"})")),
                 "bind: a shared reduction adds up whole warps: give loop j a multiple of 32 threads (it has 48"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "threadIdx.y", "threads": 4},
                                         {"op": "bind", "var": "j", "to": "threadIdx.x", "reduction": "shared"})")),
                 "/schedule/1: error: bind: a shared reduction synchronizes the whole block, but loop i around j is "
                 "spread over threadIdx.y"));
  CHECK(contains(error_of(kSpmm, cuda(R"({"op": "reorder", "order": ["i", "k", "j"]},
                                         {"op": "bind", "var": "k", "to": "threadIdx.x", "reduction": "shared"},
                                         {"op": "bind", "var": "j", "to": "threadIdx.y", "reduction": "atomic"})")),
                 "/schedule/1: error: bind: a shared reduction synchronizes the whole block, but loop j inside k is bound too"));
}

TEST_CASE("cuda: cache copies a dense operand's slice into shared memory, read by the loop's body") {
  const char* cached = R"({"op": "bind", "var": "i", "to": "blockIdx.x"},
                          {"op": "bind", "var": "j", "to": "threadIdx.y", "threads": 4},
                          {"op": "bind", "var": "k", "to": "warp", "reduction": "shuffle"},
                          {"op": "cache", "tensor": "A", "at": "i"})";
  std::string sddmm_cuda = R"({"target": "cuda", "tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}}, "schedule": [)";
  spgen::Compilation c = compile(kSddmm, sddmm_cuda + cached + "]}");
  CHECK(contains(c.stage2_dump, "allocate shared A_tile: float32[dim_k]:\n"));
  CHECK(contains(c.stage2_dump, "for A_tile copy at A_tile_at in [0, dim_k) bind(block):\n"));
  CHECK(contains(c.stage2_dump, "A_tile[A_tile_at] = A_vals[i * dim_k + A_tile_at]\n      barrier\n"));
  CHECK(contains(c.stage2_dump, "A_tile[pA1 - i * dim_k]"));
  const std::string& source = c.files[1].text;
  CHECK(contains(source, "  extern __shared__ __align__(16) unsigned char spgen_shared[];\n"));
  CHECK(contains(source, "float* A_tile = reinterpret_cast<float*>(spgen_shared);  // dim_k elements"));
  CHECK(contains(source, "A_tile_at += (int64_t)blockDim.x * blockDim.y) {"));
  CHECK(contains(source, "      __syncthreads();\n"));
  CHECK(contains(source, "const size_t shared_bytes = (size_t)((dim_k * 4 + 15) / 16 * 16);"));
  CHECK(contains(source, "dim3(32, 4), shared_bytes, stream>>>("));
  CHECK(!contains(source, "B_tile"));

  auto cache_error = [&](const std::string& ops) { return error_of(kSddmm, sddmm_cuda + ops + "]}"); };
  CHECK(contains(cache_error(R"({"op": "cache", "tensor": "A"})"), "/schedule/0: error: cache: missing \"at\""));
  CHECK(contains(cache_error(R"({"op": "cache", "tensor": "Z", "at": "i"})"),
                 "/schedule/0/tensor: error: cache: the spec has no tensor \"Z\""));
  CHECK(contains(cache_error(R"({"op": "cache", "tensor": "Y", "at": "i"})"), "cache: Y is the output"));
  CHECK(contains(cache_error(R"({"op": "cache", "tensor": "X", "at": "i"})"),
                 "/schedule/0: error: cache: X is stored sparse (csr): only a dense input is cached"));
  CHECK(contains(cache_error(R"({"op": "cache", "tensor": "A", "at": "q"})"), "/schedule/0: error: cache: no loop named q"));
  // A slice that the threads of a block would not share: j is spread over threads.
  CHECK(contains(cache_error(std::string(cached) + R"(, {"op": "cache", "tensor": "B", "at": "j"})"),
                 "/schedule/4: error: cache: loop j is spread over threadIdx.y, but the threads of a block copy the "
                 "tile together"));
  CHECK(contains(cache_error(R"({"op": "bind", "var": "i", "to": "threadIdx.x"}, {"op": "cache", "tensor": "A", "at": "j"})"),
                 "cache: loop i around j is spread over threadIdx.x"));
  CHECK(contains(cache_error(std::string(cached) + R"(, {"op": "cache", "tensor": "B", "at": "k"})"),
                 "cache: loop j around k is spread over threadIdx.y"));
  // Inside k, A is read at one entry: nothing to share. Outside i, the tile is all of A.
  CHECK(contains(cache_error(R"({"op": "bind", "var": "i", "to": "blockIdx.x"}, {"op": "split", "var": "k", "factor": 4},
                                {"op": "cache", "tensor": "A", "at": "k1"})"),
                 "cache: A is read at a single entry in each iteration of loop k1: there is nothing to share"));
  CHECK(contains(error_of(kSddmm, R"({"tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}},
                                      "schedule": [{"op": "cache", "tensor": "A", "at": "i"}]})"),
                 "/schedule/0: error: cache: cache keeps a tile in GPU shared memory: it is for the cuda target"));
}

TEST_CASE("cuda: a register tile of float4 vectors; a bound tile's remainder loop runs on the same threads") {
  const char* tiled = R"({"op": "reorder", "order": ["i", "k", "j"]},
                         {"op": "tile", "var": "k", "factor": 8, "into": ["k0", "k1"]},
                         {"op": "precompute", "var": "k1"},
                         {"op": "vectorize", "var": "k1"},
                         {"op": "bind", "var": "i", "to": "blockIdx.x"},
                         {"op": "bind", "var": "k0", "to": "warp"})";
  spgen::Compilation c = compile(kSpmm, cuda(tiled));
  CHECK(contains(c.stage2_dump, "allocate local acc_tile: float32 vectors[8 / SPGEN_LANES_F32] = 0:"));
  CHECK(contains(c.stage2_dump, "for k_rest at k in [k_groups * 8, dim_k) bind(warp, 32 threads):"));
  const std::string& source = c.files[1].text;
  CHECK(contains(source, "#define SPGEN_LANES_F32 4\n"));
  CHECK(contains(source, "const float4 v = *reinterpret_cast<const float4*>(p);"));
  CHECK(contains(source, "spgen_vf32 acc_tile[8 / SPGEN_LANES_F32] = {};"));
  CHECK(contains(source, "acc_tile[k1_vec] += A_vals[pA1] * spgen_load_f32(&B_vals[pB1]);"));
  CHECK(contains(source, "spgen_store_f32(&C_vals[pC1], acc_tile[k1_store_vec]);"));
  CHECK(contains(source, "for (int64_t k0 = (int64_t)threadIdx.x; k0 < k_groups; k0 += 32) {"));
  CHECK(contains(source, "for (int64_t k = k_groups * 8 + (int64_t)threadIdx.x; k < dim_k; k += 32) {"));
  CHECK(contains(source, "<<<spgen_grid_dim(blocks_x, 2147483647), 32, 0, stream>>>"));
  // Without vectors, no vector helpers.
  CHECK(!contains(compile(kSpmm, cuda(R"({"op": "bind", "var": "i", "to": "blockIdx.x"})")).files[1].text, "spgen_vf32"));

  // A tile of 6 floats is not a whole number of float4; lanes are the CPU's; a bound loop is the
  // threads'; a reduction combined after the main loop would miss the remainder's share.
  std::string six = tiled;
  six.replace(six.find("\"factor\": 8"), 11, "\"factor\": 6");
  CHECK(contains(error_of(kSpmm, cuda(six)), "/schedule/3: error: vectorize: on the cuda target, vectorize makes float4 "
                                             "loads of a register tile: loop k1 must iterate one made by precompute, with "
                                             "a trip count that is a multiple of 4"));
  CHECK(contains(error_of(kSpmm, cuda(R"({"op": "reorder", "order": ["i", "k", "j"]},
                                         {"op": "tile", "var": "k", "factor": 8, "into": ["k0", "k1"]},
                                         {"op": "precompute", "var": "k1"},
                                         {"op": "vectorize", "var": "k1", "lanes": 4})")),
                 "/schedule/3: error: vectorize: lanes are for the cpu target"));
  CHECK(contains(error_of(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "blockIdx.x"},
                                         {"op": "tile", "var": "j", "factor": 4},
                                         {"op": "bind", "var": "j0", "to": "warp", "reduction": "shuffle"})")),
                 "/schedule/2: error: bind: loop j0 is a tile's main loop, and its remainder loop j_rest adds into the "
                 "same sums after the shuffle reduction would combine them"));
}

TEST_CASE("cuda: an assembled output: count kernel, a one-block scan, then the fill; workspaces are refused") {
  const char* add = "C(i,j) = A(i,j) + B(i,j)";
  spgen::Compilation c = compile(add, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}, "B": {"format": "csr"},
                                          "C": {"format": "csr"}},
                                          "schedule": [{"op": "split", "var": "i", "factor": 128, "into": ["i0", "i1"]},
                                                       {"op": "bind", "var": "i0", "to": "blockIdx.x"},
                                                       {"op": "bind", "var": "i1", "to": "threadIdx.x"}]})");
  CHECK(contains(c.stage2_dump, "for prefix sum at p_2 in [0, dim_i) bind(scan, 1024 threads):"));
  const std::string& source = c.files[1].text;
  // The assemble phase is an ABI function of its own: zero fill, counts, scan.
  size_t zero = source.find("t_assemble_zero_C<<<"), count = source.find("t_assemble_main<<<"),
         scan = source.find("t_assemble_prefix_sum<<<1, 1024, 0, stream>>>(dim_i, C_pos1);");
  REQUIRE(scan != std::string::npos);
  CHECK(zero < count);
  CHECK(count < scan);
  CHECK(contains(source, "  spgen_block_scan(C_pos1, dim_i + 1);\n"));
  CHECK(contains(source, "static __device__ void spgen_block_scan(T* a, int64_t n) {"));
  CHECK(contains(source, "extern \"C\" int t_assemble(\n"));
  // Counting is atomic where threads run: a thread-bound loop inside a row would share its count.
  CHECK(contains(source, "        atomicAdd(&C_pos1[i + 1], 1);\n"));
  CHECK(contains(source, "        C_crd1[pC1] = (int32_t)j;\n"));
  const std::string& header = c.files[0].text;
  CHECK(contains(header, "// First call t_assemble(...), which builds the output's positions:"));
  CHECK(contains(header, "copy the last one back (cudaMemcpy, which waits for the phase on the default stream)."));
  CHECK(contains(header, "int t_assemble(\n"));

  // A DCSR output's rows follow a cursor: one thread assembles them, without atomics.
  spgen::Compilation dcsr = compile(add, R"({"target": "cuda", "tensors": {"A": {"format": "dcsr"}, "B": {"format": "dcsr"},
                                             "C": {"format": "dcsr"}}})");
  CHECK(contains(dcsr.files[1].text, "t_assemble_level0_main<<<1, 1, 0, stream>>>("));
  CHECK(contains(dcsr.files[1].text, "    C_pos0[pC0 + 1] += (int32_t)((int64_t)C0_nonempty);\n"));
}

TEST_CASE("cuda: a scattered output's row workspaces are each thread's slices of device arrays the host allocates") {
  const char* spgemm = "C(i,j) = A(i,k) * B(k,j)";
  auto config = [](const std::string& schedule) {
    return R"({"target": "cuda", "tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "csr"}},
              "schedule": )" + schedule + "}";
  };
  spgen::Compilation c = compile(spgemm, config(R"("auto")"));
  CHECK(contains(c.stage2_dump, "bind(threadIdx.x, 128 threads)"));  // a thread per row
  const std::string& source = c.files[1].text;
  // The kernel takes every thread's workspaces and keeps its own slice, at its number in the grid.
  CHECK(contains(source, "    int64_t* __restrict__ spgen_C_seen,\n    int64_t* __restrict__ spgen_C_touched,\n"
                         "    float* __restrict__ spgen_C_row) {\n"));
  CHECK(contains(source, "    int64_t* const C_seen = spgen_C_seen + spgen_thread_number() * (dim_j);  // this thread's slice\n"));
  CHECK(contains(source, "        spgen_sort(C_touched, C_ntouched);\n"));
  CHECK(contains(source, "static __device__ void spgen_sort(T* a, int64_t n) {"));
  // The host function sizes the grid by the memory, allocates (the marker at -1), launches, frees.
  CHECK(contains(source, "const int64_t workspace_bytes = spgen_workspace_bytes<int64_t>(dim_j) + "
                         "spgen_workspace_bytes<int64_t>(dim_j) + spgen_workspace_bytes<float>(dim_j);  // per thread\n"));
  CHECK(contains(source, "const int64_t blocks_x = spgen_workspace_blocks((dim_i + 127) / 128, 128, workspace_bytes);\n"));
  CHECK(contains(source, "const int64_t threads = (int64_t)grid.x * grid.y * 128;\n"));
  CHECK(contains(source, "cudaError_t status = spgen_workspace_alloc(&C_seen, threads * (dim_j), 0xff, stream);\n"));
  CHECK(contains(source, "if (C_row) cudaFreeAsync(C_row, stream);\n"));
  CHECK(contains(source, "if (status != cudaSuccess) return (int)status;\n"));
  // The count phase keeps only the marker.
  CHECK(contains(source, "t_assemble_main<<<grid, 128, 0, stream>>>(dim_i, dim_j, C_pos1, A_pos1, A_crd1, B_pos1, "
                         "B_crd1, C_seen);"));

  // Beside a cached operand in shared memory; the assemble phases read no values and cache nothing.
  spgen::Compilation cached = compile("C(i,j,l) = A(i,j,k) * B(k,l)", R"({"target": "cuda",
      "tensors": {"A": {"format": "csf"}, "B": {"format": "dense"}, "C": {"format": {"levels": ["dense", "compressed", "compressed"]}}},
      "schedule": [{"op": "bind", "var": "i", "to": "blockIdx.x"}, {"op": "cache", "tensor": "B", "at": "i"}]})");
  CHECK(contains(cached.files[1].text, "        t_main<<<grid, 1, shared_bytes, stream>>>("));
  CHECK(contains(cached.files[1].text, "C_row[l] += A_vals[pA2] * B_tile[pB1];"));
  CHECK(!contains(cached.files[1].text, "t_assemble_level2_main<<<grid, 1, shared_bytes"));

  // A workspace belongs to one thread: loops inside a row stay in it, with what works instead.
  std::string rows = R"([{"op": "split", "var": "i", "factor": 128, "into": ["i0", "i1"]},
                         {"op": "bind", "var": "i0", "to": "blockIdx.x"}, )";
  CHECK(contains(error_of(spgemm, config(rows + R"({"op": "bind", "var": "k", "to": "threadIdx.x", "reduction": "atomic"}])")),
                 "c.json: /schedule/2: error: bind: cannot bind k: it adds into the row workspace of C, which one GPU "
                 "thread owns for whole rows; bind the loops over the rows instead (i0, i1), a thread per row"));
  CHECK(contains(error_of(spgemm, config(R"([{"op": "bind", "var": "i", "to": "blockIdx.x"},
                                             {"op": "bind", "var": "j", "to": "threadIdx.x"}])")),
                 "cannot bind j: it adds into the row workspace of C, which one GPU thread owns for whole rows; bind the "
                 "loops over the rows instead (i), a thread per row"));
}

TEST_CASE("cuda: stage II shows the bindings; the source launches what they imply") {
  spgen::Compilation c = compile(kSpmv, cuda(std::string(kWarpPerRow) +
                                             R"(, {"op": "bind", "var": "j", "to": "warp", "reduction": "shuffle"})"));
  CHECK(contains(c.stage2_dump, "for i0 in [0, (dim_i + 3) / 4) bind(blockIdx.x):"));
  CHECK(contains(c.stage2_dump, "for i1 in [0, min(4, dim_i - i0 * 4)) bind(threadIdx.y, 4 threads):"));
  CHECK(contains(c.stage2_dump, "bind(warp, 32 threads, shuffle +acc):"));
  CHECK(contains(c.stage2_dump, "if threadIdx.x == 0:\n        y_vals[i] = acc"));
  const std::string& source = c.files[1].text;
  CHECK(c.files[1].name == "t.cu");
  // Bound loops start at the thread's index and stride over the threads on it.
  CHECK(contains(source, "for (int64_t i0 = (int64_t)blockIdx.x; i0 < (dim_i + 3) / 4; i0 += gridDim.x) {"));
  CHECK(contains(source, "for (int64_t pA1 = (int64_t)A_pos1[i] + (int64_t)threadIdx.x; pA1 < (int64_t)A_pos1[i + 1]; pA1 += 32) {"));
  CHECK(contains(source, "      acc = spgen_warp_sum(acc);\n      // lane 0 holds the warp's sums\n      if (threadIdx.x == 0) {"));
  // Launch: blocks from the trip count of i0, a 32 x 4 block from the lanes and i1.
  CHECK(contains(source, "static __global__ void __launch_bounds__(128) t_main("));
  CHECK(contains(source, "const int64_t blocks_x = (dim_i + 3) / 4;"));
  CHECK(contains(source, "t_main<<<spgen_grid_dim(blocks_x, 2147483647), dim3(32, 4), 0, stream>>>("));
  CHECK(contains(source, "extern \"C\" int t("));
  CHECK(contains(c.files[0].text, "typedef struct CUstream_st* cudaStream_t;"));
  CHECK(contains(c.files[0].text, "    cudaStream_t stream);"));
}

TEST_CASE("cuda: the zero fill is a grid-stride kernel launched first; data-sized grids fill the GPU") {
  spgen::Compilation c = compile(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "blockIdx.x"},
                                               {"op": "bind", "var": "j", "to": "warp", "reduction": "shuffle"})", "dcsr"));
  CHECK(contains(c.stage2_dump, "for zero y at p in [0, dim_i) bind(grid, 256 threads):"));
  const std::string& source = c.files[1].text;
  CHECK(contains(source, "for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < dim_i; "
                         "p += (int64_t)gridDim.x * blockDim.x) {"));
  size_t zero = source.find("t_zero_y<<<"), main = source.find("t_main<<<");
  REQUIRE(zero != std::string::npos);
  CHECK(zero < main);
  CHECK(contains(source, "const int64_t blocks_x = (dim_i + 255) / 256;"));
  // The rows of a DCSR matrix are counted in its data: the host cannot size that grid.
  CHECK(contains(source, "const int64_t blocks_x = spgen_fill_blocks();"));
}

TEST_CASE("cuda: auto binds the outer loop to blocks, with a warp per row when an inner loop suits the lanes") {
  spgen::Compilation spmv = compile(kSpmv, R"({"target": "cuda", "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})");
  CHECK(contains(spmv.files[0].text, "//   bind(i1, threadIdx.y)\n//   bind(j, warp, shuffle)\n"));
  spgen::Compilation sddmm = compile(kSddmm, R"({"target": "cuda", "tensors": {"X": {"format": "csr"}, "Y": {"format": "csr"}},
                                               "schedule": "auto"})");
  CHECK(contains(sddmm.stage2_dump, "for k in [0, dim_k) bind(warp, 32 threads, shuffle +acc):"));
  spgen::Compilation csc = compile(kSpmv, R"({"target": "cuda", "tensors": {"y": {"format": "dense"}, "A": {"format": "csc"}}, "schedule": "auto"})");
  CHECK(contains(csc.files[0].text, "//   split(j, 128 -> j0, j1)\n//   bind(j0, blockIdx.x, atomic)\n//   bind(j1, threadIdx.x, atomic)\n"));
  // BSR SpMV: the in-block column loop is too short for lanes, so a thread takes each block row.
  spgen::Compilation bsr = compile(kSpmv, R"({"target": "cuda", "tensors": {"A": {"format": "bsr", "block": [4, 4]}},
                                             "schedule": "auto"})");
  CHECK(contains(bsr.files[0].text, "//   split(i_blk, 128 -> i_blk0, i_blk1)\n//   bind(i_blk0, blockIdx.x)\n"
                                    "//   bind(i_blk1, threadIdx.x)\n//\n"));
  // A sum of everything into a scalar output runs on one warp.
  spgen::Compilation dot = compile("s = A(i,j) * B(i,j)", R"({"target": "cuda", "tensors": {"A": {"format": "csr"}}, "schedule": "auto"})");
  CHECK(contains(dot.stage2_dump, "for i in [0, dim_i) bind(warp, 32 threads, shuffle +acc):"));
  CHECK(contains(dot.files[1].text, "t_main<<<1, 32, 0, stream>>>("));
}

TEST_CASE("cuda: the .cu defines the host pack and unpack routines, and the header declares them") {
  spgen::Compilation c = compile(kSpmv, cuda(R"({"op": "bind", "var": "i", "to": "blockIdx.x"})"));
  const std::string& header = c.files[0].text;
  const std::string& source = c.files[1].text;
  CHECK(contains(header, "// On the cuda target these routines run on the host: every array they take or write is host\n"
                         "// memory (unlike t's, which are device memory)."));
  CHECK(contains(header, "//   A(i,j), csr: coords (i, j), lengths {A_pos1, A_crd1, A_vals}:\n//     t_pack_A_sizes, t_pack_A, t_unpack_A\n"));
  CHECK(contains(header, "#define SPGEN_ERR_NOT_IN_STRUCTURE 9"));
  CHECK(contains(header, "int t_pack_A_sizes(\n"));
  CHECK(contains(header, "const char* t_pack_strerror(int code);"));
  // Declared inside the header's extern "C" block, after the kernel.
  CHECK(header.find("int t_pack_A(") > header.find("cudaStream_t stream);"));
  CHECK(header.find("int t_pack_A(") < header.find("#ifdef __cplusplus\n}"));
  // Defined after the launcher, as plain (host) C++ over the same level tables as a CPU kernel's.
  CHECK(source.find("extern \"C\" int t_pack_A(") > source.find("extern \"C\" int t("));
  CHECK(contains(source, "const Level levels_A[] = {{kDense, 0, 0}, {kCompressed, 1, 0}};"));
  CHECK(contains(source, "extern \"C\" const char* t_pack_strerror(int code)"));
  // A kernel of dense tensors only has nothing to pack.
  spgen::Compilation dense = compile(kSpmv, R"({"target": "cuda", "tensors": {"A": {"format": "dense"}},
                                               "schedule": [{"op": "bind", "var": "i", "to": "blockIdx.x"}]})");
  CHECK(!contains(dense.files[0].text, "_pack_"));
  CHECK(!contains(dense.files[1].text, "_pack_"));
}

TEST_CASE("cuda: blocked formats (bsr) lower with their block loops bound, and the race checks see those loops") {
  // A dense output (else one beside block-CSC would be inferred sparse) and this A.
  auto bsr = [](const std::string& ops, const std::string& output = "C", const std::string& format = R"("bsr", "block": [4, 4])") {
    return R"({"target": "cuda", "tensors": {")" + output + R"(": {"format": "dense"}, "A": {"format": )" + format +
           R"(}}, "schedule": [)" + ops + "]}";
  };
  // SpMM: a block per block row, a thread row per row of the block, lanes over the columns k.
  spgen::Compilation c = compile(kSpmm, bsr(R"({"op": "bind", "var": "i_blk", "to": "blockIdx.x"},
                                              {"op": "bind", "var": "i_in", "to": "threadIdx.y"},
                                              {"op": "bind", "var": "k", "to": "threadIdx.x"})"));
  CHECK(contains(c.stage2_dump, "for i_blk in [0, (dim_i + 3) / 4) bind(blockIdx.x):"));
  CHECK(contains(c.stage2_dump, "for i_in in [0, min(4, dim_i - i_blk * 4)) bind(threadIdx.y, 4 threads):"));
  CHECK(contains(c.stage2_dump, "for k in [0, dim_k) bind(threadIdx.x, 32 threads):"));
  const std::string& source = c.files[1].text;
  CHECK(contains(source, "for (int64_t i_in = (int64_t)threadIdx.y; i_in < spgen_min<int64_t>(4, dim_i - i_blk * 4); i_in += 4) {"));
  CHECK(contains(source, "t_main<<<spgen_grid_dim(blocks_x, 2147483647), dim3(32, 4), 0, stream>>>("));
  // The BSR pack routines come with it (the block maps are in the level table).
  CHECK(contains(source, "const Level levels_A[] = {{kDense, 0, 0, kBlock, 4}, {kCompressed, 1, 0, kBlock, 4}, "
                         "{kDense, 0, 0, kInBlock, 4}, {kDense, 1, 0, kInBlock, 4}};"));
  CHECK(contains(c.files[0].text, "int t_pack_A(\n"));

  // The block columns j_blk sum into the same rows: a race without atomics, atomicAdd with them.
  CHECK(contains(error_of(kSpmm, bsr(R"({"op": "bind", "var": "i_blk", "to": "blockIdx.x"},
                                        {"op": "bind", "var": "j_blk", "to": "threadIdx.x"})")),
                 "c.json: /schedule/1: error: bind: threads would race on C: loop j_blk iterates the reduction index j_blk"));
  std::string atomic = compile(kSpmm, bsr(R"({"op": "bind", "var": "j_blk", "to": "blockIdx.x", "reduction": "atomic"},
                                              {"op": "bind", "var": "k", "to": "threadIdx.x"})")).files[1].text;
  CHECK(contains(atomic, "atomicAdd(&C_vals[pC1], A_vals[pA3] * B_vals[pB1]);"));
  // Block-CSC: block rows are positions under the block columns, which every thread runs in full.
  const std::string block_csc = R"({"levels": [{"kind": "dense", "floordiv": 4}, {"kind": "compressed", "floordiv": 2},
                                              {"kind": "dense", "mod": 4}, {"kind": "dense", "mod": 2}], "order": [1, 0, 1, 0]})";
  CHECK(contains(error_of(kSpmv, bsr(R"({"op": "bind", "var": "i_blk", "to": "blockIdx.x"})", "y", block_csc)),
                 "/schedule/0: error: bind: threads would race on y: loop i_blk iterates positions under loop j_blk"));
  // SpMV: a warp per in-block row sums the row's block columns in lanes and shuffles.
  spgen::Compilation spmv = compile(kSpmv, bsr(R"({"op": "bind", "var": "i_blk", "to": "blockIdx.x"},
                                                 {"op": "bind", "var": "j_in", "to": "warp", "reduction": "shuffle"})", "y"));
  CHECK(contains(spmv.stage2_dump, "for j_in in [0, min(4, dim_j - j_blk * 4)) bind(warp, 32 threads, shuffle +acc):"));
  CHECK(contains(spmv.stage2_dump, "        if threadIdx.x == 0:\n          y_vals[i] += acc"));
}
