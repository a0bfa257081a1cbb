#!/usr/bin/env python3
"""Writes the seed corpora under tests/fuzz/corpus/<target>/ (a few valid and invalid
inputs each, in each target's input format: see the top comment of <target>.c).
Reproducers of fixed findings are added by hand as corpus/<target>/crash-<what> and
are never rewritten by this script. Run: python3 tests/fuzz/make_corpus.py"""
import gzip, hashlib, hmac, io, json, os, struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- wire: mode byte + frames joined by \n ----
def unescape(line):
    out, i = bytearray(), 0
    while i < len(line):
        if line[i:i + 2] == b"\\x":
            out.append(int(line[i + 2:i + 4], 16)); i += 4
        elif line[i:i + 2] == b"\\\\":
            out.append(0x5c); i += 2
        else:
            out.append(line[i]); i += 1
    return bytes(out)

wire_dir = os.path.join(ROOT, "tests", "kernel", "wire")
for kind in ("valid", "invalid"):
    for case in sorted(os.listdir(os.path.join(wire_dir, kind))):
        cdir = os.path.join(wire_dir, kind, case)
        frames = open(os.path.join(cdir, "frames"), "rb").read().split(b"\n")[:-1]
        frames = [unescape(f) for f in frames]
        if any(b"\n" in f for f in frames):
            continue
        keyfile = os.path.join(cdir, "key")
        key = open(keyfile, "rb").read() if os.path.exists(keyfile) else b"secret-key"
        if key not in (b"secret-key", b""):
            mode = 1
        else:
            mode = 1 if key else 0
        put("wire", f"{kind}-{case}", bytes([mode]) + b"\n".join(frames))
hdr = json.dumps({"msg_id": "m-2", "msg_type": "comm_msg", "session": "s", "username": "u",
                  "date": "2026-01-01T00:00:00Z", "version": "5.4"}).encode()
put("wire", "resign-buffers", b"\x03" + b"\n".join([b"id", b"<IDS|MSG>", b"0" * 64, hdr, b"{}", b"{}",
                                                    b'{"comm_id": "c", "data": {}}', b"buf1", b"\xff\x00buf2"]))

# ---- connection ----
conn = {"shell_port": 5001, "iopub_port": 5002, "stdin_port": 5003, "control_port": 5004,
        "hb_port": 5005, "ip": "127.0.0.1", "key": "a0436f6c-1916-498b-8eb9-e81ab9368e84",
        "transport": "tcp", "signature_scheme": "hmac-sha256", "kernel_name": "kiln"}
put("connection", "valid", json.dumps(conn, indent=1))
put("connection", "valid-ipc-sha512", json.dumps(dict(conn, transport="ipc", ip="/tmp/kiln",
                                                     signature_scheme="hmac-sha512")))
put("connection", "valid-empty-key", json.dumps(dict(conn, key="")))
put("connection", "invalid-port", json.dumps(dict(conn, hb_port=70000)))
put("connection", "invalid-missing-key", json.dumps({k: v for k, v in conn.items() if k != "key"}))
put("connection", "invalid-scheme", json.dumps(dict(conn, signature_scheme="hmac-md99")))
put("connection", "invalid-json", '{"shell_port": 1,')

# ---- notebook ----
def nb(cells, **kw):
    d = {"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": cells}
    d.update(kw)
    return json.dumps(d)
params = {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "outputs": [], "execution_count": None,
          "source": ["#@title Run { display-mode: \"form\" }\n",
                     "epochs = 10  #@param {type:\"slider\", min:1, max:50, step:1}\n",
                     "lr = 0.001  #@param {type:\"number\"}\n",
                     "optimizer = \"adam\"  #@param [\"adam\", \"sgd\", \"adamw\"]\n",
                     "run_name = \"x\"  #@param {type:\"string\"}\n", "sizes = [1]  #@param {type:\"raw\"}\n"]}
put("notebook", "valid-params", nb([{"cell_type": "markdown", "metadata": {}, "source": "# T"}, params,
                                    {"cell_type": "code", "metadata": {}, "source": "print(epochs)",
                                     "outputs": [], "execution_count": None}]))
put("notebook", "valid-injected", nb([params, {"cell_type": "code", "id": "abc",
                                               "metadata": {"tags": ["injected-parameters"]},
                                               "source": "epochs = 3\n", "outputs": []}]))
put("notebook", "valid-untagged", nb([{"cell_type": "code", "source": "x = 1\n"}], nbformat_minor=5))
put("notebook", "invalid-nbformat3", nb([], nbformat=3))
put("notebook", "invalid-cell", nb([{"cell_type": "code"}]))
put("notebook", "invalid-json", "[1, 2")

# ---- cell ----
cells = {
    "assign": "x = 1\ny = x * 2.5\nz = [x, y, 'a', None, True]\nd = {'k': z}\nd['k'][1]\n",
    "strings": "s = 'abc' + \"def\"\nf'{s!r:>10} {len(s):03d} {3.14159:.2f}'\n",
    "builtins": "print(min(3, 1), max([4, 5]), round(2.675, 2), int('12'), float('1e3'), str(7))\n"
                "sorted(range(10), reverse=True)[:3]\n",
    "comprehension": "[i * i for i in range(20) if i % 3 == 0]\n",
    "format": "'{:>8}|{:<4}|{:^6}'.format('a', 'b', 'c')\n'%d %s %.3f' % (1, 'x', 2.0)\n",
    "errors": "x = 1\nundefined_name + 1\n",
    "syntax": "x = (1 + \n",
    "magics": "%lsmagic\n%who\n%time x = 1\n",
    "cellmagic": "%%time\nx = sum(range(100))\nx\n",
    "html": "%%html\n<b>hi</b>\n",
    "form": "#@title T { display-mode: \"form\" }\nepochs = 10  #@param {type:\"slider\", min:1, max:50}\n"
            "opt = 'adam'  #@param ['adam', 'sgd']\n",
    "help": "len?\n",
    "unicode": "s = 'héllo wörld ✓'\nlen(s), s.upper()\n",
    "methods": "l = [3, 1, 2]\nl.append(4)\n' '.join(['a', 'b']).split(' ')\n",
}
for k, v in cells.items():
    put("cell", k, v)

# ---- forms ----
forms = {
    "design": open(os.path.join(HERE, "corpus", "cell", "form")).read() if False else
    "#@title Train on MNIST { display-mode: \"form\" }\n#@markdown Choose the run's hyperparameters.\n"
    "epochs = 10          #@param {type:\"slider\", min:1, max:50, step:1}\n"
    "lr = 0.001           #@param {type:\"number\"}\n"
    "batch_size = 128     #@param [32, 64, 128, 256] {type:\"raw\"}\n"
    "optimizer = \"adam\"   #@param [\"adam\", \"sgd\", \"adamw\"]\n"
    "precision = \"fp32\"   #@param [\"fp32\", \"bf16\", \"fp16\"]\n"
    "run_name = \"mnist\"   #@param {type:\"string\"}\n"
    "augment = False      #@param {type:\"boolean\"}\n\x0025",
    "date": "d = '2026-01-01'  #@param {type:\"date\"}\nx = 3  #@param {type:\"integer\"}\n\x00\"2026-02-03\"",
    "allow-input": "opt = 'a'  #@param ['a', 'b'] {allow-input: true}\n\x00\"c\"",
    "bad-slider": "e = 5  #@param {type:\"slider\", min:10, max:1}\n",
    "bad-type": "e = 5  #@param {type:\"nope\"}\n",
    "no-form": "x = 1\n",
}
for k, v in forms.items():
    put("forms", k, v)

# ---- model: C, H, W, classes bytes then the spec ----
def model(c, h, w, k, spec):
    return bytes([(c - 1) % 4, (h - 1) % 40, (w - 1) % 40, k]) + spec.encode()
put("model", "lenet", model(1, 28, 28, 10, "conv2d 6 5 pad=2\nrelu\nmaxpool 2\nconv2d 16 5\nrelu\n"
                                          "maxpool 2\nflatten\ndense 120\nrelu\ndense 10\n"))
put("model", "small", model(3, 8, 8, 4, "conv2d 4 3 stride=1 pad=1  # c\nbatchnorm momentum=0.1\n"
                                       "leakyrelu slope=0.1\navgpool 2\ndropout 0.25\nflatten\ndense 4\n"))
put("model", "bias-free", model(3, 8, 8, 4, "conv2d 4 3 pad=same bias=false\nbatchnorm\nrelu\n"
                                           "residual:\n    conv2d 4 3 pad=same bias=False\n"
                                           "    batchnorm\nrelu\nglobalavgpool\nflatten\n"
                                           "dense 4 bias=false\n"))
put("model", "invalid-last", model(1, 8, 8, 10, "flatten\ndense 3\n"))
put("model", "invalid-word", model(1, 8, 8, 10, "conv2d x 3\n"))
put("model", "invalid-shape", model(1, 4, 4, 2, "conv2d 2 5\nflatten\ndense 2\n"))

# ---- idx: flags, image length (LE16), image file, label file ----
def idx_images(n, h, w):
    return struct.pack(">IIII", 0x803, n, h, w) + bytes((i * 7) % 256 for i in range(n * h * w))
def idx_labels(labels):
    return struct.pack(">II", 0x801, len(labels)) + bytes(labels)
def idx(flags, img, lab):
    return bytes([flags]) + struct.pack("<H", len(img)) + img + lab
put("idx", "valid-plain", idx(0x24, idx_images(3, 4, 5), idx_labels([0, 9, 3])))
put("idx", "valid-gzip", idx(0x27, idx_images(2, 3, 3), idx_labels([1, 2])))
put("idx", "invalid-count", idx(0x24, idx_images(3, 2, 2), idx_labels([1, 2])))
put("idx", "invalid-label", idx(0x04, idx_images(1, 2, 2), idx_labels([7])))
put("idx", "invalid-magic", idx(0, struct.pack(">IIII", 0x80D, 1, 1, 1) + b"\0\0\0\0", b""))
put("idx", "invalid-truncated", idx(1, idx_images(5, 4, 4)[:40], b""))

# ---- cifar: members = selector, LE16 length, data ----
def member(sel, data):
    return bytes([sel]) + struct.pack("<H", len(data)) + data
allsix = b"".join(member(0x80 | k, bytes([k % 10]) + b"\x01\x02") for k in range(6))
put("cifar", "valid-six", allsix)
put("cifar", "valid-meta", allsix + member(6, b"airplane\nautomobile\nbird\ncat\ndeer\n"
                                              b"dog\nfrog\nhorse\nship\ntruck\n") + member(0x47, b"x"))
put("cifar", "invalid-label", b"".join(member(0xC0 | k, bytes([12])) for k in range(6)))
put("cifar", "invalid-missing", b"".join(member(0x80 | k, b"\x00") for k in range(5)))
put("cifar", "invalid-size", b"".join(member(k, b"\x00" * 10) for k in range(6)))
put("cifar", "invalid-meta", allsix + member(6, b"a\nb\n"))

# ---- cifar100: coarse flag, then members = selector, LE16 length, data ----
def rec100(coarse, fine):
    return bytes([coarse, fine]) + b"\x07" * 8
fine_list = "".join("f%d\n" % i for i in range(100)).encode()
coarse_list = "".join("c%d\n" % i for i in range(20)).encode()
both = member(0x80, rec100(3, 97)) + member(0xC1, rec100(19, 5))
put("cifar100", "valid-fine", b"\x00" + both + member(0x42, fine_list))
put("cifar100", "valid-coarse", b"\x01" + both + member(3, coarse_list) + member(0x45, b"x"))
put("cifar100", "invalid-coarse-label", b"\x00" + member(0x80, rec100(20, 1)) + member(0x81, rec100(1, 1)))
put("cifar100", "invalid-fine-label", b"\x01" + member(0x80, rec100(1, 100)) + member(0x81, rec100(1, 1)))
put("cifar100", "invalid-names", b"\x01" + both + member(3, b"a\nb\n"))
put("cifar100", "invalid-size", b"\x00" + member(0, b"\x00" * 10) + member(1, b"\x00" * 3074))
put("cifar100", "invalid-missing", b"\x00" + member(0x80, rec100(1, 1)))

# ---- svhn: flags (1 header, 2 compress), then MAT elements ----
def mat_sub(typ, data):
    return struct.pack("<II", typ, len(data)) + data + b"\0" * (-len(data) % 8)
def mat_var(name, cls, dims, typ, data):
    body = (mat_sub(6, struct.pack("<II", cls, 0)) + mat_sub(5, struct.pack("<%di" % len(dims), *dims))
            + struct.pack("<HH", 1, len(name)) + name.encode().ljust(4, b"\0") + mat_sub(typ, data))
    return struct.pack("<II", 14, len(body)) + body
svx = mat_var("X", 9, [2, 2, 3, 2], 2, bytes(range(24)))
svy = mat_var("y", 6, [2, 1], 9, struct.pack("<2d", 10, 3))
put("svhn", "valid-plain", b"\x01" + svx + svy)
put("svhn", "valid-y-uint8", b"\x01" + svx + mat_var("y", 6, [2, 1], 2, b"\x01\x0a"))
put("svhn", "valid-compressed-x", b"\x03" + svx)
def mat_var_small(name, cls, dims, typ, data):  # the real part in the small format
    body = (mat_sub(6, struct.pack("<II", cls, 0)) + mat_sub(5, struct.pack("<%di" % len(dims), *dims))
            + struct.pack("<HH", 1, len(name)) + name.encode().ljust(4, b"\0")
            + struct.pack("<HH", typ, len(data)) + data.ljust(4, b"\0"))
    return struct.pack("<II", 14, len(body)) + body
put("svhn", "valid-small-y", b"\x01" + svx + mat_var_small("y", 6, [2, 1], 2, b"\x01\x0a"))
put("svhn", "invalid-label", b"\x01" + svx + mat_var("y", 6, [2, 1], 2, b"\x00\x0b"))
put("svhn", "invalid-lying-size", b"\x01" + mat_var("X", 9, [2, 2, 3, 9], 2, bytes(24)) + svy)
put("svhn", "invalid-count", b"\x01" + svx + mat_var("y", 6, [3, 1], 2, b"\x01\x02\x03"))
put("svhn", "invalid-no-header", b"\x00" + svx + svy)
put("svhn", "invalid-truncated", b"\x01" + (svx + svy)[:-20])

# ---- pixcsv: shape bytes (0,0,0 = inferred), then the CSV ----
put("pixcsv", "valid-inferred", b"\0\0\0label,pixel0,pixel1,pixel2,pixel3\n1,0,255,3,4\n0,9,9,9,9\n")
put("pixcsv", "valid-shape", b"\x02\x01\x03label,p0,p1,p2,p3,p4,p5\r\n2,1,2,3,4,5,6\r\n\r\n1,0,0,0,0,0,0")
put("pixcsv", "valid-unlabelled", b"\0\0\0pixel0,pixel1,pixel2,pixel3\n1,2,3,4\n")
put("pixcsv", "invalid-ragged", b"\0\0\0label,pixel0,pixel1,pixel2,pixel3\n1,0,255,3\n")
put("pixcsv", "invalid-range", b"\0\0\0label,pixel0,pixel1,pixel2,pixel3\n1,0,256,3,4\n")
put("pixcsv", "invalid-cell", b"\0\0\0label,pixel0,pixel1,pixel2,pixel3\n1,0,x,3,4\n")
put("pixcsv", "invalid-shape", b"\x01\x03\x03label,pixel0,pixel1,pixel2,pixel3\n1,0,1,3,4\n")

# ---- ckpt: flags byte then a safetensors file ----
def st(tensors, meta):
    hdr, data = {}, b""
    if meta is not None:
        hdr["__metadata__"] = meta
    for name, (dt, shape, raw) in tensors.items():
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data
meta = {"format": "kiln-checkpoint", "format_version": "1", "kiln_version": "0.1.0", "epoch": "2",
        "step": "100", "optimizer": "adam", "optimizer_step": "100", "model_spec": "flatten\ndense 2\n",
        "input_shape": "[1, 2, 2]", "hyperparameters": "{\"lr\": 0.001}",
        "metric": "{\"name\":\"val_accuracy\",\"value\":0.5,\"mode\":\"max\",\"step\":100}",
        "best_metric": "{\"name\":\"val_accuracy\",\"value\":null,\"mode\":\"max\",\"step\":-1}",
        "data_crc32": "00000000", "header_crc32": "00000000"}
ten = {"model.0.dense.weight": ("F32", [2, 4], struct.pack("<8f", *range(8))),
       "model.0.dense.bias": ("F32", [2], struct.pack("<2f", 0.5, -0.5)),
       "state.rng": ("U64", [], struct.pack("<Q", 12345))}
put("ckpt", "valid-fixcrc", b"\x01" + st(ten, meta))
meta2 = {k: v for k, v in meta.items() if k != "data_crc32"}
meta2.update(format_version="2", data_xxh3="0000000000000000")
put("ckpt", "valid-v2-fixsum", b"\x01" + st(ten, meta2))
put("ckpt", "valid-header-only", b"\x03" + st(ten, meta))
put("ckpt", "invalid-crc", b"\x00" + st(ten, meta))
put("ckpt", "invalid-not-kiln", b"\x01" + st(ten, {"format": "pt"}))
put("ckpt", "invalid-offsets", b"\x01" + st({"a": ("F32", [3], b"\0" * 8)}, meta))
put("ckpt", "invalid-short", b"\x00\x10\x00\x00")
put("ckpt", "invalid-bf16-shape", b"\x01" + st({"b": ("BF16", [1, 0, 3], b"")}, meta))

# ---- http: flags, .part length, .part bytes, raw response ----
def http(flags, part, resp):
    return bytes([flags, len(part)]) + part + resp
body = b"0123456789abcdef"
put("http", "200", http(0, b"", b"HTTP/1.1 200 OK\r\nContent-Length: 16\r\nConnection: close\r\n\r\n" + body))
put("http", "206-resume", http(1, b"01234567", b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 8-15/16\r\n"
                                              b"Content-Length: 8\r\n\r\n89abcdef"))
put("http", "206-wrong-range", http(1, b"0123", b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 2-15/16\r\n"
                                               b"Content-Length: 14\r\n\r\n23456789abcdef"))
put("http", "200-instead-of-206", http(1, b"xxxx", b"HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n" + body))
put("http", "416", http(1, b"0123456789abcdef", b"HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\n\r\n"))
put("http", "404", http(0, b"", b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno\n"))
put("http", "cut-off-retry", http(4, b"", b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + body))
put("http", "chunked-sha", http(2, b"", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                        b"5\r\nhello\r\n0\r\n\r\n"))
put("http", "garbage", http(0, b"", b"\x00\xffnot http at all\r\n\r\n"))

# ---- resume: "KEY=VALUE" metadata lines ("\n" escaped) and "@NAME DIMS" F32 tensors ----
hp = {"model": "net", "data": "fashion-mnist", "epochs": 3, "batch": 4, "lr": 0.01,
      "optimizer": "adam", "nesterov": False, "schedule": "constant", "seed": 7,
      "device": "cpu", "precision": "fp32", "run_dir": "/tmp/attacker", "checkpoint_every": "",
      "keep": 3, "time_limit_s": -1, "results": "mlflow+http://evil.example:5000",
      "augment": False, "val": 0, "name": "net"}
resume_meta = [
    ("training_state", "1"), ("step", "20"), ("epoch", "2"), ("optimizer", "adam"),
    ("optimizer_step", "20"), ("num_classes", "3"), ("model_name", "net"),
    ("model_spec", "flatten\\ndense 3"), ("input_shape", "[1,2,2]"),
    ("hyperparameters", json.dumps(hp)),
    ("dataset", json.dumps({"name": "fashion-mnist", "val": 0, "subset": 0,
                            "fnv1a64": "0123456789abcdef"})),
    ("schedule", json.dumps({"spec": "cosine"})),
    ("data_order", json.dumps({"epoch": 2, "position": 0, "steps_per_epoch": 10,
                               "epoch_correct": 0, "epoch_seen": 0,
                               "epoch_loss_sum": "0x0p+0"})),
    ("rng", json.dumps({"seed": "7"})),
]
resume_tensors = ["@1.dense.weight 3 4", "@1.dense.bias 3",
                  "@optim.exp_avg.1.dense.weight 3 4", "@optim.exp_avg_sq.1.dense.weight 3 4",
                  "@optim.exp_avg.1.dense.bias 3", "@optim.exp_avg_sq.1.dense.bias 3"]
def resume(meta, tensors=resume_tensors):
    return "\n".join([f"{k}={v}" for k, v in meta] + tensors) + "\n"
put("resume", "valid", resume(resume_meta))
put("resume", "valid-loss-scale", resume([(k, v.replace('"epoch_loss_sum"', '"loss_scale": "0x1p+10", "scale_tracker": 3, "skipped_steps": 1, "epoch_loss_sum"')) for k, v in resume_meta]))
put("resume", "weights-only", resume([m for m in resume_meta if m[0] != "training_state"]))
put("resume", "no-spec", resume([m for m in resume_meta if m[0] != "model_spec"]))
put("resume", "bad-json", resume([(k, v[:-3] if k == "hyperparameters" else v) for k, v in resume_meta]))
put("resume", "bad-shape", resume([(k, "[1,2]" if k == "input_shape" else v) for k, v in resume_meta]))
put("resume", "bad-seed", resume([(k, '{"seed":"-x"}' if k == "rng" else v) for k, v in resume_meta]))
put("resume", "long-schedule", resume([(k, json.dumps({"spec": "x" * 300}) if k == "schedule" else v) for k, v in resume_meta]))
put("resume", "zero-steps", resume([(k, v.replace('"steps_per_epoch": 10', '"steps_per_epoch": 0')) for k, v in resume_meta]))
put("resume", "foreign-optim", resume(resume_meta, resume_tensors + ["@optim.exp_avg.9.conv.weight 2"]))
put("resume", "bad-optimizer", resume([(k, "lion" if k == "optimizer" else v) for k, v in resume_meta]))

# ---- results: flags (bit 0 desc, bits 1-3 status, 4-7 limit), sort line, where lines ----
def results(flags, sort, *where):
    return bytes([flags]) + "\n".join((sort,) + where).encode()
put("results", "all", results(0, ""))
put("results", "where-lr", results(0, "", "lr=0.001"))
put("results", "where-num", results(1, "val_acc", "val_acc>=0.55", "batch!=64"))
put("results", "sort-desc-limit", results(0x21, "loss"))
put("results", "status", results(0x04, "id", "name=mnist"))
put("results", "text-compare", results(0, "name", "lr<fast", "device==cpu"))
put("results", "bad-op", results(0, "", "lr!0.1"))
put("results", "no-op", results(0, "", "lr"))
put("results", "empty-key", results(0, "", "=1"))
put("results", "unknown-sort", results(0, "nothing_has_this"))
put("results", "long-key", results(0, "", "k" * 300 + "=1"))

# ---- manifest: the manifest's bytes ----
def manifest(**kw):
    m = {"format": "kiln-checkpoint-manifest", "version": 1, "step": 100,
         "parts": [{"key": "ckpt-step00000100.safetensors", "size": 4096,
                    "sha256": "ab" * 32, "xxh3": "0123456789abcdef"}]}
    part = m["parts"][0]
    for k, v in kw.items():
        if k in part:
            part[k] = v
        else:
            m[k] = v
    return json.dumps({k: v for k, v in m.items() if v is not None})
put("manifest", "valid", manifest())
put("manifest", "no-xxh3", manifest(xxh3=""))
put("manifest", "dotdot", manifest(key=".."))
put("manifest", "dot", manifest(key="."))
put("manifest", "empty-key", manifest(key=""))
put("manifest", "slash", manifest(key="../x"))
put("manifest", "newline-key", manifest(key="a\nb"))
put("manifest", "upper-sha", manifest(sha256="AB" * 32))
put("manifest", "nonhex-sha", manifest(sha256="zz" * 32))
put("manifest", "bad-xxh3", manifest(xxh3="not hex"))
put("manifest", "negative-step", manifest(step=-1))
put("manifest", "version-2", manifest(version=2))
put("manifest", "two-parts", json.dumps({"format": "kiln-checkpoint-manifest", "version": 1,
                                         "step": 1, "parts": [{}, {}]}))
put("manifest", "not-json", "{not json")
put("manifest", "duplicate-keys", '{"format":"kiln-checkpoint-manifest","format":"x"}')

# ---- s3xml: one XML reply of the S3 server ----
def listing(*contents, truncated=False, token=None):
    items = "".join(f"<Contents>{c}<StorageClass>STANDARD</StorageClass></Contents>"
                    for c in contents)
    more = f"<NextContinuationToken>{token}</NextContinuationToken>" if token else ""
    return ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult '
            'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>kiln-test</Name>'
            f"<Prefix>runs/a/</Prefix><KeyCount>{len(contents)}</KeyCount>"
            f"<MaxKeys>1000</MaxKeys><IsTruncated>{'true' if truncated else 'false'}"
            f"</IsTruncated>{more}{items}</ListBucketResult>")
put("s3xml", "listing", listing("<Key>runs/a/ckpt-step00000016.safetensors</Key>"
                                "<Size>5912</Size>",
                                "<Key>runs/a/ckpt-step00000016.safetensors.manifest.json</Key>"
                                "<Size>301</Size>"))
put("s3xml", "empty", listing())
put("s3xml", "truncated", listing("<Key>runs/a/x</Key><Size>1</Size>", truncated=True,
                                  token="1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="))
put("s3xml", "same-token", listing("<Key>runs/a/x</Key><Size>1</Size>", truncated=True,
                                   token="tok"))
put("s3xml", "no-token", listing("<Key>runs/a/x</Key><Size>1</Size>", truncated=True))
put("s3xml", "outside-prefix", listing("<Key>a</Key><Size>1</Size>"))
put("s3xml", "no-size", listing("<Key>runs/a/x</Key>", "<Key>runs/a/y</Key><Size>2</Size>"))
put("s3xml", "bad-sizes", listing("<Key>runs/a/x</Key><Size>-1</Size>",
                                  "<Key>runs/a/y</Key><Size>99999999999999999999</Size>"))
put("s3xml", "entities", listing("<Key>runs/a/&lt;&#x41;&#66;&amp;amp;&#0;&#x;</Key>"
                                 "<Size>0</Size>"))
put("s3xml", "error", '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket'
    "</Code><Message>The specified bucket does not exist</Message>"
    "<BucketName>x</BucketName></Error>")
put("s3xml", "upload-id", "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
    "<UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
    "</InitiateMultipartUploadResult>")
put("s3xml", "unclosed", "<ListBucketResult><Contents><Key>runs/a/x</Key><Size>1")

# ---- mlflow: answers "CODE BODY" separated by "\n--\n" ----
def mlflow(*answers):
    return "\n--\n".join(answers)
ok_flow = ['200{"experiment":{"experiment_id":"1"}}', '200{"run":{"info":{"run_id":"abc"}}}',
           "200{}", "200{}", "200{}"]
put("mlflow", "ok", mlflow(*ok_flow))
put("mlflow", "create-experiment", mlflow('404{"error_code":"RESOURCE_DOES_NOT_EXIST"}',
                                          '200{"experiment_id":"2"}', *ok_flow[1:]))
put("mlflow", "race", mlflow('404{"error_code":"RESOURCE_DOES_NOT_EXIST"}',
                             '400{"error_code":"RESOURCE_ALREADY_EXISTS"}', *ok_flow))
put("mlflow", "no-run-id", mlflow(ok_flow[0], '200{"run":{}}'))
put("mlflow", "server-error", mlflow('500{"message":"boom"}'))
put("mlflow", "escape-in-message", mlflow('403{"message":"\\u001b[31mred\\u001b[0m\\nforged line"}'))
put("mlflow", "not-json", mlflow("200<html>", "200[1,2"))
put("mlflow", "ids-not-strings", mlflow('200{"experiment":{"experiment_id":5}}', '200{"run":{"info":{"run_id":[]}}}'))
put("mlflow", "log-fails", mlflow(*ok_flow[:2], '400{"message":"too many"}', "200{}"))


# ---- s3list: listing pages separated by NUL, served round and round ----
def page(keys, token=None):
    body = "".join(f"<Contents><Key>runs/a/{k}</Key><Size>{n}</Size><ETag>\"e{k}\"</ETag>"
                   "</Contents>" for k, n in keys)
    more = (f"<IsTruncated>true</IsTruncated><NextContinuationToken>{token}"
            "</NextContinuationToken>" if token else "<IsTruncated>false</IsTruncated>")
    return f"<ListBucketResult>{body}{more}</ListBucketResult>"
put("s3list", "two-pages", "\0".join([page([("x", 1), ("y", 2)], "t1"), page([("z", 3)])]))
put("s3list", "alternating", "\0".join([page([("a", 1)], "A"), page([("b", 1)], "B")]))
put("s3list", "one-loop", page([("a", 1)], "A"))
put("s3list", "empty-goes-on", "\0".join([page([], "E1"), page([("a", 1)])]))
put("s3list", "three-then-repeat", "\0".join([page([("a", 1)], "T1"), page([("b", 1)], "T2"),
                                              page([("c", 1)], "T1")]))
put("s3list", "complete", page([("a", 5)]))
put("s3list", "huge-token", page([("a", 1)], "T" * 2000))


# ---- archive: an image folder as a zip / tar / tar.gz ----
def tiny_png(w=2, h=2):
    import zlib
    raw = b"".join(b"\0" + b"\x80" * (w * 3) for _ in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
def zip_of(files):
    import zipfile
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        for k, v in files.items():
            z.writestr(zipfile.ZipInfo(k, (1980, 1, 1, 0, 0, 0)), v)
    return b.getvalue()
def tar_of(files, claim=None):
    import tarfile
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for k, v in files.items():
            ti = tarfile.TarInfo(k)
            ti.size = len(v)
            t.addfile(ti, io.BytesIO(v))
    data = bytearray(b.getvalue())
    if claim is not None:  # the first member's header claims claim bytes
        data[124:136] = b"%011o\0" % claim
        s = sum(data[:148]) + 8 * 32 + sum(data[156:512])
        data[148:156] = b"%06o\0 " % s
    return bytes(data)
put("archive", "folder.zip", zip_of({"pets/cat/1.png": tiny_png(), "pets/cat/2.png": tiny_png(),
                                     "pets/dog/1.png": tiny_png(3, 2),
                                     "pets/.hidden/x.png": tiny_png(), "pets/readme.txt": b"hi"}))
split = {"train/cat/1.png": tiny_png(), "train/dog/1.png": tiny_png(),
         "val/cat/2.png": tiny_png(), "test/dog/3.png": tiny_png()}
put("archive", "split.tar", tar_of(split))
put("archive", "split.tar.gz", gzip.compress(tar_of(split), mtime=0))
put("archive", "claims-300mib.tar", tar_of({"a/x.png": b""}, claim=300 << 20))
put("archive", "one-class.zip", zip_of({"c/1.png": tiny_png()}))
