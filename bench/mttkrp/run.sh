#!/bin/sh
# MTTKRP, A(i,j) = B(i,k,l) * C(k,j) * D(l,j), with B in CSF: as one nest with j innermost
# (mttkrp_one_nest.json, what `auto` chose before session 33) against `auto`, which moves j out
# of the sum over l into a register tile so that C(k,j) multiplies each walk's sum once
# (mttkrp_auto.json), and against the one nest with j fixed at 32 (mttkrp_one_nest_j32.json: the
# constant width auto's kernels have, without the factoring):
#   bench/mttkrp/run.sh [SPGEN] [DATA] [THREADS]
# B is each graph's 2-hop paths: B(i,k,l) = 1 where i-k and k-l are edges (the fibers over l are
# the graph's rows, so their lengths are its degrees). J = 32. Three rounds, the two configs one
# after the other in each (`spgen run --repeat 20`, separate processes); prints each round's
# medians and their ratio.
set -e
SPGEN=${1:-build/src/spgen}
DATA=${2:-../shared/data}
THREADS=${3:-2}
HERE=$(dirname "$0")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
median() { "$SPGEN" run "$HERE/../../specs/mttkrp.spg" "$@" --dim j=32 --repeat 20 --threads "$THREADS" | sed -n 's/^time_ms median=\([0-9.]*\).*/\1/p'; }
for graph in cora citeseer pubmed; do
  /usr/bin/python3 - "$DATA/$graph.mtx" "$WORK/$graph.tns" <<'PY'
import sys, scipy.io
a = scipy.io.mmread(sys.argv[1]).tocsr()
a.sum_duplicates()
with open(sys.argv[2], "w") as f:
    for i in range(a.shape[0]):
        for k in a.indices[a.indptr[i]:a.indptr[i + 1]]:
            for l in a.indices[a.indptr[k]:a.indptr[k + 1]]:
                f.write(f"{i + 1} {k + 1} {l + 1} 1.0\n")
PY
  for round in 1 2 3; do
    nest=$(median -c "$HERE/mttkrp_one_nest.json" --input B="$WORK/$graph.tns" --input C=random --input D=random)
    nest32=$(median -c "$HERE/mttkrp_one_nest_j32.json" --input B="$WORK/$graph.tns" --input C=random --input D=random)
    auto=$(median -c "$HERE/mttkrp_auto.json" --input B="$WORK/$graph.tns" --input C=random --input D=random)
    echo "mttkrp $graph round $round: one nest ${nest} ms, one nest j = 32 ${nest32} ms, auto ${auto} ms ($(echo "scale=2; $nest / $auto" | bc)x one nest's, $(echo "scale=2; $nest32 / $auto" | bc)x one nest j = 32's)"
  done
done
