"""The object-store layer against a hostile or broken S3 endpoint: a small HTTP server
on 127.0.0.1, started here, that answers as no real store would. Kiln is driven
through store_tool. Each case must end quickly with a clear error (or a correct
result), bounded in what it downloads and keeps, and never show a secret:
  - a listing whose continuation tokens alternate A, B, A, ... (it never ended);
  - a listing that goes on with empty pages, and one with a huge token;
  - an object listed as 100 bytes that streams 64 MiB, with and without a
    Content-Length (all of it was downloaded before the size check);
  - user:password@ in AWS_ENDPOINT_URL (it was printed in connection errors);
  - a session token over plain http to another host: warned about."""
import http.server
import os
import socket
import subprocess
import threading
import urllib.parse

import pytest

TOOL = os.environ.get("STORE_TOOL", "build/tests/store/store_tool")
SECRET = "hostile-test-secret-key"


class Hostile(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.mode = "loop"
        self.sent = 0  # body bytes written for object GETs
        self.pages = 0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


def page(keys, token):
    body = "".join(f"<Contents><Key>{k}</Key><Size>{n}</Size><ETag>\"x\"</ETag></Contents>"
                   for k, n in keys)
    more = f"<IsTruncated>true</IsTruncated><NextContinuationToken>{token}" \
           "</NextContinuationToken>" if token else "<IsTruncated>false</IsTruncated>"
    return f"<?xml version=\"1.0\"?><ListBucketResult>{body}{more}</ListBucketResult>".encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, body, status=200, length=True):
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        if length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        srv = self.server
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if "list-type" in q:
            srv.pages += 1
            prefix = q.get("prefix", [""])[0]
            tok = q.get("continuation-token", [""])[0]
            if srv.mode == "loop":  # A, B, A, B, ... each page one new key
                return self.reply(page([(f"{prefix}/k{srv.pages}", 1)], "B" if tok == "A" else "A"))
            if srv.mode == "empty":  # pages that go on listing nothing
                return self.reply(page([], f"t{srv.pages}"))
            if srv.mode == "hugetoken":
                return self.reply(page([(f"{prefix}/k", 1)], "T" * 100_000))
            # "big", "bigchunked": one object of 100 bytes
            return self.reply(page([(f"{prefix}/x.bin", 100)], None))
        # an object: 64 MiB whatever the listing said
        chunk = b"\0" * (1 << 20)
        self.send_response(200)
        self.send_header("ETag", "\"multi-1\"")
        if srv.mode == "bigchunked":
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(64 << 20))
        self.end_headers()
        try:
            for _ in range(64):
                if srv.mode == "bigchunked":
                    self.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                else:
                    self.wfile.write(chunk)
                srv.sent += len(chunk)
            if srv.mode == "bigchunked":
                self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client hung up: what it should do


@pytest.fixture
def hostile():
    srv = Hostile()
    yield srv
    srv.shutdown()
    srv.server_close()


def tool(endpoint, tmp_path, *args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    e.update(AWS_ENDPOINT_URL=endpoint, AWS_REGION="us-east-1", HOME=str(tmp_path),
             AWS_ACCESS_KEY_ID="AKIAHOSTILE0TEST", AWS_SECRET_ACCESS_KEY=SECRET,
             KILN_STAGING_DIR=str(tmp_path / "staging"))
    e.update(env or {})
    p = subprocess.run([TOOL, *args], capture_output=True, text=True, env=e, timeout=60)
    assert SECRET not in p.stdout + p.stderr
    return p


def test_a_looping_listing_is_refused(hostile, tmp_path):
    p = tool(hostile.url, tmp_path, "s3://bucket/runs", "ls", "runs")
    assert p.returncode == 1, p.stdout[-500:]
    assert "continuation token it gave before" in p.stderr, p.stderr
    assert hostile.pages == 3  # A, B, then A again


def test_a_listing_of_empty_pages_or_a_huge_token_is_refused(hostile, tmp_path):
    hostile.mode = "empty"
    p = tool(hostile.url, tmp_path, "s3://bucket/runs", "ls", "runs")
    assert p.returncode == 1 and "lists nothing" in p.stderr, p.stderr
    assert hostile.pages == 1
    hostile.mode = "hugetoken"
    p = tool(hostile.url, tmp_path, "s3://bucket/runs", "ls", "runs")
    assert p.returncode == 1 and "continuation token has 100000 characters" in p.stderr, p.stderr


@pytest.mark.parametrize("mode", ["big", "bigchunked"])
def test_an_object_larger_than_listed_stops_downloading(hostile, tmp_path, mode):
    hostile.mode = mode
    p = tool(hostile.url, tmp_path, "s3://bucket/data", "mirror", "1")
    assert p.returncode == 1, p.stdout
    assert "larger than the 100 bytes it was listed with" in p.stderr, p.stderr
    # what crossed the socket before Kiln hung up: far from the 64 MiB sent otherwise
    assert hostile.sent < (16 << 20), hostile.sent
    staged = tmp_path / "staging" / "bucket" / "data"
    left = [f for f in os.listdir(staged) if f != ".kiln-mirror.json"] if staged.exists() else []
    assert left == [], left  # neither the object nor a partial download


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_userinfo_in_the_endpoint_is_refused_and_never_shown(tmp_path):
    for var in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        url = f"http://kilnuser:hunter2-endpoint-pw@127.0.0.1:{free_port()}"
        p = tool(url, tmp_path, "s3://bucket/x", "open", env={var: url})
        assert p.returncode == 1
        assert "hunter2" not in p.stdout + p.stderr and "kilnuser" not in p.stderr
        assert f"{var} must not carry credentials" in p.stderr, p.stderr


def test_a_session_token_over_plain_http_to_another_host_is_warned(hostile, tmp_path):
    # the endpoint does not resolve: only the warning matters, before any connection
    p = tool("http://store.invalid:9000", tmp_path, "s3://bucket/x", "open",
             env={"AWS_SESSION_TOKEN": "tok-hostile"})
    assert p.returncode == 1
    assert "session token (AWS_SESSION_TOKEN) crosses the network unencrypted" in p.stderr
    assert "tok-hostile" not in p.stdout + p.stderr
    p = tool(hostile.url, tmp_path, "s3://bucket/x", "open",
             env={"AWS_SESSION_TOKEN": "tok-hostile"})
    assert p.returncode == 0 and "unencrypted" not in p.stderr, p.stderr
