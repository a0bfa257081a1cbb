"""The %%kiln bridge in an ipykernel notebook (what Colab and Kaggle run): nbclient runs
`%load_ext kiln_kernel`, a Python form cell and %%kiln cells that load a Fashion-MNIST
subset, define a model and train with a run directory; then an interrupt mid-training
through jupyter_client and %resume in a fresh bridge; then a killed child."""
import json
import os
import re
import signal
import tempfile
import threading
import time

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import PyKernel, notebook, text_of

if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
    pytest.skip("Fashion-MNIST (Debian dataset-fashion-mnist) is not installed",
                allow_module_level=True)

SETUP = ["%%kiln\n%dataset fashion-mnist --subset $subset --val 64 --samples 0",
         "%%kiln\n%%model net\nconv2d 8 3\nrelu\nmaxpool 2\nflatten\ndense 10"]


@pytest.fixture(autouse=True)
def results_store(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_RESULTS", str(tmp_path / "results.sqlite"))


class CountingClient(NotebookClient):
    """nbclient, also counting each cell's iopub messages by type (nbclient applies
    update_display_data to the notebook, so the saved outputs cannot show them)."""

    def __init__(self, nb, **kw):
        super().__init__(nb, **kw)
        self.counts = {}

    def process_message(self, msg, cell, cell_index):
        per = self.counts.setdefault(cell_index, {})
        per[msg["msg_type"]] = per.get(msg["msg_type"], 0) + 1
        if msg["msg_type"] in ("display_data", "update_display_data"):
            did = msg["content"].get("transient", {}).get("display_id")
            per.setdefault("ids", []).append((msg["msg_type"], did))
        return super().process_message(msg, cell, cell_index)


def test_notebook_through_the_bridge(tmp_path):
    run_dir = tmp_path / "run"
    cells = [
        "%load_ext kiln_kernel",
        "epochs = 2  #@param {type:\"integer\"}\nsubset = 512  #@param {type:\"integer\"}\n"
        f"lr = 0.002  #@param {{type:\"number\"}}\nrun_dir = {str(run_dir)!r}",
        *SETUP,
        "%%kiln\nprint(\"from python:\", $epochs, {lr * 10}, \"$subset\")\n%device",
        "%%kiln\n%train net --batch 32 --epochs $epochs --lr $lr --run-dir $run_dir",
        "%kiln 6 * 7",
        "%%kiln\n%train no_such_model --epochs 1",
        "print('after the failing cell')",
    ]
    nb = notebook(cells, kernel="python3", language="python")
    client = CountingClient(nb, timeout=240, kernel_name="python3")
    with pytest.raises(CellExecutionError) as failed:
        client.execute()
    out = [c.outputs for c in nb.cells]

    # the failing %%kiln cell stops the run with Kiln's own error text
    assert "no_such_model" in str(failed.value)
    assert "no_such_model" in text_of(out[7])
    assert out[8] == [], "the cell after a failing %%kiln cell ran"
    assert [o["output_type"] for o in out[7]] == ["error"]

    # the Python values reached Kiln; a rich display came through with its MIME types
    said = text_of(out[4])
    assert "from python: 2 0.02 512" in said, said
    assert any("text/html" in o.get("data", {}) and "OpenBLAS" in o["data"]["text/html"]
               for o in out[4]), out[4]

    # training: relayed, the progress display updated in place, a checkpoint written
    trained = text_of(out[5])
    counts = client.counts[5]
    shown = [did for kind, did in counts["ids"] if kind == "display_data" and did]
    updates = [did for kind, did in counts["ids"] if kind == "update_display_data"]
    assert len(shown) == len(set(shown)), counts  # each display (progress, plot) shown once
    progress = [did for did in shown if did.endswith("progress")]
    assert len(progress) == 1, counts
    assert updates.count(progress[0]) >= 2, counts  # ...then updated in place
    assert set(updates) <= set(shown), counts  # no update for a display never shown
    assert len(updates) < 400, counts  # not a flood (Kiln throttles its updates)
    # in the saved notebook the updates replaced their display, added no output
    in_nb = [o for o in out[5] if o["output_type"] == "display_data"]
    assert len(in_nb) == counts["display_data"], out[5]
    assert "epoch 2" in trained.lower(), trained[-2000:]
    assert any(f.endswith(".safetensors") for f in os.listdir(run_dir)), os.listdir(run_dir)

    # a line magic and a result
    assert "42" in text_of(out[6])


def test_interrupt_checkpoints_then_resume_in_a_fresh_bridge(tmp_path):
    rd = tmp_path / "run"
    k = PyKernel()
    try:
        k.run("subset = 1024")
        for cell in SETUP:
            reply, text = k.run(cell)
            assert reply["status"] == "ok", text
        fired = []

        def on_msg(m, text):  # a periodic save shows in the relayed progress display
            saved = re.findall(r"last checkpoint: step (\d+)", text)
            if not fired and saved and int(saved[-1]) >= 10:
                fired.append(time.monotonic())
                k.km.interrupt_kernel()  # the notebook's stop button: SIGINT to ipykernel

        # 40 epochs of 64 steps: long enough that no machine finishes before the stop
        reply, text = k.run(f"%%kiln\n%train net --batch 16 --epochs 40 --lr 0.002 "
                            f"--run-dir {rd} --checkpoint-every 5steps", on_msg=on_msg)
        assert fired, "no checkpoint was reported before the end"
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", text[-2000:]
        # the cell's KeyboardInterrupt carries Kiln's message naming the step
        stopped = int(re.search(r"after step (\d+)", reply["evalue"]).group(1))
        assert stopped < 40 * 64, text[-2000:]
        assert os.path.exists(rd / ("ckpt-step%08d.safetensors" % stopped)), os.listdir(rd)
        reply, text = k.run("%kiln 1 + 1")  # the same child, still usable
        assert reply["status"] == "ok" and "2" in text
    finally:
        k.close()
    k = PyKernel()  # a fresh bridge and a fresh Kiln kernel: nothing defined
    try:
        reply, text = k.run(f"%kiln %resume {rd}")
        assert reply["status"] == "ok", text[-2000:]
        assert f"step {stopped} of {40 * 64}" in text, text[-2000:]
    finally:
        k.close()


def test_a_dead_child_is_reported_and_restarted():
    k = PyKernel()
    try:
        reply, text = k.run("%kiln x = 5")
        assert reply["status"] == "ok", text
        pid_code = ("b = get_ipython().magics_manager.registry['KilnMagics'].bridge\n"
                    "import os, signal; os.kill(b.km.provisioner.process.pid, signal.SIGKILL)\n"
                    "b.km.provisioner.process.wait()")
        reply, text = k.run(pid_code)
        assert reply["status"] == "ok", text
        reply, text = k.run("%kiln 6 * 7")
        assert reply["status"] == "ok", text
        assert "had stopped (exit status signal 9)" in text
        assert "42" in text
        reply, text = k.run("%kiln x")  # a new kernel: the old variables are gone
        assert reply["status"] == "error" and "x" in text
    finally:
        k.close()


def test_a_child_dying_mid_cell_raises():
    """The child killed while training (as the OOM killer would): the cell fails with
    KernelDied instead of waiting for ever; the next cell starts a new child."""
    k = PyKernel()
    try:
        k.run("subset = 2048")
        for cell in SETUP:
            reply, text = k.run(cell)
            assert reply["status"] == "ok", text
        kill = ("b = get_ipython().magics_manager.registry['KilnMagics'].bridge\n"
                "import os, signal, threading\n"
                "threading.Timer(1.5, os.kill, (b.km.provisioner.process.pid, signal.SIGKILL))"
                ".start()\n"
                "get_ipython().run_cell_magic('kiln', '', '%train net --batch 8 --epochs 50')")
        reply, text = k.run(kill)
        assert reply["status"] == "error", text[-2000:]
        assert "KernelDied" in text and "next %%kiln cell starts a new one" in text, text[-2000:]
        reply, text = k.run("%kiln 6 * 7")
        assert reply["status"] == "ok" and "42" in text, text
    finally:
        k.close()


def test_stop_shows_the_checkpoint_line_and_kilns_short_message(tmp_path):
    """Three stops in a row: each cell shows Kiln's "checkpoint: ..." line (relayed up to
    the child's idle status before the cell raises) and ends in Kiln's own short
    KeyboardInterrupt message, with no traceback through bridge.py; the child's log
    lines ("kiln: kernel ... ready", "kiln: interrupt requested") stay out of the cells."""
    k = PyKernel()
    try:
        k.run("subset = 1024")
        for cell in SETUP:
            reply, text = k.run(cell)
            assert reply["status"] == "ok", text
            assert "kiln: kernel" not in text, text
        for round in range(3):
            rd = tmp_path / f"run{round}"
            fired = []

            def on_msg(m, text):
                if not fired and re.search(r"step (\d\d+)/", text):
                    fired.append(1)
                    k.km.interrupt_kernel()

            # far more epochs than the stop leaves it: a slow kernel (ASan) must not
            # finish before the interrupt reaches it
            reply, text = k.run(f"%%kiln\n%train net --batch 16 --epochs 50 --run-dir {rd}",
                                on_msg=on_msg)
            assert fired and reply["status"] == "error", text[-2000:]
            assert reply["ename"] == "KeyboardInterrupt", reply
            where = re.search(r"after step (\d+)", reply["evalue"])
            assert where, (reply["evalue"], text[-2000:])
            stopped = int(where.group(1))
            assert re.search(r"checkpoint: \S+ckpt-step%08d\.safetensors" % stopped, text), \
                (round, text[-2000:])
            tb = reply["traceback"]
            assert "bridge.py" not in "\n".join(tb) and len(tb) <= 4, tb
            assert "kiln: interrupt requested" not in text and "kiln: kernel" not in text, \
                text[-2000:]
    finally:
        k.close()


def sweep_stage(path, subset, epochs):
    """A Kiln stage notebook for %sweep: a parameters cell, data, model, %train."""
    nb = notebook([("lr = 0.001\nepochs = %d" % epochs, ["parameters"]),
                   f"%dataset fashion-mnist --subset {subset} --val 64 --samples 0",
                   "%%model net\nconv2d 4 3\nrelu\nflatten\ndense 10",
                   "%train net --batch 16 --epochs $epochs --lr $lr --run-dir elsewhere"])
    nbformat.write(nb, str(path))


def sweep_processes(marker):
    """Live kiln processes (the sweep and its variants) whose command line names marker."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (b"sweep" in argv or b"run" in argv) and \
                any(marker.encode() in a for a in argv):
            out.append(int(pid))
    return out


def wait_for(pred, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.1)
    return False


def training(d):
    return all(os.path.exists(f"{d}/{n}/log") and "Training net" in open(f"{d}/{n}/log").read()
               for n in ("lr=0.001", "lr=0.003"))


def checkpointed(d, n):
    return os.path.isdir(f"{d}/{n}/run") and any(f.endswith(".safetensors")
                                                 for f in os.listdir(f"{d}/{n}/run"))


def test_sweep_table_updates_in_place_between_cells(tmp_path, monkeypatch):
    """%sweep in a %%kiln cell returns at once; its table keeps updating in place in that
    Python cell while no cell runs (update_display_data of its display id, the %sweep
    cell's parent); status and wait work; no process is left."""
    monkeypatch.chdir(tmp_path)
    sweep_stage(tmp_path / "stage.ipynb", 2048, 3)
    k = PyKernel()
    try:
        seen = []
        t0 = time.time()
        reply, text = k.run("%%kiln\n%sweep stage.ipynb -o bsw -p lr 0.001,0.003 --parallel 2",
                            on_msg=lambda m, t: seen.append(m))
        assert reply["status"] == "ok", text
        assert time.time() - t0 < 30, "%sweep did not return at once"
        shown = [m for m in seen if m["msg_type"] == "display_data"]
        assert len(shown) == 1 and "lr=0.003" in shown[0]["content"]["data"]["text/plain"]
        did = shown[0]["content"]["transient"]["display_id"]
        cell = shown[0]["parent_header"]["msg_id"]
        # no cell runs now: the updates still come, to the same display
        updates = []
        while not updates or "finished; done" not in \
                updates[-1]["content"]["data"]["text/plain"]:
            m = k.kc.get_iopub_msg(timeout=240)
            if m["msg_type"] == "update_display_data":
                updates.append(m)
        assert len(updates) >= 2 and all(
            u["content"]["transient"]["display_id"] == did for u in updates), updates
        assert all(u["parent_header"].get("msg_id") == cell for u in updates), \
            [u["parent_header"] for u in updates]
        assert "2 of 2 finished; done" in updates[-1]["content"]["data"]["text/plain"]
        reply, text = k.run("%kiln %sweep status")
        assert reply["status"] == "ok" and "lr=0.001" in text, text
        reply, text = k.run("%kiln %sweep wait")
        assert reply["status"] == "ok" and "2 of 2 finished" in text, text
        assert not sweep_processes("bsw")
    finally:
        k.close()


def test_sweep_interrupt_checkpoints_every_variant_and_kill_leaves_no_orphan(tmp_path,
                                                                            monkeypatch):
    """The stop button during `%sweep wait` stops the sweep: every variant checkpoints,
    the cell raises KeyboardInterrupt, no process is left. The same %sweep again resumes;
    the Python kernel killed outright (kill -9) then takes Kiln, the sweep and its
    variants with it, each variant checkpointed."""
    monkeypatch.chdir(tmp_path)
    # enough epochs that no variant can finish before the stop button, however fast the
    # machine (40 epochs of this net ended within the second on an idle one)
    sweep_stage(tmp_path / "stage.ipynb", 1024, 4000)
    start = "%%kiln\n%sweep stage.ipynb -o bint -p lr 0.001,0.003 --parallel 2"
    k = PyKernel()
    try:
        reply, text = k.run(start)
        assert reply["status"] == "ok", text
        assert wait_for(lambda: training("bint"), 120)
        timer = threading.Timer(1.0, k.km.interrupt_kernel)  # the stop button
        timer.start()
        reply, text = k.run("%kiln %sweep wait")
        timer.join()
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", text[-2000:]
        assert "every running variant checkpointed" in reply["evalue"], reply["evalue"]
        assert not sweep_processes("bint")
        for n in ("lr=0.001", "lr=0.003"):
            assert json.load(open(f"bint/{n}/status.json"))["state"] == "interrupted"
            assert checkpointed("bint", n)
        reply, text = k.run(start)  # again: the variants continue
        assert reply["status"] == "ok", text
        assert wait_for(lambda: all("Resuming 'net'" in open(f"bint/{n}/log").read()
                                    for n in ("lr=0.001", "lr=0.003")), 120)
        assert sweep_processes("bint")
        os.kill(k.km.provisioner.process.pid, signal.SIGKILL)
        assert wait_for(lambda: not sweep_processes("bint"), 120), sweep_processes("bint")
        for n in ("lr=0.001", "lr=0.003"):
            assert json.load(open(f"bint/{n}/status.json"))["state"] == "interrupted"
    finally:
        k.close()


def test_train_background_table_updates_between_cells(tmp_path, monkeypatch):
    """%train --background through the bridge: the cell returns at once and its table
    keeps updating in place between cells; %sweep wait ends with the run trained."""
    monkeypatch.chdir(tmp_path)
    k = PyKernel()
    try:
        k.run("subset = 2048")
        for cell in SETUP:
            reply, text = k.run(cell)
            assert reply["status"] == "ok", text
        seen = []
        reply, text = k.run(f"%%kiln\n%train net --batch 16 --epochs 3 --run-dir {tmp_path}/bg "
                            f"--background", on_msg=lambda m, t: seen.append(m))
        assert reply["status"] == "ok", text
        shown = [m for m in seen if m["msg_type"] == "display_data"
                 and m["content"].get("transient", {}).get("display_id")]
        did = shown[-1]["content"]["transient"]["display_id"]
        updates = []
        while not updates or "finished" not in updates[-1]["content"]["data"]["text/plain"]:
            m = k.kc.get_iopub_msg(timeout=240)
            if m["msg_type"] == "update_display_data":
                updates.append(m)
        assert len(updates) >= 2 and all(
            u["content"]["transient"]["display_id"] == did for u in updates), updates
        reply, text = k.run("%kiln %sweep wait")
        assert reply["status"] == "ok", text
        assert any(f.endswith(".safetensors") for f in os.listdir(tmp_path / "bg"))
    finally:
        k.close()
