#!/usr/bin/python3
"""RNG fills, optimiser steps and augmented batches: Kiln (bench/optim_bench.c) side by
side with PyTorch on the same sizes and thread count, in one run.

    ninja -C build bench/optim_bench
    /usr/bin/python3 bench/optim_bench.py build/bench/optim_bench [threads]

Prints milliseconds (median of 7) and torch/kiln (> 1: Kiln is faster). The PyTorch
peer of the batcher is what one writes without torchvision: gather, F.pad, a slice per
sample and torch.flip (torchvision's RandomCrop/RandomHorizontalFlip do the same per
sample inside a DataLoader).
"""
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

REPS = 7
NFILL = 16 << 20
NPARAM = 4 << 20
NIMG = 10000
BATCH = 128


def timed(fn):
    fn()
    ts = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def optim_peer(cls, **kw):
    params = [torch.randn(NPARAM // 8, requires_grad=True) for _ in range(8)]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    opt = cls(params, lr=1e-3, **kw)
    return lambda: opt.step()


def batch_peer(augment):
    images = torch.randn(NIMG, 3, 32, 32)
    labels = torch.full((NIMG,), 3, dtype=torch.int64)
    g = torch.Generator().manual_seed(5)
    state = {"perm": torch.randperm(NIMG, generator=g), "pos": 0}

    def step():
        if state["pos"] + BATCH > NIMG:
            state["perm"] = torch.randperm(NIMG, generator=g)
            state["pos"] = 0
        idx = state["perm"][state["pos"]:state["pos"] + BATCH]
        state["pos"] += BATCH
        x = images.index_select(0, idx)
        y = labels.index_select(0, idx)
        if augment:
            padded = F.pad(x, (4, 4, 4, 4))
            tops = torch.randint(0, 9, (BATCH,), generator=g).tolist()
            lefts = torch.randint(0, 9, (BATCH,), generator=g).tolist()
            flips = (torch.rand(BATCH, generator=g) < 0.5).tolist()
            out = torch.empty_like(x)
            for i in range(BATCH):
                c = padded[i, :, tops[i]:tops[i] + 32, lefts[i]:lefts[i] + 32]
                out[i] = torch.flip(c, (2,)) if flips[i] else c
            x = out
        return x, y
    return step


def main():
    exe = sys.argv[1] if len(sys.argv) > 1 else "build/bench/optim_bench"
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else torch.get_num_threads()
    torch.set_num_threads(threads)
    kiln = {}
    out = subprocess.run([exe, str(threads)], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        name, value = line.split()
        kiln[name] = float(value)
    buf = torch.empty(NFILL)
    peers = {
        "rng_uniform_16M": lambda: buf.uniform_(),
        "rng_normal_16M": lambda: buf.normal_(),
        "dropout_mask_16M": lambda: buf.bernoulli_(0.5),
        "sgd_momentum_4M": optim_peer(torch.optim.SGD, momentum=0.9),
        "adam_4M": optim_peer(torch.optim.Adam),
        "adamw_4M": optim_peer(torch.optim.AdamW),
        "batch128_cifar_plain": batch_peer(False),
        "batch128_cifar_crop_flip": batch_peer(True),
    }
    print("threads %d, torch %s" % (threads, torch.__version__))
    print("%-26s %10s %10s %8s" % ("benchmark", "kiln ms", "torch ms", "torch/kiln"))
    for name, fn in peers.items():
        t = timed(fn)
        print("%-26s %10.3f %10.3f %8.2f" % (name, kiln[name], t, t / kiln[name]))


if __name__ == "__main__":
    main()
