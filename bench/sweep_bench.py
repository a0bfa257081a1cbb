#!/usr/bin/env python3
"""Two variants of a stage notebook, side by side: `kiln sweep --parallel 2` (both at
once, the cores split between them: cores/2 threads each, each pinned to its own
cores) against the same two variants one after the other, each with all the cores
(`--parallel 1`). Same notebook, same values, same machine; the whole sweep is timed
(process starts, data set loading and the summary included).

  python3 bench/sweep_bench.py [BUILD_DIR] [REPEATS] [SUBSET] [EPOCHS]

Prints the median wall time of each and the ratio parallel / one-after-the-other
(the goal: <= 1.05). Fashion-MNIST (Debian's dataset-fashion-mnist), a conv net of
the tutorial's shape on SUBSET training images (default 8192), EPOCHS epochs (1).
On a GPU machine add --devices cuda:0,1 by hand to compare per-device images/s."""
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
REPEATS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
SUBSET = int(sys.argv[3]) if len(sys.argv) > 3 else 8192
EPOCHS = int(sys.argv[4]) if len(sys.argv) > 4 else 1
KILN = os.path.join(BUILD, "kernel", "kiln")


def cell(src, tags=()):
    return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": src,
            "outputs": [], "execution_count": None}


def notebook(path):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        cell(f"lr = 0.001\nepochs = {EPOCHS}", ["parameters"]),
        cell(f"%dataset fashion-mnist --subset {SUBSET} --val 256 --samples 0"),
        cell("%%model net\nconv2d 16 3\nrelu\nmaxpool 2\nconv2d 32 3\nrelu\nmaxpool 2\n"
             "flatten\ndense 64\nrelu\ndense 10"),
        cell("%train net --batch 64 --epochs $epochs --lr $lr"),
    ]}
    with open(path, "w") as f:
        json.dump(nb, f)


def timed(d, nb, parallel, rep):
    out = os.path.join(d, f"p{parallel}-{rep}")
    t0 = time.perf_counter()
    p = subprocess.run([KILN, "sweep", nb, "-o", out, "-p", "lr", "0.001,0.003",
                        "--devices", "cpu", "--parallel", str(parallel)],
                       capture_output=True, text=True)
    t = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("failed:\n" + p.stderr[-3000:])
    with open(os.path.join(out, "summary.csv")) as f:
        ips = [float(r["images_per_s"]) for r in csv.DictReader(f)]
    return t, ips


def main():
    ncpu = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as d:
        os.environ["KILN_RESULTS"] = os.path.join(d, "results.sqlite")
        nb = os.path.join(d, "stage.ipynb")
        notebook(nb)
        par, seq = [], []
        for rep in range(REPEATS):  # alternated, so drift in the machine's load hits both
            seq.append(timed(d, nb, 1, rep))
            par.append(timed(d, nb, 2, rep))
        ts, tp = statistics.median(t for t, _ in seq), statistics.median(t for t, _ in par)
        print(f"{ncpu} cores, 2 variants, {SUBSET} images x {EPOCHS} epoch(s), {REPEATS} repeats")
        print(f"one after the other ({ncpu} threads each): {ts:.2f} s  "
              f"(images/s per variant {', '.join('%.0f' % x for x in seq[-1][1])})")
        print(f"--parallel 2 ({max(ncpu // 2, 1)} thread(s) each):     {tp:.2f} s  "
              f"(images/s per variant {', '.join('%.0f' % x for x in par[-1][1])})")
        print(f"ratio parallel / sequential: {tp / ts:.3f}")


if __name__ == "__main__":
    main()
