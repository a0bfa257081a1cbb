"""One version everywhere: `kiln --version`, kernel_info_reply's implementation_version
and the banner all carry the project version meson was configured with (tools/version:
the git tag); language_info.version is the cell language's own. .ci/wheel checks the installed wheel's
metadata against the same two."""
import json
import re
import subprocess
from pathlib import Path

from packaging.version import Version

from kiln_client import Kernel, kiln_binary



def project_version():
    info = json.loads((Path(kiln_binary()).parents[1] / "meson-info" /
                       "intro-projectinfo.json").read_text())
    return info["version"]


def test_version_agrees_everywhere():
    want = project_version()
    Version(want)  # PEP 440, or the wheel could not carry it
    out = subprocess.run([kiln_binary(), "--version"], capture_output=True, text=True,
                         check=True).stdout
    assert out.splitlines()[0] == f"kiln {want}", out
    k = Kernel()
    try:
        k.kc.kernel_info()
        reply = k.kc.get_shell_msg(timeout=10)["content"]
    finally:
        k.close()
    assert reply["implementation"] == "kiln"
    assert reply["implementation_version"] == want
    # the language's version is its own, so shipped notebooks' metadata stays valid
    assert reply["language_info"]["version"] == "0.1.0"
    assert re.search(r"\bKiln " + re.escape(want) + r"\b", reply["banner"])
