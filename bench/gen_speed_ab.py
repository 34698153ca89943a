#!/usr/bin/env python3
"""Generation speed of two builds, A then B, in alternating rounds (bench/README.md).

usage: gen_speed_ab.py A_DIR B_DIR ROOT [ROUNDS] [REPS]

A_DIR and B_DIR each hold a build's bench_gen_speed and spgen; ROOT is the source tree whose
spec/config pairs both time (the older build's, so that both accept every config). Each round
runs both (the order alternating), and prints the geometric mean of B's per-pair compile()
median over A's; the last line gives every round's and their mean. This machine is shared:
only the rounds' spread says how much one round's figure means.
"""
import math
import statistics
import subprocess
import sys


def run(build, root, reps):
    out = subprocess.run([f"{build}/bench_gen_speed", "--reps", str(reps), "--process-runs", "1", "--spgen", f"{build}/spgen",
                          "--root", root], capture_output=True, text=True, check=True).stdout
    medians = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 7 and not line.startswith("#") and fields[0] != "pair":
            try:
                medians[fields[0]] = float(fields[1])
            except ValueError:
                pass
    return medians


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    a, b, root = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 6
    reps = int(sys.argv[5]) if len(sys.argv) > 5 else 200
    means = []
    for r in range(rounds):
        order = [a, b] if r % 2 == 0 else [b, a]
        res = {build: run(build, root, reps) for build in order}
        pairs = [p for p in res[a] if p in res[b] and res[a][p] > 0 and res[b][p] > 0]
        if not pairs:
            sys.exit("gen_speed_ab: no pair timed by both builds")
        g = math.exp(sum(math.log(res[b][p] / res[a][p]) for p in pairs) / len(pairs))
        print(f"round {r + 1} ({'A' if order[0] == a else 'B'} first): {len(pairs)} pairs; B/A geomean {g:.3f}; "
              f"median of medians A {statistics.median(res[a][p] for p in pairs):.1f} us, "
              f"B {statistics.median(res[b][p] for p in pairs):.1f} us", flush=True)
        means.append(g)
    print("B/A per round:", " ".join(f"{g:.3f}" for g in means), f"mean {sum(means) / len(means):.3f}")


if __name__ == "__main__":
    main()
