#!/usr/bin/env python3
"""Generates Kiln's kernelspec logos (logo-32x32.png, logo-64x64.png) with zlib and
struct only: a kiln's dark arch with an orange-yellow flame. Run once; the PNGs are
committed. Usage: python3 make_logos.py [OUTDIR]"""
import math
import os
import struct
import sys
import zlib


def png(path, w, h, pixel):
    raw = bytearray()
    for y in range(h):
        raw.append(0)  # filter: none
        for x in range(w):
            raw.extend(pixel(x / (w - 1), y / (h - 1)))

    def chunk(tag, data):
        c = struct.pack(">I", len(data)) + tag + data
        return c + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)


def kiln(u, v):
    # arch: a rounded dome over a rectangle, brick red on transparent
    cx, r = 0.5, 0.42
    inside = (v >= 0.45 and 0.08 <= u <= 0.92 and v <= 0.95) or \
             (v < 0.45 and math.hypot(u - cx, (v - 0.45) * 1.1) <= r)
    if not inside:
        return (0, 0, 0, 0)
    # the opening, where the flame burns
    opening = 0.28 <= u <= 0.72 and 0.5 <= v <= 0.95 or \
        (v < 0.5 and math.hypot(u - cx, v - 0.5) <= 0.22)
    if not opening:
        shade = 150 + int(40 * (1 - v))
        return (shade, 60, 40, 255)
    # flame: a teardrop whose colour goes from yellow (core) to orange
    fx, fy = (u - cx) / 0.2, (v - 0.95) / 0.55
    d = fx * fx + fy * fy * (0.6 + 0.4 * (1 + fy))
    if d <= 1.0:
        t = min(1.0, d)
        return (255, int(220 - 120 * t), int(80 - 80 * t), 255)
    return (40, 20, 20, 255)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for n in (32, 64):
        png(os.path.join(out, "logo-%dx%d.png" % (n, n)), n, n, kiln)
