"""The examples in docs/*.md run.

A fenced block whose info string includes `kiln-example` is a cell that must run
without error; `kiln-error` marks a cell that must raise. A `kiln-output` block right
after one holds what the cell prints (its streams, then the result's repr and a
newline), or for an error the start of "ename: evalue" (a trailing "..." stands for the
rest). The marked blocks of one file
run in order in one kernel, as the cells of a notebook, through `kiln run`; an error
example runs after the examples before it.

Run by meson (suites 'lang' and 'protocol') with KILN_BIN and KILN_DOCS set; runs are
recorded in a temporary results store (KILN_RESULTS)."""
import glob
import os
import re
import subprocess

import nbformat
import pytest

KILN = os.environ.get("KILN_BIN", "kiln")
DOCS = os.environ.get("KILN_DOCS", os.path.join(os.path.dirname(__file__), "..", "..", "docs"))
FENCE = re.compile(r"^(`{3,})([^`\n]*)\n(.*?)^\1[ \t]*$", re.M | re.S)


def blocks(path):
    """[(kind, code, expected output or None, line)], kind 'example' or 'error'."""
    text = open(path, encoding="utf-8").read()
    found, last_end = [], -1
    for m in FENCE.finditer(text):
        words = m.group(2).split()
        line = text.count("\n", 0, m.start()) + 1
        if "kiln-output" in words:
            after = found and found[-1][2] is None and not text[last_end:m.start()].strip()
            assert after, f"{path}:{line}: a kiln-output block must come right after a " \
                          "kiln-example or kiln-error block"
            found[-1] = (found[-1][0], found[-1][1], m.group(3), found[-1][3])
        elif "kiln-example" in words or "kiln-error" in words:
            kind = "error" if "kiln-error" in words else "example"
            found.append((kind, m.group(3).rstrip("\n"), None, line))
            last_end = m.end()
    return found


def shown(cell):
    out = ""
    for o in cell.outputs:
        if o.output_type == "stream":
            out += o.text
        elif o.output_type == "execute_result":
            out += o.data.get("text/plain", "") + "\n"
    return out


def run_cells(tmp_path, name, sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    src, out = tmp_path / f"{name}.ipynb", tmp_path / f"{name}.out.ipynb"
    nbformat.write(nb, src)
    env = dict(os.environ, KILN_RESULTS=str(tmp_path / "results.sqlite"))
    p = subprocess.run([KILN, "run", str(src), "-o", str(out)], capture_output=True,
                       text=True, cwd=tmp_path, env=env, timeout=300)
    cells = nbformat.read(out, as_version=4).cells if out.exists() else []
    return p, cells


DOC_FILES = sorted(glob.glob(os.path.join(DOCS, "*.md")))
MARKED = [f for f in DOC_FILES if blocks(f)]


def test_examples_are_marked():
    """The marking is in use (a typo in it would silently test nothing)."""
    names = {os.path.basename(f) for f in MARKED}
    assert {"lang.md", "forms.md", "training-magics.md"} <= names, names


@pytest.mark.parametrize("doc", MARKED, ids=[os.path.basename(f) for f in MARKED])
def test_doc_examples_run(tmp_path, doc):
    marked = blocks(doc)
    ok = [b for b in marked if b[0] == "example"]
    p, cells = run_cells(tmp_path, "examples", [b[1] for b in ok])
    assert p.returncode == 0, f"{doc}: an example failed:\n{p.stderr}"
    for (kind, code, want, line), cell in zip(ok, cells):
        if want is not None:
            assert shown(cell) == want, f"{doc}:{line}: the output differs for\n{code}"
    for i, (kind, code, want, line) in enumerate(marked):
        if kind != "error":
            continue
        before = [b[1] for b in marked[:i] if b[0] == "example"]
        p, cells = run_cells(tmp_path, f"error{i}", before + [code])
        assert p.returncode == 1, f"{doc}:{line}: the error example did not raise:\n{code}"
        errs = [o for o in cells[-1].outputs if o.output_type == "error"]
        assert errs, f"{doc}:{line}: no error output"
        if want is not None:
            got, start = f"{errs[0].ename}: {errs[0].evalue}", want.strip().removesuffix("...")
            assert got.startswith(start), f"{doc}:{line}: {got!r} does not start with {start!r}"
