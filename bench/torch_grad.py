#!/usr/bin/env python3
"""PyTorch's loss-and-gradient throughput on the architectures of dtsim's
models (bench/bench_grad.c), one thread, random data of the same shapes:
the figure bench_grad prints beside its own. Needs Debian's python3-torch;
prints nothing but a note without it.

Output, one line per model and batch: NAME BATCH SAMPLES_PER_SECOND.
Usage: torch_grad.py [MIN_SECONDS]"""
import os
import sys
import time

# One thread, really: Debian's torch does its dense algebra through the
# system BLAS (OpenBLAS, BLAS_INFO=generic), whose own thread pool
# torch.set_num_threads does not reach; unset, it ran two threads at batch
# 128 (CPU/wall 2.0 on the 2-core machine). Set before torch loads.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("# python3-torch is not installed: no PyTorch figures")
    sys.exit(0)

MIN_SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
torch.set_num_threads(1)
torch.manual_seed(1)


class CharLM(nn.Module):
    """charlm(8, 16, 256) over 96 symbols: embeddings concatenated, a tanh
    hidden layer, a softmax over the symbols."""

    def __init__(self, k=8, emb=16, hidden=256, vocab=96):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.hidden = nn.Linear(k * emb, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(self.embed(x).flatten(1))))


class CNN(nn.Module):
    """cnn(16, 32): conv 5x5, ReLU, 2x2 max-pool, twice, then a dense layer."""

    def __init__(self, c1=16, c2=32, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 5)
        self.conv2 = nn.Conv2d(c1, c2, 5)
        self.fc = nn.Linear(4 * 4 * c2, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def mlp(*hidden):
    layers, width = [], 784
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    return nn.Sequential(*layers, nn.Linear(width, 10))


def models():
    image = lambda b: torch.rand(b, 784)
    yield "linreg", nn.Linear(784, 1), image, lambda b: torch.rand(b, 1), F.mse_loss
    yield ("logreg", nn.Linear(784, 1), image, lambda b: torch.randint(0, 2, (b, 1)).float(),
           F.binary_cross_entropy_with_logits)
    cls = lambda b: torch.randint(0, 10, (b,))
    yield "softmax", nn.Linear(784, 10), image, cls, F.cross_entropy
    yield "mlp(256)", mlp(256), image, cls, F.cross_entropy
    yield "mlp(256, 128)", mlp(256, 128), image, cls, F.cross_entropy
    yield "cnn", CNN(), lambda b: torch.rand(b, 1, 28, 28), cls, F.cross_entropy
    yield ("charlm", CharLM(), lambda b: torch.randint(0, 96, (b, 8)),
           lambda b: torch.randint(0, 96, (b,)), F.cross_entropy)


def bench(model, x, y, loss_fn):
    """Best round's samples/s: rounds of about 2 ms (sized by a warm-up
    call) until MIN_SECONDS, as bench_grad times dtsim's side."""
    params = list(model.parameters())

    def step():
        loss = loss_fn(model(x), y)
        torch.autograd.grad(loss, params)

    t0 = time.perf_counter()
    step()
    calls = max(1, int(0.002 / max(time.perf_counter() - t0, 1e-9)))
    best, start = float("inf"), time.perf_counter()
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            step()
        t = time.perf_counter()
        best = min(best, (t - t0) / calls)
        if t - start >= MIN_SECONDS:
            return x.shape[0] / best


print(f"# PyTorch {torch.__version__}, torch.set_num_threads(1) and "
      "OPENBLAS_NUM_THREADS=1, best round of ~2 ms")
wall0, cpu0 = time.perf_counter(), time.process_time()
for name, model, make_x, make_y, loss_fn in models():
    for batch in (32, 128):
        sps = bench(model, make_x(batch), make_y(batch), loss_fn)
        print(f"{name}\t{batch}\t{sps:.0f}", flush=True)
ratio = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
print(f"# PyTorch's process CPU time / wall time over these figures: {ratio:.2f} (1.00 = one core)")
