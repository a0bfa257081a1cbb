"""%sweep through the real kernel (jupyter_client), suite 'sweep': the cell returns at
once with a table that updates in place (update_display_data of its display id, sent
while other cells run), another cell and %results run meanwhile, %sweep wait ends with
every variant finished, %sweep stop and the kernel's shutdown leave every variant
checkpointed and no process behind, a bad parameter is the cell's error."""
import json
import os
import time

import pytest

from kiln_client import Kernel, collect, run
from test_sweep import has_ckpt, kiln_children, stage, wait_for

if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
    pytest.skip("Fashion-MNIST (Debian dataset-fashion-mnist) is not installed",
                allow_module_level=True)


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the kernel starts here, so relative paths agree
    monkeypatch.setenv("KILN_RESULTS", str(tmp_path / "results.sqlite"))
    k = Kernel(ipc=True)
    yield k
    k.close()


def drain_until_idle(k, msg_id, seen, timeout=120):
    """Every IOPub message up to msg_id's idle goes into seen; the reply of msg_id."""
    while True:
        m = k.kc.get_iopub_msg(timeout=timeout)
        seen.append(m)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):
            break
    while True:
        r = k.kc.get_shell_msg(timeout=timeout)
        if r["parent_header"].get("msg_id") == msg_id:
            return r["content"]


def test_sweep_runs_in_the_background_while_other_cells_run(kernel, tmp_path):
    stage(tmp_path / "stage.ipynb", subset=4096, params="lr = 0.001\nepochs = 3")
    seen = []
    t0 = time.time()
    sid = kernel.kc.execute("%sweep stage.ipynb -o sw -p lr 0.001,0.003 --parallel 2")
    reply = drain_until_idle(kernel, sid, seen)
    assert reply["status"] == "ok", reply
    assert time.time() - t0 < 20  # returns at once (the variants train for longer)
    first = [m for m in seen if m["msg_type"] == "display_data"]
    assert len(first) == 1
    did = first[0]["content"]["transient"]["display_id"]
    assert "lr=0.001" in first[0]["content"]["data"]["text/plain"]
    assert kiln_children("sw/")  # the variants are training now
    # another cell runs meanwhile, and %results sees the sweep's rows
    oid = kernel.kc.execute("x = 6 * 7\nx")
    reply = drain_until_idle(kernel, oid, seen)
    assert reply["status"] == "ok"
    assert any(m["msg_type"] == "execute_result" and m["content"]["data"]["text/plain"] == "42"
               for m in seen if m["parent_header"].get("msg_id") == oid)
    assert wait_for(lambda: all(os.path.exists(f"sw/{n}/log") and
                                "Recording as run" in open(f"sw/{n}/log").read()
                                for n in ["lr=0.001", "lr=0.003"]), 60)
    c = run(kernel, "%results --where sweep=sw")
    assert "lr=0.001" in c.text or "0.001" in c.text, c.text
    c = run(kernel, "%sweep status")
    assert "variant" in c.text and "lr=0.003" in c.text
    wid = kernel.kc.execute("%sweep wait")
    reply = drain_until_idle(kernel, wid, seen, timeout=240)
    assert reply["status"] == "ok", reply
    updates = [m for m in seen if m["msg_type"] == "update_display_data"]
    assert updates and all(m["content"]["transient"]["display_id"] == did for m in updates)
    assert all(m["parent_header"]["msg_id"] == sid for m in updates)  # the %sweep cell's table
    assert "2 of 2 finished; done" in updates[-1]["content"]["data"]["text/plain"]
    final = [m for m in seen if m["msg_type"] == "display_data"
             and m["parent_header"].get("msg_id") == wid]
    assert "2 of 2 finished" in final[-1]["content"]["data"]["text/plain"]
    for n in ["lr=0.001", "lr=0.003"]:
        assert json.load(open(f"sw/{n}/status.json"))["state"] == "finished"
    assert os.path.exists("sw/summary.csv") and not kiln_children("sw/")


def long_sweep(kernel, tmp_path, d):
    stage(tmp_path / "stage.ipynb", subset=1024, params="lr = 0.001\nepochs = 40")
    run(kernel, f"%sweep stage.ipynb -o {d} -p lr 0.001,0.003 --parallel 2")
    assert wait_for(lambda: all(has_ckpt(f"{d}/{n}/run") or
                                (os.path.exists(f"{d}/{n}/log") and
                                 "Training net" in open(f"{d}/{n}/log").read())
                                for n in ["lr=0.001", "lr=0.003"]), 60)
    time.sleep(0.3)


def test_stop_checkpoints_every_variant_and_leaves_no_orphan(kernel, tmp_path):
    long_sweep(kernel, tmp_path, "st")
    c = run(kernel, "%sweep stop", ok=False)
    assert c.errors and c.errors[0]["ename"] == "KeyboardInterrupt", c.text
    assert not kiln_children("st/")
    for n in ["lr=0.001", "lr=0.003"]:
        assert json.load(open(f"st/{n}/status.json"))["state"] == "interrupted"
        assert has_ckpt(f"st/{n}/run")


def test_kernel_shutdown_stops_the_sweep(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KILN_RESULTS", str(tmp_path / "results.sqlite"))
    k = Kernel(ipc=True)
    try:
        long_sweep(k, tmp_path, "sd")
    finally:
        k.close()  # shutdown_request: the session ends, the sweep with it
    assert wait_for(lambda: not kiln_children("sd/"), 60)
    for n in ["lr=0.001", "lr=0.003"]:
        assert json.load(open(f"sd/{n}/status.json"))["state"] == "interrupted"
        assert has_ckpt(f"sd/{n}/run")


def test_a_bad_parameter_is_the_cells_error(kernel, tmp_path):
    stage(tmp_path / "stage.ipynb")
    c = run(kernel, "%sweep stage.ipynb -o bad -p depth 1,2", ok=False)
    assert c.errors[0]["ename"] == "ValueError"
    assert "does not assign depth" in c.errors[0]["evalue"]
    assert not os.path.exists("bad")
    c = run(kernel, "%sweep wait", ok=False)
    assert c.errors[0]["ename"] == "UsageError" and "no sweep" in c.errors[0]["evalue"]


def test_train_background_is_a_sweep_of_one(kernel, tmp_path):
    run(kernel, "%dataset fashion-mnist --subset 4096 --val 64 --samples 0")
    run(kernel, "%%model net\nconv2d 4 3\nrelu\nflatten\ndense 10")
    c = run(kernel, "%train net --epochs 2 --background", ok=False)
    assert c.errors[0]["ename"] == "UsageError" and "--run-dir" in c.errors[0]["evalue"]
    seen = []
    t0 = time.time()
    bid = kernel.kc.execute("%train net --batch 16 --epochs 3 --lr 0.002 --run-dir bg --background")
    reply = drain_until_idle(kernel, bid, seen)
    assert reply["status"] == "ok", reply
    assert time.time() - t0 < 20
    first = [m for m in seen if m["msg_type"] == "display_data"]
    assert len(first) == 1 and "in the background: running" in first[0]["content"]["data"]["text/plain"]
    did = first[0]["content"]["transient"]["display_id"]
    nb = json.load(open("bg/background.ipynb"))
    assert ["".join(c["source"]).split()[0] for c in nb["cells"]] == ["%dataset", "%%model", "%train"]
    assert "--background" not in "".join(nb["cells"][2]["source"])
    oid = kernel.kc.execute("y = 2 + 3\ny")
    assert drain_until_idle(kernel, oid, seen)["status"] == "ok"
    wid = kernel.kc.execute("%sweep wait")
    assert drain_until_idle(kernel, wid, seen, timeout=240)["status"] == "ok"
    updates = [m for m in seen if m["msg_type"] == "update_display_data"]
    assert updates and all(m["content"]["transient"]["display_id"] == did for m in updates)
    assert "finished" in updates[-1]["content"]["data"]["text/plain"]
    assert "epoch 3 of 3" in updates[-1]["content"]["data"]["text/plain"]
    assert has_ckpt("bg") and not kiln_children("bg/")
    c = run(kernel, "%resume bg")  # the trained model comes into this kernel
    assert "net" in c.text
