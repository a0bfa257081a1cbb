"""Run in .ci/wheel's chroot against the installed wheel: one version in the wheel's
metadata, `kiln --version` and kernel_info_reply's implementation_version, and it is
the version in the wheel's file name (argv[1])."""
import importlib.metadata
import subprocess
import sys

from jupyter_client.manager import start_new_kernel

want = sys.argv[1]
meta = importlib.metadata.version("kiln-kernel")
cli = subprocess.run(["kiln", "--version"], capture_output=True, text=True,
                     check=True).stdout.splitlines()[0]
km, kc = start_new_kernel(kernel_name="kiln")
try:
    kc.kernel_info()
    reply = kc.get_shell_msg(timeout=30)["content"]
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
got = {"file name": want, "metadata": meta, "kiln --version": cli.removeprefix("kiln "),
       "implementation_version": reply["implementation_version"]}
if len(set(got.values())) != 1:
    sys.exit("check_version: FAILED: the versions differ: " + repr(got))
print(f"check_version: {want} in the file name, the metadata, kiln --version and "
      f"kernel_info_reply")
