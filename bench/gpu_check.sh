#!/usr/bin/env bash
# bench/gpu_check.sh [--bundle DIR] [--dry-run [--build BUILD]] - the whole GPU check in
# one command, run from the repository root on a machine with a GPU, with the bundle
# bench/gpu_bundle.sh made (default DIR: gpu-bundle). OUT must name a folder: it ends up
# holding exactly three files, summary.md, summary.json and logs.tar.gz (every step's log,
# the curves and figures as JSON, the GPU's checkpoint), as few as a borrowed machine
# lets come back. Each step prints its time; the whole check is meant to fit in 4
# minutes on one GPU (a longer run says so in the summary).
#   1 device      nvidia-smi, the driver, `kiln --version` and `%device`
#   2 gpu suite   the real-device tests: every op CPU vs CUDA (fp32, bf16, fp16), the
#                 trainer's device path vs the host path and fp16 loss scaling, memory
#                 return, device-lost handling, the batch-512 CIFAR-sized stack, a
#                 run-twice bitwise check and a resume across two processes; on a GPU
#                 a test that skips (exit 77) fails the step
#   3 train       notebooks/02-train.ipynb through `kiln run`, 2 epochs of
#                 Fashion-MNIST at fp32, bf16, fp16 on cuda; then the CPU for 60 s: each
#                 precision's loss curve (a 20-step running mean) gated against the
#                 CPU's, fp32 within 0.1, bf16 and fp16 within max(0.1, 3x fp32's
#                 deviation); accuracy and images/s of each
#   4 bench       bench/cuda_bench.py: Kiln next to the machine's PyTorch, eager and
#                 torch.compile: the seed CNN at batch 128 in fp32/bf16/fp16, ResNet-20
#                 at batch 128 (eager and compiled), 512 and 2048 (eager) in fp32/bf16; a
#                 Kiln/PyTorch ratio below 1 is a WARNING line
# bf16 runs where the GPU has it (compute capability 8.0 or newer, read from %device):
# below that (T4, V100, P100) Kiln refuses it, and steps 2-4 leave it out, said so.
#   4b graphs     the device step replayed as a CUDA graph against the same step run op
#                 by op (cuda_bench --no-graphs), side by side in one process each,
#                 interleaved: the seed CNN at 128 fp32, ResNet-20 at 128 fp32 and bf16;
#                 images/s of both and the ratio (graphs on / off)
#   5 checkpoints the CPU-made run in the bundle resumed on the GPU; a run trained on the
#                 GPU saved into OUT/ckpt-gpu (resume it on the CPU back home with
#                 `bench/gpu_check.sh --resume-back OUT`)
#   6 several GPUs (a machine with 2 or more; else skipped): 02-train on cuda:0,1 in one
#                 kernel, and as 2 processes of a launch without MPI (NCCL: the
#                 system's, or the nvidia-nccl wheel beside PyTorch); images/s of both
#                 and rank 0's losses against the one kernel's
# --dry-run: the same steps without a GPU, for CI (bench/README.md): kiln and the tests
# run on the mock device (BUILD/tests/gpu/*_mock, kiln_mock; tiny sizes), the bundle's
# own binaries run where no GPU is needed (each real-device test must SKIP), and the
# bundle is run with the system's libraries hidden (only glibc left) to prove it carries
# what a bare machine lacks. Steps that need a real GPU say "skipped" in the summary.
# Exit status: 0 when no step failed (and OUT holds exactly the three files).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bundle="$root/gpu-bundle" dry=0 build="$root/build" back=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle="$(cd "$2" && pwd)"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --resume-back) back="$(cd "$2" && pwd)"; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $1" >&2; exit 2 ;;
  esac
done

# ---- at home, afterwards: the GPU's checkpoint resumed on this machine's CPU ----
if [ -n "$back" ]; then
  w="$(mktemp -d)"
  run="$back/ckpt-gpu/run" # during the dry run's step 5; else inside logs.tar.gz
  if [ ! -d "$run" ] && [ -f "$back/logs.tar.gz" ]; then
    tar -C "$w" -xzf "$back/logs.tar.gz" ckpt-gpu 2>/dev/null && run="$w/ckpt-gpu/run"
  fi
  [ -d "$run" ] || { echo "gpu_check: no checkpoint in $back (did step 5 run?)" >&2; exit 2; }
  # resumed in a copy: what came back stays as it came
  [ "$run" = "$w/ckpt-gpu/run" ] || { mkdir -p "$w/ckpt-gpu" && cp -r "$run" "$w/ckpt-gpu/run"; }
  run="$w/ckpt-gpu/run"
  printf '%s\n' "%resume $run --device cpu --epochs 2 --time-limit none" |
    python3 -c 'import json,sys; print(json.dumps({"nbformat":4,"nbformat_minor":5,"metadata":{},
      "cells":[{"cell_type":"code","id":"r","metadata":{},"outputs":[],"execution_count":None,
      "source":sys.stdin.read().strip()}]}))' > "$w/back.ipynb"
  KILN_RESULTS="$w/results.sqlite" "$build/kernel/kiln" run "$w/back.ipynb" -o "$w/resume-back.ipynb"
  rc=$?
  python3 - "$w/resume-back.ipynb" <<'EOF'
import json, sys
nb = json.load(open(sys.argv[1]))
for o in nb["cells"][0].get("outputs", []):
    t = o.get("text") or o.get("data", {}).get("text/plain") or o.get("evalue") or ""
    print("".join(t) if isinstance(t, list) else t)
EOF
  echo "gpu_check: resume of the GPU checkpoint on the CPU: $([ $rc = 0 ] && echo ok || echo FAILED)"
  rm -rf "$w"
  exit $rc
fi

[ -n "${OUT:-}" ] || { echo "gpu_check: set OUT to the folder the results go to" >&2; exit 2; }
mkdir -p "$OUT" || exit 2
OUT="$(cd "$OUT" && pwd)"
# what this check writes there, from an earlier run too (the rest is left alone, and
# fails the three-file check at the end)
rm -rf "$OUT/logs" "$OUT/ckpt-gpu" "$OUT/summary.md" "$OUT/summary.json" "$OUT/logs.tar.gz" \
  "$OUT/train.json" "$OUT/bench.json"
mkdir -p "$OUT/logs" || exit 2
[ -f "$bundle/payload.tar.xz" ] || {
  echo "gpu_check: no bundle at $bundle (make it with bench/gpu_bundle.sh $bundle)" >&2; exit 2; }
W="$(mktemp -d /tmp/kiln-gpu-check.XXXXXX)"
trap 'rm -rf "$W"' EXIT
steps="$OUT/logs/steps.tsv"
: > "$steps"
t_all=$(date +%s.%N)

BUDGET=240 # seconds: the whole check on one GPU
# step NAME STATUS SECONDS DETAIL  (one row of the summary; its time printed as it ends)
since() { python3 -c "import sys,time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$1"; }
record() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(echo "$4" | tr '\t\n' '  ')" >> "$steps"
  echo "gpu_check: $1: $2 in $3 s ($(since "$t_all") s of the ${BUDGET} s budget so far)"
}
warnings="$W/warnings.txt"
: > "$warnings"
warn() { echo "WARNING: $*" | tee -a "$warnings"; }
nb1() { # FILE CELL...: a notebook of the given code cells
  local f="$1"; shift
  python3 - "$f" "$@" <<'EOF'
import json, sys
cells = [{"cell_type": "code", "id": "c%d" % i, "metadata": {}, "outputs": [],
          "execution_count": None, "source": s} for i, s in enumerate(sys.argv[2:])]
json.dump({"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "kiln",
           "display_name": "Kiln", "language": "kiln"}}, "cells": cells}, open(sys.argv[1], "w"))
EOF
}
nbtext() { # the text outputs of a kiln-run notebook
  python3 - "$1" <<'EOF'
import json, sys
for c in json.load(open(sys.argv[1]))["cells"]:
    for o in c.get("outputs", []):
        t = o.get("text") or o.get("data", {}).get("text/plain") or \
            (o.get("ename", "") + ": " + o.get("evalue", "") if o.get("ename") else "")
        print("".join(t) if isinstance(t, list) else t)
EOF
}

# ---- the bundle: unpack, libraries, data ----
t0=$(date +%s.%N)
tar -C "$W" -xJf "$bundle/payload.tar.xz" || { echo "gpu_check: bad payload" >&2; exit 2; }
B="$W"
# cuBLAS, cuDNN and NCCL are the machine's (too big to carry): the toolkit's, the
# system's, or those of PyTorch's nvidia-* wheels; kiln dlopens the majors it was built
# for. Each folder counts for each library it holds: PyTorch's CUDA 13 wheels put cuBLAS
# in nvidia/cu13/lib, cuDNN in nvidia/cudnn/lib and NCCL in nvidia/nccl/lib.
extra="" libs_found=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
         /usr/lib/x86_64-linux-gnu $(python3 -c 'import glob,site
for p in site.getsitepackages(): print(" ".join(glob.glob(p + "/nvidia/*/lib")))' 2>/dev/null); do
  [ -d "$d" ] || continue
  has=""
  for l in cublas cudnn nccl; do
    ls "$d"/lib$l.so.* >/dev/null 2>&1 && has="$has $l"
  done
  [ -n "$has" ] && extra="$extra:$d" libs_found="$libs_found $d ($has );"
done
# extended, not replaced: libcuda may be reachable only through the caller's path
export LD_LIBRARY_PATH="$B/lib$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KILN_LIBOPENBLAS="$B/lib/libopenblas.so.0"
export XDG_CACHE_HOME="$W/cache" KILN_RESULTS="$W/results.sqlite"
mkdir -p "$XDG_CACHE_HOME/kiln/datasets/fashion-mnist"
cp "$bundle"/fashion-mnist/*.gz "$XDG_CACHE_HOME/kiln/datasets/fashion-mnist/"
if [ $dry = 1 ]; then
  kiln="$build/tests/gpu/kiln_mock" tbin="$build/tests/gpu" sfx=_mock
  bench_drv="$build/tests/gpu/cuda_bench_mock"
  [ -x "$kiln" ] || { echo "gpu_check: --dry-run needs $kiln (a CUDA build)" >&2; exit 2; }
  [ -x "$tbin/check_ops_mockdnn" ] && dnn=_mockdnn || dnn=_mock
else
  kiln="$B/bin/kiln" tbin="$B/bin" sfx="" dnn="" bench_drv="$B/bin/cuda_bench"
fi
echo "gpu_check: bundle unpacked in $(since "$t0") s; CUDA libraries from:${libs_found:- nowhere}"

# ---- 1: the device ----
t0=$(date +%s.%N)
{
  if command -v nvidia-smi >/dev/null; then nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  else echo "nvidia-smi: not found"; fi
  "$B/bin/kiln" --version
  nb1 "$W/device.ipynb" "%device"
  "$kiln" run "$W/device.ipynb" -o "$W/device.out.ipynb" >/dev/null 2>&1
  nbtext "$W/device.out.ipynb"
} > "$OUT/logs/1-device.log" 2>&1
gpu="$(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
devline="$(grep -m1 '^cuda:' "$OUT/logs/1-device.log" || grep -m1 'CUDA: ' "$OUT/logs/1-device.log")"
# bf16 where the GPU has it: compute capability 8.0 or newer (%device's line for cuda:0)
cc="$(grep -m1 '^cuda:0' "$OUT/logs/1-device.log" | grep -o 'compute capability [0-9]*\.[0-9]*' |
  awk '{print $3}')"
bf16=0
[ -n "$cc" ] && [ "${cc%%.*}" -ge 8 ] && bf16=1
if [ $bf16 = 1 ]; then echo "gpu_check: bf16 on (cuda:0 is compute capability $cc)"
else warn "bf16 left out of steps 2-4: cuda:0 is compute capability ${cc:-unknown}, bf16 needs 8.0"; fi
if [ $dry = 1 ]; then
  record device skipped "$(since "$t0")" "dry run (nvidia-smi: ${gpu:-absent}); kiln_mock: $devline; bf16 $([ $bf16 = 1 ] && echo on || echo off) (cc ${cc:-?})"
elif [ -n "$gpu" ] && grep -q '^cuda:0' "$OUT/logs/1-device.log"; then
  record device ok "$(since "$t0")" "$gpu; $devline"
else
  record device fail "$(since "$t0")" "${gpu:-no nvidia-smi}; $devline"
fi

# ---- 2: the gpu suite ----
t0=$(date +%s.%N)
fails=() skips=() oks=()
gtest() { # LABEL BINARY ARGS...
  local label="$1" exe="$2"; shift 2
  [ -x "$exe" ] || { skips+=("$label(missing)"); return; }
  timeout 600 "$exe" "$@" > "$OUT/logs/2-$label.log" 2>&1
  local rc=$?
  # on a machine with a GPU a real-device test has no reason to skip: a failure
  if [ $rc = 77 ] && [ $dry = 0 ]; then fails+=("$label(skipped)"); return; fi
  case $rc in 0) oks+=("$label") ;; 77) skips+=("$label") ;; *) fails+=("$label") ;; esac
}
# (the dry run runs one precision of each: meson's gpu-mock suite runs them all)
precs="fp32 bf16 fp16"; [ $bf16 = 1 ] || { precs="fp32 fp16"; skips+=("ops_bf16(cc $cc)" "train_bf16(cc $cc)"); }
[ $dry = 1 ] && { precs=fp32; skips+=("ops_bf16" "ops_fp16" "train_bf16"); }
for p in $precs; do gtest "ops_$p" "$tbin/check_ops$dnn" $p; done
for p in ${precs% fp16}; do gtest "train_$p" "$tbin/test_gpu_train$dnn" $p; done
gtest trainer "$tbin/test_gpu_trainer$dnn"
gtest graphs "$tbin/test_gpu_graphs$dnn"
if [ $dry = 1 ]; then gtest memory "$tbin/test_gpu_memory$sfx" 3 4; else gtest memory "$tbin/test_gpu_memory"; fi
gtest lost "$tbin/test_gpu_lost$sfx"
gtest api "$tbin/test_gpu_api$sfx"
if [ $dry = 1 ]; then
  gtest real_small "$tbin/test_gpu_real$dnn" 8
  # the bundle's real-device binaries, here without a GPU: each must load and SKIP
  for t in check_ops test_gpu_real test_gpu_trainer test_gpu_graphs; do
    "$B/bin/$t" > "$OUT/logs/2-bundle-$t.log" 2>&1
    rc=$?
    if [ $rc = 77 ]; then oks+=("bundle-$t(skips)"); else fails+=("bundle-$t(rc $rc)"); fi
  done
else
  gtest real "$tbin/test_gpu_real"
fi
st=ok; [ ${#fails[@]} -gt 0 ] && st=fail
[ $st = ok ] && [ ${#oks[@]} -eq 0 ] && st=skipped
record "gpu suite" $st "$(since "$t0")" "ok: ${oks[*]:-none}; skipped: ${skips[*]:-none}; failed: ${fails[*]:-none}"

# ---- 3: %train through kiln run, three precisions, and the CPU's curve ----
t0=$(date +%s.%N)
# the mock device replays every kernel on the CPU in double: a few steps only
if [ $dry = 1 ]; then size=(-p subset 32 -p val 16 -p epochs 1 -p batch_size 32); else size=(-p epochs 2); fi
train_st=ok tdetail=""
train_runs="cuda:fp32 cuda:bf16 cuda:fp16 cpu:fp32"
[ $bf16 = 1 ] || train_runs="cuda:fp32 cuda:fp16 cpu:fp32"
for dev_prec in $train_runs; do
  dev="${dev_prec%%:*}" prec="${dev_prec##*:}" name="$dev-$prec"
  lim="1h"; [ "$dev" = cpu ] && lim="60s"
  [ $dry = 1 ] && [ "$dev" = cpu ] && lim="1h"
  "$kiln" run notebooks/02-train.ipynb -o "$W/train-$name.ipynb" -p dataset fashion-mnist \
    "${size[@]}" -p device "$dev" -p precision "$prec" -p run_dir "$W/runs/$name" \
    -p time_limit "$lim" > "$OUT/logs/3-train-$name.log" 2>&1
  rc=$?
  nbtext "$W/train-$name.ipynb" >> "$OUT/logs/3-train-$name.log" 2>/dev/null
  [ $rc = 0 ] || { train_st=fail; tdetail="$tdetail $name: kiln run rc $rc;"; }
done
python3 - "$KILN_RESULTS" "$OUT/train.json" > "$OUT/logs/3-curves.log" 2>&1 <<'EOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
out = {}
for rid, dev, prec in db.execute("select id, device, precision from runs order by id").fetchall()[:4]:
    name = "%s-%s" % ((dev or "?").split(":")[0], prec or "fp32")
    loss = [v for (v,) in db.execute("select value from metrics where run_id=? and key='loss' "
                                     "and kind=0 order by step", (rid,))]
    last = lambda k: (db.execute("select value from metrics where run_id=? and key=? and "
                                 "kind=1 order by step desc limit 1", (rid, k)).fetchone() or [None])[0]
    out[name] = {"steps": len(loss), "first_loss": loss[0] if loss else None,
                 "last_loss": loss[-1] if loss else None, "val_accuracy": last("val_accuracy"),
                 "images_per_s": last("images_per_s"), "loss": loss}
def smooth(v, w=20):  # running mean of the last w steps: minibatch noise averaged out
    out, s = [], 0.0
    for i, x in enumerate(v):
        s += x - (v[i - w] if i >= w else 0.0)
        out.append(s / min(i + 1, w))
    return out
cpu = out.get("cpu-fp32", {}).get("loss", [])
for name, r in out.items():
    n = min(len(cpu), len(r["loss"]))
    if name != "cpu-fp32" and n:
        d = [abs(a - b) for a, b in zip(r["loss"][:n], cpu[:n])]
        sd = [abs(a - b) for a, b in zip(smooth(r["loss"][:n]), smooth(cpu[:n]))]
        r["vs_cpu"] = {"steps_compared": n, "max_abs_diff": max(d),
                       "mean_abs_diff": sum(d) / n, "max_smoothed_diff": max(sd)}
# the gate: fp32 follows the CPU's trajectory (the same math, rounding apart) within 0.1
# of its 20-step mean; bf16/fp16 within max(0.1, 3x the fp32 run's deviation)
bad = []
f32 = out.get("cuda-fp32", {}).get("vs_cpu")
if not cpu or not f32:
    bad.append("no CPU or no cuda fp32 curve to compare")
bound32 = 0.1
bound16 = max(0.1, 3 * f32["max_smoothed_diff"]) if f32 else 0.1
for name, r in out.items():
    v = r.get("vs_cpu")
    if name == "cpu-fp32" or not v:
        continue
    bound = bound32 if name.endswith("fp32") else bound16
    v["bound"] = bound
    v["ok"] = v["max_smoothed_diff"] <= bound
    if not v["ok"]:
        bad.append("%s: 20-step mean of the loss %.3g from the CPU's, bound %.3g"
                   % (name, v["max_smoothed_diff"], bound))
json.dump(out, open(sys.argv[2], "w"))
for name, r in out.items():
    print(name, {k: v for k, v in r.items() if k != "loss"})
for b in bad:
    print("CURVE FAILED:", b)
sys.exit(1 if bad else 0)
EOF
[ $? = 0 ] || { train_st=fail; tdetail="$tdetail $(grep '^CURVE FAILED' "$OUT/logs/3-curves.log" | tr '\n' ';')"; }
[ -s "$OUT/train.json" ] || train_st=fail
tsum="$(python3 -c '
import json,sys
t = json.load(open(sys.argv[1]))
print("; ".join("%s: acc %s, %s img/s, loss %.3f->%.3f%s" % (n, "%.4f" % r["val_accuracy"] if r["val_accuracy"] is not None else "-",
      "%.0f" % r["images_per_s"] if r["images_per_s"] else "-", r["first_loss"] or 0, r["last_loss"] or 0,
      (", loss vs cpu: max %.3g, 20-step mean %.3g (bound %.3g) over %d steps" % (r["vs_cpu"]["max_abs_diff"],
       r["vs_cpu"]["max_smoothed_diff"], r["vs_cpu"].get("bound", 0), r["vs_cpu"]["steps_compared"])) if "vs_cpu" in r else "")
      for n, r in t.items()))' "$OUT/train.json" 2>/dev/null)"
[ $dry = 1 ] && tsum="mock device, 32 images: $tsum"
record train $train_st "$(since "$t0")" "$tdetail $tsum"

# ---- 4: cuda_bench next to PyTorch (eager and torch.compile) ----
# The seed CNN at batch 128 in every precision; ResNet-20 at batch 128, 512 and 2048 in
# fp32 and bf16 (torch.compile at 128 only: compiling takes most of this step's time;
# 2048: how far a larger batch takes both past launch overhead). The dry run:
# the mock device, synthetic data, 2 steps at batch 4 and 8, PyTorch on the CPU.
t0=$(date +%s.%N)
p16=",bf16"; [ $bf16 = 1 ] || p16=""
if [ $dry = 1 ]; then
  py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3
  common=(--synthetic --steps 2 --warmup 1 --python "$py" --torch-device cpu)
  runs=("mnist 4 fp32 --compile" "resnet20 4 fp32 --compile" "resnet20 8 fp32")
else
  common=(--data "$XDG_CACHE_HOME/kiln/datasets/fashion-mnist")
  runs=("mnist 128 fp32$p16,fp16 --compile --steps 300 --warmup 30"
        "resnet20 128 fp32$p16 --compile --steps 100 --warmup 10"
        "resnet20 512 fp32$p16 --steps 50 --warmup 5"
        "resnet20 2048 fp32$p16 --steps 20 --warmup 3")
fi
rc=0 i=0 parts=()
: > "$OUT/logs/4-bench.log"
for r in "${runs[@]}"; do
  set -- $r
  net="$1" bb="$2" pp="$3"; shift 3
  i=$((i + 1))
  python3 bench/cuda_bench.py --driver "$bench_drv" "${common[@]}" --net "$net" --batch "$bb" \
    --precision "$pp" "$@" --json "$W/bench-$i.json" >> "$OUT/logs/4-bench.log" 2>&1 || rc=1
  parts+=("$W/bench-$i.json")
done
python3 - "$OUT/bench.json" "${parts[@]}" <<'EOF' 2>> "$OUT/logs/4-bench.log"
import json, sys
rows = []
for p in sys.argv[2:]:
    try:
        rows += json.load(open(p))["rows"]
    except (OSError, ValueError, KeyError) as e:
        rows.append({"error": "no figures from %s: %s" % (p, e)})
json.dump({"rows": rows}, open(sys.argv[1], "w"), indent=1)
EOF
bsum="$(python3 -c '
import json,sys
b = json.load(open(sys.argv[1]))
print("; ".join(r.get("error") or ("%s b%s %s %s: kiln %.0f img/s, torch %s, ratio %s" % (r.get("net", "mnist"), r.get("batch", "?"),
      r["precision"], r["torch_mode"], r["kiln_images_per_s"],
      "%.0f img/s" % r["torch_images_per_s"] if "torch_images_per_s" in r else "skipped (" + r.get("torch_skipped", "?")[:80] + ")",
      "%.2f" % r["ratio"] if "ratio" in r else "-")) for r in b["rows"]))' "$OUT/bench.json" 2>/dev/null)"
# Kiln slower than PyTorch anywhere: a warning line (a failure is a wrong result, not this)
while IFS= read -r line; do [ -n "$line" ] && warn "$line"; done < <(python3 -c '
import json,sys
for r in json.load(open(sys.argv[1]))["rows"]:
    if r.get("ratio") is not None and r["ratio"] < 1:
        print("Kiln/torch %.2f < 1: %s batch %s %s vs torch %s (%s, %.0f vs %.0f img/s)" % (r["ratio"],
              r.get("net"), r.get("batch"), r["precision"], r["torch_mode"], r.get("torch", "?"),
              r["kiln_images_per_s"], r["torch_images_per_s"]))' "$OUT/bench.json" 2>/dev/null)
grep -q '"error"' "$OUT/bench.json" 2>/dev/null && rc=1
if [ $rc = 0 ]; then bst=ok; else bst=fail; fi
[ $dry = 1 ] && bsum="mock device, synthetic, 2 steps, PyTorch on the CPU: $bsum"
record bench $bst "$(since "$t0")" "$bsum"

# ---- 4b: CUDA graphs on and off ----
# The same driver and run twice, graphs on and off (--no-graphs), interleaved and
# repeated; a graphs-on run that replayed nothing (graph_replays 0: every capture
# failed and the trainer fell back, its reason in the log) fails the step.
t0=$(date +%s.%N)
if [ $dry = 1 ]; then
  gargs=(--synthetic --steps 2 --warmup 1) gruns=("mnist 4 fp32")
else
  gargs=(--steps 200 --warmup 20) gruns=("mnist 128 fp32" "resnet20 128 fp32")
  [ $bf16 = 1 ] && gruns+=("resnet20 128 bf16")
fi
gst=ok gsum="" reps=2; [ $dry = 1 ] && reps=1
: > "$OUT/logs/4b-graphs.log"
for r in "${gruns[@]}"; do
  set -- $r
  on=() off=() replays=""
  for k in $(seq $reps); do
    for mode in on off; do
      extra=(); [ $mode = off ] && extra=(--no-graphs)
      res="$(KILN_BENCH_DATA="$XDG_CACHE_HOME/kiln/datasets/fashion-mnist" \
             "$bench_drv" --net "$1" --batch "$2" --precision "$3" "${gargs[@]}" "${extra[@]}" 2>&1)"
      echo "== $r graphs $mode (run $k)" >> "$OUT/logs/4b-graphs.log"
      echo "$res" >> "$OUT/logs/4b-graphs.log"
      ips="$(echo "$res" | awk '$1 == "images_per_s" {print $2}')"
      [ -n "$ips" ] || { gst=fail; continue; }
      if [ $mode = on ]; then on+=("$ips") replays="$(echo "$res" | awk '$1 == "graph_replays" {print $2}')"
      else off+=("$ips"); fi
    done
  done
  [ "${replays:-0}" -gt 0 ] || gst=fail
  gsum="$gsum$(python3 -c '
import sys
on = [float(x) for x in sys.argv[2].split()]; off = [float(x) for x in sys.argv[3].split()]
if on and off:
    print("%s: on %.0f img/s, off %.0f img/s, ratio %.2f (best of %d), %s replays; " % (sys.argv[1],
          max(on), max(off), max(on) / max(off), len(on), sys.argv[4]))
else:
    print("%s: no figures; " % sys.argv[1])' "$r" "${on[*]}" "${off[*]}" "${replays:-0}")"
done
[ $dry = 1 ] && gsum="mock device, synthetic, 2 steps: $gsum"
record graphs $gst "$(since "$t0")" "$gsum"

# ---- 5: checkpoints across devices ----
t0=$(date +%s.%N)
cst=ok cdetail=""
mkdir -p "$W/ckpt-cpu-run"
cp -r "$B/ckpt-cpu/run/." "$W/ckpt-cpu-run/"
lim=none; [ $dry = 1 ] && lim=5s # on the mock: a few steps, then the time-limit save
nb1 "$W/resume-on-gpu.ipynb" "%resume $W/ckpt-cpu-run --device cuda --epochs 3 --time-limit $lim"
"$kiln" run "$W/resume-on-gpu.ipynb" -o "$W/resume-on-gpu.out.ipynb" > "$OUT/logs/5-resume-cpu-on-gpu.log" 2>&1
rc=$?
nbtext "$W/resume-on-gpu.out.ipynb" >> "$OUT/logs/5-resume-cpu-on-gpu.log" 2>/dev/null
if [ $rc = 0 ] && grep -q "cuda" "$OUT/logs/5-resume-cpu-on-gpu.log"; then cdetail="CPU checkpoint resumed on the GPU: ok;"
else cst=fail; cdetail="CPU checkpoint resumed on the GPU: FAILED (rc $rc);"; fi
rm -rf "$OUT/ckpt-gpu"
mkdir -p "$OUT/ckpt-gpu"
sub="-p subset 6000 -p val 500"; [ $dry = 1 ] && sub="-p subset 32 -p val 16 -p batch_size 32"
"$kiln" run notebooks/02-train.ipynb -o "$OUT/ckpt-gpu/train.out.ipynb" -p dataset fashion-mnist \
  $sub -p epochs 1 -p device cuda -p run_dir "$OUT/ckpt-gpu/run" -p time_limit 1h \
  > "$OUT/logs/5-save-on-gpu.log" 2>&1
rc=$?
if [ $rc = 0 ] && ls "$OUT/ckpt-gpu/run"/ckpt-step*.safetensors >/dev/null 2>&1; then
  cdetail="$cdetail GPU checkpoint saved in OUT/ckpt-gpu: ok"
  if [ $dry = 1 ]; then # at home already: resume it on the CPU now
    bash "$0" --build "$build" --resume-back "$OUT" > "$OUT/logs/5-resume-gpu-on-cpu.log" 2>&1 &&
      cdetail="$cdetail; resumed on the CPU: ok" ||
      { cst=fail; cdetail="$cdetail; resumed on the CPU: FAILED"; }
  else
    cdetail="$cdetail (resume it at home: bench/gpu_check.sh --resume-back OUT)"
  fi
else
  cst=fail; cdetail="$cdetail GPU checkpoint: FAILED (rc $rc)"
fi
record checkpoints $cst "$(since "$t0")" "$cdetail"

# ---- 6: several GPUs (2 or more on the machine; the dry run: 2 mock devices) ----
# notebooks/02-train.ipynb (6000 images, 1 epoch) on cuda:0,1 in one kernel (NCCL between the devices), then
# as 2 processes of a launch without MPI (torchrun's variables: the ranks meet over TCP,
# then NCCL), each with a results store of its own: both must train, and rank 0's
# per-step losses must equal the one kernel's bit for bit (the same sums in the same
# order).
t0=$(date +%s.%N)
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ $dry = 1 ] && ngpu=2
if [ "${ngpu:-0}" -lt 2 ]; then
  record "several GPUs" skipped "$(since "$t0")" "${ngpu:-0} GPU on this machine: needs 2 or more"
else
  # NCCL: the system's, else the nvidia-nccl wheel beside the machine's PyTorch
  if [ $dry = 0 ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 '; then
    wheel="$(python3 -c 'import glob,site
print(next(iter(sum((glob.glob(p + "/nvidia/nccl/lib/libnccl.so.2") for p in site.getsitepackages()), [])), ""))' 2>/dev/null)"
    [ -n "$wheel" ] && export KILN_LIBNCCL="$wheel"
  fi
  menv=(); [ $dry = 1 ] && menv=(KILN_MOCK_DEVICE=devices=2)
  # the mock device replays every kernel on the host: the dry run trains the small
  # stage notebook of the mock suite (256 images, 32 steps) instead
  mnb=(notebooks/02-train.ipynb -p dataset fashion-mnist -p subset 6000 -p val 500
       -p epochs 1 -p batch_size 256 -p time_limit 1h)
  [ $dry = 1 ] && mnb=(tests/gpu/group_stage.ipynb)
  mrun() { # TAG DEVICE [VAR=VALUE...]: the notebook with a results store of its own
    local tag="$1" dev="$2"; shift 2
    env "${menv[@]}" KILN_RESULTS="$W/multi-$tag.sqlite" "$@" "$kiln" run "${mnb[@]}" \
      -o "$W/multi-$tag.ipynb" -p device "$dev" -p run_dir "$W/runs/multi-$tag"
  }
  mst=ok mdetail=""
  mrun group cuda:0,1 > "$OUT/logs/6-group.log" 2>&1 || { mst=fail; mdetail="cuda:0,1: FAILED;"; }
  nbtext "$W/multi-group.ipynb" >> "$OUT/logs/6-group.log" 2>/dev/null
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  pids=()
  for r in 0 1; do
    mrun "rank$r" cuda RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 \
      MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" KILN_DIST_TIMEOUT=120 \
      > "$OUT/logs/6-rank$r.log" 2>&1 &
    pids+=($!)
  done
  for r in 0 1; do wait "${pids[$r]}" || { mst=fail; mdetail="$mdetail rank $r of 2: FAILED;"; }; done
  nbtext "$W/multi-rank0.ipynb" >> "$OUT/logs/6-rank0.log" 2>/dev/null
  mdetail="$mdetail $(python3 - "$W/multi-group.sqlite" "$W/multi-rank0.sqlite" <<'PY' 2>&1
import sqlite3, sys
def run(path):
    db = sqlite3.connect(path)
    rid = db.execute("select max(id) from runs").fetchone()[0]
    loss = [v for (v,) in db.execute("select value from metrics where run_id=? and key='loss' "
                                     "and kind=0 order by step", (rid,))]
    ips = db.execute("select value from metrics where run_id=? and key='images_per_s' and "
                     "kind=1 order by step desc limit 1", (rid,)).fetchone()
    return loss, ips[0] if ips else 0.0
(a, ia), (b, ib) = run(sys.argv[1]), run(sys.argv[2])
n = min(len(a), len(b))
d = max((abs(x - y) for x, y in zip(a[:n], b[:n])), default=float("nan"))
print("cuda:0,1 %.0f img/s, 2 processes %.0f img/s; %d vs %d steps, max |dloss| %.3g"
      % (ia, ib, len(a), len(b), d))
# two ranks add two numbers a step, in either order the same bits: any difference fails
sys.exit(0 if n and len(a) == len(b) and d == 0 else 1)
PY
)" || mst=fail
  [ $dry = 1 ] && mdetail="mock devices, the mock suite's stage notebook: $mdetail"
  record "several GPUs" $mst "$(since "$t0")" "$mdetail"
fi

# ---- the libraries a bare machine lacks: run the bundle with only glibc left ----
if [ $dry = 1 ]; then
  t0=$(date +%s.%N)
  bash "$root/bench/gpu_bare.sh" "$B" > "$OUT/logs/bare.log" 2>&1
  rc=$?
  record "bare machine" "$([ $rc = 0 ] && echo ok || echo fail)" "$(since "$t0")" "$(tail -1 "$OUT/logs/bare.log")"
fi

# ---- summary: summary.md, summary.json and logs.tar.gz, nothing else ----
total="$(since "$t_all")"
if [ $dry = 0 ] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > $BUDGET else 1)" "$total"; then
  warn "the check took $total s, over its ${BUDGET} s budget (each step's time is in the summary)"
fi
# everything else in one archive: the logs, the curves and figures, the GPU's last
# checkpoint (bench/gpu_check.sh --resume-back OUT finds it there). A file may come
# back from a borrowed machine up to 16 MiB: past 15 MiB the checkpoint stays behind.
cp "$steps" "$W/steps.tsv"
for f in train.json bench.json; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$W/$f"; done
ls "$OUT"/ckpt-gpu/run/ckpt-step*.safetensors 2>/dev/null | sort | head -n -1 | xargs -r rm -f
keep=()
for f in logs train.json bench.json ckpt-gpu; do [ -e "$OUT/$f" ] && keep+=("$f"); done
tar -C "$OUT" -czf "$OUT/logs.tar.gz" "${keep[@]}"
if [ "$(stat -c %s "$OUT/logs.tar.gz")" -gt $((15 << 20)) ] && [ -d "$OUT/ckpt-gpu" ]; then
  warn "logs.tar.gz without the GPU's checkpoint: with it $(du -h "$OUT/logs.tar.gz" | cut -f1), over the 15 MiB a file may be"
  tar -C "$OUT" -czf "$OUT/logs.tar.gz" --exclude='ckpt-gpu/run' "${keep[@]}"
fi
(cd "$OUT" && rm -rf "${keep[@]}")
python3 - "$W/steps.tsv" "$OUT" "$dry" "$total" "$(du -sb "$bundle" | cut -f1)" "$warnings" "$W" <<'EOF'
import json, os, sys, time
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
out, dry, total, bsize = sys.argv[2], sys.argv[3] == "1", float(sys.argv[4]), int(sys.argv[5])
warnings = [l.strip() for l in open(sys.argv[6]) if l.strip()]
summary = {"dry_run": dry, "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "seconds": total, "budget_seconds": 240, "bundle_bytes": bsize,
           "warnings": warnings,
           "steps": [{"step": r[0], "status": r[1], "seconds": float(r[2]), "detail": r[3]}
                     for r in rows]}
for k in ("train", "bench"):
    p = os.path.join(sys.argv[7], k + ".json")
    if os.path.exists(p):
        d = json.load(open(p))
        if k == "train":
            d = {n: {x: y for x, y in r.items() if x != "loss"} for n, r in d.items()}
        summary[k] = d
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("Kiln GPU check%s: %.0f s in all, bundle %.1f MiB\n\n" %
            (" (dry run, mock device)" if dry else "", total, bsize / 2**20))
    f.write("| step | status | time | detail |\n|---|---|---|---|\n")
    for r in rows:
        f.write("| %s | %s | %s s | %s |\n" % (r[0], r[1], r[2], r[3].replace("|", "/")))
    if warnings:
        f.write("\n" + "".join("- %s\n" % w for w in warnings))
print(open(os.path.join(out, "summary.md")).read())
bad = [r[0] for r in rows if r[1] == "fail"]
sys.exit(1 if bad else 0)
EOF
st=$?
left="$(cd "$OUT" && ls -A | sort | tr '\n' ' ')"
if [ "$left" != "logs.tar.gz summary.json summary.md " ]; then
  echo "gpu_check: OUT must hold exactly summary.md, summary.json and logs.tar.gz; it holds: $left" >&2
  st=1
fi
echo "gpu_check: $OUT: $left($(du -sh "$OUT/logs.tar.gz" | cut -f1) of logs)"
exit $st
