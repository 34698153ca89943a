#!/usr/bin/env python3
"""Plots a `spgen tune --trials FILE.csv` run as a PNG: time per candidate against elapsed
seconds, auto's measurements in red, other candidates in grey, the confirmation rounds in blue,
and the best time so far as a green line. Standard library only (zlib for the PNG).

    python3 bench/plot_tuning.py trials.csv tuning.png [--title TEXT]
"""
import argparse
import csv
import math
import struct
import sys
import zlib

W, H = 800, 480
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 30, 50

# A 3x5 bitmap font: enough for axis numbers and short labels.
GLYPHS = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001010010010",
    "8": "111101111101111", "9": "111101111001111", ".": "000000000000010", "-": "000000111000000",
    " ": "000000000000000", "m": "000111111101101", "s": "000011010001110", "x": "000101010101000",
    "a": "000011101101011", "u": "000101101101111", "t": "010111010010011", "o": "000111101101111",
    "b": "100100111101111", "e": "000111111100111", "l": "110010010010111", "i": "010000010010010",
    "p": "000111101111100", "d": "001001111101111", "c": "000111100100111", "n": "000110101101101",
    "r": "000111100100100", "f": "011010111010010", "h": "100100111101101", "g": "000111101111001",
    "k": "100101110101101", "v": "000101101101010", "y": "000101111001111", "w": "000101101111111",
    "z": "000111010100111", ",": "000000000010100", ":": "000010000010000", "=": "000111000111000",
    "(": "010100100100010", ")": "010001001001010", "/": "001001010100100", "+": "000010111010000",
}


class Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray([255] * (w * h * 3))

    def set(self, x, y, color):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = (y * self.w + x) * 3
            self.px[i:i + 3] = bytes(color)

    def line(self, x0, y0, x1, y1, color):
        steps = max(abs(x1 - x0), abs(y1 - y0), 1)
        for s in range(steps + 1):
            self.set(round(x0 + (x1 - x0) * s / steps), round(y0 + (y1 - y0) * s / steps), color)

    def dot(self, x, y, color, r=3):
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                if dx * dx + dy * dy <= r * r:
                    self.set(x + dx, y + dy, color)

    def text(self, x, y, s, color=(0, 0, 0), scale=2):
        for ch in s.lower():
            g = GLYPHS.get(ch, GLYPHS[" "])
            for r in range(5):
                for c in range(3):
                    if g[r * 3 + c] == "1":
                        for sy in range(scale):
                            for sx in range(scale):
                                self.set(x + c * scale + sx, y + r * scale + sy, color)
            x += 4 * scale

    def png(self):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)

        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trials")
    ap.add_argument("png")
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    rows = [r for r in csv.DictReader(open(args.trials)) if r["ok"] == "1"]
    if not rows:
        sys.exit(f"plot_tuning: {args.trials}: no successful trial to plot")
    xs = [float(r["elapsed_s"]) for r in rows]
    ys = [float(r["median_ms"]) for r in rows]
    x_max = max(xs) * 1.05 or 1
    lo, hi = math.log10(min(ys)), math.log10(max(ys))
    if hi - lo < 0.1:
        lo, hi = lo - 0.05, hi + 0.05
    pad = (hi - lo) * 0.08
    lo, hi = lo - pad, hi + pad
    c = Canvas(W, H)
    px = lambda x: round(LEFT + x / x_max * (W - LEFT - RIGHT))
    py = lambda y: round(H - BOTTOM - (math.log10(y) - lo) / (hi - lo) * (H - TOP - BOTTOM))
    c.line(LEFT, TOP, LEFT, H - BOTTOM, (0, 0, 0))
    c.line(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, (0, 0, 0))
    # Time ticks: a few values spread over the log range.
    for k in range(5):
        v = 10 ** (lo + (hi - lo) * (k + 0.5) / 5)
        y = py(v)
        c.line(LEFT - 4, y, LEFT, y, (0, 0, 0))
        c.text(2, y - 5, f"{v:.3g}")
    for k in range(6):
        x = x_max * k / 5
        c.line(px(x), H - BOTTOM, px(x), H - BOTTOM + 4, (0, 0, 0))
        c.text(px(x) - 8, H - BOTTOM + 10, f"{x:.0f}")
    c.text(W // 2 - 40, H - 18, "elapsed s")
    c.text(4, 8, "ms (log)  " + args.title)
    best = None
    prev = None
    for r, x, y in zip(rows, xs, ys):
        if r["round"] != "-1":
            best = y if best is None else min(best, y)
            if prev:
                c.line(prev[0], prev[1], px(x), prev[1], (0, 160, 0))
                c.line(px(x), prev[1], px(x), py(best), (0, 160, 0))
            prev = (px(x), py(best))
        color = (220, 0, 0) if r["schedule"] == "auto" else (0, 0, 220) if r["round"] == "-1" else (120, 120, 120)
        c.dot(px(x), py(y), color)
    c.text(W - 300, TOP, "red auto  grey candidate", (0, 0, 0))
    c.text(W - 300, TOP + 14, "blue confirm  green best", (0, 0, 0))
    with open(args.png, "wb") as f:
        f.write(c.png())


if __name__ == "__main__":
    main()
