#!/usr/bin/env python3
"""Writes the frozen sample of random configs that the corpus records (tests/corpus/random/).

    tests/corpus/make_random_configs.py [--seed N] [--per-spec N]

For each spec of specs/ and tests/e2e/cases/, a few configs of random formats (a shorthand per
sparse tensor, by its order; the output's left out or "auto" at times), random schedules (a few
ops on the spec's own index variables, or "auto") and, at times, the cuda target. Many are
refused: their exit status and error text are recorded too, which is the point: a refactor of
the lowering must keep which configs lower and how each refusal reads. The sample is frozen:
the files are committed, and this script (with its default seed) is how they were made; rerun it
only to replace the sample on purpose, then regenerate the manifest (docs/testing.md).
"""
import argparse
import json
import pathlib
import random
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/corpus/random"
FORMATS = {1: ["dense", "sv"],
           2: ["dense", "csr", "csc", "dcsr", "dcsc", "coo", "ell", "ragged", "bsr"],
           3: ["dense", "csf", "coo"]}


def accesses(text):
    """[(tensor, [index vars])] in order of appearance, the output first."""
    body = "\n".join(line.split("#")[0] for line in text.splitlines())
    return [(m.group(1), [v for v in m.group(2).split(",") if v]) for m in re.finditer(r"(\w+)\(([\w,]*)\)", body)]


def tensor_entry(rng, order):
    name = rng.choice(FORMATS[min(order, 3)])
    entry = {"format": name}
    if name == "ell":
        entry["width"] = rng.choice([2, 5])
    if name == "bsr":
        entry["block"] = rng.choice([[2, 2], [2, 1], [1, 3]])
    return entry


def schedule(rng, variables, output_vars, cuda):
    if rng.random() < 0.15:
        return "auto"
    ops = []
    # (Half have no ops: the formats alone decide whether and how the kernel lowers.)
    for _ in range(0 if rng.random() < 0.5 else rng.randint(1, 2)):
        v = rng.choice(variables)
        kind = rng.choice(["parallel", "vectorize", "split", "reorder", "unroll"] if not cuda else ["split", "bind", "reorder"])
        if kind == "parallel":
            ops.append({"op": "parallel", "var": rng.choice(output_vars or variables)})
        elif kind == "vectorize":
            ops.append({"op": "vectorize", "var": v})
        elif kind == "unroll":
            ops.append({"op": "unroll", "var": v, "factor": rng.choice([2, 4])})
        elif kind == "split":
            ops.append({"op": "split", "var": v, "factor": rng.choice([4, 32]), "into": [v + "0", v + "1"]})
        elif kind == "reorder":
            order = list(variables)
            rng.shuffle(order)
            ops.append({"op": "reorder", "order": order})
        else:
            ops.append({"op": "bind", "var": v, "to": rng.choice(["blockIdx.x", "threadIdx.x", "warp"])})
    return ops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--per-spec", type=int, default=4)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.json"):
        old.unlink()
    specs = sorted(p for d in ("specs", "tests/e2e/cases") for p in (ROOT / d).glob("*.spg"))
    written = 0
    for spec in specs:
        found = accesses(spec.read_text())
        if not found:
            continue
        output, output_vars = found[0]
        orders = {}
        variables = []
        for tensor, indices in found:
            orders.setdefault(tensor, len(indices))
            variables += [v for v in indices if v not in variables]
        for n in range(args.per_spec):
            cuda = rng.random() < 0.2
            tensors = {}
            for tensor, order in orders.items():
                if order == 0:
                    continue
                if tensor == output and rng.random() < 0.3:
                    if rng.random() < 0.5:
                        tensors[tensor] = {"format": "auto"}
                    continue
                tensors[tensor] = tensor_entry(rng, order)
            name = f"{spec.stem}_r{n}"
            config = {"name": name}
            if cuda:
                config["target"] = "cuda"
            config["tensors"] = tensors
            config["schedule"] = schedule(rng, variables, output_vars, cuda)
            (OUT / f"{name}.json").write_text(json.dumps(config, indent=2) + "\n")
            written += 1
    print(f"wrote {written} configs to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
