"""Every option a shipped notebook's form offers runs (`kiln run -p NAME OPTION`): the
dropdowns of 01-prepare-data, 02-train and 03-evaluate, on a small subset. 03-evaluate
offered split "val" and failed ("has no val split") because it loaded the data without
--val. Options this machine cannot run are skipped with the reason: data sets that
need a download (tests have no network), CUDA devices and fp16 (no GPU), and bf16 on a
CPU without AVX512_BF16."""
import json
import os
import re
import shutil
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
    """(param, option literal) for every dropdown option of the notebook's form cell, and
    the form's own values {param: literal}."""
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    form = next(c for c in nb.cells if c.cell_type == "code" and "#@param" in c.source)
    out, defaults = [], {}
    for line in form.source.splitlines():
        m = re.match(r"\s*(\w+)\s*=\s*(.*?)\s*#@param\s*(\[[^\]]*\])?", line)
        if m:
            defaults[m.group(1)] = json.loads(m.group(2))
            if m.group(3):
                out += [(m.group(1), o) for o in json.loads(m.group(3))]
    return out, defaults


def base_params(name):
    """What the test passes besides the option: a small run of each stage."""
    if name == "01-prepare-data.ipynb":
        return {"val": SMALL["val"], "samples": 10}
    if name == "03-evaluate.ipynb":
        return {"val": SMALL["val"], "samples": 8}
    return dict(SMALL)


def cases():
    """One case per distinct run: an option that is the form's own value (or the test's
    small one) runs the same notebook as its siblings at their defaults, so those options
    share one case, named by all of them."""
    out = {}
    for nb in ("01-prepare-data.ipynb", "02-train.ipynb", "03-evaluate.ipynb"):
        options, defaults = form_options(nb)
        base = dict(defaults, **base_params(nb))
        for p, o in options:
            run = json.dumps(dict(base, **{p: o}), sort_keys=True)
            out.setdefault((nb, run), []).append((p, o))
    return [(nb, opts) for (nb, _), opts in out.items()]


CASES = cases()


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
    assert {nb for nb, _ in CASES} == {"01-prepare-data.ipynb", "02-train.ipynb",
                                       "03-evaluate.ipynb"}
    assert ("03-evaluate.ipynb", [("split", "val")]) in CASES
    # every option of every form is in exactly one case
    listed = [(nb, p, str(o)) for nb, opts in CASES for p, o in opts]
    assert len(listed) == len(set(listed))
    for nb in ("01-prepare-data.ipynb", "02-train.ipynb", "03-evaluate.ipynb"):
        assert {(p, str(o)) for p, o in form_options(nb)[0]} == \
            {(p, o) for n, p, o in listed if n == nb}


@pytest.fixture(scope="module")
def trained(workdir):
    """A run of 02-train as stage 2 leaves it, for every 03-evaluate case to copy."""
    cwd = os.path.join(workdir, "trained")
    os.makedirs(cwd)
    p, nb = kiln_run("02-train.ipynb", cwd, SMALL)
    assert p.returncode == 0 and errors(nb) == [], p.stderr
    return os.path.join(cwd, "runs")


@pytest.mark.parametrize("name,options", CASES,
                         ids=[nb.split("-")[0] + "-" + "+".join(f"{p}={o}" for p, o in opts)
                              for nb, opts in CASES])
def test_option_runs(workdir, request, name, options):
    runnable = [(p, o) for p, o in options if (p, str(o)) not in NEEDS]
    if not runnable:
        pytest.skip("; ".join(NEEDS[(p, str(o))] for p, o in options))
    cwd = os.path.join(workdir, re.sub(r"\W", "_", request.node.callspec.id))
    os.makedirs(cwd)
    params = base_params(name)
    if name == "03-evaluate.ipynb":
        shutil.copytree(request.getfixturevalue("trained"), os.path.join(cwd, "runs"))
    param, option = runnable[0]  # the others in the case are the same run
    params[param] = option
    p, nb = kiln_run(name, cwd, params)
    assert p.returncode == 0, p.stderr[-2000:]
    assert errors(nb) == []
