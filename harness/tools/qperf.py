"""qperf: one tool for verbs (RC) and socket (TCP) latency and bandwidth, as a cross-check.

Study S1 measures its curves with perftest and its own ping-pong; qperf
measures one point of each again with a single independent program:
``rc_lat``/``rc_bw`` (RC send/receive) and ``tcp_lat``/``tcp_bw``. Its TCP
tests do not set TCP_NODELAY (Nagle stays on), which a comparison must say.

qperf reports one ``name = value unit`` line per quantity under a
``test:`` line, with units scaled by powers of 1000 (``us``/``ms``,
``KB/sec``/``MB/sec``, ``K/sec``), commas in long numbers and sizes as
``KiB`` when they divide evenly. The client asks for ``-uu`` (unified units:
ns, bytes/sec, no commas) to keep its own output plain; :func:`parse_output`
reads either form into base units, so output archived from a run without
``-uu`` reads the same. ``-vv`` adds the parameters used and both nodes'
CPU use (machine-wide, from /proc/stat, not per process). A latency is half
a round trip, like perftest's and the ping-pong's.

The server (plain ``qperf``) serves client after client until stopped; it
listens on ``listen_port`` (19765) for the control connection, and its TCP
tests open data connections on ports of their own.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..config.rdma import with_memlock
from ..errors import HarnessError, SpecError
from ..journal.journal import Journal
from ..nodes import Node
from ..nodes.facts import wait_listening
from .registry import Tool

QPERF = Tool("qperf", "qperf --version", "qperf")
TESTS = ("rc_lat", "rc_bw", "tcp_lat", "tcp_bw")
RDMA_TESTS = ("rc_lat", "rc_bw")
LISTEN_PORT = 19765
MAX_SIZE = 1 << 30

# unit -> (quantity, factor to the base unit: s, bytes/s, 1/s, bytes, count, percent, s/GB)
_UNITS: dict[str, tuple[str, float]] = {
    **{u: ("time", f) for u, f in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("sec", 1.0))},
    **{f"{p}B/sec": ("bandwidth", f) for p, f in (("", 1), ("K", 1e3), ("M", 1e6), ("G", 1e9),
                                                  ("T", 1e12))},
    "bytes/sec": ("bandwidth", 1.0), "bits/sec": ("bandwidth", 1 / 8),
    **{f"{p}b/sec": ("bandwidth", f / 8) for p, f in (("K", 1e3), ("M", 1e6), ("G", 1e9),
                                                      ("T", 1e12))},
    **{f"{p}/sec": ("rate", f) for p, f in (("", 1), ("K", 1e3), ("M", 1e6), ("G", 1e9),
                                            ("T", 1e12))},
    "bytes": ("size", 1.0), "KB": ("size", 1e3), "MB": ("size", 1e6), "GB": ("size", 1e9),
    "TB": ("size", 1e12), "KiB": ("size", 1024.0), "MiB": ("size", 1024.0 ** 2),
    "GiB": ("size", 1024.0 ** 3), "TiB": ("size", 1024.0 ** 4),
    "": ("count", 1.0), "thousand": ("count", 1e3), "million": ("count", 1e6),
    "billion": ("count", 1e9), "trillion": ("count", 1e12),
    "% cpus": ("cpus", 1.0),
    **{u: ("cost", f) for u, f in (("ns/GB", 1e-9), ("us/GB", 1e-6), ("ms/GB", 1e-3),
                                   ("sec/GB", 1.0))},
}
_TEST_LINE = re.compile(r"^(\w+):\s*$")
_VALUE_LINE = re.compile(r"^\s+(\w+)\s+=\s+(.*?)\s*$")
_NUMBER = re.compile(r"^-?[\d,]+(\.\d+)?$")


@dataclass(frozen=True)
class QperfRun:
    """One qperf client invocation: its tests share the message size and duration."""

    tests: tuple[str, ...]
    msg_size: int | None = None  # -m (bytes); qperf's default per test if None
    seconds: int = 2  # -t
    listen_port: int = LISTEN_PORT  # -lp, the same at the server
    device: str | None = None  # -i DEVICE:PORT for the RC tests (e.g. rxe0)
    ib_port: int = 1
    poll: bool | None = None  # -cp: poll the CQ (True) or wait for events (False)
    verbose: bool = True  # -vv: parameters used and CPU use
    precision: int | None = None  # -e: significant digits (qperf's default 3)
    #: -cm1: connect RC tests through the RDMA connection manager, which resolves the peer's
    #: RoCE v2 GID from its IP address (without it qperf's RC tests on Soft-RoCE stop with
    #: "failed to modify QP to RTR: Invalid argument", seen in every S1 run to 2026-11-29)
    use_cm: bool = False
    #: -to: qperf's timeout for exchanging its synchronisation and results (its default,
    #: 5 s, ran out in a TCG VM at host load: "tcp_lat: failed to receive results: timed
    #: out" at 64 B, CI 2026-11-29); it bounds waiting only, never the measurement
    exchange_timeout_s: int = 30

    def check(self) -> None:
        unknown = [t for t in self.tests if t not in TESTS]
        if not self.tests or unknown:
            raise SpecError(f"qperf tests {list(self.tests)} are not supported",
                            f"use some of {', '.join(TESTS)}")
        if self.msg_size is not None and not 1 <= self.msg_size <= MAX_SIZE:
            raise SpecError(f"qperf message size {self.msg_size} is out of range",
                            f"use 1..{MAX_SIZE} bytes")
        if int(self.seconds) != self.seconds or self.seconds < 1:
            raise SpecError(f"qperf duration {self.seconds} must be a whole number of seconds "
                            ">= 1")
        if (self.device or self.poll is not None or self.use_cm) \
                and not set(self.tests) & set(RDMA_TESTS):
            raise SpecError("a device or polling mode is set but no RC test is asked",
                            f"add one of {RDMA_TESTS}, or leave them unset")
        if not 1 <= self.listen_port <= 65535 or self.ib_port < 1:
            raise SpecError(f"qperf listen port {self.listen_port} or device port "
                            f"{self.ib_port} is out of range")
        if int(self.exchange_timeout_s) != self.exchange_timeout_s \
                or not 1 <= self.exchange_timeout_s <= 600:
            raise SpecError(f"qperf exchange timeout {self.exchange_timeout_s} is out of range",
                            "use a whole number of seconds in 1..600")
        if self.precision is not None and not 1 <= self.precision <= 12:
            raise SpecError(f"qperf precision {self.precision} is out of range", "use 1..12")

    def client_argv(self, server: str) -> list[str]:
        self.check()
        argv = ["qperf", server, "-lp", str(self.listen_port), "-t", str(int(self.seconds)),
                "-to", str(int(self.exchange_timeout_s)), "-uu"]
        if self.msg_size is not None:
            argv += ["-m", str(self.msg_size)]
        if self.device:
            argv += ["-i", f"{self.device}:{self.ib_port}"]
        if self.use_cm:
            argv += ["-cm1"]
        if self.poll is not None:
            argv += ["-cp", "1" if self.poll else "0"]
        if self.precision is not None:
            argv += ["-e", str(self.precision)]
        if self.verbose:
            argv.append("-vv")
        return with_memlock([*argv, *self.tests])


def server_argv(listen_port: int = LISTEN_PORT) -> list[str]:
    return with_memlock(["qperf", "-lp", str(listen_port)])


@dataclass
class QperfResult:
    """One test's report: every quantity in base units (s, bytes/s, 1/s, bytes, %, s/GB)."""

    test: str
    values: dict[str, float] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)  # every line as printed, strings too

    @property
    def latency_us(self) -> float | None:
        return None if "latency" not in self.values else self.values["latency"] * 1e6

    @property
    def bw_mbit_s(self) -> float | None:
        bw = self.values.get("bw", self.values.get("recv_bw"))
        return None if bw is None else bw * 8 / 1e6

    @property
    def msg_size(self) -> int | None:
        return None if "msg_size" not in self.values else int(self.values["msg_size"])

    def row(self) -> dict:
        """A tidy row: the test, its message size, its result and the CPU use qperf saw."""
        row = {"test": self.test, "msg_size": self.msg_size, "latency_us": self.latency_us,
               "bw_mbit_s": self.bw_mbit_s, "msg_rate_per_s": self.values.get("msg_rate")}
        row.update({k: v for k, v in self.values.items() if k.endswith("cpus_used")})
        return row


def _quantity(name: str, text: str) -> float | None:
    """``"28.7 us"`` -> 2.87e-05; ``"64 KiB (65,536)"`` -> 65536.0; a string -> None."""
    text = re.sub(r"\s*\([^)]*\)$", "", text)
    number, _, unit = text.partition(" ")
    if not _NUMBER.match(number):
        return None
    unit = unit.strip()
    if unit not in _UNITS:
        raise HarnessError(f"qperf: unknown unit {unit!r} in {name} = {text}")
    return float(number.replace(",", "")) * _UNITS[unit][1]


def parse_output(text: str) -> list[QperfResult]:
    """Every test's result from a qperf client's output; HarnessError if a test has none."""
    results: list[QperfResult] = []
    for line in text.splitlines():
        test = _TEST_LINE.match(line)
        if test:
            results.append(QperfResult(test.group(1)))
            continue
        value = _VALUE_LINE.match(line)
        if value and results:
            name, shown = value.groups()
            results[-1].text[name] = shown
            number = _quantity(name, shown)
            if number is not None:
                results[-1].values[name] = number
    empty = [r.test for r in results if not {"latency", "bw", "recv_bw"} & set(r.values)]
    if not results or empty:
        tail = "\n".join(text.strip().splitlines()[-5:])
        raise HarnessError(f"qperf reported no result for {', '.join(empty) or 'any test'}: "
                           f"{tail or '(no output)'}",
                           "is the qperf server running with the same -lp, and for RC tests "
                           "the RDMA device up (`ibv_devinfo`)?")
    return results


@contextmanager
def server(journal: Journal, node: Node, listen_port: int = LISTEN_PORT,
           timeout: float = 15.0) -> Iterator[object]:
    """A qperf server on ``node`` for the block (it serves any number of clients)."""
    with journal.process(node, server_argv(listen_port)) as proc:
        if not wait_listening(node, listen_port, timeout) or proc.poll() is not None:
            raise HarnessError(f"qperf server on {node.name} did not listen on port "
                               f"{listen_port}: {proc.output().strip()[-400:]}",
                               "is the port in use?")
        yield proc


def client(node: Node, run: QperfRun, server_host: str, timeout: float | None = None
           ) -> list[QperfResult]:
    """Run ``run`` from ``node`` against the server at ``server_host``; one result per test."""
    limit = timeout or 60 + len(run.tests) * (run.seconds + 10)
    res = node.run(run.client_argv(server_host), timeout=limit, check=False, track=True)
    if not res.ok:
        raise HarnessError(f"qperf client on {node.name} failed (exit {res.exit_status}): "
                           f"{(res.stderr or res.stdout).strip()[-600:]}",
                           "is the qperf server running and reachable?")
    return parse_output(res.stdout)


SIZE_MARK = "@size"


@dataclass(frozen=True)
class QperfSweep:
    """qperf's tests at several sizes in ONE command on the client (one round trip into a
    TCG VM instead of one per size): for each size, in the order given, one invocation of
    its ``tests`` (``tcp_lat`` and ``tcp_bw``, or the RC tests ``rc_lat`` and ``rc_bw`` on a
    ``device``) for ``seconds`` each, its output after an ``@size N`` line.

    Time-based: qperf's ``-n`` (a message count) hangs its socket tests ("failed to receive
    synchronization after test", qperf 0.4.11 on loopback here, 2026-11-27), so a count
    cannot be made equal to another tool's. qperf's socket tests do not set TCP_NODELAY and
    have no switch for it. Each message is one write, and Linux holds a sub-MSS segment only
    while an earlier *small* segment is unacknowledged (Minshall's variant of Nagle): a
    ping-pong's last partial segment leaves at once; a stream of small writes is coalesced,
    as Nagle's algorithm does.
    """

    sizes: tuple[int, ...]
    seconds: int = 1
    listen_port: int = LISTEN_PORT
    #: the tests at each size; S1's 2-CPU level needs ``tcp_lat`` alone (1 s less per size)
    tests: tuple[str, ...] = ("tcp_lat", "tcp_bw")
    device: str | None = None  # for RC tests (rc_lat, rc_bw): -i DEVICE:1
    use_cm: bool = False  # for RC tests: -cm1 (QperfRun.use_cm)

    def run(self, size: int) -> QperfRun:
        return QperfRun(self.tests, size, self.seconds, self.listen_port, device=self.device,
                        use_cm=self.use_cm)

    def client_command(self, server: str) -> str:
        if not self.sizes:
            raise SpecError("a qperf sweep needs at least one size")
        return "\n".join(f"echo {SIZE_MARK} {size} && "
                         f"{shlex.join(self.run(size).client_argv(server))} || exit $?"
                         for size in self.sizes)

    def timeout_s(self) -> float:
        """Set-up and both tests per size, generously (a size took ~3-4 s under TCG)."""
        return 60 + len(self.sizes) * (len(self.tests) * self.seconds + 20)


def parse_sweep(text: str) -> dict[int, list[QperfResult]]:
    """A sweep's client output by size (``@size N`` lines); HarnessError naming a size
    whose tests reported nothing."""
    parts: dict[int, list[str]] = {}
    current = None
    for line in text.splitlines():
        words = line.split()
        if words[:1] == [SIZE_MARK] and len(words) == 2 and words[1].isdigit():
            current = int(words[1])
            parts[current] = []
        elif current is not None:
            parts[current].append(line)
    out = {}
    for size, lines in parts.items():
        try:
            out[size] = parse_output("\n".join(lines))
        except HarnessError as exc:
            raise HarnessError(f"qperf at {size} B: {exc.message}", exc.hint) from None
    return out

