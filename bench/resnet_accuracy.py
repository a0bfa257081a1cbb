#!/usr/bin/env python3
"""ResNet-20's test accuracy in fp32 and in bf16 on the CPU after the same epochs, through
`kiln run` (the shipped resnet20 on Fashion-MNIST, 1x28x28, from the Debian package
dataset-fashion-mnist: no download). Not a test: two full trainings take minutes.

    python3 bench/resnet_accuracy.py [--build build] [--epochs 2] [--threads 2]
                                     [--subset N] [--seed 1] [--precisions fp32,bf16]

Each precision trains from the same seed (same initial weights, same batch order) with
Adam at its default rate, then `%evaluate --split test`; prints one line a precision
(accuracy, loss, wall seconds, the load average before it) and the bf16 - fp32
difference in points. With KILN_CPU_AMX=off in the environment bf16 runs its rounded
copies through the fp32 loops instead of the AMX tiles.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def notebook(path, epochs, subset, seed, precision):
    cells = ["%%dataset fashion-mnist --samples 0%s" % (" --subset %d" % subset if subset else ""),
             "%model net resnet20",
             "%%train net --epochs %d --batch 128 --seed %d --device cpu --precision %s"
             % (epochs, seed, precision),
             "%evaluate net --split test"]
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "code", "id": "c%d" % i, "metadata": {}, "source": c,
                     "outputs": [], "execution_count": None} for i, c in enumerate(cells)]}
    with open(path, "w") as f:
        json.dump(nb, f)


def text_of(nb_path):
    with open(nb_path) as f:
        nb = json.load(f)
    out = []
    for o in nb["cells"][-1].get("outputs", []):
        if "text" in o:
            out.append("".join(o["text"]) if isinstance(o["text"], list) else o["text"])
        for k in ("text/plain", "text/html", "text/markdown"):
            if k in o.get("data", {}):
                v = o["data"][k]
                out.append("".join(v) if isinstance(v, list) else v)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--subset", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--kiln", help="the kiln binary (default: BUILD/kernel/kiln)")
    a = ap.parse_args()
    kiln = a.kiln or os.path.join(a.build, "kernel", "kiln")
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for prec in a.precisions.split(","):
            nb, out = os.path.join(tmp, prec + ".ipynb"), os.path.join(tmp, prec + ".out.ipynb")
            notebook(nb, a.epochs, a.subset, a.seed, prec)
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            p = subprocess.run([kiln, "run", nb, "-o", out, "--no-resume"], cwd=tmp, env=env,
                               capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if p.returncode != 0:
                sys.exit("kiln run (%s) failed:\n%s" % (prec, p.stderr[-3000:]))
            text = text_of(out)
            m = re.search(r"accuracy\W*(?:<b>)?([0-9]+(?:\.[0-9]+)?)", text, re.I)
            if not m:
                sys.exit("no accuracy in %evaluate's output:\n" + text[:2000])
            got[prec] = 100.0 * float(m.group(1))
            print("%s accuracy %.2f %% wall %.0f s load %.1f" % (prec, got[prec], wall, load),
                  flush=True)
    if "fp32" in got and "bf16" in got:
        print("bf16 - fp32: %+.2f points" % (got["bf16"] - got["fp32"]))


if __name__ == "__main__":
    main()
