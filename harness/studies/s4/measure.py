"""S4's sweep: every (sender CPU limit, streams, transport) point, in a shuffled order per repetition.

A repetition is the study's sample: it measures every point of the sweep once, each
with a fresh connection set (a new iperf3 client, a new globus-url-copy), so its
values are paired. Within a repetition the order of *all* factors -- the sender's CPU
limit, the stream count and the transport -- is drawn from the run's recorded seed, so
a drift of the shared machine falls on every factor alike instead of on whichever
always ran last (before 2026-11-26 only the transport was shuffled, the stream counts
ran in ascending order).

Before the claims' sweep, a run that measures at the anchored limit calibrates it
(:func:`calibrate`): one stream of each transport at every candidate limit, in an order
shuffled per calibration repetition, archived as the ``calibration`` table; the rule of
:mod:`.calibration` chooses the limit, and the sweep then measures the claims there on
points of its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from ...progress import progress
from ...tools import counters
from ...tools.iperf3 import iperf3_client, iperf3_server, settle
from ..order import MeasuringOrder
from .calibration import Anchor, choose_limit
from .design import ANCHORED, limit_label

if TYPE_CHECKING:
    from ...run.session import Session

TRANSPORTS = ("tcp", "mptcp")
IPERF_PORTS = {"tcp": 5201, "mptcp": 5202}
GRIDFTP_PORTS = {"tcp": 2811, "mptcp": 2812}
CONGESTION = "cubic"

def order_design(design: dict) -> str:
    """The measuring order as registered (s4/registration.toml [design]: calibration.order, then
    order), recorded with the run's order: one text, never a second copy in code."""
    return " ".join(f"calibration first ({design['calibration']['order']}); then {design['order']}".split())


@dataclass(frozen=True)
class SenderLimit:
    """A sender CPU limit points are measured at: how tables name it ("nolimit", "anchored",
    "cpu0.015"), its CPUs (0: none) and the cgroup that imposes it (None: none)."""

    label: str
    cpus: float
    cgroup: str | None = None

    @classmethod
    def of(cls, cpus: float, cgroup: str | None = None) -> SenderLimit:
        return cls(limit_label(cpus), cpus, cgroup)

    def anchored(self) -> SenderLimit:
        """This candidate as the anchored limit (same CPUs, same cgroup)."""
        return SenderLimit(ANCHORED, self.cpus, self.cgroup)

    def text(self) -> str:
        limit = f"{self.cpus:g} CPUs" if self.cpus else "no CPU limit"
        return f"{limit} (anchored)" if self.label == ANCHORED else limit


@dataclass(frozen=True)
class Point:
    """One measurement of the sweep."""

    transport: str
    streams: int
    limit: SenderLimit

    @property
    def mptcp(self) -> bool:
        return self.transport == "mptcp"

    @property
    def sender_cpus(self) -> float:
        return self.limit.cpus

    def name(self) -> str:
        return f"{self.transport} {self.streams} streams, {self.limit.text()}"

    def file_tag(self) -> str:
        """The point in raw file names: transport, streams, limit (with its CPUs if anchored)."""
        limit = self.limit.label + (f"{self.limit.cpus:g}" if self.limit.label == ANCHORED else "")
        return f"{self.transport}-p{self.streams:02d}-{limit}"


def plan(order: MeasuringOrder, streams: Sequence[int],
         limits: Sequence[SenderLimit]) -> list[Point]:
    """One repetition's points, in the order drawn for it."""
    return order.shuffle([Point(t, s, c) for c in limits for s in streams for t in TRANSPORTS])


@dataclass
class PathCounters:
    """The client's per-interface byte counters and the kernel's MPTcpExt counters."""

    before_if: dict
    before_mptcp: dict

    @classmethod
    def read(cls, bed) -> PathCounters:
        client = bed.node("client")
        devs = [bed.device("client", "eth0"), bed.device("client", "eth1")]
        return cls(*counters.interface_bytes_and_netstat(client, devs, "MPTcpExt"))

    def since(self, bed) -> dict:
        now = PathCounters.read(bed)
        d0, d1 = bed.device("client", "eth0"), bed.device("client", "eth1")
        mp = counters.delta(now.before_mptcp, self.before_mptcp)
        return {
            "path1_tx_bytes": now.before_if[d0]["tx"] - self.before_if[d0]["tx"],
            "path2_tx_bytes": now.before_if[d1]["tx"] - self.before_if[d1]["tx"],
            "mp_capable_syn_ack_rx": mp.get("MPCapableSYNACKRX", 0),
            "mp_join_syn_ack_rx": mp.get("MPJoinSynAckRx", 0),
            "mp_fallback": mp.get("MPFallbackTokenInit", 0) + mp.get("MPCapableFallbackACK", 0)
            + mp.get("MPCapableFallbackSYNACK", 0),
        }


def cpu_stat(node, cgroup: str | None) -> dict[str, int]:
    """The CFS bandwidth counters of ``cgroup`` (cpu.stat: nr_periods, nr_throttled, both
    cgroup versions); empty without a cgroup."""
    if not cgroup:
        return {}
    pairs = (line.split() for line in node.read_text(f"{cgroup}/cpu.stat").splitlines())
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}


def throttling(before: dict[str, int], after: dict[str, int]) -> dict:
    """How often the limit held the sender back during a point: the CFS periods it ran in and
    those in which its quota ran out (None without a cgroup)."""
    if not before:
        return {"cpu_periods": None, "cpu_throttled_periods": None}
    return {"cpu_periods": after.get("nr_periods", 0) - before.get("nr_periods", 0),
            "cpu_throttled_periods": after.get("nr_throttled", 0) - before.get("nr_throttled", 0)}


def _sweep(bed, order: MeasuringOrder, repetitions: int, streams: Sequence[int],
           limits: Sequence[SenderLimit], what: str,
           measure: Callable[[Point, int], dict]) -> list[dict]:
    """Each repetition's points in their drawn order; a row per point with the path counters
    and, at a limit, the sender cgroup's throttling during it (the limit measured to bite)."""
    rows = []
    client = bed.node("client")
    with progress(repetitions * len(streams) * len(limits) * len(TRANSPORTS), what) as bar:
        for rep in range(1, repetitions + 1):
            for position, point in enumerate(plan(order, streams, limits)):
                started = time.monotonic()
                before, cpu_before = PathCounters.read(bed), cpu_stat(client, point.limit.cgroup)
                row = measure(point, rep)
                paths = before.since(bed)
                cpu = throttling(cpu_before, cpu_stat(client, point.limit.cgroup))
                rows.append({"transport": point.transport, "streams": point.streams,
                             "sender_cpus": point.sender_cpus, "limit": point.limit.label,
                             "repetition": rep,
                             "order": position, **row,
                             "wall_s": time.monotonic() - started, **paths, **cpu})
                bar.step(f"{point.name()}, repetition {rep}")
                settle()
    return rows


def _iperf3_measure(session: Session, bed, params, raw_prefix: str) -> Callable[[Point, int], dict]:
    """One iperf3 point (memory to memory); single-path TCP is pinned to path 1, MPTCP starts
    there and joins path 2. Its JSON is archived as ``raw/<raw_prefix>-<point>-r<rep>.json``."""
    client = bed.node("client")
    server_ip = bed.address("server", "eth0")
    path1_ip = bed.address("client", "eth0")

    def measure(point: Point, rep: int) -> dict:
        result = iperf3_client(
            client, server_ip, port=IPERF_PORTS[point.transport], seconds=params.duration_s,
            streams=point.streams, congestion=CONGESTION,
            bind=None if point.mptcp else path1_ip, mptcp=point.mptcp,
            cgroup=point.limit.cgroup)
        session.raw(f"{raw_prefix}-{point.file_tag()}-r{rep}.json",
                    json.dumps(result.raw, indent=1))
        return {"tool": "iperf3", "goodput_mbit": result.received_bps / 1e6,
                "sent_mbit": result.sent_bps / 1e6, "retransmits": result.retransmits,
                "congestion": result.congestion, "bytes": result.bytes_received,
                "measure_s": result.seconds, "tool_s": result.process_s,
                "attempts": result.attempts}

    return measure


@contextmanager
def iperf3_servers(session: Session, bed) -> Iterator[None]:
    """The server's iperf3 listeners, one per transport, for the calibration and the sweep."""
    server, server_ip, j = bed.node("server"), bed.address("server", "eth0"), session.journal
    with iperf3_server(j, server, server_ip, IPERF_PORTS["tcp"]), \
            iperf3_server(j, server, server_ip, IPERF_PORTS["mptcp"], mptcp=True):
        yield


def calibrate(session: Session, bed, params, candidates: Sequence[SenderLimit],
              order: MeasuringOrder) -> tuple[Anchor, list[dict]]:
    """One stream of each transport at every candidate limit, ``calibration_repetitions``
    times, each repetition in its own shuffled order (inside :func:`iperf3_servers`); the
    anchored limit by the registered rule (:func:`~.calibration.choose_limit`). Returns the
    choice and the points, each row carrying its run's choice (the ``calibration`` table)."""
    rows = _sweep(bed, order, params.calibration_repetitions, (1,), candidates,
                  "s4 calibration", _iperf3_measure(session, bed, params, "calibration-iperf3"))
    anchor = choose_limit(pd.DataFrame(rows))
    for row in rows:
        row.update(anchored_cpus=anchor.cpus, anchor_distance=anchor.distance)
    return anchor, rows


def sweep_iperf3(session: Session, bed, params, limits: Sequence[SenderLimit],
                 order: MeasuringOrder) -> list[dict]:
    """iperf3 at every point of every repetition (inside :func:`iperf3_servers`)."""
    return _sweep(bed, order, params.repetitions, params.streams, limits, "s4 iperf3",
                  _iperf3_measure(session, bed, params, "iperf3"))


def sweep_gridftp(session: Session, bed, params, limits: Sequence[SenderLimit],
                  order: MeasuringOrder) -> list[dict]:
    """Real GridFTP uploads (globus-url-copy -p N) at every point."""
    from ...tools.gridftp import gridftp_server, gridftp_transfer

    server, client = bed.node("server"), bed.node("client")
    server_ip = bed.address("server", "eth0")
    size = params.gridftp_mbytes * 2**20

    def measure(point: Point, rep: int) -> dict:
        result = gridftp_transfer(client, server_ip, GRIDFTP_PORTS[point.transport], size,
                                  point.streams, mptcp=point.mptcp, cgroup=point.limit.cgroup)
        session.raw(f"gridftp-{point.file_tag()}-r{rep}.txt", result.output)
        return {"tool": "gridftp", "goodput_mbit": result.mbit_per_s, "sent_mbit": None,
                "retransmits": None, "congestion": None, "bytes": result.bytes,
                "measure_s": result.seconds, "tool_s": result.seconds}

    j = session.journal
    with gridftp_server(j, server, server_ip, GRIDFTP_PORTS["tcp"], mptcp=False), \
            gridftp_server(j, server, server_ip, GRIDFTP_PORTS["mptcp"], mptcp=True):
        return _sweep(bed, order, params.repetitions, params.gridftp_streams, limits,
                      "s4 GridFTP", measure)
