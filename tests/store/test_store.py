"""The object-store layer (runtime/store/) against a real S3 server on 127.0.0.1:
moto's server, started and stopped here, with authentication on, so every request
Kiln makes is checked against libcurl's AWS SigV4 signature. Kiln is driven through
store_tool; boto3 (which comes with moto) is the independent side that checks what
Kiln stored and stores what Kiln reads. Every output is scanned for the secret key."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from moto_util import BUCKET, Proxy, free_port, start_store  # noqa: E402

TOOL = os.environ.get("STORE_TOOL", "build/tests/store/store_tool")


@pytest.fixture(scope="module")
def store():
    srv, st = start_store()
    st["outputs"] = []
    try:
        yield st
    finally:
        srv.stop()


def tool(st, *args, env=None, ok=True):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    e.update(AWS_ENDPOINT_URL=st["url"], AWS_REGION="us-east-1", HOME="/nonexistent")
    e.update(st["creds"])
    e.update(env or {})
    e = {k: v for k, v in e.items() if v is not None}
    p = subprocess.run([TOOL, *args], capture_output=True, text=True, env=e, timeout=120)
    st["outputs"].append(p.stdout + p.stderr)
    assert (p.returncode == 0) == ok, (p.returncode, p.stdout, p.stderr)
    return p


def test_small_object_round_trip(store, tmp_path):
    src = tmp_path / "a.bin"
    src.write_bytes(os.urandom(100_000))
    tool(store, f"s3://{BUCKET}/runs", "put", "runs/a.bin", str(src))
    got = store["s3"].get_object(Bucket=BUCKET, Key="runs/a.bin")["Body"].read()
    assert got == src.read_bytes()
    dst = tmp_path / "back.bin"
    tool(store, f"s3://{BUCKET}", "get", "runs/a.bin", str(dst))
    assert dst.read_bytes() == src.read_bytes()
    assert not (tmp_path / "back.bin.part").exists()


def test_large_object_is_a_multipart_upload(store, tmp_path):
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(12 * 1024 * 1024 + 12345))
    tool(store, f"s3://{BUCKET}", "put", "big.bin", str(src), env={"KILN_S3_PART_MB": "5"})
    head = store["s3"].head_object(Bucket=BUCKET, Key="big.bin")
    assert head["ContentLength"] == src.stat().st_size
    assert head["ETag"].strip('"').endswith("-3"), head["ETag"]  # 3 parts of 5 MiB
    got = store["s3"].get_object(Bucket=BUCKET, Key="big.bin")["Body"].read()
    assert got == src.read_bytes()
    dst = tmp_path / "big.back"
    tool(store, f"s3://{BUCKET}", "get", "big.bin", str(dst))
    assert dst.read_bytes() == src.read_bytes()
    # no upload left open
    assert not store["s3"].list_multipart_uploads(Bucket=BUCKET).get("Uploads")


def test_a_failed_part_aborts_the_upload(store, tmp_path):
    """Parts go up several at a time; one refused by the store (part 2 of 4, while the
    others are in flight) fails the upload with the store's reason, and the upload is
    aborted: no object, no upload left open."""
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(17 * 1024 * 1024))
    px = Proxy(store["port"])
    px.on_request(b"partNumber=2&", 1, "refuse")
    try:
        p = tool(store, f"s3://{BUCKET}", "put", "refused.bin", str(src), ok=False,
                 env={"KILN_S3_PART_MB": "5", "AWS_ENDPOINT_URL": px.url})
    finally:
        px.down()
    assert px.fired.is_set()
    assert "uploading 'refused.bin'" in p.stderr and "InvalidPart" in p.stderr, p.stderr
    listed = store["s3"].list_objects_v2(Bucket=BUCKET, Prefix="refused").get("Contents")
    assert not listed
    assert not store["s3"].list_multipart_uploads(Bucket=BUCKET).get("Uploads")


def test_list_cat_and_delete(store):
    s3 = store["s3"]
    for k in ["ls/x/1", "ls/x/2", "ls/y", "other"]:
        s3.put_object(Bucket=BUCKET, Key=k, Body=k.encode() * 3)
    tool(store, f"s3://{BUCKET}", "putmem", "ls/x/odd name+&.txt", "hello <&> world")
    out = tool(store, f"s3://{BUCKET}", "ls", "ls/").stdout.splitlines()
    assert out == ["18 ls/x/1", "18 ls/x/2", "15 ls/x/odd name+&.txt", "12 ls/y"]
    p = tool(store, f"s3://{BUCKET}", "cat", "ls/x/odd name+&.txt")
    assert p.stdout == "hello <&> world"
    tool(store, f"s3://{BUCKET}", "rm", "ls/x/1")
    assert tool(store, f"s3://{BUCKET}", "ls", "ls/x/").stdout.split() == [
        "18", "ls/x/2", "15", "ls/x/odd", "name+&.txt"]
    p = tool(store, f"s3://{BUCKET}", "cat", "ls/x/1", ok=False)
    assert "no such object" in p.stderr


def test_credentials_from_a_profile(store, tmp_path):
    cred = tmp_path / "credentials"
    cred.write_text("[default]\naws_access_key_id = nope\naws_secret_access_key = nope\n\n"
                    f"[kiln]\naws_access_key_id = {store['creds']['AWS_ACCESS_KEY_ID']}\n"
                    f"aws_secret_access_key = {store['creds']['AWS_SECRET_ACCESS_KEY']}\n")
    env = {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None,
           "AWS_SHARED_CREDENTIALS_FILE": str(cred), "AWS_PROFILE": "kiln"}
    p = tool(store, f"s3://{BUCKET}/p/", "open", env=env)
    assert p.stdout.strip() == f"ok s3://{BUCKET} prefix 'p' at {store['url']}"
    env["AWS_PROFILE"] = "default"  # the wrong pair: refused, naming the profile
    p = tool(store, f"s3://{BUCKET}", "open", env=env, ok=False)
    assert "refused the credentials" in p.stderr and "profile 'default'" in p.stderr


def test_wrong_secret_is_a_clear_error(store):
    wrong = "WRONGsecretWRONGsecretWRONGsecret123456"
    p = tool(store, f"s3://{BUCKET}", "open", env={"AWS_SECRET_ACCESS_KEY": wrong}, ok=False)
    assert "refused the credentials" in p.stderr
    assert "AWS_SECRET_ACCESS_KEY" in p.stderr  # names what to fix
    assert wrong not in p.stderr
    key = store["creds"]["AWS_ACCESS_KEY_ID"]
    assert key not in p.stderr and "****" + key[-4:] in p.stderr
    p = tool(store, f"s3://{BUCKET}", "open", env={"AWS_ACCESS_KEY_ID": "AKIANOSUCHKEY0000000"},
             ok=False)
    assert "refused the credentials" in p.stderr


def test_missing_bucket_is_a_clear_error(store):
    p = tool(store, "s3://no-such-bucket/x", "open", ok=False)
    assert "bucket s3://no-such-bucket does not exist" in p.stderr
    assert "HINT" in p.stderr


def test_bad_endpoint_is_a_clear_error(store):
    p = tool(store, f"s3://{BUCKET}", "open", env={"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"},
             ok=False)
    assert "cannot reach the object store" in p.stderr and "AWS_ENDPOINT_URL" in p.stderr


def test_no_credentials_and_bad_urls(store):
    p = tool(store, f"s3://{BUCKET}", "open",
             env={"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None}, ok=False)
    assert "no credentials" in p.stderr and "AWS_ACCESS_KEY_ID" in p.stderr
    secret = store["creds"]["AWS_SECRET_ACCESS_KEY"]
    p = tool(store, f"s3://AKIA:{secret}@{BUCKET}/x", "open", ok=False)
    assert "must not carry credentials" in p.stderr and secret not in p.stderr
    p = tool(store, "s3://a/x", "open", ok=False)
    assert "not a bucket name" in p.stderr


def make(st, path, step, kb=64):
    p = subprocess.run([TOOL, "make", str(path), str(step), str(kb)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    return path


def ckpt_name(step):
    return "ckpt-step%08d.safetensors" % step


def test_checkpoints_count_only_with_a_manifest_and_fall_back(store, tmp_path):
    s3, url = store["s3"], f"s3://{BUCKET}/runs/one"
    local = {}
    for step in (100, 200, 300):
        local[step] = make(store, tmp_path / ckpt_name(step), step)
        tool(store, url, "ckpt-push", str(local[step]))
    man = json.loads(s3.get_object(Bucket=BUCKET, Key="runs/one/" + ckpt_name(300) +
                                   ".manifest.json")["Body"].read())
    data = local[300].read_bytes()
    assert man["step"] == 300 and man["parts"][0]["size"] == len(data)
    assert man["parts"][0]["sha256"] == hashlib.sha256(data).hexdigest()
    # a checkpoint object without its manifest (a crash mid-upload) is never picked,
    # nor is a multipart upload that was never completed
    s3.put_object(Bucket=BUCKET, Key="runs/one/" + ckpt_name(400), Body=data)
    mp = s3.create_multipart_upload(Bucket=BUCKET, Key="runs/one/" + ckpt_name(500))
    s3.upload_part(Bucket=BUCKET, Key="runs/one/" + ckpt_name(500), PartNumber=1,
                   UploadId=mp["UploadId"], Body=b"x" * (5 << 20))
    out = tool(store, url, "ckpt-ls").stdout.splitlines()
    assert [line.split()[0] for line in out] == ["100", "200", "300", "skipped:"]
    assert out[3] == f"skipped: {ckpt_name(400)}: no manifest: its upload did not finish " \
        "(or is under way)"
    fetched = tmp_path / "fetch1"
    out = tool(store, url, "ckpt-fetch", str(fetched)).stdout
    assert out.splitlines()[0] == f"fetched {fetched}/{ckpt_name(300)}"
    assert (fetched / ckpt_name(300)).read_bytes() == data
    # corrupt the newest object (same size, one byte): detected, skipped, the next
    # older one is fetched
    bad = bytearray(data)
    bad[len(bad) // 2] ^= 0x40
    s3.put_object(Bucket=BUCKET, Key="runs/one/" + ckpt_name(300), Body=bytes(bad))
    fetched = tmp_path / "fetch2"
    out = tool(store, url, "ckpt-fetch", str(fetched)).stdout
    assert out.splitlines()[0] == f"fetched {fetched}/{ckpt_name(200)}"
    assert f"skipped: {ckpt_name(300)}: SHA-256 mismatch" in out
    assert (fetched / ckpt_name(200)).read_bytes() == local[200].read_bytes()
    assert not (fetched / ckpt_name(300)).exists()
    # a manifest whose object is gone (or shorter) is incomplete, and said so
    s3.put_object(Bucket=BUCKET, Key="runs/one/" + ckpt_name(200), Body=b"short")
    out = tool(store, url, "ckpt-ls").stdout
    assert out.splitlines()[:2] == [f"100 {len(local[100].read_bytes())} {ckpt_name(100)}",
                                    f"300 {len(data)} {ckpt_name(300)}"]
    assert "another size than the manifest" in out
    fetched = tmp_path / "fetch3"
    out = tool(store, url, "ckpt-fetch", str(fetched)).stdout
    assert out.splitlines()[0] == f"fetched {fetched}/{ckpt_name(100)}"


def test_nothing_valid_is_an_error_listing_what_was_examined(store, tmp_path):
    url = f"s3://{BUCKET}/runs/empty"
    p = tool(store, url, "ckpt-fetch", str(tmp_path / "f"), ok=False)
    assert "no complete, valid checkpoint under s3://kiln-test/runs/empty" in p.stderr
    make(store, tmp_path / ckpt_name(7), 7)
    tool(store, url, "ckpt-push", str(tmp_path / ckpt_name(7)))
    store["s3"].put_object(Bucket=BUCKET, Key="runs/empty/" + ckpt_name(7) + ".manifest.json",
                           Body=b"{not json")
    p = tool(store, url, "ckpt-fetch", str(tmp_path / "f"), ok=False)
    assert "manifest is not JSON" in p.stderr


def test_a_manifest_names_only_its_own_object(store, tmp_path):
    """A manifest comes from whoever can write to the bucket: its part name becomes a
    local file name and a key, so it must be the manifest's own object, a plain name."""
    s3, url = store["s3"], f"s3://{BUCKET}/runs/names"
    data = make(store, tmp_path / ckpt_name(5), 5).read_bytes()
    tool(store, url, "ckpt-push", str(tmp_path / ckpt_name(5)))
    man = json.loads(s3.get_object(Bucket=BUCKET, Key="runs/names/" + ckpt_name(5) +
                                   ".manifest.json")["Body"].read())
    # a newer manifest that points at the older object, and one whose part is ".."
    # (with an object of that key and size, so only the name is wrong)
    man["step"] = 9
    s3.put_object(Bucket=BUCKET, Key="runs/names/" + ckpt_name(9) + ".manifest.json",
                  Body=json.dumps(man).encode())
    man["parts"][0]["key"] = ".."
    s3.put_object(Bucket=BUCKET, Key="runs/names/...manifest.json", Body=json.dumps(man).encode())
    s3.put_object(Bucket=BUCKET, Key="runs/names/..", Body=data)
    # an object name with control characters cannot hide or forge text in the report
    s3.put_object(Bucket=BUCKET, Key="runs/names/x\rfetched evil\x1b[8m.manifest.json",
                  Body=b"{not json")
    out = tool(store, url, "ckpt-ls").stdout
    assert out.splitlines()[0] == f"5 {len(data)} {ckpt_name(5)}"
    assert "x?fetched evil?[8m.manifest.json: manifest is not JSON" in out
    assert "\x1b" not in out and "\r" not in out
    assert f"{ckpt_name(9)}.manifest.json: its manifest names another object" in out
    assert "...manifest.json: manifest's part is not a plain file name" in out
    fetched = tmp_path / "fetched"
    out = tool(store, url, "ckpt-fetch", str(fetched)).stdout
    assert out.splitlines()[0] == f"fetched {fetched}/{ckpt_name(5)}"
    assert os.listdir(fetched) == [ckpt_name(5)]


def test_a_damaged_local_file_is_never_uploaded(store, tmp_path):
    path = make(store, tmp_path / ckpt_name(9), 9)
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 1
    path.write_bytes(bytes(raw))
    p = tool(store, f"s3://{BUCKET}/runs/dmg", "ckpt-push", str(path), ok=False)
    assert "checksum mismatch" in p.stderr
    assert "Contents" not in store["s3"].list_objects_v2(Bucket=BUCKET, Prefix="runs/dmg/")


def test_prune_keeps_the_newest_complete(store, tmp_path):
    url = f"s3://{BUCKET}/runs/prune"
    for step in (1, 2, 3, 4):
        tool(store, url, "ckpt-push", str(make(store, tmp_path / ckpt_name(step), step)))
    store["s3"].put_object(Bucket=BUCKET, Key="runs/prune/" + ckpt_name(5), Body=b"partial")
    assert tool(store, url, "ckpt-prune", "2").stdout.strip() == "deleted 2"
    keys = sorted(o["Key"] for o in store["s3"].list_objects_v2(
        Bucket=BUCKET, Prefix="runs/prune/")["Contents"])
    assert keys == ["runs/prune/" + n for n in (
        ckpt_name(3), ckpt_name(3) + ".manifest.json", ckpt_name(4),
        ckpt_name(4) + ".manifest.json", ckpt_name(5))]
    assert tool(store, url, "ckpt-prune", "0").stdout.strip() == "deleted 1"  # keeps >= 1
    out = tool(store, url, "ckpt-ls").stdout.splitlines()
    assert [line.split()[0] for line in out] == ["4", "skipped:"]  # the partial one, named
    assert ckpt_name(5) + ": no manifest" in out[1]


def tool_env(st, **extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    e.update(AWS_ENDPOINT_URL=st["url"], AWS_REGION="us-east-1", HOME="/nonexistent")
    e.update(st["creds"])
    e.update(extra)
    return e


class Uploader:
    """store_tool's stdin-driven background uploader."""

    def __init__(self, st, url, keep, cap, endpoint):
        self.st = st
        self.p = subprocess.Popen([TOOL, url, "sync", str(keep), str(cap)], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  env=tool_env(st, AWS_ENDPOINT_URL=endpoint))
        assert self.p.stdout.readline().strip() == "ready"

    def cmd(self, line, until=None):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = [self.p.stdout.readline().rstrip("\n")]
        while until and not out[-1].startswith(until):
            out.append(self.p.stdout.readline().rstrip("\n"))
        self.st["outputs"].extend(out)
        return out

    def wait_status(self, pred, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.cmd("status")[0]
            if pred(line):
                return line
            time.sleep(0.1)
        raise AssertionError("status never matched: " + line)

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.close()
        self.p.wait(60)
        err = self.p.stderr.read()
        self.st["outputs"].append(err)
        return err


def test_uploads_go_on_in_the_background_and_catch_up_after_an_outage(store, tmp_path):
    px = Proxy(store["port"])
    url = f"s3://{BUCKET}/runs/outage"
    files = {i: make(store, tmp_path / ckpt_name(i), i) for i in (1, 2, 3, 4)}
    up = Uploader(store, url, keep=2, cap=4, endpoint=px.url)
    try:
        assert up.cmd(f"put {files[1]} 1") == ["queued"]
        up.wait_status(lambda s: s.startswith("pending 0 last 1 "))
        px.down()  # the store goes away mid-run
        t0 = time.time()
        assert up.cmd(f"put {files[2]} 2") == ["queued"]
        assert up.cmd(f"put {files[3]} 3") == ["queued"]
        assert time.time() - t0 < 1  # queueing never waits on the network
        line = up.wait_status(lambda s: " retrying 1 " in s)
        assert line.startswith("pending 2 last 1 ") and "cannot reach" in line
        out = up.cmd("drain 0.3", until="error:")
        assert out[:-1] == [f"local-only {files[2]}", f"local-only {files[3]}"]
        assert "2 checkpoints are not in s3://kiln-test yet (kept locally)" in out[-1]
        assert files[2].exists() and files[3].exists()
        px.up()  # back: the queue catches up
        assert up.cmd(f"put {files[4]} 4") == ["queued"]
        assert up.cmd("drain 60") == ["drained"]
        assert up.cmd("status")[0].startswith("pending 0 last 4 retrying 0")
    finally:
        up.quit()
        px.down()
    # keep=2, pruned only after a newer one was complete
    out = tool(store, url, "ckpt-ls").stdout.split()
    assert out[0::3] == ["3", "4"]


def test_a_full_queue_drops_the_oldest_waiting(store, tmp_path):
    px = Proxy(store["port"])
    url = f"s3://{BUCKET}/runs/full"
    files = {i: make(store, tmp_path / ckpt_name(i), i) for i in range(1, 6)}
    up = Uploader(store, url, keep=0, cap=2, endpoint=px.url)
    try:
        px.down()
        for i in range(1, 6):
            assert up.cmd(f"put {files[i]} {i}") == ["queued"]
        out = up.cmd("drain 0.2", until="error:")
        # 1 may be in flight (kept); of the others only the newest fit the queue
        assert f"local-only {files[5]}" in out and "5 checkpoints are not" in out[-1]
        px.up()
        out = up.cmd("drain 60", until="")
    finally:
        up.quit()
        px.down()
    steps = tool(store, url, "ckpt-ls").stdout.split()[0::3]
    assert "5" in steps and len(steps) <= 2


def test_kill_during_a_multipart_upload_keeps_the_previous_checkpoint(store, tmp_path):
    url = f"s3://{BUCKET}/runs/kill"
    tool(store, url, "ckpt-push", str(make(store, tmp_path / ckpt_name(10), 10)))
    big = make(store, tmp_path / ckpt_name(20), 20, kb=12 * 1024)  # 3 parts of 5 MiB
    px = Proxy(store["port"])
    px.stall_after = 7 << 20  # part 1 through, part 2 hangs half-way
    p = subprocess.Popen([TOOL, url, "ckpt-push", str(big)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         env=tool_env(store, AWS_ENDPOINT_URL=px.url, KILN_S3_PART_MB="5"))
    deadline = time.time() + 60
    while px.sent <= px.stall_after and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert p.poll() is None and px.sent > px.stall_after
    p.send_signal(signal.SIGKILL)
    p.wait()
    px.down()
    uploads = store["s3"].list_multipart_uploads(Bucket=BUCKET, Prefix="runs/kill/")
    assert [u["Key"] for u in uploads.get("Uploads", [])] == ["runs/kill/" + ckpt_name(20)]
    assert tool(store, url, "ckpt-ls").stdout.split()[0::3] == ["10"]
    out = tool(store, url, "ckpt-fetch", str(tmp_path / "f")).stdout
    assert out.splitlines()[0] == f"fetched {tmp_path}/f/{ckpt_name(10)}"
    # a fresh push of the same file completes normally afterwards
    tool(store, url, "ckpt-push", str(big), env={"KILN_S3_PART_MB": "5"})
    assert tool(store, url, "ckpt-ls").stdout.split()[0::3] == ["10", "20"]


def test_no_secret_in_any_output(store):
    """Runs last (file order): every output of this module's store_tool runs."""
    secret = store["creds"]["AWS_SECRET_ACCESS_KEY"]
    assert len(store["outputs"]) > 10
    for out in store["outputs"]:
        assert secret not in out


def test_a_planted_part_symlink_is_never_followed(store, tmp_path):
    """The download goes to a file of a fresh name (O_EXCL): a NAME.part link planted in
    the staging directory, pointing at another file, is never opened or truncated."""
    url = f"s3://{BUCKET}/runs/planted"
    make(store, tmp_path / ckpt_name(3), 3)
    tool(store, url, "ckpt-push", str(tmp_path / ckpt_name(3)))
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    fetched = tmp_path / "planted"
    fetched.mkdir()
    (fetched / (ckpt_name(3) + ".part")).symlink_to(victim)
    out = tool(store, url, "ckpt-fetch", str(fetched)).stdout
    assert out.splitlines()[0] == f"fetched {fetched}/{ckpt_name(3)}"
    assert victim.read_bytes() == b"precious\n"
    assert (fetched / ckpt_name(3)).read_bytes() == (tmp_path / ckpt_name(3)).read_bytes()
    assert os.path.islink(fetched / (ckpt_name(3) + ".part"))  # not ours: left alone


def test_a_corrupt_object_never_touches_a_local_checkpoint(store, tmp_path):
    """A local checkpoint that was never uploaded, and a corrupt object of the same name
    in the bucket: the local file is kept byte for byte (it was replaced, then deleted
    when the download failed its check), and the older valid one is fetched."""
    s3, url = store["s3"], f"s3://{BUCKET}/runs/localonly"
    for step in (10, 20):
        make(store, tmp_path / ckpt_name(step), step)
        tool(store, url, "ckpt-push", str(tmp_path / ckpt_name(step)))
    bad = bytearray((tmp_path / ckpt_name(20)).read_bytes())
    bad[len(bad) // 2] ^= 0x40
    s3.put_object(Bucket=BUCKET, Key="runs/localonly/" + ckpt_name(20), Body=bytes(bad))
    staging = tmp_path / "staging"
    staging.mkdir()
    local = make(store, staging / ckpt_name(20), 21)  # the same name, other contents
    before = local.read_bytes()
    out = tool(store, url, "ckpt-fetch", str(staging)).stdout
    assert out.splitlines()[0] == f"fetched {staging}/{ckpt_name(10)}", out
    assert f"skipped: {ckpt_name(20)}: another file is already at" in out, out
    assert local.read_bytes() == before
    assert sorted(os.listdir(staging)) == sorted([ckpt_name(10), ckpt_name(20)])
    # the same object, valid, next to a file that is it: used as it is, nothing fetched
    s3.put_object(Bucket=BUCKET, Key="runs/localonly/" + ckpt_name(20),
                  Body=(tmp_path / ckpt_name(20)).read_bytes())
    os.replace(tmp_path / ckpt_name(20), local)
    out = tool(store, url, "ckpt-fetch", str(staging)).stdout
    assert out.splitlines()[0] == f"fetched {staging}/{ckpt_name(20)}", out
