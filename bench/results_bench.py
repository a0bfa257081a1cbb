#!/usr/bin/env python3
"""Cost of one logged metric: Kiln's results store (bench/results_bench.c) side by side
with MLflow's Python client writing to a local SQLite tracking store (its usual
embedded setup), on the same kind of run (2 metrics a step).

    python3 bench/results_bench.py [--bin build/bench/results_bench] [--n 200000]
                                   [--mlflow-n 300] [--dir D]

Kiln: "call" is what the training loop pays per rt_results_log_metric (rows are handed
to the writer thread), "total" runs until everything is committed. MLflow: log_metric
(one call a value, as mlflow.log_metric does) and log_batch (1000 values a call).
Prints ns per metric and the ratio MLflow / Kiln.
"""
import argparse
import os
import subprocess
import tempfile
import time


def mlflow_costs(d, n):
    import logging
    logging.getLogger("mlflow").setLevel(logging.ERROR)
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient
    client = MlflowClient(f"sqlite:///{d}/mlflow-bench.db")
    exp = client.create_experiment(f"bench-{os.getpid()}-{time.time()}")
    run = client.create_run(exp).info.run_id
    t0 = time.perf_counter()
    for i in range(n):
        client.log_metric(run, "acc" if i & 1 else "loss", 1.0 / (i + 1), step=i // 2)
    single = (time.perf_counter() - t0) / n * 1e9
    run = client.create_run(exp).info.run_id
    big = n * 20
    ts = int(time.time() * 1000)
    t0 = time.perf_counter()
    for start in range(0, big, 1000):
        client.log_batch(run, metrics=[Metric("acc" if i & 1 else "loss", 1.0 / (i + 1), ts,
                                              i // 2) for i in range(start, start + 1000)])
    batch = (time.perf_counter() - t0) / big * 1e9
    return single, batch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bench/results_bench")
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--mlflow-n", type=int, default=300)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="kiln-results-bench-")
    out = subprocess.run([a.bin, d, str(a.n)], capture_output=True, text=True, check=True)
    kiln = {k: float(v) for k, v in (line.split() for line in out.stdout.splitlines())}
    single, batch = mlflow_costs(d, a.mlflow_n)
    print(f"{'ns per logged metric':40s} {'ns':>12s}")
    for k, v in kiln.items():
        print(f"kiln {k:35s} {v:12.0f}")
    print(f"{'mlflow log_metric (sqlite store)':40s} {single:12.0f}"
          f"   = {single / kiln['kiln_log_call']:.0f}x kiln call,"
          f" {single / kiln['kiln_log_total']:.0f}x kiln total")
    print(f"{'mlflow log_batch x1000 (sqlite store)':40s} {batch:12.0f}"
          f"   = {batch / kiln['kiln_log_call']:.0f}x kiln call,"
          f" {batch / kiln['kiln_log_total']:.1f}x kiln total")


if __name__ == "__main__":
    main()
