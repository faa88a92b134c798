#!/usr/bin/env python3
"""One host of the emulated cluster (tools/emucluster/emucluster.sh).

Run in network namespace i as rank i of n; the ranks are at
BASE.(i+1). Every pair of ranks holds one TCP connection (full duplex);
rank 0 also takes a control connection from every other rank. For each
repetition rank 0 sends a start instant a little ahead (CLOCK_MONOTONIC
is one clock for every namespace of the machine), every rank waits for
it, runs the pattern, and reports its arrival times and the CPU seconds
it used; rank 0 prints one JSON line per repetition:
  {"rep": k, "time": end - start, "arrivals": [[src, dst, t], ...],
   "rounds": [t_0, ...], "cpu": [s per rank], "wall": s}
Patterns (S = --bytes):
  p2p        rank 0 sends S to rank 1;
  incast     ranks 1..n-1 send S to rank 0 at once;
  allreduce  ring all-reduce: 2(n-1) steps, each sends S/n to rank+1 and
             receives S/n from rank-1 (a step ends when both are done);
  ps         --rounds R cycles of a parameter server (rank 0): each
             worker computes --compute seconds, pushes S to rank 0 and
             waits for S back (the model); rank 0 answers each push as it
             arrives. "rounds" holds every worker's cycle ends;
  gossip     --rounds R rounds: send S to both ring neighbours at once,
             start the next round when both neighbours' messages of this
             round are in (own sends may still drain: they queue on their
             connection). --delay K,D: rank 0 waits D s before round K.
"""
import argparse
import json
import os
import queue
import socket
import struct
import sys
import threading
import time

PORT = 47000
CTRL = 47001
CHUNK = 1 << 20


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--pattern", choices=["p2p", "incast", "allreduce", "gossip", "ps"],
                    required=True)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--compute", type=float, default=0.0, help="ps: seconds per step")
    ap.add_argument("--delay", default=None, help="K,SECONDS: rank 0 waits before round K")
    ap.add_argument("--base", default="10.77.0")
    a = ap.parse_args(argv)
    if a.n < 2 or not 0 <= a.rank < a.n or a.bytes < 1 or a.reps < 1 or a.rounds < 1:
        ap.error("need n >= 2, 0 <= rank < n, bytes >= 1, reps >= 1, rounds >= 1")
    if a.delay is not None:
        k, d = a.delay.split(",")
        a.delay = (int(k), float(d))
    return a


def addr(base, r):
    return "%s.%d" % (base, r + 1)


def recv_exact(sock, n, buf):
    view = memoryview(buf)
    while n > 0:
        got = sock.recv_into(view[:min(n, len(buf))])
        if got == 0:
            raise ConnectionError("peer closed")
        n -= got


def send_bytes(sock, n, buf):
    view = memoryview(buf)
    while n > 0:
        k = min(n, len(buf))
        sock.sendall(view[:k])
        n -= k


def connect(host, port, timeout=30.0):
    t0 = time.monotonic()
    while True:
        try:
            s = socket.create_connection((host, port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except OSError:
            if time.monotonic() - t0 > timeout:
                raise
            time.sleep(0.05)


def mesh(a):
    """One connection per pair: the lower rank listens, the higher connects."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr(a.base, a.rank), PORT))
    ls.listen(a.n)
    peers = {}
    for j in range(a.rank):
        s = connect(addr(a.base, j), PORT)
        s.sendall(struct.pack("!i", a.rank))
        peers[j] = s
    for _ in range(a.n - 1 - a.rank):
        s, _ = ls.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        b = bytearray(4)
        recv_exact(s, 4, b)
        peers[struct.unpack("!i", b)[0]] = s
    ls.close()
    return peers


class Control:
    """Rank 0 holds a connection to every other rank: start instants out,
    JSON results back (one line each)."""

    def __init__(self, a):
        self.a = a
        if a.rank == 0:
            ls = socket.socket()
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((addr(a.base, 0), CTRL))
            ls.listen(a.n)
            self.socks = [ls.accept()[0] for _ in range(a.n - 1)]
            ls.close()
            self.files = [s.makefile("rw") for s in self.socks]
        else:
            self.sock = connect(addr(a.base, 0), CTRL)
            self.file = self.sock.makefile("rw")

    def start(self):
        if self.a.rank == 0:
            for f in self.files:  # everyone ready (its previous rep is over)
                f.readline()
            t0 = time.monotonic() + 0.05
            for f in self.files:
                f.write("%.9f\n" % t0)
                f.flush()
        else:
            self.file.write("ready\n")
            self.file.flush()
            t0 = float(self.file.readline())
        while time.monotonic() < t0:
            time.sleep(max(0.0, min(0.01, t0 - time.monotonic())))
        return t0

    def gather(self, mine):
        if self.a.rank != 0:
            self.file.write(json.dumps(mine) + "\n")
            self.file.flush()
            return None
        return [mine] + [json.loads(f.readline()) for f in self.files]


def each_worker(fn, n):
    """Rank 0: fn(j) for every other rank j at once, each on a thread."""
    ts = [threading.Thread(target=fn, args=(j,)) for j in range(1, n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def run_rep(a, peers, buf, rbuf):
    """Runs the pattern once; returns (arrivals [[src, dst, t]], rounds
    [t], end)."""
    n, r, S = a.n, a.rank, a.bytes
    arrivals, rounds = [], []
    if a.pattern == "p2p":
        if r == 0:
            send_bytes(peers[1], S, buf)
        elif r == 1:
            recv_exact(peers[0], S, rbuf)
            arrivals.append([0, 1, time.monotonic()])
    elif a.pattern == "incast":
        if r > 0:
            send_bytes(peers[0], S, buf)
        else:
            lock = threading.Lock()

            def rx(j):
                b = bytearray(CHUNK)
                recv_exact(peers[j], S, b)
                with lock:
                    arrivals.append([j, 0, time.monotonic()])

            each_worker(rx, n)
    elif a.pattern == "ps":
        if r > 0:
            for k in range(a.rounds):
                time.sleep(a.compute)
                send_bytes(peers[0], S, buf)
                recv_exact(peers[0], S, rbuf)
                arrivals.append([0, r, time.monotonic()])
        else:
            def serve(j):
                b = bytearray(CHUNK)
                for k in range(a.rounds):
                    recv_exact(peers[j], S, b)
                    send_bytes(peers[j], S, b)

            each_worker(serve, n)
    elif a.pattern == "allreduce":
        nxt, prv, c = (r + 1) % n, (r - 1) % n, S // n
        for _ in range(2 * (n - 1)):
            t = threading.Thread(target=send_bytes, args=(peers[nxt], c, buf))
            t.start()
            recv_exact(peers[prv], c, rbuf)
            t.join()
        arrivals.append([prv, r, time.monotonic()])
    else:
        nbrs = sorted({(r - 1) % n, (r + 1) % n})
        sendq = {j: queue.Queue() for j in nbrs}
        got = {j: queue.Queue() for j in nbrs}

        def tx(j):
            while True:
                k = sendq[j].get()
                if k is None:
                    return
                send_bytes(peers[j], S, buf)

        def rx(j):
            b = bytearray(CHUNK)
            for k in range(a.rounds):
                recv_exact(peers[j], S, b)
                got[j].put((k, time.monotonic()))

        ts = [threading.Thread(target=tx, args=(j,)) for j in nbrs]
        ts += [threading.Thread(target=rx, args=(j,)) for j in nbrs]
        for t in ts:
            t.start()
        for k in range(a.rounds):
            if a.delay and r == 0 and k == a.delay[0]:
                time.sleep(a.delay[1])
            for j in nbrs:
                sendq[j].put(k)
            end = 0.0
            for j in nbrs:
                kk, tt = got[j].get()
                end = max(end, tt)
                arrivals.append([j, r, tt])
            rounds.append(end)
        for j in nbrs:
            sendq[j].put(None)
        for t in ts:
            t.join()
    end = max([x[2] for x in arrivals], default=0.0)
    return arrivals, rounds, end


def main(argv=None):
    a = parse_args(argv)
    peers = mesh(a)
    ctl = Control(a)
    buf, rbuf = bytearray(CHUNK), bytearray(CHUNK)
    for rep in range(a.reps):
        t0 = ctl.start()
        c0 = time.process_time()
        arrivals, rounds, end = run_rep(a, peers, buf, rbuf)
        cpu = time.process_time() - c0
        wall = time.monotonic() - t0
        res = ctl.gather({"arrivals": [[s, d, t - t0] for s, d, t in arrivals],
                          "rounds": [t - t0 for t in rounds], "cpu": cpu, "wall": wall})
        if res is not None:
            arr = [x for h in res for x in h["arrivals"]]
            nr = max(len(h["rounds"]) for h in res)
            rnd = [max(h["rounds"][k] for h in res if len(h["rounds"]) > k) for k in range(nr)]
            print(json.dumps({"rep": rep, "time": max(x[2] for x in arr), "arrivals": arr,
                              "rounds": rnd, "cpu": [h["cpu"] for h in res],
                              "wall": max(h["wall"] for h in res)}), flush=True)
    for s in peers.values():
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
