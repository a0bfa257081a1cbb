"""--init from torchvision's weights: a torchvision network with random weights and
random batch-norm statistics, its state_dict saved as safetensors (written here: the
format is a JSON header and raw bytes), loaded into the same shipped Kiln network by
init_ref_tool (rt_model_init_file), whose eval-mode logits must equal torch's to 1e-4.
Checked for resnet18 and mobilenetv2 (torchvision's mobilenet_v2). Also: the same
weights stored as F16 (torch's own rounding of them gives the reference), a head for 1000 classes loaded into a 10-class network (every body tensor loaded, the head
new; --init-strict refuses it), and PyTorch's num_batches_tracked counters ignored.
Runs under Debian's /usr/bin/python3 (python3-torch, python3-torchvision), which has no
pytest: a plain script, exit 0 / 1, and 77 (meson's skip) without torch or the tool.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import torch
    import torchvision
except ImportError as e:
    print("SKIP: %s for %s (apt install python3-torch python3-torchvision)" % (e, sys.executable))
    sys.exit(77)
TOOL = os.environ.get("INIT_REF_TOOL")
DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.int64: "I64"}
# the networks checked, as torchvision builds them: Kiln's name, the builder, the head's
# tensor prefix and its input features
NETS = [("resnet18", lambda classes: torchvision.models.resnet18(weights=None,
                                                                  num_classes=classes),
         "fc", 512),
        ("mobilenetv2", lambda classes: torchvision.models.mobilenet_v2(weights=None,
                                                                         num_classes=classes),
         "classifier.1", 1280)]


def save_safetensors(state, path, half=False):
    header, blobs, off = {}, [], 0
    for name, t in state.items():
        t = t.detach().contiguous()
        if half and t.dtype == torch.float32:
            t = t.half()
        raw = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def randomize(model):
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
                m.num_batches_tracked.fill_(123)
            if isinstance(m, torch.nn.Linear):   # logits of a useful size (not ~0)
                m.weight.copy_((torch.rand(m.weight.shape, generator=g) - 0.5) * 0.2)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
    model.eval()
    return model


def kiln(tmp, net, chw, classes, weights, x, strict=False):
    xin, out = os.path.join(tmp, "x.bin"), os.path.join(tmp, "logits.bin")
    x.numpy().astype("<f4").tofile(xin)
    args = [TOOL, net, chw, str(classes), weights, xin, str(x.shape[0]), out]
    p = subprocess.run(args + (["strict"] if strict else []), capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        return None, p.stdout + p.stderr
    y = torch.frombuffer(bytearray(open(out, "rb").read()), dtype=torch.float32)
    return y.reshape(x.shape[0], classes), p.stdout.strip()


def check(net, make, head, feat, tmp):
    torch.manual_seed(0)
    model = randomize(make(10))
    x = torch.randn(2, 3, 32, 32)
    w = os.path.join(tmp, net + ".safetensors")
    save_safetensors(model.state_dict(), w)
    with torch.no_grad():
        want = model(x)
    got, report = kiln(tmp, net, "3x32x32", 10, w, x, strict=True)
    assert got is not None, report
    n = len([k for k in model.state_dict() if not k.endswith("num_batches_tracked")])
    assert report == "loaded %d tensors, 0 new, 0 skipped" % n, report
    err = (got - want).abs().max().item()
    assert want.abs().max().item() > 0.1, "%s: logits too small to compare" % net
    assert err < 1e-4, "%s: logits differ by %g" % (net, err)
    print("%s: %d tensors loaded, logits within %.2g of torch's" % (net, n, err))

    # F16: Kiln widens each value; torch's model with the rounded weights is the reference
    save_safetensors(model.state_dict(), w, half=True)
    ref = randomize(make(10))
    ref.load_state_dict({k: (v.half().float() if v.dtype == torch.float32 else v)
                         for k, v in model.state_dict().items()})
    with torch.no_grad():
        want = ref.eval()(x)
    got, report = kiln(tmp, net, "3x32x32", 10, w, x, strict=True)
    assert got is not None, report
    err = (got - want).abs().max().item()
    assert err < 1e-4, "%s F16: logits differ by %g" % (net, err)

    # ImageNet's 1000-class head into a 10-class network: the body loads, the head is new
    big = randomize(make(1000))
    save_safetensors(big.state_dict(), w)
    got, report = kiln(tmp, net, "3x32x32", 10, w, x)
    assert got is not None, report
    want = ("loaded %d tensors, 2 new (%s.weight (10x%d, source 1000x%d), %s.bias (10, source "
            "1000)), 0 skipped" % (n - 2, head, feat, feat, head))
    assert report == want, report
    got, report = kiln(tmp, net, "3x32x32", 10, w, x, strict=True)
    assert got is None and "does not match the model exactly" in report, report
    print("%s: a 1000-class head into 10 classes: %s" % (net, report))


def main():
    if not TOOL or not os.path.exists(TOOL):
        print("SKIP: INIT_REF_TOOL is not built")
        return 77
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for net, make, head, feat in NETS:
            try:
                check(net, make, head, feat, tmp)
            except AssertionError:
                import traceback
                traceback.print_exc()
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
