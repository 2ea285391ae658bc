"""Ping-pong latency and streaming bandwidth per message size (NetPIPE-style), over TCP_NODELAY
(or, asked for, with Nagle's algorithm on).

Why our own tool and not NetPIPE (``NPtcp``, installed and used as a
cross-check of this tool in study S0's unshaped benchmark):

* NPtcp chooses its own size schedule (powers of two plus 3/4 steps and
  perturbations) and reports only the best of its trials per size; a study
  needs chosen sizes, every round trip kept, and the spread across them.
* NPtcp's "bandwidth" is size / half round trip, i.e. derived from the same
  ping-pong; streaming (its ``-s``) is a separate, one-size-at-a-time invocation.
  This tool measures both per size over one connection, and also reports the
  ping-pong-derived figure, so both definitions are available.
* Its duration is not bounded: each size takes as long as its repetitions
  do (a 1 MB ping-pong at 100 Mbit/s takes ~0.2 s per round trip). Here every
  size has a time budget with a minimum number of samples.
* One program with three modes that runs through any node (namespace, VM,
  SSH host) needs only a Python 3 interpreter: this file uses the standard
  library alone and is copied onto remote nodes as it is.

Python adds a constant few microseconds per round trip on both ends; it is
the same for every path, so differences between paths are the network's.
The unshaped benchmark of S0 measures it against NPtcp on the same path.

Protocol (client -> server, one connection per client invocation): a 9-byte header
``op size count`` (network order), then
  ``P``: ``count`` round trips of ``size`` bytes each way (ping-pong),
  ``S``: ``count`` messages of ``size`` bytes to the server, which answers one
         byte after the last (streaming; the clock stops at that answer),
  ``N``: Nagle on (``size`` and ``count`` 0): the server clears TCP_NODELAY on
         this connection; sent first by a client run with ``--nagle``,
  ``Q``: end.
Every socket sets TCP_NODELAY: without it Nagle and delayed ACKs stall
multi-segment messages for ~40 ms (PLATFORM.md). That stall is itself a result
when a study compares TCP with and without Nagle (S1: the paper's irregular
small-message TCP curve): ``client --nagle`` leaves Nagle on at both ends of
its connections, the server's end switched by the ``N`` message, so one server
serves both variants.

Modes::

    pingpong.py serve --bind ADDR --port P
    pingpong.py client --target NAME=H:P [--target ...] --sizes 1,2,4 [--latency-budget S]
                       [--nagle] ...
    pingpong.py hold --host H --port P --flows N     # N open connections, for counting
    pingpong.py probe --host H --port P              # does anything answer there?
"""

from __future__ import annotations

import argparse
import json
import math
import random
import socket
import statistics
import struct
import sys
import threading
import time

HEADER = struct.Struct("!cII")
MAX_SIZE = 1 << 20
MAX_COUNT = 1 << 30
CHUNK = 1 << 20


# -- both ends -----------------------------------------------------------------------------------

def _nodelay(sock: socket.socket, on: bool = True) -> None:
    """TCP_NODELAY on (the default here) or off (Nagle's algorithm, the kernel's default)."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1 if on else 0)


def _recv_exact(sock: socket.socket, view: memoryview, size: int) -> None:
    got = 0
    while got < size:
        n = sock.recv_into(view[got:size])
        if n == 0:
            raise ConnectionError("peer closed the connection")
        got += n


def _drain(sock: socket.socket, view: memoryview, total: int) -> None:
    """Receive and discard ``total`` bytes."""
    left = total
    limit = len(view)
    while left:
        n = sock.recv_into(view[:min(left, limit)])
        if n == 0:
            raise ConnectionError("peer closed the connection")
        left -= n


# -- server --------------------------------------------------------------------------------------

def serve_connection(conn: socket.socket) -> None:
    _nodelay(conn)
    buf = bytearray(max(MAX_SIZE, CHUNK))
    view = memoryview(buf)
    head = bytearray(HEADER.size)
    with conn:
        while True:
            try:
                _recv_exact(conn, memoryview(head), HEADER.size)
            except (ConnectionError, OSError):
                return  # a peer that leaves (or only checked the port) is normal
            op, size, count = HEADER.unpack(head)
            if op == b"Q" or size > MAX_SIZE or count > MAX_COUNT:
                return
            if op == b"N":
                _nodelay(conn, on=False)
                continue
            try:
                if op == b"P":
                    msg = view[:size]
                    for _ in range(count):
                        _recv_exact(conn, view, size)
                        conn.sendall(msg)
                elif op == b"S":
                    _drain(conn, view, size * count)
                    conn.sendall(b"A")
                else:
                    return
            except (ConnectionError, OSError):
                return


def serve(bind: str, port: int) -> None:
    srv = socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((bind, port))
    srv.listen(128)
    print(json.dumps({"event": "listening", "bind": bind, "port": port}), flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve_connection, args=(conn,), daemon=True).start()


# -- client --------------------------------------------------------------------------------------

def connect(host: str, port: int, timeout: float = 10.0, nagle: bool = False) -> socket.socket:
    """A connection with TCP_NODELAY at both ends, or with Nagle on at both ends (``nagle``)."""
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.settimeout(None)  # a timeout would add a poll() to every recv
    _nodelay(sock, on=not nagle)
    if nagle:
        sock.sendall(HEADER.pack(b"N", 0, 0))
    return sock


def _quantile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def latency(sock: socket.socket, size: int, budget_s: float, min_iters: int, max_iters: int,
            warmup: int) -> dict:
    """Half round-trip times of ``size``-byte ping-pongs, in microseconds."""
    msg = b"x" * size
    buf = bytearray(size)
    view = memoryview(buf)
    clock = time.perf_counter_ns
    samples: list[float] = []

    def batch(count: int, keep: bool) -> None:
        sock.sendall(HEADER.pack(b"P", size, count))
        for _ in range(count):
            t0 = clock()
            sock.sendall(msg)
            _recv_exact(sock, view, size)
            if keep:
                samples.append((clock() - t0) / 2000.0)

    if warmup:
        batch(warmup, keep=False)
    started = time.monotonic()
    count = max(1, min_iters)
    while len(samples) < max_iters and (len(samples) < min_iters
                                        or time.monotonic() - started < budget_s):
        batch(min(count, max_iters - len(samples)), keep=True)
        count *= 2
    ordered = sorted(samples)
    median = statistics.median(ordered)
    return {
        "n": len(ordered), "median_us": median, "mean_us": statistics.fmean(ordered),
        "sd_us": statistics.stdev(ordered) if len(ordered) > 1 else 0.0,
        "min_us": ordered[0], "p10_us": _quantile(ordered, 0.10),
        "p90_us": _quantile(ordered, 0.90), "max_us": ordered[-1],
        "pingpong_mbit": size * 8 / median if median > 0 else None,  # bits per us = Mbit/s
        "seconds": time.monotonic() - started,
    }


def stream(sock: socket.socket, size: int, budget_s: float, max_bytes: int) -> dict:
    """One-way bandwidth of back-to-back ``size``-byte messages (the clock stops at the answer).

    Batches grow until one lasts at least ``budget_s``; only that last batch
    is reported. A batch shorter than the budget could fit inside a shaper's
    burst (or be cut short by a stall in calibration) and overstate the rate.
    """
    msg = b"x" * size
    ack = bytearray(1)
    max_count = max(2, max_bytes // size)

    def batch(count: int) -> float:
        send = sock.sendall
        t0 = time.perf_counter()
        sock.sendall(HEADER.pack(b"S", size, count))
        for _ in range(count):
            send(msg)
        _recv_exact(sock, memoryview(ack), 1)
        return time.perf_counter() - t0

    count = max(2, min(2000, max_count, math.ceil(64 * 1024 / size)))
    batches = 0
    while True:
        seconds = batch(count)
        batches += 1
        if seconds >= budget_s or count >= max_count:
            break
        # aim 20% past the budget, and at least double, so few batches are needed
        grow = min(8.0, 1.2 * budget_s / max(seconds, 1e-6))  # a burst-fast batch must not
        count = min(max_count, max(2 * count, int(count * grow)))  # blow up the next one
    return {"messages": count, "bytes": count * size, "seconds": seconds, "batches": batches,
            "mbit": count * size * 8 / seconds / 1e6}


def measure_targets(targets: list[tuple[str, str, int]], sizes: list[int],
                    latency_budget: float, stream_budget: float, min_iters: int, max_iters: int,
                    warmup: int, stream_max_bytes: int, no_stream: bool, seed: int = 0,
                    nagle: bool = False, no_latency: bool = False) -> dict:
    """Measure every size on every target, interleaved: size by size, targets in rotated order,
    or, with a ``seed``, in an order shuffled per size by a generator seeded with it.
    ``nagle``: every connection keeps Nagle's algorithm on at both ends (no TCP_NODELAY).
    ``no_latency``: streaming only (a bulk transfer per target and size, no ping-pong).

    Interleaving puts every target under the same background load (a shared
    machine's other jobs come and go over seconds), so their differences are
    paired per size instead of confounded with the time each was measured.
    """
    t0 = time.monotonic()
    socks, out = {}, {}
    try:
        for name, host, port in targets:
            started = time.monotonic()
            socks[name] = connect(host, port, nagle=nagle)
            local = socks[name].getsockname()
            out[name] = {"host": host, "port": port, "local": f"{local[0]}:{local[1]}",
                         "connect_s": time.monotonic() - started, "points": []}
        names = [t[0] for t in targets]
        shuffler = random.Random(seed) if seed else None
        for index, size in enumerate(sizes):
            shift = index % len(names)
            order = names[shift:] + names[:shift]
            if shuffler:
                shuffler.shuffle(order)
            for position, name in enumerate(order):
                sock = socks[name]
                big = size >= 256 * 1024
                point: dict = {"size": size, "order": position}
                if not no_latency:
                    point["latency"] = latency(sock, size, latency_budget,
                                               min_iters if not big else max(2, min_iters // 2),
                                               max_iters, warmup if not big else 1)
                if not no_stream:
                    point["stream"] = stream(sock, size, stream_budget, stream_max_bytes)
                out[name]["points"].append(point)
        for sock in socks.values():
            sock.sendall(HEADER.pack(b"Q", 0, 0))
    finally:
        for sock in socks.values():
            sock.close()
    return {"tool": "pingpong", "version": 2, "seconds": time.monotonic() - t0, "seed": seed,
            "nodelay": not nagle, "targets": out}


def parse_target(text: str) -> tuple[str, str, int]:
    """NAME=HOST:PORT"""
    name, sep, rest = text.partition("=")
    host, sep2, port = rest.rpartition(":")
    if not sep or not sep2 or not name or not host or not port.isdigit():
        raise SystemExit(f"--target wants NAME=HOST:PORT, got {text!r}")
    return name, host.strip("[]"), int(port)


def hold(host: str, port: int, flows: int, seconds: float) -> None:
    """Open ``flows`` connections, make one round trip on each, report, and keep them open."""
    socks = []
    for _ in range(flows):
        sock = connect(host, port)
        sock.sendall(HEADER.pack(b"P", 1, 1))
        sock.sendall(b"h")
        _recv_exact(sock, memoryview(bytearray(1)), 1)
        socks.append(sock)
    print(json.dumps({"event": "ready", "flows": flows,
                      "local": [f"{s.getsockname()[0]}:{s.getsockname()[1]}" for s in socks]}),
          flush=True)
    time.sleep(seconds)
    for sock in socks:
        sock.close()


def probe(host: str, port: int, timeout: float) -> int:
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        print(f"{host}:{port} does not answer: {exc}", file=sys.stderr)
        return 1
    return 0


def parse_sizes(text: str) -> list[int]:
    sizes = [int(s) for s in text.split(",") if s]
    if not sizes or any(not 1 <= s <= MAX_SIZE for s in sizes):
        raise SystemExit(f"sizes must be 1..{MAX_SIZE} bytes, got {text!r}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="TCP ping-pong latency and streaming bandwidth")
    sub = parser.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--bind", default="0.0.0.0")
    s.add_argument("--port", type=int, required=True)
    c = sub.add_parser("client")
    c.add_argument("--target", action="append", required=True, type=parse_target,
                   help="NAME=HOST:PORT; repeat to measure several paths interleaved")
    c.add_argument("--sizes", required=True, help="comma-separated message sizes in bytes")
    c.add_argument("--latency-budget", type=float, default=0.1, help="seconds per size")
    c.add_argument("--stream-budget", type=float, default=0.1, help="seconds per size")
    c.add_argument("--min-iters", type=int, default=5)
    c.add_argument("--max-iters", type=int, default=20000)
    c.add_argument("--warmup", type=int, default=20)
    c.add_argument("--stream-max-bytes", type=int, default=1 << 32)
    c.add_argument("--no-stream", action="store_true")
    c.add_argument("--no-latency", action="store_true",
                   help="streaming only: a bulk transfer per target and size")
    c.add_argument("--seed", type=int, default=0,
                   help="shuffle the targets' order per size with this seed (0: rotate)")
    c.add_argument("--nagle", action="store_true",
                   help="leave Nagle's algorithm on at both ends (no TCP_NODELAY)")
    h = sub.add_parser("hold")
    h.add_argument("--host", required=True)
    h.add_argument("--port", type=int, required=True)
    h.add_argument("--flows", type=int, default=4)
    h.add_argument("--seconds", type=float, default=60)
    p = sub.add_parser("probe")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--timeout", type=float, default=3.0)
    args = parser.parse_args(argv)
    if args.mode == "serve":
        serve(args.bind, args.port)
    elif args.mode == "client":
        result = measure_targets(args.target, parse_sizes(args.sizes), args.latency_budget,
                                 args.stream_budget, args.min_iters, args.max_iters, args.warmup,
                                 args.stream_max_bytes, args.no_stream, args.seed, args.nagle,
                                 no_latency=args.no_latency)
        print(json.dumps(result))
    elif args.mode == "hold":
        hold(args.host, args.port, args.flows, args.seconds)
    elif args.mode == "probe":
        return probe(args.host, args.port, args.timeout)
    return 0


# -- the harness side: run the program above on nodes ---------------------------------------------
# (imports inside functions: the file must also run alone, where no harness package exists)

_REMOTE_COPIES: dict[tuple[str, str], str] = {}

def program(journal, node) -> list[str]:
    """argv prefix that runs this file on ``node`` (copied there, and recorded, if remote).

    The copy is written by the user the node's commands run as (root through ``sudo`` on a
    sudo node), into a folder that command makes (``mkdir`` fails on anything already
    there) and no one else may enter: an SFTP copy would be the login's file, which the
    login -- or, with a loose umask, its group -- could change before root runs it."""
    import os
    import secrets as _secrets
    import shlex

    if node.is_local:
        return [sys.executable, os.path.abspath(__file__)]
    machine = node.machine
    key = (str(journal.path), json.dumps(machine.describe(), sort_keys=True))
    if key not in _REMOTE_COPIES:  # one copy per (journal, machine); the journal removes it
        folder = f"/tmp/harness-pingpong-{_secrets.token_hex(8)}"
        path = f"{folder}/pingpong.py"
        journal.record("file", machine, path=folder)
        with open(os.path.abspath(__file__), "rb") as fh:
            source = fh.read()
        machine.run(f"umask 077 && mkdir -- {shlex.quote(folder)} && cat > {shlex.quote(path)}",
                    stdin=source, timeout=60)
        _REMOTE_COPIES[key] = path
    return ["python3", _REMOTE_COPIES[key]]


def server(journal, node, bind: str, port: int, timeout: float = 10.0):
    """Context manager: a ping-pong server on ``node`` at ``bind:port`` for the block."""
    from contextlib import contextmanager

    from ..errors import HarnessError
    from ..nodes.local import wait_until

    @contextmanager
    def running():
        argv = [*program(journal, node), "serve", "--bind", bind, "--port", str(port)]
        with journal.process(node, argv) as proc:
            if not wait_until(lambda: proc.poll() is not None or '"listening"' in proc.output(),
                              timeout):
                raise HarnessError(f"ping-pong server on {node.name} did not listen on "
                                   f"{bind}:{port} within {timeout:g}s: {proc.output()[-300:]}")
            if proc.poll() is not None:
                raise HarnessError(f"ping-pong server on {node.name} {bind}:{port} exited: "
                                   f"{proc.output().strip()[-300:]}",
                                   "is the port in use or the address not on this node?")
            yield proc

    return running()


def client(journal, node, targets: dict[str, tuple[str, int]], sizes: list[int],
           latency_budget: float, stream_budget: float, stream: bool = True, min_iters: int = 5,
           warmup: int = 20, timeout: float | None = None, seed: int = 0,
           nagle: bool = False, latency: bool = True) -> dict:
    """Run the client on ``node`` against every target (name -> (host, port)), interleaved
    (shuffled per size when ``seed`` is given, see :func:`measure_targets`); ``nagle``
    leaves Nagle's algorithm on at both ends of every connection; without ``latency`` it only
    streams (a bulk transfer per target and size)."""
    from ..errors import HarnessError

    argv = [*program(journal, node), "client"]
    for name, (host, port) in targets.items():
        argv += ["--target", f"{name}={host}:{port}"]
    argv += ["--sizes", ",".join(str(s) for s in sizes),
             "--latency-budget", f"{latency_budget:g}", "--stream-budget", f"{stream_budget:g}",
             "--min-iters", str(min_iters), "--warmup", str(warmup)]
    if not stream:
        argv.append("--no-stream")
    if not latency:
        argv.append("--no-latency")
    if seed:
        argv += ["--seed", str(seed)]
    if nagle:
        argv.append("--nagle")
    limit = timeout or 60 + len(targets) * len(sizes) * (latency_budget + stream_budget) * 20
    res = node.run(argv, timeout=limit, check=False, track=True)
    if not res.ok:
        where = ", ".join(f"{n} {h}:{p}" for n, (h, p) in targets.items())
        raise HarnessError(f"ping-pong client on {node.name} ({where}) failed: "
                           f"{(res.stderr or res.stdout).strip()[-800:]}",
                           "is every path up (relays running, routes, NAT)?")
    return json.loads(res.stdout.strip().splitlines()[-1])


def hold_connections(journal, node, host: str, port: int, flows: int, timeout: float = 20.0):
    """Context manager: ``flows`` open connections from ``node`` through ``host:port``."""
    from contextlib import contextmanager

    from ..errors import HarnessError
    from ..nodes.local import wait_until

    @contextmanager
    def holding():
        argv = [*program(journal, node), "hold", "--host", host, "--port", str(port),
                "--flows", str(flows), "--seconds", "120"]
        with journal.process(node, argv) as proc:
            if not wait_until(lambda: proc.poll() is not None or '"ready"' in proc.output(),
                              timeout) or proc.poll() is not None:
                raise HarnessError(f"could not hold {flows} connections from {node.name} to "
                                   f"{host}:{port}: {proc.output().strip()[-300:]}")
            line = next(ln for ln in proc.output().splitlines() if '"ready"' in ln)
            yield json.loads(line)

    return holding()


def answers(journal, node, host: str, port: int, timeout: float = 3.0) -> str | None:
    """None if a TCP connect from ``node`` to ``host:port`` succeeds, else the error text."""
    argv = [*program(journal, node), "probe", "--host", host, "--port", str(port),
            "--timeout", f"{timeout:g}"]
    res = node.run(argv, timeout=timeout + 30, check=False)
    return None if res.ok else (res.stderr or res.stdout).strip() or f"exit {res.exit_status}"


if __name__ == "__main__":
    sys.exit(main())
