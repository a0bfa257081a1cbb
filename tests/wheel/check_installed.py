"""Run by .ci/wheel inside the Debian 12 minbase chroot, with the kiln-kernel wheel
installed in a fresh venv (not activated): the installed kernelspec starts Kiln, which
takes OpenBLAS from scipy-openblas32 (the chroot has no system OpenBLAS), trains on the
CPU, and says clearly that libcurl (loaded on first use, not bundled) is missing."""
import os
import sys

from jupyter_client.manager import start_new_kernel


def run(kc, code):
    texts = []

    def hook(m):
        c = m["content"]
        texts.append(c.get("text") or c.get("data", {}).get("text/plain", "")
                     or "\n".join(c.get("traceback", [])))

    reply = kc.execute_interactive(code, timeout=300, output_hook=hook)["content"]
    text = "\n".join(texts)
    print(f"--- {code.splitlines()[0]}\n{text}")
    return reply, text


def main():
    km, kc = start_new_kernel(kernel_name="kiln")
    try:
        reply, text = run(kc, "%device")
        assert reply["status"] == "ok", text
        assert "(scipy-openblas32)" in text, "OpenBLAS did not come from scipy-openblas32"
        reply, text = run(kc, "%dataset fashion-mnist --url http://127.0.0.1:9/none --val 10")
        assert reply["status"] == "error" and "libcurl" in text, text
        if os.path.isdir("/usr/share/datasets/fashion-mnist"):
            for code in ["%dataset fashion-mnist --subset 256 --val 32 --samples 0",
                         "%%model net\nconv2d 4 3\nrelu\nmaxpool 2\nflatten\ndense 10",
                         "%train net --batch 32 --epochs 1"]:
                reply, text = run(kc, code)
                assert reply["status"] == "ok", text
            assert "epoch 1/1" in text, text
        else:
            print("(no Fashion-MNIST here: training not checked)")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    print("check_installed: ok")


if __name__ == "__main__":
    sys.exit(main())
