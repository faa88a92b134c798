"""The built-in mlp(256) as a PyTorch module: Linear(features, 256), ReLU,
Linear(256, classes), softmax cross-entropy (the default loss). Its flat
parameter vector is laid out as dtsim's (each weight out x in, row-major,
then its bias), so the same vector gives the same loss and gradient
(tests/workloads/test_torch.c checks it to 1e-5); the initialisation draws
from the same distribution (He: N(0, 2 / fan_in), biases 0), not the same
numbers."""
import torch.nn as nn


def model(shape, classes):
    features = 1
    for s in shape:
        features *= s
    net = nn.Sequential(nn.Flatten(), nn.Linear(features, 256), nn.ReLU(),
                        nn.Linear(256, classes))
    for layer in (net[1], net[3]):
        nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
        nn.init.zeros_(layer.bias)
    return net
