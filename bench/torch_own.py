"""PyTorch's own training step on a torch(FILE) module, for bench_torch:
zero_grad, forward, cross-entropy, backward on random data of the shape
dtsim would hand the module, one thread, in the helper's environment (the
same process set-up: python/torch_helper.py's tune_process and loading).

Usage: torch_own.py FILE C H W DIM CLASSES CONTEXT BATCH SECONDS
Prints: SAMPLES_PER_SECOND (the best of three rounds of SECONDS / 3)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch_helper  # noqa: E402


def main():
    torch_helper.tune_process()
    file, c, h, w, dim, classes, context, batch, seconds = sys.argv[1:]
    run = torch_helper.Run([file, c, h, w, dim, classes, context, "cpu", "off", "1"])
    run.load()
    torch = run.torch
    b = int(batch)
    gen = torch.Generator().manual_seed(1)
    if run.context > 0:
        x = torch.randint(0, run.classes, (b, run.dim), generator=gen).float()
    else:
        x = torch.randn((b, run.dim), generator=gen)
    y = torch.randint(0, run.classes, (b,), generator=gen).float()
    xs, t = run.inputs(x, y)
    module = run.module
    module.train()
    best = 0.0
    for _ in range(3):
        n, t0 = 0, time.perf_counter()
        while True:
            module.zero_grad(set_to_none=True)
            out = module(xs)
            run.loss(out, run.target_for(out, t)).backward()
            n += 1
            el = time.perf_counter() - t0
            if el >= float(seconds) / 3:
                break
        best = max(best, n * b / el)
    print("%.1f" % best)


if __name__ == "__main__":
    main()
