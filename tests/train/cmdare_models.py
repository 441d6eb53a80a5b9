"""The networks CM-DARE measured, rebuilt in PyTorch, and a pair that pools two ways.

CM-DARE (ICDCS 2020) published a FLOP count, parameters and speeds for TensorFlow CNNs; its
"Model FLOPs" are not a count of their arithmetic (docs/models.md, "One FLOP convention"). These
are the same networks as their papers define them, with parameter counts within 0.2% of
CM-DARE's, so that `transient profile` can count them:
  - ResNet-32 (He et al. 2016, CIFAR variant) of widths 32-64-128: CM-DARE's Res32;
  - Shake-Shake-26 2x32d and 2x96d (Gastaldi 2017): its shakesmall and shakebig (eval mode: the
    branches are averaged).
And two small CNNs, the same but for how they pool and apply their classifier: modules in one,
function calls (F.max_pool2d, a matrix product) in the other.

Usage: python3 cmdare_models.py OUT_DIR [NAME...]  (writes NAME.pt there; all by default)
"""
import sys

import torch
import torch.nn.functional as F
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


def three_stages(block, cin, w, n):
    """n blocks in each of three stages of widths w, 2w, 4w; each later stage halves the size."""
    blocks = []
    for stage, cout in enumerate([w, 2 * w, 4 * w]):
        for i in range(n):
            blocks.append(block(cin, cout, 2 if i == 0 and stage > 0 else 1))
            cin = cout
    return nn.Sequential(*blocks)


class ResNet(nn.Module):
    """ResNet-(6n+2) for 32x32 images, stages of widths w, 2w, 4w."""

    def __init__(self, n, w):
        super().__init__()
        self.conv = nn.Conv2d(3, w, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(w)
        self.blocks = three_stages(BasicBlock, w, w, n)
        self.fc = nn.Linear(4 * w, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn(self.conv(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class ShakeBranch(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        return self.bn2(self.conv2(F.relu(self.bn1(self.conv1(F.relu(x))))))


class ShakeShortcut(nn.Module):
    """Two strided 1x1 convolutions, one on the input shifted by a pixel, concatenated."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        self.conv1 = nn.Conv2d(cin, cout // 2, 1, bias=False)
        self.conv2 = nn.Conv2d(cin, cout // 2, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        x = F.relu(x)
        a = self.conv1(F.avg_pool2d(x, 1, self.stride))
        b = self.conv2(F.avg_pool2d(F.pad(x[:, :, 1:, 1:], (0, 1, 0, 1)), 1, self.stride))
        return self.bn(torch.cat([a, b], 1))


class ShakeBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.branch1 = ShakeBranch(cin, cout, stride)
        self.branch2 = ShakeBranch(cin, cout, stride)
        self.shortcut = ShakeShortcut(cin, cout, stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = 0.5 * self.branch1(x) + 0.5 * self.branch2(x)
        return y + (x if self.shortcut is None else self.shortcut(x))


class ShakeShake(nn.Module):
    """Shake-Shake-(6n+2) 2xWd for 32x32 images."""

    def __init__(self, n, w):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.blocks = three_stages(ShakeBlock, 16, w, n)
        self.fc = nn.Linear(4 * w, 10)

    def forward(self, x):
        x = self.blocks(self.bn(self.conv(x)))
        return self.fc(F.adaptive_avg_pool2d(F.relu(x), 1).flatten(1))


class ModulePooling(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class FunctionalPooling(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.weight = nn.Parameter(torch.randn(10, 16 * 7 * 7) * 0.01)
        self.bias = nn.Parameter(torch.zeros(10))

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return x.flatten(1) @ self.weight.t() + self.bias


def main(out, names):
    images = torch.randn(2, 3, 32, 32)
    traced = {"res32-32-64-128": lambda: ResNet(5, 32), "shake26-2x32d": lambda: ShakeShake(4, 32),
              "shake26-2x96d": lambda: ShakeShake(4, 96)}
    scripted = {"module-pooling": ModulePooling, "functional-pooling": FunctionalPooling}
    for name in names or [*traced, *scripted]:
        if name in traced:
            torch.jit.trace(traced[name]().eval(), images).save(f"{out}/{name}.pt")
        else:
            torch.jit.script(scripted[name]()).save(f"{out}/{name}.pt")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
