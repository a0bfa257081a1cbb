"""The shipped networks (%%model NAME NETWORK) against the same networks in PyTorch.

zoo_names_tool builds each Kiln network from its shipped spec (no backend, no data) and
prints its trainable parameter count and its tensors in checkpoint order. Here the same
network is built in PyTorch: from torchvision.models where torchvision has it
(weights=None), otherwise written here from torchvision's own blocks (the CIFAR ResNets
of He et al. 2016 are torchvision's ResNet layout with its BasicBlock) or plainly
(LeNet-5). The parameter count must be equal, and the state_dict, less its
num_batches_tracked counters, must have Kiln's names and shapes in Kiln's order, the
running statistics being buffers on both sides. The PyTorch network also runs on the
input shape, so its shapes are the ones that network really takes.
Runs under Debian's /usr/bin/python3 (python3-torch, python3-torchvision), which has
no pytest: a plain script, exit 0 / 1, and 77 (meson's skip) without torch or the tool.
"""
import os
import subprocess
import sys
import traceback

try:
    import torch
    import torchvision
    from torchvision.models.resnet import BasicBlock
except ImportError as e:
    print("SKIP: %s for %s (apt install python3-torch python3-torchvision)" % (e, sys.executable))
    sys.exit(77)
nn = torch.nn
TOOL = os.environ.get("ZOO_NAMES_TOOL")


def kiln(net, chw, classes):
    p = subprocess.run([TOOL, net, chw, str(classes)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    params = int(lines[0].split()[1])
    tensors = []
    for line in lines[1:]:
        name, shape, kind = line.split()
        tensors.append((name, tuple(int(d) for d in shape.split("x")), kind))
    return params, tensors


class CifarResNet(nn.Module):
    """He et al.'s CIFAR ResNet of depth 6n + 2 in torchvision's layout: conv1/bn1, three
    stages (layer1..3) of torchvision BasicBlocks at 16, 32, 64 channels, the first block
    of stages 2 and 3 at stride 2 with a 1x1 conv + BN downsample (option B), fc."""

    def __init__(self, depth, classes, cin=3):
        super().__init__()
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(cin, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        width = 16
        for s, k in enumerate((16, 32, 64)):
            blocks = []
            for b in range(n):
                stride = 2 if s > 0 and b == 0 else 1
                down = None
                if stride != 1 or width != k:
                    down = nn.Sequential(nn.Conv2d(width, k, 1, stride, bias=False),
                                         nn.BatchNorm2d(k))
                blocks.append(BasicBlock(width, k, stride, down))
                width = k
            setattr(self, "layer%d" % (s + 1), nn.Sequential(*blocks))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class LeNet5(nn.Module):
    """LeCun et al. 1998 with ReLU and max pooling; a 28x28 input padded by 2."""

    def __init__(self, classes, cin, size):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, 6, 5, padding=2 if size == 28 else 0)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc3(torch.relu(self.fc2(x)))


def check(net, model, chw, classes):
    params, tensors = kiln(net, chw, classes)
    c, h, w = (int(v) for v in chw.split("x"))
    model.eval()
    with torch.no_grad():
        assert tuple(model(torch.zeros(2, c, h, w)).shape) == (2, classes)
    want = sum(p.numel() for p in model.parameters())
    assert params == want, "%s: %d parameters, PyTorch %d" % (net, params, want)
    buffers = {k for k, _ in model.named_buffers()}
    ref = [(k, tuple(v.shape), "buffer" if k in buffers else "param")
           for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")]
    assert len(tensors) == len(ref), (net, len(tensors), len(ref))
    for got, exp in zip(tensors, ref):
        assert got == exp, "%s: Kiln has %s where PyTorch has %s" % (net, got, exp)
    print("%-10s %s, %d classes: %d parameters, %d tensors as PyTorch's" %
          (net, chw, classes, params, len(tensors)))


def test_cifar_resnets():
    for depth in (20, 32, 44, 56, 110):
        check("resnet%d" % depth, CifarResNet(depth, 10), "3x32x32", 10)
    check("resnet20", CifarResNet(20, 7, cin=1), "1x28x28", 7)   # another input, classes


def test_lenet5():
    check("lenet5", LeNet5(10, 1, 28), "1x28x28", 10)
    check("lenet5", LeNet5(100, 3, 32), "3x32x32", 100)


class no_init:
    """Builds torchvision's networks without drawing their initial weights (the names,
    shapes and counts do not depend on them; VGG's 138 M draws take seconds)."""
    names = ("kaiming_normal_", "kaiming_uniform_", "normal_", "constant_", "uniform_",
             "zeros_", "ones_")

    def __enter__(self):
        self.saved = {n: getattr(nn.init, n) for n in self.names}
        for n in self.names:
            setattr(nn.init, n, lambda t, *a, **k: t)

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(nn.init, n, f)


def test_torchvision_networks():
    tv = torchvision.models
    with no_init():
        nets = [("resnet18", tv.resnet18(weights=None, num_classes=10), "3x32x32", 10),
                ("resnet18", tv.resnet18(weights=None), "3x64x64", 1000),   # 11,689,512
                ("resnet34", tv.resnet34(weights=None, num_classes=10), "3x32x32", 10),
                ("vgg11_bn", tv.vgg11_bn(weights=None, num_classes=10), "3x32x32", 10),
                ("vgg16_bn", tv.vgg16_bn(weights=None), "3x32x32", 1000)]   # 138,365,992
    for net, model, chw, classes in nets:
        for p in model.parameters():
            p.data.zero_()      # defined values for the forward pass
        check(net, model, chw, classes)


def test_mobilenetv2():
    """torchvision's mobilenet_v2: depthwise convolutions (groups), ReLU6, linear
    bottlenecks; 2,236,682 parameters for 10 classes, 3,504,872 for 1000."""
    tv = torchvision.models
    with no_init():
        nets = [("mobilenetv2", tv.mobilenet_v2(weights=None, num_classes=10), "3x32x32", 10),
                ("mobilenetv2", tv.mobilenet_v2(weights=None), "3x64x64", 1000)]
    for net, model, chw, classes in nets:
        for p in model.parameters():
            p.data.zero_()
        check(net, model, chw, classes)


def main():
    if not TOOL:
        print("SKIP: ZOO_NAMES_TOOL not set (run through meson)")
        return 77
    failed = 0
    for t in (test_cifar_resnets, test_lenet5, test_torchvision_networks, test_mobilenetv2):
        try:
            t()
            print("PASS", t.__name__)
        except Exception:
            failed += 1
            print("FAIL", t.__name__)
            traceback.print_exc()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
