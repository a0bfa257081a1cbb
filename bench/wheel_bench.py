"""The kiln-kernel wheel and the %%kiln bridge, measured in one run:

1. the wheel's size (the repaired wheel .ci/wheel leaves in build-wheel/dist, or --wheel);
2. `pip install` time from the local wheel into a fresh venv, its dependencies from a
   local folder filled beforehand (`pip download`), so the network is not timed;
   median of --installs runs;
3. per-cell overhead of the bridge next to the native kernel's round trip: the same
   trivial cell (`1`) sent N times, interleaved, through
     native   jupyter_client -> the Kiln kernel,
     bridge   jupyter_client -> ipykernel -> `%kiln 1` -> the child Kiln kernel,
     python   jupyter_client -> ipykernel running `1` (the bridge's host alone),
   each timed from execute_request to the idle status; medians and the ratio
   bridge / native.

  python3 bench/wheel_bench.py [--wheel PATH] [--cells N] [--installs N]

Runs against the build tree (build/tests's kernelspec, python/ on PYTHONPATH) for 3.
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def wheel_numbers(whl, installs):
    size = os.path.getsize(whl)
    print(f"wheel: {os.path.basename(whl)}  {size / 1048576:.2f} MiB")
    tmp = tempfile.mkdtemp(prefix="kiln-wheel-bench-")
    try:
        deps = os.path.join(tmp, "deps")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "-d", deps, whl],
                       check=True)
        times = []
        for i in range(installs):
            venv = os.path.join(tmp, f"venv{i}")
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            t0 = time.perf_counter()
            subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q",
                            "--disable-pip-version-check", "--no-index", "--find-links", deps,
                            whl], check=True)
            times.append(time.perf_counter() - t0)
        print(f"pip install from the local wheel (+ dependencies from a local folder), fresh "
              f"venv: median {statistics.median(times):.2f} s of {installs} "
              f"({', '.join(f'{t:.2f}' for t in times)})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def round_trip(kc, code):
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):
            return time.perf_counter() - t0


def bridge_numbers(cells):
    os.environ["JUPYTER_PATH"] = os.path.join(ROOT, "build", "tests")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH", "")])
    from jupyter_client.manager import start_new_kernel

    native_km, native = start_new_kernel(kernel_name="kiln")
    py_km, py = start_new_kernel(kernel_name="python3")
    try:
        round_trip(py, "%load_ext kiln_kernel")
        round_trip(py, "%kiln 1")  # starts the child
        for _ in range(20):  # warm-up
            round_trip(native, "1"), round_trip(py, "%kiln 1"), round_trip(py, "1")
        t = {"native": [], "bridge": [], "python": []}
        for _ in range(cells):
            t["native"].append(round_trip(native, "1"))
            t["bridge"].append(round_trip(py, "%kiln 1"))
            t["python"].append(round_trip(py, "1"))
    finally:
        for kc, km in ((native, native_km), (py, py_km)):
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    med = {k: statistics.median(v) * 1e3 for k, v in t.items()}
    print(f"round trip of a trivial cell, median of {cells} interleaved:")
    print(f"  native Kiln kernel      {med['native']:.2f} ms")
    print(f"  %kiln through ipykernel {med['bridge']:.2f} ms  "
          f"(bridge / native = {med['bridge'] / med['native']:.1f}x)")
    print(f"  ipykernel alone (`1`)   {med['python']:.2f} ms")
    print(f"  bridge overhead per cell: {med['bridge'] - med['native']:.2f} ms over native")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", help="the wheel (default: build-wheel/dist/*.whl)")
    ap.add_argument("--cells", type=int, default=200)
    ap.add_argument("--installs", type=int, default=3)
    a = ap.parse_args()
    whl = a.wheel or next(iter(sorted(glob.glob(os.path.join(ROOT, "build-wheel", "dist",
                                                             "kiln_kernel-*.whl")))), None)
    if whl:
        wheel_numbers(whl, a.installs)
    else:
        print("no wheel (run bash .ci/wheel first, or --wheel PATH): size and install skipped")
    bridge_numbers(a.cells)


if __name__ == "__main__":
    main()
