"""Where the kiln binary is: the copy packaged in this wheel (kiln_kernel/bin/kiln),
or the file named by $KILN_BINARY (a source build, for tests)."""
import os

PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kiln")


def kiln_binary():
    env = os.environ.get("KILN_BINARY")
    if env:
        return env
    if os.access(PACKAGED, os.X_OK):
        return PACKAGED
    raise FileNotFoundError(
        f"the kiln binary is not in this kiln_kernel package ({PACKAGED}); install the "
        "kiln-kernel wheel (pip install kiln-kernel) or set KILN_BINARY to a built kiln")
