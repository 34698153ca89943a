#!/usr/bin/env python3
"""A matrix with one hub row, for SpMV's parallel balances (bench/balance/hub_rows.cpp).

    bench/balance/hub_matrix.py OUT.mtx [--columns N]

100,000 rows; row 0 holds 600,000 random columns, every other row 3 (seeded: the same file each
time). --columns sets the columns' count: 20 M by default, so the hub's entries are spread, each
in a cache line of x of its own; with 1 M they are nearly contiguous, cheaper than a short row's.
"""
import random
import sys


def main():
    args = sys.argv[1:]
    columns = 20_000_000
    if "--columns" in args:
        at = args.index("--columns")
        columns = int(args[at + 1])
        del args[at:at + 2]
    rng = random.Random(7)
    rows = 100000
    hub = sorted(rng.sample(range(columns), 600000))
    with open(args[0], "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{rows} {columns} {len(hub) + 3 * (rows - 1)}\n")
        f.writelines(f"1 {j + 1} 1.5\n" for j in hub)
        for i in range(1, rows):
            f.writelines(f"{i + 1} {j + 1} 1.5\n" for j in sorted(rng.sample(range(columns), 3)))


if __name__ == "__main__":
    main()
