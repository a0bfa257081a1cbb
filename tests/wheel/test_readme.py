"""Every command and cell README.md shows is run by a test.

test_every_readme_command_is_run_somewhere reads each indented block of README.md and
requires each command line and each notebook cell to match one entry of RUN_BY: run
here (the tests below), or by the script or test named, which must contain what runs
it. A README line no entry matches fails: a new README command needs a test.

The tests here run, against the built kiln:
- "Using it": `kiln install --user` (a scratch HOME; `jupyter kernelspec list` then
  lists kiln), `kiln run notebooks/02-train.ipynb -o out.ipynb -p epochs 3 -p lr 0.002`
  (plus `-p subset 500 -p val 100`: a 500-image subset, as the notebook tests do), the
  `kiln sweep` line (the same subset),
  `kiln help train`, and `kiln export runs/a --onnx a.onnx` on the run the README's
  Kiln cells leave, with those cells run as a notebook (`%dataset` with `--subset 500`
  added; `epochs = 1`);
- "Colab and Kaggle": the cells in order in a Python notebook through the %%kiln bridge
  (nbclient), with the Kaggle form (the Colab one needs google.colab), the run
  directory in a scratch folder, 1 epoch and `--subset 512` on `%dataset`; `!pip
  install` is .ci/wheel-index's part.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import ROOT, notebook, text_of

ROOT = Path(ROOT)
KILN = os.environ.get("KILN_BINARY", str(ROOT / "build/kernel/kiln"))
DATA = "/usr/share/datasets/fashion-mnist"
need_data = pytest.mark.skipif(not os.path.isdir(DATA),
                               reason="Fashion-MNIST (Debian dataset-fashion-mnist) is not installed")

# (pattern of a README command or cell's first line, who runs it, what that file holds)
RUN_BY = [
    (r"bash \.ci/main$", "tests/magics/test_notebooks.py", "02-train.ipynb"),
    (r"bash \.ci/run$", ".github/workflows/ci.yml", "bash .ci/run"),
    (r"build/kernel/kiln install --user$", "here", "test_using_it"),
    (r"build/kernel/kiln run notebooks/02-train\.ipynb -o out\.ipynb -p epochs 3 -p lr 0\.002$",
     "here", "test_using_it"),
    (r"build/kernel/kiln sweep notebooks/02-train\.ipynb -o sweeps/lr -p lr 0\.001,0\.003 "
     r"--parallel 2$", "here", "test_using_it"),
    (r"build/kernel/kiln help train$", "here", "test_using_it"),
    (r"build/kernel/kiln export runs/a --onnx a\.onnx$", "here", "test_using_it"),
    (r"%dataset fashion-mnist --val 5000$", "here", "test_using_it"),
    (r"%%model cnn$", "here", "test_using_it"),
    (r"%train cnn --epochs \$epochs --lr \$lr --run-dir runs/a ", "here", "test_using_it"),
    (r"%resume runs/a$", "here", "test_using_it"),
    (r"mpirun -np 4 build/kernel/kiln run notebooks/02-train\.ipynb -o out\.ipynb$",
     "tests/dist/test_mpi_run.py", "mpirun"),
    # a release file and `pip install .`: .ci/wheel builds the wheel with `pip wheel .`
    # and installs that file in the clean chroot
    (r"pip install kiln_kernel-.*\.whl$", ".ci/wheel", "pip install"),
    (r"pip install \.$", ".ci/wheel", "pip wheel ."),
    (r"pip install kiln-kernel$", ".ci/wheel-index", "--index-url $url kiln-kernel"),
    (r"pip install 'kiln-kernel\[cuda\]'$", ".ci/wheel-index", "kiln-kernel[cuda]"),
    (r"jupyter kernelspec list$", ".ci/wheel-index", "jupyter kernelspec list"),
    (r"kiln run notebooks/02-train\.ipynb -p epochs 3$", ".ci/wheel-index", "kiln run 02-train.ipynb"),
    (r"!pip install -q 'kiln-kernel\[cuda\]'$", ".ci/wheel-index", "kiln-kernel[cuda]"),
    (r"%load_ext kiln_kernel$", "here", "test_colab_and_kaggle_cells"),
    (r"from google\.colab import drive$", "here", "test_colab_and_kaggle_cells"),
    (r"epochs = 10$", "here", "test_colab_and_kaggle_cells"),
    (r"%%kiln$", "here", "test_colab_and_kaggle_cells"),
    (r"%kiln %resume \$run_dir$", "here", "test_colab_and_kaggle_cells"),
]


def blocks(section=None):
    """README's indented blocks, each a list of lines without the indent; section: only
    those under that `## ` heading."""
    out, cur, where = [], [], None
    for line in (ROOT / "README.md").read_text().splitlines() + [""]:
        if line.startswith("## "):
            where = line[3:].strip()
        if line.startswith("    ") and not line.lstrip().startswith(("|", "-")):
            cur.append(line[4:])
        else:
            if cur and section in (None, where):
                out.append(cur)
            cur = []
    return out


def strip_comment(line):
    return re.sub(r"\s+#(?![@ ]*param).*$", "", line).rstrip()


def cell_heads(block):
    """The lines a reader runs: each command of a shell block, the first line of a cell."""
    first = block[0]
    if re.match(r"(bash|build/|pip|jupyter|kiln|mpirun)\b", first):
        return [strip_comment(l) for l in block if l.strip()]
    return [strip_comment(first)]


def test_every_readme_command_is_run_somewhere():
    missing, wrong = [], []
    heads = [h for b in blocks() for h in cell_heads(b)]
    assert len(heads) > 20, heads  # the parse found the README's blocks
    me = Path(__file__).read_text()
    for head in heads:
        hit = [(f, s) for p, f, s in RUN_BY if re.match(p, head)]
        if not hit:
            missing.append(head)
            continue
        f, s = hit[0]
        text = me if f == "here" else (ROOT / f).read_text()
        if s not in text:
            wrong.append(f"{head!r}: {f} does not hold {s!r}")
    assert not missing, ("README commands no test runs (add a test, then an entry to "
                         f"RUN_BY in tests/wheel/test_readme.py): {missing}")
    assert not wrong, wrong


def block_starting(prefix):
    for b in blocks():
        if b[0].startswith(prefix):
            return "\n".join(b)
    raise AssertionError(f"README has no block starting {prefix!r}")


def run(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=240, **kw)
    assert p.returncode == 0, f"{args}: {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


@need_data
def test_using_it(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path / "home"),
               KILN_RESULTS=str(tmp_path / "results.sqlite"))
    env.pop("JUPYTER_PATH", None)
    env.pop("JUPYTER_DATA_DIR", None)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks/02-train.ipynb").write_bytes(
        (ROOT / "notebooks/02-train.ipynb").read_bytes())
    using = block_starting("build/kernel/kiln install").splitlines()
    cmd = {strip_comment(l).split()[1]: strip_comment(l).split()[2:] for l in using}

    run([KILN, "install", *cmd["install"]], env=env, cwd=tmp_path)
    listed = run([sys.executable, "-m", "jupyter", "kernelspec", "list"], env=env)
    assert re.search(r"^\s*kiln\s+" + re.escape(str(tmp_path / "home")), listed, re.M), listed

    run([KILN, "run", *cmd["run"], "-p", "subset", "500", "-p", "val", "100"], env=env,
        cwd=tmp_path)
    out = json.loads((tmp_path / "out.ipynb").read_text())
    said = "".join(text_of(c.get("outputs", [])) for c in out["cells"])
    assert "epoch 3/3" in said and "lr 0.002" in said, said[-2000:]

    run([KILN, "sweep", *cmd["sweep"], "-p", "subset", "500", "-p", "val", "100"], env=env,
        cwd=tmp_path)
    assert len(list((tmp_path / "sweeps/lr").rglob("*.ipynb"))) >= 2, \
        sorted(str(p) for p in (tmp_path / "sweeps").rglob("*"))

    assert "--epochs" in run([KILN, "help", *cmd["help"]], env=env)

    # README's Kiln cells, one cell a block, then `kiln export` on the run they leave
    cells = ["epochs = 1\nlr = 0.002",
             block_starting("%dataset fashion-mnist") + " --subset 500",
             block_starting("%%model cnn"), block_starting("%train cnn"),
             block_starting("%resume runs/a")]
    nb = notebook(cells)
    nbformat.write(nb, tmp_path / "cells.ipynb")
    run([KILN, "run", "cells.ipynb", "-o", "cells.out.ipynb"], env=env, cwd=tmp_path)
    got = json.loads((tmp_path / "cells.out.ipynb").read_text())["cells"]
    assert "Run cnn: finished" in text_of(got[3]["outputs"]), text_of(got[3]["outputs"])
    assert not [o for c in got for o in c.get("outputs", []) if o["output_type"] == "error"]
    run([KILN, "export", *cmd["export"]], env=env, cwd=tmp_path)
    assert (tmp_path / "a.onnx").stat().st_size > 100_000  # the 54k-parameter model


@need_data
def test_colab_and_kaggle_cells(tmp_path, monkeypatch, dist_info):
    monkeypatch.setenv("KILN_RESULTS", str(tmp_path / "results.sqlite"))
    if dist_info:
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
            [str(ROOT / "python"), dist_info, os.environ.get("PYTHONPATH", "")]))
    cells = []
    for b in blocks("Colab and Kaggle"):
        src = "\n".join(b)
        if b[0].startswith("!pip"):  # .ci/wheel-index installs by name
            src = "\n".join(l for l in b if not l.startswith("!pip"))
        if b[0].startswith("from google.colab"):
            continue  # needs Colab; the Kaggle form below sets the same names
        if b[0] == "epochs = 10":
            src = src.replace("epochs = 10", "epochs = 1") + f"\nrun_dir = {str(tmp_path / 'run')!r}"
        if b[1:2] and b[1].startswith("%dataset"):
            src += " --subset 512"
        cells.append(src)
    assert cells[0].startswith("%load_ext kiln_kernel") and len(cells) == 6, cells
    cells.append("%kiln %device")  # in the section's text, after the cells
    nb = notebook(cells, kernel="python3", language="python")
    NotebookClient(nb, timeout=240, kernel_name="python3").execute()
    out = [text_of(c.outputs) for c in nb.cells]
    train = next(o for o, c in zip(out, cells) if "%train" in c)
    assert "Run cnn: finished" in train, train
    assert (tmp_path / "run").is_dir() and list((tmp_path / "run").glob("ckpt-step*"))
    resumed = next(o for o, c in zip(out, cells) if "%resume" in c)
    assert "error" not in resumed.lower(), resumed
    assert "CPU" in out[-1] or "cpu" in out[-1], out[-1]
