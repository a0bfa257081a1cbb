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
- on the notebook's stop button (SIGINT, counted between messages so none is lost)
  sends Kiln an interrupt_request (training stops after the current step and writes
  its checkpoint, as in the native kernel), relays what Kiln says while it stops, up
  to its idle status, then raises KeyboardInterrupt shown as Kiln's short message;
- keeps the child's own log (stderr) out of the cells: it goes to a file
  ($KILN_BRIDGE_LOG, else kiln.log in the bridge's private directory);
- when the child has died, reports it; the next cell starts a new one;
- keeps a background job's table live: `%sweep` and `%train --background` return at
  once with a table (display id kiln-sweep-...) that Kiln updates about every second
  after the cell ended. A helper thread relays those updates into the Python cell that
  shows the table, between cells (it reads only while no cell runs), and a running
  cell relays them too. `%sweep status / wait / stop` are ordinary cells; the stop
  button during `wait` stops the sweep (every variant checkpoints), and the bridge's
  shutdown (the Python kernel's end) shuts Kiln down, which stops the sweep too.
"""
import atexit
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from .expand import ExpandError, prepare

START_TIMEOUT = 60.0  # seconds for the child to answer kernel_info
POLL = 0.2  # seconds between checks that the child is alive while a cell runs
WATCH = 0.1  # seconds between the helper thread's looks for a background table's updates
BACKGROUND_ID = "kiln-sweep-"  # display ids of %sweep's and %train --background's tables


class KilnError(Exception):
    """An error a Kiln cell raised; shown as Kiln's traceback, not the bridge's."""

    def __init__(self, ename, evalue, traceback=None):
        super().__init__(f"{ename}: {evalue}")
        self.ename, self.evalue = ename, evalue
        self.kiln_traceback = list(traceback or [])

    def _render_traceback_(self):  # IPython shows these lines instead of a Python traceback
        return self.kiln_traceback or [f"KilnError: {self.ename}: {self.evalue}"]


class KilnInterrupt(KeyboardInterrupt):
    """The cell was stopped: shown as Kiln's own short message (where training stopped),
    not as a traceback through the bridge. Named KeyboardInterrupt in the cell's error."""

    def __init__(self, evalue="", traceback=None):
        super().__init__(*([evalue] if evalue else []))
        self.kiln_traceback = list(traceback or [])

    def _render_traceback_(self):
        if self.kiln_traceback:
            return self.kiln_traceback
        return ["KeyboardInterrupt" + (f": {self.args[0]}" if self.args else "")]


KilnInterrupt.__name__ = KilnInterrupt.__qualname__ = "KeyboardInterrupt"


class _Stops:
    """While a cell runs in the main thread, the stop button's SIGINT only counts here
    (no KeyboardInterrupt in the middle of relaying a message, which lost it); the relay
    loop looks at the count between messages."""

    def __init__(self):
        self.count = 0
        self.old = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            try:
                self.old = signal.signal(signal.SIGINT, self._hit)
            except ValueError:  # not the main interpreter: KeyboardInterrupt as usual
                self.old = None
        return self

    def _hit(self, signum, frame):
        self.count += 1

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
        return False


def _dies_with_us():
    """Popen arguments that make the child Kiln kernel get SIGTERM when this process
    ends in any way (Linux: PR_SET_PDEATHSIG), as a kill -9 of the Python kernel would
    otherwise leave it, and a sweep it started, running with no one to stop them. The
    sweep asked for the same when its parent goes: its variants checkpoint and end."""
    if not sys.platform.startswith("linux"):
        return {}
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return {}
    parent = os.getpid()

    def preexec():
        prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent went before prctl took effect
            os._exit(1)

    return {"preexec_fn": preexec}


class Bridge:
    """One child Kiln kernel and the relay of its outputs into the current cell."""

    def __init__(self, kernel_name=None):
        self.kernel_name = kernel_name or os.environ.get("KILN_BRIDGE_KERNEL", "kiln")
        self.km = None
        self.kc = None
        self.ipc_dir = None
        self.log_path = None
        # the IOPub channel has one reader at a time: a cell (run) or the watcher
        self._iopub = threading.Lock()
        self._background = {}  # display id -> (out, parent header) of a live table
        self._watcher = None
        self._watch_stop = threading.Event()

    # ---- the child kernel ----
    def start(self):
        from jupyter_client.manager import KernelManager

        # Unix sockets in a private directory: no TCP port for another process to take
        # between jupyter_client choosing it and the kernel binding it, nothing on the
        # network.
        self.ipc_dir = tempfile.mkdtemp(prefix="kiln-bridge-")
        km = KernelManager(kernel_name=self.kernel_name, transport="ipc",
                           ip=os.path.join(self.ipc_dir, "kiln"))
        # The child's own log ("kiln: kernel ... ready", "interrupt requested") goes to a
        # file, not to this process's stderr, which ipykernel shows in the cell.
        log_path = os.environ.get("KILN_BRIDGE_LOG") or os.path.join(self.ipc_dir, "kiln.log")
        with open(log_path, "ab") as log:
            km.start_kernel(stdout=log, stderr=log, **_dies_with_us())
        self.log_path = log_path
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
        self.stop_watching()
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
        self.stop_watching()
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
        outputs to out; raises KilnError on a Kiln error, KeyboardInterrupt (KilnInterrupt)
        when interrupted."""
        with self._iopub:  # from before the request: the watcher takes none of its messages
            self.ensure(out)
            if assignments:
                self.assign(assignments)
            msg_id = self.kc.execute(code, store_history=True, allow_stdin=False)
            with _Stops() as stops:
                error, interrupted = self._relay(msg_id, out, stops)
            reply = self.reply(msg_id)
        if self._background:
            self.watch()
        if reply is not None and reply.get("status") == "error" and error is None:
            error = reply
        if hasattr(out, "flush"):
            out.flush()  # what Kiln said while it stopped, before the error under it
        if interrupted:  # with Kiln's word on where it stopped, when it gave one
            e = error or {}
            raise KilnInterrupt(e.get("evalue", ""), e.get("traceback")) from None
        if error is not None:
            raise KilnError(error.get("ename", "Error"), error.get("evalue", ""),
                            error.get("traceback"))

    def _relay(self, msg_id, out, stops):
        """Relays the cell's IOPub messages up to its idle status: (error, interrupted).
        A stop sends Kiln an interrupt_request and keeps relaying (the checkpoint line
        comes after it); a second stop only stops waiting once what has arrived is
        relayed."""
        error, interrupted, seen = None, False, 0
        while True:
            if stops.count > seen:  # the stop button (SIGINT), counted by _Stops
                seen = stops.count
                if interrupted:
                    self._drain(msg_id, out)
                    return error, True  # a second stop: leave the child to finish
                interrupted = True
                self.km.interrupt_kernel()  # Kiln's kernelspec: interrupt_request
                out.stderr("Kiln: interrupting (training stops after the current step "
                           "and writes its checkpoint) ...\n")
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
            except KeyboardInterrupt:  # no handler could be set (not the main thread)
                stops.count += 1
                continue
            kind, content = msg["msg_type"], msg["content"]
            if msg["parent_header"].get("msg_id") != msg_id:
                self._relay_background(kind, content, out)
                continue
            if kind == "status" and content.get("execution_state") == "idle":
                return error, interrupted
            if kind == "error":
                error = content
            else:
                self._note_background(kind, content, out)
                out.relay(kind, content)

    # ---- a background job's live table ----
    def _note_background(self, kind, content, out):
        """A %sweep / %train --background table shown by this cell: its later updates
        go to this cell (with its parent header, where ipykernel lets a thread say so)."""
        did = (content.get("transient") or {}).get("display_id") or ""
        if kind == "display_data" and did.startswith(BACKGROUND_ID):
            self._background[did] = (out, getattr(out, "parent", lambda: None)())

    def _relay_background(self, kind, content, out=None):
        """An update of a background table (a message of an earlier cell): relayed to
        out (the running cell) or, between cells, to the cell that showed it."""
        did = (content.get("transient") or {}).get("display_id")
        if kind != "update_display_data" or did not in self._background:
            return
        shown_by, parent = self._background[did]
        if out is not None:
            out.relay(kind, content)
            return
        token = shown_by.set_thread_parent(parent) if hasattr(shown_by, "set_thread_parent") \
            else None
        try:
            shown_by.relay(kind, content)
        finally:
            if token is not None:
                shown_by.reset_thread_parent(token)

    def watch(self):
        """Starts the helper thread that relays background tables' updates between cells
        (once; it ends with the child)."""
        if self._watcher is not None and self._watcher.is_alive():
            return
        self._watch_stop.clear()
        self._watcher = threading.Thread(target=self._watch, args=(self.kc,),
                                         name="kiln-bridge-watch", daemon=True)
        self._watcher.start()

    def _watch(self, kc):
        while not self._watch_stop.is_set() and self.kc is kc and kc is not None:
            if not self._iopub.acquire(timeout=WATCH):  # never while a cell runs
                continue
            msg = None
            try:
                if self._watch_stop.is_set() or self.kc is not kc:
                    return
                msg = kc.iopub_channel.get_msg(timeout=0)
                self._relay_background(msg["msg_type"], msg["content"])
            except queue.Empty:
                msg = None
            except Exception:  # the channel closed under us (the child is gone), or a
                return         # display that cannot be updated: the table stays as it is
            finally:
                self._iopub.release()
            if msg is None:
                self._watch_stop.wait(WATCH)

    def stop_watching(self):
        self._watch_stop.set()
        w, self._watcher = self._watcher, None
        if w is not None and w is not threading.current_thread():
            w.join(timeout=5)
        self._background.clear()

    def _drain(self, msg_id, out):
        """Relays the messages of msg_id that have already arrived."""
        while True:
            try:
                msg = self.kc.iopub_channel.get_msg(timeout=0.05)
            except queue.Empty:
                return
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] not in (
                    "status", "error"):
                out.relay(msg["msg_type"], msg["content"])

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

    def parent(self):
        """The running cell's parent header (where its displays go)."""
        return dict(getattr(self.shell.display_pub, "parent_header", None) or {})

    # ipykernel >= 6.?: a thread's displays carry the header it sets (else the newest cell's)
    def set_thread_parent(self, parent):
        setter = getattr(self.shell.display_pub, "set_thread_parent", None)
        return setter(parent) if setter and parent else None

    def reset_thread_parent(self, token):
        resetter = getattr(self.shell.display_pub, "reset_thread_parent", None)
        if resetter and token is not None:
            resetter(token)

    def stderr(self, text):
        sys.stderr.write(text)
        sys.stderr.flush()

    def flush(self):
        sys.stdout.flush()
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


# Kiln's magics that IPython does not have: typed in a Python cell without %%kiln they
# would get IPython's bare "Line magic function not found" (tests/wheel checks the list
# against the kernel's own).
KILN_ONLY_MAGICS = ("checkpoint", "dataset", "device", "evaluate", "export", "fine_tune",
                    "lr_find", "model", "predict", "results", "resume", "sweep", "train")


def _hint(name):
    def magic(line="", cell=None):
        pct = "%%" if cell is not None else "%"
        one = "" if cell is not None else f", or write %kiln %{name} {line}".rstrip()
        raise UsageError(f"{pct}{name} is a Kiln magic, and this is a Python cell: put "
                         f"%%kiln on the cell's first line (the Kiln code below it){one}")

    magic.__name__ = name
    magic.__doc__ = f"A hint: %{name} runs in a %%kiln cell (Kiln's magic)."
    return magic


def load_ipython_extension(ipython):
    ipython.register_magics(KilnMagics(ipython))
    for name in KILN_ONLY_MAGICS:
        if not ipython.find_line_magic(name) and not ipython.find_cell_magic(name):
            ipython.register_magic_function(_hint(name), "line_cell", name)


def unload_ipython_extension(ipython):
    magics = ipython.magics_manager.registry.get("KilnMagics")
    if magics is not None:
        magics.bridge.shutdown()
