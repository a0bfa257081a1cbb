"""The bridge: Kiln cells in a Python (IPython) notebook, for Colab, Kaggle and any
ipykernel.

`%load_ext kiln_kernel` registers `%%kiln` (a cell) and `%kiln LINE` (one line). The
first use starts a Kiln kernel as a child process through jupyter_client (kernelspec
"kiln", or $KILN_BRIDGE_KERNEL); it stays up for the session, so variables, data sets
and models persist between cells as in a Kiln notebook. Each cell:
- has `$name` / `{expr}` filled in from the Python namespace first (expand.py), so a
  Python form cell (`epochs = 10  #@param`) drives the Kiln cells; on magic and `!`
  lines the values are sent as Kiln assignments first (a silent request), so each
  stays one word, as `kiln run -p` values do;
- has every output relayed into the Python cell as it comes: streams, display_data,
  update_display_data (same display id, so a progress bar updates in place), results,
  clear_output - images and HTML keep their MIME types;
- raises KilnError (shown as Kiln's own traceback) when Kiln reports an error, so
  "Run all" stops there;
- on KeyboardInterrupt (the notebook's stop button) sends Kiln an interrupt_request
  (training stops after the current step and writes its checkpoint, as in the native
  kernel), relays what Kiln says while it stops, then raises KeyboardInterrupt;
- when the child has died, reports it; the next cell starts a new one.
"""
import atexit
import os
import queue
import shutil
import sys
import tempfile
import time

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from .expand import ExpandError, prepare

START_TIMEOUT = 60.0  # seconds for the child to answer kernel_info
POLL = 0.2  # seconds between checks that the child is alive while a cell runs


class KilnError(Exception):
    """An error a Kiln cell raised; shown as Kiln's traceback, not the bridge's."""

    def __init__(self, ename, evalue, traceback=None):
        super().__init__(f"{ename}: {evalue}")
        self.ename, self.evalue = ename, evalue
        self.kiln_traceback = list(traceback or [])

    def _render_traceback_(self):  # IPython shows these lines instead of a Python traceback
        return self.kiln_traceback or [f"KilnError: {self.ename}: {self.evalue}"]


class Bridge:
    """One child Kiln kernel and the relay of its outputs into the current cell."""

    def __init__(self, kernel_name=None):
        self.kernel_name = kernel_name or os.environ.get("KILN_BRIDGE_KERNEL", "kiln")
        self.km = None
        self.kc = None
        self.ipc_dir = None

    # ---- the child kernel ----
    def start(self):
        from jupyter_client.manager import KernelManager

        # Unix sockets in a private directory: no TCP port for another process to take
        # between jupyter_client choosing it and the kernel binding it, nothing on the
        # network.
        self.ipc_dir = tempfile.mkdtemp(prefix="kiln-bridge-")
        km = KernelManager(kernel_name=self.kernel_name, transport="ipc",
                           ip=os.path.join(self.ipc_dir, "kiln"))
        km.start_kernel()
        kc = km.blocking_client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=START_TIMEOUT)
        except RuntimeError as e:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            self.remove_ipc_dir()
            raise KilnError("KernelStartError", f"the Kiln kernel did not start: {e}") from None
        self.km, self.kc = km, kc

    def alive(self):
        return self.km is not None and self.km.is_alive()

    def exit_status(self):
        proc = getattr(getattr(self.km, "provisioner", None), "process", None)
        code = proc.poll() if proc is not None else None
        return "unknown" if code is None else (f"signal {-code}" if code < 0 else str(code))

    def forget(self):
        """Drop a dead child (channels closed, its files cleaned up)."""
        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None:
            try:
                self.km.cleanup_resources()
            except Exception:  # the files may be gone already
                pass
        self.km = self.kc = None
        self.remove_ipc_dir()

    def remove_ipc_dir(self):
        if self.ipc_dir:
            shutil.rmtree(self.ipc_dir, ignore_errors=True)
            self.ipc_dir = None

    def shutdown(self):
        if self.kc is not None:
            self.kc.stop_channels()
        if self.km is not None and self.km.has_kernel:
            self.km.shutdown_kernel(now=False)
        self.km = self.kc = None
        self.remove_ipc_dir()

    def ensure(self, out):
        """A running child: the current one, or a new one (saying why, when the old one
        died)."""
        if self.km is not None and not self.km.is_alive():
            out.stderr(f"Kiln: the Kiln kernel had stopped (exit status "
                       f"{self.exit_status()}); starting a new one. Variables, data sets "
                       f"and models of the old one are gone; %resume continues a run from "
                       f"its run directory.\n")
            self.forget()
        if self.km is None:
            self.start()

    # ---- one cell ----
    # Messages are read from the channels' sockets directly (channel.get_msg): the
    # client's get_iopub_msg/get_shell_msg run a coroutine to completion, and inside
    # ipykernel, whose event loop is running, each call hops to a helper thread: 41 ms
    # per trivial %kiln cell that way, 14 ms this way (bench/wheel_bench.py, loaded).
    def assign(self, assignments):
        """Runs the `name = literal` lines expand.prepare wrote, silently; KilnError
        when Kiln refuses them."""
        msg_id = self.kc.execute(assignments, silent=True, store_history=False,
                                 allow_stdin=False)
        reply = self.reply(msg_id, timeout=30.0)
        if reply is None:
            raise KilnError("KernelError", "the Kiln kernel did not answer while it was "
                            "given the cell's Python values")
        if reply.get("status") == "error":
            raise KilnError(reply.get("ename", "Error"), "the cell's Python values: " +
                            reply.get("evalue", ""))

    def run(self, code, out, assignments=""):
        """Runs code in the child (after the assignments, when any), relaying its
        outputs to out; raises KilnError on a Kiln error, KeyboardInterrupt when
        interrupted."""
        self.ensure(out)
        if assignments:
            self.assign(assignments)
        msg_id = self.kc.execute(code, store_history=True, allow_stdin=False)
        interrupted = False
        error = None
        done = False
        while not done:
            try:
                while True:
                    try:
                        msg = self.kc.iopub_channel.get_msg(timeout=POLL)
                    except queue.Empty:
                        if not self.km.is_alive():
                            status = self.exit_status()
                            self.forget()
                            raise KilnError("KernelDied", f"the Kiln kernel died while running "
                                            f"this cell (exit status {status}); the next "
                                            f"%%kiln cell starts a new one") from None
                        continue
                    if msg["parent_header"].get("msg_id") != msg_id:
                        continue
                    kind, content = msg["msg_type"], msg["content"]
                    if kind == "status" and content.get("execution_state") == "idle":
                        break
                    if kind == "error":
                        error = content
                    else:
                        out.relay(kind, content)
                done = True
            except KeyboardInterrupt:
                if interrupted or self.km is None:
                    raise  # a second stop: stop waiting, leave the child to finish
                interrupted = True
                self.km.interrupt_kernel()  # Kiln's kernelspec: interrupt_request
                out.stderr("Kiln: interrupting (training stops after the current step "
                           "and writes its checkpoint) ...\n")
        reply = self.reply(msg_id)
        if reply is not None and reply.get("status") == "error" and error is None:
            error = reply
        if interrupted:  # with Kiln's word on where it stopped, when it gave one
            raise KeyboardInterrupt(*([error["evalue"]] if error and error.get("evalue") else []))
        if error is not None:
            raise KilnError(error.get("ename", "Error"), error.get("evalue", ""),
                            error.get("traceback"))

    def reply(self, msg_id, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.kc.shell_channel.get_msg(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg["content"]
        return None


class IPythonOut:
    """Where relayed outputs go: the running IPython cell."""

    def __init__(self, shell):
        self.shell = shell

    def stderr(self, text):
        sys.stderr.write(text)
        sys.stderr.flush()

    def relay(self, kind, c):
        if kind == "stream":  # ipykernel flushes them before a display and at the end
            stream = sys.stderr if c.get("name") == "stderr" else sys.stdout
            stream.write(c.get("text", ""))
        elif kind in ("display_data", "update_display_data", "execute_result"):
            self.shell.display_pub.publish(
                data=c.get("data", {}), metadata=c.get("metadata", {}),
                transient=c.get("transient") or None, update=kind == "update_display_data")
        elif kind == "clear_output":
            from IPython.display import clear_output

            clear_output(wait=c.get("wait", False))


@magics_class
class KilnMagics(Magics):
    def __init__(self, shell, bridge=None):
        super().__init__(shell)
        self.bridge = bridge or Bridge()
        atexit.register(self.bridge.shutdown)

    @no_var_expand  # expand() does it: `$name` unknown to Python is left for Kiln
    @line_cell_magic
    def kiln(self, line, cell=None):
        """%kiln LINE: run one line of Kiln code; %%kiln: run the cell as Kiln code.

        `$name` and `{expr}` take values from the Python namespace first (`$$`, `{{`, `}}`
        for literal characters); the Kiln kernel starts on first use and stays up."""
        if cell is None:
            code = line
        elif line.strip():
            raise UsageError(f"%%kiln takes no arguments (got '{line.strip()}'); the cell "
                             f"below it is the Kiln code")
        else:
            code = cell
        if not code.strip():
            return
        try:
            assignments, code = prepare(code, self.shell.user_ns)
        except ExpandError as e:
            raise UsageError(str(e)) from None
        self.bridge.run(code, IPythonOut(self.shell), assignments)


def load_ipython_extension(ipython):
    ipython.register_magics(KilnMagics(ipython))


def unload_ipython_extension(ipython):
    magics = ipython.magics_manager.registry.get("KilnMagics")
    if magics is not None:
        magics.bridge.shutdown()
