"""SVHN's MAT files as scipy writes them (level 5, compressed or not, y as doubles or
uint8) and pixel CSVs as numpy writes them, loaded by imgset_tool (rt_dataset_load)
and compared byte for byte with what numpy says the images are: X[:, :, :, n] is image
n as H x W x C, so the split's (C, H, W) bytes are X.transpose(3, 2, 0, 1); label 10
is the digit 0. An interleaved CSV row is numpy's img.reshape(-1) of an H x W x C
image."""
import os
import subprocess

import numpy as np
import pytest

scipy_io = pytest.importorskip("scipy.io")
TOOL = os.environ["IMGSET_TOOL"]


def load(path, *args, dump=None):
    cmd = [TOOL, str(path), *args] + (["--dump", str(dump)] if dump else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    out = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        out[k] = v
    return p.returncode, out


def split_bytes(dump, counts, chw):
    raw, at, res = dump.read_bytes(), 0, []
    size = int(np.prod(chw))
    for n in counts:
        px = np.frombuffer(raw, np.uint8, n * size, at).reshape(n, *chw)
        at += n * size
        lab = np.frombuffer(raw, np.uint8, n, at)
        at += n
        res.append((px, lab))
    return res


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("ytype", [np.float64, np.uint8])
def test_svhn_as_scipy_writes_it(tmp_path, compress, ytype):
    rng = np.random.default_rng(7)
    sets = {}
    for name, n in (("train", 11), ("test", 4)):
        X = rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)
        y = (np.arange(n) % 10 + 1).astype(ytype).reshape(n, 1)  # 1..10
        scipy_io.savemat(tmp_path / f"{name}_32x32.mat", {"X": X, "y": y, "note": "extra var"},
                         do_compression=compress, format="5")
        sets[name] = (X, y)
    rc, out = load(tmp_path, dump=tmp_path / "dump")
    assert rc == 0, out.get("msg")
    assert out["n"] == "11 0 4" and out["shape"] == "3 32 32"
    (tr, trl), _, (te, tel) = split_bytes(tmp_path / "dump", [11, 0, 4], (3, 32, 32))
    for (px, lab), name in ((tr, trl), "train"), ((te, tel), "test"):
        X, y = sets[name]
        np.testing.assert_array_equal(px, X.transpose(3, 2, 0, 1))
        np.testing.assert_array_equal(lab, y.ravel().astype(int) % 10)


def test_svhn_label_zero_is_refused(tmp_path):
    X = np.zeros((32, 32, 3, 2), np.uint8)
    for name in ("train", "test"):
        scipy_io.savemat(tmp_path / f"{name}_32x32.mat", {"X": X, "y": np.array([[0.0], [3.0]])})
    rc, out = load(tmp_path)
    assert rc == 1
    assert "train_32x32.mat: label 0 is 0; SVHN's labels are 1..10" in out["msg"]


def write_csv(path, labels, rows, header=True):
    cols = ["label"] + [f"pixel{k}" for k in range(rows.shape[1])]
    data = np.column_stack([labels, rows])
    np.savetxt(path, data, fmt="%d", delimiter=",", header=",".join(cols), comments="")


def test_pixel_csv_as_numpy_writes_it(tmp_path):
    rng = np.random.default_rng(3)
    imgs = rng.integers(0, 256, (6, 5, 4, 3), dtype=np.uint8)  # N x H x W x C
    labels = np.array([0, 1, 2, 0, 1, 2])
    write_csv(tmp_path / "rgb.csv", labels, imgs.reshape(6, -1))
    rc, out = load(tmp_path / "rgb.csv", "--shape", "5x4x3", dump=tmp_path / "dump")
    assert rc == 0, out.get("msg")
    assert out["shape"] == "3 5 4" and out["n"] == "6 0 0"
    (px, lab), _, _ = split_bytes(tmp_path / "dump", [6, 0, 0], (3, 5, 4))
    np.testing.assert_array_equal(px, imgs.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(lab, labels)
    grey = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)  # Kaggle's digits: inferred
    write_csv(tmp_path / "train.csv", np.array([1, 7, 1]), grey.reshape(3, -1))
    rc, out = load(tmp_path / "train.csv", dump=tmp_path / "dump2")
    assert rc == 0 and out["shape"] == "1 28 28", out.get("msg")
    (px, lab), _, _ = split_bytes(tmp_path / "dump2", [3, 0, 0], (1, 28, 28))
    np.testing.assert_array_equal(px[:, 0], grey)
    assert out["classes"] == " ".join(str(c) for c in range(8))
