#!/usr/bin/python3
"""dataset_load.py - time loading + normalising the real Fashion-MNIST (train and
test, from /usr/share/datasets/fashion-mnist) with Kiln's loader (the load, then
every image read as normalised floats: Kiln keeps the bytes and normalises as batches
are read, so the same work is timed) and with the usual Python path (gzip + numpy, as torchvision's read_image_file does, then
per-channel (x/255 - mean)/std with the train statistics), in the same run.

    /usr/bin/python3 bench/dataset_load.py BUILD/tests/dataset/dataset_tool [REPEAT]

Prints best-of-REPEAT milliseconds for each and the ratio numpy/kiln.
"""
import gzip
import subprocess
import sys
import time

import numpy as np

DIR = "/usr/share/datasets/fashion-mnist/"


def numpy_load():
    def read(name, off):
        with gzip.open(DIR + name, "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=off)
    tr = read("train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    trl = read("train-labels-idx1-ubyte.gz", 8)
    te = read("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    tel = read("t10k-labels-idx1-ubyte.gz", 8)
    x = tr.astype(np.float32) / 255.0
    mean, std = x.mean(), x.std()
    x = (x - mean) / std
    y = (te.astype(np.float32) / 255.0 - mean) / std
    return x, trl, y, tel


def main():
    tool = sys.argv[1]
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    out = subprocess.run([tool, "load", "fashion-mnist", "--repeat", str(repeat), "--floats", "1"],
                         capture_output=True, text=True, check=True).stdout
    kiln_ms = float(next(l.split()[1] for l in out.splitlines() if l.startswith("best_ms")))
    best = 1e30
    for _ in range(repeat):
        t0 = time.perf_counter()
        numpy_load()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    print("fashion-mnist load+normalise (70000 images), best of %d" % repeat)
    print("  kiln  %8.1f ms" % kiln_ms)
    print("  numpy %8.1f ms" % best)
    print("  ratio numpy/kiln %.2f" % (best / kiln_ms))


if __name__ == "__main__":
    main()
