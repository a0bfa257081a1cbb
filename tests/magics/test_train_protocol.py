"""%train through the Jupyter protocol: the progress display is ONE display_data whose
display_id is then only updated (update_display_data), bad input gives error replies
and leaves the kernel usable, and the kernel's memory after ten %train runs is back
within a few MB of where it was (VmRSS from /proc)."""
import gzip
import http.server
import os
import shutil
import struct
import tempfile
import threading

import pytest

from kiln_client import Kernel, execute, kiln_binary
from kiln_env import results_tmpdir


@pytest.fixture(scope="module")
def k():
    with results_tmpdir("kiln-tp-"):
        kern = Kernel()
        yield kern
        kern.close()


def ok(k, code):
    reply, msgs = execute(k.kc, code, timeout=300)
    assert reply["content"]["status"] == "ok", reply["content"]
    return msgs


def test_setup(k):
    ok(k, "%dataset fashion-mnist --subset 512 --samples 0")
    ok(k, "%%model tiny\nconv2d 4 3\nrelu\nmaxpool 2\nflatten\ndense 10")


def test_progress_is_one_display_updated_in_place(k):
    msgs = ok(k, "%train tiny --batch 32 --epochs 2")
    progress = [m for m in msgs if m["msg_type"] in ("display_data", "update_display_data")
                and m["content"]["data"].get("text/plain", "").startswith("epoch ")]
    ids = {m["content"]["transient"]["display_id"] for m in progress}
    assert len(ids) == 1
    assert progress[0]["msg_type"] == "display_data"
    assert all(m["msg_type"] == "update_display_data" for m in progress[1:])
    assert len(progress) >= 2
    assert "step 32/32" in progress[-1]["content"]["data"]["text/plain"]


@pytest.mark.parametrize("code,ename,words", [
    ("%nosuchmagic", "UsageError", "nosuchmagic"),
    ("%train tiny --bogus 1", "UsageError", "--bogus"),
    ("%train tiny --lr fast", "ValueError", "--lr"),  # a value an option cannot take
    ("%train nosuch", "NameError", "nosuch"),
    ("%dataset /nonexistent/data", "FileNotFoundError", "/nonexistent/data"),
    ("%%model wrong\nflatten\ndense 7", "ValueError", "wrong"),
])
def test_bad_input_is_an_error_reply(k, code, ename, words):
    content = execute(k.kc, code, timeout=300)[0]["content"]
    assert content["status"] == "error"
    assert content["ename"] == ename, content
    assert words in content["evalue"]
    ok(k, "1 + 1")  # still usable


def test_interrupt_stops_training_and_keeps_the_model(k):
    msg_id = k.kc.execute("%train tiny --batch 8 --epochs 1000")
    # wait until training shows progress, then interrupt (interrupt_mode "message")
    while True:
        m = k.kc.get_iopub_msg(timeout=120)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "display_data"
                and m["content"]["data"].get("text/plain", "").startswith("epoch ")):
            break
    k.km.interrupt_kernel()
    reply = k.kc.get_shell_msg(timeout=120)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = k.kc.get_shell_msg(timeout=120)
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "KeyboardInterrupt", c
    assert "stopped by an interrupt after step" in c["evalue"]
    msgs = ok(k, "%evaluate tiny")  # the model is usable
    assert any("accuracy" in m["content"].get("data", {}).get("text/plain", "") for m in msgs)


def test_help_completion_inspect(k):
    msgs = ok(k, "%train --help")
    text = "".join(m["content"].get("text", "") for m in msgs if m["msg_type"] == "stream")
    for opt in ("--checkpoint-every", "--time-limit", "--precision {fp32,bf16,fp16}"):
        assert opt in text
    k.kc.complete("%train tiny --ep", 16)
    reply = k.kc.get_shell_msg(timeout=30)["content"]
    assert "--epochs" in reply["matches"]
    k.kc.inspect("%evaluate", 9)
    reply = k.kc.get_shell_msg(timeout=30)["content"]
    assert reply["found"] and "--split" in reply["data"]["text/plain"]


def test_memory_after_ten_runs(k):
    with open(kiln_binary(), "rb") as f:
        if b"__asan_init" in f.read():
            pytest.skip("ASan build: its quarantine keeps freed memory, RSS says nothing")
    ok(k, "%train tiny --batch 32")  # warm-up: allocator pools, results store, plot
    before = k.rss_kib()
    for i in range(10):
        ok(k, f"%train tiny --batch 32 --seed {i}")
    after = k.rss_kib()
    print(f"VmRSS before {before} KiB, after ten runs {after} KiB ({after - before:+d} KiB)")
    assert after - before < 4096, f"VmRSS grew {after - before} KiB over ten runs"


def write_idx(d, prefix, n, seed):
    """n 8x8 images with labels 0..2 as gzipped IDX files (prefix train / t10k)."""
    import random
    rnd = random.Random(seed)
    labels = bytes(rnd.randrange(3) for _ in range(n))
    pixels = bytes(rnd.randrange(256) for _ in range(n * 64))
    with gzip.open(os.path.join(d, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">BBBBIII", 0, 0, 8, 3, n, 8, 8) + pixels)
    with gzip.open(os.path.join(d, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">BBBBI", 0, 0, 8, 1, n) + labels)


def test_dataset_download_progress(k):
    """%dataset from a URL (a local server): one download display updated in place,
    then the data set's summary."""
    src, dst = tempfile.mkdtemp(prefix="kiln-srv-"), tempfile.mkdtemp(prefix="kiln-dl-")
    write_idx(src, "train", 2000, 1)
    write_idx(src, "t10k", 200, 2)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=src, **kw)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        msgs = ok(k, f"%dataset http://127.0.0.1:{srv.server_address[1]}/ --dir {dst} "
                     "--samples 4")
    finally:
        srv.shutdown()
        shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(dst, ignore_errors=True)
    dl = [m for m in msgs if m["msg_type"] in ("display_data", "update_display_data")
          and m["content"]["data"].get("text/plain", "").startswith("download")]
    assert dl and dl[0]["msg_type"] == "display_data"
    assert len({m["content"]["transient"]["display_id"] for m in dl}) == 1
    assert all(m["msg_type"] == "update_display_data" for m in dl[1:])
    assert dl[-1]["content"]["data"]["text/plain"].startswith("downloaded ")
    text = "".join(m["content"].get("data", {}).get("text/plain", "") for m in msgs)
    assert "train 2000, val 0, test 200" in text
