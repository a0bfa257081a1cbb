#!/usr/bin/env bash
# multi_gpu.sh - data-parallel GPU scaling, 1, 2, ... N GPUs of one machine: Kiln's
# device group (build/bench/train_bench --gpus K: one process, a thread and a model
# replica per GPU, gradients summed by NCCL on the devices, as %train --device
# cuda:0,1,..), Kiln as K processes launched by torchrun without MPI (torchrun
# --no-python train_bench --dist: the ranks meet over TCP beside torchrun's agent, at
# MASTER_PORT + 1, then NCCL carries everything, as `kiln run` launched so), next to
# PyTorch DDP with NCCL
# (torchrun --nproc_per_node K), same net (the PyTorch MNIST example, as
# bench/train_bench.py), same per-GPU batch (weak scaling: the global batch is K x
# --batch), in one run. Prints images/s, the scaling efficiency (images/s at K / (K x
# images/s at 1)) and the Kiln/PyTorch ratio for each K.
#
# usage: bash bench/multi_gpu.sh [--build build] [--gpus N] [--batch 256] [--steps 200]
#                                [--python PY]
#   --gpus N    up to N GPUs (default: all that nvidia-smi lists)
#   --python    an interpreter with a CUDA build of torch (default python3), e.g. a venv
#               with: pip install torch --index-url https://download.pytorch.org/whl/cu126;
#               its torchrun launches both DDP and Kiln's processes
# Needs: a multi-GPU machine, NCCL 2.11+ (pip install nvidia-nccl-cu12 for a CUDA 12
# build, or libnccl2),
# Debian's dataset-fashion-mnist, and the Kiln build with CUDA (ninja -C build
# bench/train_bench). Not run by CI (no GPU there). The goal is >= 90% efficiency from
# 1 to 8 GPUs and ahead of DDP at every count. Kiln still brings each step's loss to the
# host (one wait a step per GPU, docs/distributed.md says why), gathered in the same
# NCCL group as the gradients.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build" gpus="" batch=256 steps=200 py=python3
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --gpus) gpus="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --python) py="$2"; shift 2 ;;
    *) echo "multi_gpu.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -z "$gpus" ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l || true)
fi
if [ "${gpus:-0}" -lt 1 ]; then echo "multi_gpu.sh: no GPU (nvidia-smi lists none)" >&2; exit 3; fi
kiln="$build/bench/train_bench"
[ -x "$kiln" ] || { echo "multi_gpu.sh: build $kiln first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The PyTorch side: one DDP rank (torchrun sets RANK, WORLD_SIZE, LOCAL_RANK).
cat > "$tmp/ddp.py" <<'EOF'
import gzip, os, sys, time
import numpy as np, torch, torch.distributed as dist, torch.nn as nn, torch.nn.functional as F
steps, batch = int(sys.argv[1]), int(sys.argv[2])
rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False  # as Kiln's fp32
dist.init_process_group("nccl")
D = "/usr/share/datasets/fashion-mnist"
with gzip.open(f"{D}/train-images-idx3-ubyte.gz") as f:
    x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
with gzip.open(f"{D}/train-labels-idx1-ubyte.gz") as f:
    y = np.frombuffer(f.read(), np.uint8, offset=8)
x = torch.from_numpy(((x / 255.0 - 0.2860) / 0.3530).astype(np.float32)).cuda()
y = torch.from_numpy(y.astype(np.int64)).cuda()
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.c1, s.c2, s.f1, s.f2 = nn.Conv2d(1, 32, 3), nn.Conv2d(32, 64, 3), nn.Linear(9216, 128), nn.Linear(128, 10)
    def forward(s, v):
        v = F.dropout(F.max_pool2d(F.relu(s.c2(F.relu(s.c1(v)))), 2), 0.25, s.training).flatten(1)
        return s.f2(F.dropout(F.relu(s.f1(v)), 0.5, s.training))
m = nn.parallel.DistributedDataParallel(Net().cuda(), device_ids=[local])
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
order = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(1)).cuda()
def step(i):
    idx = order[((i * world + rank) * batch) % (x.shape[0] - batch):][:batch]
    opt.zero_grad(set_to_none=True)
    F.cross_entropy(m(x[idx]), y[idx]).backward()
    opt.step()
for i in range(30): step(i)
torch.cuda.synchronize(); dist.barrier()
t0 = time.perf_counter()
for i in range(steps): step(30 + i)
torch.cuda.synchronize(); dist.barrier()
if rank == 0: print(f"images_per_s {steps * batch * world / (time.perf_counter() - t0):.1f}", flush=True)
sys.stdout.flush(); os._exit(0)
EOF

ips() { grep '^images_per_s' | awk '{print $2}'; }

# Kiln as k processes of a launch without MPI: torchrun starts one train_bench per GPU
# (--no-python: a binary), whose ranks meet at MASTER_PORT + 1 (torchrun's agent holds
# MASTER_PORT); rank 0 prints. KILN_DIST_TOKEN: this launch's own secret for the meeting.
kiln_ranks() {
  KILN_DIST_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') "$py" -m torch.distributed.run --standalone --nproc_per_node "$1" --no-python "$kiln" \
    --dist --device cuda --steps "$steps" --batch $((batch * $1)) 2>>"$tmp/ranks.err" | ips
}

echo "| GPUs | global batch | Kiln images/s | efficiency | Kiln processes (no MPI) images/s | efficiency | DDP+NCCL images/s | efficiency | Kiln/DDP |"
echo "|---|---|---|---|---|---|---|---|---|"
k1="" p1="" t1=""
for k in $(seq 1 "$gpus"); do
  kb=$("$kiln" --gpus "$k" --steps "$steps" --batch $((batch * k)) 2>/dev/null | ips || true)
  pb=$(kiln_ranks "$k" || true)
  tb=$("$py" -m torch.distributed.run --standalone --nproc_per_node "$k" "$tmp/ddp.py" \
         "$steps" "$batch" 2>/dev/null | ips || true)
  k1=${k1:-$kb} p1=${p1:-$pb} t1=${t1:-$tb}
  awk -v k="$k" -v gb=$((batch * k)) -v kb="${kb:-0}" -v pb="${pb:-0}" -v tb="${tb:-0}" \
      -v k1="${k1:-0}" -v p1="${p1:-0}" -v t1="${t1:-0}" 'BEGIN {
    ek = (k1 > 0) ? kb / (k * k1) : 0; ep = (p1 > 0) ? pb / (k * p1) : 0
    et = (t1 > 0) ? tb / (k * t1) : 0
    printf "| %d | %d | %.1f | %.2f | %.1f | %.2f | %.1f | %.2f | %s |\n", k, gb, kb, ek, pb, ep,
           tb, et, (tb > 0) ? sprintf("%.2f", kb / tb) : "-" }'
done
