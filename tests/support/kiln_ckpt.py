"""Kiln's checkpoint files as docs/checkpoint-format.md defines them, for the Python
tests that check or forge them: the data and header checksums, and a safetensors file
with both filled in."""
import ctypes
import json
import struct
import zlib

from safetensors.numpy import save

# XXH3-64 from Debian's libxxhash (format v2's data checksum), through ctypes.
_XXH = ctypes.CDLL("libxxhash.so.0")
_XXH.XXH3_64bits.restype = ctypes.c_uint64
_XXH.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh3(data):
    return "%016x" % _XXH.XXH3_64bits(bytes(data), len(data))


def header_crc32(header):
    """The canonical header checksum (docs/checkpoint-format.md section 4)."""
    crc = 0
    meta = header.get("__metadata__", {})
    tensors = sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                     key=lambda kv: tuple(kv[1]["data_offsets"]))
    for name, t in tensors:
        for part in [name, t["dtype"], "[" + ",".join(str(d) for d in t["shape"]) + "]",
                     "[%d,%d]" % tuple(t["data_offsets"])]:
            crc = zlib.crc32(part.encode() + b"\0", crc)
    for key in sorted(meta, key=lambda s: s.encode()):
        if key != "header_crc32":
            crc = zlib.crc32(key.encode() + b"\0", crc)
            crc = zlib.crc32(meta[key].encode() + b"\0", crc)
    return "%08x" % crc


def with_kiln_checksums(tensors, meta):
    """meta (less any data checksum it had) plus the data checksum of its format_version
    (v1: data_crc32, later: data_xxh3) and header_crc32, for the file safetensors writes
    from tensors and that metadata."""
    meta = {k: v for k, v in meta.items() if k not in ("data_crc32", "data_xxh3")}
    raw = save(tensors, metadata=meta)
    (n,) = struct.unpack("<Q", raw[:8])
    if meta["format_version"] == "1":
        meta["data_crc32"] = "%08x" % zlib.crc32(raw[8 + n:])
    else:
        meta["data_xxh3"] = xxh3(raw[8 + n:])
    header = json.loads(raw[8:8 + n])
    header["__metadata__"] = meta
    meta["header_crc32"] = header_crc32(header)
    return meta
