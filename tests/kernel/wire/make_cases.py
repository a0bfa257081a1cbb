#!/usr/bin/env python3
"""Writes the data-driven wire cases under valid/ and invalid/ (run by hand after
changing a case; the generated files are committed).

Each case is a directory:
  key       the connection key (absent: "secret-key"; empty file: signing off)
  frames    one frame per line; bytes escaped as \\xNN and \\\\ (an empty line is an
            empty frame); a line "@SIGN" is replaced here by the right HMAC-SHA256
  expected  (valid)   "field value" lines checked by test_wire_case.c
  error     (invalid) a substring the parser's error message must contain
Signatures are computed with Python's hmac module, independently of jk_hmac.c.
"""
import hashlib
import hmac
import json
import os
import shutil

KEY = b"secret-key"
HERE = os.path.dirname(os.path.abspath(__file__))


def header(msg_type="execute_request", msg_id="m-1", **over):
    h = {"msg_id": msg_id, "msg_type": msg_type, "session": "s-1", "username": "u",
         "date": "2026-01-01T00:00:00.000000Z", "version": "5.4"}
    h.update(over)
    for k, v in list(h.items()):
        if v is None:
            del h[k]
    return json.dumps(h).encode()


def parts(hdr=None, content=b'{"code": "x = 1", "silent": false}'):
    return [hdr if hdr is not None else header(), b"{}", b"{}", content]


def sign(four, key=KEY):
    if not key:
        return b""
    return hmac.new(key, b"".join(four), hashlib.sha256).hexdigest().encode()


def esc(frame):
    out = []
    for b in frame:
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    return "".join(out)


def write(kind, name, frames, key=KEY, expected=None, error=None):
    d = os.path.join(HERE, kind, name)
    os.makedirs(d, exist_ok=True)
    if key != KEY:
        with open(os.path.join(d, "key"), "wb") as f:
            f.write(key)
    with open(os.path.join(d, "frames"), "w") as f:
        for fr in frames:
            f.write(esc(fr) + "\n")
    if expected is not None:
        with open(os.path.join(d, "expected"), "w") as f:
            for k, v in expected.items():
                f.write(f"{k} {v}\n")
    if error is not None:
        with open(os.path.join(d, "error"), "w") as f:
            f.write(error + "\n")


def msg(ids, four, sig=None, buffers=(), key=KEY):
    return list(ids) + [b"<IDS|MSG>", sign(four, key) if sig is None else sig] + four + list(buffers)


def main():
    for kind in ("valid", "invalid"):
        shutil.rmtree(os.path.join(HERE, kind), ignore_errors=True)
    p = parts()
    # ---- valid ----
    write("valid", "basic", msg([b"client-1"], p),
          expected={"msg_type": "execute_request", "msg_id": "m-1", "identities": 1,
                    "buffers": 0, "identity0": "client-1", "code": "x = 1"})
    write("valid", "identities", msg([b"router-a", b"\x00\x01\xff\xfe", b""], p),
          expected={"identities": 3, "identity0": "router-a", "identity1": "\\x00\\x01\\xff\\xfe",
                    "identity2": "", "msg_type": "execute_request"})
    write("valid", "no_identities", msg([], p), expected={"identities": 0, "buffers": 0})
    write("valid", "extra_buffers",
          msg([b"c"], p, buffers=[b"\x00\x01binary\xff", b"", b"<IDS|MSG>"]),
          expected={"buffers": 3, "buffer0": "\\x00\\x01binary\\xff", "buffer1": "",
                    "buffer2": "<IDS|MSG>", "identities": 1})
    write("valid", "empty_key", msg([b"c"], p, key=b""), key=b"",
          expected={"msg_type": "execute_request", "identities": 1})
    write("valid", "empty_key_ignores_signature", msg([b"c"], p, sig=b"whatever", key=b""),
          key=b"", expected={"msg_type": "execute_request"})
    uni = parts(content='{"code": "print(\\"h\u00e9llo \u2603 \U0001f600\\")"}'.encode())
    write("valid", "unicode", msg([b"c"], uni),
          expected={"code": 'print("h\u00e9llo \u2603 \U0001f600")'})
    write("valid", "version_5_3", msg([b"c"], parts(header(version="5.3"))),
          expected={"msg_type": "execute_request"})
    write("valid", "extra_header_keys",
          msg([b"c"], parts(header(subshell_id=None, extra="x"))),
          expected={"msg_type": "execute_request"})
    # ---- invalid ----
    bad = bytearray(sign(p))
    bad[10] = ord("0") if bad[10] != ord("0") else ord("1")
    write("invalid", "bad_hmac", msg([b"c"], p, sig=bytes(bad)), error="bad signature")
    write("invalid", "short_signature", msg([b"c"], p, sig=sign(p)[:63]), error="63 characters")
    write("invalid", "long_signature", msg([b"c"], p, sig=sign(p) + b"0"), error="65 characters")
    write("invalid", "uppercase_signature", msg([b"c"], p, sig=sign(p).upper()),
          error="bad signature")
    write("invalid", "no_signature", msg([b"c"], p, sig=b""), error="unsigned")
    write("invalid", "signed_with_other_key", msg([b"c"], p, sig=sign(p, b"other-key")),
          error="bad signature")
    write("invalid", "missing_delimiter", [b"c", sign(p)] + p, error="delimiter")
    write("invalid", "too_few_frames", msg([b"c"], p)[:-1], error="frames after")
    write("invalid", "empty_message", [b""], error="delimiter")
    for name, four, err in [
        ("malformed_json_header", parts(b'{"msg_id": "m-1",'), "malformed JSON in header"),
        ("malformed_json_content", parts(content=b'{"code": x = 1}'), "malformed JSON in content"),
        ("content_not_object", parts(content=b'["code"]'), "content is not a JSON object"),
        ("nan_in_content", parts(content=b'{"x": NaN}'), "malformed JSON in content"),
        ("invalid_utf8", parts(content=b'{"code": "x = \xff\xfe"}'), "malformed JSON in content"),
        ("missing_msg_id", parts(header(msg_id=None)), "msg_id"),
        ("missing_msg_type", parts(header(msg_type=None)), "msg_type"),
        ("missing_session", parts(header(session=None)), "session"),
        ("missing_version", parts(header(version=None)), "version"),
        ("version_not_string", parts(header().replace(b'"5.4"', b"5.4")), "version"),
        ("version_malformed", parts(header(version="five")), "version"),
        ("version_4", parts(header(version="4.1")), "version"),
        ("empty_msg_type", parts(header(msg_type="")), "empty"),
    ]:
        write("invalid", name, msg([b"c"], four), error=err)


if __name__ == "__main__":
    main()
