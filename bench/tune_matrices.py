#!/usr/bin/env python3
"""Runs `spgen tune` on every matrix of ../shared/data for SpMV, SpMM and SDDMM, and prints what
tuning gained over `auto` (both measured by spgen tune in the same run, interleaved, medians).

    python3 bench/tune_matrices.py [--spgen build/src/spgen] [--budget 60s] [--threads 2]
                                   [--ops spmv,spmm,sddmm] [--width 32] [--out bench/tune-out]
                                   [--formats]

With --formats the matrix's format is left to spgen (`"format": "auto"` in a copy of the base
config): tune searches its format first (csr, csc, ell, bsr, hyb, ...), then the schedule.

Each run's tuned config, trials CSV and stderr go to --out/OP-MATRIX.*; a table (markdown) is
printed at the end. The database is --out/tune.jsonl, fresh for each invocation unless --keep-db.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# op -> (spec, base config, inputs besides the matrix, the matrix's name in the spec, dims)
OPS = {
    "spmv": ("specs/spmv.spg", "tests/e2e/cases/spmv_auto_csr.json", ["x=random"], "A", {}),
    "spmm": ("specs/spmm.spg", "specs/spmm_auto.json", ["B=random"], "A", {"k": None}),
    "sddmm": ("specs/sddmm.spg", "tests/e2e/cases/sddmm_auto_csr.json", ["A=random", "B=random"], "X", {"k": None}),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spgen", default=os.path.join(ROOT, "build", "src", "spgen"))
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--budget", default="60s")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--ops", default="spmv,spmm,sddmm")
    ap.add_argument("--width", default="32", help="N of SpMM, K of SDDMM")
    ap.add_argument("--matrices", default="", help="comma-separated stems (default: every .mtx)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "tune-out"))
    ap.add_argument("--keep-db", action="store_true")
    ap.add_argument("--formats", action="store_true", help="leave the matrix's format to spgen tune")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        sys.exit(f"tune_matrices: no data directory {args.data}")
    os.makedirs(args.out, exist_ok=True)
    db = os.path.join(args.out, "tune.jsonl")
    if not args.keep_db and os.path.exists(db):
        os.remove(db)
    matrices = sorted(f[:-4] for f in os.listdir(args.data) if f.endswith(".mtx"))
    if args.matrices:
        matrices = [m for m in matrices if m in args.matrices.split(",")]
    rows = []
    for op in args.ops.split(","):
        spec, config, others, name, dims = OPS[op]
        for m in matrices:
            stem = f"{op}-{m}"
            base = os.path.join(ROOT, config)
            if args.formats:
                with open(base) as f:
                    cfg = json.load(f)
                cfg.setdefault("tensors", {})[name] = {"format": "auto"}
                base = os.path.join(args.out, f"{op}-formats-base.json")
                with open(base, "w") as f:
                    json.dump(cfg, f)
            cmd = [args.spgen, "tune", os.path.join(ROOT, spec), "-c", base,
                   "--input", f"{name}={os.path.join(args.data, m + '.mtx')}", "--budget", args.budget,
                   "--threads", args.threads, "--db", db, "--trials", os.path.join(args.out, stem + ".csv"),
                   "-o", os.path.join(args.out, stem + ".json")]
            for other in others:
                cmd += ["--input", other]
            for var in dims:
                cmd += ["--dim", f"{var}={args.width}"]
            start = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True)
            with open(os.path.join(args.out, stem + ".log"), "w") as f:
                f.write(r.stderr)
            if r.returncode != 0:
                print(f"{stem}: failed: {r.stderr.strip()}", file=sys.stderr)
                continue
            t = json.load(open(os.path.join(args.out, stem + ".json")))["tuned"]
            rows.append((op, m, t["auto_ms"], t["tuned_ms"], t["speedup"], t["winner"], t["trials"], time.time() - start))
            print(f"{stem}: auto {t['auto_ms']:.4f} ms, tuned {t['tuned_ms']:.4f} ms, {t['speedup']:.2f}x: {t['winner']}",
                  file=sys.stderr)
    print(f"| op | matrix | auto ms | tuned ms | tuned / auto | winner | candidates | seconds |")
    print("|---|---|---:|---:|---:|---|---:|---:|")
    for op, m, a, b, s, w, n, secs in rows:
        print(f"| {op} | {m} | {a:.4f} | {b:.4f} | {s:.2f}x | {w} | {n} | {secs:.0f} |")
    for op in args.ops.split(","):
        gains = [row[4] for row in rows if row[0] == op]
        if gains:
            g = 1.0
            for x in gains:
                g *= x
            print(f"\n{op}: geomean tuned / auto {g ** (1 / len(gains)):.2f}x over {len(gains)} matrices", end="")
    print()


if __name__ == "__main__":
    main()
