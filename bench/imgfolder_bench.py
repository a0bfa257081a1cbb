#!/usr/bin/env python3
"""Image-folder loading throughput: Kiln's %dataset loader vs torchvision ImageFolder +
DataLoader, on the same generated folder, in one run.

    ninja -C build bench/imgfolder_bench
    /usr/bin/python3 bench/imgfolder_bench.py [--images 2000] [--size 64] [--repeat 3]

The folder: JPEG (quality 90) and PNG photos-like pictures (gradients + noise) of
varied sizes around 320x240, 10 classes, made with Pillow. Both sides produce the same
thing: RGB, shorter side resized to SIZE (bilinear, antialiased), centre crop SIZE x
SIZE, float32 normalised. Kiln: one process per load; "cold" = an empty decode cache
(every file decoded, on every core with OpenMP), "cached" = the second load (the
memory-mapped cache, nothing decoded). torchvision: ImageFolder with Resize(SIZE),
CenterCrop(SIZE), ToTensor, Normalize, through a DataLoader (batch 64, num_workers =
cores) for one full pass; every epoch of torchvision decodes again (it has no cache).
Prints images/s for each and the ratios, and the CPU time each side spent per image
(user + system of every process and thread, the DataLoader's workers included): on a
shared machine images/s follows the load, CPU ms per image much less so. Needs torch and torchvision (Debian:
python3-torch, python3-torchvision).
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image


def make_folder(root, n, seed=0):
    rng = np.random.default_rng(seed)
    for i in range(n):
        c = i % 10
        d = os.path.join(root, "class%d" % c)
        os.makedirs(d, exist_ok=True)
        w, h = int(rng.integers(280, 360)), int(rng.integers(200, 280))
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([x * 255 // w, y * 255 // h, (x + y + 40 * c) % 256], -1)
        arr = np.clip(base + rng.integers(-30, 31, base.shape), 0, 255).astype(np.uint8)
        im = Image.fromarray(arr, "RGB")
        if i % 4 == 3:
            im.save(os.path.join(d, "%05d.png" % i))
        else:
            im.save(os.path.join(d, "%05d.jpg" % i), quality=90)


def cpu_seconds():
    """User + system CPU time of this process and its reaped children so far."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                resource.getrusage(resource.RUSAGE_CHILDREN)))


def kiln_load(tool, folder, size, cache):
    env = dict(os.environ, KILN_IMAGE_CACHE=cache)
    p = subprocess.run([tool, folder, str(size)], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("kiln: " + p.stderr)
    out = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    return int(out["images"]), float(out["seconds"]), int(out["decoded"])


def torchvision_load(folder, size, workers):
    import torch
    from torchvision import datasets, transforms
    tf = transforms.Compose([transforms.Resize(size), transforms.CenterCrop(size),
                             transforms.ToTensor(),
                             transforms.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])])
    t0 = time.perf_counter()
    ds = datasets.ImageFolder(folder, transform=tf)
    dl = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=workers, shuffle=False)
    n = 0
    for x, y in dl:
        n += x.shape[0]
    return n, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--build", default="build")
    ap.add_argument("--dir", help="use (and keep) this folder instead of a temporary one")
    a = ap.parse_args()
    tool = os.path.join(a.build, "bench", "imgfolder_bench")
    cores = os.cpu_count()
    tmp = tempfile.mkdtemp(prefix="kiln-imgbench-")
    folder = a.dir or os.path.join(tmp, "folder")
    if not os.path.isdir(folder) or not os.listdir(folder):
        print("making %d images in %s ..." % (a.images, folder), flush=True)
        make_folder(folder, a.images)
    print("cores %d, size %d, load avg %.2f" % (cores, a.size, os.getloadavg()[0]))
    res = {"kiln cold": [], "kiln cached": [], "torchvision": []}
    cpu = {"kiln cold": [], "torchvision": []}  # ms per image
    for r in range(a.repeat):
        cache = os.path.join(tmp, "cache%d" % r)
        c0 = cpu_seconds()
        n, s, d = kiln_load(tool, folder, a.size, cache)
        cpu["kiln cold"].append(1e3 * (cpu_seconds() - c0) / n)
        assert d == n, "the cold load decoded %d of %d" % (d, n)
        res["kiln cold"].append(n / s)
        n, s, d = kiln_load(tool, folder, a.size, cache)
        assert d == 0, "the cached load decoded %d" % d
        res["kiln cached"].append(n / s)
        c0 = cpu_seconds()
        n2, s2 = torchvision_load(folder, a.size, cores)
        cpu["torchvision"].append(1e3 * (cpu_seconds() - c0) / n2)
        assert n2 == n
        res["torchvision"].append(n2 / s2)
        print("  run %d: kiln cold %.0f img/s (%.3f cpu-ms/img), cached %.0f img/s, "
              "torchvision %.0f img/s (%.3f cpu-ms/img)"
              % (r + 1, res["kiln cold"][-1], cpu["kiln cold"][-1], res["kiln cached"][-1],
                 res["torchvision"][-1], cpu["torchvision"][-1]), flush=True)
    med = {k: float(np.median(v)) for k, v in res.items()}
    print("median images/s: " + ", ".join("%s %.0f" % kv for kv in med.items()))
    print("ratio kiln cold / torchvision: %.2f" % (med["kiln cold"] / med["torchvision"]))
    print("ratio kiln cached / torchvision: %.2f" % (med["kiln cached"] / med["torchvision"]))
    mcpu = {k: float(np.median(v)) for k, v in cpu.items()}
    print("median cpu-ms/img: kiln cold %.3f, torchvision %.3f; ratio torchvision / kiln: %.2f"
          % (mcpu["kiln cold"], mcpu["torchvision"], mcpu["torchvision"] / mcpu["kiln cold"]))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
