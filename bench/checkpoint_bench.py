#!/usr/bin/env python3
"""Checkpoint save/load: Kiln (bench/checkpoint_bench.c) side by side with the
safetensors package on the same tensors (1.2M-parameter CNN + Adam m and v).

    python3 bench/checkpoint_bench.py [--bin build/bench/checkpoint_bench] [--dir D] [--reps N]

Kiln's save is atomic (tmp file, fsync, rename, directory fsync) and its load
validates the header and the CRC-32 of all data before copying tensors out;
safetensors' save_file does neither, so it is also timed with an fsync added
("+fsync") for a like-for-like durability figure. Medians of N runs.
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np
from safetensors.numpy import load_file, save_file

LAYERS = [("conv1.weight", (32, 1, 3, 3)), ("conv1.bias", (32,)),
          ("conv2.weight", (64, 32, 3, 3)), ("conv2.bias", (64,)),
          ("fc1.weight", (128, 9216)), ("fc1.bias", (128,)),
          ("fc2.weight", (10, 128)), ("fc2.bias", (10,))]


def tensors():
    rng = np.random.default_rng(1)
    out = {}
    for role in ("model.", "optim.m.", "optim.v."):
        for name, shape in LAYERS:
            out[role + name] = rng.uniform(-1, 1, size=shape).astype(np.float32)
    return out


def timed(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bench/checkpoint_bench")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--reps", type=int, default=9)
    a = ap.parse_args()

    out = subprocess.run([a.bin, a.dir, str(a.reps)], capture_output=True, text=True,
                         check=True).stdout
    kiln = {k: float(v) for k, v in (line.split() for line in out.splitlines())}

    t = tensors()
    path = os.path.join(a.dir, "py-bench-%d.safetensors" % os.getpid())
    meta = {"step": "4690", "epoch": "5", "optimizer": "adam"}

    def save_fsync():
        save_file(t, path, metadata=meta)
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        dfd = os.open(a.dir, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)

    py_save = timed(lambda: save_file(t, path, metadata=meta), a.reps)
    py_save_sync = timed(save_fsync, a.reps)
    py_load = timed(lambda: load_file(path), a.reps)
    # load_file maps the file and may hand out views without reading them; copying
    # every array makes the peer read all the bytes, as Kiln's load does.
    py_load_read = timed(lambda: [v.copy() for v in load_file(path).values()], a.reps)
    os.unlink(path)

    mb = kiln["state_bytes"] / 1e6
    print(f"model: {int(kiln['params']):,} parameters, + Adam m, v = {mb:.1f} MB of tensors, "
          f"file {kiln['file_bytes'] / 1e6:.2f} MB, dir {a.dir}, median of {a.reps}")
    rows = [("save (Kiln atomic+fsync vs safetensors)", kiln["kiln_save_s"], py_save),
            ("save (Kiln vs safetensors +fsync)", kiln["kiln_save_s"], py_save_sync),
            ("load (Kiln validate+copy vs load_file)", kiln["kiln_load_s"], py_load),
            ("load (Kiln vs load_file + copy all)", kiln["kiln_load_s"], py_load_read)]
    print(f"{'':42s} {'kiln ms':>9s} {'peer ms':>9s} {'kiln/peer':>9s}")
    for name, k, p in rows:
        print(f"{name:42s} {k * 1e3:9.2f} {p * 1e3:9.2f} {k / p:9.2f}")
    print(f"{'Kiln header-only open':42s} {kiln['kiln_header_only_s'] * 1e3:9.3f}")
    print(f"{'CRC-32 of all tensor data (zlib)':42s} {kiln['crc32_s'] * 1e3:9.2f}"
          f"   ({mb / kiln['crc32_s'] / 1e3:.2f} GB/s)")


if __name__ == "__main__":
    main()
