"""The OpenBLAS kernels both sides of a CPU benchmark run.

Kiln names OpenBLAS's kernels from the CPU's instructions when OPENBLAS_CORETYPE is
unset (runtime/cpu/cpu_blas_dl.c): an OpenBLAS older than the CPU takes it for a
generic one (Debian 12's 0.3.21 runs SSE3 "Prescott" kernels on an Emerald Rapids Xeon).
Debian's torch 1.13 calls the same OpenBLAS, so a benchmark sets the variable to
Kiln's choice for both sides: the comparison is of the two frameworks, not of one
side's luck with OpenBLAS's CPU table. A value the user set is kept."""
import os


def with_blas_kernels(env):
    """env, with OPENBLAS_CORETYPE set as Kiln would choose it when it is unset."""
    if env.get("OPENBLAS_CORETYPE"):
        return env
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((ln.split() for ln in f if ln.startswith("flags")), []))
    except OSError:
        return env
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return dict(env, OPENBLAS_CORETYPE="SKYLAKEX")
    if {"avx2", "fma"} <= flags:
        return dict(env, OPENBLAS_CORETYPE="HASWELL")
    return env
