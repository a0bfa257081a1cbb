"""`python -m kiln_kernel ARGS` and the `kiln` console command: exec the packaged kiln
binary with ARGS. The wheel's kernelspec runs `python -m kiln_kernel kernel -f FILE`;
jupyter_client puts its own interpreter in place of "python", so the kernel starts
from a virtual environment that is not activated."""
import os
import sys

from .binary import kiln_binary


def main():
    try:
        exe = kiln_binary()
    except FileNotFoundError as e:
        sys.stderr.write(f"kiln: {e}\n")
        return 127
    os.execv(exe, ["kiln"] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
