"""Driving the built `kiln kernel` from the Python tests: start it through its test
kernelspec (meson sets JUPYTER_PATH to build/tests) with its stderr in a file, run code
and collect the messages that belong to one request. tests/pytest.ini puts this folder
on sys.path, so a test module imports it by name."""
import json
import os
import shutil
import tempfile
import time

import zmq
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

KERNEL_NAME = "kiln"


def kiln_binary():
    spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    return spec.argv[0]


class Kernel:
    """A started kernel with a ready client and its stderr in a temporary file.
    args: extra `kiln kernel` arguments. ipc: Unix sockets instead of TCP ports (many
    kernels started one after another on a busy box kept hitting "Address already in
    use" on the TCP ports jupyter_client had just picked; Unix sockets have no such
    race)."""

    def __init__(self, args=(), ipc=False):
        self.log = tempfile.NamedTemporaryFile(prefix="kiln-stderr-", suffix=".log", delete=False)
        self.ipc_dir = tempfile.mkdtemp(prefix="kiln-ipc-") if ipc else None
        where = {"transport": "ipc", "ip": os.path.join(self.ipc_dir, "k")} if ipc else {}
        self.km = KernelManager(kernel_name=KERNEL_NAME, **where)
        self.km.start_kernel(stderr=self.log, extra_arguments=list(args))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=30)

    @property
    def pid(self):
        return self.km.provisioner.process.pid

    def stderr(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def rss_kib(self):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def close(self):
        self.kc.stop_channels()
        if self.km.has_kernel:
            self.km.shutdown_kernel(now=False)
        keep = os.environ.get("KILN_TEST_KEEP_STDERR")  # a folder: keep the logs there
        if keep:
            os.makedirs(keep, exist_ok=True)
            os.replace(self.log.name, os.path.join(keep, os.path.basename(self.log.name)))
        else:
            os.unlink(self.log.name)
        if self.ipc_dir:
            shutil.rmtree(self.ipc_dir, ignore_errors=True)


def raw_shell(kernel):
    """A DEALER socket on kernel's shell channel and a Session with its key, to send
    frames no well-behaved client would."""
    info = kernel.km.get_connection_info()
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(f"{info['transport']}://{info['ip']}:{info['shell_port']}")
    key = info["key"]
    return sock, Session(key=key if isinstance(key, bytes) else key.encode(),
                         signature_scheme=info["signature_scheme"])


def iopub_for(kc, msg_id, timeout=15):
    """IOPub messages whose parent is msg_id, up to and including its idle status."""
    out = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no idle for {msg_id}; got {[m['msg_type'] for m in out]}"
        msg = kc.get_iopub_msg(timeout=left)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        out.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return out


def reply_for(channel, msg_id, timeout=15, stale=None):
    """The reply on channel (shell_channel/control_channel/stdin) whose parent is msg_id.
    stale: the only message types that may come before it (None: any)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no reply for {msg_id}"
        msg = channel.get_msg(timeout=left)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg
        assert stale is None or msg["msg_type"] in stale, msg["msg_type"]


def execute(kc, code, timeout=15, metadata=None, stale=None, **kw):
    """Runs code; returns (reply, [iopub messages of the request]). metadata: the
    request's metadata (a frontend's cellId), which kc.execute cannot send; kw: the
    other execute_request fields."""
    if metadata is None:
        msg_id = kc.execute(code, **kw)
    else:
        content = {"code": code, "silent": False, "store_history": True,
                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True, **kw}
        msg = kc.session.msg("execute_request", content, metadata=metadata)
        kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
    msgs = iopub_for(kc, msg_id, timeout)
    return reply_for(kc.shell_channel, msg_id, timeout, stale), msgs


def outputs(msgs, msg_type):
    return [m["content"] for m in msgs if m["msg_type"] == msg_type]


def stdout_text(msgs):
    return "".join(c["text"] for c in outputs(msgs, "stream") if c["name"] == "stdout")


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


class Cell:
    """What one request showed: its reply content, its text (stream text and each
    display's text/plain, in order) and the contents of its error messages."""

    def __init__(self):
        self.reply, self.text, self.errors = None, "", []


def collect(k, msg_id, timeout=240, on_text=None):
    """Runs until idle (timeout: the longest wait for any one message, so a long
    training run may take longer in all); a Cell. on_text(text) sees the text so far
    after each stream message, and with the progress display's text/plain after each
    update of it in place."""
    c = Cell()
    while True:
        m = k.kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        t = m["msg_type"]
        if t == "stream":
            c.text += m["content"]["text"]
            if on_text:
                on_text(c.text)
        elif t == "display_data":
            c.text += m["content"]["data"].get("text/plain", "") + "\n"
        elif t == "update_display_data" and on_text:  # the progress display, in place
            on_text(c.text + m["content"]["data"].get("text/plain", ""))
        elif t == "error":
            c.errors.append(m["content"])
        elif t == "status" and m["content"]["execution_state"] == "idle":
            break
    while True:
        r = k.kc.get_shell_msg(timeout=timeout)
        if r["parent_header"].get("msg_id") == msg_id:
            c.reply = r["content"]
            return c


def run(k, code, ok=True):
    """Runs code in Kernel k to the end (collect); with ok, asserts it succeeded."""
    c = collect(k, k.kc.execute(code))
    if ok:
        assert c.reply["status"] == "ok", (code, c.reply, c.text)
    return c
