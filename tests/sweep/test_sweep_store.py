"""`kiln sweep -o s3://BUCKET/PREFIX`, against moto's S3 server on 127.0.0.1
(tests/store/moto_util.py, authentication on): the variants' run directories,
notebooks, logs and states and the sweep's summary end up in the store; the same sweep
on a "new machine" (the staging directory gone) reads the states from the store and
trains nothing; a sweep killed with kill -9 and run again on a new machine continues
every variant from the store's checkpoints, bit for bit equal to a sweep never
stopped; bad credentials stop it before anything runs."""
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "store"))
from moto_util import BUCKET, start_store  # noqa: E402
from test_sweep import (KILN, assert_same_weights, count_runs, kiln_children,  # noqa: E402
                        rows, stage, sweep, wait_for)

ARGS = ["-p", "lr", "0.001,0.003", "--parallel", "2"]
NAMES = ["lr=0.001", "lr=0.003"]


@pytest.fixture(scope="module")
def store():
    srv, st = start_store()
    yield st
    srv.stop()


@pytest.fixture
def work(tmp_path, monkeypatch, store):
    monkeypatch.chdir(tmp_path)
    for k, v in store["creds"].items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AWS_ENDPOINT_URL", store["url"])
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("KILN_STAGING_DIR", str(tmp_path / "staging"))
    monkeypatch.setenv("KILN_RESULTS", str(tmp_path / "results.sqlite"))
    return tmp_path


def keys(st, prefix):
    out, token = [], None
    while True:
        kw = {"Bucket": BUCKET, "Prefix": prefix}
        if token:
            kw["ContinuationToken"] = token
        page = st["s3"].list_objects_v2(**kw)
        out += [o["Key"] for o in page.get("Contents", [])]
        if not page.get("IsTruncated"):
            return sorted(out)
        token = page["NextContinuationToken"]


def get(st, key):
    return st["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()


def new_machine(work):
    shutil.rmtree(work / "staging", ignore_errors=True)


def test_grid_in_the_store_and_a_rerun_elsewhere_trains_nothing(work, store):
    nb = stage(work / "stage.ipynb")
    url = f"s3://{BUCKET}/sweeps/grid"
    p = sweep(str(nb), "-o", url, *ARGS)
    assert p.returncode == 0, p.stderr
    got = keys(store, "sweeps/grid/")
    for f in ["sweep.json", "summary.csv", "summary.svg"]:
        assert f"sweeps/grid/{f}" in got, got
    for n in NAMES:
        st = json.loads(get(store, f"sweeps/grid/{n}/status.json"))
        assert st["state"] == "finished" and st["sweep"] == "grid"
        assert "Training net" in get(store, f"sweeps/grid/{n}/log")
        out = json.loads(get(store, f"sweeps/grid/{n}/out.ipynb"))
        assert "injected-parameters" in json.dumps(out["cells"])
        # the variant's %train ran in the store's run directory
        assert any(k.startswith(f"sweeps/grid/{n}/run/ckpt-step") and
                   k.endswith(".safetensors.manifest.json") for k in got), got
    table = list(csv.DictReader(io.StringIO(get(store, "sweeps/grid/summary.csv"))))
    assert sorted(r["variant"] for r in table) == NAMES
    assert all(r["state"] == "finished" and r["dir"] == f"{url}/{r['variant']}" and
               0 < float(r["best_val_accuracy"]) <= 1 for r in table), table
    assert f"wrote {url}/summary.csv" in p.stdout
    assert not os.path.exists("s3:")  # nothing written under a folder named like the URL
    assert sorted(rows(work / "results.sqlite", "grid")) == NAMES
    # another machine: nothing local, the store says every variant finished
    new_machine(work)
    before = count_runs(work / "results.sqlite")
    p = sweep(str(nb), "-o", url, *ARGS)
    assert p.returncode == 0, p.stderr
    assert "2 of 2 variants already done" in p.stderr and "started" not in p.stderr, p.stderr
    assert count_runs(work / "results.sqlite") == before
    table = list(csv.DictReader(io.StringIO(get(store, "sweeps/grid/summary.csv"))))
    assert all(r["state"] == "finished" and r["run_id"] != "0" for r in table), table


def test_kill9_then_rerun_elsewhere_resumes_from_the_store(work, store):
    nb = stage(work / "stage.ipynb", subset=2048, extra="--checkpoint-every 8steps",
               params="lr = 0.001\nepochs = 3")
    ref = sweep(str(nb), "-o", "ref", *ARGS)  # local, never stopped
    assert ref.returncode == 0, ref.stderr
    url = f"s3://{BUCKET}/sweeps/k9s3"

    def checkpointed(n):
        return any(k.endswith(".manifest.json") for k in keys(store, f"sweeps/k9s3/{n}/run/"))

    s = subprocess.Popen([KILN, "sweep", str(nb), "-o", url, *ARGS],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: all(checkpointed(n) for n in NAMES), 120)
    s.send_signal(signal.SIGKILL)
    s.wait()
    assert wait_for(lambda: not kiln_children("k9s3/"), 90), kiln_children("k9s3/")
    # the store says they were running: a new machine runs them again, from the store
    assert all(json.loads(get(store, f"sweeps/k9s3/{n}/status.json"))["state"] == "running"
               for n in NAMES)
    new_machine(work)
    p = sweep(str(nb), "-o", url, *ARGS)
    assert p.returncode == 0, p.stderr
    for n in NAMES:
        log = get(store, f"sweeps/k9s3/{n}/log")
        assert "holds this run (same options): continuing it" in log, log[-3000:]
        assert json.loads(get(store, f"sweeps/k9s3/{n}/status.json"))["state"] == "finished"
        # the store's newest checkpoint equals the never-stopped sweep's
        d = work / "fetched" / n
        d.mkdir(parents=True)
        newest = [k for k in keys(store, f"sweeps/k9s3/{n}/run/ckpt-step")
                  if k.endswith(".safetensors")][-1]
        store["s3"].download_file(BUCKET, newest, str(d / os.path.basename(newest)))
        assert_same_weights(str(d), f"ref/{n}/run")


def test_bad_credentials_stop_it_before_anything_runs(work, monkeypatch):
    nb = stage(work / "stage.ipynb")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
    for extra in ([], ["--dry-run"]):
        p = sweep(str(nb), "-o", f"s3://{BUCKET}/sweeps/bad", *ARGS, *extra)
        assert p.returncode == 2, p.stderr
        assert "refused the credentials" in p.stderr and "HINT" in p.stderr, p.stderr
        assert "wrong-secret" not in p.stderr
    assert not os.path.exists(work / "staging") and not os.path.exists("results.sqlite")


def test_sweep_magic_with_an_s3_folder(work, store):
    """%sweep -o s3://...: the cell's table reads the sweep's staging copy; the states,
    notebooks and summary are in the store."""
    from kiln_client import Kernel, run

    stage(work / "stage.ipynb")
    url = f"s3://{BUCKET}/sweeps/magic"
    k = Kernel(ipc=True)
    try:
        c = run(k, f"%sweep stage.ipynb -o {url} -p lr 0.001,0.003 --parallel 2")
        assert "lr=0.003" in c.text, c.text
        c = run(k, "%sweep wait")
        assert "2 of 2 finished; done" in c.text, c.text
    finally:
        k.close()
    for n in NAMES:
        assert json.loads(get(store, f"sweeps/magic/{n}/status.json"))["state"] == "finished"
        assert "sweeps/magic/" + n + "/out.ipynb" in keys(store, f"sweeps/magic/{n}/")
    assert "sweeps/magic/summary.csv" in keys(store, "sweeps/magic/")
    assert not os.path.exists("s3:")
