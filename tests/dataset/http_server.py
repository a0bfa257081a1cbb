"""http_server.py - a small HTTP server on 127.0.0.1 for the download tests.

Serves files from a directory with single byte ranges ("Range: bytes=N-" or
"bytes=N-M" -> 206 with Content-Range, 416 past the end), and can be told to
misbehave, per request, through ``server.config``:

  cut_after   (int|None)  send only this many body bytes, then drop the connection
  cut_count   (int)       how many requests get cut (then it serves normally)
  status      (int|None)  answer every request with this status (404, 500 ...)
  corrupt     (bool)      serve the file with one byte flipped (wrong checksum)
  no_range    (bool)      ignore Range headers (answer 200 with the whole file)
  chunk, delay            send the body in chunks of `chunk` bytes, sleeping
                          `delay` seconds between chunks (slow link)
  stall       (float)     send the headers, then go silent this long

Every request is recorded in ``server.log`` as a dict (path, range, status).
Use it in-process (``TestServer(root).start()``) or from the command line:
``python3 http_server.py DIR [--port P] [--cut-after N] [--status S] ...``.
"""
import argparse
import http.server
import os
import re
import threading
import time

DEFAULTS = dict(cut_after=None, cut_count=1, status=None, corrupt=False, no_range=False,
                chunk=65536, delay=0.0, stall=0.0)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the tests read server.log instead
        pass

    def do_GET(self):
        srv = self.server
        cfg = srv.config
        rng = self.headers.get("Range")
        entry = dict(path=self.path, range=rng, status=None)
        with srv.lock:
            srv.log.append(entry)
        if cfg["status"]:
            return self._error(entry, cfg["status"])
        path = os.path.join(srv.root, self.path.lstrip("/").split("?")[0])
        if not os.path.isfile(path):
            return self._error(entry, 404)
        with open(path, "rb") as f:
            data = bytearray(f.read())
        if cfg["corrupt"] and data:
            data[len(data) // 2] ^= 0xFF
        start, end, status = 0, len(data), 200
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng or "")
        if m and not cfg["no_range"]:
            start = int(m.group(1))
            end = min(int(m.group(2)) + 1, len(data)) if m.group(2) else len(data)
            if start >= len(data):
                entry["status"] = 416
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        entry["status"] = status
        body = bytes(data[start:end])
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "none" if cfg["no_range"] else "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1, len(data)))
        self.end_headers()
        if cfg["stall"]:
            time.sleep(cfg["stall"])
        limit = len(body)
        with srv.lock:
            if cfg["cut_after"] is not None and cfg["cut_count"] > 0:
                cfg["cut_count"] -= 1
                limit = min(limit, cfg["cut_after"])
                entry["cut"] = limit
        sent = 0
        try:
            while sent < limit:
                n = min(cfg["chunk"], limit - sent)
                self.wfile.write(body[sent:sent + n])
                self.wfile.flush()
                sent += n
                if cfg["delay"]:
                    time.sleep(cfg["delay"])
        except (BrokenPipeError, ConnectionResetError):
            entry["aborted_by_client"] = sent
            self.close_connection = True
            return
        entry["sent"] = sent
        if limit < len(body):
            self.close_connection = True   # drop mid-body: the client sees a short read

    def _error(self, entry, code):
        entry["status"] = code
        body = b"error %d\n" % code
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class TestServer(http.server.ThreadingHTTPServer):
    __test__ = False          # not a pytest test class
    daemon_threads = True

    def __init__(self, root, port=0):
        super().__init__(("127.0.0.1", port), Handler)
        self.root = root
        self.config = dict(DEFAULTS)
        self.log = []
        self.lock = threading.Lock()
        self.thread = None

    @property
    def url(self):
        return "http://127.0.0.1:%d/" % self.server_address[1]

    def start(self):
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.shutdown()
        self.server_close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--cut-after", type=int)
    ap.add_argument("--cut-count", type=int, default=1)
    ap.add_argument("--status", type=int)
    ap.add_argument("--corrupt", action="store_true")
    ap.add_argument("--no-range", action="store_true")
    ap.add_argument("--chunk", type=int, default=65536)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--stall", type=float, default=0.0)
    a = ap.parse_args()
    srv = TestServer(a.dir, a.port)
    srv.config.update(cut_after=a.cut_after, cut_count=a.cut_count, status=a.status,
                      corrupt=a.corrupt, no_range=a.no_range, chunk=a.chunk, delay=a.delay,
                      stall=a.stall)
    print("serving %s at %s" % (a.dir, srv.url), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
