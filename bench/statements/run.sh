#!/bin/sh
# Specs of several statements against their single-statement or unfused forms, in one run:
#   bench/statements/run.sh [SPGEN] [DATA] [THREADS]
# RGCN: each graph's edges split into 4 relations by a hash of their ends, K = L = 32: the one
# statement as one nest (its schedule pinned to what `auto` gives one nest), the one statement
# under `auto` (which factors it, the statistics coming from the input), and the two statements
# written out (T = A X, then Y = T W, both under `auto`).
# Attention: the five statements fused into one row loop against each its own loop (K = D = 32).
# Prints the median of 20 runs of each (spgen run), and their ratio.
set -e
SPGEN=${1:-build/src/spgen}
DATA=${2:-../shared/data}
THREADS=${3:-2}
HERE=$(dirname "$0")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
median() { "$SPGEN" run "$@" --repeat 20 --threads "$THREADS" | sed -n 's/^time_ms median=\([0-9.]*\).*/\1/p'; }
for graph in pubmed ego-facebook astro-ph; do
  /usr/bin/python3 - "$DATA/$graph.mtx" "$WORK/$graph.tns" <<'PY'
import sys, scipy.io
a = scipy.io.mmread(sys.argv[1]).tocoo()
with open(sys.argv[2], "w") as f:
    for i, j, v in zip(a.row, a.col, a.data):
        f.write(f"{(i * 7 + j * 13) % 4 + 1} {i + 1} {j + 1} {v}\n")
PY
  nest=$(median "$HERE/rgcn_single.spg" -c "$HERE/rgcn_one_nest.json" --input A="$WORK/$graph.tns" --input X=random --input W=random)
  auto=$(median "$HERE/rgcn_single.spg" -c "$HERE/rgcn_single_auto.json" --input A="$WORK/$graph.tns" --input X=random --input W=random)
  factored=$(median "$HERE/rgcn_factored.spg" -c "$HERE/rgcn_factored_auto.json" --input A="$WORK/$graph.tns" --input X=random --input W=random)
  echo "rgcn $graph: one nest ${nest} ms, auto ${auto} ms ($(echo "scale=2; $nest / $auto" | bc)x), written factored ${factored} ms ($(echo "scale=2; $nest / $factored" | bc)x)"
done
for graph in cora pubmed ego-facebook; do
  apart=$(median "$HERE/attention.spg" -c "$HERE/attention_apart.json" --input M="$DATA/$graph.mtx" --input Q=random --input K=random --input V=random --dim k=32 --dim d=32)
  fused=$(median "$HERE/attention.spg" -c "$HERE/attention_fused.json" --input M="$DATA/$graph.mtx" --input Q=random --input K=random --input V=random --dim k=32 --dim d=32)
  echo "attention $graph: apart ${apart} ms, fused ${fused} ms, $(echo "scale=2; $apart / $fused" | bc)x"
done
