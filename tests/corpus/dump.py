#!/usr/bin/env python3
"""Writes what spgen makes of every config in the repository, for byte-for-byte comparisons.

    tests/corpus/dump.py SPGEN OUT_DIR                 # then: diff -r OUT_BEFORE OUT_AFTER
    tests/corpus/dump.py SPGEN --write-manifest FILE   # record the SHA-256 of every output
    tests/corpus/dump.py SPGEN --check FILE            # exit 1, naming each output that differs

Each config of specs/, tests/e2e/cases/, bench/configs/ and tests/corpus/random/ (a frozen sample
of random configs, many of them refused: make_random_configs.py) is paired with its spec as the tests
pair them (the longest spec stem that prefixes the config's name, followed by '_'), and for each
of --emit stage1, stage2, header and source the output is written to OUT_DIR/NAME.EMIT; a refused
config writes its exit status and stderr to NAME.error instead. spgen runs from the repository
root on relative paths, so the outputs do not depend on where the checkout is. A refactor must
leave every output unchanged: the manifest (tests/corpus/manifest.txt, checked by the `corpus`
test) holds one line per output, `SHA-256  NAME`. A deliberate change of output regenerates it
(docs/testing.md).
"""
import hashlib
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPEC_DIRS = [ROOT / "specs", ROOT / "tests/e2e/cases"]
CONFIG_DIRS = [ROOT / "specs", ROOT / "tests/e2e/cases", ROOT / "bench/configs", ROOT / "tests/corpus/random"]
EMITS = ["stage1", "stage2", "header", "source"]


def pairs():
    specs = {p.stem: p for d in SPEC_DIRS for p in d.glob("*.spg")}
    for d in CONFIG_DIRS:
        for config in sorted(d.glob("*.json")):
            stems = [s for s in specs if config.stem.startswith(s + "_")]
            if stems:
                yield f"{d.name}__{config.stem}", specs[max(stems, key=len)], config


def outputs(spgen, item):
    """[(file name, bytes)] for one config."""
    name, spec, config = item
    result = []
    for emit in EMITS:
        r = subprocess.run([spgen, "gen", str(spec.relative_to(ROOT)), "--config", str(config.relative_to(ROOT)),
                            "--emit", emit], capture_output=True, cwd=ROOT)
        if r.returncode != 0:
            return [(f"{name}.error", f"exit {r.returncode}\n".encode() + r.stderr)]
        result.append((f"{name}.{emit}", r.stdout))
    return result


def all_outputs(spgen):
    items = list(pairs())
    with ThreadPoolExecutor(max_workers=4) as pool:
        return sorted(f for files in pool.map(lambda item: outputs(spgen, item), items) for f in files), len(items)


def manifest_lines(files):
    return [f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in files]


def main():
    args = sys.argv[1:]
    if len(args) not in (2, 3) or (len(args) == 3 and args[1] not in ("--write-manifest", "--check")):
        sys.exit(__doc__)
    spgen = str(pathlib.Path(args[0]).resolve())
    files, configs = all_outputs(spgen)
    if len(args) == 2:
        out = pathlib.Path(args[1])
        out.mkdir(parents=True, exist_ok=True)
        for name, data in files:
            (out / name).write_bytes(data)
        print(f"{configs} configs written to {out}")
        return
    manifest = pathlib.Path(args[2])
    lines = manifest_lines(files)
    if args[1] == "--write-manifest":
        manifest.write_text("".join(lines))
        print(f"{len(lines)} outputs of {configs} configs recorded in {manifest}")
        return
    want = {line.split("  ", 1)[1].rstrip("\n"): line.split("  ", 1)[0] for line in manifest.read_text().splitlines(True)}
    got = {line.split("  ", 1)[1].rstrip("\n"): line.split("  ", 1)[0] for line in lines}
    changed = sorted(n for n in got if n in want and got[n] != want[n])
    added = sorted(n for n in got if n not in want)
    removed = sorted(n for n in want if n not in got)
    for label, names in (("changed", changed), ("new", added), ("gone", removed)):
        for n in names:
            print(f"{label}: {n}")
    if changed or added or removed:
        print(f"corpus: {len(changed)} changed, {len(added)} new, {len(removed)} gone of {len(want)} outputs; if meant, "
              f"regenerate: tests/corpus/dump.py SPGEN --write-manifest tests/corpus/manifest.txt (docs/testing.md)")
        sys.exit(1)
    print(f"corpus: all {len(want)} outputs of {configs} configs unchanged")


if __name__ == "__main__":
    main()
