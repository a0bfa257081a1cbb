"""test_download.py - rt_download_file and the named-set download path against a
local HTTP server (http_server.py) on 127.0.0.1, driven through dataset_tool.

Run by meson (suite 'dataset') with DATASET_TOOL set to the built tool; no
network beyond 127.0.0.1 is used. Payloads are small IDX / CIFAR files generated
here, with their SHA-256 computed here and passed in (--sha256, --sha256sums).
"""
import gzip
import hashlib
import io
import os
import random
import socket
import struct
import subprocess
import sys
import tarfile
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_server import TestServer  # noqa: E402

TOOL = os.environ.get("DATASET_TOOL")
if not TOOL or not os.path.exists(TOOL):
    pytest.skip("DATASET_TOOL is not set (run through meson test)", allow_module_level=True)


def run_tool(*args, env=None, timeout=60):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                       env=e)
    out = {"rc": p.returncode, "progress": [], "stderr": p.stderr}
    for line in p.stdout.splitlines():
        key, _, val = line.partition(" ")
        if key == "progress":
            out["progress"].append(val)
        else:
            out[key] = val
    return out


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def idx_images(n, rows=6, cols=5, seed=1):
    data = random.Random(seed).randbytes(n * rows * cols)   # incompressible, repeatable
    return struct.pack(">IIII", 0x803, n, rows, cols) + data


def idx_labels(n, seed=1):
    return struct.pack(">II", 0x801, n) + bytes((i + seed) % 10 for i in range(n))


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    srv = TestServer(str(root)).start()
    yield srv
    srv.stop()


@pytest.fixture
def payload(server):
    """A ~120 kB file on the server (big enough to cut and throttle)."""
    data = gzip.compress(idx_images(4000, 6, 5), mtime=0)
    path = os.path.join(server.root, "blob.gz")
    with open(path, "wb") as f:
        f.write(data)
    return data


def test_good_download(server, payload, tmp_path):
    dest = tmp_path / "out" / "blob.gz"
    dest.parent.mkdir()
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload))
    assert r["rc"] == 0, r
    assert r["status"] == "OK"
    assert dest.read_bytes() == payload
    assert not os.path.exists(str(dest) + ".part")
    assert int(r["bytes"]) == len(payload)
    assert r["http"] == "200" and r["resumed_from"] == "0" and r["attempts"] == "1"
    assert [e["range"] for e in server.log] == [None]
    last = r["progress"][-1].split()
    assert last == ["blob.gz", str(len(payload)), str(len(payload))]


def test_bad_checksum_is_refused(server, payload, tmp_path):
    server.config["corrupt"] = True
    dest = tmp_path / "blob.gz"
    want = sha256(payload)
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", want)
    assert r["rc"] == 1
    assert r["status"] == "ValueError"
    bad = bytearray(payload)
    bad[len(bad) // 2] ^= 0xFF
    assert "blob.gz" in r["msg"] and want in r["msg"] and sha256(bytes(bad)) in r["msg"]
    # nothing that looks valid is left behind
    assert not dest.exists()
    assert not os.path.exists(str(dest) + ".part")


def test_cut_off_then_resume_with_range(server, payload, tmp_path):
    server.config.update(cut_after=30000, cut_count=1)
    dest = tmp_path / "blob.gz"
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload))
    assert r["rc"] == 1 and r["status"] == "OSError"
    assert "cut off after 30000 of %d bytes" % len(payload) in r["msg"]
    part = str(dest) + ".part"
    assert os.path.getsize(part) == 30000 and not dest.exists()
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload))
    assert r["rc"] == 0, r
    assert dest.read_bytes() == payload and not os.path.exists(part)
    assert r["resumed_from"] == "30000" and r["http"] == "206"
    assert server.log[1]["range"] == "bytes=30000-" and server.log[1]["status"] == 206


def test_retries_resume_within_one_call(server, payload, tmp_path):
    server.config.update(cut_after=10000, cut_count=2)
    dest = tmp_path / "blob.gz"
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload),
                 "--retries", 3)
    assert r["rc"] == 0, r
    assert r["attempts"] == "3"
    assert [e["range"] for e in server.log] == [None, "bytes=10000-", "bytes=20000-"]
    assert dest.read_bytes() == payload


def test_server_without_range_restarts_cleanly(server, payload, tmp_path):
    server.config["no_range"] = True
    dest = tmp_path / "blob.gz"
    stale = b"stale bytes from an older, different file" * 100
    with open(str(dest) + ".part", "wb") as f:
        f.write(stale)
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload))
    assert r["rc"] == 0, r
    assert server.log[0]["range"] == "bytes=%d-" % len(stale)
    assert server.log[0]["status"] == 200
    assert r["resumed_from"] == "0"
    assert dest.read_bytes() == payload


def test_complete_or_oversized_part(server, payload, tmp_path):
    dest = tmp_path / "blob.gz"
    with open(str(dest) + ".part", "wb") as f:   # whole file already there: 416, verified
        f.write(payload)
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload))
    assert r["rc"] == 0, r
    assert dest.read_bytes() == payload
    assert [e["status"] for e in server.log] == [416]
    dest.unlink()
    with open(str(dest) + ".part", "wb") as f:   # longer than the file: restart
        f.write(payload + b"junk")
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload))
    assert r["rc"] == 0, r
    assert dest.read_bytes() == payload
    assert [e["status"] for e in server.log[1:]] == [416, 200]


def test_interrupt_keeps_part_and_resumes(server, payload, tmp_path):
    server.config.update(chunk=2000, delay=0.02)     # ~100 kB/s: the stop lands mid-way
    dest = tmp_path / "blob.gz"
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload),
                 "--stop-after", 20000)
    assert r["rc"] == 1 and r["status"] == "KeyboardInterrupt", r
    assert "interrupted" in r["msg"] and ".part is kept" in r["msg"]
    part = str(dest) + ".part"
    size = os.path.getsize(part)
    assert 20000 <= size < len(payload) and not dest.exists()
    server.config.update(chunk=65536, delay=0.0)
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload))
    assert r["rc"] == 0, r
    assert server.log[-1]["range"] == "bytes=%d-" % size
    assert dest.read_bytes() == payload


def test_two_processes_share_one_download(server, payload, tmp_path):
    server.config.update(chunk=2000, delay=0.02)     # ~1.2 s transfer
    dest = tmp_path / "blob.gz"
    args = [TOOL, "download", server.url + "blob.gz", str(dest), "--sha256", sha256(payload)]
    first = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    for _ in range(200):                             # until the first one is transferring
        if server.log:
            break
        time.sleep(0.01)
    second = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    out1, _ = first.communicate(timeout=30)
    out2, _ = second.communicate(timeout=30)
    assert first.returncode == 0 and second.returncode == 0, (out1, out2)
    assert len(server.log) == 1                      # the second waited and reused it
    assert "attempts 0" in out2 and dest.read_bytes() == payload


def test_stall_times_out_and_keeps_part(server, payload, tmp_path):
    server.config.update(cut_after=5000, stall=0.0)
    dest = tmp_path / "blob.gz"
    run_tool("download", server.url + "blob.gz", dest)          # leaves a 5000-byte part
    server.config.update(cut_after=None, stall=4.0)
    r = run_tool("download", server.url + "blob.gz", dest, "--stall", 1)
    assert r["rc"] == 1 and r["status"] == "OSError"
    assert "timed out after 5000" in r["msg"] and ".part is kept" in r["msg"], r
    assert os.path.getsize(str(dest) + ".part") == 5000


@pytest.mark.parametrize("code", [404, 500])
def test_http_errors(server, payload, tmp_path, code):
    server.config["status"] = code
    dest = tmp_path / "blob.gz"
    r = run_tool("download", server.url + "blob.gz", dest, "--sha256", sha256(payload))
    assert r["rc"] == 1 and r["status"] == "OSError"
    assert "HTTP %d" % code in r["msg"] and "blob.gz" in r["msg"]
    assert r["http"] == str(code)
    assert not dest.exists() and not os.path.exists(str(dest) + ".part")


def test_missing_file_is_404(server, tmp_path):
    r = run_tool("download", server.url + "nope.gz", tmp_path / "nope.gz")
    assert r["rc"] == 1 and "HTTP 404" in r["msg"] and "HINT" in r["msg"]


def test_server_down(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                   # nothing listens there now
    r = run_tool("download", "http://127.0.0.1:%d/x.gz" % port, tmp_path / "x.gz")
    assert r["rc"] == 1 and r["status"] == "OSError"
    assert "cannot connect" in r["msg"] and str(port) in r["msg"]
    assert not (tmp_path / "x.gz").exists()


def test_bad_arguments(tmp_path):
    r = run_tool("download", "http://127.0.0.1:1/x", tmp_path / "x", "--sha256", "abc")
    assert r["rc"] == 1 and r["status"] == "ValueError" and "64 hex" in r["msg"]


# ---- named sets over HTTP (the table, with hashes from a manifest) ----

IDX_FILES = {
    "train-images-idx3-ubyte.gz": idx_images(50, 28, 28, seed=1),
    "train-labels-idx1-ubyte.gz": idx_labels(50, seed=1),
    "t10k-images-idx3-ubyte.gz": idx_images(20, 28, 28, seed=2),
    "t10k-labels-idx1-ubyte.gz": idx_labels(20, seed=2),
}


def publish_idx(server, tmp_path, corrupt_name=None):
    lines = []
    for name, raw in IDX_FILES.items():
        data = gzip.compress(raw, mtime=0)
        with open(os.path.join(server.root, name), "wb") as f:
            f.write(data)
        h = sha256(data)
        if name == corrupt_name:
            h = "0" * 64
        lines.append("%s  %s\n" % (h, name))
    manifest = tmp_path / "SHA256SUMS"
    manifest.write_text("".join(lines))
    return manifest


def test_named_set_downloads_into_dir(server, tmp_path):
    manifest = publish_idx(server, tmp_path)
    d = tmp_path / "data"
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = run_tool("load", "mnist", "--dir", d, "--url", server.url, "--sha256sums", manifest,
                 "--val", 10, env=env)
    assert r["rc"] == 0, r
    assert r["train_n"] == "40" and r["val_n"] == "10" and r["test_n"] == "20"
    assert r["train_shape"] == "1x28x28" and r["class0"] == "0"
    assert r["source"] == server.url
    assert sorted(os.listdir(d)) == sorted(IDX_FILES)
    assert sorted(e["path"].lstrip("/") for e in server.log) == sorted(IDX_FILES)
    files_done = {p.split()[0] for p in r["progress"]}
    assert files_done == set(IDX_FILES)
    # A second load finds the files in --dir and asks the server nothing.
    n = len(server.log)
    r2 = run_tool("load", "mnist", "--dir", d, "--url", server.url, "--sha256sums", manifest,
                  "--val", 10, env=env)
    assert r2["rc"] == 0 and len(server.log) == n and r2["source"] == str(d)
    assert r2["train_checksum"] == r["train_checksum"]


def test_named_set_downloads_into_cache(server, tmp_path):
    manifest = publish_idx(server, tmp_path)
    cache = tmp_path / "cache"
    r = run_tool("load", "fashion-mnist", "--url", server.url, "--sha256sums", manifest,
                 env={"XDG_CACHE_HOME": str(cache)})
    assert r["rc"] == 0, r
    # --url skips the system copy, so the generated files are what loaded
    assert r["train_n"] == "50" and r["class0"] == "T-shirt/top"
    assert sorted(os.listdir(cache / "kiln" / "datasets" / "fashion-mnist")) == sorted(IDX_FILES)


def test_named_set_bad_hash_leaves_nothing_valid(server, tmp_path):
    manifest = publish_idx(server, tmp_path, corrupt_name="t10k-images-idx3-ubyte.gz")
    d = tmp_path / "data"
    r = run_tool("load", "mnist", "--dir", d, "--url", server.url, "--sha256sums", manifest,
                 env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert r["rc"] == 1 and r["status"] == "ValueError"
    assert "t10k-images-idx3-ubyte.gz" in r["msg"] and "0" * 64 in r["msg"]
    assert not (d / "t10k-images-idx3-ubyte.gz").exists()
    assert not (d / "t10k-images-idx3-ubyte.gz.part").exists()


def test_named_set_without_manifest_entry(server, tmp_path):
    manifest = tmp_path / "SHA256SUMS"
    manifest.write_text("%s  something-else.gz\n" % ("a" * 64))
    r = run_tool("load", "mnist", "--dir", tmp_path / "d", "--url", server.url,
                 "--sha256sums", manifest, env={"XDG_CACHE_HOME": str(tmp_path / "c")})
    assert r["rc"] == 1 and "no SHA-256 for train-images-idx3-ubyte.gz" in r["msg"]
    assert server.log == []


def test_malformed_manifest_is_refused(server, tmp_path):
    manifest = tmp_path / "SHA256SUMS"
    manifest.write_text("# hashes\n\nnot-a-hash  train-images-idx3-ubyte.gz\n")
    r = run_tool("load", "mnist", "--dir", tmp_path / "d", "--url", server.url,
                 "--sha256sums", manifest, env={"XDG_CACHE_HOME": str(tmp_path / "c")})
    assert r["rc"] == 1 and r["status"] == "ValueError"
    assert "%s:3: expected" % manifest in r["msg"]
    assert server.log == []


def test_named_set_interrupted_download(server, tmp_path):
    manifest = publish_idx(server, tmp_path)
    server.config.update(chunk=1000, delay=0.02)
    d = tmp_path / "data"
    r = run_tool("load", "mnist", "--dir", d, "--url", server.url, "--sha256sums", manifest,
                 "--stop-after", 5000, env={"XDG_CACHE_HOME": str(tmp_path / "c")})
    assert r["rc"] == 1 and r["status"] == "KeyboardInterrupt", r
    assert "train_n" not in r


def test_cifar10_from_server(server, tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        def add(name, data):
            ti = tarfile.TarInfo("cifar-10-batches-bin/" + name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        for i, name in enumerate(["data_batch_%d.bin" % k for k in range(1, 6)] +
                                 ["test_batch.bin"]):
            add(name, b"".join(bytes([(i + r) % 10]) + bytes([(r * 3 + i) % 256]) * 3072
                               for r in range(4)))
        add("batches.meta.txt", b"airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\n"
                                b"horse\nship\ntruck\n")
    data = buf.getvalue()
    with open(os.path.join(server.root, "cifar-10-binary.tar.gz"), "wb") as f:
        f.write(data)
    manifest = tmp_path / "SHA256SUMS"
    manifest.write_text("%s *cifar-10-binary.tar.gz\n" % sha256(data))
    d = tmp_path / "data"
    r = run_tool("load", "cifar10", "--dir", d, "--url", server.url, "--sha256sums", manifest)
    assert r["rc"] == 0, r
    assert r["train_n"] == "20" and r["test_n"] == "4" and r["train_shape"] == "3x32x32"
    assert r["class0"] == "airplane"
    assert (d / "cifar-10-binary.tar.gz").read_bytes() == data


# ---- a URL as the data set name (no built-in hashes) ----

def test_url_of_idx_files(server, tmp_path):
    publish_idx(server, tmp_path)
    cache = tmp_path / "cache"
    r = run_tool("load", server.url, "--val", 5, env={"XDG_CACHE_HOME": str(cache)})
    assert r["rc"] == 0, r
    assert r["train_n"] == "45" and r["val_n"] == "5" and r["test_n"] == "20"
    assert r["classes"] == "10" and r["source"] == server.url
    (folder,) = os.listdir(cache / "kiln" / "datasets")
    assert folder.startswith("url-")
    n = len(server.log)
    r2 = run_tool("load", server.url, "--val", 5, env={"XDG_CACHE_HOME": str(cache)})
    assert r2["rc"] == 0 and len(server.log) == n       # cached: no new requests
    assert r2["train_checksum"] == r["train_checksum"]


def test_url_with_manifest_is_verified(server, tmp_path):
    manifest = publish_idx(server, tmp_path, corrupt_name="train-labels-idx1-ubyte.gz")
    d = tmp_path / "d"
    r = run_tool("load", server.url, "--dir", d, "--sha256sums", manifest)
    assert r["rc"] == 1 and r["status"] == "ValueError"
    assert "train-labels-idx1-ubyte.gz: SHA-256 mismatch" in r["msg"]
    assert not (d / "train-labels-idx1-ubyte.gz").exists()


def test_url_of_corrupt_idx_is_refused(server, tmp_path):
    publish_idx(server, tmp_path)
    with open(os.path.join(server.root, "t10k-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(gzip.compress(struct.pack(">II", 0x801, 19) + bytes(19), mtime=0))
    d = tmp_path / "d"
    r = run_tool("load", server.url, "--dir", d)
    assert r["rc"] == 1 and r["status"] == "ValueError"
    assert str(d / "t10k-labels-idx1-ubyte.gz") in r["msg"] and "has 19 labels" in r["msg"]


def test_named_set_download_failure_says_where_it_looked(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    d = tmp_path / "d"
    r = run_tool("load", "mnist", "--dir", d, "--url", "http://127.0.0.1:%d/" % port,
                 env={"XDG_CACHE_HOME": str(tmp_path / "c")})
    assert r["rc"] == 1 and r["status"] == "OSError"
    assert r["msg"].startswith("mnist is not in %s, %s/kiln/datasets/mnist; download failed: "
                               "cannot connect" % (d, tmp_path / "c")), r["msg"]
