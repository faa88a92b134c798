"""PyTorch's own training step on a torch(FILE) module, for bench_torch,
and the helper's two ways of computing a request, in this process (no
round trip), timed by CPU time (time.process_time: robust to a loaded
machine): zero_grad, forward, cross-entropy, backward on random data of
the shape dtsim would hand the module, one thread, with the helper's
process set-up (python/torch_helper.py's tune_process and loading).

Usage: torch_own.py FILE C H W DIM CLASSES CONTEXT BATCH SECONDS WORKERS
Prints one line: OWN LOOPED BATCHED, samples per CPU second (the best of
three rounds each; BATCHED is nan when vmap cannot run the module): OWN
the plain loop, LOOPED and BATCHED the helper's request of WORKERS
gradients computed one by one or with functorch.vmap."""
import mmap
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import torch_helper  # noqa: E402


def rate(step, samples, seconds):
    best = 0.0
    for _ in range(3):
        n, t0 = 0, time.process_time()
        while True:
            step()
            n += 1
            el = time.process_time() - t0
            if el >= seconds / 3:
                break
        best = max(best, n * samples / el)
    return best


def main():
    torch_helper.tune_process()
    file, c, h, w, dim, classes, context, batch, seconds, workers = sys.argv[1:]
    run = torch_helper.Run([file, c, h, w, dim, classes, context, "cpu", "off", "1"])
    run.load()
    torch = run.torch
    b, k, secs = int(batch), int(workers), float(seconds)
    gen = torch.Generator().manual_seed(1)

    def data(n):
        if run.context > 0:
            x = torch.randint(0, run.classes, (n, run.dim), generator=gen).float()
        else:
            x = torch.randn((n, run.dim), generator=gen)
        return x, torch.randint(0, run.classes, (n,), generator=gen).float()

    x, y = data(b)
    xs, t = run.inputs(x, y)
    module = run.module
    module.train()

    def own():
        module.zero_grad(set_to_none=True)
        out = module(xs)
        run.loss(out, run.target_for(out, t)).backward()
    r_own = rate(own, b, secs)

    # the helper's request of k gradients, in a private shared map
    size = 2 * k * run.d * 4 + k * b * run.dim * 4 + k * b * 4 + k * 8 + 5 * 64
    fd = os.memfd_create("bench")
    os.ftruncate(fd, size)
    run.map(k, b, size, fd)
    flat = run.flat_params(run.build())
    for i in range(k):
        run.p[i].copy_(flat)
    xk, yk = data(k * b)
    run.x.copy_(xk)
    run.y.copy_(yk)
    jobs = [(i, b) for i in range(k)]
    run.batched = 0
    r_loop = rate(lambda: run.cmd_grad(jobs), k * b, secs)
    r_bat = float("nan")
    try:
        run.make_vmapped()
        run.batched = 1
        r_bat = rate(lambda: run.cmd_grad(jobs), k * b, secs)
    except Exception:
        pass
    print("%.1f %.1f %.1f" % (r_own, r_loop, r_bat))


if __name__ == "__main__":
    main()
