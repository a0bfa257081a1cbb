#!/usr/bin/env python3
"""Kiln vs ipykernel, side by side in one run, through jupyter_client.

For each kernel: time from spawn to the first kernel_info_reply, median and p99 round
trip of a trivial execute (`x = 1`, send -> execute_reply), and idle RSS of the kernel
process; then the ratios ipykernel / Kiln. Targets: Kiln ready >= 20x sooner, round
trips >= 5x faster.

usage: JUPYTER_PATH=build/tests python3 bench/kernel_bench.py [--runs N] [--starts K]
(build/tests/kernels/kiln/kernel.json points at the built binary; `python3` is the
ipykernel kernelspec.)
"""
import argparse
import statistics
import time

import zmq
from jupyter_client.manager import KernelManager


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def start(name):
    """Starts kernel `name`; returns (km, kc, seconds from spawn to first kernel_info_reply)."""
    km = KernelManager(kernel_name=name)
    t0 = time.perf_counter()
    km.start_kernel()
    kc = km.client()
    # The client connects before the kernel has bound; zmq's default 100 ms reconnect
    # interval would then be measured instead of the kernel. Same setting for both.
    kc.context.setsockopt(zmq.RECONNECT_IVL, 1)
    kc.start_channels()
    while True:
        msg_id = kc.kernel_info()
        try:
            reply = kc.get_shell_msg(timeout=0.01)
        except Exception:
            continue
        if reply["parent_header"].get("msg_id") == msg_id or reply["msg_type"] == "kernel_info_reply":
            ready = time.perf_counter() - t0
            break
    kc.wait_for_ready(timeout=60)  # drain the extra replies of the loop above
    return km, kc, ready


def round_trips(kc, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        msg_id = kc.execute("x = 1")
        while kc.get_shell_msg(timeout=10)["parent_header"].get("msg_id") != msg_id:
            pass
        out.append(time.perf_counter() - t0)
    while True:  # drain IOPub
        try:
            kc.get_iopub_msg(timeout=0.05)
        except Exception:
            break
    return out


def bench(name, runs, starts):
    readies = []
    for i in range(starts):  # the first start also warms up jupyter_client: not counted
        km, kc, ready = start(name)
        if i:
            readies.append(ready)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    km, kc, ready = start(name)
    readies.append(ready)
    pid = km.provisioner.process.pid
    time.sleep(0.5)
    rss_idle = rss_kib(pid)
    round_trips(kc, 100)  # warm-up
    rt = sorted(round_trips(kc, runs))
    time.sleep(0.5)
    rss_after = rss_kib(pid)
    kc.stop_channels()
    km.shutdown_kernel()
    return {
        "ready_s": statistics.median(readies),
        "rt_median_s": statistics.median(rt),
        "rt_p99_s": rt[min(len(rt) - 1, int(0.99 * len(rt)))],
        "rss_idle_kib": rss_idle,
        "rss_after_kib": rss_after,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000, help="timed executes per kernel")
    ap.add_argument("--starts", type=int, default=5, help="cold starts per kernel (median)")
    ap.add_argument("--kiln", default="kiln", help="Kiln's kernelspec name")
    ap.add_argument("--peer", default="python3", help="ipykernel's kernelspec name")
    a = ap.parse_args()
    res = {a.kiln: bench(a.kiln, a.runs, a.starts), a.peer: bench(a.peer, a.runs, a.starts)}
    k, p = res[a.kiln], res[a.peer]
    print(f"{'':24}{a.kiln:>12}{a.peer:>12}{'ratio':>10}")
    rows = [("spawn -> kernel_info (ms)", "ready_s", 1e3),
            ("execute median (ms)", "rt_median_s", 1e3),
            ("execute p99 (ms)", "rt_p99_s", 1e3),
            ("idle RSS (MiB)", "rss_idle_kib", 1 / 1024),
            (f"RSS after {a.runs + 100} (MiB)", "rss_after_kib", 1 / 1024)]
    for label, key, scale in rows:
        ratio = p[key] / k[key] if k[key] > 0 else float("nan")
        print(f"{label:24}{k[key] * scale:12.3f}{p[key] * scale:12.3f}{ratio:9.1f}x")
    print(f"targets: ready >= 20x sooner (got {p['ready_s'] / k['ready_s']:.1f}x), "
          f"round trip >= 5x faster (got {p['rt_median_s'] / k['rt_median_s']:.1f}x median)")


if __name__ == "__main__":
    main()
