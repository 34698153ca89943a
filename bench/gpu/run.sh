#!/usr/bin/env bash
# On the GPU machine: builds bench_gpu.cu with the kernels bench/gpu/prepare.sh put in DIR and
# runs it on DIR/data/*.mtx; the Markdown table goes to stdout (and to OUT/results.md when OUT is
# given). Usage: bench/gpu/run.sh DIR [OUT] [ARCH, default sm_90]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$1 out=${2:-} arch=${3:-sm_90}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
"$nvcc" -std=c++17 -O3 -arch="$arch" -I "$dir" -o "$dir/bench_gpu" bench/gpu/bench_gpu.cu "$dir"/*.cu -lcusparse
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader || true
if [[ -n "$out" ]]; then
  "$dir/bench_gpu" "$dir"/data/*.mtx | tee "$out/results.md"
else
  "$dir/bench_gpu" "$dir"/data/*.mtx
fi
