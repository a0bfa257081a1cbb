"""Shared helpers for the protocol tests: start the built `kiln` through its test
kernelspec (meson sets JUPYTER_PATH to build/tests), capture the kernel's stderr, and
collect the messages that belong to one request."""
import json
import os
import tempfile
import time

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

KERNEL_NAME = "kiln"


def kiln_binary():
    spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    return spec.argv[0]


class Kernel:
    """A started kernel with a ready client and its stderr in a temporary file."""

    def __init__(self):
        self.log = tempfile.NamedTemporaryFile(prefix="kiln-stderr-", suffix=".log", delete=False)
        self.km = KernelManager(kernel_name=KERNEL_NAME)
        self.km.start_kernel(stderr=self.log)
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


@pytest.fixture(scope="module")
def kernel():
    k = Kernel()
    yield k
    k.close()


@pytest.fixture
def fresh_kernel():
    k = Kernel()
    yield k
    k.close()


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


def reply_for(channel, msg_id, timeout=15):
    """The reply on channel (shell_channel/control_channel/stdin) whose parent is msg_id."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"no reply for {msg_id}"
        msg = channel.get_msg(timeout=left)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def execute(kc, code, timeout=15, **kw):
    """Runs code; returns (reply, [iopub messages of the request])."""
    msg_id = kc.execute(code, **kw)
    reply = reply_for(kc.shell_channel, msg_id, timeout)
    return reply, iopub_for(kc, msg_id, timeout)


def outputs(msgs, msg_type):
    return [m["content"] for m in msgs if m["msg_type"] == msg_type]


def stdout_text(msgs):
    return "".join(c["text"] for c in outputs(msgs, "stream") if c["name"] == "stdout")


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)
