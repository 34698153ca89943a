#!/usr/bin/env python3
"""The spgen kernel as the PyTorch operator spgen::gnn_layer (spgen_torch.py), on cora (a
random graph when the file is absent): checked against torch.sparse.mm and timed beside it.

Usage: gnn_layer_op.py [--module-dir gen] [GRAPH.mtx]
"""
import argparse
import os
import sys
import time

import numpy as np
import scipy.io
import scipy.sparse
import torch


def adjacency(path, rng):
    if path and os.path.exists(path):
        return scipy.io.mmread(path).tocsr().astype(np.float32), os.path.basename(path)
    nodes = 3000
    degrees = np.minimum(rng.zipf(2.0, nodes), 200)
    rows = np.repeat(np.arange(nodes), degrees)
    graph = scipy.sparse.csr_matrix((np.ones(rows.size, np.float32), (rows, rng.integers(0, nodes, rows.size))),
                                    shape=(nodes, nodes))
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
    import gnn_layer_torch  # written by spgen gen --python
    import spgen_torch

    spgen_torch.use_module(gnn_layer_torch)
    rng = np.random.default_rng(0)
    graph, name = adjacency(args.graph, rng)
    A = torch.sparse_csr_tensor(torch.from_numpy(graph.indptr.astype(np.int32)), torch.from_numpy(graph.indices.astype(np.int32)),
                                torch.from_numpy(graph.data), size=graph.shape)
    H = torch.from_numpy(rng.standard_normal((graph.shape[1], 32), dtype=np.float32))

    out = torch.ops.spgen.gnn_layer(A, H)
    expected = torch.sparse.mm(A, H)
    error = float((out - expected).abs().max() / expected.abs().max().clamp_min(1e-30))
    print(f"{name}: {graph.shape[0]} nodes, {graph.nnz} edges, 32 features; max relative error against torch.sparse.mm {error:.2e}")
    # A is checked once, then kept packed; an in-place change to it is seen by the next call.
    A.values().mul_(2)
    doubled = torch.ops.spgen.gnn_layer(A, H)
    doubled_error = float((doubled - 2 * expected).abs().max() / expected.abs().max().clamp_min(1e-30))
    A.values().div_(2)
    print(f"after A's values were doubled in place: max relative error {doubled_error:.2e}")
    spgen_ms = median_ms(lambda: torch.ops.spgen.gnn_layer(A, H))
    torch_ms = median_ms(lambda: torch.sparse.mm(A, H))
    print(f"median of 20: spgen::gnn_layer {spgen_ms:.3f} ms, torch.sparse.mm {torch_ms:.3f} ms "
          f"({torch.get_num_threads()} threads, torch {torch.__version__})")
    if out.shape != expected.shape or error > 1e-5 or doubled_error > 1e-5:
        print("FAILED: the operator's result differs from torch.sparse.mm's")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
