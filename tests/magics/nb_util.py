"""Helpers for the training-magic notebook tests: papermill-style parameter injection,
output lookups and PNG checks."""
import base64
import copy
import json
import os
import struct
import zlib

NOTEBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "notebooks")


def inject(nb, params):
    """Adds a cell assigning params right after the cell tagged "parameters", as
    papermill and `kiln run -p` do (repr() of str/int/float is valid cell code)."""
    nb = copy.deepcopy(nb)
    src = "# Parameters\n" + "".join(f"{k} = {v!r}\n" for k, v in params.items())
    idx = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    import nbformat
    cell = nbformat.v4.new_code_cell(src)
    cell.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(idx + 1, cell)
    return nb


def cell_of(nb, start):
    """The first code cell whose source starts with start."""
    for c in nb.cells:
        if c.cell_type == "code" and c.source.lstrip().startswith(start):
            return c
    raise AssertionError(f"no cell starting with {start!r}")


def texts(cell, mime="text/plain"):
    out = []
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            out.append(o.text)
        elif mime in o.get("data", {}):
            out.append(o.data[mime])
    return out


def errors(nb):
    return [(o.ename, o.evalue) for c in nb.cells for o in c.get("outputs", [])
            if o.output_type == "error"]


def png_size(b64):
    """(width, height) of a PNG after checking its signature and every chunk's CRC."""
    data = base64.b64decode(b64)
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, size, seen = 8, None, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) & 0xffffffff == crc, f"bad CRC in {kind!r}"
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        seen.append(kind)
        pos += 12 + n
    assert seen[0] == b"IHDR" and seen[-1] == b"IEND" and b"IDAT" in seen
    return size


def pngs(cell):
    return [o.data["image/png"] for o in cell.get("outputs", [])
            if "image/png" in o.get("data", {})]
