"""A small residual network (ResNet-8 style) for dtsim's image data sets
(Fashion-MNIST: shape (1, 28, 28)): a 3x3 stem of 16 channels, three
stages of one basic block each (16, 32, 64 channels; the last two halve
the resolution, with a 1x1 projection on the shortcut), global average
pooling, a linear layer to the classes. GroupNorm instead of BatchNorm:
no buffers, so the workers' models are just their parameters (a BatchNorm
module would also run; its running statistics stay per worker and are
never averaged). 77,754 parameters for 10 classes."""
import torch.nn as nn
import torch.nn.functional as F


def norm(channels):
    return nn.GroupNorm(min(8, channels // 2), channels)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.n1 = norm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.n2 = norm(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), norm(cout))

    def forward(self, x):
        y = F.relu(self.n1(self.conv1(x)))
        y = self.n2(self.conv2(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet8(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(channels, 16, 3, 1, 1, bias=False), norm(16),
                                  nn.ReLU())
        self.stage1 = Block(16, 16, 1)
        self.stage2 = Block(16, 32, 2)
        self.stage3 = Block(32, 64, 2)
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        x = self.stage3(self.stage2(self.stage1(self.stem(x))))
        return self.head(x.mean((2, 3)))


def model(shape, classes):
    return ResNet8(shape[0], classes)
