"""The stage notebooks of notebooks/ run as they are, through nbclient with the Kiln
kernel and through `kiln run -p ...`, with small overrides (a 1000-image subset, one
epoch) so the suite stays fast; the full-size run is the README's main job, not a test.
Checks what matters: the model summary's parameter count, an accuracy in range, valid
PNGs, one progress display updated in place, and no errors. The results store is a
temporary one (KILN_RESULTS)."""
import os
import subprocess

import nbformat
import pytest
from nbclient import NotebookClient

from kiln_client import kiln_binary
from kiln_env import results_tmpdir
from nb_util import NOTEBOOKS, cell_of, errors, inject, png_size, pngs, texts

SMALL = {"subset": 1000, "val": 500, "epochs": 1, "batch_size": 64}


@pytest.fixture(scope="module")
def workdir():
    with results_tmpdir("kiln-nb-") as d:
        yield d


def load(name):
    return nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)


def run_nbclient(nb, cwd):
    NotebookClient(nb, kernel_name="kiln", timeout=600, resources={"metadata": {"path": cwd}}).execute()
    return nb


def run_kiln(name, cwd, params):
    out = os.path.join(cwd, "out-" + name)
    args = [kiln_binary(), "run", os.path.join(NOTEBOOKS, name), "-o", out]
    for k, v in params.items():
        args += ["-p", k, str(v)]
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    return nbformat.read(out, as_version=4)


def check_prepare(nb):
    assert errors(nb) == []
    ds = cell_of(nb, "%dataset")
    assert any("train 55000, val 5000, test 10000" in t for t in texts(ds))
    w, h = png_size(pngs(ds)[0])
    assert w > 200 and h > 50
    assert any("--device auto picks" in t for t in texts(cell_of(nb, "%device")))


def check_train(nb):
    assert errors(nb) == []
    summary = "".join(texts(cell_of(nb, "%%model")))
    assert "Total params: 1,199,882" in summary  # the Keras MNIST net on 1x28x28, 10 classes
    train = cell_of(nb, "%train")
    progress = [t for t in texts(train) if t.startswith("epoch 1/1 [")]
    assert len(progress) == 1, "the progress display must be updated in place, not repeated"
    assert "step 16/16" in progress[0]  # ceil(1000 / 64) steps, the final state
    out = "".join(texts(train))
    assert "Run cnn: finished" in out
    acc = float(out.split("val_acc ")[1].split()[0])
    assert 0.4 < acc <= 1.0, acc  # 1000 images, one epoch: ~0.7 (chance is 0.1)
    assert any("image/svg+xml" in o.get("data", {}) for o in train.outputs)
    ev = cell_of(nb, "%evaluate")
    assert png_size(pngs(ev)[0]) == (280, 280)  # 10 classes x 28 px confusion matrix
    assert f"accuracy {acc:.4f}" in "".join(texts(ev))  # same split, same model


def test_prepare_nbclient(workdir):
    check_prepare(run_nbclient(load("01-prepare-data.ipynb"), workdir))


def test_prepare_kiln_run(workdir):
    check_prepare(run_kiln("01-prepare-data.ipynb", workdir, {}))


def test_train_nbclient(workdir):
    # its own folder: the kiln run test below needs a run directory that does not exist
    # yet (%train continues a run directory that already holds checkpoints)
    d = os.path.join(workdir, "nbclient")
    os.makedirs(d)
    check_train(run_nbclient(inject(load("02-train.ipynb"), SMALL), d))
    assert any(f.endswith(".safetensors") for f in os.listdir(os.path.join(d, "runs", "fashion-cnn")))


def test_train_and_evaluate_kiln_run(workdir):
    nb = run_kiln("02-train.ipynb", workdir, SMALL)
    check_train(nb)
    run_dir = os.path.join(workdir, "runs", "fashion-cnn")
    ev = load("03-evaluate.ipynb")
    assert any(f.endswith(".safetensors") for f in os.listdir(run_dir))
    out = run_nbclient(ev, workdir)
    assert errors(out) == []
    text = "".join(texts(cell_of(out, "%evaluate")))
    acc = float(text.split("accuracy ")[1].split(",")[0])
    assert 0.4 < acc <= 1.0
    grid = pngs(cell_of(out, "%predict"))[0]
    w, h = png_size(grid)
    assert w > 8 * 56 and h > 3 * 56  # 24 images of 56 px in rows of 8
