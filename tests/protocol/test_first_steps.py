"""What a new user meets first, over the Jupyter protocol, with the exact texts: `help`,
a mistyped magic, one exception type for a bad option value, a data set named once,
data-set names completed, a `%train?` page without an overlong line, a run continued
with a larger --epochs (epochs counted from 1, the whole loss curve, no internal
schedule settings), the summary's parameter count, one run in %results fitting a
notebook's width, and the shipped notebooks opening unmodified. Data: Debian's
dataset-fashion-mnist (a 256-image subset)."""
import json
import os
import re
import shutil
import tempfile

import pytest

from kiln_client import execute, outputs, reply_for, stdout_text

HELP = ("Kiln's help: %lsmagic lists the magics; NAME? shows the help of a magic or a "
        "variable (%train?, lr?);\n%train --help lists a magic's options; help(\"train\") "
        "does the same from code.\n")
FMNIST = "/usr/share/datasets/fashion-mnist"


def error_of(kernel, code):
    reply, _ = execute(kernel.kc, code)
    assert reply["content"]["status"] == "error", reply["content"]
    return reply["content"]["ename"], reply["content"]["evalue"]


def texts(msgs):
    """stdout plus the text/plain of every display and update, in order."""
    out = []
    for m in msgs:
        c = m["content"]
        if m["msg_type"] == "stream":
            out.append(c["text"])
        elif m["msg_type"] in ("display_data", "update_display_data", "execute_result"):
            out.append(c["data"].get("text/plain", ""))
    return out


def test_help_points_to_the_help(kernel):
    for code in ("help", "help()"):
        reply, msgs = execute(kernel.kc, code)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert stdout_text(msgs) == HELP
        assert not outputs(msgs, "execute_result")  # None is not shown


def test_mistyped_magic_is_named_with_the_right_one(kernel):
    assert error_of(kernel, "%trian") == (
        "UsageError", "Line magic function `%trian` not found. Did you mean `%train`?")
    assert error_of(kernel, "%%tme\n1") == (
        "UsageError", "Cell magic `%%tme` not found. Did you mean `%%time`?")
    assert error_of(kernel, "%qq") == ("UsageError", "Line magic function `%qq` not found.")


def test_one_exception_type_for_bad_option_values(kernel):
    assert error_of(kernel, "%train --epochs -1") == (
        "ValueError", "%train: --epochs must be in 1..100000, got -1")
    assert error_of(kernel, "%train --lr abc") == (
        "ValueError", "%train: option --lr expects a number, got 'abc'")
    assert error_of(kernel, "%train --optimizer rmsprop")[0] == "ValueError"
    # a line that cannot be read stays a UsageError
    assert error_of(kernel, "%train --lrr 1") == (
        "UsageError", "%train: unknown option --lrr (did you mean --lr?)")


def test_unknown_data_set_named_once(kernel):
    ename, evalue = error_of(kernel, "%dataset nonexistent")
    assert ename == "FileNotFoundError"
    assert evalue.count("nonexistent") == 1, evalue


def test_data_set_names_complete(kernel):
    for code, want in (("%dataset ", {"mnist", "fashion-mnist", "cifar10"}),
                       ("%dataset fa", {"fashion-mnist"}), ("%dataset ci", {"cifar10"})):
        msg_id = kernel.kc.complete(code, len(code))
        c = reply_for(kernel.kc.shell_channel, msg_id)["content"]
        assert want <= set(c["matches"]), (code, c["matches"])
        assert c["cursor_end"] == len(code)
        assert c["cursor_start"] == len(code) - len(code.split(" ")[-1])


def test_train_help_has_no_overlong_line(kernel):
    msg_id = kernel.kc.inspect("%train?", 7)
    text = reply_for(kernel.kc.shell_channel, msg_id)["content"]["data"]["text/plain"]
    lines = text.splitlines()
    assert len(lines) > 20 and "--resume {auto,never,must}" in text
    assert max(len(x) for x in lines) <= 90, max(lines, key=len)


@pytest.mark.skipif(not os.path.isdir(FMNIST), reason="dataset-fashion-mnist not installed")
def test_train_longer_shows_the_whole_run(fresh_kernel):
    kc = fresh_kernel.kc
    tmp = tempfile.mkdtemp(prefix="kiln-first-")
    try:
        rd, store = os.path.join(tmp, "run"), os.path.join(tmp, "r.sqlite")
        for code in ("%dataset fashion-mnist --subset 256 --val 64 --samples 0",
                     "%%model net\nconv2d 8 3\nrelu\nmaxpool 2\nflatten\ndense 10"):
            assert execute(kc, code, timeout=60)[0]["content"]["status"] == "ok"
        train = f"%train net --batch 64 --run-dir {rd} --results {store}"
        reply, msgs = execute(kc, train + " --epochs 1", timeout=120)
        assert reply["content"]["status"] == "ok"
        reply, msgs = execute(kc, train + " --epochs 2", timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        out = stdout_text(msgs)
        assert (f"{rd} holds this run (same options): continuing it and training it longer: "
                f"--epochs 2 (it planned 1)\n") in out
        assert (f"Resuming 'net' from {rd}/ckpt-step00000004.safetensors after step 4 of 8 "
                "(epoch 1 of 2), data set 'fashion-mnist' (checksum verified)\n") in out
        lines = out.splitlines()
        at = [i for i, x in enumerate(lines) if x.startswith("Training net")][0]
        start = lines[at] + "\n" + lines[at + 1]
        assert start.startswith("Training net (13,610 params) on fashion-mnist: 256 train "
                                "images, validation on val (64),\n  2 epochs of batch 64, adam "
                                "lr 0.001 | device cpu"), start
        assert max(len(lines[at]), len(lines[at + 1])) <= 90, start  # no wrap in a number
        shown = texts(msgs)
        plots = [t for t in shown if t.startswith("<loss/accuracy plot")]
        assert plots[-1] == "<loss/accuracy plot: 2 epochs, 8 steps>"  # steps 1-4 restored
        progress = [t for t in shown if t.startswith("epoch ")]
        # the progress fits a notebook's width; a checkpoint note may wrap after it
        assert progress and max(len(t.split(", last checkpoint")[0]) for t in progress) <= 105
        summary = [t for t in shown if t.startswith("Run net: finished")][0]
        assert "  model net: 13,610 parameters; data fashion-mnist\n" in summary
        # one run in %results: no column repeated, no line wider than a notebook
        reply, msgs = execute(kc, f"%results --results {store}")
        table = "".join(texts(msgs))
        head = [x for x in table.splitlines() if x.startswith("id ")][0]
        cols = head.split()
        assert len(cols) == len(set(cols)), head
        assert max(len(x) for x in table.splitlines() if not x.startswith("parameters:")) <= 110
        assert re.search(r"^parameters: .*lr=0\.001", table, re.M)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


NOTEBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "notebooks")


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(NOTEBOOKS) if n.endswith(".ipynb")))
def test_shipped_notebook_opens_unmodified(kernel, name):
    """JupyterLab writes the kernel's language_info into a notebook's metadata when it
    connects; a shipped notebook that carries another one opens marked as modified
    before anything ran. So each carries exactly what the kernel reports."""
    msg_id = kernel.kc.kernel_info()
    info = reply_for(kernel.kc.shell_channel, msg_id)["content"]
    with open(os.path.join(NOTEBOOKS, name)) as f:
        meta = json.load(f)["metadata"]
    assert meta["language_info"] == info["language_info"], name
    assert meta["kernelspec"]["name"] == "kiln" and meta["kernelspec"]["language"] == "kiln"
