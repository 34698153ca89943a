#!/usr/bin/env python3
"""Writes what spgen makes of every config in the repository, for byte-for-byte comparisons.

    tests/corpus/dump.py SPGEN OUT_DIR          # then: diff -r OUT_BEFORE OUT_AFTER

Each config of specs/, tests/e2e/cases/ and bench/configs/ is paired with its spec as the tests
pair them (the longest spec stem that prefixes the config's name, followed by '_'), and for each
of --emit stage1, stage2, header and source the output is written to OUT_DIR/NAME.EMIT; a refused
config writes its exit status and stderr to OUT_DIR/NAME.error instead. A refactor must leave
every file unchanged.
"""
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPEC_DIRS = [ROOT / "specs", ROOT / "tests/e2e/cases"]
CONFIG_DIRS = [ROOT / "specs", ROOT / "tests/e2e/cases", ROOT / "bench/configs"]
EMITS = ["stage1", "stage2", "header", "source"]


def pairs():
    specs = {p.stem: p for d in SPEC_DIRS for p in d.glob("*.spg")}
    for d in CONFIG_DIRS:
        for config in sorted(d.glob("*.json")):
            stems = [s for s in specs if config.stem.startswith(s + "_")]
            if stems:
                yield f"{d.name}__{config.stem}", specs[max(stems, key=len)], config


def dump(spgen, out, item):
    name, spec, config = item
    for emit in EMITS:
        r = subprocess.run([spgen, "gen", str(spec), "--config", str(config), "--emit", emit],
                           capture_output=True, cwd=ROOT)
        if r.returncode != 0:
            (out / f"{name}.error").write_bytes(f"exit {r.returncode}\n".encode() + r.stderr)
            return
        (out / f"{name}.{emit}").write_bytes(r.stdout)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    spgen, out = sys.argv[1], pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    items = list(pairs())
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda item: dump(spgen, out, item), items))
    print(f"{len(items)} configs written to {out}")


if __name__ == "__main__":
    main()
