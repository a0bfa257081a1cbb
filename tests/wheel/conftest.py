"""Shared helpers for tests/wheel: notebooks built in code, the source tree's python/
package, and a dist-info that declares pyproject.toml's entry points (what an
installed wheel has), so papermill finds kiln_kernel's before any wheel exists; with
KILN_TEST_INSTALLED=1 the installed wheel's own package and entry points instead."""
import os
import sys
import tomllib

import nbformat
from jupyter_client.manager import KernelManager
import pytest

ROOT = os.environ.get("KILN_SOURCE_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
# KILN_TEST_INSTALLED=1 (.ci/wheel): the tests run against an installed kiln-kernel
# wheel (its kiln_kernel package, kernelspec and entry points), not the source tree.
INSTALLED = os.environ.get("KILN_TEST_INSTALLED") == "1"


def notebook(cells, kernel="kiln", language="kiln"):
    """cells: [(source, tags)] or sources; a code cell each."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": language}
    nb.metadata["language_info"] = {"name": language}
    for c in cells:
        src, tags = (c, []) if isinstance(c, str) else c
        cell = nbformat.v4.new_code_cell(src)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


def text_of(outputs):
    parts = []
    for o in outputs:
        if o.get("output_type") == "stream":
            parts.append(o.get("text", ""))
        elif "data" in o:
            parts.append(o["data"].get("text/plain", ""))
        elif o.get("output_type") == "error":
            parts.append("\n".join(o.get("traceback", [])))
    return "".join(parts)


@pytest.fixture(scope="session")
def dist_info(tmp_path_factory):
    """A directory holding kiln_kernel-VERSION.dist-info with the entry points that
    pyproject.toml declares; put it on PYTHONPATH next to python/. Installed: none
    (the wheel's own dist-info declares them)."""
    if INSTALLED:
        return ""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    d = tmp_path_factory.mktemp("site")
    info = d / "kiln_kernel-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kiln-kernel\nVersion: 0.0\n")
    lines = []
    for group, eps in project.get("entry-points", {}).items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in eps.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return str(d)


def env_with(*paths):
    env = dict(os.environ)
    first = [] if INSTALLED else [os.path.join(ROOT, "python")]
    env["PYTHONPATH"] = os.pathsep.join([*first, *(p for p in paths if p),
                                         env.get("PYTHONPATH", "")])
    return env


PYTHON = sys.executable


class PyKernel:
    """An ipykernel started through jupyter_client, with the bridge loaded."""

    def __init__(self):
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel()
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.run("%load_ext kiln_kernel")

    def run(self, code, on_msg=None, timeout=240):
        msg_id = self.kc.execute(code)
        text = ""
        kinds = []
        while True:
            m = self.kc.get_iopub_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            kinds.append(m["msg_type"])
            c = m["content"]
            if m["msg_type"] == "stream":
                text += c["text"]
            elif m["msg_type"] in ("display_data", "execute_result", "update_display_data"):
                text += c["data"].get("text/plain", "") + "\n"
            elif m["msg_type"] == "error":
                text += "\n".join(c["traceback"])
            elif m["msg_type"] == "status" and c["execution_state"] == "idle":
                break
            if on_msg:
                on_msg(m, text)
        while True:
            r = self.kc.get_shell_msg(timeout=timeout)
            if r["parent_header"].get("msg_id") == msg_id:
                return r["content"], text

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)
