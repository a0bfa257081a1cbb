"""MLflow credentials stay secret (suite 'results').

A `kiln run` of a small training notebook mirrors to a stand-in MLflow server on
127.0.0.1 that records every request. The credentials, given in the URL or in MLflow's
environment variables, must reach the server only as an Authorization header: never in
a request body, a cell's output, the kernel's stderr, the output notebook, a checkpoint
or the local results store. Plain http to a non-loopback host is warned about (checked
without any network: the rule is a pure function of the URL, see test_results_store).
"""
import base64
import glob
import http.server
import json
import os
import subprocess
import sys
import threading

try:
    import pytest
except ImportError:  # pragma: no cover
    print("SKIP: pytest cannot be imported by this python3")
    sys.exit(77)

KILN = os.environ.get("KILN_BIN", "kiln")
DATA = "/usr/share/datasets/fashion-mnist"


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers the few MLflow REST calls Kiln makes and keeps what it was sent."""

    def log_message(self, *a):
        pass

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        self.server.seen.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                 "raw": self.requestline.encode() + b"\n" + body})
        if "get-by-name" in self.path:
            out = {"experiment": {"experiment_id": "1"}}
        elif self.path.endswith("runs/create"):
            out = {"run": {"info": {"run_id": "r1"}}}
        else:
            out = {}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = answer


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    srv.seen = []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def notebook(path, results, run_dir):
    cells = ["%dataset fashion-mnist --subset 256 --val 32 --samples 0",
             "%%model net\nconv2d 4 3\nrelu\nflatten\ndense 10",
             f"%train net --batch 32 --epochs 1 --seed 3 --results {results} "
             f"--run-dir {run_dir} --checkpoint-every 4steps"]
    with open(path, "w") as f:
        json.dump({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                   "cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [],
                              "execution_count": None, "id": "c%d" % i}
                             for i, c in enumerate(cells)]}, f)


def run_and_scan(tmp_path, server, results, env_extra, secrets, source_has_secret):
    if not os.path.isdir(DATA):
        pytest.skip("Fashion-MNIST (Debian dataset-fashion-mnist) is not installed")
    run_dir, nb, out = tmp_path / "run", tmp_path / "nb.ipynb", tmp_path / "out.ipynb"
    notebook(nb, results, run_dir)
    env = dict(os.environ, HOME=str(tmp_path), KILN_RESULTS=str(tmp_path / "r.sqlite"),
               **env_extra)
    p = subprocess.run([KILN, "run", str(nb), "-o", str(out), "--log-output"],
                       capture_output=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    assert server.seen, ("nothing reached the MLflow stand-in", p.stderr.decode(errors="replace")[-3000:])
    with open(out) as f:
        outputs = json.dumps([c["outputs"] for c in json.load(f)["cells"]]).encode()
    places = {"stdout": p.stdout, "stderr": p.stderr, "outputs": outputs}
    if not source_has_secret:
        places["notebook"] = open(out, "rb").read()
    for path in glob.glob(str(run_dir / "*")) + glob.glob(str(tmp_path / "r.sqlite*")):
        places[path] = open(path, "rb").read()
    assert any(k.endswith(".safetensors") for k in places), places.keys()
    for i, req in enumerate(server.seen):
        places[f"request {i} {req['path']}"] = req["raw"]
    for secret in secrets:
        leaks = [k for k, v in places.items() if secret.encode() in v]
        assert not leaks, f"{secret!r} found in {leaks}"
    return [r["auth"] for r in server.seen]


def test_credentials_in_the_url_are_only_sent_as_auth(tmp_path, server):
    port = server.server_address[1]
    auth = run_and_scan(tmp_path, server, f"mlflow+http://alice:s3cr3t-pw@127.0.0.1:{port}",
                        {}, ["s3cr3t-pw", "alice:"], source_has_secret=True)
    want = "Basic " + base64.b64encode(b"alice:s3cr3t-pw").decode()
    assert auth and all(a == want for a in auth), auth


def test_mlflow_environment_variables(tmp_path, server):
    port = server.server_address[1]
    auth = run_and_scan(tmp_path, server, f"mlflow+http://127.0.0.1:{port}",
                        {"MLFLOW_TRACKING_TOKEN": "tok-9f8e7d"}, ["tok-9f8e7d"],
                        source_has_secret=False)
    assert auth and all(a == "Bearer tok-9f8e7d" for a in auth), auth
    server.seen.clear()
    (tmp_path / "second").mkdir()
    auth = run_and_scan(tmp_path / "second", server, f"mlflow+http://127.0.0.1:{port}",
                        {"MLFLOW_TRACKING_USERNAME": "bob", "MLFLOW_TRACKING_PASSWORD": "pw-1a2b"},
                        ["pw-1a2b"], source_has_secret=False)
    want = "Basic " + base64.b64encode(b"bob:pw-1a2b").decode()
    assert auth and all(a == want for a in auth), auth


if __name__ == "__main__":
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-rs", __file__]))
