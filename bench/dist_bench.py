#!/usr/bin/python3
"""Data-parallel CPU scaling: Kiln's ranks (MPI all-reduce) vs PyTorch DDP (gloo).

Both train the PyTorch MNIST example net (as bench/train_bench.py) on Fashion-MNIST
with the same global batch, one thread per rank, launched by OpenMPI's mpirun with
1 rank and with N ranks, in the same run, alternating, best of --repeat. Prints the
whole launch's images/s, the scaling efficiency (images/s of N ranks / (N x images/s
of 1 rank): 1.0 is perfect) and the Kiln/PyTorch ratio at every rank count.

usage: /usr/bin/python3 bench/dist_bench.py [--build build] [--ranks 2] [--steps 40]
           [--batch 128] [--repeat 3] [--python /usr/bin/python3]
  --python  the interpreter with the torch to compare with (Debian's python3-torch by
            default; a venv's bin/python3 for a PyPI torch).
Needs mpirun (apt install openmpi-bin). As root, OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) are
set for the children. The machine should have a core per rank.
"""
import argparse
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def torch_rank(steps, batch, port):
    """One DDP rank (runs under mpirun): prints 'images_per_s X' on rank 0."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    from train_bench import torch_fashion_mnist, torch_net

    rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
    world = int(os.environ["OMPI_COMM_WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    torch.manual_seed(1)
    x, y = torch_fashion_mnist()
    model = nn.parallel.DistributedDataParallel(torch_net())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    order = torch.randperm(x.shape[0], generator=g)
    share = batch // world

    def step(i):
        idx = order[(i * batch + rank * share) % x.shape[0]:][:share]
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()

    for i in range(3):
        step(i)
    dist.barrier()
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(steps):
        step(3 + i)
    dist.barrier()
    el = time.perf_counter() - t0
    cpu = torch.tensor([time.process_time() - c0], dtype=torch.float64)
    dist.all_reduce(cpu)  # all ranks' CPU time: the launch's cost of an image
    if rank == 0:
        print(f"images_per_s {steps * share * world / el:.1f}", flush=True)
        print(f"cpu_ms_per_image {1e3 * cpu.item() / (steps * share * world):.4f}", flush=True)
    dist.barrier()
    # torch 1.13's ProcessGroupGloo destructor can deadlock on the GIL (its worker thread
    # waits for it while the main thread joins it): leave without the teardown
    sys.stdout.flush()
    os._exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(n, cmd):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1")
    p = subprocess.run(["mpirun", "-np", str(n), "--oversubscribe", "--bind-to", "none"] + cmd,
                       env=env, capture_output=True, text=True, timeout=1800,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-3000:]}")
    got = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        if k in ("images_per_s", "cpu_ms_per_image"):
            if k in got:
                sys.exit(f"two {k} lines from {' '.join(cmd)}:\n{p.stdout}")
            got[k] = float(v)
    if len(got) != 2:
        sys.exit(f"no images_per_s / cpu_ms_per_image from {' '.join(cmd)}:\n{p.stdout}")
    return got["images_per_s"], got["cpu_ms_per_image"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--torch-rank", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_rank:
        return torch_rank(a.steps, a.batch, a.port)
    kiln = os.path.join(a.build, "bench", "train_bench")
    best = {}
    for _ in range(a.repeat):
        for n in (1, a.ranks):
            k = launch(n, [kiln, "--dist", "--threads", "1", "--steps", str(a.steps),
                           "--batch", str(a.batch)])
            t = launch(n, [a.python, os.path.abspath(__file__), "--torch-rank", "--steps",
                           str(a.steps), "--batch", str(a.batch), "--port", str(free_port())])
            for side, (ips, cpu) in (("kiln", k), ("torch", t)):
                old = best.get((side, n), (0.0, float("inf")))
                best[(side, n)] = (max(old[0], ips), min(old[1], cpu))
            print(f"  ranks {n}: kiln {k[0]:.1f} images/s {k[1]:.3f} cpu-ms/img, "
                  f"torch DDP gloo {t[0]:.1f} images/s {t[1]:.3f} cpu-ms/img", flush=True)
    print(f"\nglobal batch {a.batch}, {a.steps} timed steps, 1 thread a rank, best of "
          f"{a.repeat}; efficiency = images/s of N ranks / (N x 1 rank's); CPU efficiency "
          "= CPU-ms/img of 1 rank / of N ranks (all ranks' CPU: what the exchange costs, "
          "independent of other load on the machine)")
    print("| ranks | Kiln images/s | eff. | Kiln CPU-ms/img | CPU eff. | DDP gloo images/s "
          "| eff. | DDP CPU-ms/img | CPU eff. | Kiln/DDP images/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in (1, a.ranks):
        (k, kc), (t, tc) = best[("kiln", n)], best[("torch", n)]
        k1, t1 = best[("kiln", 1)], best[("torch", 1)]
        print(f"| {n} | {k:.1f} | {k / (n * k1[0]):.2f} | {kc:.3f} | {k1[1] / kc:.2f} "
              f"| {t:.1f} | {t / (n * t1[0]):.2f} | {tc:.3f} | {t1[1] / tc:.2f} | {k / t:.2f} |")


if __name__ == "__main__":
    main()
