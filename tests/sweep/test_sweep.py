"""`kiln sweep` end to end, suite 'sweep': the grid and its folder names, the notebooks,
run directories and logs, the results-store rows, the summary (table, csv, svg), the
placement of the variants on the cores, a parameter the notebook lacks, a failing
variant, a re-run that trains nothing, kill -9 of the sweep then a re-run that resumes
bit for bit, SIGTERM with no orphan process, --random, and successive halving equal to
training that was never paused. Data: Fashion-MNIST subsets of a few hundred images,
1 or 2 epochs of a tiny network: each sweep takes a second or two on 2 cores."""
import csv
import json
import os
import re
import signal
import sqlite3
import subprocess
import time

import numpy as np
import pytest
from safetensors.numpy import load_file

KILN = os.environ.get("KILN_BINARY", "kiln")

if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
    pytest.skip("Fashion-MNIST (Debian dataset-fashion-mnist) is not installed",
                allow_module_level=True)


def cell(src, tags=()):
    return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": src,
            "outputs": [], "execution_count": None}


def stage(path, subset=256, extra="", params="lr = 0.001\nepochs = 1", tags=("parameters",)):
    """A stage notebook whose %train names its own --run-dir (the sweep replaces it)."""
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        cell(params, tags),
        cell(f"%dataset fashion-mnist --subset {subset} --val 64 --samples 0"),
        cell("%%model net\nconv2d 4 3\nrelu\nflatten\ndense 10"),
        cell(f"%train net --batch 16 --epochs $epochs --lr $lr --run-dir elsewhere {extra}"),
    ]}
    with open(path, "w") as f:
        json.dump(nb, f)
    return path


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KILN_RESULTS", str(tmp_path / "results.sqlite"))
    return tmp_path


def sweep(*args, timeout=240):
    return subprocess.run([KILN, "sweep", *args], capture_output=True, text=True,
                          timeout=timeout)


def rows(db, name):
    """{variant: (run id, status)} of the store's runs tagged sweep=name."""
    c = sqlite3.connect(db)
    got = c.execute("SELECT r.id, r.status, v.value FROM runs r JOIN params s ON "
                    "s.run_id = r.id AND s.key = 'sweep' AND s.value = ? JOIN params v ON "
                    "v.run_id = r.id AND v.key = 'variant' ORDER BY r.id", (name,)).fetchall()
    c.close()
    return {v: (i, st) for i, st, v in got}


def count_runs(db):
    c = sqlite3.connect(db)
    n = c.execute("SELECT count(*) FROM runs").fetchone()[0]
    c.close()
    return n


def final_weights(run_dir):
    files = sorted(f for f in os.listdir(run_dir) if f.endswith(".safetensors"))
    return {k: v for k, v in load_file(os.path.join(run_dir, files[-1])).items()
            if k.startswith("model.")}, files[-1]


def assert_same_weights(a, b):
    wa, fa = final_weights(a)
    wb, fb = final_weights(b)
    assert fa == fb and sorted(wa) == sorted(wb)
    for k in wa:
        assert np.array_equal(wa[k], wb[k]), k


def kiln_children(marker):
    """Pids of live `kiln run` processes started in this test's folder (the current
    one: the sweep's children inherit it) whose command line names marker."""
    out, here = [], os.getcwd()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if os.readlink(f"/proc/{pid}/cwd") != here:
                continue
        except OSError:
            continue
        if state != "Z" and b"run" in argv and any(marker.encode() in a for a in argv):
            out.append(int(pid))
    return out


def test_grid_folders_notebooks_store_and_summary(work):
    nb = stage(work / "stage.ipynb")
    p = sweep(str(nb), "-o", "grid", "-p", "lr", "0.001,0.003", "-p", "epochs", "1,2",
              "--parallel", "2")
    assert p.returncode == 0, p.stderr
    names = ["epochs=1,lr=0.001", "epochs=1,lr=0.003", "epochs=2,lr=0.001", "epochs=2,lr=0.003"]
    assert sorted(d for d in os.listdir("grid") if os.path.isdir(f"grid/{d}")) == names
    for n in names:
        d = work / "grid" / n
        out = json.load(open(d / "out.ipynb"))
        injected = [c for c in out["cells"] if "injected-parameters" in c["metadata"]["tags"]]
        ep, lr = re.match(r"epochs=(\d),lr=([\d.]+)", n).groups()
        assert "".join(injected[0]["source"]) == f"# Parameters\nlr = {lr}\nepochs = {ep}\n"
        ckpts = [f for f in os.listdir(d / "run") if f.endswith(".safetensors")]
        assert ckpts, n  # the run directory is the variant's, not the notebook's
        assert "Training net" in open(d / "log").read()
        assert json.load(open(d / "status.json"))["state"] == "finished"
    assert not os.path.exists("elsewhere")
    got = rows(work / "results.sqlite", "grid")
    assert sorted(got) == names and all(st == "finished" for _, st in got.values())
    with open("grid/summary.csv") as f:
        table = list(csv.DictReader(f))
    assert sorted(r["variant"] for r in table) == names
    best = [float(r["best_val_accuracy"]) for r in table]
    assert best == sorted(best, reverse=True) and all(0 < b <= 1 for b in best)
    assert [int(r["epochs_done"]) for r in table] == [int(r["epochs"]) for r in table]
    assert [r["variant"] for r in table][0] in p.stdout.splitlines()[2]  # rank 1 printed first
    svg = open("grid/summary.svg").read()
    assert svg.count("<polyline") == 4 and all(n in svg for n in names)

    # the same command again: every variant is done, nothing trains, no new row
    before = count_runs(work / "results.sqlite")
    p = sweep(str(nb), "-o", "grid", "-p", "lr", "0.001,0.003", "-p", "epochs", "1,2",
              "--parallel", "2")
    assert p.returncode == 0, p.stderr
    assert "4 of 4 variants already done" in p.stderr and "started" not in p.stderr
    assert count_runs(work / "results.sqlite") == before


def test_placement_splits_the_cores(work):
    nb = stage(work / "stage.ipynb")
    ncpu = len(os.sched_getaffinity(0))
    p = sweep(str(nb), "-o", "place", "-p", "lr", "0.001,0.002,0.003", "--parallel", "2",
              "--dry-run")
    assert p.returncode == 0, p.stderr
    slots = re.findall(r"slot \d: cpu, (\d+) threads?, cores ([\d,]+)", p.stdout)
    want = min(2, ncpu)
    assert len(slots) == want
    cores = [c for _, cs in slots for c in cs.split(",")]
    assert len(set(cores)) == len(cores)  # no core in two slots
    assert all(int(t) == max(ncpu // want, 1) == len(cs.split(",")) for t, cs in slots)
    assert not os.path.exists("place")  # a dry run writes nothing
    # the real run: each variant's %train has its share of the threads
    p = sweep(str(nb), "-o", "place", "-p", "lr", "0.001,0.002,0.003", "--parallel", "2")
    assert p.returncode == 0, p.stderr
    for n in ["lr=0.001", "lr=0.002", "lr=0.003"]:
        log = open(f"place/{n}/log").read()
        t = max(ncpu // want, 1)
        assert f"device cpu ({t} thread{'s' if t > 1 else ''})" in log, log
    # more at once than cores: capped, never oversubscribed
    p = sweep(str(nb), "-o", "x", "-p", "lr", ",".join(str(0.001 * i) for i in range(1, 9)),
              "--parallel", str(ncpu + 3), "--dry-run")
    assert p.returncode == 0 and len(re.findall(r"slot \d+: cpu, 1 thread,", p.stdout)) == ncpu
    # GPUs: one slot a device (placement only: nothing runs in a dry run)
    p = sweep(str(nb), "-o", "x", "-p", "lr", "0.001,0.002,0.003", "--devices", "cuda:0,1",
              "--dry-run")
    assert p.returncode == 0, p.stderr
    assert re.findall(r"slot \d: (cuda:\d)", p.stdout) == ["cuda:0", "cuda:1"]


def test_bad_parameters_are_refused_before_anything_runs(work):
    nb = stage(work / "stage.ipynb")
    p = sweep(str(nb), "-o", "bad", "-p", "lr", "0.001,0.003", "-p", "depth", "2,3")
    assert p.returncode == 2
    assert "the parameters cell does not assign depth" in p.stderr and "nothing was run" in p.stderr
    untagged = stage(work / "plain.ipynb", tags=())
    p = sweep(str(untagged), "-o", "bad", "-p", "lr", "0.001,0.003")
    assert p.returncode == 2 and "no parameters cell" in p.stderr
    p = sweep(str(nb), "-o", "bad", "-p", "lr", "1e-4:1e-2:log")
    assert p.returncode == 2 and "a range needs --random K" in p.stderr
    assert not os.path.exists("bad") and not os.path.exists(work / "results.sqlite")


def test_a_failing_variant_is_named_and_the_others_finish(work):
    nb = stage(work / "stage.ipynb")
    p = sweep(str(nb), "-o", "fail", "-p", "lr", "0.001,-1,0.003", "--parallel", "2")
    assert p.returncode == 1
    assert "lr=-1 failed (exit 1); the end of fail/lr=-1/log:" in p.stderr, p.stderr
    assert "raised ValueError: %train: --lr" in p.stderr.split("the end of fail/lr=-1/log:")[1]
    st = {n: json.load(open(f"fail/{n}/status.json"))["state"]
          for n in ["lr=0.001", "lr=-1", "lr=0.003"]}
    assert st == {"lr=0.001": "finished", "lr=-1": "failed", "lr=0.003": "finished"}
    table = list(csv.DictReader(open("fail/summary.csv")))
    assert table[-1]["variant"] == "lr=-1" and table[-1]["state"] == "failed"


def wait_for(pred, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.05)
    return False


def has_ckpt(d):
    return os.path.isdir(d) and any(f.endswith(".safetensors") for f in os.listdir(d))


ARGS = ["-p", "lr", "0.001,0.003", "--parallel", "2"]


def test_kill9_then_rerun_resumes_bit_for_bit(work):
    nb = stage(work / "stage.ipynb", subset=2048, extra="--checkpoint-every 8steps",
               params="lr = 0.001\nepochs = 3")
    ref = sweep(str(nb), "-o", "ref", *ARGS)
    assert ref.returncode == 0, ref.stderr
    s = subprocess.Popen([KILN, "sweep", str(nb), "-o", "k9", *ARGS],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: has_ckpt("k9/lr=0.001/run") and has_ckpt("k9/lr=0.003/run"))
    s.send_signal(signal.SIGKILL)
    s.wait()
    # the variants got SIGTERM from the kernel when their parent died: they checkpoint,
    # write their notebooks and end, none is left behind
    assert wait_for(lambda: not kiln_children("k9/"), 30), kiln_children("k9/")
    interrupted = [n for n in ["lr=0.001", "lr=0.003"]
                   if "KeyboardInterrupt" in open(f"k9/{n}/log").read()]
    assert interrupted  # killed while training
    p = sweep(str(nb), "-o", "k9", *ARGS)
    assert p.returncode == 0, p.stderr
    for n in interrupted:
        assert "Resuming 'net'" in open(f"k9/{n}/log").read()
    for n in ["lr=0.001", "lr=0.003"]:
        assert_same_weights(f"k9/{n}/run", f"ref/{n}/run")
    assert sorted(rows(work / "results.sqlite", "k9")) == ["lr=0.001", "lr=0.003"]


def test_sigterm_checkpoints_every_variant_and_leaves_no_orphan(work):
    nb = stage(work / "stage.ipynb", subset=1024, params="lr = 0.001\nepochs = 40")
    s = subprocess.Popen([KILN, "sweep", str(nb), "-o", "term", *ARGS],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: all(os.path.exists(f"term/{n}/log") and
                                "Training net" in open(f"term/{n}/log").read()
                                for n in ["lr=0.001", "lr=0.003"]))
    time.sleep(0.3)  # a few steps in
    s.send_signal(signal.SIGTERM)
    out, err = s.communicate(timeout=60)
    assert s.returncode == 128 + signal.SIGTERM, err
    assert not kiln_children("term/")
    for n in ["lr=0.001", "lr=0.003"]:
        assert json.load(open(f"term/{n}/status.json"))["state"] == "interrupted"
        assert has_ckpt(f"term/{n}/run")
        cells = json.load(open(f"term/{n}/out.ipynb"))["cells"]
        assert "KeyboardInterrupt" in json.dumps(cells[-1]["outputs"])
    assert "interrupted" in out


def test_random_search_is_seeded_and_in_range(work):
    nb = stage(work / "stage.ipynb")

    def names(seed):
        p = sweep(str(nb), "-o", "r", "--random", "4", "--seed", str(seed), "-p", "lr",
                  "1e-4:1e-2:log", "-p", "epochs", "1,2", "--dry-run")
        assert p.returncode == 0, p.stderr
        return re.findall(r"^  (epochs=\S+)$", p.stdout, re.M)

    a = names(1)
    assert len(a) == 4 and a == names(1) and a != names(2)
    for n in a:
        ep, lr = re.match(r"epochs=(\d),lr=(\S+)", n).groups()
        assert ep in ("1", "2") and 1e-4 <= float(lr) <= 1e-2


def test_halving_continues_the_best_exactly_as_unpaused_training(work):
    nb = stage(work / "stage.ipynb", subset=512, params="lr = 0.001\nepochs = 2")
    p = sweep(str(nb), "-o", "halv", "-p", "lr", "0.0003,0.003", "--parallel", "2",
              "--prune", "halving", "--eta", "2")
    assert p.returncode == 0, p.stderr
    st = {n: json.load(open(f"halv/{n}/status.json")) for n in ["lr=0.0003", "lr=0.003"]}
    best = [n for n, s in st.items() if s["state"] == "finished"]
    pruned = [n for n, s in st.items() if s["state"] == "pruned"]
    assert len(best) == 1 and len(pruned) == 1 and st[pruned[0]]["rung"] == 1
    table = list(csv.DictReader(open("halv/summary.csv")))
    assert table[0]["variant"] == best[0] and table[0]["epochs_done"] == "2"
    assert table[1]["epochs_done"] == "1"
    # the pruned one stopped at the first rung: steps of one epoch only
    _, last = final_weights(f"halv/{pruned[0]}/run")
    assert last == "ckpt-step%08d.safetensors" % (512 // 16)
    # the survivor, paused at epoch 1 and continued, equals the same variant never paused
    # with the same thread count (bit for bit needs it): the same two at once, whole
    ref = sweep(str(nb), "-o", "whole", "-p", "lr", "0.0003,0.003", "--parallel", "2")
    assert ref.returncode == 0, ref.stderr
    assert_same_weights(f"halv/{best[0]}/run", f"whole/{best[0]}/run")
    # a re-run: pruned and finished are kept, nothing trains
    p = sweep(str(nb), "-o", "halv", "-p", "lr", "0.0003,0.003", "--parallel", "2",
              "--prune", "halving", "--eta", "2")
    assert p.returncode == 0 and "started" not in p.stderr, p.stderr


def epoch_values(db, variant, key):
    """{epoch: value} of the variant's newest run's epoch metric key."""
    c = sqlite3.connect(db)
    got = c.execute("SELECT m.epoch, m.value FROM metrics m WHERE m.kind = 1 AND m.key = ? AND "
                    "m.run_id = (SELECT max(p.run_id) FROM params p WHERE p.key = 'variant' "
                    "AND p.value = ?)", (key, variant)).fetchall()
    c.close()
    return dict(got)


def test_halving_ranks_by_the_rung_not_by_epochs_run_past_it(work):
    """A variant that had trained past the rung (interrupted while continuing, then the
    sweep run again) is ranked by its epochs up to the rung: its later, better epochs
    give it no head start over one that stopped at the rung."""
    slow, fast = "lr=0.0003", "lr=0.003"
    # the slow one trained 3 epochs before, and its state says it was interrupted
    nb3 = stage(work / "three.ipynb", subset=256, params="lr = 0.001\nepochs = 3")
    p = sweep(str(nb3), "-o", "rung", "-p", "lr", "0.0003")
    assert p.returncode == 0, p.stderr
    st = json.load(open(f"rung/{slow}/status.json"))
    st["state"] = "interrupted"
    json.dump(st, open(f"rung/{slow}/status.json", "w"))
    nb = stage(work / "stage.ipynb", subset=256, params="lr = 0.001\nepochs = 5")
    p = sweep(str(nb), "-o", "rung", "-p", "lr", "0.0003,0.003", "--prune", "halving",
              "--eta", "2", "--metric", "train_loss")
    assert p.returncode == 0, p.stderr
    db = work / "results.sqlite"
    a, b = epoch_values(db, slow, "train_loss"), epoch_values(db, fast, "train_loss")
    # what makes the case: at the rung (epoch 1) the fast one is better, but the slow
    # one's later epochs beat it
    assert len(a) >= 3 and a[1] > b[1] and min(a.values()) < b[1], (a, b)
    states = {n: json.load(open(f"rung/{n}/status.json"))["state"] for n in (slow, fast)}
    assert states == {slow: "pruned", fast: "finished"}, (states, p.stderr)
    assert f"{slow}: pruned at epoch 1" in p.stderr
