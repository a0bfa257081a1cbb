#!/usr/bin/env python3
"""Headless notebook execution, side by side: `kiln run` vs papermill on ipykernel,
same notebook (its cells are valid IPython too), same machine, same run.

  python3 bench/kiln_run_bench.py [BUILD_DIR] [REPEATS]

Prints the median wall time of each and the ratio, for a parameter notebook and for
one with an extra cell of 2000 assignments. The whole run is measured (process and
kernel start included), as a batch job sees it."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
REPEATS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
KILN = os.path.join(BUILD, "kernel", "kiln")


def notebook(path, big):
    nb = nbformat.v4.new_notebook()
    cells = ['epochs = 3\nlr = 0.01\nname = "mnist"',
             'print("epochs", epochs)\ntotal = epochs * 2\n[total, name]',
             'd = {"k": True, "v": [1, 2.5, None]}\nd["k"] = lr > 0.001\nd']
    if big:
        cells.append("\n".join("x%d = %d * 2 + len('abc')" % (i, i) for i in range(2000)))
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


def timed(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return time.perf_counter() - t0


def main():
    with tempfile.TemporaryDirectory() as d:
        for big in (False, True):
            src = os.path.join(d, "nb.ipynb")
            notebook(src, big)
            k = [timed([KILN, "run", src, "-o", os.path.join(d, "k.ipynb")]) for _ in range(REPEATS)]
            p = [timed([sys.executable, "-m", "papermill", "-k", "python3", "--no-progress-bar",
                        src, os.path.join(d, "p.ipynb")]) for _ in range(REPEATS)]
            km, pm = statistics.median(k), statistics.median(p)
            what = "3 cells + 2000 assignments" if big else "3 parameter cells"
            print("%-28s kiln run %.3f s   papermill/ipykernel %.3f s   ratio %.0fx"
                  % (what, km, pm, pm / km))


if __name__ == "__main__":
    main()
