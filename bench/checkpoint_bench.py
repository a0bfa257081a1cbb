#!/usr/bin/env python3
"""Checkpoint save/load: Kiln (bench/checkpoint_bench.c) side by side with the
safetensors package on the same tensors (1.2M-parameter CNN + Adam m and v).

    python3 bench/checkpoint_bench.py [--bin build/bench/checkpoint_bench] [--dir D] [--reps N]
                                      [--before OLD_BIN]

Kiln's save is atomic (tmp file, fsync, rename, directory fsync) and its load
validates the header and the checksum of all data (XXH3-64 since format v2) before
copying tensors out; safetensors' save_file does neither, so it is also timed with an
fsync added ("+fsync") for a like-for-like durability figure. Every save, Kiln's and
the peer's, writes a new file (the old one removed first, untimed), as a run's
checkpoints are new files. The machine may be busy: Kiln and the peer run in
alternating rounds and each figure is the median over all rounds.
--before runs an older build's checkpoint_bench in the same run (a before/after row).
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


def timed(fn, reps, before=None):
    times = []
    for _ in range(reps):
        if before:
            before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bench/checkpoint_bench")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--before", help="an older checkpoint_bench binary to compare")

    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()

    def kiln_run(binary):
        out = subprocess.run([binary, a.dir, str(a.reps)], capture_output=True, text=True,
                             check=True).stdout
        return {k: float(v) for k, v in (line.split() for line in out.splitlines())}

    def median_of(runs):
        return {k: statistics.median(r[k] for r in runs) for k in runs[0]}

    t = tensors()
    path = os.path.join(a.dir, "py-bench-%d.safetensors" % os.getpid())
    meta = {"step": "4690", "epoch": "5", "optimizer": "adam"}

    def fresh():
        if os.path.exists(path):
            os.unlink(path)

    def save_plain():
        save_file(t, path, metadata=meta)

    def save_fsync():
        save_file(t, path, metadata=meta)
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        dfd = os.open(a.dir, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)

    runs, before_runs, peer_runs = [], [], []
    for _ in range(a.rounds):
        if a.before:
            before_runs.append(kiln_run(a.before))
        runs.append(kiln_run(a.bin))
        peer_runs.append({
            "save": timed(save_plain, a.reps, fresh),
            "save_sync": timed(save_fsync, a.reps, fresh),
            "load": timed(lambda: load_file(path), a.reps),
            # load_file maps the file and may hand out views without reading them;
            # copying every array makes the peer read all the bytes, as Kiln's does.
            "load_read": timed(lambda: [v.copy() for v in load_file(path).values()],
                               a.reps)})
    os.unlink(path)
    kiln, peer = median_of(runs), median_of(peer_runs)
    before = median_of(before_runs) if before_runs else None
    py_save, py_save_sync = peer["save"], peer["save_sync"]
    py_load, py_load_read = peer["load"], peer["load_read"]

    mb = kiln["state_bytes"] / 1e6
    print(f"model: {int(kiln['params']):,} parameters, + Adam m, v = {mb:.1f} MB of tensors, "
          f"file {kiln['file_bytes'] / 1e6:.2f} MB, dir {a.dir}, "
          f"median of {a.rounds} rounds x {a.reps}")
    rows = [("save (Kiln atomic+fsync vs safetensors)", kiln["kiln_save_s"], py_save),
            ("save (Kiln vs safetensors +fsync)", kiln["kiln_save_s"], py_save_sync),
            ("load (Kiln validate+copy vs load_file)", kiln["kiln_load_s"], py_load),
            ("load (Kiln vs load_file + copy all)", kiln["kiln_load_s"], py_load_read)]
    print(f"{'':42s} {'kiln ms':>9s} {'peer ms':>9s} {'kiln/peer':>9s}")
    for name, k, p in rows:
        print(f"{name:42s} {k * 1e3:9.2f} {p * 1e3:9.2f} {k / p:9.2f}")
    print(f"{'Kiln header-only open':42s} {kiln['kiln_header_only_s'] * 1e3:9.3f}")
    print(f"{'CRC-32 of all tensor data (zlib, v1)':42s} {kiln['crc32_s'] * 1e3:9.2f}"
          f"   ({mb / kiln['crc32_s'] / 1e3:.2f} GB/s)")
    if "xxh3_s" in kiln:
        print(f"{'XXH3-64 of all tensor data (v2)':42s} {kiln['xxh3_s'] * 1e3:9.2f}"
              f"   ({mb / kiln['xxh3_s'] / 1e3:.2f} GB/s)")
    print(f"{'Kiln load: file bytes / (open+validate+copy)':42s} "
          f"{kiln['file_bytes'] / kiln['kiln_load_s'] / 1e9:9.2f} GB/s")
    if before:
        print(f"\nbefore/after (--before {a.before}):")
        print(f"{'':42s} {'before ms':>9s} {'after ms':>9s} {'after/bef':>9s}")
        for key, name in (("kiln_save_s", "Kiln save"), ("kiln_load_s", "Kiln load")):
            print(f"{name:42s} {before[key] * 1e3:9.2f} {kiln[key] * 1e3:9.2f} "
                  f"{kiln[key] / before[key]:9.2f}")


if __name__ == "__main__":
    main()
