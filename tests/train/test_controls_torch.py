"""The trainer's step-level controls against PyTorch: clipping, accumulation, smoothing.

train_ref_tool runs a few rt_trainer steps of a small conv net (no batch norm or dropout)
in data-set order with SGD (lr 0.1, momentum 0.9) and writes the weights before and
after and the per-step losses. Here the same net is built in PyTorch (float64), the
initial weights are loaded, and the same steps are taken the PyTorch way:
CrossEntropyLoss(label_smoothing=), clip_grad_value_ / clip_grad_norm_ between
backward and step, and for --batch B --accumulate K one optimiser step a batch of B*K
images (what accumulation must equal). Losses and final weights must agree within 1e-5
relative (max |kiln - torch| / max |torch| per tensor: float32 against float64). A run
with accumulation is also compared with Kiln's own large-batch run. Kiln's side runs
on the CPU's host path, its device path, or with MODEL_REF_DEVICE=cuda on the CUDA
backend (tests/gpu runs it over the mock device).
Runs under Debian's /usr/bin/python3 (python3-torch): a plain script, exit 0 / 1, 77
(meson's skip) without torch or the tool.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

try:
    import torch
except ImportError:
    print("SKIP: no torch for %s (apt install python3-torch)" % sys.executable)
    sys.exit(77)
nn = torch.nn
TOOL = os.environ.get("TRAIN_REF_TOOL")
DEVICE = os.environ.get("MODEL_REF_DEVICE", "cpu")
TOL = 1e-5


def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    head.pop("__metadata__", None)
    out = {}
    for k, v in head.items():
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(v["shape"])
    return out


def kiln(tmp, batch, accum, clip_norm, clip_value, smoothing, steps, device_path=0):
    out = Path(tmp) / ("k_%d_%d_%g_%g_%g_%d.st" % (batch, accum, clip_norm, clip_value,
                                                   smoothing, device_path))
    args = [TOOL, str(out), str(batch), str(accum), repr(clip_norm), repr(clip_value),
            repr(smoothing), str(steps), str(device_path), DEVICE]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode == 77:
        print(p.stdout.strip())
        sys.exit(77)
    if p.returncode != 0:
        raise AssertionError("train_ref_tool failed: %s" % p.stderr.strip())
    return load(out)


def torch_run(f, big_batch, clip_norm, clip_value, smoothing, steps):
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(64, 4)).double()
    params = list(net.parameters())
    with torch.no_grad():
        for i, p in enumerate(params):
            p.copy_(torch.from_numpy(f["init/%d" % i].astype(np.float64)).reshape(p.shape))
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)
    crit = nn.CrossEntropyLoss(label_smoothing=smoothing)
    x = torch.from_numpy(f["data"].astype(np.float64))
    y = torch.from_numpy(f["labels"].astype(np.int64))
    n, pos, losses = x.shape[0], 0, []
    for _ in range(steps):
        if pos >= n:
            pos = 0
        xb, yb = x[pos:pos + big_batch], y[pos:pos + big_batch]
        pos += xb.shape[0]
        opt.zero_grad()
        loss = crit(net(xb), yb)
        loss.backward()
        if clip_value > 0:
            torch.nn.utils.clip_grad_value_(params, clip_value)
        if clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(params, clip_norm)
        opt.step()
        losses.append(loss.item())
    return [p.detach().numpy() for p in params], np.array(losses)


def rel(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12)


def compare(name, f, ref_params, ref_losses, tol=TOL):
    worst = rel(f["losses"], ref_losses)
    for i, p in enumerate(ref_params):
        worst = max(worst, rel(f["final/%d" % i], p))
    print("%-44s max rel diff %.2e" % (name, worst))
    if not worst < tol:
        raise AssertionError("%s: Kiln and PyTorch differ by %.3g (> %g)" % (name, worst, tol))


def moved(f, ref_params):
    """The weights changed (the comparison is not of two untrained nets)."""
    return max(rel(f["init/%d" % i], p) for i, p in enumerate(ref_params)) > 1e-3


CASES = [
    # name, batch, accumulate, clip_norm, clip_value, smoothing, steps
    ("plain", 8, 1, 0.0, 0.0, 0.0, 6),
    ("clip-grad 0.05 (always clipped)", 8, 1, 0.05, 0.0, 0.0, 6),
    ("clip-grad 100 (never clipped)", 8, 1, 100.0, 0.0, 0.0, 3),
    ("clip-value 0.02", 8, 1, 0.0, 0.02, 0.0, 6),
    ("label-smoothing 0.1", 8, 1, 0.0, 0.0, 0.1, 6),
    ("batch 5 accumulate 3 (= batch 15)", 5, 3, 0.0, 0.0, 0.0, 6),
    ("batch 4 accumulate 4, all controls", 4, 4, 0.3, 0.5, 0.2, 5),
]


def main():
    if not TOOL or not Path(TOOL).exists():
        print("SKIP: TRAIN_REF_TOOL not built")
        return 77
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, batch, accum, cn, cv, eps, steps in CASES:
            for dp in ([0, 1] if DEVICE == "cpu" else [1]):
                label = "%s%s" % (name, ", device path" if dp else "")
                try:
                    f = kiln(tmp, batch, accum, cn, cv, eps, steps, dp)
                    ref, ref_losses = torch_run(f, batch * accum, cn, cv, eps, steps)
                    if not moved(f, ref):
                        raise AssertionError("%s: the weights did not move" % label)
                    compare(label, f, ref, ref_losses)
                except AssertionError as e:
                    print("FAILED:", e)
                    failed += 1
        # accumulation against Kiln's own large batch: the same to rounding
        try:
            a = kiln(tmp, 5, 3, 0.0, 0.0, 0.0, 6)
            b = kiln(tmp, 15, 1, 0.0, 0.0, 0.0, 6)
            worst = max(rel(a["final/%d" % i], b["final/%d" % i]) for i in range(4))
            worst = max(worst, rel(a["losses"], b["losses"]))
            print("%-44s max rel diff %.2e" % ("accumulate 3 x 5 vs batch 15 (Kiln)", worst))
            if not worst < 1e-5:
                raise AssertionError("accumulation differs from the large batch by %.3g" % worst)
        except AssertionError as e:
            print("FAILED:", e)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
