"""`kiln run` and `kiln install`, end to end through the built binary.

Run by meson (suite 'lang') with KILN_BIN, KILN_NOTEBOOKS and KILN_TEST_JUPYTER_PATH
set; the nbclient comparison drives the same notebooks through the kernel's protocol
side and fails when the two disagree or the kernel does not answer."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import nbformat
import pytest

KILN = os.environ.get("KILN_BIN", "kiln")
NOTEBOOKS = os.environ.get("KILN_NOTEBOOKS", os.path.join(os.path.dirname(__file__), "notebooks"))
JUPYTER_PATH = os.environ.get("KILN_TEST_JUPYTER_PATH", "")


def kiln(*args, cwd=None, timeout=60):
    return subprocess.run([KILN, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def run(*args, cwd=None):
    return kiln("run", *args, cwd=cwd)


def code_cells(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return [c for c in nb.cells if c.cell_type == "code"]


def texts(cell, kind="stream"):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == kind)


def result(cell):
    res = [o for o in cell.outputs if o.output_type == "execute_result"]
    return res[0]["data"]["text/plain"] if res else None


def test_runs_a_notebook(tmp_path):
    out = tmp_path / "smoke.out.ipynb"
    p = run(os.path.join(NOTEBOOKS, "smoke.ipynb"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "cell 5/5" in p.stderr  # progress on stderr
    cells = code_cells(out)
    assert [c.execution_count for c in cells] == [1, 2, 3, 4, 5]
    assert texts(cells[1]) == "epochs 3\nlr 0.01\n"
    assert result(cells[1]) == "[6, 'mnist']"
    assert cells[1].outputs[-1]["execution_count"] == 2
    assert "shell says mnist" in texts(cells[2])
    assert result(cells[3]) == "{'k': True, 'v': [1, 2.5, None]}"
    assert result(cells[4]) == "'mnist: 0.01 x3'"
    nb = nbformat.read(out, as_version=4)
    assert nb.nbformat_minor >= 5 and all(c.get("id") for c in nb.cells)


def test_parameters_are_injected_after_the_parameters_cell(tmp_path):
    out = tmp_path / "p.ipynb"
    p = run(os.path.join(NOTEBOOKS, "smoke.ipynb"), "-o", str(out), "-p", "epochs", "7",
            "-p", "name", "fashion", "-p", "lr", "1e-3")
    assert p.returncode == 0, p.stderr
    nb = nbformat.read(out, as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    params = tags.index(["parameters"])
    assert tags[params + 1] == ["injected-parameters"]
    assert nb.cells[params + 1].source == "# Parameters\nepochs = 7\nname = 'fashion'\nlr = 0.001\n"
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert result(cells[2]) == "[14, 'fashion']"
    # running the output notebook again replaces the injected cell instead of adding one
    out2 = tmp_path / "p2.ipynb"
    p = run(str(out), "-o", str(out2), "-p", "epochs", "1")
    assert p.returncode == 0, p.stderr
    nb2 = nbformat.read(out2, as_version=4)
    injected = [c for c in nb2.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and injected[0].source == "# Parameters\nepochs = 1\n"


def test_log_output_echoes_streams(tmp_path):
    p = run(os.path.join(NOTEBOOKS, "smoke.ipynb"), "-o", str(tmp_path / "o.ipynb"), "--log-output")
    assert p.returncode == 0
    assert "epochs 3\nlr 0.01\n" in p.stderr
    quiet = run(os.path.join(NOTEBOOKS, "smoke.ipynb"), "-o", str(tmp_path / "q.ipynb"))
    assert "epochs 3" not in quiet.stderr and quiet.stdout == ""


def test_unknown_parameter_warns(tmp_path):
    p = run(os.path.join(NOTEBOOKS, "smoke.ipynb"), "-o", str(tmp_path / "o.ipynb"),
            "-p", "extra", "[1, 2]")
    assert p.returncode == 0
    assert "unknown parameter: extra" in p.stderr


def test_form_annotation_types_the_override(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        'epochs = 3  #@param {type:"integer"}\nopt = "adam"  #@param ["adam", "sgd"]',
        metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("[epochs, opt]")]
    src = tmp_path / "form.ipynb"
    nbformat.write(nb, src)
    p = run(str(src), "-o", str(tmp_path / "ok.ipynb"), "-p", "epochs", "12", "-p", "opt", "sgd")
    assert p.returncode == 0, p.stderr
    assert result(code_cells(tmp_path / "ok.ipynb")[-1]) == "[12, 'sgd']"
    p = run(str(src), "-o", str(tmp_path / "bad.ipynb"), "-p", "epochs", "many")
    assert p.returncode != 0
    assert "epochs" in p.stderr


def test_a_parameter_stays_one_value(tmp_path):
    """-p values reach `!` lines and magic options as one word each: a `;` runs no
    command, an ` --option` inside a value is no option."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('name = "demo"\nfilt = "name=demo"',
                                          metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("!echo $name"),
                nbformat.v4.new_code_cell("%results --where $filt")]
    src = tmp_path / "p.ipynb"
    nbformat.write(nb, src)
    env = dict(os.environ, HOME=str(tmp_path))
    p = subprocess.run([KILN, "run", str(src), "-o", str(tmp_path / "o.ipynb"), "-p", "name",
                        "x; touch PWNED", "-p", "filt", "name=x --bogus"],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "PWNED").exists()
    cells = code_cells(tmp_path / "o.ipynb")
    assert texts(cells[-2]) == "x; touch PWNED\n"
    assert "--bogus" not in p.stderr and not [o for o in cells[-1].outputs
                                              if o.output_type == "error"]


def test_output_replaces_only_what_it_names(tmp_path):
    """The output goes through a random temporary name created O_EXCL, then a rename:
    symlinks planted at every name the old `<out>.tmp<pid>` scheme could use next are
    not followed, nothing is left behind, and the mode of the file replaced is kept."""
    out = tmp_path / "o.ipynb"
    out.write_text("{}")
    os.chmod(out, 0o640)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    nxt = os.getpid()
    for pid in range(nxt + 1, min(nxt + 200, pid_max)):  # where the next pids fall
        os.symlink(victim, f"{out}.tmp{pid}")
    p = run(os.path.join(NOTEBOOKS, "smoke.ipynb"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == "keep me"
    assert code_cells(out)  # a real notebook replaced the "{}"
    assert os.stat(out).st_mode & 0o777 == 0o640
    left = [n for n in os.listdir(tmp_path) if ".tmp" in n and not os.path.islink(tmp_path / n)]
    assert not left, left


def test_papermill_parameter_cells_run(tmp_path):
    """The cell papermill injects (its Python translator: negative numbers, escaped
    strings, nested lists and dicts, None, bools) runs, and the values read back as
    Python reads them; its float('nan') is refused (Kiln's values are JSON)."""
    translators = pytest.importorskip("papermill.translators")
    params = {"neg": -3, "lr": -1e-3, "big": 123456789012, "f": 3.0, "empty": [],
              "name": "it's a \"test\"\n\\ \u00e9\t", "flags": [True, False, None],
              "cfg": {"a": [1, -2.5, {"b": "x"}], "k-ey": 0.1}, "nothing": None}
    code = translators.PythonTranslator.codify(params)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code), nbformat.v4.new_code_cell("[" + ", ".join(params) + "]")]
    src = tmp_path / "pm.ipynb"
    nbformat.write(nb, src)
    p = run(str(src), "-o", str(tmp_path / "pm.out.ipynb"))
    assert p.returncode == 0, p.stderr + code
    assert result(code_cells(tmp_path / "pm.out.ipynb")[1]) == repr(list(params.values()))
    nb.cells = [nbformat.v4.new_code_cell(translators.PythonTranslator.codify({"x": float("nan")}))]
    nbformat.write(nb, src)
    p = run(str(src), "-o", str(tmp_path / "nan.out.ipynb"))
    assert p.returncode == 1 and "OverflowError" in p.stderr


def test_first_error_stops_with_nonzero_exit(tmp_path):
    out = tmp_path / "f.ipynb"
    p = run(os.path.join(NOTEBOOKS, "fails.ipynb"), "-o", str(out))
    assert p.returncode == 1
    assert "NameError" in p.stderr
    cells = code_cells(out)  # written despite the failure
    assert texts(cells[0]) == "before\n"
    err = [o for o in cells[1].outputs if o.output_type == "error"]
    assert err and err[0]["ename"] == "NameError"
    assert "undefined_name" in err[0]["evalue"]
    assert any("Cell line 1" in line for line in err[0]["traceback"])
    assert cells[2].execution_count is None and cells[2].outputs == []


def test_default_output_path_does_not_overwrite(tmp_path):
    src = tmp_path / "stage.ipynb"
    shutil.copy(os.path.join(NOTEBOOKS, "smoke.ipynb"), src)
    before = src.read_bytes()
    p = run(str(src), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "stage.out.ipynb").exists()
    assert src.read_bytes() == before


@pytest.mark.parametrize("content, why", [
    ("{not json", "cannot read"),
    ('{"nbformat": 3, "cells": []}', "nbformat"),
    ('{"nbformat": 4, "cells": {}}', "cells"),
    ('[1, 2]', "not a JSON object"),
    ('{"nbformat": 4, "cells": [{"cell_type": "code"}]}', "source"),
])
def test_broken_notebooks_are_refused(tmp_path, content, why):
    src = tmp_path / "broken.ipynb"
    src.write_text(content)
    p = run(str(src), "-o", str(tmp_path / "x.ipynb"))
    assert p.returncode == 2
    assert why in p.stderr
    assert not (tmp_path / "x.ipynb").exists()


def test_usage_errors():
    assert run("--bogus").returncode == 2
    assert run().returncode == 2
    assert run("/no/such/notebook.ipynb").returncode == 2


def test_install_prefix_is_listed_by_jupyter(tmp_path):
    p = kiln("install", "--prefix", str(tmp_path), "--name", "kiln-test")
    assert p.returncode == 0, p.stderr
    kdir = tmp_path / "share" / "jupyter" / "kernels" / "kiln-test"
    spec = json.loads((kdir / "kernel.json").read_text())
    assert spec["argv"][0] == os.path.realpath(KILN)
    assert spec["argv"][1:] == ["kernel", "-f", "{connection_file}"]
    assert spec["language"] == "kiln" and spec["interrupt_mode"] == "message"
    for logo in ("logo-32x32.png", "logo-64x64.png"):
        assert (kdir / logo).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    env = dict(os.environ, JUPYTER_PATH=str(tmp_path / "share" / "jupyter"))
    listed = subprocess.run([sys.executable, "-m", "jupyter", "kernelspec", "list", "--json"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    specs = json.loads(listed.stdout)["kernelspecs"]
    assert "kiln-test" in specs
    assert kiln("install", "--name", "bad/name").returncode == 2


@pytest.mark.parametrize("notebook", ["smoke.ipynb", "displays.ipynb"])
def test_matches_nbclient(tmp_path, notebook):
    """The same notebook through the Jupyter protocol (nbclient + the test kernelspec)
    gives the same outputs as `kiln run` (streams, results, display ids updated in
    place, clear_output)."""
    import nbclient
    assert JUPYTER_PATH, "KILN_TEST_JUPYTER_PATH must name the test kernelspec's folder"
    os.environ["JUPYTER_PATH"] = JUPYTER_PATH
    nb = nbformat.read(os.path.join(NOTEBOOKS, notebook), as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="kiln", timeout=30, startup_timeout=20)
    client.execute()  # a kernel that does not answer nbclient fails the comparison
    out = tmp_path / "run.ipynb"
    p = run(os.path.join(NOTEBOOKS, notebook), "-o", str(out))
    assert p.returncode == 0, p.stderr
    ours = code_cells(out)
    theirs = [c for c in nb.cells if c.cell_type == "code"]
    assert len(ours) == len(theirs)
    strip = lambda outs: [{k: v for k, v in o.items() if k != "transient"} for o in outs]
    for a, b in zip(ours, theirs):
        assert strip(a.outputs) == strip(b.outputs), a.source
        assert a.execution_count == b.execution_count
    if notebook == "displays.ipynb":
        assert ours[0].outputs[0]["data"]["text/html"] == "<b>epoch 2</b>"


def test_sigint_interrupts_the_running_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("!echo started; sleep 30"),
                nbformat.v4.new_code_cell("print('not reached')")]
    src = tmp_path / "long.ipynb"
    nbformat.write(nb, src)
    proc = subprocess.Popen([KILN, "run", str(src), "-o", str(tmp_path / "o.ipynb")],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert time.monotonic() - t0 < 10
    assert proc.returncode == 1, err
    cells = code_cells(tmp_path / "o.ipynb")
    assert texts(cells[0]) == "started\n"
    assert [o["ename"] for o in cells[0].outputs if o.output_type == "error"] == ["KeyboardInterrupt"]
    assert cells[1].outputs == []


def test_unwritable_output_is_refused_before_any_cell_runs(tmp_path):
    nb = nbformat.v4.new_notebook()
    marker = tmp_path / "ran"
    nb.cells = [nbformat.v4.new_code_cell(f"!touch {marker}")]
    src = tmp_path / "stage.ipynb"
    nbformat.write(nb, src)
    p = run(str(src), "-o", str(tmp_path / "no" / "such" / "dir" / "o.ipynb"))
    assert p.returncode == 2
    assert "cannot write" in p.stderr and "o.ipynb" in p.stderr
    assert "No such file or directory" in p.stderr
    assert not marker.exists()  # refused before hours of training, not after


def test_killed_run_keeps_the_cells_that_finished(tmp_path):
    """A batch job whose machine goes away (SIGKILL: no chance to write at the end)
    still leaves the result notebook with the outputs of the cells that ran."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print('first done')"),
                nbformat.v4.new_code_cell("!sleep 30")]
    src = tmp_path / "long.ipynb"
    nbformat.write(nb, src)
    out = tmp_path / "o.ipynb"
    proc = subprocess.Popen([KILN, "run", str(src), "-o", str(out)],
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen = ""
    while "cell 2/2" not in seen:
        line = proc.stderr.readline()
        assert line, seen
        seen += line
    os.killpg(proc.pid, signal.SIGKILL)  # kiln and its `sleep`
    proc.wait(timeout=20)
    cells = code_cells(out)
    assert texts(cells[0]) == "first done\n"
    assert cells[0].execution_count == 1


def test_form_cell_falls_back_to_a_table(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        '#@title Train { display-mode: "form" }\n'
        'epochs = 10  #@param {type:"slider", min:1, max:50, step:1}\n',
        metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("epochs")]
    src = tmp_path / "form.ipynb"
    nbformat.write(nb, src)
    p = run(str(src), "-o", str(tmp_path / "o.ipynb"), "-p", "epochs", "20")
    assert p.returncode == 0, p.stderr
    cells = code_cells(tmp_path / "o.ipynb")
    shown = [o for o in cells[0].outputs if o.output_type == "display_data"]
    assert shown and "epochs" in shown[0]["data"]["text/plain"]
    assert "text/html" in shown[0]["data"]
    assert result(cells[-1]) == "20"


def test_install_refuses_two_destinations(tmp_path):
    p = kiln("install", "--user", "--prefix", str(tmp_path))
    assert p.returncode == 2
    assert "exclusive" in p.stderr
    assert not (tmp_path / "share").exists()  # nothing written anywhere
    assert kiln("install", "--sys-prefix", f"--prefix={tmp_path}").returncode == 2


def test_install_user_honours_jupyter_data_dir(tmp_path):
    env = dict(os.environ, JUPYTER_DATA_DIR=str(tmp_path / "data"))
    p = subprocess.run([KILN, "install"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "data" / "kernels" / "kiln" / "kernel.json").exists()


def test_install_sys_prefix_asks_python3(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\necho %s\n" % (tmp_path / "env"))
    (fake / "python3").chmod(0o755)
    env = dict(os.environ, PATH=str(fake) + os.pathsep + os.environ["PATH"])
    p = subprocess.run([KILN, "install", "--sys-prefix"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "env" / "share" / "jupyter" / "kernels" / "kiln" / "kernel.json").exists()
