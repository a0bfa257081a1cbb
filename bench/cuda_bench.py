#!/usr/bin/env python3
"""GPU training throughput: Kiln's CUDA backend vs PyTorch on the same GPU, same run.

Both train the PyTorch MNIST example net (conv 32x3 - relu - conv 64x3 - relu -
maxpool 2 - dropout .25 - flatten - dense 128 - relu - dropout .5 - dense 10, softmax
cross-entropy, Adam lr 1e-3, batch 128), and with --net mnist,resnet20 also the shipped
ResNet-20 (Kiln's canonical spec, built in PyTorch by tests/runtime/test_resnet_torch.py's
translator, on the 1x28x28 images), on Fashion-MNIST for the same number of steps
after the same warm-up, with the training set resident on the GPU on both sides, each
in its own process. Prints images/s per side and the ratio, for fp32, bf16 (and fp16
with --precision fp32,bf16,fp16). Neither side reads the loss every step: Kiln's trainer
reads its loss ring every 0.25 s, the PyTorch loop keeps the loss on the device.
  Kiln fp32: true fp32 (cuDNN FMA-math algorithms, cuBLAS without TF32).
  Kiln bf16: conv/dense inputs rounded to bf16 on tensor cores, fp32 accumulation and
             fp32 master weights (rt_device.h).
  PyTorch fp32: TF32 disabled (torch.backends.{cuda.matmul,cudnn}.allow_tf32 = False),
             so both sides do the same math; PyTorch bf16: torch.autocast(bfloat16);
             fp16: autocast(float16) + GradScaler, Kiln: fp16 + dynamic loss scaling.
  Kiln's side is rt_trainer itself (the %train path): data set on the device, batches
  gathered by the epoch's permutation, Adam on the device.

usage: python3 bench/cuda_bench.py [--build build-cuda | --driver PATH] [--steps 300]
           [--warmup 30] [--batch 128[,512]] [--precision fp32,bf16[,fp16]] [--python PY]
           [--net mnist[,resnet20]] [--synthetic] [--data DIR] [--compile] [--json FILE]
           [--torch-device cuda:0]
  --net, --batch, --precision  comma-separated: every combination is one row
  --torch-device cpu  the PyTorch side on the CPU (the dry run: it runs, its figures
               mean nothing next to the GPU's)
  --compile    also time the PyTorch side under torch.compile (a second column; the
               compilation happens in the warm-up, which then needs >= 3 steps)
  --json FILE  write the figures as JSON too (bench/gpu_check.sh reads it)
  --python PY  the interpreter for the PyTorch side (default: this one). It needs a
               CUDA build of torch, e.g. on the GPU machine:
                   python3 -m pip install torch --index-url https://download.pytorch.org/whl/cu126
               (Debian's python3-torch is CPU-only: the PyTorch side is then skipped with
               a message and Kiln's figures are still printed.)
Without a GPU it prints "no GPU: <reason>" and exits with status 3.
Build the driver first: ninja -C build-cuda bench/cuda_bench
"""
import argparse
import contextlib
import os
import subprocess
import sys
import time

import train_bench  # the reference net and data set (bench/train_bench.py)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = "/usr/share/datasets/fashion-mnist"


def torch_child(steps, warmup, batch, precision, synthetic, compile_=False, data=DATA,
                spec=None, device="cuda:0"):
    """Runs in a child process: trains with PyTorch on `device` (cuda:0; cpu: the dry run
    of bench/gpu_check.sh, which checks that this side runs), prints 'key value' lines."""
    import torch
    import torch.nn.functional as F

    cuda = device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        print("no_cuda torch %s was built without CUDA or sees no GPU" % torch.__version__)
        return
    dev = torch.device(device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(1)
    if synthetic:
        n = min(60000, max(batch, (warmup + steps) * batch))  # as Kiln's side
        x = torch.randn(n, 1, 28, 28)
        y = torch.arange(n) % 10
    else:
        x, y = train_bench.torch_fashion_mnist(data)
    perm = torch.randperm(x.shape[0])
    x, y = x[perm].to(dev), y[perm].to(dev)  # resident on the GPU, shuffled once

    if spec:  # Kiln's canonical spec (ResNet-20), as the model tests translate it
        sys.path.insert(0, os.path.join(HERE, "..", "tests", "runtime"))
        import test_resnet_torch
        model = test_resnet_torch.build(open(spec).read(), 1, 28, 28)[0].to(dev)
        model.train()
    else:
        model = train_bench.torch_net().to(dev)  # the PyTorch examples/mnist network
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    if compile_:
        model = torch.compile(model)
    per_epoch = x.shape[0] // batch
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.cuda.amp.GradScaler(enabled=cuda and precision == "fp16")

    def step(i):
        j = (i % per_epoch) * batch
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=half) if half else contextlib.nullcontext():
            loss = F.cross_entropy(model(x[j:j + batch]), y[j:j + batch])
        scaler.scale(loss).backward()
        scaler.step(opt)  # fp16: GradScaler reads found_inf (a sync) - torch's own rule
        scaler.update()
        return loss  # no .item() per step: Kiln reads its losses in batches too

    first = step(0).item()
    for i in range(1, warmup):
        step(i)
    sync()
    t0 = time.perf_counter()
    for i in range(warmup, warmup + steps):
        loss = step(i)
    sync()
    dt = time.perf_counter() - t0
    print("torch_version %s" % torch.__version__)
    print("device %s" % (torch.cuda.get_device_name(0).replace(" ", "_") if cuda else device))
    print("images_per_s %.1f" % (steps * batch / dt))
    print("first_loss %.5f" % first)
    print("last_loss %.5f" % loss.item())


def parse(out):
    kv = {}
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            kv[parts[0]] = parts[1].strip()
    return kv


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr

def one_row(a, driver, net, spec, batch, prec, results, state):
    """Kiln, then PyTorch eager (and torch.compile), for one net, batch and precision:
    appends the rows, prints them; returns 1 when Kiln failed."""
    kcmd = [driver, "--net", net, "--precision", prec, "--steps", str(a.steps), "--warmup",
            str(a.warmup), "--batch", str(batch)] + (["--synthetic"] if a.synthetic else [])
    env = dict(os.environ, KILN_BENCH_DATA=a.data)
    p = subprocess.run(kcmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    rc, out, err = p.returncode, p.stdout, p.stderr
    k = parse(out)
    head = "%-8s %5d %-6s" % (net, batch, prec)
    if rc != 0 or "images_per_s" not in k:
        print("%s kiln failed (rc %d): %s" % (head, rc, (err or out).strip()[-500:]))
        results.append({"net": net, "batch": batch, "precision": prec,
                        "error": "kiln failed (rc %d): %s" % (rc, (err or out).strip()[-300:])})
        return 1
    kips = float(k["images_per_s"])
    for comp in ([False, True] if a.compile else [False]):
        mode = "torch.compile" if comp else "eager"
        row = {"net": net, "batch": batch, "precision": prec, "torch_mode": mode,
               "kiln_images_per_s": kips, "kiln_last_loss": k.get("last_loss")}
        t, why = {}, state["no_torch"]
        if not why:
            tcmd = [a.python, os.path.abspath(__file__), "--torch-child", "--child-precision",
                    prec, "--steps", str(a.steps), "--warmup",
                    str(max(a.warmup, 3) if comp else a.warmup), "--batch", str(batch),
                    "--data", a.data] + (["--synthetic"] if a.synthetic else []) + \
                (["--child-compile"] if comp else []) + (["--child-spec", spec] if spec else []) + \
                ["--torch-device", a.torch_device]
            rc, tout, terr = run(tcmd)
            t = parse(tout)
            if t.get("no_cuda"):
                why = state["no_torch"] = "no CUDA: " + t["no_cuda"]
            elif rc != 0 or "images_per_s" not in t:
                why = (terr.strip().splitlines() or ["rc %d" % rc])[-1]
        if why:
            print("%s %14.1f %14s %8s  %s / -   (PyTorch %s skipped: %s)" %
                  (head, kips, "-", "-", k.get("last_loss"), mode, why))
            row["torch_skipped"] = why
            results.append(row)
            continue
        tips = float(t["images_per_s"])
        print("%s %14.1f %14.1f %8.2f  %s / %s  (%s)" % (head, kips, tips, kips / tips,
                                                         k.get("last_loss"), t.get("last_loss"),
                                                         mode))
        row.update(torch_images_per_s=tips, ratio=kips / tips, torch_last_loss=t.get("last_loss"),
                   torch=t.get("torch_version"), device=t.get("device"))
        results.append(row)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build-cuda"))
    ap.add_argument("--driver", default=None, help="the cuda_bench binary (default BUILD/bench/cuda_bench)")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child-compile", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--batch", default="128")
    ap.add_argument("--net", default="mnist")
    ap.add_argument("--child-spec", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--torch-device", default="cuda:0")
    ap.add_argument("--precision", default="fp32,bf16")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--torch-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-precision", default="fp32", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_child:
        torch_child(a.steps, a.warmup, int(a.batch), a.child_precision, a.synthetic,
                    a.child_compile, a.data, a.child_spec, a.torch_device)
        return 0
    split = lambda v: [x.strip() for x in v.split(",") if x.strip()]
    driver = a.driver or os.path.join(a.build, "bench", "cuda_bench")
    results = []

    def save():
        if a.json:
            import json
            with open(a.json, "w") as f:
                json.dump({"steps": a.steps, "warmup": a.warmup, "batch": a.batch,
                           "data": "synthetic" if a.synthetic else a.data,
                           "rows": results}, f, indent=1)
    if not os.path.exists(driver):
        print("no %s: build it with `ninja -C %s bench/cuda_bench`" % (driver, a.build))
        return 2
    rc, out, err = run([driver, "--list"])
    if rc != 0:
        why = parse(out).get("no_gpu", (out + err).strip() or "rc %d" % rc)
        print("no GPU: %s" % why)
        results.append({"error": "no GPU: %s" % why})
        save()
        return 3
    print(out.strip())
    data = "synthetic" if a.synthetic else "fashion-mnist"
    print("cuda_bench: %d steps after %d warm-up, %s" % (a.steps, a.warmup, data))
    print("%-8s %5s %-6s %14s %14s %8s  %s" % ("net", "batch", "prec", "kiln img/s",
                                              "torch img/s", "ratio", "last loss kiln / torch"))
    status = 0
    state = {"no_torch": None}  # a PyTorch without CUDA says so once; later rows skip it
    import tempfile
    tmp = tempfile.mkdtemp(prefix="cuda-bench-")
    for net in split(a.net):
        spec = None
        if net != "mnist":
            rc, out, err = run([driver, "--net", net, "--print-spec"])
            if rc != 0:
                print("%-8s kiln has no such net: %s" % (net, (err or out).strip()[-300:]))
                results.append({"net": net, "error": "no spec (rc %d): %s" %
                                (rc, (err or out).strip()[-300:])})
                status = 1
                continue
            spec = os.path.join(tmp, net + ".spec")
            open(spec, "w").write(out)
        for batch in [int(b) for b in split(a.batch)]:
            for prec in split(a.precision):
                status |= one_row(a, driver, net, spec, batch, prec, results, state)
    print("ratio = Kiln / PyTorch images per second (higher is better for Kiln)")
    save()
    return status


if __name__ == "__main__":
    sys.exit(main())
