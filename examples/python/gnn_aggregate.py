#!/usr/bin/env python3
"""GNN neighbour aggregation H' = A H through the module `spgen gen --python` writes
(gen/gnn_layer.py): the adjacency matrix of a graph (cora by default, a random graph when the
file is absent) times 32 random features per node, checked against scipy and timed beside it.

Usage: gnn_aggregate.py [--module-dir gen] [GRAPH.mtx]
"""
import argparse
import os
import sys
import time

import numpy as np
import scipy.io
import scipy.sparse


def adjacency(path, rng):
    if path and os.path.exists(path):
        return scipy.io.mmread(path).tocsr().astype(np.float32), os.path.basename(path)
    # A stand-in with a skewed degree distribution, as citation graphs have.
    nodes = 3000
    degrees = np.minimum(rng.zipf(2.0, nodes), 200)
    rows = np.repeat(np.arange(nodes), degrees)
    cols = rng.integers(0, nodes, rows.size)
    graph = scipy.sparse.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=(nodes, nodes))
    graph.sum_duplicates()
    return graph, f"a random graph ({path or 'no file'} is absent)"


def median_ms(call, runs=20):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph", nargs="?", default="")
    parser.add_argument("--module-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))
    args = parser.parse_args()
    sys.path.insert(0, args.module_dir)
    import gnn_layer  # written by spgen gen --python; compiles gnn_layer.so on first use

    rng = np.random.default_rng(0)
    A, name = adjacency(args.graph, rng)
    # Mean aggregation: each row of A divided by its degree.
    degrees = np.maximum(np.diff(A.indptr), 1).astype(np.float32)
    A = scipy.sparse.csr_matrix(scipy.sparse.diags(1 / degrees) @ A, dtype=np.float32)
    H = rng.standard_normal((A.shape[1], 32), dtype=np.float32)

    A_packed = gnn_layer.pack("A", A)  # converted once, as a training loop would
    out = gnn_layer.gnn_layer(A=A_packed, B=H)
    expected = A @ H
    error = float(np.abs(out - expected).max() / max(np.abs(expected).max(), 1e-30))
    print(f"{name}: {A.shape[0]} nodes, {A.nnz} edges, 32 features; max relative error against scipy {error:.2e}")
    spgen_ms = median_ms(lambda: gnn_layer.gnn_layer(A=A_packed, B=H))
    scipy_ms = median_ms(lambda: A @ H)
    print(f"median of 20: spgen {spgen_ms:.3f} ms (Python call included), scipy {scipy_ms:.3f} ms")
    if not out.shape == expected.shape or error > 1e-5:
        print("FAILED: the kernel's result differs from scipy's")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
