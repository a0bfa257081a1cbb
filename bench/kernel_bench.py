#!/usr/bin/env python3
"""Kiln vs ipykernel, side by side in one run.

Two start-up figures, then round trips and memory through jupyter_client:
- spawn->reply (the kernel's own start): the client's five sockets are created and
  CONNECTED first (ZeroMQ lets a client connect before the server binds), a signed
  kernel_info_request is queued on shell, then the clock starts and the kernel is
  spawned exactly as its kernelspec's argv says; the figure is the time to the
  kernel_info_reply. Kiln and ipykernel starts are interleaved; each kernel is killed
  and reaped, its connection file removed. Median and p90 of --spawn-starts.
- jupyter_client start_kernel->ready: KernelManager.start_kernel() + start_channels()
  + kernel_info until a reply, what a Jupyter front end pays. start_kernel() alone
  costs 13-15 ms before the kernel runs, so this figure has a floor of ~16 ms.
For each kernel also: median and p99 round trip of a trivial execute (`x = 1`, send ->
execute_reply) and idle RSS; then the ratios ipykernel / Kiln. Targets: Kiln ready
>= 20x sooner, round trips >= 5x faster.

usage: JUPYTER_PATH=build/tests python3 bench/kernel_bench.py [--runs N] [--starts K]
           [--spawn-starts M] [--spawn-only]
(build/tests/kernels/kiln/kernel.json points at the built binary; `python3` is the
ipykernel kernelspec.)
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import zmq
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session


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


# ---- spawn->reply: the kernel's own start, without jupyter_client's launcher ----

def quantile(xs, q):
    """Nearest-rank quantile of a non-empty list (q=0.5: the median)."""
    xs = sorted(xs)
    return statistics.median(xs) if q == 0.5 else xs[min(len(xs) - 1, int(q * len(xs)))]


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (held until all are picked, then freed)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def kernel_argv(name):
    """(argv with {connection_file} unreplaced, env) from kernelspec `name`. As
    jupyter_client does, a bare `python` argv[0] means this interpreter."""
    spec = KernelSpecManager().get_kernel_spec(name)
    argv = list(spec.argv)
    py = {"python", "python%d" % sys.version_info[0], "python%d.%d" % sys.version_info[:2]}
    if argv and argv[0] in py:
        argv[0] = sys.executable
    env = dict(os.environ)
    env.update(spec.env or {})
    return argv, env


def spawn_once(ctx, argv, env, tmpdir):
    """One start: returns seconds from spawning the kernel to its kernel_info_reply."""
    key = uuid.uuid4().hex
    names = ("shell", "iopub", "stdin", "control", "hb")
    conn = dict(zip((n + "_port" for n in names), free_ports(5)), ip="127.0.0.1",
                transport="tcp", key=key, signature_scheme="hmac-sha256", kernel_name="")
    fd, path = tempfile.mkstemp(prefix="kernel-", suffix=".json", dir=tmpdir)
    with os.fdopen(fd, "w") as f:
        json.dump(conn, f)
    session = Session(key=key.encode(), signature_scheme="hmac-sha256")
    kinds = {"shell": zmq.DEALER, "iopub": zmq.SUB, "stdin": zmq.DEALER,
             "control": zmq.DEALER, "hb": zmq.REQ}
    socks = {}
    proc = None
    try:
        for n in names:
            s = ctx.socket(kinds[n])
            s.setsockopt(zmq.LINGER, 0)
            # the kernel binds after we connect; zmq's default 100 ms reconnect
            # interval would be measured instead of the kernel (same for both kernels)
            s.setsockopt(zmq.RECONNECT_IVL, 1)
            if n in ("shell", "stdin"):
                s.setsockopt(zmq.IDENTITY, session.bsession)
            if n == "iopub":
                s.setsockopt(zmq.SUBSCRIBE, b"")
            s.connect(f"tcp://127.0.0.1:{conn[n + '_port']}")
            socks[n] = s
        # DEALER queues on the connecting pipe: the request is waiting when the kernel binds
        req = session.send(socks["shell"], "kernel_info_request", {})
        cmd = [path if x == "{connection_file}" else x for x in argv]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shell = socks["shell"]
        while True:
            if not shell.poll(30000):
                raise RuntimeError(f"{argv[0]}: no kernel_info_reply within 30 s "
                                   f"(exit status {proc.poll()})")
            t1 = time.perf_counter()
            _, reply = session.feed_identities(shell.recv_multipart())
            msg = session.deserialize(reply)
            if msg["parent_header"].get("msg_id") == req["header"]["msg_id"]:
                if msg["msg_type"] != "kernel_info_reply":
                    raise RuntimeError(f"{argv[0]}: got {msg['msg_type']}")
                return t1 - t0
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        for s in socks.values():
            s.close(linger=0)
        os.unlink(path)


def spawn_bench(names, starts):
    """Interleaved raw starts of each kernel: {name: [seconds, ...]} (a warm-up round
    of each, which fills the page cache and imports, is not counted). The order
    alternates every round so neither kernel always follows the other."""
    specs = {n: kernel_argv(n) for n in names}
    out = {n: [] for n in names}
    ctx = zmq.Context()
    with tempfile.TemporaryDirectory(prefix="kiln-bench-") as tmp:
        for i in range(starts + 1):
            for n in (names if i % 2 == 0 else names[::-1]):
                t = spawn_once(ctx, *specs[n], tmp)
                if i:
                    out[n].append(t)
    ctx.term()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1000, help="timed executes per kernel")
    ap.add_argument("--starts", type=int, default=5,
                    help="jupyter_client cold starts per kernel (median)")
    ap.add_argument("--spawn-starts", type=int, default=20,
                    help="raw spawn->reply starts per kernel, interleaved (0: skip)")
    ap.add_argument("--spawn-only", action="store_true",
                    help="only the spawn->reply figure (no jupyter_client runs)")
    ap.add_argument("--kiln", default="kiln", help="Kiln's kernelspec name")
    ap.add_argument("--peer", default="python3", help="ipykernel's kernelspec name")
    a = ap.parse_args()
    names = (a.kiln, a.peer)
    w = 36
    if a.spawn_starts > 0:
        sp = spawn_bench(names, a.spawn_starts)
        k, p = sp[a.kiln], sp[a.peer]
        print(f"{'':{w}}{a.kiln:>12}{a.peer:>12}{'ratio':>10}")
        for label, q in (("median", 0.5), ("p90", 0.9)):
            kv, pv = quantile(k, q), quantile(p, q)
            print(f"{'spawn->reply, ' + label + ' (ms)':{w}}{kv * 1e3:12.3f}{pv * 1e3:12.3f}"
                  f"{pv / kv:9.1f}x")
        print(f"  (kernel's own start: client connected and request queued before the "
              f"spawn; {len(k)} starts each, interleaved)")
        if a.spawn_only:
            return
    res = {n: bench(n, a.runs, a.starts) for n in names}
    k, p = res[a.kiln], res[a.peer]
    print(f"{'':{w}}{a.kiln:>12}{a.peer:>12}{'ratio':>10}")
    rows = [("jupyter_client start_kernel->ready", "ready_s", 1e3),
            ("execute median (ms)", "rt_median_s", 1e3),
            ("execute p99 (ms)", "rt_p99_s", 1e3),
            ("idle RSS (MiB)", "rss_idle_kib", 1 / 1024),
            (f"RSS after {a.runs + 100} (MiB)", "rss_after_kib", 1 / 1024)]
    for label, key, scale in rows:
        ratio = p[key] / k[key] if k[key] > 0 else float("nan")
        print(f"{label:{w}}{k[key] * scale:12.3f}{p[key] * scale:12.3f}{ratio:9.1f}x")
    print(f"  (start_kernel->ready in ms, median of {a.starts}; jupyter_client's own "
          f"start_kernel() takes 13-15 ms of it)")
    msg = "targets: ready >= 20x sooner ("
    if a.spawn_starts > 0:
        msg += (f"spawn->reply {quantile(sp[a.peer], 0.5) / quantile(sp[a.kiln], 0.5):.1f}x, ")
    msg += f"start_kernel->ready {p['ready_s'] / k['ready_s']:.1f}x), "
    print(msg + f"round trip >= 5x faster (got {p['rt_median_s'] / k['rt_median_s']:.1f}x "
          f"median)")


if __name__ == "__main__":
    main()
