"""%train --device cuda:0,1 end to end: `kiln run` (the mock-device build, kiln_mock) on
two mock devices with the NCCL stand-in (suite 'gpu-mock').

The stage notebook group_stage.ipynb (Fashion-MNIST subset, conv net without
batchnorm or dropout, SGD with momentum, global batch 16) runs:
  - on cuda:0,1: it finishes, the progress line says "on cuda:0,1", checkpoints are
    written (once: rank 0's), and its per-step losses match the same notebook on the
    CPU within TOL (the mock device replays the CUDA kernels on the host, the CPU
    backend has its own GEMMs: float32 rounding apart);
  - on cuda:all: the same losses bit for bit as cuda:0,1 (both devices of the mock);
  - on cuda:0,0: a clear error naming the device, nothing trained;
  - as 2 GPU ranks of a launch (mpirun -np 2, --device cuda: rank k on cuda:k): rank 0
    makes NCCL's id, MPI hands it to rank 1, both join one communicator
    (ncclCommInitRank; the stand-in meets across processes through files in TMPDIR),
    and the per-step losses are cuda:0,1's bit for bit; rank 1 writes no checkpoint;
  - as 2 GPU ranks launched by torchrun (its variables, TORCHELASTIC_RUN_ID among them,
    and a socket holding MASTER_PORT as torchrun's agent does with its store): the ranks
    meet over TCP at MASTER_PORT + 1, rank 0's NCCL id reaches rank 1, and the per-step
    losses are cuda:0,1's bit for bit again; rank 1 writes no checkpoint and no
    notebook (the other launches below meet at MASTER_PORT, or KILN_DIST_PORT);
  - the same launch on the CPU: refused on both ranks within seconds, naming mpirun;
  - a rank that hangs inside NCCL (the stand-in's hang mode): both ranks stop within
    KILN_DIST_TIMEOUT, NCCL aborted, naming the timeout, instead of waiting forever;
  - a rank that never joins NCCL's communicator after the ranks met (the stand-in's
    inithang mode, as a rank that died then): both stop within KILN_DIST_TIMEOUT, the
    join aborted, each naming its rank, and no checkpoint is written.
"""
import glob
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
NB = os.path.join(HERE, "group_stage.ipynb")
KILN = os.environ.get("KILN_MOCK", "")
TOL = 2e-5  # relative, per step: mock device (host-replayed kernels) vs the CPU backend;
            # measured 1.4e-6

if not os.path.exists(KILN):
    pytest.skip("no kiln_mock (built with CUDA only)", allow_module_level=True)
if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
    pytest.skip("Fashion-MNIST (Debian dataset-fashion-mnist) is not installed",
                allow_module_level=True)


def env_for(d, tag):
    env = dict(os.environ, KILN_MOCK_DEVICE="devices=2",
               KILN_RESULTS=f"{d}/{tag}-results.sqlite", KILN_DIST_TIMEOUT="60")
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
              "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
              "TORCHELASTIC_RUN_ID", "KILN_DIST_PORT"):
        env.pop(k, None)
    return env


def run(d, tag, device):
    p = subprocess.run([KILN, "run", NB, "-o", f"{d}/{tag}-out.ipynb", "-p", "run_dir",
                        f"{d}/{tag}-run", "-p", "device", device], env=env_for(d, tag),
                       capture_output=True, text=True, timeout=600)
    return p


def losses(d, tag):
    with sqlite3.connect(f"{d}/{tag}-results.sqlite") as c:
        rows = c.execute("SELECT step, value FROM metrics WHERE key='loss' ORDER BY step").fetchall()
    return np.array([v for _, v in rows])


def outputs_text(path):
    with open(path) as f:
        nb = json.load(f)
    out = []
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            for v in list(o.get("data", {}).values()) + [o.get("text", "")]:
                out.append(v if isinstance(v, str) else "".join(v))
    return "\n".join(out)


@pytest.fixture(scope="module")
def work():
    d = tempfile.mkdtemp(prefix="kiln-group-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def two_run(work):
    """The run on cuda:0,1 the later tests compare with: when it fails, they fail with
    its output instead of being skipped."""
    p = run(work, "two", "cuda:0,1")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    return p


def test_two_devices_train_like_the_cpu(work, two_run):
    text = outputs_text(f"{work}/two-out.ipynb")
    assert "on cuda:0,1" in text, text[-2000:]
    assert glob.glob(f"{work}/two-run/*.safetensors"), "no checkpoint written"
    c = run(work, "cpu", "cpu")
    assert c.returncode == 0, c.stderr[-3000:]
    l2, l1 = losses(work, "two"), losses(work, "cpu")
    assert len(l2) == len(l1) == 2 * 256 // 16
    rel = np.abs(l2 - l1) / np.abs(l1)
    print(f"cuda:0,1 vs cpu: per-step loss max relative difference {rel.max():.3g}")
    assert rel.max() <= TOL


def test_all_devices_is_both(work, two_run):
    p = run(work, "all", "cuda:all")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "on cuda:0,1" in outputs_text(f"{work}/all-out.ipynb")
    assert np.array_equal(losses(work, "all"), losses(work, "two"))


def test_a_device_named_twice_is_an_error(work):
    p = run(work, "twice", "cuda:0,0")
    assert p.returncode != 0
    text = outputs_text(f"{work}/twice-out.ipynb") if os.path.exists(
        f"{work}/twice-out.ipynb") else ""
    assert "cuda:0 is named twice" in p.stdout + p.stderr + text, (p.stdout + p.stderr)[-2000:]
    assert not glob.glob(f"{work}/twice-run/*.safetensors")


def test_gpu_ranks_share_nccl_over_mpi(work, two_run):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("OpenMPI's mpirun is not installed (apt install openmpi-bin)")
    tmp = f"{work}/tmp"
    os.makedirs(tmp, exist_ok=True)
    env = env_for(work, "ranks")
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_mpi_yield_when_idle": "1", "TMPDIR": tmp,
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none"})
    if env.get("ASAN_OPTIONS"):
        env["ASAN_OPTIONS"] += ":detect_leaks=0"  # OpenMPI's own allocations at exit
    r = "${OMPI_COMM_WORLD_RANK:-0}"
    cmd = (f'KILN_RESULTS="{work}/ranks-results.{r}.sqlite" exec "{KILN}" run "{NB}" '
           f'-o "{work}/ranks-out.{r}.ipynb" -p run_dir "{work}/ranks-run.{r}" -p device cuda')
    p = subprocess.run([mpirun, "-np", "2", "--oversubscribe", "--bind-to", "none", "sh", "-c",
                        cmd], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    assert glob.glob(f"{tmp}/kiln-mock-nccl-*/*"), "the ranks did not meet in NCCL"
    assert "through host memory" not in p.stderr
    with sqlite3.connect(f"{work}/ranks-results.0.sqlite") as c:
        rows = c.execute("SELECT value FROM metrics WHERE key='loss' ORDER BY step").fetchall()
    assert np.array_equal(np.array([v for (v,) in rows]), losses(work, "two"))
    assert glob.glob(f"{work}/ranks-run.0/*.safetensors")
    assert not glob.glob(f"{work}/ranks-run.1/*.safetensors")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_without_mpi(work, tag, device, extra=None, agent=False):
    """Two `kiln run` processes with torchrun-style variables; (returncodes, outputs).
    agent: MASTER_PORT is held for the launch, as torchrun's agent holds it for its
    store (accepting, never answering)."""
    tmp = f"{work}/tmp-{tag}"
    os.makedirs(tmp, exist_ok=True)
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(4)
    port = str(held.getsockname()[1])
    if not agent:
        held.close()
    procs = []
    for rank in (0, 1):
        env = env_for(work, f"{tag}.{rank}")
        env.update({"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
                    "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
                    "TMPDIR": tmp, "KILN_DIST_TIMEOUT": "60",
                    "KILN_MOCK_NCCL_REPORT": f"{work}/{tag}-nccl"})
        env.update(extra or {})
        procs.append(subprocess.Popen(
            [KILN, "run", NB, "-o", f"{work}/{tag}-out.{rank}.ipynb", "-p", "run_dir",
             f"{work}/{tag}-run.{rank}", "-p", "device", device], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=600)[0] for p in procs]
    held.close()
    return [p.returncode for p in procs], outs


# what torchrun --nproc-per-node 2 sets besides RANK, WORLD_SIZE, LOCAL_RANK, MASTER_*
TORCHRUN = {"TORCHELASTIC_RUN_ID": "none", "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_USE_AGENT_STORE": "True",
            "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_NAME": "default",
            "OMP_NUM_THREADS": "1"}


def test_gpu_ranks_under_torchrun_meet_beside_its_agent(work, two_run):
    # the launch's secret, as a launcher sets it: both ranks' frames are signed with it
    secret = dict(TORCHRUN, KILN_DIST_TOKEN=os.urandom(16).hex())
    codes, outs = launch_without_mpi(work, "tcp", "cuda", secret, agent=True)
    assert codes == [0, 0], "\n".join(o[-3000:] for o in outs)
    assert "without KILN_DIST_TOKEN" not in outs[0], outs[0][-3000:]  # the secret was used
    assert "through host memory" not in "".join(outs)
    with sqlite3.connect(f"{work}/tcp.0-results.sqlite") as c:
        rows = c.execute("SELECT value FROM metrics WHERE key='loss' ORDER BY step").fetchall()
    assert np.array_equal(np.array([v for (v,) in rows]), losses(work, "two"))
    ckpts = sorted(glob.glob(f"{work}/tcp-run.0/*.safetensors"))
    assert ckpts
    assert not glob.glob(f"{work}/tcp-run.1/*.safetensors")
    assert os.path.exists(f"{work}/tcp-out.0.ipynb")
    assert not os.path.exists(f"{work}/tcp-out.1.ipynb")
    # what the NCCL stand-in saw on each rank: the same id, one call a step (one host
    # wait), whose weighted sum is exactly the gradients' bytes (every trainable tensor padded to 64 floats, as the
    # optimiser lays them out; the model has no batchnorm, so every tensor trains)
    reps = [json.load(open(f"{work}/tcp-nccl.{r}")) for r in (0, 1)]
    with open(ckpts[-1], "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    grad_bytes = sum(-(-int(np.prod(t["shape"])) // 64) * 64 * 4
                     for k, t in header.items() if k != "__metadata__" and "optim" not in k)
    print(f"NCCL stand-in per rank: {reps}; gradients {grad_bytes} bytes")
    assert reps[0]["id"] == reps[1]["id"] and reps[0]["id"].startswith("mock-nccl-")
    assert [r["rank"] for r in reps] == [0, 1] and reps[0]["nranks"] == 2
    for r in reps:
        assert r["weighted_sums"] == len(rows), r
        assert r["weighted_sum_bytes"] == grad_bytes, r
        # one host wait a step: each step's loss, right predictions and stop votes are
        # two small sums in the gradients' group; besides, the start-of-run check and
        # rank 0's parameters
        assert r["calls"] == len(rows) + 2, r
        assert r["other"] == 2 * len(rows) + 2, r


def test_cpu_ranks_without_mpi_are_refused(work):
    t0 = time.monotonic()
    codes, outs = launch_without_mpi(work, "tcpcpu", "cpu")
    took = time.monotonic() - t0
    assert codes[0] != 0 and codes[1] != 0, "\n".join(o[-2000:] for o in outs)
    for rank, out in enumerate(outs):
        text = out
        path = f"{work}/tcpcpu-out.{rank}.ipynb"
        if os.path.exists(path):
            text += outputs_text(path)
        assert "mpirun" in text and "no MPI" in text, text[-2000:]
    assert not glob.glob(f"{work}/tcpcpu-run.*/*.safetensors")
    assert took < 120, took


def stuck_launch(work, tag, mode, timeout, extra=None):
    """Two GPU ranks with the NCCL stand-in in `mode`: both must fail within 60 s;
    each rank's output (stdout and notebook) in rank order. extra (the ranks' port):
    MASTER_PORT is held."""
    t0 = time.monotonic()
    codes, outs = launch_without_mpi(work, tag, "cuda", dict(
        extra or {}, KILN_MOCK_NCCL=mode, KILN_DIST_TIMEOUT=str(timeout)), agent=bool(extra))
    took = time.monotonic() - t0
    print(f"{mode}: both ranks stopped after {took:.1f} s")
    assert codes[0] != 0 and codes[1] != 0, "\n".join(o[-2000:] for o in outs)
    assert took < 60, took
    texts = []
    for rank, out in enumerate(outs):
        path = f"{work}/{tag}-out.{rank}.ipynb"
        texts.append(out + (outputs_text(path) if os.path.exists(path) else ""))
    return texts


def test_a_rank_hung_in_nccl_stops_both(work):
    for rank, text in enumerate(stuck_launch(work, "hang", "hang:1:10", 3)):
        assert "did not join within 3 s (KILN_DIST_TIMEOUT)" in text, text[-2000:]
        assert "NCCL was aborted" in text and f"rank {rank} of 2" in text, text[-2000:]


def test_a_rank_that_never_joins_nccl_stops_both(work):
    # MASTER_PORT held: the ranks meet at KILN_DIST_PORT, then rank 1 never joins NCCL
    texts = stuck_launch(work, "inithang", "inithang:1", 3, {"KILN_DIST_PORT": str(free_port())})
    for rank, text in enumerate(texts):
        assert (f"rank {rank} of 2 (cuda:{rank}): the other ranks did not join NCCL's "
                "communicator within 3 s (KILN_DIST_TIMEOUT)") in text, text[-2000:]
        assert "the join was aborted" in text, text[-2000:]
    assert not glob.glob(f"{work}/inithang-run.*/*.safetensors")
