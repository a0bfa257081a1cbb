"""`kiln run` in a notebook's shell cell (`!kiln run stage.ipynb -p epochs 2`, through
the package's `python -m kiln_kernel` launcher, as the wheel's `kiln` command runs it):
the training progress is readable in the captured stream - plain lines, no control
codes - while on a terminal the same line is rewritten in place."""
import os
import re
import subprocess

import nbformat
import pytest

from conftest import PYTHON, env_with, notebook

if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
    pytest.skip("Fashion-MNIST (Debian dataset-fashion-mnist) is not installed",
                allow_module_level=True)

STAGE = [("epochs = 1", ["parameters"]),
         "%dataset fashion-mnist --subset 512 --val 32 --samples 0",
         "%%model net\nconv2d 4 3\nrelu\nflatten\ndense 10",
         "%train net --batch 16 --epochs $epochs --run-dir rd"]


@pytest.fixture
def stage(tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_RESULTS", str(tmp_path / "results.sqlite"))
    nbformat.write(notebook(STAGE), tmp_path / "stage.ipynb")
    return tmp_path


def test_captured_stream_has_plain_progress_lines(stage):
    p = subprocess.run([PYTHON, "-m", "kiln_kernel", "run", "stage.ipynb", "-p", "epochs", "2"],
                       cwd=stage, env=env_with(), capture_output=True, timeout=240)
    err = p.stderr.decode()
    assert p.returncode == 0, err
    assert "\x1b" not in err and "\r" not in err, repr(err)
    lines = err.splitlines()
    progress = [ln for ln in lines if re.match(r"epoch \d/2 \[[#.]+\] step \d+/64 ", ln)]
    assert progress, err
    assert re.match(r"epoch 2/2 \[#+\] step 64/64 ", progress[-1]), err  # a full bar
    assert "loss" in progress[-1] and "last checkpoint: step 64" in progress[-1], err
    # after the last cell's line, before the notebook is written
    assert lines.index(progress[-1]) > lines.index("kiln run: cell 5/5 [5]")  # the injected cell is one
    assert lines[-1] == "kiln run: wrote stage.out.ipynb"


def test_on_a_terminal_the_line_is_rewritten_in_place(stage):
    leader, follower = os.openpty()
    try:
        p = subprocess.run([PYTHON, "-m", "kiln_kernel", "run", "stage.ipynb"], cwd=stage,
                           env=env_with(), stdout=subprocess.DEVNULL, stderr=follower,
                           timeout=240)
        os.close(follower)
        follower = None
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the other end is closed and drained
                break
            if not chunk:
                break
            out += chunk
    finally:
        if follower is not None:
            os.close(follower)
        os.close(leader)
    assert p.returncode == 0, out
    assert b"\r" + b"epoch 1/1 [" in out and b"\x1b[K" in out, out
