"""s3:// run directories through the kernel, against moto's S3 server on 127.0.0.1
(moto_util.py): %train --run-dir s3://... uploads its checkpoints; %resume s3://... in a
fresh kernel, with the local staging directory gone, continues the run bit for bit
(the final checkpoint equals an uninterrupted local run's), also after a kill -9 in the
middle of a multipart upload and past a corrupt object; an outage of the store
mid-run does not stop training and the uploads catch up; `kiln run` of a stage
notebook twice, on two "machines", continues the run; wrong credentials, a
missing bucket and a bad endpoint stop %train before any step with an error that names
what to fix; and the secret key is in no output, no kernel log, no results-store row
and no notebook-visible text of any of it."""
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile

import nbformat
import numpy as np
import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from moto_util import BUCKET, Proxy, free_port, start_store  # noqa: E402
from kiln_client import Kernel, collect, run  # noqa: E402

if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
    pytest.skip("Fashion-MNIST (Debian dataset-fashion-mnist) is not installed",
                allow_module_level=True)

from safetensors.numpy import load_file  # noqa: E402

SETUP = ["%dataset fashion-mnist --subset 512 --val 64 --samples 0",
         "%%model net\nconv2d 4 3\nrelu\nmaxpool 2\nflatten\ndense 10"]
TRAIN = "%train net --batch 32 --seed 5 --lr 0.003"
STEPS_PER_EPOCH = 512 // 32
KILN = os.environ.get("KILN_BIN", "kiln")


@pytest.fixture(scope="module")
def env():
    srv, st = start_store()
    tmp = tempfile.mkdtemp(prefix="kiln-store-kernel-")
    saved = dict(os.environ)
    os.environ.update(st["creds"])
    os.environ.update(AWS_ENDPOINT_URL=st["url"], AWS_REGION="us-east-1",
                      KILN_STAGING_DIR=os.path.join(tmp, "staging"),
                      KILN_RESULTS=os.path.join(tmp, "results.sqlite"))
    st.update(tmp=tmp, texts=[], logs=[])
    try:
        yield st
    finally:
        os.environ.clear()
        os.environ.update(saved)
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def kernel(st, **env):
    """A fresh kernel started with os.environ plus env (None: unset)."""
    saved = dict(os.environ)
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        k = Kernel(ipc=True)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return k


def close(st, k):
    st["logs"].append(k.stderr())  # the kernel's log, before close() removes it
    k.close()


def cell(st, k, code, ok=True):
    c = run(k, code, ok=ok)
    st["texts"].append(c.text + "".join(e["evalue"] + "".join(e["traceback"])
                                        for e in c.errors) + str(c.reply))
    return c


def ckpt(step):
    return "ckpt-step%08d.safetensors" % step


def same_weights(st, key, path):
    """The store's object key holds the same model and optimizer state as the local
    checkpoint at path, bit for bit."""
    got = os.path.join(st["tmp"], "got.safetensors")
    with open(got, "wb") as f:
        f.write(st["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read())
    a, b = load_file(got), load_file(path)
    assert sorted(a) == sorted(b)
    names = [n for n in a if n.startswith(("model.", "optim."))]
    assert names
    for name in names:
        assert np.array_equal(a[name], b[name]), name


def keys(st, prefix):
    return sorted(o["Key"] for o in st["s3"].list_objects_v2(
        Bucket=BUCKET, Prefix=prefix).get("Contents", []))


def train_locally(st, setup, train, name):
    """A fresh kernel runs setup, then train into a local run directory (returned)."""
    rd = os.path.join(st["tmp"], name)
    k = kernel(st)
    for code in setup:
        cell(st, k, code)
    cell(st, k, f"{train} --run-dir {rd}")
    close(st, k)
    return rd


def test_train_to_s3_then_resume_in_a_fresh_kernel_bit_for_bit(env):
    # the reference: 3 epochs without a stop, locally
    ref_dir = train_locally(env, SETUP, f"{TRAIN} --epochs 3", "ref")
    # 2 epochs into the store
    url = f"s3://{BUCKET}/runs/a"
    k = kernel(env)
    for c in SETUP:
        cell(env, k, c)
    frames = []
    c = collect(k, k.kc.execute(f"{TRAIN} --epochs 2 --run-dir {url} --keep 2 "
                                "--checkpoint-every 4steps"), on_text=frames.append)
    env["texts"].append(c.text + str(c.reply) + "".join(frames))
    assert c.reply["status"] == "ok", c.reply
    close(env, k)
    assert f"run directory: {url} (staged in " in c.text, c.text
    # the progress display shows the upload state
    assert any("uploaded: step " in f or "upload: " in f for f in frames), frames[-3:]
    assert f"uploaded: {url} (newest: step {2 * STEPS_PER_EPOCH})" in c.text, c.text
    assert keys(env, "runs/a/") == ["runs/a/" + n for n in (
        ckpt(28), ckpt(28) + ".manifest.json", ckpt(32), ckpt(32) + ".manifest.json")]
    # a fresh kernel on a "new machine": nothing local, no cells run
    shutil.rmtree(os.environ["KILN_STAGING_DIR"])
    k = kernel(env)
    c = cell(env, k, f"%resume {url} --epochs 3 --checkpoint-every 1epoch")
    # the results store records where the run is: the URL, not the staging copy
    run_id = int(c.text.split("results: run ")[1].split()[0])
    shown = cell(env, k, f"%results show {run_id}").text
    close(env, k)
    assert f"run_dir           {url}\n" in shown, shown
    assert f"{url}/{ckpt(48)}" in shown and os.environ["KILN_STAGING_DIR"] not in shown, shown
    db = sqlite3.connect(os.environ["KILN_RESULTS"])
    dirs = {v for (v,) in db.execute("SELECT value FROM params WHERE key='run_dir'")}
    db.close()
    assert url in dirs, dirs
    assert f"uploaded: {url} (newest: step {3 * STEPS_PER_EPOCH})" in c.text, c.text
    same_weights(env, "runs/a/" + ckpt(48), os.path.join(ref_dir, ckpt(48)))
    # keep 2: the oldest went only once newer ones were complete
    assert keys(env, "runs/a/") == ["runs/a/" + n for n in (
        ckpt(32), ckpt(32) + ".manifest.json", ckpt(48), ckpt(48) + ".manifest.json")]
    # kiln export of the s3:// run on a "new machine": the same model as the local run's
    shutil.rmtree(os.environ["KILN_STAGING_DIR"])
    onnx = [os.path.join(env["tmp"], n) for n in ("s3.onnx", "ref.onnx")]
    said = []
    for src, dst in ((url, onnx[0]), (ref_dir, onnx[1])):
        p = subprocess.run([KILN, "export", src, "--onnx", dst], capture_output=True,
                           text=True, timeout=120)
        env["texts"].append(p.stdout + p.stderr)
        assert p.returncode == 0, p.stderr
        said.append(p.stderr)
    assert ckpt(48) + f" (fetched from {url};" in said[0], said[0]
    import onnx as ox  # noqa: E402 (as the export tests; only its graph is compared)
    from onnx import numpy_helper
    a, b = (ox.load(f).graph for f in onnx)
    assert [n.op_type for n in a.node] == [n.op_type for n in b.node]
    wa = {t.name: numpy_helper.to_array(t) for t in a.initializer}
    wb = {t.name: numpy_helper.to_array(t) for t in b.initializer}
    assert sorted(wa) == sorted(wb) and all(np.array_equal(wa[k], wb[k]) for k in wa)


@pytest.mark.parametrize("case,env_change,words", [
    ("wrong secret", {"AWS_SECRET_ACCESS_KEY": "WRONGwrongWRONGwrongWRONGwrong0123456789"},
     ["refused the credentials", "AWS_SECRET_ACCESS_KEY"]),
    ("missing bucket", {}, ["bucket s3://no-such-bucket does not exist", "HINT"]),
    ("bad endpoint", {"AWS_ENDPOINT_URL": "http://127.0.0.1:%d" % free_port()},
     ["cannot reach the object store", "AWS_ENDPOINT_URL"]),
])
def test_store_problems_stop_train_before_any_step(env, case, env_change, words):
    k = kernel(env, **env_change)
    for c in SETUP:
        cell(env, k, c)
    bucket = "no-such-bucket" if case == "missing bucket" else BUCKET
    c = cell(env, k, f"{TRAIN} --epochs 1 --run-dir s3://{bucket}/runs/err", ok=False)
    close(env, k)
    assert c.reply["status"] == "error"
    for w in words:
        assert w in c.reply["evalue"], c.reply["evalue"]
    assert "epoch 1/" not in c.text  # no training started
    if "AWS_SECRET_ACCESS_KEY" in env_change:
        assert env_change["AWS_SECRET_ACCESS_KEY"] not in str(c.reply) + c.text


def test_kiln_run_twice_continues(env, tmp_path):
    """A stage notebook run with `kiln run` on one machine, then again on a "new" one
    (staging gone): the second run continues from the store."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("epochs = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(SETUP[0]), nbformat.v4.new_code_cell(SETUP[1]),
                nbformat.v4.new_code_cell(f"{TRAIN} --epochs $epochs "
                                          f"--run-dir s3://{BUCKET}/runs/nb")]
    src = tmp_path / "stage.ipynb"
    nbformat.write(nb, str(src))
    outs = []
    for i, epochs in enumerate((1, 2)):
        shutil.rmtree(os.environ["KILN_STAGING_DIR"], ignore_errors=True)
        out = tmp_path / f"out{i}.ipynb"
        p = subprocess.run([KILN, "run", str(src), "-o", str(out), "-p", "epochs", str(epochs)],
                           capture_output=True, text=True, timeout=300)
        text = out.read_text() if out.exists() else ""
        env["texts"].append(p.stdout + p.stderr + text)
        assert p.returncode == 0, p.stderr
        outs.append(text)
    assert f"newest: step {STEPS_PER_EPOCH})" in outs[0]
    assert "holds this run (same options): continuing it" in outs[1]
    assert f"newest: step {2 * STEPS_PER_EPOCH})" in outs[1]


def test_other_options_go_to_v2_in_the_store(env):
    """--resume auto with other options than the store's run: the run goes to URL-v2
    (the store's run untouched); the same cell on a new machine continues URL-v2, which
    it can only know from the store; --resume never on a URL holding a run is refused."""
    url = f"s3://{BUCKET}/runs/nb"  # holds test_kiln_run_twice_continues' run (lr 0.003)
    before = keys(env, "runs/nb/")
    other = TRAIN.replace("--lr 0.003", "--lr 0.002")
    for epochs in (1, 2):
        shutil.rmtree(os.environ["KILN_STAGING_DIR"], ignore_errors=True)
        k = kernel(env)
        for c in SETUP:
            cell(env, k, c)
        c = cell(env, k, f"{other} --epochs {epochs} --run-dir {url}")
        close(env, k)
        assert f"{url} holds a run with other options: " in c.text, c.text
        assert "--lr 0.002 (checkpoint 0.003)" in c.text
        if epochs == 1:
            assert f"This run goes to {url}-v2 (the run in {url} is kept" in c.text, c.text
        else:
            assert f"{url}-v2 holds this run (same options): continuing it" in c.text, c.text
        assert f"uploaded: {url}-v2 (newest: step {epochs * STEPS_PER_EPOCH})" in c.text
        assert f"run directory: {url}-v2 (staged in " in c.text, c.text
    after = keys(env, "runs/nb/")
    assert after == before
    k = kernel(env)
    for c in SETUP:
        cell(env, k, c)
    c = cell(env, k, f"{TRAIN} --epochs 3 --run-dir {url} --resume never", ok=False)
    assert c.reply["ename"] == "FileExistsError", c.reply
    assert f"{url} holds a run" in c.reply["evalue"] and "HINT" in c.reply["evalue"]
    assert "epoch 1/" not in c.text
    # the store's run, loaded and evaluated in a kernel that never trained it
    c = cell(env, k, f"%checkpoint load {url}-v2")
    assert "Loaded model 'net'" in c.text and f"step {2 * STEPS_PER_EPOCH}," in c.text, c.text
    c = cell(env, k, "%evaluate net")
    close(env, k)
    assert "accuracy" in c.text, c.text


def test_checkpoint_list_show_save_on_s3(env):
    """%checkpoint list / show / save / load with s3:// URLs: the store's complete
    checkpoints, incomplete ones with the reason, the newest or a named one fetched and
    verified (a corrupt one is an error naming it), a save uploaded with its manifest
    and loaded in a fresh kernel."""
    url = f"s3://{BUCKET}/runs/ck"
    k = kernel(env)
    for c in SETUP:
        cell(env, k, c)
    cell(env, k, f"{TRAIN} --epochs 1 --run-dir {url} --keep 3 --checkpoint-every 8steps")
    # a manifest whose object never arrived: listed as incomplete, never fetched
    env["s3"].put_object(Bucket=BUCKET, Key="runs/ck/" + ckpt(99) + ".manifest.json",
                         Body=env["s3"].get_object(Bucket=BUCKET, Key="runs/ck/" + ckpt(16) +
                                                   ".manifest.json")["Body"].read()
                         .replace(ckpt(16).encode(), ckpt(99).encode()))
    # and an object whose manifest never came (a process killed between the two)
    env["s3"].put_object(Bucket=BUCKET, Key="runs/ck/" + ckpt(98), Body=b"x" * 100)
    listed = cell(env, k, "%checkpoint list").text  # defaults to the run's URL
    assert f"{url}: 2 complete checkpoints" in listed, listed
    rows = {ln.split()[0]: ln for ln in listed.splitlines()[2:] if ln.strip()}
    assert rows[ckpt(8)].split()[1] == "8" and rows[ckpt(16)].split()[-1] == "yes", listed
    assert "NO: its checkpoint object is missing" in rows[ckpt(99) + ".manifest.json"], listed
    assert "NO: no manifest: its upload did not finish" in rows[ckpt(98)], listed
    shown = cell(env, k, f"%checkpoint show {url}").text
    assert f"{url}/{ckpt(16)}: valid Kiln checkpoint" in shown, shown
    assert "model_spec" in shown and "optim." in shown, shown
    shown = cell(env, k, f"%checkpoint show {url}/{ckpt(8)}").text
    assert f"{url}/{ckpt(8)}: valid Kiln checkpoint" in shown, shown
    # save: default (the run's URL) and a named object
    c = cell(env, k, "%checkpoint save")
    assert f"Saved {url}/{ckpt(16)}: model 'net', step 16, with optimiser state" in c.text, c.text
    c = cell(env, k, f"%checkpoint save s3://{BUCKET}/saved/net.safetensors")
    assert f"Saved s3://{BUCKET}/saved/net.safetensors: model 'net', step 16" in c.text, c.text
    keys = {o["Key"] for o in env["s3"].list_objects_v2(Bucket=BUCKET,
                                                        Prefix="saved/")["Contents"]}
    assert keys == {"saved/net.safetensors", "saved/net.safetensors.manifest.json"}, keys
    # a corrupt object (same size, one byte changed): detected, named, not loaded
    key = "runs/ck/" + ckpt(8)
    body = bytearray(env["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read())
    body[-5] ^= 0xFF
    env["s3"].put_object(Bucket=BUCKET, Key=key, Body=bytes(body))
    # the staged copy is still the one the manifest describes: used as it is, never
    # replaced by the bucket's object
    staged = os.path.join(os.environ["KILN_STAGING_DIR"], BUCKET, "runs", "ck", ckpt(8))
    shown = cell(env, k, f"%checkpoint show {url}/{ckpt(8)}").text
    assert f"{url}/{ckpt(8)}: valid Kiln checkpoint" in shown, shown
    os.remove(staged)
    c = cell(env, k, f"%checkpoint show {url}/{ckpt(8)}", ok=False)
    assert "SHA-256 mismatch" in c.reply["evalue"] and ckpt(8) in c.reply["evalue"], c.reply
    c = cell(env, k, f"%checkpoint show {url}/{ckpt(12)}", ok=False)
    assert c.reply["ename"] == "FileNotFoundError", c.reply
    assert "is not a complete checkpoint" in c.reply["evalue"], c.reply
    close(env, k)
    shutil.rmtree(os.environ["KILN_STAGING_DIR"])
    k = kernel(env)
    c = cell(env, k, f"%checkpoint load s3://{BUCKET}/saved/net.safetensors")
    assert "Loaded model 'net'" in c.text and "step 16," in c.text, c.text
    close(env, k)


def test_results_push_and_pull_with_a_last_writer_check(env):
    """%results --push / --pull: the store as one object; a push never overwrites a copy
    another store pushed meanwhile, a pull never replaces runs that were not pushed;
    --force does, keeping the local store; a URL that holds no results store changes
    nothing."""
    tmp = env["tmp"]
    a, b, c3 = (os.path.join(tmp, n) for n in ("a.sqlite", "b.sqlite", "c.sqlite"))
    url = f"s3://{BUCKET}/shared/results.sqlite"
    db = sqlite3.connect(os.environ["KILN_RESULTS"])
    ids = [i for (i,) in db.execute("SELECT id FROM runs ORDER BY id")]
    db.close()
    assert len(ids) >= 3, ids  # the runs of the tests above
    shutil.copy(os.environ["KILN_RESULTS"], a)
    shutil.copy(os.environ["KILN_RESULTS"], c3)

    def runs(path):
        d = sqlite3.connect(path)
        got = [i for (i,) in d.execute("SELECT id FROM runs ORDER BY id")]
        d.close()
        return got

    k = kernel(env)
    assert "Pushed " + a in cell(env, k, f"%results --push {url} --results {a}").text
    assert "Pulled " + url in cell(env, k, f"%results --pull {url} --results {b}").text
    assert runs(b) == ids
    cell(env, k, f"%results delete {ids[0]} --results {b}")
    cell(env, k, f"%results --push {url} --results {b}")  # b pulled it: its If-Match holds
    # a's copy is no longer the one in the store: its push is refused, nothing lost
    e = cell(env, k, f"%results --push {url} --results {a}", ok=False).reply
    assert e["ename"] == "FileExistsError" and "changed since this store last pushed" in e["evalue"]
    assert f"%results --pull {url}" in e["evalue"], e
    # c never synced: its push would overwrite a copy it never saw
    e = cell(env, k, f"%results --push {url} --results {c3}", ok=False).reply
    assert "exists and this store never pushed or pulled it" in e["evalue"], e
    # a has nothing new: the pull takes b's version
    cell(env, k, f"%results --pull {url} --results {a}")
    assert runs(a) == ids[1:]
    # a with a run of its own (deleted one here): the pull is refused, then forced
    cell(env, k, f"%results delete {ids[1]} --results {a}")
    e = cell(env, k, f"%results --pull {url} --results {a}", ok=False).reply
    assert e["ename"] == "FileExistsError" and "changed since it last pushed" in e["evalue"], e
    assert runs(a) == ids[2:]
    c = cell(env, k, f"%results --pull {url} --results {a} --force")
    assert f"kept as {a}.before-pull" in c.text, c.text
    assert runs(a) == ids[1:] and runs(a + ".before-pull") == ids[2:]
    # an object that is not a results store: an error, the local store untouched
    env["s3"].put_object(Bucket=BUCKET, Key="shared/junk.sqlite", Body=b"not sqlite" * 100)
    e = cell(env, k, f"%results --pull s3://{BUCKET}/shared/junk.sqlite --results {a} --force",
             ok=False).reply
    assert "junk.sqlite" in e["evalue"], e
    assert runs(a) == ids[1:]
    e = cell(env, k, f"%results --pull s3://{BUCKET}/shared/none.sqlite --results {a}",
             ok=False).reply
    assert "no such object" in e["evalue"], e
    close(env, k)


def test_kiln_run_with_notebooks_in_the_store(env, tmp_path):
    """`kiln run s3://.../stage.ipynb` twice: the notebook read from the store, the
    result written there (default NAME.out.ipynb, or -o URL), and the second run
    continues the first one's s3:// run directory."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("epochs = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(SETUP[0]), nbformat.v4.new_code_cell(SETUP[1]),
                nbformat.v4.new_code_cell(f"{TRAIN} --epochs $epochs "
                                          f"--run-dir s3://{BUCKET}/runs/nbs")]
    env["s3"].put_object(Bucket=BUCKET, Key="nbs/stage.ipynb", Body=nbformat.writes(nb).encode())
    src = f"s3://{BUCKET}/nbs/stage.ipynb"
    outs = []
    for epochs, out in ((1, []), (2, ["-o", f"s3://{BUCKET}/nbs/second.ipynb"])):
        shutil.rmtree(os.environ["KILN_STAGING_DIR"], ignore_errors=True)
        p = subprocess.run([KILN, "run", src, "-p", "epochs", str(epochs)] + out,
                           capture_output=True, text=True, timeout=300)
        env["texts"].append(p.stdout + p.stderr)
        assert p.returncode == 0, p.stderr
        key = "nbs/second.ipynb" if out else "nbs/stage.out.ipynb"
        assert f"wrote s3://{BUCKET}/{key}" in p.stderr, p.stderr
        text = env["s3"].get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
        env["texts"].append(text)
        assert nbformat.reads(text, as_version=4).cells[0].source == "epochs = 1"
        outs.append(text)
    assert f"newest: step {STEPS_PER_EPOCH})" in outs[0]
    assert "holds this run (same options): continuing it" in outs[1]
    assert f"newest: step {2 * STEPS_PER_EPOCH})" in outs[1]
    # a notebook that is not there: exit 2, nothing run
    p = subprocess.run([KILN, "run", f"s3://{BUCKET}/nbs/none.ipynb"], capture_output=True,
                       text=True, timeout=60)
    env["texts"].append(p.stdout + p.stderr)
    assert p.returncode == 2 and "no such object" in p.stderr and "cell 1" not in p.stderr


def png(shade):
    import io
    from PIL import Image
    f = io.BytesIO()
    Image.new("RGB", (8, 8), (shade, 255 - shade, 40)).save(f, format="PNG")
    return f.getvalue()


def test_dataset_from_the_store(env, tmp_path):
    """%dataset s3://...: an image folder (a prefix) and a .zip, mirrored once into the
    staging directory; a fresh kernel fetches only what changed (by ETag and size) and
    drops what the store no longer has; too large is an error before any download."""
    import io
    import zipfile
    files = {f"{c}/{i}.png": png(40 * i + (0 if c == "cat" else 5))
             for c in ("cat", "dog") for i in range(4)}
    for rel, body in files.items():
        env["s3"].put_object(Bucket=BUCKET, Key="data/pets/" + rel, Body=body)
    z = io.BytesIO()
    with zipfile.ZipFile(z, "w") as zf:
        for rel, body in files.items():
            zf.writestr("pets/" + rel, body)
    env["s3"].put_object(Bucket=BUCKET, Key="data/pets.zip", Body=z.getvalue())
    url = f"s3://{BUCKET}/data/pets"
    load = f"%dataset {url} --size 8 --samples 0"

    def fresh(code, ok=True, **env_change):
        k = kernel(env, **env_change)
        c = cell(env, k, code, ok=ok)
        close(env, k)
        return c

    c = fresh(load)
    assert f"{url}: 8 objects" in c.text and "fetched 8 " in c.text, c.text
    assert f"Data set {url} (from " in c.text and "train 8," in c.text, c.text
    assert "0=cat 1=dog" in c.text, c.text
    # trained on it into the store; resumed on a "new machine": the data set comes back
    k = kernel(env)
    c = cell(env, k, load)
    assert "fetched 0 " in c.text and "the local copy is up to date" in c.text, c.text
    cell(env, k, "%%model pets\nflatten\ndense 2")
    cell(env, k, f"%train pets --batch 4 --epochs 1 --seed 1 --run-dir s3://{BUCKET}/runs/pets")
    close(env, k)
    shutil.rmtree(os.environ["KILN_STAGING_DIR"])
    k = kernel(env)
    # a checkpoint never chooses what is fetched: the hint says how to load it as it was
    e = cell(env, k, f"%resume s3://{BUCKET}/runs/pets --epochs 2", ok=False).reply
    assert f"(%dataset {url} --val 0 --subset 0 --size 8x8)" in e["evalue"], e
    c = cell(env, k, load)
    assert f"{url}: 8 objects" in c.text and "fetched 8 " in c.text, c.text
    c = cell(env, k, f"%resume s3://{BUCKET}/runs/pets --epochs 2")
    close(env, k)
    assert f"uploaded: s3://{BUCKET}/runs/pets (newest: step 4)" in c.text, c.text
    # one image replaced, one gone, one local file damaged (truncated): only those
    env["s3"].put_object(Bucket=BUCKET, Key="data/pets/cat/0.png", Body=png(200))
    env["s3"].delete_object(Bucket=BUCKET, Key="data/pets/dog/3.png")
    local = os.path.join(os.environ["KILN_STAGING_DIR"], BUCKET, "data", "pets")
    with open(os.path.join(local, "dog", "1.png"), "r+b") as f:
        f.truncate(10)
    c = fresh(load)
    assert f"{url}: 7 objects" in c.text and "fetched 2 " in c.text, c.text
    assert "removed files the store no longer has" in c.text and "train 7," in c.text, c.text
    assert not os.path.exists(os.path.join(local, "dog", "3.png"))
    with open(os.path.join(local, "cat", "0.png"), "rb") as f:
        assert f.read() == png(200)
    # a download damaged on the way: detected (MD5 against the ETag), named, not kept
    px = Proxy(env["port"])
    try:
        os.unlink(os.path.join(local, "cat", "1.png"))
        px.on_request(b"/data/pets/cat/1.png HTTP", 1, "flip")
        c = fresh(load, ok=False, AWS_ENDPOINT_URL=px.url)
        assert px.fired.is_set()
        assert "MD5" in c.reply["evalue"] and "data/pets/cat/1.png" in c.reply["evalue"], c.reply
        assert "corrupt" in c.reply["evalue"], c.reply
        assert not os.path.exists(os.path.join(local, "cat", "1.png"))
        c = fresh(load, AWS_ENDPOINT_URL=px.url)
        assert "fetched 1 " in c.text and "train 7," in c.text, c.text
    finally:
        px.down()
    # the archive: one object, read as a zip of the folder
    c = fresh(f"%dataset {url}.zip --size 8 --samples 0")
    assert f"{url}.zip: 1 object" in c.text and "train 8," in c.text, c.text
    # bounded: refused before anything is fetched
    shutil.rmtree(local)
    c = fresh(load, ok=False, KILN_S3_DATA_MAX_GB="1e-9")
    assert "more than this machine mirrors" in c.reply["evalue"], c.reply
    assert "KILN_S3_DATA_MAX_GB" in c.reply["evalue"] and not os.path.exists(local)
    c = fresh(f"%dataset s3://{BUCKET}/data/none --samples 0", ok=False)
    assert f"nothing at s3://{BUCKET}/data/none" in c.reply["evalue"], c.reply


@pytest.mark.parametrize("case,env_change,bucket,words", [
    ("wrong secret", {"AWS_SECRET_ACCESS_KEY": "WRONGwrongWRONGwrongWRONGwrong0123456789"},
     BUCKET, ["refused the credentials", "AWS_SECRET_ACCESS_KEY"]),
    ("missing bucket", {}, "no-such-bucket", ["bucket s3://no-such-bucket does not exist"]),
    ("bad endpoint", {"AWS_ENDPOINT_URL": "http://127.0.0.1:%d" % free_port()}, BUCKET,
     ["cannot reach the object store", "AWS_ENDPOINT_URL"]),
])
def test_store_problems_are_clear_errors_everywhere(env, tmp_path, case, env_change, bucket,
                                                    words):
    """The three usual mistakes, at every other entry point that takes an s3:// URL:
    %dataset, %checkpoint list/show/load/save, %results --push/--pull, kiln run (both
    ends)."""
    k = kernel(env, **env_change)
    for c in SETUP:
        cell(env, k, c)
    cell(env, k, f"{TRAIN} --epochs 1")  # a model for %checkpoint save
    results = os.path.join(env["tmp"], "results.sqlite")
    for code in (f"%dataset s3://{bucket}/data/pets --samples 0",
                 f"%checkpoint list s3://{bucket}/runs/ck",
                 f"%checkpoint show s3://{bucket}/runs/ck",
                 f"%checkpoint load s3://{bucket}/runs/ck",
                 f"%checkpoint save s3://{bucket}/saved/err.safetensors",
                 f"%results --push s3://{bucket}/shared/err.sqlite --results {results}",
                 f"%results --pull s3://{bucket}/shared/err.sqlite --results {results}"):
        e = cell(env, k, code, ok=False).reply
        for w in words:
            assert w in e["evalue"], (code, e["evalue"])
    close(env, k)
    nb = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), str(nb))
    run_env = dict(os.environ, **env_change)
    for args in ([f"s3://{bucket}/nbs/stage.ipynb"], [str(nb), "-o", f"s3://{bucket}/nbs/x.ipynb"]):
        p = subprocess.run([KILN, "run"] + args, capture_output=True, text=True, timeout=60,
                           env=run_env)
        env["texts"].append(p.stdout + p.stderr)
        assert p.returncode == 2 and "cell 1" not in p.stderr, p.stderr
        for w in words:
            assert w in p.stderr, (args, p.stderr)
    if "AWS_SECRET_ACCESS_KEY" in env_change:
        assert all(env_change["AWS_SECRET_ACCESS_KEY"] not in t for t in env["texts"])
# A model whose checkpoint (6.7 MB with the Adam state) is more than one 5 MiB part, so
# its upload is a multipart upload with KILN_S3_PART_MB=5; 8 steps an epoch.
BIG = ["%dataset fashion-mnist --subset 256 --val 32 --samples 0",
       "%%model big\nflatten\ndense 700\nrelu\ndense 10"]
BIG_TRAIN = "%train big --batch 32 --seed 7 --lr 0.001 --checkpoint-every 1epoch"
BIG_EPOCH = 256 // 32


@pytest.fixture(scope="module")
def big_ref(env):
    """The big model's 3 epochs without a stop, locally: the run directory."""
    rd = train_locally(env, BIG, f"{BIG_TRAIN} --epochs 3", "big-ref")
    assert os.path.getsize(os.path.join(rd, ckpt(3 * BIG_EPOCH))) > 5 << 20
    return rd


def test_kill9_mid_multipart_upload_then_resume_from_the_newest_complete(env, big_ref):
    """The kernel dies (SIGKILL) while epoch 2's checkpoint is half uploaded: part 1 is
    in the store, part 2 is held by the proxy. Which upload is cut is fixed by the order
    of requests (the second upload's part 2), not by timing. On a new machine (staging
    gone) %resume continues from epoch 1's, the newest complete checkpoint, and the run
    ends bit for bit as the uninterrupted one."""
    url, pre = f"s3://{BUCKET}/runs/kill", "runs/kill/"
    px = Proxy(env["port"])
    px.on_request(b"partNumber=2&", 2, "stall")
    k = kernel(env, AWS_ENDPOINT_URL=px.url, KILN_S3_PART_MB="5")
    try:
        for code in BIG:
            cell(env, k, code)
        k.kc.execute(f"{BIG_TRAIN} --epochs 2 --run-dir {url} --keep 3")
        assert px.fired.wait(120), "the second multipart upload never reached part 2"
        os.kill(k.pid, signal.SIGKILL)
        k.km.provisioner.process.wait(10)
    finally:
        px.down()
        env["logs"].append(k.stderr())
        k.kc.stop_channels()
        k.km.shutdown_kernel(now=True)
        os.unlink(k.log.name)
        shutil.rmtree(k.ipc_dir, ignore_errors=True)
    e1, e2 = BIG_EPOCH, 2 * BIG_EPOCH
    uploads = env["s3"].list_multipart_uploads(Bucket=BUCKET, Prefix=pre)
    assert [u["Key"] for u in uploads.get("Uploads", [])] == [pre + ckpt(e2)]
    assert keys(env, pre) == [pre + ckpt(e1), pre + ckpt(e1) + ".manifest.json"]
    shutil.rmtree(os.environ["KILN_STAGING_DIR"])
    k = kernel(env)
    c = cell(env, k, f"%resume {url} --epochs 3")
    close(env, k)
    assert f"step {e1} of {3 * BIG_EPOCH}" in c.text, c.text
    assert f"uploaded: {url} (newest: step {3 * BIG_EPOCH})" in c.text, c.text
    same_weights(env, pre + ckpt(3 * BIG_EPOCH),
                 os.path.join(big_ref, ckpt(3 * BIG_EPOCH)))


def test_a_corrupt_object_is_skipped_at_resume(env, big_ref):
    """runs/kill (the test above) holds epochs 1, 2 and 3's checkpoints. One byte of the
    last one's object flipped (same size, manifest untouched): %resume on a new machine
    says it skipped it and why, continues from epoch 2's, and ends as the uninterrupted
    run."""
    url, pre = f"s3://{BUCKET}/runs/kill", "runs/kill/"
    last = 3 * BIG_EPOCH
    assert pre + ckpt(last) + ".manifest.json" in keys(env, pre)
    body = bytearray(env["s3"].get_object(Bucket=BUCKET, Key=pre + ckpt(last))["Body"].read())
    body[len(body) // 2] ^= 0x40
    env["s3"].put_object(Bucket=BUCKET, Key=pre + ckpt(last), Body=bytes(body))
    shutil.rmtree(os.environ["KILN_STAGING_DIR"], ignore_errors=True)
    k = kernel(env)
    c = cell(env, k, f"%resume {url} --epochs 3")
    close(env, k)
    said = [ln for ln in c.text.splitlines() if ln.startswith("warning: skipped checkpoint")]
    assert len(said) == 1 and f"{url}/{ckpt(last)}: SHA-256 mismatch" in said[0], c.text
    assert f"step {2 * BIG_EPOCH} of {last}" in c.text, c.text
    same_weights(env, pre + ckpt(last), os.path.join(big_ref, ckpt(last)))


def test_store_outage_mid_run_training_goes_on_and_uploads_catch_up(env):
    """The store goes away at the first upload (the proxy goes down on the first PUT)
    and stays away for the whole training: every step still runs, the progress line
    shows the uploads pending; when the end-of-run wait begins the store comes back on
    the same port, the queue catches up, and every checkpoint staged locally is in the
    store, byte for byte: nothing exists only locally."""
    url, pre = f"s3://{BUCKET}/runs/outage", "runs/outage/"
    px = Proxy(env["port"])
    px.on_request(b"PUT ", 1, "down")
    k = kernel(env, AWS_ENDPOINT_URL=px.url)
    frames, back = [], []

    def on_text(text):
        frames.append(text)
        if not back and re.search(r"uploading \d+ checkpoints? to ", text):  # end-of-run wait
            back.append(px.fired.wait(60))  # the first upload has taken it down
            px.up()

    try:
        for code in SETUP:
            cell(env, k, code)
        c = collect(k, k.kc.execute(f"{TRAIN} --epochs 2 --run-dir {url} --keep 4 "
                                    "--checkpoint-every 8steps"), on_text=on_text)
        env["texts"].append(c.text + str(c.reply) + "".join(frames))
        staging = c.text.split(f"run directory: {url} (staged in ")[1].split(")")[0]
    finally:
        px.down()
        close(env, k)
    assert c.reply["status"] == "ok", c.reply
    assert back == [True], "the store was not down when training ended"
    last = 2 * STEPS_PER_EPOCH
    # while it was down, training went on to the end, its progress line showing the
    # uploads pending
    assert f"steps {last} (epoch 2 of 2)" in c.text, c.text
    assert any(f"step {last}/{last}" in f and re.search(r"upload: [1-9]\d* pending", f)
               for f in frames), frames[-3:]
    assert f"uploaded: {url} (newest: step {last})" in c.text, c.text
    assert "only local" not in c.text
    steps = (8, 16, 24, 32)
    assert keys(env, pre) == sorted(pre + ckpt(s) + x for s in steps
                                    for x in ("", ".manifest.json"))
    for s in steps:
        with open(os.path.join(staging, ckpt(s)), "rb") as f:
            local = f.read()
        assert env["s3"].get_object(Bucket=BUCKET, Key=pre + ckpt(s))["Body"].read() == local


def test_the_secret_is_nowhere(env):
    """Runs last: every output, kernel log and results-store row of this module."""
    secret = env["creds"]["AWS_SECRET_ACCESS_KEY"]
    assert len(env["texts"]) >= 8
    for t in env["texts"]:
        assert secret not in t
    assert len(env["logs"]) >= 6
    for log in env["logs"]:
        assert secret not in log
    db = sqlite3.connect(os.environ.get("KILN_RESULTS") or
                         os.path.join(env["tmp"], "results.sqlite"))
    rows = 0
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
        for row in db.execute(f"SELECT * FROM \"{table}\""):
            rows += 1
            assert secret not in repr(row)
    assert rows > 0
    for root, _, files in os.walk(env["tmp"]):
        for n in files:
            with open(os.path.join(root, n), "rb") as f:
                assert secret.encode() not in f.read(), n
