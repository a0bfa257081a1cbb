#!/usr/bin/env bash
# bench/gpu_bundle.sh DIR [--build BUILD] - everything bench/gpu_check.sh needs on a bare
# GPU machine (the NVIDIA driver, nvcc, CMake, ninja and a Python with PyTorch; no ZeroMQ,
# jansson, meson, OpenBLAS, no network), in one folder of at most 60 MiB:
#   DIR/payload.tar.xz   bin/: the CUDA build's kiln, the real-device gpu tests and
#                        cuda_bench (stripped); lib/: every shared library they need
#                        that is not glibc (found with ldd, copied under its soname) and
#                        OpenBLAS, which the CPU backend dlopens; ckpt-cpu/: a run
#                        directory trained here on the CPU (step 5 resumes it there);
#                        cifar10-subset/: a CIFAR-10-shaped set in CIFAR's binary format
#   DIR/fashion-mnist/   Debian's dataset-fashion-mnist files, gzip as they come
#   DIR/MANIFEST         what is in it, sizes, the build's `kiln --version`
# The binaries come from BUILD (default: build), which must be a CUDA build
# (`meson setup BUILD -Dcuda=enabled`); the targets are built first. cuBLAS and cuDNN
# are NOT carried (~0.6 GB and ~0.5 GB): the machine's own are found by gpu_check.sh.
# The repository itself travels beside the bundle (gpu_check.sh runs from its root).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="" build="$here/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) [ -z "$dir" ] || { echo "gpu_bundle: one DIR only" >&2; exit 2; }; dir="$1"; shift ;;
  esac
done
[ -n "$dir" ] || { echo "usage: bench/gpu_bundle.sh DIR [--build BUILD]" >&2; exit 2; }
limit=$((60 * 1024 * 1024))
fm=/usr/share/datasets/fashion-mnist
[ -f "$fm/train-images-idx3-ubyte.gz" ] || {
  echo "gpu_bundle: $fm is missing (apt install dataset-fashion-mnist)" >&2; exit 1; }

# the real-device binaries of the gpu suite (tests/gpu/meson.build) and the bench driver
tests=(check_ops test_gpu_api test_gpu_train test_gpu_trainer test_gpu_graphs test_gpu_memory
       test_gpu_lost test_gpu_real)
targets=(kernel/kiln bench/cuda_bench)
for t in "${tests[@]}"; do targets+=("tests/gpu/$t"); done
grep -q "CUDA backend *: *True" "$build/meson-logs/meson-log.txt" 2>/dev/null ||
  [ -f "$build/tests/gpu/check_ops" ] || {
  echo "gpu_bundle: $build is not a CUDA build (meson setup $build -Dcuda=enabled)" >&2; exit 1; }
ninja -C "$build" "${targets[@]}" >/dev/null

t0=$(date +%s)
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$dir"
for t in "${targets[@]}"; do
  cp "$build/$t" "$stage/bin/"
  strip --strip-unneeded "$stage/bin/$(basename "$t")"
done

# Shared libraries: everything ldd resolves except glibc itself (every Linux has it, and
# a copy would not match the machine's ld.so) and the driver; each copied under the
# name the binaries ask for (its soname), symlinks resolved.
glibc='^(linux-vdso|libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64|libcuda)\.so'
copy_deps() { # file...
  ldd "$@" 2>/dev/null | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
      if echo "$name" | grep -Eq "$glibc"; then continue; fi
      [ -e "$stage/lib/$name" ] || cp -L "$path" "$stage/lib/$name"
    done
}
copy_deps "$stage"/bin/*
# OpenBLAS is dlopen'ed by the CPU backend (runtime/cpu/cpu_blas_dl.c): the openmp build
blas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
[ -e "$blas" ] || blas="$(ldconfig -p | awk '/libopenblas.so.0/ {print $NF; exit}')"
cp -L "$blas" "$stage/lib/libopenblas.so.0"
copy_deps "$stage/lib/libopenblas.so.0"
copy_deps "$stage"/lib/*   # what the copied libraries need in turn
chmod 0644 "$stage"/lib/*

# A CIFAR-10-shaped set (5 x 500 training + 500 test records of 1 label byte and 3x32x32
# pixels): per class a colour and a bright square at a class position, plus a little
# noise, so a network learns it in a few hundred steps and xz packs it small.
python3 - "$stage/cifar10-subset" <<'EOF'
import os, random, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(20261201)
names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
         "truck"]
def record(i):
    c = i % 10
    col = [(c * 37) % 200 + 30, (c * 91) % 200 + 30, (c * 53) % 200 + 30]
    y0, x0 = 4 + (c // 5) * 14, 2 + (c % 5) * 6
    noise = rng.randbytes(3072)
    px = bytearray()
    for ch in range(3):
        lo, hi = col[ch] // 2, min(247, col[ch] + 40)
        for y in range(32):
            inside = y0 <= y < y0 + 10
            px += bytes((hi if inside and x0 <= x < x0 + 6 else lo) + (noise[ch * 1024 + y * 32 + x] & 7)
                        for x in range(32))
    return bytes([c]) + bytes(px)
files = ["data_batch_%d.bin" % k for k in range(1, 6)] + ["test_batch.bin"]
n = 0
for f in files:
    with open(os.path.join(out, f), "wb") as fh:
        for _ in range(500):
            fh.write(record(n)); n += 1
with open(os.path.join(out, "batches.meta.txt"), "w") as fh:
    fh.write("\n".join(names) + "\n")
EOF

# A run directory trained here on the CPU, for step 5 (the GPU resumes it there); small:
# 2 epochs of a 3000-image subset, checkpointed every 50 steps. The data set is named
# (not a path), so the GPU machine finds it in its cache folder (gpu_check.sh puts the
# bundle's copy there) and checks the same checksum.
mkdir -p "$stage/ckpt-cpu"
cat > "$stage/ckpt-cpu/train.ipynb" <<EOF
{"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "kiln",
 "display_name": "Kiln", "language": "kiln"}}, "cells": [
 {"cell_type": "code", "id": "c1", "metadata": {}, "outputs": [], "execution_count": null,
  "source": "%dataset fashion-mnist --val 500 --subset 3000 --samples 0"},
 {"cell_type": "code", "id": "c2", "metadata": {}, "outputs": [], "execution_count": null,
  "source": "%%model cnn\nconv2d 16 3\nrelu\nmaxpool 2\nconv2d 32 3\nrelu\nmaxpool 2\nflatten\ndense 10"},
 {"cell_type": "code", "id": "c3", "metadata": {}, "outputs": [], "execution_count": null,
  "source": "%train cnn --epochs 2 --batch 64 --seed 5 --device cpu --run-dir $stage/ckpt-cpu/run --checkpoint-every 50steps"}]}
EOF
( cd "$stage/ckpt-cpu" && KILN_RESULTS="$stage/ckpt-cpu/results.sqlite" \
    "$build/kernel/kiln" run train.ipynb -o train.out.ipynb >/dev/null 2>&1 ) || {
  echo "gpu_bundle: the CPU checkpoint run failed (see $stage/ckpt-cpu/train.out.ipynb)" >&2
  exit 1; }
ls "$stage/ckpt-cpu/run"/*.safetensors >/dev/null 2>&1 || ls "$stage/ckpt-cpu/run" | grep -q . || {
  echo "gpu_bundle: the CPU run wrote no checkpoint" >&2; exit 1; }
rm -f "$stage/ckpt-cpu/results.sqlite"*

tar -C "$stage" -cf - bin lib cifar10-subset ckpt-cpu | xz -T0 -3 > "$dir/payload.tar.xz"
mkdir -p "$dir/fashion-mnist"
cp "$fm"/*.gz "$dir/fashion-mnist/"
{
  echo "# Kiln GPU bundle, made $(date -u +%Y-%m-%dT%H:%MZ) from $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"
  "$build/kernel/kiln" --version
  echo "# payload (uncompressed):"
  (cd "$stage" && find bin lib cifar10-subset ckpt-cpu -type f -printf '%s %p\n' | sort -k2)
  echo "# files:"
  (cd "$dir" && find . -type f ! -name MANIFEST -printf '%s %p\n' | sort -k2)
} > "$dir/MANIFEST"
size=$(du -sb "$dir" | cut -f1)
echo "gpu_bundle: $dir: $((size / 1024 / 1024)) MiB ($size bytes) in $(( $(date +%s) - t0 )) s"
if [ "$size" -gt "$limit" ]; then
  echo "gpu_bundle: over the 60 MiB limit" >&2
  exit 1
fi
