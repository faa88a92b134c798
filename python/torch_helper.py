"""dtsim's PyTorch helper: computes the gradients of a user's torch.nn.Module
for a simulated run (workloads/torch.c starts one per run; docs/models-and-data.md).

Started as
    python3 torch_helper.py FILE C H W DIM CLASSES CONTEXT DEVICE BATCHED SEED
with the command socket on stdin (fd 0), the replies on the original stdout
(fd 1; the module's own prints go to stderr), stderr into a file dtsim reads
when something fails, and the shared memory on fd 3.

Protocol: one ASCII line per command, one reply line each; a failure is the
line "error N" followed by N bytes of text (the end of a Python traceback).
  start-up (no command)  -> "hello D FLOPS BATCHED NLAYERS", then NLAYERS
                            lines "NAME SIZE" (the flat vector's groups)
  map K B BYTES          -> "ok": fd 3 now holds K slots of B samples
  init SEED              -> "ok": a fresh module's parameters in slot 0
  grad N W1 B1 .. WN BN  -> "ok": slot i holds worker Wi's parameters and
                            its Bi samples; its mean loss and gradient
                            are written back
  eval N WORKER          -> "ok LOSS_SUM CORRECT COUNT": the first N rows of
                            the sample area at slot 0's parameters, with
                            WORKER's buffers (-1: the initial ones)
  quit                   -> exits
Shared memory (native float32 unless said, each area 64-byte aligned):
params K x D, grads K x D, x K x B x DIM, y K x B, loss K float64.

The flat vector is module.parameters() in order, each tensor row-major (so
nn.Linear's weight, out x in, then its bias: dtsim's own layout). Buffers
(BatchNorm statistics) are kept per worker here and never averaged."""
import mmap
import os
import sys
import traceback

PROTO = CMDS = None  # the protocol's streams, set by main()


def tune_process():
    """One thread and no BLAS pool (set before torch loads, as
    bench/torch_grad.py does), and glibc's malloc keeping its large blocks
    instead of unmapping them after every convolution (a re-exec, since
    glibc reads GLIBC_TUNABLES at start-up: the system time of a ResNet-8
    step at batch 32 went from 8.8 ms to 0.2 ms here)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    if os.environ.get("DTSIM_TORCH_TUNED") != "1":
        tun = "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824"
        old = os.environ.get("GLIBC_TUNABLES")
        env = dict(os.environ, DTSIM_TORCH_TUNED="1",
                   GLIBC_TUNABLES=old + ":" + tun if old else tun)
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


# Modules at most this many parameters are batched across workers with
# [workload] torch_batched = auto (bench_torch: a 2,410-parameter MLP is
# faster batched, a 203,530-parameter one slower, one thread).
AUTO_BATCH_MAX_PARAMS = 50000


def reply(text):
    PROTO.write((text + "\n").encode())


def reply_error(text):
    data = text.encode(errors="replace")[-3000:]
    PROTO.write(b"error %d\n" % len(data) + data)


def read_line():
    line = CMDS.readline()
    return line.decode().rstrip("\n") if line.endswith(b"\n") else None


def fail_text(exc):
    """The last lines of the traceback, frames of this helper left out."""
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    keep = [ln for ln in lines if __file__ not in ln or ln.startswith("Traceback")]
    return "".join(keep[-8:]).rstrip()


def load_namespace(file):
    """FILE executed as a module (its folder importable)."""
    ns = {"__file__": file, "__name__": "dtsim_user_model"}
    with open(file) as f:
        code = compile(f.read(), file, "exec")
    sys.path.insert(0, os.path.dirname(os.path.abspath(file)))
    exec(code, ns)
    return ns


def dump_dataset(file, out):
    """--dataset FILE: FILE's dataset() = (x_train, y_train, x_test, y_test)
    written to out as the line "dtsim-data N_TRAIN N_TEST DIM CLASSES C H W"
    then x_train, y_train, x_test, y_test as native float32 (C H W: the
    sample shape when it has three axes, else 0 0 0)."""
    import torch
    fn = load_namespace(file).get("dataset")
    if not callable(fn):
        raise RuntimeError("%s defines no function dataset()" % file)
    res = fn()
    if not isinstance(res, (tuple, list)) or len(res) != 4:
        raise RuntimeError("dataset() must return (x_train, y_train, x_test, y_test)")
    xtr, ytr, xte, yte = [torch.as_tensor(t) for t in res]
    if xtr.dim() < 2 or xtr.shape[0] < 1 or tuple(ytr.shape) != (xtr.shape[0],):
        raise RuntimeError("dataset(): x_train must be n x sample shape (n >= 1) and y_train "
                           "n labels; got %s and %s" % (tuple(xtr.shape), tuple(ytr.shape)))
    if tuple(xte.shape[1:]) != tuple(xtr.shape[1:]) or tuple(yte.shape) != (xte.shape[0],):
        raise RuntimeError("dataset(): x_test must be m x %s and y_test m labels; got %s and %s"
                           % (tuple(xtr.shape[1:]), tuple(xte.shape), tuple(yte.shape)))
    ys = torch.cat([ytr.reshape(-1), yte.reshape(-1)]).to(torch.float64)
    if not bool(((ys >= 0) & (ys == ys.floor())).all()):
        raise RuntimeError("dataset(): labels must be class indices 0, 1, ...")
    classes = int(ys.max().item()) + 1
    if classes < 2:
        raise RuntimeError("dataset(): needs at least two classes")
    sample = tuple(xtr.shape[1:])
    dim = 1
    for s in sample:
        dim *= s
    chw = sample if len(sample) == 3 else (0, 0, 0)
    out.write(b"dtsim-data %d %d %d %d %d %d %d\n" % ((xtr.shape[0], xte.shape[0], dim, classes)
                                                     + tuple(chw)))
    for t in (xtr, ytr, xte, yte):
        out.write(t.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    out.flush()


class Run:
    def __init__(self, argv):
        (self.file, c, h, w, dim, classes, context, self.device, self.mode,
         seed) = argv
        self.c, self.h, self.w = int(c), int(h), int(w)
        self.dim, self.classes, self.context = int(dim), int(classes), int(context)
        self.seed = int(seed)
        if self.context > 0:
            self.shape = (self.context,)
        elif self.c > 0:
            self.shape = (self.c, self.h, self.w)
        else:
            self.shape = (self.dim,)
        self.mm = None
        self.buffers = {}  # worker -> {name: tensor}

    # -- the user's file ---------------------------------------------------
    def load(self):
        import torch
        import torch.nn.functional as F
        self.torch = torch
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True)
        torch.manual_seed(self.seed)
        if self.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("[workload] torch_device = cuda, but torch sees no CUDA device")
        self.dev = torch.device(self.device)
        ns = load_namespace(self.file)
        if not callable(ns.get("model")):
            raise RuntimeError("%s defines no function model(shape, classes)" % self.file)
        self.make = ns["model"]
        user_loss = ns.get("loss")
        classes = self.classes

        def default_loss(out, target):
            return F.cross_entropy(out.reshape(-1, classes), target.reshape(-1))
        self.loss = user_loss if callable(user_loss) else default_loss
        self.module = self.build()
        self.names = [n for n, _ in self.module.named_parameters()]
        self.shapes = [p.shape for _, p in self.module.named_parameters()]
        self.sizes = [p.numel() for _, p in self.module.named_parameters()]
        self.d = sum(self.sizes)
        if self.d == 0:
            raise RuntimeError("the module has no parameters")
        self.init_buffers = {n: b.detach().clone()
                             for n, b in self.module.named_buffers()}
        self.params = list(self.module.parameters())
        self.buffer_slots = []  # (submodule, key, full name) of every buffer
        for mname, mod in self.module.named_modules():
            for key, buf in mod._buffers.items():
                if buf is not None:
                    self.buffer_slots.append((mod, key, mname + "." + key if mname else key))

    def build(self):
        m = self.make(self.shape, self.classes)
        if not isinstance(m, self.torch.nn.Module):
            raise RuntimeError("model(shape, classes) returned %s, not a torch.nn.Module"
                               % type(m).__name__)
        return m.to(self.dev).float()

    # -- inputs and targets --------------------------------------------------
    def inputs(self, x, y):
        """dtsim's rows as the module's input and the loss's target."""
        torch = self.torch
        b = x.shape[0]
        if self.context > 0:
            ids = x.to(torch.long)
            target = torch.cat([ids[:, 1:], y.to(torch.long).view(b, 1)], 1)
            return ids, target
        return x.view((b,) + self.shape), y.to(torch.long)

    def check_output(self, out, b):
        want = [(b, self.classes)]
        if self.context > 0:
            want.append((b, self.context, self.classes))
        if tuple(out.shape) not in want:
            raise RuntimeError("the module's output has shape %s for a batch of %d; expected %s"
                               % (tuple(out.shape), b, " or ".join(str(s) for s in want)))

    def target_for(self, out, target):
        # (b, classes) output on text: the next character only
        return target[:, -1] if out.dim() == 2 and target.dim() == 2 else target

    # -- layout, batching decision -------------------------------------------
    def layers(self):
        """At most 16 groups of consecutive tensors, by top-level child."""
        groups = []
        for name, size in zip(self.names, self.sizes):
            top = name.split(".")[0]
            if groups and groups[-1][0] == top:
                groups[-1][1] += size
            else:
                groups.append([top, size])
        while len(groups) > 16:  # merge the smallest adjacent pair
            i = min(range(len(groups) - 1), key=lambda k: groups[k][1] + groups[k + 1][1])
            groups[i:i + 2] = [[groups[i][0] + "+", groups[i][1] + groups[i + 1][1]]]
        return [(g[0][:31].replace(" ", "_"), g[1]) for g in groups]

    def flops(self):
        """6 x the multiply-adds of Linear and Conv layers per sample."""
        torch = self.torch
        macs = [0]

        def hook(mod, inp, out):
            if isinstance(mod, torch.nn.Linear):
                macs[0] += out.numel() // out.shape[-1] * mod.in_features * mod.out_features
            elif isinstance(mod, torch.nn.modules.conv._ConvNd):
                k = 1
                for s in mod.kernel_size:
                    k *= s
                macs[0] += out.numel() * (mod.in_channels // mod.groups) * k
        hs = [m.register_forward_hook(hook) for m in self.module.modules()]
        with torch.no_grad():
            self.module.eval()
            x, _ = self.probe_data(1)
            self.module(x)
        for h in hs:
            h.remove()
        return 6.0 * (macs[0] if macs[0] > 0 else self.d)

    def probe_data(self, b):
        torch = self.torch
        x = torch.zeros((b, self.dim), device=self.dev)
        y = torch.zeros(b, device=self.dev)
        return self.inputs(x, y)

    def probe(self):
        """A forward, loss and backward pass on zeros at the initial
        parameters: the output's shape and a finite loss, at start-up."""
        torch = self.torch
        self.module.train()
        state = {n: b.clone() for n, b in self.module.named_buffers()}
        x, t = self.probe_data(2)
        out = self.module(x)
        self.check_output(out, 2)
        loss = self.loss(out, self.target_for(out, t))
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise RuntimeError("loss(output, target) must return one number (a scalar tensor)")
        if not torch.isfinite(loss).item():
            raise RuntimeError("the loss is not finite (%s) at the initial parameters"
                               % loss.item())
        loss.backward()
        self.module.zero_grad(set_to_none=True)
        for n, b in self.module.named_buffers():
            b.copy_(state[n])

    def decide_batched(self):
        has_buffers = len(self.init_buffers) > 0
        if self.mode == "off":
            return 0
        if self.mode == "auto" and (has_buffers or self.d > AUTO_BATCH_MAX_PARAMS):
            return 0
        if has_buffers:
            raise RuntimeError("torch_batched = on: the module has buffers (%s), which stay "
                               "per worker; use auto or off" % ", ".join(self.init_buffers))
        try:
            self.make_vmapped()
            torch = self.torch
            flat = torch.zeros((2, self.d), device=self.dev)
            flat[:] = self.flat_params(self.module)
            x, t = self.probe_data(2)
            self.vgrad(self.split(flat, 2), x.unsqueeze(0).expand((2,) + x.shape),
                       t.unsqueeze(0).expand((2,) + t.shape))
        except Exception:
            if self.mode == "on":
                raise
            return 0
        return 1

    # -- parameters ------------------------------------------------------------
    def flat_params(self, module):
        return self.torch.cat([p.detach().reshape(-1) for p in module.parameters()])

    def split(self, flat, k=None):
        """Views of a flat vector (d) or of k vectors (k x d) as the tensors."""
        out, o = [], 0
        for shape, n in zip(self.shapes, self.sizes):
            if k is None:
                out.append(flat[o:o + n].view(shape))
            else:
                out.append(flat[:, o:o + n].reshape((k,) + tuple(shape)))
            o += n
        return out

    def make_vmapped(self):
        from functorch import grad_and_value, make_functional, vmap
        fmodel, _ = make_functional(self.module)

        def one(params, x, t):
            out = fmodel(params, x)
            return self.loss(out, self.target_for(out, t))
        self.vgrad = vmap(grad_and_value(one), randomness="different")

    # -- shared memory ---------------------------------------------------------
    def map(self, k, b, size, fd=3):
        import numpy as np
        # the old map is not closed: it goes when its tensors do
        self.p = self.g = self.x = self.y = self.l = None
        self.mm = mmap.mmap(fd, size)
        d, f = self.d, self.dim
        off = [0]

        def area(count, dtype):
            a = np.frombuffer(self.mm, dtype=dtype, count=count, offset=off[0])
            off[0] = (off[0] + count * np.dtype(dtype).itemsize + 63) // 64 * 64
            return self.torch.from_numpy(a)
        self.k, self.b = k, b
        self.p = area(k * d, np.float32).view(k, d)
        self.g = area(k * d, np.float32).view(k, d)
        self.x = area(k * b * f, np.float32).view(k * b, f)
        self.y = area(k * b, np.float32)
        self.l = area(k, np.float64)

    def worker_buffers(self, w):
        """Worker w's buffers (w = -1: a scratch set), made from the
        module's initial ones on first use."""
        if not self.init_buffers:
            return self.init_buffers
        if w not in self.buffers:
            self.buffers[w] = {n: b.clone() for n, b in self.init_buffers.items()}
        return self.buffers[w]

    # -- commands ----------------------------------------------------------------
    def cmd_init(self, seed):
        self.torch.manual_seed(seed)
        self.p[0].copy_(self.flat_params(self.build()))

    def slot_data(self, i, b):
        rows = slice(i * self.b, i * self.b + b)
        return self.inputs(self.x[rows].to(self.dev), self.y[rows].to(self.dev))

    def cmd_grad(self, jobs):
        if self.batched:
            by_b = {}
            for i, (w, b) in enumerate(jobs):
                by_b.setdefault(b, []).append(i)
            for b, idx in sorted(by_b.items()):
                self.grad_batched(idx, b)
        else:
            for i, (w, b) in enumerate(jobs):
                self.grad_one(i, w, b)

    def use(self, flat, w):
        """The module computes with the parameters in flat (views of the
        shared memory: no copy) and worker w's buffers."""
        for prm, v in zip(self.params, self.split(flat)):
            prm.data = v
            prm.grad = None
        if self.buffer_slots:
            state = self.worker_buffers(w)
            for mod, key, name in self.buffer_slots:
                mod._buffers[key] = state[name]

    def grad_one(self, i, w, b):
        torch = self.torch
        self.module.train()
        self.use(self.p[i] if self.dev.type == "cpu" else self.p[i].to(self.dev), w)
        x, t = self.slot_data(i, b)
        out = self.module(x)
        self.check_output(out, b)
        loss = self.loss(out, self.target_for(out, t))
        loss.backward()
        grads = [prm.grad.reshape(-1) if prm.grad is not None else torch.zeros(n, device=self.dev)
                 for prm, n in zip(self.params, self.sizes)]
        if self.dev.type == "cpu":
            torch.cat(grads, out=self.g[i])
        else:
            self.g[i].copy_(torch.cat(grads))
        self.l[i] = loss.item()

    def grad_batched(self, idx, b):
        torch = self.torch
        k = len(idx)
        if idx == list(range(k)) and b == self.b:
            # the usual case: slots 0..k-1, full: views, no copy in or out
            params = self.split(self.p[:k].to(self.dev), k)
            x, t = self.inputs(self.x[:k * b].to(self.dev), self.y[:k * b].to(self.dev))
            xs, ts = x.view((k, b) + x.shape[1:]), t.view((k, b) + t.shape[1:])
        else:
            sel = torch.tensor(idx)
            params = self.split(self.p.index_select(0, sel).to(self.dev), k)
            xs, ts = [], []
            for i in idx:
                x, t = self.slot_data(i, b)
                xs.append(x)
                ts.append(t)
            xs, ts = torch.stack(xs), torch.stack(ts)
        grads, losses = self.vgrad(params, xs, ts)
        flat = torch.cat([g.reshape(k, -1) for g in grads], 1)
        if idx == list(range(k)):
            self.g[:k].copy_(flat)
            self.l[:k].copy_(losses)
        else:
            for j, i in enumerate(idx):
                self.g[i].copy_(flat[j])
                self.l[i] = losses[j].item()

    def cmd_eval(self, n, w):
        torch = self.torch
        self.module.eval()
        self.use(self.p[0].to(self.dev), w)
        with torch.no_grad():
            x, t = self.inputs(self.x[:n].to(self.dev), self.y[:n].to(self.dev))
            out = self.module(x)
            self.check_output(out, n)
            t = self.target_for(out, t)
            count = t.numel()
            loss_sum = float(self.loss(out, t).item()) * count
            correct = int((out.argmax(-1) == t).sum().item())
        return loss_sum, correct, count

    def serve(self):
        while True:
            line = read_line()
            if line is None or line == "quit":
                return
            f = line.split()
            try:
                if f[0] == "map":
                    self.map(int(f[1]), int(f[2]), int(f[3]))
                    reply("ok")
                elif f[0] == "init":
                    self.cmd_init(int(f[1]))
                    reply("ok")
                elif f[0] == "grad":
                    n = int(f[1])
                    self.cmd_grad([(int(f[2 + 2 * i]), int(f[3 + 2 * i])) for i in range(n)])
                    reply("ok")
                elif f[0] == "eval":
                    s, c, n = self.cmd_eval(int(f[1]), int(f[2]))
                    reply("ok %r %d %d" % (s, c, n))
                else:
                    reply_error("unknown command %r" % f[0])
            except Exception as exc:  # the user's code: reported, the run fails
                reply_error(fail_text(exc))
                return


def main():
    global PROTO, CMDS
    tune_process()
    PROTO = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # the module's prints must not reach the protocol
    sys.stdout = sys.stderr
    CMDS = os.fdopen(0, "rb")
    if len(sys.argv) == 3 and sys.argv[1] == "--dataset":
        try:
            dump_dataset(sys.argv[2], os.fdopen(os.dup(PROTO.fileno()), "wb"))
        except Exception as exc:
            sys.stderr.write(fail_text(exc) + "\n")
            return 1
        return 0
    if len(sys.argv) != 11:
        reply_error("usage: torch_helper.py FILE C H W DIM CLASSES CONTEXT DEVICE BATCHED SEED")
        return 2
    run = Run(sys.argv[1:])
    try:
        run.load()
        run.probe()
        run.batched = run.decide_batched()
        layers = run.layers()
        flops = run.flops()
    except Exception as exc:
        reply_error(fail_text(exc))
        return 1
    reply("hello %d %r %d %d" % (run.d, flops, run.batched, len(layers)))
    for name, size in layers:
        reply("%s %d" % (name, size))
    run.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
