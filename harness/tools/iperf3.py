"""iperf3 servers and clients on any node, over TCP or MPTCP, with JSON results.

Debian's iperf3 3.12 has no ``--mptcp``: MPTCP runs wrap both ends with
``mptcpize run`` (an LD_PRELOAD that turns TCP sockets into MPTCP sockets).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from ..errors import CommandFailed, HarnessError, SpecError
from ..journal.journal import Journal
from ..nodes import Node
from ..nodes.base import command_text
from ..nodes.facts import wait_listening
from ..nodes.local import in_cgroup
from .registry import Tool
from .tcp_info import sampled, split

IPERF3 = Tool("iperf3", "iperf3 --version", "iperf3")
MPTCPIZE = Tool("mptcpize", "mptcpize --version", "mptcpize")  # MPTCP for programs without it

MAX_STREAMS = 128
BUSY_RETRIES = 4
#: What iperf3 prints when its test never started or was cut by the server, not by the
#: path: "busy" while the server still resets from the previous test, and a control
#: connection the server closed (seen once in CI, 2026-11-26: S4's 1 %-CPU sender beside a
#: suite at load ~9). Such a test is run again, and the result counts its attempts.
TRANSIENT = ("server is busy", "control socket has closed unexpectedly")


@dataclass
class Iperf3Result:
    sent_bps: float
    received_bps: float
    seconds: float
    bytes_received: int
    retransmits: int | None
    streams: int
    congestion: str | None
    raw: dict = field(repr=False, default_factory=dict)
    process_s: float | None = None  # wall time of the iperf3 process (set by iperf3_client)
    attempts: int = 1  # tests started until this one ran (set by iperf3_client)
    retried: list[str] = field(default_factory=list)  # why each earlier attempt was run again
    samples: str = field(repr=False, default="")  # the sampler's output (iperf3_client's sample)

    @property
    def received_mbps(self) -> float:
        return self.received_bps / 1e6


def parse_iperf3_json(text: str, streams: int) -> Iperf3Result:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise HarnessError(f"iperf3 printed no JSON result: {text[:300]!r}") from None
    if data.get("error") or "sum_sent" not in data.get("end", {}):
        raise HarnessError(f"iperf3 failed: {data.get('error', 'no end-of-test summary')}")
    end = data["end"]
    sent, recv = end["sum_sent"], end["sum_received"]
    return Iperf3Result(
        sent_bps=sent["bits_per_second"],
        received_bps=recv["bits_per_second"],
        seconds=recv["seconds"],
        bytes_received=recv["bytes"],
        retransmits=sent.get("retransmits"),
        streams=streams,
        congestion=end.get("sender_tcp_congestion"),
        raw=data,
    )


def _wrap(argv: list[str], mptcp: bool) -> list[str]:
    return ["mptcpize", "run", *argv] if mptcp else argv


@contextmanager
def iperf3_server(journal: Journal, node: Node, bind: str, port: int = 5201,
                  mptcp: bool = False, timeout: float = 10.0) -> Iterator[None]:
    """An iperf3 server on ``node`` listening on ``bind:port`` for the block's duration."""
    argv = _wrap(["iperf3", "-s", "-B", bind, "-p", str(port)], mptcp)
    with journal.process(node, argv) as proc:
        if not wait_listening(node, port, timeout) or proc.poll() is not None:
            raise HarnessError(
                f"iperf3 server on {node.name} {bind}:{port} did not start: {proc.output()[-500:]}",
                "is the port in use, or the address not on this node?",
            )
        yield


def iperf3_client_argv(server: str, port: int, seconds: float, streams: int,
                       congestion: str | None, bind: str | None, mptcp: bool,
                       omit: float = 0.0, window: int | None = None,
                       reverse: bool = False) -> list[str]:
    if streams < 1 or streams > MAX_STREAMS:
        raise SpecError(f"iperf3 stream count {streams} is out of range",
                        f"use 1..{MAX_STREAMS} parallel streams")
    if seconds < 1 or int(seconds) != seconds:
        # iperf3 3.12 reads -t with atoi: 0.5 would become 0, which means "forever"
        raise SpecError(f"iperf3 duration {seconds} s must be a whole number of seconds >= 1")
    argv = ["iperf3", "-c", server, "-p", str(port), "-t", str(int(seconds)), "-P", str(streams),
            "-J", "--connect-timeout", "3000"]
    if window is not None:
        if not 1024 <= window <= 1 << 30:
            raise SpecError(f"iperf3 window {window} B is out of range",
                            "use 1 KiB..1 GiB (the socket buffer iperf3 asks for; the kernel "
                            "caps it at net.core.rmem_max / wmem_max)")
        argv += ["-w", str(window)]
    if reverse:
        argv += ["-R"]
    if omit:
        argv += ["-O", f"{omit:g}"]
    if congestion:
        argv += ["-C", congestion]
    if bind:
        argv += ["-B", bind]
    return _wrap(argv, mptcp)


def iperf3_client(node: Node, server: str, port: int = 5201, seconds: float = 5.0,
                  streams: int = 1, congestion: str | None = None, bind: str | None = None,
                  mptcp: bool = False, omit: float = 0.0, cgroup: str | None = None,
                  window: int | None = None, reverse: bool = False,
                  sample: str | None = None, sample_every: float = 0.5) -> Iperf3Result:
    """Run one iperf3 test from ``node`` to ``server``; raise on failure.

    ``cgroup`` starts the client inside that cgroup (e.g. a CPU limit); ``window`` asks
    both ends for that socket buffer (``-w``); ``reverse``: the server sends (``-R``);
    ``sample``: a shell command run every ``sample_every`` s on ``node`` while the test
    runs (e.g. :func:`harness.tools.tcp_info.ss_command`), its output in ``samples``.
    """
    argv = iperf3_client_argv(server, port, seconds, streams, congestion, bind, mptcp, omit,
                              window, reverse)
    command = in_cgroup(command_text(argv), cgroup)
    if sample:
        command = sampled(command, sample, sample_every,
                          math.ceil((seconds + omit + 10) / sample_every))
    retried: list[str] = []
    samples = ""
    for attempt in range(1, BUSY_RETRIES + 1):
        res = node.run(command, timeout=seconds + omit + 30, check=False, track=True)
        if sample:
            stdout, samples = split(res.stdout)
            res = replace(res, stdout=stdout)
        # iperf3 serves one test at a time; a loaded machine may not have reset the
        # server from the previous test yet: "the server is busy running a test".
        transient = next((t for t in TRANSIENT if t in res.stdout), None)
        if transient is None or attempt == BUSY_RETRIES:
            break
        retried.append(transient)
        time.sleep(0.5 * attempt)
    if not res.ok:
        try:
            parse_iperf3_json(res.stdout, streams)
        except HarnessError as exc:
            raise HarnessError(f"on {node.name}: {exc.message}") from None
        raise CommandFailed(res)
    result = parse_iperf3_json(res.stdout, streams)
    result.process_s = res.duration
    result.attempts, result.retried = len(retried) + 1, retried
    result.samples = samples
    return result


def settle(seconds: float = 0.2) -> None:
    """Let the previous test's sockets close before the next starts."""
    time.sleep(seconds)
