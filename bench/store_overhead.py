#!/usr/bin/env python3
"""What checkpointing to an object store costs training: the tutorial CNN (1.2M
parameters, 14.4 MB checkpoints with the Adam state) trained by `kiln run` on a
Fashion-MNIST subset without a run directory, and with `--run-dir s3://...` and a
checkpoint every N steps (saved locally, uploaded by the background thread), against
moto's S3 server on 127.0.0.1; alternating rounds, medians.

    python3 bench/store_overhead.py [--kiln build/kernel/kiln] [--rounds 3]
                                    [--subset 1024] [--epochs 2] [--every 4]

The training time of a run is the sum of its epochs' `epoch_seconds` in the results
store (checkpoint saves happen inside the epochs; the final upload drain after the
last step is not training time). A checkpoint every minute is what a notebook run
uses; a short bench saves far more often, so the figure reported is the cost of one
checkpoint (extra training time / checkpoints written) and what it comes to at one
checkpoint a minute. The goal is under 1% of step time.
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile

import nbformat

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "store"))
from moto_util import BUCKET, start_store  # noqa: E402

MODEL = ("%%model cnn\nconv2d 32 3\nrelu\nconv2d 64 3\nrelu\nmaxpool 2\ndropout 0.25\n"
         "flatten\ndense 128\nrelu\ndropout 0.5\ndense 10")


def run(kiln, tmp, env, a, i, run_dir):
    results = os.path.join(tmp, f"results-{i}.sqlite")
    nb = nbformat.v4.new_notebook()
    train = f"%train cnn --batch 64 --epochs {a.epochs} --seed 1"
    if run_dir:
        train += f" --run-dir {run_dir} --checkpoint-every {a.every}steps --keep 2"
    nb.cells = [nbformat.v4.new_code_cell(f"%dataset fashion-mnist --subset {a.subset} "
                                          "--samples 0"),
                nbformat.v4.new_code_cell(MODEL), nbformat.v4.new_code_cell(train)]
    src = os.path.join(tmp, f"nb-{i}.ipynb")
    nbformat.write(nb, src)
    p = subprocess.run([kiln, "run", src, "-o", src + ".out"],
                       env=dict(env, KILN_RESULTS=results), capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"kiln run failed:\n{p.stderr[-2000:]}")
    db = sqlite3.connect(results)
    (secs,) = db.execute("SELECT sum(value) FROM metrics WHERE key='epoch_seconds'").fetchone()
    (ckpts,) = db.execute("SELECT count(*) FROM checkpoints").fetchone()
    db.close()
    return secs, ckpts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default="build/kernel/kiln")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--subset", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--every", type=int, default=4)
    a = ap.parse_args()
    srv, st = start_store()
    tmp = tempfile.mkdtemp(prefix="kiln-store-overhead-")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(st["creds"], AWS_ENDPOINT_URL=st["url"], AWS_REGION="us-east-1",
                   KILN_STAGING_DIR=os.path.join(tmp, "staging"))
        none, store, n = [], [], []
        for i in range(a.rounds):
            none.append(run(a.kiln, tmp, env, a, 2 * i, None)[0])
            shutil.rmtree(os.path.join(tmp, "staging"), ignore_errors=True)
            secs, c = run(a.kiln, tmp, env, a, 2 * i + 1, f"s3://{BUCKET}/overhead-{i}")
            store.append(secs)
            n.append(c)
        steps = a.epochs * (a.subset // 64)
        t0, t1, c = statistics.median(none), statistics.median(store), statistics.median(n)
        per_ckpt = (t1 - t0) / c if c else float("nan")
        step_ms = 1000 * t0 / steps
        print(f"tutorial CNN, batch 64, {steps} steps, {a.rounds} rounds (medians)")
        print(f"  no checkpoints:                {t0:8.2f} s  ({step_ms:.1f} ms/step)")
        print(f"  s3:// every {a.every} steps ({c} saved): {t1:8.2f} s  "
              f"({100 * (t1 - t0) / t0:+.1f}% at this rate)")
        print(f"  cost of one checkpoint to the store: {1000 * per_ckpt:.1f} ms of training time")
        print(f"  at one checkpoint a minute: {100 * per_ckpt / 60:.3f}% of training time "
              "(goal < 1%)")
    finally:
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
