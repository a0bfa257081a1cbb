"""kiln_kernel: the Python side of the kiln-kernel wheel.

- `python -m kiln_kernel ARGS` / the `kiln` command: the packaged kiln binary.
- `%load_ext kiln_kernel` in an IPython kernel (Colab, Kaggle, any ipykernel): the
  `%%kiln` cell magic and `%kiln LINE` run Kiln code in a Kiln kernel started as a
  child process (bridge.py).
- papermill's parameter translator for the kiln kernel (papermill.py), found by
  papermill through the wheel's `papermill.engine` entry point.
Nothing heavy is imported here: papermill and the console command import this too.
"""

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython):
    from .bridge import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):
    from .bridge import unload_ipython_extension as unload

    unload(ipython)
