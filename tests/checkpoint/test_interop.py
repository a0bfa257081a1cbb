"""Kiln checkpoints against the reference safetensors implementation (PyPI package).

Both directions: Python reads Kiln's files (identical arrays and metadata, and the two
checksums recomputed from docs/checkpoint-format.md), Kiln reads files written by
safetensors; plain files are byte-identical; a file re-saved by Python (metadata in
hash order) still validates. CKPT_TOOL is tests/checkpoint/ckpt_tool (set by meson).
"""
import json
import os
import struct
import subprocess

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save, save_file

from kiln_ckpt import header_crc32, with_kiln_checksums, xxh3

TOOL = os.environ.get("CKPT_TOOL", "")
pytestmark = pytest.mark.skipif(not os.path.exists(TOOL), reason="CKPT_TOOL not built")


def tool(*args, check=True):
    p = subprocess.run([TOOL, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"ckpt_tool {args} failed: {p.stderr}")
    return p


def reference_tensors():
    """What `ckpt_tool write-ref` writes (see ckpt_tool.c)."""
    return {
        "model.conv.weight": (np.arange(36, dtype=np.float32) * 0.5 - 3).reshape(4, 1, 3, 3),
        "model.conv.bias": np.arange(4, dtype=np.float32) * 0.125,
        "model.scalar": np.array(2.5, dtype=np.float32),
        "model.empty": np.zeros((0, 3), dtype=np.float32),
        "optim.m.conv.weight": (-np.arange(36, dtype=np.float32) / 8).reshape(4, 1, 3, 3),
        "state.rng": np.array([1, -2, 1 << 40], dtype=np.int64),
        "state.order": np.array([4, 3, 2, 1, 0], dtype=np.uint8),
        "state.f64": np.array([0.1, -1e300], dtype=np.float64),
    }


def split(path):
    """(header dict, data area bytes) of a safetensors file."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def test_python_reads_kiln_checkpoint(tmp_path):
    path = str(tmp_path / "ckpt-step00000077.safetensors")
    tool("write-ref", path)
    got = load_file(path)
    want = reference_tensors()
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
        assert np.array_equal(got[k], v), k
    with safe_open(path, framework="np") as f:
        meta = f.metadata()
        assert sorted(f.keys()) == sorted(want)
        np.testing.assert_array_equal(f.get_tensor("state.rng"), want["state.rng"])
    assert meta["format"] == "kiln-checkpoint" and meta["format_version"] == "2"
    assert meta["step"] == "77" and meta["epoch"] == "3"
    assert meta["run_id"] == "run-été"
    assert meta["model_spec"] == 'conv2d 4 3\n\trelu\n"q" \\ /'
    assert json.loads(meta["hyperparameters"]) == {"lr": 0.001, "batch": 128, "optimizer": "adam"}
    assert json.loads(meta["metric"]) == {"name": "val_accuracy", "value": 0.8125,
                                          "mode": "max", "step": 77}
    header, data = split(path)
    assert meta["data_xxh3"] == xxh3(data) and "data_crc32" not in meta
    assert meta["header_crc32"] == header_crc32(header)
    (n,) = struct.unpack("<Q", open(path, "rb").read(8))
    assert n % 8 == 0  # data area 8-byte aligned, as the reference pads


@pytest.mark.parametrize("version", ["1", "2"])
def test_kiln_reads_python_checkpoint(tmp_path, version):
    path = str(tmp_path / "py.safetensors")
    tensors = reference_tensors()
    tensors["model.big"] = np.random.default_rng(0).standard_normal((33, 17)).astype(np.float32)
    meta = with_kiln_checksums(tensors, {
        "format": "kiln-checkpoint", "format_version": version, "kiln_version": "0.1.0",
        "step": "5", "epoch": "1", "model_spec": "dense 10\n", "optimizer": "sgd"})
    save_file(tensors, path, metadata=meta)
    out = json.loads(tool("dump", path).stdout)
    assert out["metadata"] == meta
    assert sorted(out["tensors"]) == sorted(tensors)
    for k, v in tensors.items():
        t = out["tensors"][k]
        assert t["shape"] == list(v.shape), k
        assert bytes.fromhex(t["hex"]) == v.tobytes(), k


def test_kiln_reads_plain_safetensors_but_refuses_it_as_checkpoint(tmp_path):
    path = str(tmp_path / "plain.safetensors")
    tensors = {"w": np.arange(6, dtype=np.float32).reshape(2, 3),
               "b": np.ones(3, dtype=np.float16), "i": np.arange(4, dtype=np.int32)}
    save_file(tensors, path)
    out = json.loads(tool("st-dump", path).stdout)
    assert out["metadata"] == {}
    assert {k: v["dtype"] for k, v in out["tensors"].items()} == {"w": "F32", "b": "F16", "i": "I32"}
    for k, v in tensors.items():
        assert bytes.fromhex(out["tensors"][k]["hex"]) == v.tobytes()
    p = tool("dump", path, check=False)
    assert p.returncode == 1
    assert path in p.stderr and "not a Kiln checkpoint" in p.stderr


def test_plain_files_are_byte_identical(tmp_path):
    path = str(tmp_path / "kiln.safetensors")
    tool("write-plain", path)
    ours = open(path, "rb").read()
    theirs = save(reference_tensors(), metadata={"framework": "kiln"})
    assert ours == theirs


def test_resaved_by_python_still_valid(tmp_path):
    """safetensors re-serialises __metadata__ in hash order; the canonical header
    checksum does not depend on it."""
    a, b = str(tmp_path / "a.safetensors"), str(tmp_path / "b.safetensors")
    tool("write-ref", a)
    with safe_open(a, framework="np") as f:
        meta = f.metadata()
    save_file(load_file(a), b, metadata=meta)
    assert json.loads(tool("dump", b).stdout)["metadata"] == meta


def test_python_flags_what_kiln_flags(tmp_path):
    """A truncated Kiln file is refused by both implementations."""
    path = str(tmp_path / "t.safetensors")
    tool("write-ref", path)
    raw = open(path, "rb").read()
    open(path, "wb").write(raw[:-4])
    with pytest.raises(Exception):
        load_file(path)
    p = tool("dump", path, check=False)
    assert p.returncode == 1 and path in p.stderr and "truncated" in p.stderr


TORCH_SNIPPET = r"""
import json, struct, sys, torch
path = sys.argv[1]
with open(path, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = bytearray(f.read())
dtypes = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "U8": torch.uint8}
weights = {}
for name, t in header.items():
    if name == "__metadata__" or not name.startswith("model."):
        continue
    b, e = t["data_offsets"]
    x = torch.frombuffer(data[b:e], dtype=dtypes[t["dtype"]]) if e > b else \
        torch.empty(0, dtype=dtypes[t["dtype"]])
    weights[name[len("model."):]] = x.reshape(t["shape"])
print(json.dumps({k: v.flatten().tolist() for k, v in weights.items()}))
"""


def test_torch_reads_weights_without_safetensors(tmp_path):
    """The doc's PyTorch recipe, under Debian's python3-torch (no safetensors there)."""
    py = "/usr/bin/python3"
    if not os.path.exists(py) or subprocess.run([py, "-c", "import torch"],
                                                capture_output=True).returncode != 0:
        pytest.skip("no /usr/bin/python3 with torch")
    path = str(tmp_path / "ckpt.safetensors")
    tool("write-ref", path)
    p = subprocess.run([py, "-c", TORCH_SNIPPET, path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    want = reference_tensors()
    assert sorted(got) == sorted(k[len("model."):] for k in want if k.startswith("model."))
    for k, v in got.items():
        np.testing.assert_array_equal(np.array(v, dtype=np.float32),
                                      want["model." + k].flatten())
