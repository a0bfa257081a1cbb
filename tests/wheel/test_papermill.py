"""`papermill -k kiln IN OUT -p NAME VALUE` injects the parameters (as Kiln literals,
through the translator kiln_kernel registers from its papermill.engine entry point)
and runs the stage notebook: the injected values show in the outputs."""
import subprocess

import nbformat
import pytest

from conftest import INSTALLED, PYTHON, env_with, notebook, text_of

STAGE = [
    ("epochs = 1\noptimizer = 'sgd'\nlr = 0.1\nnote = 'default'\nlayers = [8]", ["parameters"]),
    'print(f"epochs={epochs} optimizer={optimizer} lr={lr} note={note} layers={layers}")',
    "%dataset fashion-mnist --subset 256 --val 32 --samples 0",
    "%%model net\nconv2d 4 3\nrelu\nmaxpool 2\nflatten\ndense 10",
    "%train net --batch 64 --epochs $epochs --lr $lr --optimizer $optimizer",
]


def papermill(tmp_path, dist_info, *params):
    src, out = tmp_path / "stage.ipynb", tmp_path / "stage.out.ipynb"
    nbformat.write(notebook(STAGE), src)
    p = subprocess.run([PYTHON, "-m", "papermill", "-k", "kiln", str(src), str(out), *params],
                       env=env_with(dist_info), capture_output=True, text=True, timeout=240)
    return p, out


def test_parameters_are_injected_and_used(tmp_path, dist_info):
    p, out = papermill(tmp_path, dist_info, "-p", "epochs", "2", "-p", "optimizer", "adam",
                       "-p", "lr", "0.01", "-p", "note", "it's \"quoted\"", "-p", "layers", "[4, 2]")
    assert p.returncode == 0, p.stderr[-3000:]
    nb = nbformat.read(out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    assert "epochs = 2\n" in injected[0].source
    assert nb.cells.index(injected[0]) == 1  # right after the parameters cell
    printed = text_of(nb.cells[2].outputs)
    assert "epochs=2 optimizer=adam lr=0.01 note=it's \"quoted\" layers=[4, 2]" in printed
    trained = text_of(nb.cells[-1].outputs)
    assert "epoch 2" in trained.lower(), trained[-2000:]


@pytest.mark.skipif(INSTALLED, reason="the installed wheel declares the entry point")
def test_without_the_entry_point_papermill_refuses(tmp_path):
    """The failure the translator fixes (so the test above cannot pass without it)."""
    src, out = tmp_path / "stage.ipynb", tmp_path / "stage.out.ipynb"
    nbformat.write(notebook(STAGE[:2]), src)
    p = subprocess.run([PYTHON, "-m", "papermill", "-k", "kiln", str(src), str(out),
                        "-p", "epochs", "2"], env=env_with(), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode != 0
    assert "No parameter translator" in p.stderr
