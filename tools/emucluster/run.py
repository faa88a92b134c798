#!/usr/bin/env python3
"""Measures and predicts the patterns on an emulated cluster that is up
(emucluster.sh sets it up: namespaces NS0..NS{n-1} at 10.77.0.1..n, every
host's uplink and downlink shaped to --rate Mbit/s).

1. Calibration: point-to-point messages of S/64, S/16, S/4 and S (S the
   pattern size: 40 KB per Mbit/s, so about 0.3 s on the shaped link),
   fitted as t = o + S / (e B) (least squares): o is the fixed
   cost of a message (the `[network] message_overhead` plus the path
   latency), e the payload's share of the shaped rate B (`efficiency`).
2. Each pattern (p2p, ring all-reduce, incast, gossip round) over --reps
   repetitions: measured median, min, max; dtsim's prediction with the
   nominal network (rate B, no overhead) and with the calibration; the
   ratio measured / calibrated prediction. `rate` is the bottleneck link's
   payload rate achieved over the shaped rate; `cpu` the largest share of
   the wall time a host's process spent on the CPU. A row is flagged CPU
   when a process used more than half of the wall time (the host, not the
   shaped link, may be the bottleneck) or when the payload got under 80%
   of the shaped rate.
3. --perturb: 12 gossip rounds, host 0 waits two round times before round
   4; per-round time before (rounds 1-3) and after (rounds 8-11), measured
   and predicted with per-connection FIFO messages (as TCP does) and with
   every message a flow of its own (dtsim's gossip driver before the fix).
--dry-run prints the predictions only (no root, no cluster).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PATTERNS = ["p2p", "allreduce", "incast", "gossip"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="emulated cluster: measure and predict")
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--rate", type=int, required=True, help="Mbit/s")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--predict", required=True, help="the emu_predict program")
    ap.add_argument("--ns", default="dtemu")
    ap.add_argument("--mpi", default=None, metavar="DTSIM",
                    help="calibrate with `mpirun DTSIM calibrate` across the namespaces")
    ap.add_argument("--patterns", default=",".join(PATTERNS),
                    help="comma-separated, of " + ", ".join(PATTERNS))
    ap.add_argument("--perturb", action="store_true")
    ap.add_argument("--ps", action="store_true",
                    help="parameter-server cycles with equal compute: do the workers stay in step?")
    ap.add_argument("--verbose", action="store_true", help="every repetition's JSON line")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args(argv)
    if a.hosts < 2 or a.rate < 1 or a.reps < 1:
        ap.error("need --hosts >= 2, --rate >= 1, --reps >= 1")
    a.patterns = a.patterns.split(",")
    if any(p not in PATTERNS for p in a.patterns):
        ap.error("--patterns: each of " + ", ".join(PATTERNS))
    return a


def pattern_bytes(rate_mbit):
    """40 KB per Mbit/s: 4 MB at 100 Mbit/s, 40 MB at 1 Gbit/s."""
    return 40000 * rate_mbit


def bottleneck_bytes(pattern, n, s):
    """Payload bytes the busiest link carries in one run of the pattern."""
    return {"p2p": s, "incast": (n - 1) * s, "allreduce": 2 * (n - 1) * (s // n),
            "gossip": 2 * s if n > 2 else s}[pattern]


def fit(points):
    """t = o + b s by ordinary least squares (the large messages, which the
    link-bound patterns are made of, set the slope); returns (o, b)."""
    k = len(points)
    sx = sum(s for s, _ in points)
    sy = sum(t for _, t in points)
    sxx = sum(s * s for s, _ in points)
    sxy = sum(s * t for s, t in points)
    b = (k * sxy - sx * sy) / (k * sxx - sx * sx)
    return max(0.0, (sy - b * sx) / k), b


def predict(a, pattern, s, eff=1.0, overhead=0.0, extra=()):
    cmd = [a.predict, pattern, str(a.hosts), str(s), str(a.rate * 1e6), "--efficiency",
           "%.6f" % min(1.0, eff), "--overhead", "%.9f" % overhead, *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    res = {"rounds": [], "arrivals": []}
    for line in out.splitlines():
        f = line.split()
        if f[0] == "time":
            res["time"] = float(f[1])
        elif f[0] == "round":
            res["rounds"].append(float(f[2]))
        elif f[0] == "arrive":
            res["arrivals"].append(float(f[3]))
    return res


def measure(a, pattern, s, reps, extra=()):
    """Runs peer.py in every namespace; returns rank 0's JSON lines."""
    procs = []
    for i in reversed(range(a.hosts)):
        cmd = ["ip", "netns", "exec", "%s%d" % (a.ns, i), sys.executable,
               os.path.join(HERE, "peer.py"), "--rank", str(i), "--n", str(a.hosts),
               "--pattern", pattern, "--bytes", str(s), "--reps", str(reps), *extra]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE if i == 0 else
                                      subprocess.DEVNULL, text=True))
    out, _ = procs[-1].communicate(timeout=600)
    for p in procs[:-1]:
        p.wait(timeout=60)
    if any(p.returncode for p in procs):
        raise RuntimeError("a peer failed (%s, %d bytes)" % (pattern, s))
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def spread(rep):
    """Incast: last arrival minus first over the total."""
    ts = sorted(x[2] for x in rep["arrivals"])
    return (ts[-1] - ts[0]) / ts[-1]


def calibrate(a):
    s = pattern_bytes(a.rate)
    pts = []
    for size in (s // 64, s // 16, s // 4, s):
        reps = measure(a, "p2p", size, max(3, a.reps))
        pts.append((size, statistics.median(r["time"] for r in reps)))
    o, b = fit(pts)
    eff = 8.0 / (b * a.rate * 1e6)
    print("# calibration (p2p, %d sizes): overhead+latency %.6f s, efficiency %.4f "
          "(payload %.1f Mbit/s of %d)" % (len(pts), o, eff, eff * a.rate, a.rate))
    for size, t in pts:
        print("#   %10d B  measured %.6f s  fit %.6f s  residual %+.1f%%" %
              (size, t, o + b * size, 100 * (o + b * size - t) / t))
    return eff, o


def fragment_values(path):
    """The [network] keys of a calibration fragment, as numbers."""
    units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "B/s": 1.0}
    vals = {}
    for line in open(path):
        if "=" not in line or line.lstrip().startswith(("#", ";")):
            continue
        k, v = (x.strip() for x in line.split("=", 1))
        for u in sorted(units, key=len, reverse=True):
            if v.endswith(u):
                try:
                    vals[k] = float(v[:-len(u)]) * units[u]
                except ValueError:
                    pass
                break
        else:
            try:
                vals[k] = float(v)
            except ValueError:
                pass
    return vals


def calibrate_mpi(a):
    """`dtsim calibrate` under mpirun, one rank per namespace (mpi_rank.sh),
    TCP between the ranks on the bridge's subnet, over S/8 .. S (its fit
    weighs relative errors, so smaller messages, whose times the shaper's
    burst and a loaded machine bend most, would set the slope). Returns (efficiency,
    overhead + 2 latency) from its fragment, or None (the reason printed)."""
    s = pattern_bytes(a.rate)
    out = "/tmp/dtemu-calibration-%d-%d.ini" % (a.hosts, a.rate)
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(a.hosts),
           "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "10.77.0.0/24",
           "-x", "EMU_NS=" + a.ns, os.path.join(HERE, "mpi_rank.sh"), a.mpi, "calibrate",
           "--min-size", "%dB" % (s // 8), "--max-size", "%dB" % s, "--factor", "2",
           "--reps", str(max(3, a.reps)), "--bandwidth", "%dMbps" % a.rate, "--hops", "2",
           "-o", out]
    env = dict(os.environ, PMIX_MCA_ptl_tcp_remote_connections="1",
               PMIX_MCA_ptl_tcp_if_include="10.77.0.0/24")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    except subprocess.TimeoutExpired:
        print("# dtsim calibrate under mpirun: timed out")
        return None
    for line in r.stdout.splitlines():
        print("# mpi| " + line)
    if r.returncode != 0:
        print("# dtsim calibrate under mpirun failed (%d): %s" %
              (r.returncode, " / ".join(r.stderr.strip().splitlines()[-3:])))
        return None
    v = fragment_values(out)
    eff = v.get("efficiency", 1.0)
    o = v.get("message_overhead", 0.0) + 2 * v.get("latency", 0.0)
    print("# calibration (dtsim calibrate, mpirun): overhead+latency %.6f s, efficiency %.4f" %
          (o, eff))
    return eff, o


def row(a, pattern, s, eff, o):
    nominal = predict(a, pattern, s)["time"]
    cal = predict(a, pattern, s, eff, o, ("--fifo",))["time"]
    if a.dry_run:
        print("%-9s %2d %5d %10d %8s %8s %8s %8.4f %8.4f" %
              (pattern, a.hosts, a.rate, s, "-", "-", "-", nominal, cal))
        return
    reps = measure(a, pattern, s, a.reps)
    if a.verbose:
        for r in reps:
            print("# " + json.dumps(r))
    ts = [r["time"] for r in reps]
    med = statistics.median(ts)
    cpu = max(max(c / r["wall"] for c in r["cpu"]) for r in reps)
    rate = bottleneck_bytes(pattern, a.hosts, s) * 8 / med / (a.rate * 1e6)
    flag = "CPU" if cpu > 0.5 or rate < 0.8 else ""
    note = ""
    if pattern == "incast":
        note = " spread %.0f%%" % (100 * statistics.median(spread(r) for r in reps))
    print("%-9s %2d %5d %10d %8.4f %8.4f %8.4f %8.4f %8.4f %6.3f %5.2f %4.2f %-3s%s" %
          (pattern, a.hosts, a.rate, s, med, min(ts), max(ts), nominal, cal, med / cal, rate,
           cpu, flag, note))


def perturb(a, eff, o):
    s = pattern_bytes(a.rate)
    rounds = 12
    one = predict(a, "gossip", s, eff, o, ("--fifo",))["time"]
    ex = ("--rounds", str(rounds), "--delay", "4,%.6f" % (2 * one))

    def per_round(r):
        before = (r[3] - r[0]) / 3
        after = (r[11] - r[7]) / 4
        return before, after

    fifo = per_round(predict(a, "gossip", s, eff, o, ex + ("--fifo",))["rounds"])
    flows = per_round(predict(a, "gossip", s, eff, o, ex)["rounds"])
    print("# gossip, %d rounds, host 0 waits %.3f s before round 4: s per round "
          "before (1-3) / after (8-11)" % (rounds, 2 * one))
    print("#   predicted, one connection per pair (FIFO): %.4f / %.4f" % fifo)
    print("#   predicted, every message its own flow:     %.4f / %.4f" % flows)
    if a.dry_run:
        return
    reps = measure(a, "gossip", s, a.reps, ex)
    m = [per_round(r["rounds"]) for r in reps]
    print("#   measured (median of %d):                   %.4f / %.4f" %
          (len(m), statistics.median(x[0] for x in m), statistics.median(x[1] for x in m)))


def ps_cycles(a, eff, o):
    """n-1 workers, equal compute T = 2 S/(eB), 10 cycles of push S and
    model S back. Max-min keeps them in step: every push shares the
    server's downlink with all others, every answer its uplink, a cycle
    takes T + 2(n-1) S/(eB). Out of step the server's links allow one cycle
    per max(T + 2 S/(eB), (n-1) S/(eB))."""
    s = pattern_bytes(a.rate) // 4
    x = s / (eff * a.rate * 1e6 / 8) + o
    T, cycles, n = 2 * x, 10, a.hosts
    lock = T + 2 * (n - 1) * x
    free = max(T + 2 * x, (n - 1) * x)
    print("# parameter server, %d workers, %d B, compute %.3f s, %d cycles: s per cycle" %
          (n - 1, s, T, cycles))
    print("#   max-min (in step): %.4f; out of step, at best: %.4f" % (lock, free))
    if a.dry_run:
        return
    reps = measure(a, "ps", s, a.reps, ("--rounds", str(cycles), "--compute", "%.6f" % T))
    per = [r["time"] / cycles for r in reps]
    spread = []
    for r in reps:  # the last cycle's ends over the workers, as a share of a cycle
        ends = sorted(x[2] for x in r["arrivals"])[-(n - 1):]
        spread.append((ends[-1] - ends[0]) / (r["time"] / cycles))
    print("#   measured: %.4f (min %.4f, max %.4f); the workers' last cycle ends spread "
          "over %.0f%% of a cycle (median of %d)" % (statistics.median(per), min(per), max(per),
                                                   100 * statistics.median(spread), len(per)))


def main(argv=None):
    a = parse_args(argv)
    if a.dry_run:
        eff, o = 0.94, 0.0
    else:
        eff, o = calibrate(a)
        if a.mpi:
            mpi = calibrate_mpi(a)
            if mpi:
                eff, o = mpi
    print("%-9s %2s %5s %10s %8s %8s %8s %8s %8s %6s %5s %4s %s" %
          ("pattern", "n", "Mbit", "bytes", "median", "min", "max", "nominal", "calib",
           "ratio", "rate", "cpu", "flag"))
    s = pattern_bytes(a.rate)
    for p in a.patterns:
        row(a, p, s, eff, o)
    if a.perturb:
        perturb(a, eff, o)
    if a.ps:
        ps_cycles(a, eff, o)
    return 0


if __name__ == "__main__":
    sys.exit(main())
