#!/bin/sh
# Specs of several statements against their single-statement or unfused forms, in one run:
#   bench/statements/run.sh [SPGEN] [DATA] [THREADS]
# RGCN: each graph's edges split into 4 relations by a hash of their ends, K = L = 32: the one
# statement as one nest (its schedule pinned to what `auto` gives one nest), the one statement
# under `auto` (which factors it, the statistics coming from the input), and the two statements
# written out (T = A X, then Y = T W, both under `auto`).
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
# Attention and GAT, K = D = 32 (attention) and D = 32 (GAT): the statements in one kernel each in
# its own loop ("apart"), fused into one row loop, and as five spgen kernels of their own (one per
# statement, bench/statements/parts: the sum of their medians, each temporary an output of one and
# an input of the next); attention against a dense masked attention in Eigen too (when g++ finds
# Eigen: dense_attention.cpp, fewer runs: it is O(N^2)).
DENSE=""
if g++ -O3 -march=native -fopenmp -I/usr/include/eigen3 "$HERE/dense_attention.cpp" -o "$WORK/dense_attention" 2>/dev/null; then
  DENSE="$WORK/dense_attention"
fi
PARTS="$HERE/parts"
for graph in cora pubmed ego-facebook; do
  M="$DATA/$graph.mtx"
  apart=$(median "$HERE/attention.spg" -c "$HERE/attention_apart.json" --input M="$M" --input Q=random --input K=random --input V=random --dim k=32 --dim d=32)
  fused=$(median "$HERE/attention.spg" -c "$HERE/attention_fused.json" --input M="$M" --input Q=random --input K=random --input V=random --dim k=32 --dim d=32)
  s1=$(median "$PARTS/scores.spg" -c "$PARTS/scores.json" --input M="$M" --input Q=random --input K=random --dim k=32)
  s2=$(median "$PARTS/rowmax.spg" -c "$PARTS/rowmax.json" --input S="$M")
  s3=$(median "$PARTS/numerators.spg" -c "$PARTS/numerators.json" --input S="$M" --input m=random)
  s4=$(median "$PARTS/rowsum.spg" -c "$PARTS/rowsum.json" --input E="$M")
  s5=$(median "$PARTS/aggregate.spg" -c "$PARTS/aggregate.json" --input E="$M" --input V=random --input l=random --dim d=32)
  separate=$(echo "$s1 + $s2 + $s3 + $s4 + $s5" | bc)
  line="attention $graph: one kernel, apart ${apart} ms; fused ${fused} ms ($(echo "scale=2; $apart / $fused" | bc)x); five kernels ${separate} ms (${s1} + ${s2} + ${s3} + ${s4} + ${s5}; one kernel apart $(echo "scale=2; $separate / $apart" | bc)x faster)"
  if [ -n "$DENSE" ]; then
    dense=$(OMP_NUM_THREADS=$THREADS "$DENSE" "$M" 32 5 "$THREADS" | sed -n 's/^time_ms median=\([0-9.]*\).*/\1/p')
    line="$line; dense masked in Eigen ${dense} ms ($(echo "scale=1; $dense / $apart" | bc)x slower)"
  fi
  echo "$line"
done
for graph in cora pubmed ego-facebook; do
  A="$DATA/$graph.mtx"
  apart=$(median "$HERE/../../examples/gat/gat.spg" -c "$HERE/gat_apart.json" --input A="$A" --input u=random --input v=random --input H=random --dim d=32)
  fused=$(median "$HERE/../../examples/gat/gat.spg" -c "$HERE/gat_fused.json" --input A="$A" --input u=random --input v=random --input H=random --dim d=32)
  s1=$(median "$PARTS/gat_scores.spg" -c "$PARTS/gat_scores.json" --input M="$A" --input u=random --input v=random)
  s2=$(median "$PARTS/rowmax.spg" -c "$PARTS/rowmax.json" --input S="$A")
  s3=$(median "$PARTS/numerators.spg" -c "$PARTS/numerators.json" --input S="$A" --input m=random)
  s4=$(median "$PARTS/rowsum.spg" -c "$PARTS/rowsum.json" --input E="$A")
  s5=$(median "$PARTS/aggregate.spg" -c "$PARTS/aggregate.json" --input E="$A" --input V=random --input l=random --dim d=32)
  separate=$(echo "$s1 + $s2 + $s3 + $s4 + $s5" | bc)
  echo "gat $graph: one kernel, apart ${apart} ms; fused ${fused} ms ($(echo "scale=2; $apart / $fused" | bc)x); five kernels ${separate} ms (${s1} + ${s2} + ${s3} + ${s4} + ${s5}; one kernel apart $(echo "scale=2; $separate / $apart" | bc)x faster)"
done
