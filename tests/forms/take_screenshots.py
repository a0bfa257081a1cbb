"""Retakes docs/screenshots/01-08: the stage notebooks from notebooks/ run in JupyterLab
4 (headless Debian Chromium, jupyterlab_widgets, no extension of ours) with small
parameters (Fashion-MNIST --subset 2000 --val 500, 2 epochs), each picture one or two
cells of the page. Not a test: run it by hand after a change to what those cells show,
then look at every picture before committing it.

    JUPYTER_PATH=build/tests python3 tests/forms/take_screenshots.py docs/screenshots

Uses the browser test's machinery (test_browser.py: the JupyterLab server, the page,
running a cell, waiting for an idle kernel).
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_browser as tb  # noqa: E402

NOTEBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "notebooks")

# 02-train's form with the small run's values
TRAIN_FORM = {"val = 5000 ": "val = 500  ", "subset = 0    ": "subset = 2000 ",
              "epochs = 1 ": "epochs = 2 "}
INTERRUPT = ("%train cnn --epochs 2 --batch $batch_size --lr $lr --seed $seed "
             "--run-dir runs/interrupt --checkpoint-every 4steps")


def _copy(root, name, edits=None, extra=()):
    """notebooks/NAME copied into the lab root with text replaced in its code cells and
    extra code cells appended; returns the cell indices of the code cells."""
    with open(os.path.join(NOTEBOOKS, name)) as f:
        nb = json.load(f)
    for c in nb["cells"]:
        src = "".join(c["source"])
        for old, new in (edits or {}).items():
            src = src.replace(old, new)
        c["source"] = src
    for i, src in enumerate(extra):
        nb["cells"].append({"cell_type": "code", "id": f"extra-{i}", "metadata": {},
                            "source": src, "outputs": [], "execution_count": None})
    with open(os.path.join(root, name), "w") as f:
        json.dump(nb, f)
    return [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]


def _cells(page, indices, out, name):
    """A picture of cells `indices` (notebook cell indices) together."""
    boxes = []
    for i in indices:
        cell = page.locator(".jp-Notebook .jp-Cell").nth(i)
        cell.scroll_into_view_if_needed()
        boxes.append(cell.bounding_box())
    x0 = min(b["x"] for b in boxes)
    y0 = min(b["y"] for b in boxes)
    x1 = max(b["x"] + b["width"] for b in boxes)
    y1 = max(b["y"] + b["height"] for b in boxes)
    page.screenshot(path=os.path.join(out, name),
                    clip={"x": x0, "y": y0, "width": x1 - x0, "height": y1 - y0})
    print("wrote", name, flush=True)


def _run_all(page, indices, upto=None):
    """Runs the cells in turn, each to its end (its prompt holds a number)."""
    for i in indices:
        if upto is not None and i >= upto:
            return
        cell = tb._run_cell(page, i)
        page.wait_for_function(
            "(el) => /\\[\\d+\\]/.test(el.querySelector('.jp-InputPrompt').textContent)",
            arg=cell.element_handle(), timeout=300000)
        tb._wait_idle(page, 300)


def _wait_text(page, index, pattern, timeout=300):
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    page.wait_for_function("([el, p]) => new RegExp(p).test(el.innerText)",
                           arg=[cell.element_handle(), pattern], timeout=timeout * 1000)


def main(out):
    os.makedirs(out, exist_ok=True)
    jp = os.environ.get("JUPYTER_PATH", "")
    with tempfile.TemporaryDirectory(prefix="kiln-shots-") as root:
        lab = tb.Lab(root, jp)
        try:
            take(lab, out)
        finally:
            lab.stop()


def _fresh_workspace(lab):
    """Forgets the tabs the last page had open, so the next page shows one notebook."""
    ws = lab.env["JUPYTERLAB_WORKSPACES_DIR"]
    for name in os.listdir(ws) if os.path.isdir(ws) else ():
        os.remove(os.path.join(ws, name))


def take(lab, out):
    prep = _copy(lab.root, "01-prepare-data.ipynb")
    train = _copy(lab.root, "02-train.ipynb", TRAIN_FORM,
                  extra=[INTERRUPT, "%resume runs/interrupt", "%results"])
    evaluate = _copy(lab.root, "03-evaluate.ipynb", {"val = 5000 ": "val = 500  "})
    big = {"height": 2600}
    with tb._notebook_page(lab, "01-prepare-data.ipynb", "99-shots-prepare.png") as page:
        page.set_viewport_size({"width": 1280, **big})
        _run_all(page, prep[:2])
        _cells(page, [prep[1]], out, "02-dataset-samples.png")
    _fresh_workspace(lab)
    with tb._notebook_page(lab, "02-train.ipynb", "99-shots-train.png") as page:
        page.set_viewport_size({"width": 1280, **big})
        page.keyboard.press("Control+b")   # the file browser closed: a wider notebook
        t, stop, resume, results = train[3], train[5], train[6], train[7]
        _run_all(page, train, upto=t)
        _cells(page, [train[0]], out, "01-form.png")
        _cells(page, [train[2]], out, "03-model-summary.png")
        tb._run_cell(page, t)
        _wait_text(page, t, r"step ([4-9]|1[0-9]|2[0-6])/32")
        _cells(page, [t], out, "04-train-live.png")
        _wait_text(page, t, "Run cnn: finished")
        tb._wait_idle(page, 300)
        _cells(page, [t], out, "05-train-done.png")
        _run_all(page, [train[4]])              # %evaluate --split val
        # the toolbar's stop button once the run is past its first checkpoint
        tb._run_cell(page, stop)
        _wait_text(page, stop, r"step ([6-9]|1[0-9])/32")
        page.locator("jp-button[data-command='notebook:interrupt-kernel']").first.click()
        _wait_text(page, stop, "KeyboardInterrupt")
        tb._wait_idle(page, 300)
        tb._run_cell(page, resume)
        _wait_text(page, resume, "finished")
        tb._wait_idle(page, 300)
        _cells(page, [stop, resume], out, "06-interrupt.png")
        _run_all(page, [results])
        _cells(page, [results], out, "08-results.png")
    _fresh_workspace(lab)
    with tb._notebook_page(lab, "03-evaluate.ipynb", "99-shots-evaluate.png") as page:
        page.set_viewport_size({"width": 1280, **big})
        page.keyboard.press("Control+b")
        _run_all(page, evaluate[:4])
        _cells(page, evaluate[2:4], out, "07-evaluate.png")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tb.SHOTS)
