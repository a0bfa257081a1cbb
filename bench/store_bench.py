#!/usr/bin/env python3
"""Upload and download throughput to an S3 server: Kiln's object-store layer
(build/tests/store/store_tool: libcurl, SigV4, multipart in 8 MiB parts) side by side
with boto3 (upload_file / download_file with its default transfer settings) on the same
file, against moto's S3 server on 127.0.0.1 (authentication on, so both sign every
request), alternating rounds, medians.

    python3 bench/store_bench.py [--tool build/tests/store/store_tool] [--mb 64] [--rounds 5]

moto is a Python server, so the absolute figures are the server's; the ratio says
whether Kiln's client side costs more than boto3's for the same work.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "store"))
from moto_util import BUCKET, start_store  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", default="build/tests/store/store_tool")
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    srv, st = start_store()
    tmp = tempfile.mkdtemp(prefix="kiln-store-bench-")
    try:
        src = os.path.join(tmp, "blob.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(a.mb << 20))
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(st["creds"], AWS_ENDPOINT_URL=st["url"], AWS_REGION="us-east-1")
        s3 = st["s3"]
        t = {"kiln up": [], "boto3 up": [], "kiln down": [], "boto3 down": []}
        for i in range(a.rounds):
            t0 = time.perf_counter()
            subprocess.run([a.tool, f"s3://{BUCKET}", "put", "k.bin", src], env=env, check=True)
            t1 = time.perf_counter()
            s3.upload_file(src, BUCKET, "b.bin")
            t2 = time.perf_counter()
            subprocess.run([a.tool, f"s3://{BUCKET}", "get", "k.bin", src + ".k"], env=env,
                           check=True)
            t3 = time.perf_counter()
            s3.download_file(BUCKET, "b.bin", src + ".b")
            t4 = time.perf_counter()
            t["kiln up"].append(t1 - t0)
            t["boto3 up"].append(t2 - t1)
            t["kiln down"].append(t3 - t2)
            t["boto3 down"].append(t4 - t3)
        assert open(src + ".k", "rb").read() == open(src, "rb").read()
        mb = a.mb * 1.048576
        print(f"{a.mb} MiB file, moto S3 server on 127.0.0.1, median of {a.rounds} rounds "
              f"(Kiln times include starting store_tool and its HEAD of the bucket)")
        print(f"{'':12s} {'kiln MB/s':>10s} {'boto3 MB/s':>11s} {'kiln/boto3':>11s}")
        for d in ("up", "down"):
            k, b = statistics.median(t["kiln " + d]), statistics.median(t["boto3 " + d])
            print(f"{d:12s} {mb / k:10.1f} {mb / b:11.1f} {b / k:11.2f}")
    finally:
        srv.stop()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
