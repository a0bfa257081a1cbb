"""ONNX export: %export in a notebook and `kiln export` on its run directory.

A folder of PNG and JPEG files (three classes, train and test splits, sizes that are
resized and cropped) is generated here; `kiln run` loads it, trains a model briefly
and exports it; `kiln export` exports the newest checkpoint of the run directory.
Both files must pass onnx.checker (full_check), and onnxruntime alone, fed the test
split's pixels / 255 as the metadata says, must give what Kiln gives: the same top-1
as %predict's evaluation on every test image and logits within 1e-4 (onnx_ref_tool
computes Kiln's side from the same checkpoint). For the tutorial CNN, the shipped
ResNet-20, a model with the remaining layer kinds and one with a pooled head. Then
every bad input: a clear error and no file left behind.
Every shipped network (%%model NAME NETWORK) is exported untrained too (zoo_onnx_tool:
its initial weights, batch-norm statistics of its own, a few random inputs), and
onnxruntime must give Kiln's top-1 and logits; as must a model with grouped and
depthwise convolutions and every activation.
"""
import json
import os
import subprocess

import nbformat
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from PIL import Image

TOOL = os.environ.get("ONNX_REF_TOOL")
ZOO_TOOL = os.environ.get("ZOO_ONNX_TOOL")
KILN = os.environ.get("KILN")
pytestmark = pytest.mark.skipif(not TOOL or not KILN, reason="run through meson")

CLASSES = ("circle", "square", "stripes")
TUTORIAL_CNN = """conv2d 32 3
relu
conv2d 64 3
relu
maxpool 2
dropout 0.25
flatten
dense 128
relu
dropout 0.5
dense 3"""
# the layer kinds the other two do not have: avgpool, leakyrelu, stride without
# padding, batch norm on features, dense after global average pooling, a conv and a
# dense without bias (Conv without B, Gemm without C), and a model that ends in a
# layer with nothing to compute at inference
OTHER_LAYERS = """conv2d 8 3 stride=2 bias=false
batchnorm
leakyrelu slope=0.1
avgpool 2
conv2d 6 1
globalavgpool
dense 12 bias=false
batchnorm
relu
dense 3
dropout 0.1"""
# a head without dense: 1x1 convolution to the classes, then global average pooling
GAP_HEAD = """conv2d 8 3 pad=same
relu
conv2d 3 1
globalavgpool"""
# padded max and average pooling (ResNet's stem pool; the average counts the padding),
# adaptive pooling with unequal windows (two MatMuls) and with equal ones (AveragePool)
POOLS = """conv2d 4 3 pad=1
relu
maxpool 3 stride=2 pad=1
avgpool 3 stride=1 pad=1
adaptiveavgpool 3
conv2d 6 1
adaptiveavgpool 3 1
flatten
dense 3"""


# grouped and depthwise convolutions and the activations beyond relu (Clip, Sigmoid,
# Tanh, Erf for gelu, Sigmoid and Mul for silu), with a linear bottleneck
ACTIVATIONS = """conv2d 8 3 pad=1
relu6
conv2d 8 3 pad=1 groups=8 bias=false
batchnorm
sigmoid
conv2d 12 1 groups=4
tanh
residual:
    conv2d 12 3 stride=1 pad=1 groups=12
    gelu
    conv2d 12 1 bias=false
    batchnorm
conv2d 12 3 stride=2 pad=1 groups=3
silu
globalavgpool
flatten
dense 3"""


def picture(rng, cls, w, h):
    y, x = np.mgrid[0:h, 0:w]
    if cls == 0:
        on = (x - w / 2) ** 2 + (y - h / 2) ** 2 < (min(w, h) / 3) ** 2
    elif cls == 1:
        on = (abs(x - w / 2) < w / 4) & (abs(y - h / 2) < h / 4)
    else:
        on = (x // 3) % 2 == 0
    base = np.where(on, 200, 40)[..., None] + rng.integers(-30, 31, size=(h, w, 3))
    base[..., cls] += 30
    return Image.fromarray(np.clip(base, 0, 255).astype(np.uint8), "RGB")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx")
    rng = np.random.default_rng(3)
    sizes = [(16, 16), (20, 16), (24, 30), (13, 17)]
    for split, n in (("train", 10), ("test", 5)):
        for c, name in enumerate(CLASSES):
            d = root / "data" / split / name
            d.mkdir(parents=True)
            for i in range(n):
                w, h = sizes[(i + c) % len(sizes)]
                ext = "jpg" if i % 3 == 2 else "png"
                picture(rng, c, w, h).save(d / ("%02d.%s" % (i, ext)))
    return root


def env_for(root):
    env = dict(os.environ)
    env["KILN_IMAGE_CACHE"] = str(root / "cache")
    env["KILN_RESULTS"] = str(root / "results.sqlite")
    return env


def run_notebook(root, name, cells):
    """Runs the cells with `kiln run`; (exit status, result notebook, stderr)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    path = root / (name + ".ipynb")
    nbformat.write(nb, str(path))
    out = root / (name + ".out.ipynb")
    p = subprocess.run([KILN, "run", str(path), "-o", str(out)], cwd=root, env=env_for(root),
                       capture_output=True, text=True, timeout=240)
    return p.returncode, nbformat.read(str(out), as_version=4), p.stderr


def errors(nb):
    return [(o.ename, o.evalue) for c in nb.cells for o in c.get("outputs", [])
            if o.output_type == "error"]


def stream(nb):
    return "".join(o.text for c in nb.cells for o in c.get("outputs", [])
                   if o.output_type == "stream")


def train_and_export(root, name, spec, size, lr):
    data = root / "data"
    run_dir = root / ("runs-" + name)
    rc, nb, err = run_notebook(root, name, [
        "%%dataset %s --size %d" % (data, size),
        "%%%%model %s %s" % (name, spec) if spec == "resnet20" else
        "%%%%model %s\n%s" % (name, spec),
        "%%train %s --epochs 1 --batch 10 --lr %g --seed 1 --run-dir %s" % (name, lr, run_dir),
        "%%export %s --onnx %s" % (name, root / (name + ".session.onnx")),
    ])
    assert rc == 0, (errors(nb), err[-2000:])
    out = stream(nb)
    assert "Exported '%s' to %s" % (name, root / (name + ".session.onnx")) in out
    assert "normalises with the mean and std of data set '%s'" % data in out
    headless = root / (name + ".run.onnx")
    p = subprocess.run([KILN, "export", str(run_dir), "--onnx", str(headless)],
                       env=env_for(root), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "ckpt-step" in p.stderr
    return run_dir, [root / (name + ".session.onnx"), headless]


def kiln_reference(root, run_dir, size):
    prefix = root / ("ref-" + run_dir.name)
    p = subprocess.run([TOOL, str(run_dir), str(root / "data"), str(size), "3", str(prefix)],
                       env=env_for(root), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    n, c, h, w, k = map(int, p.stdout.split())
    pixels = np.fromfile(str(prefix) + ".pixels", "<f4").reshape(n, c, h, w)
    logits = np.fromfile(str(prefix) + ".logits", "<f4").reshape(n, k)
    pred = np.fromfile(str(prefix) + ".pred", "<i4")
    return pixels, logits, pred


def check_file(path, pixels, logits, pred, size):
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version >= 17
    meta = {p.key: p.value for p in model.metadata_props}
    assert json.loads(meta["class_names"]) == list(CLASSES)
    assert meta["input_layout"] == "NCHW" and meta["input_name"] == "input"
    assert json.loads(meta["input_shape"]) == ["batch", 3, size, size]
    assert meta["normalization"].startswith("included")
    mean, std = json.loads(meta["mean"]), json.loads(meta["std"])
    assert len(mean) == len(std) == 3 and all(0 < s < 1 for s in std)
    ops = {n.op_type for n in model.graph.node}
    assert "Dropout" not in ops and {"Sub", "Div", "Softmax"} <= ops
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and [d.dim_value for d in dims[1:]] == [3, size, size]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got_logits, got_probs = sess.run(["logits", "probabilities"], {"input": pixels})
    assert np.array_equal(got_logits.argmax(1), pred), (got_logits.argmax(1), pred)
    assert np.array_equal(logits.argmax(1), pred)
    worst = np.abs(got_logits - logits).max()
    print("%s: %d images, max |logit difference| %.3g" % (path.name, len(pred), worst))
    assert worst <= 1e-4
    assert np.allclose(got_probs.sum(1), 1, atol=1e-5)
    one = sess.run(["logits"], {"input": pixels[:1]})[0]   # the batch dimension is free
    assert np.abs(one - logits[:1]).max() <= 1e-4
    return ops


def user_preprocess(path, c, h, w):
    """docs/export.md's preprocessing, as a user without Kiln writes it."""
    img = Image.open(path)
    img.draft(img.mode, (w, h))
    img = img.convert("RGB" if c == 3 else "L")
    iw, ih = img.size
    rw, rh = (max(w, h * iw // ih), h) if h * iw >= w * ih else (w, max(h, w * ih // iw))
    if (rw, rh) != (iw, ih):
        img = img.resize((rw, rh), Image.BILINEAR)
    left, top = (rw - w) // 2, (rh - h) // 2
    img = img.crop((left, top, left + w, top + h))
    return np.asarray(img, np.float32).reshape(h, w, c).transpose(2, 0, 1)[None] / 255


def check_user_story(work, path, pixels, pred):
    """Files of the test split through docs/export.md's code: Kiln's pixels and top-1."""
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    meta = sess.get_modelmeta().custom_metadata_map
    _, c, h, w = json.loads(meta["input_shape"])
    files = sorted((work / "data" / "test").glob("*/*"))
    assert len(files) == len(pred)
    mine = np.concatenate([user_preprocess(f, c, h, w) for f in files])
    # the loader's order is by class folder, then file name; pixels match one to one
    assert np.abs(mine - pixels).max() <= 1.0 / 255 + 1e-6
    probs = sess.run(["probabilities"], {"input": mine})[0]
    assert np.array_equal(probs.argmax(1), pred)


@pytest.mark.parametrize("name,spec,size,lr", [
    ("tutorial", TUTORIAL_CNN, 16, 0.01),
    ("resnet", "resnet20", 16, 0.01),
    ("others", OTHER_LAYERS, 16, 0.05),
    ("gap_head", GAP_HEAD, 16, 0.05),
    ("pools", POOLS, 16, 0.05),
    ("activations", ACTIVATIONS, 16, 0.05),
])
def test_export_matches_kiln(work, name, spec, size, lr):
    run_dir, files = train_and_export(work, name, spec, size, lr)
    pixels, logits, pred = kiln_reference(work, run_dir, size)
    assert len(pred) == 15
    check_user_story(work, files[1], pixels, pred)
    for f in files:
        ops = check_file(f, pixels, logits, pred, size)
        # inputs per Conv and Gemm: x, W and, when the layer has a bias, B (C for Gemm)
        inputs = [(n.op_type, len(n.input)) for n in onnx.load(str(f)).graph.node
                  if n.op_type in ("Conv", "Gemm")]
        if name == "resnet":
            assert {"Conv", "BatchNormalization", "Add", "GlobalAveragePool", "Gemm"} <= ops
            assert inputs == [("Conv", 2)] * 21 + [("Gemm", 3)], inputs   # no conv bias
        if name == "others":
            assert {"AveragePool", "LeakyRelu", "GlobalAveragePool", "Flatten"} <= ops
            assert inputs == [("Conv", 2), ("Conv", 3), ("Gemm", 2), ("Gemm", 3)], inputs
        if name == "tutorial":
            assert all(k == 3 for _, k in inputs), inputs
        if name == "activations":
            assert {"Clip", "Sigmoid", "Tanh", "Erf", "Mul", "Add"} <= ops
            groups = sorted(a.i for n in onnx.load(str(f)).graph.node if n.op_type == "Conv"
                            for a in n.attribute if a.name == "group")
            assert groups == [3, 4, 8, 12], groups
        if name == "pools":
            nodes = onnx.load(str(f)).graph.node
            assert [n.op_type for n in nodes].count("MatMul") == 2
            assert [n.op_type for n in nodes].count("AveragePool") == 2
            pads = [list(a.ints) for n in nodes if n.op_type in ("MaxPool", "AveragePool")
                    for a in n.attribute if a.name == "pads"]
            assert pads == [[1, 1, 1, 1]] * 2, pads


@pytest.fixture(scope="module")
def tutorial_run(work):
    """The tutorial CNN's run directory, trained and exported by
    test_export_matches_kiln[tutorial] or else here: when it cannot be made, the tests
    that need it fail with the reason instead of being skipped."""
    if not (work / "tutorial.run.onnx").exists():
        train_and_export(work, "tutorial", TUTORIAL_CNN, 16, 0.01)
    return work / "runs-tutorial"


def test_checkpoint_load_uses_its_own_data_set(work, tutorial_run):
    """A model loaded from a checkpoint in a new kernel where another data set (same
    shape and classes, other pictures) was loaded last: %evaluate, %predict and %export
    use the data set the checkpoint names, reopened with its options, not the last one;
    one loaded under the same name with other options is refused, naming both."""
    run_dir = tutorial_run
    data, other = work / "data", work / "other"
    if not other.exists():   # the same files under rotated class names
        for f in sorted(data.glob("*/*/*")):
            rel = f.relative_to(data)
            cls = CLASSES[(CLASSES.index(rel.parts[1]) + 1) % 3]
            dst = other / rel.parts[0] / cls / rel.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(f.read_bytes())
    out = work / "loaded.onnx"
    rc, nb, err = run_notebook(work, "loaded", [
        "%%dataset %s --size 16" % other,
        "%%checkpoint load %s" % run_dir,
        "%evaluate tutorial",
        "%predict tutorial --samples 4",
        "%%predict tutorial %s" % (data / "test" / "square" / "00.png"),
        "%%export tutorial --onnx %s" % out])
    assert rc == 0, (errors(nb), err[-2000:])
    text = stream(nb) + "".join(o.data.get("text/plain", "") for c in nb.cells
                                for o in c.get("outputs", []) if "data" in o)
    _, _, pred = kiln_reference(work, run_dir, 16)
    truth = np.repeat(np.arange(3), 5)
    acc = float((pred == truth).mean())
    assert "tutorial on data/test: accuracy %.4f" % acc in text, text
    assert "normalises with the mean and std of data set '%s'" % data in text
    meta = {p.key: p.value for p in onnx.load(str(out)).metadata_props}
    full = {p.key: p.value for p in onnx.load(str(work / "tutorial.run.onnx")).metadata_props}
    assert meta["class_names"] == full["class_names"]
    for key in ("mean", "std"):
        assert np.allclose(json.loads(meta[key]), json.loads(full[key]))
    rc, nb, err = run_notebook(work, "loaded-bad", [
        "%%dataset %s --size 8" % data,
        "%%checkpoint load %s" % run_dir,
        "%evaluate tutorial"])
    errs = errors(nb)
    assert rc == 1 and len(errs) == 1 and errs[0][0] == "ValueError", (errs, err[-1000:])
    assert "%%evaluate: data set '%s' here is not the one checkpoint" % data in errs[0][1]
    assert str(run_dir) in errs[0][1]


def test_magic_errors(work):
    data, out = work / "data", work / "bad.onnx"
    model = "%%model m --input 3x8x8 --classes 3\nconv2d 4 3\nrelu\nflatten\ndense 3"
    cases = [
        (["%%export nope --onnx %s" % out], "NameError", "no model named 'nope'"),
        (["%%export --onnx %s" % out], "UsageError", "no model defined yet"),
        (["%%dataset %s --size 8" % data, model, "%%export m --onnx %s" % out],
         "UsageError", "has not been trained"),
        ([model, "%export m"], "UsageError", "--onnx FILE"),
        ([model, "%export m --onnx"], "UsageError", "--onnx"),
        ([model, "%%export m --onxx %s" % out], "UsageError", "--onxx"),
        ([model, "%%export m n --onnx %s" % out], "UsageError", "one model name"),
        (["%%dataset %s --size 8" % data, model, "%train m --epochs 1 --batch 10",
          "%export m --onnx /nonexistent-dir/m.onnx"], "OSError", "/nonexistent-dir/m.onnx"),
    ]
    for i, (cells, ename, text) in enumerate(cases):
        rc, nb, err = run_notebook(work, "bad%d" % i, cells)
        assert rc == 1, (cells, err[-1000:])
        errs = errors(nb)
        assert len(errs) == 1 and errs[0][0] == ename and text in errs[0][1], (cells, errs)
    assert not out.exists()


def test_cli_errors(work):
    env = env_for(work)
    empty = work / "empty-run"
    empty.mkdir()
    out = work / "cli.onnx"
    cases = [
        ([str(work / "no-such-run"), "--onnx", str(out)], 1, "no-such-run"),
        ([str(empty), "--onnx", str(out)], 1, str(empty)),
        ([str(empty)], 2, "--onnx FILE is required"),
        ([], 2, "which run directory"),
        ([str(empty), "--onnx"], 2, "'--onnx' without a FILE"),
        ([str(empty), "--onxx", str(out)], 2, "unknown option '--onxx'"),
        ([str(empty), str(empty), "--onnx", str(out)], 2, "one run directory"),
        (["s3://bucket/run", "--onnx", str(out)], 1, "object store"),
        ([str(work / "data" / "train" / "circle" / "00.png"), "--onnx", str(out)], 1,
         "00.png"),
    ]
    runs = sorted(work.glob("runs-*"))
    if runs:   # a real run directory, an unwritable destination
        cases.append(([str(runs[0]), "--onnx", "/nonexistent-dir/x.onnx"], 1,
                      "/nonexistent-dir/x.onnx"))
    for args, code, text in cases:
        p = subprocess.run([KILN, "export"] + args, env=env, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == code and text in p.stderr, (args, p.returncode, p.stderr)
    assert not out.exists()


# every shipped network: (name, input, classes); small inputs, four images
ZOO = [("resnet20", "3x32x32", 10), ("resnet32", "3x32x32", 10), ("resnet44", "3x32x32", 10),
       ("resnet56", "3x32x32", 10), ("resnet110", "3x32x32", 10), ("resnet18", "3x32x32", 10),
       ("resnet34", "3x32x32", 10), ("vgg11_bn", "3x32x32", 10), ("vgg16_bn", "3x32x32", 10),
       ("lenet5", "1x28x28", 10), ("mobilenetv2", "3x32x32", 10)]


@pytest.mark.skipif(not ZOO_TOOL, reason="run through meson")
def test_zoo_covers_every_shipped_network():
    p = subprocess.run([ZOO_TOOL, "--list"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.split()) == sorted(name for name, _, _ in ZOO)


@pytest.mark.skipif(not ZOO_TOOL, reason="run through meson")
@pytest.mark.parametrize("net,chw,classes", ZOO)
def test_zoo_export_matches_kiln(tmp_path, net, chw, classes):
    prefix = tmp_path / net
    p = subprocess.run([ZOO_TOOL, net, chw, str(classes), "4", str(prefix)],
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    n, c, h, w, k = map(int, p.stdout.split())
    pixels = np.fromfile(str(prefix) + ".pixels", "<f4").reshape(n, c, h, w)
    logits = np.fromfile(str(prefix) + ".logits", "<f4").reshape(n, k)
    path = str(prefix) + ".onnx"
    onnx.checker.check_model(path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(["logits"], {"input": pixels})[0]
    scale = np.abs(logits).max()
    worst = np.abs(got - logits).max() / scale
    print("%s: %d images, max |logit difference| %.3g of %.3g" % (net, n, worst, scale))
    assert np.array_equal(got.argmax(1), logits.argmax(1)), (got.argmax(1), logits.argmax(1))
    assert worst <= 1e-4
    ops = {nd.op_type for nd in onnx.load(path, load_external_data=False).graph.node}
    if net == "mobilenetv2":
        assert {"Conv", "Clip", "Add", "BatchNormalization", "Gemm"} <= ops
        groups = [a.i for nd in onnx.load(path).graph.node if nd.op_type == "Conv"
                  for a in nd.attribute if a.name == "group"]
        assert len(groups) == 17 and all(g > 1 for g in groups), groups
