#!/usr/bin/env bash
# Generates the kernels bench_gpu.cu links (bench/gpu/configs/*.json) into DIR, with the run
# runtime's header beside them, and copies the matrices into DIR/data: everything the GPU
# machine needs, as it has no spgen build of its own (no matrices where DATA does not exist).
# Usage: bench/gpu/prepare.sh SPGEN DIR [DATA, default ../shared/data]
set -euo pipefail
cd "$(dirname "$0")/../.."
spgen=$1 out=$2 data=${3:-../shared/data}
mkdir -p "$out/data"
for config in bench/gpu/configs/*.json; do
  name=$(basename "$config" .json)
  "$spgen" gen "specs/${name%%_*}.spg" --config "$config" -o "$out"
done
cp templates/spgen_run_runtime.hpp templates/spgen_run_glue.hpp "$out/"
if [[ -d "$data" ]]; then cp "$data"/*.mtx "$out/data/"; fi
echo "prepared $out: $(ls "$out"/*.cu | wc -l) kernels, $(ls "$out"/data | wc -l) matrices"
