#!/usr/bin/env bash
# bench/gpu_bare.sh B - runs an unpacked GPU bundle (B/bin, B/lib; bench/gpu_bundle.sh)
# as a bare machine would: LD_LIBRARY_PATH is B/lib alone and every system library but
# glibc's is hidden, so anything the bundle forgot to carry fails to load here instead
# of on the borrowed GPU machine. Hidden by a private mount namespace (unshare -m, as
# root) that bind-mounts a folder holding only glibc over /usr/lib/x86_64-linux-gnu (and
# /lib/x86_64-linux-gnu where that is not the same folder); where unshare is not allowed,
# the loader's own resolution is checked instead (ld.so --inhibit-cache --list: every
# library must come from B/lib or be glibc's). Runs: kiln --version, a CPU training
# notebook through `kiln run` (OpenBLAS, SQLite, zlib ... all from B/lib), test_gpu_api
# and cuda_bench --list (no GPU: both must say so, not fail to load).
# Last line: "bare machine: ok (...)" or "bare machine: FAILED (...)".
set -uo pipefail
B="$(cd "$1" && pwd)"
glibc='^(linux-vdso|libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64)\.so'
ldso=/lib64/ld-linux-x86-64.so.2
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT

# 1. the loader's resolution with the cache ignored: nothing from outside B/lib but glibc
bad=""
for f in "$B"/bin/* "$B"/lib/*; do
  while read -r name arrow path rest; do
    [ "$arrow" = "=>" ] || continue
    echo "$name" | grep -Eq "$glibc" && continue
    case "$path" in "$B"/lib/*) ;; *) bad="$bad $(basename "$f"):$name=>$path" ;; esac
  done < <(LD_LIBRARY_PATH= "$ldso" --inhibit-cache --library-path "$B/lib" --list "$f" 2>&1)
done
if [ -n "$bad" ]; then
  echo "not carried by the bundle:$bad"
  echo "bare machine: FAILED (libraries resolved outside the bundle)"
  exit 1
fi
echo "loader check: every library of bin/ and lib/ comes from the bundle or glibc"

# 2. run it with the system's libraries hidden
mkdir -p "$T/glibc" "$T/work"
for l in /usr/lib/x86_64-linux-gnu/*.so*; do
  basename "$l" | grep -Eq "$glibc" && cp -a "$l" "$T/glibc/"
done
cat > "$T/work/cpu.ipynb" <<'EOF'
{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
 {"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "execution_count": null,
  "source": "%dataset fashion-mnist --val 64 --subset 512 --samples 0"},
 {"cell_type": "code", "id": "b", "metadata": {}, "outputs": [], "execution_count": null,
  "source": "%%model m\nconv2d 8 3\nrelu\nmaxpool 2\nflatten\ndense 10"},
 {"cell_type": "code", "id": "c", "metadata": {}, "outputs": [], "execution_count": null,
  "source": "%train m --epochs 1 --batch 64 --device cpu"}]}
EOF
cat > "$T/run.sh" <<EOF
B="$B"; T="$T"
for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu; do
  [ -d "\$d" ] && [ ! -L "\$d" ] && mount --bind "\$T/glibc" "\$d" 2>/dev/null
done
# from here on only glibc is left: sh builtins and the bundle's binaries
unset LD_LIBRARY_PATH LD_PRELOAD
export LD_LIBRARY_PATH="\$B/lib" KILN_LIBOPENBLAS="\$B/lib/libopenblas.so.0"
export HOME="\$T/work" KILN_RESULTS="\$T/work/results.sqlite"
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-\$T/work/cache}"
cd "\$T/work" || exit 90
"\$B/bin/kiln" --version || exit 91
"\$B/bin/kiln" run cpu.ipynb -o cpu.out.ipynb > kiln-run.log 2>&1 || exit 92
"\$B/bin/test_gpu_api" > gpu-api.log 2>&1 || exit 93
"\$B/bin/cuda_bench" --list > bench-list.log 2>&1
[ \$? = 3 ] || exit 94
exit 0
EOF
if unshare -m --propagation private true 2>/dev/null; then
  how="system libraries hidden (unshare -m)"
  unshare -m --propagation private sh "$T/run.sh"
else
  how="unshare not allowed: loader check only, run with LD_LIBRARY_PATH=B/lib"
  sh "$T/run.sh"
fi
rc=$?
for f in kiln-run.log gpu-api.log bench-list.log; do
  [ -f "$T/work/$f" ] && { echo "--- $f"; tail -5 "$T/work/$f"; }
done
if [ $rc = 0 ]; then
  echo "bare machine: ok ($how: kiln --version, kiln run on the CPU, test_gpu_api, cuda_bench --list)"
else
  echo "bare machine: FAILED (step rc $rc; $how)"
fi
exit $rc
