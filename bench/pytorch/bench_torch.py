#!/usr/bin/env python3
"""The spgen SpMM kernel as a PyTorch operator (examples/pytorch) against torch.sparse.mm, in one
run: each matrix of ../shared/data as a torch.sparse_csr_tensor (int32 indices, float32 values)
times 32 random features, the operator checked against torch.sparse.mm, then both timed by
turns, medians of --runs calls, Python dispatch included for both.

Usage (from the repository root, with torch installed):
  make -C examples/pytorch SPGEN=$PWD/build/src/spgen all
  python3 bench/pytorch/bench_torch.py [--runs 50] [--threads N] [MATRIX.mtx ...]
"""
import argparse
import glob
import os
import platform
import sys
import time

import numpy as np
import scipy.io
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown cpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrices", nargs="*")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--module-dir", default=os.path.join(ROOT, "examples", "pytorch", "gen"))
    args = parser.parse_args()
    sys.path.insert(0, args.module_dir)
    sys.path.insert(0, os.path.join(ROOT, "examples", "pytorch"))
    import gnn_layer_torch
    import spgen_torch

    spgen_torch.use_module(gnn_layer_torch)
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    matrices = args.matrices or sorted(glob.glob(os.path.join(ROOT, "..", "shared", "data", "*.mtx")))
    print(f"# {cpu_name()}, {os.cpu_count()} cpus, torch {torch.__version__} with {torch.get_num_threads()} threads, "
          f"K = 32, float32, medians of {args.runs}")
    print("| matrix | nnz | spgen::gnn_layer ms | module, A packed once ms | torch.sparse.mm ms | speedup (operator) | speedup (packed) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    ratios = []
    rng = np.random.default_rng(0)
    for path in matrices:
        graph = scipy.io.mmread(path).tocsr().astype(np.float32)
        A = torch.sparse_csr_tensor(torch.from_numpy(graph.indptr.astype(np.int32)), torch.from_numpy(graph.indices.astype(np.int32)),
                                    torch.from_numpy(graph.data), size=graph.shape)
        H = torch.from_numpy(rng.standard_normal((graph.shape[1], 32), dtype=np.float32))
        ours, theirs = torch.ops.spgen.gnn_layer(A, H), torch.sparse.mm(A, H)
        error = float((ours - theirs).abs().max() / theirs.abs().max().clamp_min(1e-30))
        if error > 1e-5:
            sys.exit(f"{path}: the operator differs from torch.sparse.mm (relative error {error:.2e})")
        # The module called directly with A converted once (what a training loop would keep).
        packed, features = gnn_layer_torch.pack("A", graph), H.numpy()
        times = {"spgen": [], "packed": [], "torch": []}
        for _ in range(args.runs):  # by turns, so that all see the same machine
            for name, call in (("spgen", lambda: torch.ops.spgen.gnn_layer(A, H)),
                               ("packed", lambda: gnn_layer_torch.gnn_layer_torch(A=packed, B=features)),
                               ("torch", lambda: torch.sparse.mm(A, H))):
                start = time.perf_counter()
                call()
                times[name].append((time.perf_counter() - start) * 1e3)
        spgen_ms, packed_ms, torch_ms = (float(np.median(times[k])) for k in ("spgen", "packed", "torch"))
        ratios.append((torch_ms / spgen_ms, torch_ms / packed_ms))
        print(f"| {os.path.basename(path)} | {graph.nnz} | {spgen_ms:.3f} | {packed_ms:.3f} | {torch_ms:.3f} | "
              f"{torch_ms / spgen_ms:.2f}x | {torch_ms / packed_ms:.2f}x |")
    if ratios:
        geomean = [float(np.exp(np.mean(np.log([r[k] for r in ratios])))) for k in (0, 1)]
        print(f"\ngeometric mean speedup over torch.sparse.mm: the operator {geomean[0]:.2f}x, the module with A packed once {geomean[1]:.2f}x")


if __name__ == "__main__":
    main()
