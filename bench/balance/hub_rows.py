#!/usr/bin/env python3
"""SpMV on a matrix with one hub row: parallel balances against one another (bench/RESULTS.md,
session 35; docs/config.md, "Cutting long rows").

    bench/balance/hub_rows.py SPGEN [ROUNDS] [--columns N]

Writes the matrix (100,000 rows; row 0 holds 600,000 random columns, every other row 3) under
a temporary directory, then times `spgen run` of each config named below (bench/configs or this folder), in
alternating rounds, on 2 threads and on 1, and prints each config's median of its rounds'
medians. --columns sets the columns' count (20 M by default: the hub's entries spread, each a
cache line of x of its own; 1 M: nearly contiguous, so cheaper than a short row's).
"""
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

# bench/configs/NAME.json, or bench/balance/NAME.json
CONFIGS = ["spmv_b_auto_lanes8_nnz", "spmv_lanes8_merge_path", "spmv_b_auto"]


def write_matrix(path, columns, seed=7):
    rng = random.Random(seed)
    rows = 100000
    hub = sorted(rng.sample(range(columns), 600000))
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{rows} {columns} {len(hub) + 3 * (rows - 1)}\n")
        f.writelines(f"1 {j + 1} 1.5\n" for j in hub)
        for i in range(1, rows):
            f.writelines(f"{i + 1} {j + 1} 1.5\n" for j in sorted(rng.sample(range(columns), 3)))


def config_path(root, name):
    own = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".json")
    return own if os.path.exists(own) else os.path.join(root, "bench", "configs", name + ".json")


def main():
    args = sys.argv[1:]
    columns = 20_000_000
    if "--columns" in args:
        at = args.index("--columns")
        columns = int(args[at + 1])
        del args[at:at + 2]
    spgen = args[0]
    rounds = int(args[1]) if len(args) > 1 else 3
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as tmp:
        matrix = os.path.join(tmp, "hub.mtx")
        write_matrix(matrix, columns)
        for threads in (2, 1):
            times = {c: [] for c in CONFIGS}
            for _ in range(rounds):
                for c in CONFIGS:
                    out = subprocess.run([spgen, "run", os.path.join(root, "specs", "spmv.spg"), "--config",
                                          config_path(root, c), "--input", "A=" + matrix,
                                          "--input", "x=random", "--repeat", "200", "--threads", str(threads)],
                                         capture_output=True, text=True, check=True).stdout
                    times[c].append(float(re.search(r"time_ms median=([0-9.]+)", out).group(1)))
            for c in CONFIGS:
                print(f"{threads} threads  {c:28s} {statistics.median(times[c]):.4f} ms  (rounds: "
                      + " ".join(f"{t:.4f}" for t in times[c]) + ")")


if __name__ == "__main__":
    main()
