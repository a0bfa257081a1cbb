"""Every option a shipped notebook's form offers runs (`kiln run -p NAME OPTION`): the
dropdowns of 01-prepare-data, 02-train and 03-evaluate, on a small subset. 03-evaluate
offered split "val" and failed ("has no val split") because it loaded the data without
--val. Options this machine cannot run are skipped with the reason: data sets that
need a download (tests have no network), CUDA devices and fp16 (no GPU), and bf16 on a
CPU without AVX512_BF16."""
import json
import os
import re
import subprocess

import nbformat
import pytest

from kiln_client import kiln_binary
from kiln_env import results_tmpdir
from nb_util import NOTEBOOKS, errors

SMALL = {"subset": 256, "val": 64, "epochs": 1, "batch_size": 64}
NEEDS = {("dataset", "mnist"): "downloads MNIST (tests have no network)",
         ("dataset", "cifar10"): "downloads CIFAR-10 (tests have no network)",
         ("device", "cuda"): "needs a CUDA device",
         ("precision", "fp16"): "needs a CUDA device"}


def cpu_bf16():
    """Whether this CPU has what --precision bf16 needs without a GPU (AVX512_BF16)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512f" in flags and "avx512_bf16" in flags


if not cpu_bf16():
    NEEDS[("precision", "bf16")] = "needs a CUDA device or a CPU with AVX512_BF16"


def form_options(name):
    """(param, option literal) for every dropdown option of the notebook's form cell."""
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    form = next(c for c in nb.cells if c.cell_type == "code" and "#@param" in c.source)
    out = []
    for line in form.source.splitlines():
        m = re.match(r"\s*(\w+)\s*=.*#@param\s*(\[[^\]]*\])", line)
        if m:
            out += [(m.group(1), o) for o in json.loads(m.group(2))]
    return out


CASES = [(nb, p, o) for nb in ("01-prepare-data.ipynb", "02-train.ipynb", "03-evaluate.ipynb")
         for p, o in form_options(nb)]


@pytest.fixture(scope="module")
def workdir():
    with results_tmpdir("kiln-opts-") as d:
        yield d


def kiln_run(name, cwd, params):
    out = os.path.join(cwd, "out.ipynb")
    args = [kiln_binary(), "run", os.path.join(NOTEBOOKS, name), "-o", out]
    for k, v in params.items():
        args += ["-p", k, str(v)]
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    nb = nbformat.read(out, as_version=4) if os.path.exists(out) else None
    return p, nb


def test_every_form_has_options():
    assert {nb for nb, _, _ in CASES} == {"01-prepare-data.ipynb", "02-train.ipynb",
                                          "03-evaluate.ipynb"}
    assert ("03-evaluate.ipynb", "split", "val") in CASES


@pytest.mark.parametrize("name,param,option", CASES)
def test_option_runs(workdir, name, param, option):
    if (param, str(option)) in NEEDS:
        pytest.skip(NEEDS[(param, str(option))])
    cwd = os.path.join(workdir, re.sub(r"\W", "_", f"{name}-{param}-{option}"))
    os.makedirs(cwd)
    params = {k: v for k, v in SMALL.items()}
    if name == "01-prepare-data.ipynb":
        params = {"val": SMALL["val"], "samples": 10}
    if name == "03-evaluate.ipynb":  # a run to evaluate, trained as stage 2 would
        p, nb = kiln_run("02-train.ipynb", cwd, SMALL)
        assert p.returncode == 0 and errors(nb) == [], p.stderr
        params = {"val": SMALL["val"], "samples": 8}
    params[param] = option
    p, nb = kiln_run(name, cwd, params)
    assert p.returncode == 0, p.stderr[-2000:]
    assert errors(nb) == []
