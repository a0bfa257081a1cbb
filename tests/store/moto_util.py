"""A moto S3 server on 127.0.0.1 for the tests in this folder: started with
authentication on (every request after the IAM setup must carry a valid SigV4
signature), a user with an access key allowed s3:*, and a bucket. Proxy: a relay in
front of it that the tests take down, bring back and stall."""
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import boto3

BUCKET = "kiln-test"
# moto lets this many requests through unauthenticated: the three IAM calls that
# create the user, its key and its policy. Everything after must be signed.
SETUP_ACTIONS = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_fixed_port():
    """A free port below the kernel's ephemeral range (ip_local_port_range starts at
    32768 here and on Debian by default): while a relay on it is down, no outgoing
    connection can take it as its local port (or connect to itself on it, as a
    connect() to a closed ephemeral port can), so the relay can always come back."""
    lo = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, lo // 2), lo)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


class Server:
    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(SETUP_ACTIONS))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=2)
                break
            except Exception:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("moto server did not start")
                time.sleep(0.2)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Proxy:
    """A TCP relay 127.0.0.1:port -> the server that can be taken down and brought back
    on the same port (the server keeps its state), and can stall every upload after
    stall_after bytes (a transfer hanging mid-way).

    on_request(pattern, nth, action): when the nth request whose head holds pattern
    (bytes, e.g. b"partNumber=2&") arrives, the proxy either holds it forever ("stall":
    the request never reaches the server, everything before it did), goes down
    ("down": that request and all after it fail until up()), damages the reply
    ("flip": the first byte of its body inverted, as a bad link would), or answers it
    itself with HTTP 400 <Code>InvalidPart</Code> ("refuse": the server never sees it).
    self.fired is set then.
    Requests are matched at the start of what the client sends, which is where HTTP/1.1
    without pipelining puts each request line; so which request fires is fixed by the
    client's order of requests, not by timing."""

    def __init__(self, target_port):
        self.target, self.port = target_port, free_fixed_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stall_after, self.sent, self.conns = None, 0, []
        self.trigger, self.seen, self.fired = None, 0, threading.Event()
        self.lock = threading.Lock()
        self.up()

    def on_request(self, pattern, nth, action):
        assert action in ("stall", "down", "flip", "refuse")
        with self.lock:
            self.trigger, self.seen = (pattern, nth, action), 0
            self.fired.clear()

    def up(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        self.sock.listen(16)
        self.alive = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while self.alive:
            try:
                c, _ = self.sock.accept()
                u = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                return
            self.conns += [c, u]
            st = {}  # per connection: whether its reply is to be damaged
            threading.Thread(target=self._pipe, args=(c, u, True, st), daemon=True).start()
            threading.Thread(target=self._pipe, args=(u, c, False, st), daemon=True).start()

    def _fires(self, d):
        """Whether chunk d (from the client) starts the request the trigger waits for."""
        with self.lock:
            if not self.trigger or self.fired.is_set():
                return None
            pattern, nth, action = self.trigger
            line = d.split(b"\r\n", 1)[0]
            if not line.endswith(b" HTTP/1.1") or pattern not in line:
                return None
            self.seen += 1
            if self.seen < nth:
                return None
            self.fired.set()
            return action

    def _pipe(self, a, b, upstream, st):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                if not upstream and st.get("flip"):  # hold the reply until its body starts
                    d = st.pop("held", b"") + d
                    i = d.find(b"\r\n\r\n") + 4
                    if i < 4 or i >= len(d):
                        st["held"] = d
                        continue
                    d, st["flip"] = d[:i] + bytes([d[i] ^ 0xFF]) + d[i + 1:], False
                if upstream:
                    action = self._fires(d)
                    if action == "flip":
                        st["flip"] = True
                    if action == "down":
                        self.down()
                        break
                    if action == "refuse":
                        self._refuse(a, d)
                        break
                    while action == "stall" and self.alive:
                        time.sleep(0.05)
                    self.sent += len(d)
                    while self.stall_after is not None and self.sent > self.stall_after \
                            and self.alive:
                        time.sleep(0.05)
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @staticmethod
    def _refuse(a, d):
        """Reads the rest of the request that starts with d from a, answers 400."""
        while b"\r\n\r\n" not in d:
            d += a.recv(65536)
        head, body = d.split(b"\r\n\r\n", 1)
        length = 0
        for h in head.split(b"\r\n")[1:]:
            name, _, value = h.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            more = a.recv(65536)
            if not more:
                break
            body += more
        xml = b"<Error><Code>InvalidPart</Code><Message>refused by the test</Message></Error>"
        a.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/xml\r\n"
                  b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(xml), xml))

    def down(self):
        self.alive = False
        # shutdown first: close() alone leaves the socket listening while the accept
        # thread is still blocked in accept() on it, and up() then cannot bind the port
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        self.conns = []


def start_store():
    """(server, {"url", "port", "creds", "s3"}) with BUCKET created."""
    srv = Server()
    try:
        iam = boto3.client("iam", endpoint_url=srv.url, region_name="us-east-1",
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        iam.create_user(UserName="kiln")
        key = iam.create_access_key(UserName="kiln")["AccessKey"]
        iam.put_user_policy(UserName="kiln", PolicyName="s3", PolicyDocument=(
            '{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
            '"Action":"s3:*","Resource":"*"}]}'))
        creds = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"],
                 "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
        s3 = boto3.client("s3", endpoint_url=srv.url, region_name="us-east-1",
                          aws_access_key_id=creds["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"])
        s3.create_bucket(Bucket=BUCKET)
    except BaseException:
        srv.stop()
        raise
    return srv, {"url": srv.url, "port": srv.port, "creds": creds, "s3": s3}
