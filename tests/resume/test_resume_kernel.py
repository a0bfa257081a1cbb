"""%train / %checkpoint / %resume through the real kernel (jupyter_client), suite 'resume'.

One reference run trains uninterrupted; the others are interrupted, killed with
SIGKILL (while training and while writing checkpoints), damaged, or starved of disk,
and then continued in a NEW kernel with %resume. Per-step losses come from the results
store (KILN_RESULTS, one SQLite file for the module) and must equal the reference's
bit for bit (Python floats from REAL columns), as must the final weights (read with the
`safetensors` package). Data: Fashion-MNIST (Debian's dataset-fashion-mnist), a
1024-image subset; 2 epochs of batch 16 = 128 steps, a few seconds on 2 cores.
"""
import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import struct
import subprocess
import time

import numpy as np
import pytest
from safetensors.numpy import load_file, save
from safetensors import safe_open

from kiln_ckpt import with_kiln_checksums
from kiln_client import Kernel, collect, kiln_binary, run
from kiln_env import results_tmpdir

SETUP = ["%dataset fashion-mnist --subset 1024 --val 64 --samples 0",
         "%%model net\nconv2d 8 3\nrelu\nbatchnorm\nmaxpool 2\ndropout 0.25\nflatten\ndense 10"]
TRAIN = "%train net --batch 16 --epochs 2 --seed 11 --lr 0.002"
STEPS = 2 * 1024 // 16

if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
    pytest.skip("Fashion-MNIST (Debian dataset-fashion-mnist) is not installed",
                allow_module_level=True)


@pytest.fixture(scope="module")
def tmp():
    with results_tmpdir("kiln-resume-") as d:
        yield d


def start(k, code):
    return k.kc.execute(code)


KERNEL_ARGS = []  # extra `kiln kernel` arguments of the kernels the tests start


def IpcKernel(args=()):
    """A kernel over Unix sockets (kiln_client.Kernel) with KERNEL_ARGS unless args."""
    return Kernel(args or KERNEL_ARGS, ipc=True)


def new_kernel(setup=True):
    k = IpcKernel()
    if setup:
        for code in SETUP:
            run(k, code)
    return k


def run_id(text):
    return int(re.search(r"Recording as run (\d+)", text).group(1))


def losses(run_id_):
    """Per-step training losses of a run: the last value logged for each step."""
    db = sqlite3.connect(os.environ["KILN_RESULTS"])
    rows = db.execute("SELECT step, value FROM metrics WHERE run_id=? AND key='loss' AND "
                      "kind=(SELECT kind FROM metrics WHERE run_id=? AND key='loss' LIMIT 1) "
                      "ORDER BY rowid", (run_id_, run_id_)).fetchall()
    db.close()
    out = {}
    for step, v in rows:
        out[step] = v
    return out


def weights(path):
    return {k: v for k, v in load_file(path).items() if k.startswith("model.")}


def ckpt(d, step):
    return os.path.join(d, "ckpt-step%08d.safetensors" % step)


@pytest.fixture(scope="module")
def reference(tmp):
    """The uninterrupted run: its per-step losses and final checkpoint."""
    k = new_kernel()
    rd = os.path.join(tmp, "ref")
    c = run(k, f"{TRAIN} --run-dir {rd} --checkpoint-every 32steps --keep 3")
    k.close()
    ls = losses(run_id(c.text))
    assert sorted(ls) == list(range(1, STEPS + 1))
    return {"losses": ls, "final": ckpt(rd, STEPS), "dir": rd}


def assert_same_run(ref, ls, final, first=1):
    """Steps first..STEPS equal the reference's (steps logged before first must match
    where present: a SIGKILL loses the results store's last buffered rows)."""
    bad = [(s, ls.get(s), ref["losses"][s]) for s in range(1, STEPS + 1)
           if ls.get(s) != ref["losses"][s] and (s >= first or s in ls)]
    assert not bad, f"{len(bad)} steps differ, first: {bad[:3]}"
    a, b = weights(final), weights(ref["final"])
    assert sorted(a) == sorted(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def interrupt_then_resume(rd, reference, after, extra=""):
    """%train into rd, interrupted once a checkpoint of step >= after exists (an
    arbitrary later step: periodic saves show in the progress display as "last
    checkpoint: step N"), then %resume in a new kernel with nothing defined; the run
    must equal the uninterrupted reference bit for bit."""
    k = new_kernel()
    fired = []

    def on_text(text):
        saved = re.findall(r"last checkpoint: step (\d+)", text)
        if not fired and saved and int(saved[-1]) >= after:
            fired.append(1)
            k.km.interrupt_kernel()

    c = collect(k, start(k, f"{TRAIN} --run-dir {rd} --checkpoint-every 10steps {extra}"),
                on_text=on_text)
    assert c.reply["status"] == "error", "the run ended before the interrupt (too fast?)"
    assert c.reply["ename"] == "KeyboardInterrupt"
    stopped = int(re.search(r"after step (\d+)", c.reply["evalue"]).group(1))
    assert after <= stopped < STEPS
    assert os.path.exists(ckpt(rd, stopped)), "the interrupt did not checkpoint its step"
    rid = run_id(c.text)
    run(k, "1 + 1")  # the kernel stays usable
    k.close()
    k = new_kernel(setup=False)  # nothing defined: %resume rebuilds everything
    c = run(k, f"%resume {rd}")
    k.close()
    assert f"step {stopped} of {STEPS}" in c.text
    assert run_id(c.text) == rid  # the same run in the results store continues
    assert_same_run(reference, losses(rid), ckpt(rd, STEPS))


def test_interrupt_then_resume_in_a_new_kernel_is_exact(tmp, reference):
    interrupt_then_resume(os.path.join(tmp, "interrupted"), reference, 30, "--keep 2")


def test_device_path_interrupt_and_resume_is_exact(tmp, reference):
    """The trainer's device path (`kiln kernel --device-path`: what a GPU runs, here on
    the CPU; losses read back in batches) gives the host path's reference run bit for
    bit."""
    KERNEL_ARGS.append("--device-path")
    try:
        interrupt_then_resume(os.path.join(tmp, "device-path"), reference, 20)
    finally:
        KERNEL_ARGS.remove("--device-path")


def kill9_then_resume(rd, reference, train=TRAIN, cells=()):
    """SIGKILL while checkpointing every step (most of the time is spent writing), then
    %resume continues from the newest complete checkpoint, exactly. cells: run before
    training (e.g. another model)."""
    k = new_kernel()
    for code in cells:
        run(k, code)
    seen = []

    def on_text(text):  # periodic saves show in the progress display, not as lines
        steps = [int(s) for s in re.findall(r"last checkpoint: step (\d+)", text)]
        if not seen and steps and max(steps) >= 20:
            seen.append(max(steps))
            os.kill(k.pid, signal.SIGKILL)

    msg = start(k, f"{train} --run-dir {rd} --checkpoint-every 1steps --keep 3")
    with pytest.raises(Exception):
        collect(k, msg, timeout=5, on_text=on_text)  # the kernel died: no idle comes
    assert seen, "the kernel was not killed"
    k.kc.stop_channels()
    k.km.shutdown_kernel(now=True)
    os.unlink(k.log.name)
    shutil.rmtree(k.ipc_dir, ignore_errors=True)
    k = new_kernel(setup=False)
    c = run(k, f"%resume {rd}")
    k.close()
    resumed = int(re.search(r"from \S+ after step (\d+) of", c.text).group(1))
    assert resumed >= seen[0]  # at most one interval (here: one step) lost
    assert not [f for f in os.listdir(rd) if f.endswith(".tmp")]  # stale tmp overwritten/unused
    db = sqlite3.connect(os.environ["KILN_RESULTS"])
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    assert_same_run(reference, losses(run_id(c.text)), ckpt(rd, STEPS), first=resumed + 1)
    return c


def test_kill9_while_training_and_writing(tmp, reference):
    kill9_then_resume(os.path.join(tmp, "killed"), reference)


def cpu_bf16():
    """Whether this CPU has the instructions --precision bf16 needs on the CPU."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512f" in flags and "avx512_bf16" in flags


TRAIN_BF16 = f"{TRAIN} --device cpu --precision bf16"


@pytest.fixture(scope="module")
def reference_bf16(tmp, reference):
    """The uninterrupted bf16 run on the CPU (not the fp32 one: its losses differ)."""
    if not cpu_bf16():
        pytest.skip("this CPU has no AVX512_BF16 (--precision bf16 on the CPU needs it)")
    k = new_kernel()
    rd = os.path.join(tmp, "ref-bf16")
    c = run(k, f"{TRAIN_BF16} --run-dir {rd} --checkpoint-every 32steps --keep 3")
    k.close()
    ls = losses(run_id(c.text))
    assert sorted(ls) == list(range(1, STEPS + 1))
    assert ls != reference["losses"], "bf16 trained exactly as fp32: nothing was rounded"
    return {"losses": ls, "final": ckpt(rd, STEPS), "dir": rd}


def test_kill9_in_bf16_on_the_cpu_resumes_exactly(tmp, reference_bf16):
    """bf16 on the CPU is deterministic: SIGKILL, %resume (which takes --precision bf16
    from the checkpoint) and the run equals the uninterrupted bf16 run bit for bit."""
    kill9_then_resume(os.path.join(tmp, "killed-bf16"), reference_bf16, TRAIN_BF16)


# a second convolution of 8 channels, stride 1 and 2, to reach VDPBF16PS's convolutions
# (the first layer's single channel keeps the rounded fp32 loops)
MODEL_DP = ("%%model net\nconv2d 8 3\nrelu\nconv2d 8 3 pad=1\nrelu\n"
            "conv2d 8 3 stride=2\nrelu\nflatten\ndense 10")


def test_kill9_in_bf16_without_amx_resumes_exactly(tmp, reference_bf16, monkeypatch):
    """The same on a CPU with AVX512_BF16 but no AMX (AMD Zen 4): AMX switched off and
    every product on VDPBF16PS (KILN_CPU_DP=all), in the uninterrupted run, the killed
    one and the resumed one."""
    monkeypatch.setenv("KILN_CPU_AMX", "off")
    monkeypatch.setenv("KILN_CPU_DP", "all")
    k = new_kernel()
    run(k, MODEL_DP)
    rd = os.path.join(tmp, "ref-bf16-dp")
    c = run(k, f"{TRAIN_BF16} --run-dir {rd} --checkpoint-every 32steps --keep 3")
    k.close()
    ref = {"losses": losses(run_id(c.text)), "final": ckpt(rd, STEPS), "dir": rd}
    assert sorted(ref["losses"]) == list(range(1, STEPS + 1))
    kill9_then_resume(os.path.join(tmp, "killed-bf16-dp"), ref, TRAIN_BF16, cells=[MODEL_DP])


# every control at once: early stopping, plateau with a cooldown, the best epoch's
# weights, both clippings, accumulation, label smoothing and the three augmentations
CONTROLS = ("--epochs 4 --early-stop 2 --min-delta 100 "
            "--schedule plateau:0.5:0,threshold=0.99,cooldown=1 --restore-best "
            "--clip-grad 0.5 --clip-value 0.02 --accumulate 2 --label-smoothing 0.1 "
            "--augment crop:2,flip,cutout:4")
CONTROL_SPE = 1024 // (16 * 2)  # --accumulate 2: an update every 2 batches of 16
CONTROL_STEPS = 3 * CONTROL_SPE  # no epoch improves by 100: stopped early after epoch 3


def saved_model(k, path):
    """The session's model (what %checkpoint save writes) as {name: array}."""
    run(k, f"%checkpoint save {path}")
    return weights(path)


def test_kill9_with_epoch_controls_resumes_exactly(tmp):
    """Every training control's state is in the checkpoint: a run with early stopping,
    plateau (cooldown), --restore-best, clipping, accumulation, label smoothing and
    augmentation, SIGKILLed in its last epoch (after epoch 2 halved the lr and counted
    one epoch without improvement) and resumed in a new kernel, stops at the same epoch
    with the same per-step losses and the same final tensors as the uninterrupted run;
    --restore-best then puts epoch 1's weights in the model from epoch 1's checkpoint
    (kept by rotation as the run's best), as the uninterrupted run does from memory."""
    train = TRAIN.replace("--epochs 2", CONTROLS)
    k = new_kernel()
    ref_dir = os.path.join(tmp, "controls-ref")
    c = run(k, f"{train} --run-dir {ref_dir} --checkpoint-every 4steps")
    assert "stopped early at epoch 3 of 4 (best epoch 1, val_loss" in c.text
    assert "--restore-best: the model has the weights of epoch 1" in c.text
    ref_best = saved_model(k, os.path.join(tmp, "controls-ref-best.safetensors"))
    k.close()
    ref = losses(run_id(c.text))
    assert sorted(ref) == list(range(1, CONTROL_STEPS + 1))
    rd = os.path.join(tmp, "controls-killed")
    k = new_kernel()
    seen = []

    def on_text(text):
        steps = [int(s) for s in re.findall(r"last checkpoint: step (\d+)", text)]
        if not seen and steps and max(steps) >= 2 * CONTROL_SPE + 6:
            seen.append(max(steps))
            os.kill(k.pid, signal.SIGKILL)

    msg = start(k, f"{train} --run-dir {rd} --checkpoint-every 4steps")
    with pytest.raises(Exception):
        collect(k, msg, timeout=5, on_text=on_text)
    assert seen, "the kernel was not killed"
    k.kc.stop_channels()
    k.km.shutdown_kernel(now=True)
    os.unlink(k.log.name)
    shutil.rmtree(k.ipc_dir, ignore_errors=True)
    k = new_kernel(setup=False)
    c = run(k, f"%resume {rd}")
    resumed = int(re.search(r"from \S+ after step (\d+) of", c.text).group(1))
    assert 2 * CONTROL_SPE < resumed < CONTROL_STEPS
    assert "stopped early at epoch 3 of 4 (best epoch 1, val_loss" in c.text
    assert ("--restore-best: the model has the weights of epoch 1" in c.text
            and "from its checkpoint" in c.text), c.text
    best = saved_model(k, os.path.join(tmp, "controls-killed-best.safetensors"))
    k.close()
    ls = losses(run_id(c.text))
    bad = [(s, ls.get(s), ref[s]) for s in range(resumed + 1, CONTROL_STEPS + 1)
           if ls.get(s) != ref[s]]
    assert not bad, f"{len(bad)} steps differ, first: {bad[:3]}"
    a, b = weights(ckpt(rd, CONTROL_STEPS)), weights(ckpt(ref_dir, CONTROL_STEPS))
    assert sorted(a) == sorted(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), name
    assert not os.path.exists(ckpt(rd, CONTROL_STEPS + 4))  # no step past the stop
    # the restored best: equal to the uninterrupted run's, epoch 1's, not the last step's
    epoch1 = weights(ckpt(ref_dir, CONTROL_SPE))
    assert sorted(best) == sorted(ref_best) == sorted(epoch1)
    for name in best:
        assert np.array_equal(best[name], ref_best[name]), name
        assert np.array_equal(best[name], epoch1[name]), name
    assert any(not np.array_equal(best[n], a[n]) for n in best)


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))


def header_len(path):
    with open(path, "rb") as f:
        return struct.unpack("<Q", f.read(8))[0]


def write_checked(dst, tensors, meta):
    """A safetensors file with Kiln's two checksums filled in for meta."""
    with open(dst, "wb") as f:
        f.write(save(tensors, metadata=with_kiln_checksums(tensors, meta)))


def rewrite(src, dst, drop=(), **changes):
    """dst = src with metadata changed (or tensors/keys dropped) and valid checksums: a
    file Kiln accepts but for what was changed."""
    with safe_open(src, framework="np") as f:
        meta = {k: v for k, v in f.metadata().items() if k not in drop}
        tensors = {k: np.array(f.get_tensor(k)) for k in f.keys()
                   if not any(k.startswith(d) for d in drop)}
    meta.update(changes)
    write_checked(dst, tensors, meta)


@pytest.mark.parametrize("damage", ["truncated", "header byte", "data byte"])
def test_damaged_newest_is_skipped_with_a_warning(tmp, reference, damage):
    rd = os.path.join(tmp, "damaged-" + damage.replace(" ", "-"))
    os.makedirs(rd)
    good, bad = ckpt(reference["dir"], 96), ckpt(rd, 112)
    shutil.copy(good, rd)
    rewrite(good, bad, step="112")  # stands in for a newer file, then damaged
    if damage == "truncated":
        os.truncate(bad, os.path.getsize(bad) - 100)
    elif damage == "header byte":
        flip(bad, 8 + header_len(bad) // 2)
    else:
        flip(bad, os.path.getsize(bad) - 7)
    k = new_kernel(setup=False)
    c = run(k, f"%checkpoint list {rd}")
    assert "ckpt-step00000112.safetensors" in c.text and "NO: " in c.text
    c = run(k, f"%checkpoint show {bad}", ok=False)
    assert c.reply["status"] == "error" and bad in c.reply["evalue"]
    c = run(k, f"%resume {rd}")
    k.close()
    assert f"skipped damaged checkpoint {rd}/ckpt-step00000112.safetensors" in c.text
    assert "step 96 of" in c.text
    assert os.path.exists(bad)  # damaged files are left for a human


def test_format_v1_checkpoint_resumes(tmp, reference):
    """A checkpoint from a kiln before format v2 (data checksum zlib CRC-32) resumes;
    the same file with one data byte flipped is refused."""
    src = ckpt(reference["dir"], 96)
    path = os.path.join(tmp, "v1.safetensors")
    rewrite(src, path, format_version="1")
    with safe_open(path, framework="np") as f:
        assert "data_crc32" in f.metadata() and "data_xxh3" not in f.metadata()
    k = new_kernel(setup=False)
    c = run(k, f"%resume {path}")
    assert "step 96 of" in c.text
    flip(path, os.path.getsize(path) - 7)
    c = run(k, f"%resume {path}", ok=False)
    k.close()
    assert "data checksum mismatch" in c.reply["evalue"], c.reply["evalue"]


@pytest.mark.parametrize("case,ename,words", [
    ("newer format", "ValueError", ["format v3", "upgrade"]),
    ("other data set", "ValueError", ["checksum", "fashion-mnist"]),
    ("weights only", "ValueError", ["weights only"]),
    ("missing", "FileNotFoundError", ["does not exist"]),
])
def test_bad_checkpoints_are_clear_errors(tmp, reference, case, ename, words):
    src = ckpt(reference["dir"], 96)
    path = os.path.join(tmp, case.replace(" ", "-") + ".safetensors")
    k = new_kernel(setup=False)
    if case == "newer format":
        rewrite(src, path, format_version="3")
    elif case == "other data set":
        with safe_open(src, framework="np") as f:
            ds = json.loads(f.metadata()["dataset"])
        ds["fnv1a64"] = "0123456789abcdef"
        rewrite(src, path, dataset=json.dumps(ds))
    elif case == "weights only":
        rewrite(src, path, drop=("training_state", "optim."))
    c = run(k, f"%resume {path}", ok=False)
    run(k, "1 + 1")
    k.close()
    assert c.reply["status"] == "error" and c.reply["ename"] == ename, c.reply
    for w in words:
        assert w in c.reply["evalue"], c.reply["evalue"]
    if case != "missing":
        assert path in c.reply["evalue"]


def test_full_disk_keeps_the_good_checkpoint(tmp, reference):
    rd = os.path.join(tmp, "full")
    os.makedirs(rd)
    shutil.copy(ckpt(reference["dir"], 96), rd)
    before = open(ckpt(rd, 96), "rb").read()
    k = new_kernel(setup=False)
    loaded = run(k, f"%checkpoint load {rd}").text
    # the parameter count with separators, as everywhere else
    assert re.search(r"Loaded model 'net' \(\d{1,3},\d{3} parameters, step 96, epoch \d+\)",
                     loaded), loaded
    limit = len(before) // 2  # a file-size limit below one checkpoint
    resource.prlimit(k.pid, resource.RLIMIT_FSIZE, (limit, limit))
    c = run(k, f"%checkpoint save {ckpt(rd, 96)}", ok=False)
    assert c.reply["status"] == "error"
    assert "disk full" in c.reply["evalue"] and ckpt(rd, 96) in c.reply["evalue"]
    run(k, "1 + 1")
    k.close()
    assert open(ckpt(rd, 96), "rb").read() == before
    assert sorted(os.listdir(rd)) == ["ckpt-step00000096.safetensors"]


def test_a_run_that_cannot_be_recorded_does_not_start(tmp):
    """With the disk full (a file-size limit of 0 bytes) the results store cannot be
    created: %train stops before step 1 with an error saying so, instead of training
    a run no one can find later."""
    store = os.path.join(tmp, "full-store", "r.sqlite")
    k = new_kernel()
    soft, hard = resource.prlimit(k.pid, resource.RLIMIT_FSIZE)
    resource.prlimit(k.pid, resource.RLIMIT_FSIZE, (0, hard))
    c = run(k, f"{TRAIN} --results {store}", ok=False)
    resource.prlimit(k.pid, resource.RLIMIT_FSIZE, (soft, hard))
    run(k, "1 + 1")
    k.close()
    assert c.reply["status"] == "error" and c.reply["ename"] == "OSError", c.reply
    assert "cannot be recorded" in c.reply["evalue"] and store in c.reply["evalue"]
    assert "Recording as run" not in c.text and "step 1/" not in c.text, c.text


def test_time_limit_stops_cleanly_and_checkpoints(tmp):
    """--time-limit: the cell succeeds (a stage notebook goes on), the stop step is
    checkpointed, and %resume gets a new budget (exactness: the other tests)."""
    rd = os.path.join(tmp, "timed")
    # far more than 1 s of work even on an idle machine (30 epochs of this tiny model
    # took under a second there, so the limit never fired)
    long_run = TRAIN.replace("--epochs 2", "--epochs 3000")
    k = new_kernel()
    # 2 s: the save ahead of the limit has a margin of 40 ms plus the longest pause seen,
    # which a loaded CI machine's stalls must not jump
    c = run(k, f"{long_run} --run-dir {rd} --time-limit 2s")  # ok: not an error
    run(k, "1 + 1")
    k.close()
    steps = [int(s) for s in re.findall(r"ckpt-step(\d+)\.safetensors \(step", c.text)]
    assert steps and steps[-1] < 3000 * STEPS // 2 and os.path.exists(ckpt(rd, steps[-1]))
    assert "ahead of the time limit" in c.text  # saved before the limit, then at the stop
    k = new_kernel(setup=False)
    c = run(k, f"%resume {rd}")  # the stored 2 s again: a new budget
    k.close()
    steps2 = [int(s) for s in re.findall(r"ckpt-step(\d+)\.safetensors \(step", c.text)]
    assert f"step {steps[-1]} of" in c.text and steps2 and steps2[-1] > steps[-1]


def test_safetensors_reads_the_same_weights(tmp):
    tool = os.environ.get("RESUME_RT")
    if not tool:
        pytest.skip("RESUME_RT (the test_resume_rt binary) not given")
    d = os.path.join(tmp, "interop")
    os.makedirs(d)
    subprocess.run([tool, "--write-interop", d], check=True)
    got = load_file(os.path.join(d, "trained.safetensors"))
    raw = [f for f in os.listdir(d) if f.endswith(".f32")]
    assert len(raw) >= 6
    for f in raw:
        want = np.fromfile(os.path.join(d, f), dtype="<f4")
        t = got["model." + f[:-4]]
        assert t.dtype == np.float32 and np.array_equal(t.reshape(-1), want), f
    assert got["model.0.conv2d.weight"].shape == (4, 1, 3, 3)  # PyTorch's (K, C, R, S)
    with safe_open(os.path.join(d, "trained.safetensors"), framework="np") as f:
        assert f.metadata()["step"] == "10" and "model_spec" in f.metadata()


def test_train_on_a_run_dir_of_another_model(tmp, reference):
    """Another model in a run directory: --resume must is an error naming the
    difference; the default (auto) trains it in DIR-v2 and leaves DIR's run intact."""
    rd = os.path.join(tmp, "othermodel")
    shutil.copytree(reference["dir"], rd)
    before = sorted(os.listdir(rd))
    k = new_kernel(setup=False)
    run(k, SETUP[0])
    run(k, "%%model net\nconv2d 6 3\nrelu\nflatten\ndense 10")
    c = run(k, f"{TRAIN} --run-dir {rd} --resume must", ok=False)
    assert c.reply["status"] == "error" and c.reply["ename"] == "ValueError", c.reply
    assert "has other options: the model" in c.reply["evalue"] and rd in c.reply["evalue"]
    c = run(k, f"{TRAIN} --run-dir {rd}")
    k.close()
    assert f"This run goes to {rd}-v2 (the run in {rd} is kept" in c.text, c.text
    assert sorted(os.listdir(rd)) == before
    assert any(f.endswith(".safetensors") for f in os.listdir(rd + "-v2"))


class Listener:
    """A TCP port on 127.0.0.1 that records every connection made to it."""

    def __init__(self):
        import socket
        import threading
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.hits, self.stop = [], threading.Event()
        self.thread = threading.Thread(target=self.serve)
        self.thread.start()

    def serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(1)
            try:
                self.hits.append(conn.recv(65536))
            except OSError:
                self.hits.append(b"")
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


def test_a_tampered_checkpoint_chooses_no_destination(tmp, reference):
    """A checkpoint whose metadata names an MLflow server, another run directory and a
    data set URL: resuming it sends nothing anywhere, writes only into the directory the
    user named, and says the checkpoint's own destinations are not used."""
    lis = Listener()
    user_dir, elsewhere = os.path.join(tmp, "tampered"), os.path.join(tmp, "elsewhere")
    os.makedirs(user_dir)
    os.makedirs(elsewhere)
    src = ckpt(reference["dir"], 96)
    with safe_open(src, framework="np") as f:
        hp = json.loads(f.metadata()["hyperparameters"])
        ds = json.loads(f.metadata()["dataset"])
    hp.update(results=f"mlflow+http://127.0.0.1:{lis.port}", run_dir=elsewhere)
    rewrite(src, ckpt(user_dir, 96), hyperparameters=json.dumps(hp),
            results_store=os.path.join(elsewhere, "r.sqlite"))
    loose = os.path.join(tmp, "tampered-url.safetensors")
    ds["name"] = f"http://127.0.0.1:{lis.port}/data/"
    rewrite(src, loose, hyperparameters=json.dumps(hp), dataset=json.dumps(ds))
    try:
        k = new_kernel(setup=False)
        c = run(k, f"%resume {user_dir}")
        bad = run(k, f"%resume {loose}", ok=False)
        k.close()
    finally:
        lis.close()
    assert lis.hits == [], lis.hits
    assert os.listdir(elsewhere) == []
    assert "step 96 of" in c.text and "not used" in c.text, c.text
    assert os.path.exists(ckpt(user_dir, STEPS))  # new checkpoints where the user said
    assert bad.reply["ename"] == "ValueError" and "does not choose" in bad.reply["evalue"]


def kiln_run(nb, out, env=None, args=()):
    p = subprocess.run([kiln_binary(), "run", nb, "-o", out, *args], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        cells = json.load(f)["cells"]
    text = ""
    for c in cells:
        for o in c.get("outputs", []):
            t = o.get("text") or o.get("data", {}).get("text/plain", "")
            text += "".join(t) if isinstance(t, list) else t
    return text


def test_kiln_run_again_continues_the_run(tmp, reference):
    """A stage notebook's batch job killed (SIGKILL) mid-run and simply run again by
    `kiln run` finishes the run, exactly; `kiln run --no-resume` starts over."""
    rd = os.path.join(tmp, "stage")
    nb = os.path.join(tmp, "stage.ipynb")
    cells = SETUP + [f"{TRAIN} --run-dir {rd} --checkpoint-every 16steps"]
    with open(nb, "w") as f:
        json.dump({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                   "cells": [{"cell_type": "code", "metadata": {}, "source": c,
                              "outputs": [], "execution_count": None, "id": "c%d" % i}
                             for i, c in enumerate(cells)]}, f)
    job = subprocess.Popen([kiln_binary(), "run", nb, "-o", nb + ".out", "--log-output"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen, log = 0, ""
    for line in job.stderr:  # --log-output echoes the cells' output as it comes
        log += line
        # periodic saves are silent (progress display only); the epoch-1 end save has a
        # line, with the 16-step saves of epoch 1 before it: kill mid epoch 2
        seen += "checkpoint: " in line
        if seen == 1:
            job.kill()  # the platform kills the job
            break
    job.wait(timeout=60)
    job.stderr.close()
    assert seen == 1, log
    rid = run_id(log)
    text = kiln_run(nb, nb + ".out")
    assert f"{rd} holds this run (same options): continuing it" in text
    resumed = int(re.search(r"from \S+ after step (\d+) of", text).group(1))
    assert resumed >= 32 and resumed % 16 == 0 and run_id(text) == rid
    assert_same_run(reference, losses(rid), ckpt(rd, STEPS), first=resumed + 1)
    text = kiln_run(nb, nb + ".out", args=["--no-resume"])
    assert "continuing" not in text and run_id(text) != rid
    assert "moved to" in text  # the finished run's files are set aside, not deleted
    prev = [d for d in os.listdir(rd) if d.startswith("previous-")]
    assert len(prev) == 1 and os.path.exists(os.path.join(rd, prev[0], os.path.basename(
        ckpt(rd, STEPS))))
    assert os.path.exists(ckpt(rd, STEPS))  # the new run's own, complete


def test_checkpoint_save_then_resume_longer(tmp, reference):
    """%train 1 epoch without a run dir, %checkpoint save, then in a new kernel
    %resume FILE --epochs 2: the same run as 2 epochs straight (constant schedule)."""
    one, two = os.path.join(tmp, "one.safetensors"), os.path.join(tmp, "two.safetensors")
    k = new_kernel()
    c = run(k, TRAIN.replace("--epochs 2", "--epochs 1"))
    rid = run_id(c.text)
    c = run(k, f"%checkpoint save {one}")
    assert "with optimiser state" in c.text
    k.close()
    k = new_kernel(setup=False)
    c = run(k, f"%resume {one} --epochs 2")
    assert f"step {STEPS // 2} of {STEPS}" in c.text
    run(k, f"%checkpoint save {two}")
    k.close()
    assert_same_run(reference, losses(rid), two)


def test_pixel_csv_with_shape_resumes_in_a_new_kernel(tmp):
    """A pixel CSV read with --shape: the checkpoint records the shape, so %resume in a
    new kernel reads the file the same way (without it the rows cannot be read back as
    the 3 x 6 x 4 images the model was built for), and another --shape on the same run
    directory is named as the difference."""
    rng = np.random.default_rng(5)
    n, h, w, ch = 96, 6, 4, 3
    imgs = rng.integers(0, 256, (n, h, w, ch), dtype=np.uint8)  # N x H x W x C
    labels = np.arange(n) % 3
    path = os.path.join(tmp, "pix.csv")
    cols = ["label"] + [f"pixel{i}" for i in range(h * w * ch)]
    np.savetxt(path, np.column_stack([labels, imgs.reshape(n, -1)]), fmt="%d", delimiter=",",
               header=",".join(cols), comments="")
    rd = os.path.join(tmp, "pixcsv")
    model = "%%model pix\nconv2d 4 3 pad=1\nrelu\nflatten\ndense 3"
    k = IpcKernel()
    run(k, f"%dataset {path} --shape {h}x{w}x{ch} --val 16 --samples 0")
    run(k, model)
    run(k, f"%train pix --batch 16 --epochs 1 --seed 3 --run-dir {rd}")
    k.close()
    k = IpcKernel()  # nothing defined: the data set is read again from the checkpoint
    c = run(k, f"%resume {rd} --epochs 2")
    assert "after step 5 of 10" in c.text and "(checksum verified)" in c.text, c.text
    assert os.path.exists(ckpt(rd, 10)), sorted(os.listdir(rd))
    # the same numbers read as C x H x W: other images, so another run
    run(k, f"%dataset {path} --shape {ch}x{h * w // 4}x4 --val 16 --samples 0")
    run(k, model)
    c = run(k, f"%train pix --batch 16 --epochs 2 --seed 3 --run-dir {rd}")
    k.close()
    assert f"--shape {ch}x{h * w // 4}x4 (checkpoint {h}x{w}x{ch})" in c.text, c.text
    assert f"{rd}-v2" in c.text
