#!/usr/bin/env python3
"""Sums doctest's per-program summaries (the Python tests print the same line) from meson's JSON test log into "N passed, N failed"."""
import json
import re
import sys

SUMMARY = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")


def main(path: str) -> int:
    passed = failed = skipped = 0
    with open(path, encoding="utf-8") as log:
        for line in log:
            if not line.strip():
                continue
            test = json.loads(line)
            match = SUMMARY.search(test.get("stdout") or "")
            if match and test.get("result") in ("OK", "FAIL"):
                passed += int(match.group(2))
                failed += int(match.group(3))
                skipped += int(match.group(4))
                if test.get("result") == "FAIL" and int(match.group(3)) == 0:
                    failed += 1  # failed outside any test case (e.g. a crash after the summary)
            else:
                print(f"{test.get('name')}: {test.get('result')} without a doctest summary", file=sys.stderr)
                failed += 1
    if skipped:  # (on a line of its own: the last line is the plain "N passed, N failed")
        print(f"{skipped} skipped")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
