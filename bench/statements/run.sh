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
# Attention and GAT, K = D = 32 (attention) and D = 32 (GAT), `spgen run` medians: the statements
# in one kernel each in its own loop ("apart", "fuse": false), fused into one row loop ("fuse":
# true), and as `auto` chooses (fused where the inputs' statistics show the temporaries large);
# attention against a dense masked attention in Eigen too (when g++ finds Eigen: dense_attention.cpp,
# fewer runs: it is O(N^2)).
DENSE=""
if g++ -O3 -march=native -fopenmp -I/usr/include/eigen3 "$HERE/dense_attention.cpp" -o "$WORK/dense_attention" 2>/dev/null; then
  DENSE="$WORK/dense_attention"
fi
for graph in cora pubmed ego-facebook; do
  M="$DATA/$graph.mtx"
  apart=$(median "$HERE/attention.spg" -c "$HERE/attention_apart.json" --input M="$M" --input Q=random --input K=random --input V=random --dim k=32 --dim d=32)
  fused=$(median "$HERE/attention.spg" -c "$HERE/attention_fused.json" --input M="$M" --input Q=random --input K=random --input V=random --dim k=32 --dim d=32)
  auto=$(median "$HERE/attention.spg" -c "$HERE/attention_auto.json" --input M="$M" --input Q=random --input K=random --input V=random --dim k=32 --dim d=32)
  line="attention $graph: apart ${apart} ms; fused ${fused} ms ($(echo "scale=2; $apart / $fused" | bc)x); auto ${auto} ms"
  if [ -n "$DENSE" ]; then
    dense=$(OMP_NUM_THREADS=$THREADS "$DENSE" "$M" 32 5 "$THREADS" | sed -n 's/^time_ms median=\([0-9.]*\).*/\1/p')
    line="$line; dense masked in Eigen ${dense} ms ($(echo "scale=1; $dense / $apart" | bc)x apart's)"
  fi
  echo "$line"
  A="$DATA/$graph.mtx"
  apart=$(median "$HERE/../../examples/gat/gat.spg" -c "$HERE/gat_apart.json" --input A="$A" --input u=random --input v=random --input H=random --dim d=32)
  fused=$(median "$HERE/../../examples/gat/gat.spg" -c "$HERE/gat_fused.json" --input A="$A" --input u=random --input v=random --input H=random --dim d=32)
  auto=$(median "$HERE/../../examples/gat/gat.spg" -c "$HERE/gat_auto.json" --input A="$A" --input u=random --input v=random --input H=random --dim d=32)
  echo "gat $graph: apart ${apart} ms; fused ${fused} ms ($(echo "scale=2; $apart / $fused" | bc)x); auto ${auto} ms"
done
# The same against the five statements as five spgen kernels of their own called in turn
# (bench/statements/parts), all in one process in interleaved rounds (sequence.cpp): the fair
# comparison, as each way finds the caches the others leave.
for part in scores gat_scores rowmax numerators rowsum aggregate; do
  "$SPGEN" gen "$HERE/parts/$part.spg" -c "$HERE/parts/$part.json" -o "$WORK"
done
for config in attention_apart attention_fused; do "$SPGEN" gen "$HERE/attention.spg" -c "$HERE/$config.json" -o "$WORK"; done
for config in gat_apart gat_fused; do "$SPGEN" gen "$HERE/../../examples/gat/gat.spg" -c "$HERE/$config.json" -o "$WORK"; done
g++ -std=c++17 -O3 -march=native -fopenmp -I"$WORK" "$HERE/sequence.cpp" "$WORK"/*.cpp -o "$WORK/sequence"
# And on the banded mask of examples/sparse_attention (8192 tokens, each attending to the 32 on
# either side: 531424 entries, 65 per row).
/usr/bin/python3 - "$WORK/band.mtx" <<'PY'
import sys
n, band = 8192, 32
entries = [(i, j) for i in range(n) for j in range(max(0, i - band), min(n, i + band + 1))]
with open(sys.argv[1], "w") as f:
    f.write("%%MatrixMarket matrix coordinate real general\n")
    f.write("%d %d %d\n" % (n, n, len(entries)))
    f.writelines("%d %d 0.1767767\n" % (i + 1, j + 1) for i, j in entries)
PY
for graph in cora pubmed ego-facebook band; do
  echo "in one process, $graph:"
  if [ "$graph" = band ]; then M="$WORK/band.mtx"; else M="$DATA/$graph.mtx"; fi
  OMP_NUM_THREADS=$THREADS "$WORK/sequence" "$M" 32 7 20
done
