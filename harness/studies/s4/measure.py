"""S4's sweep: every (sender CPU limit, streams, transport) point, in a shuffled order per repetition.

A repetition is the study's sample: it measures every point of the sweep once, each
with a fresh connection set (a new iperf3 client, a new globus-url-copy), so its
values are paired. Within a repetition the order of *all* factors -- the sender's CPU
limit, the stream count and the transport -- is drawn from the run's recorded seed, so
a drift of the shared machine falls on every factor alike instead of on whichever
always ran last (before 2026-11-26 only the transport was shuffled, the stream counts
ran in ascending order).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...progress import progress
from ...tools import counters
from ...tools.iperf3 import iperf3_client, iperf3_server, settle
from ..order import MeasuringOrder
from .design import limit_label

if TYPE_CHECKING:
    from ...run.session import Session

TRANSPORTS = ("tcp", "mptcp")
IPERF_PORTS = {"tcp": 5201, "mptcp": 5202}
GRIDFTP_PORTS = {"tcp": 2811, "mptcp": 2812}
CONGESTION = "cubic"

ORDER_DESIGN = ("per repetition, every (sender CPU limit, streams, transport) point in one "
                "order shuffled from the seed; iperf3's points first, then GridFTP's likewise")


@dataclass(frozen=True)
class Point:
    """One measurement of the sweep."""

    transport: str
    streams: int
    sender_cpus: float  # 0: no limit

    @property
    def mptcp(self) -> bool:
        return self.transport == "mptcp"

    def name(self) -> str:
        limit = f"{self.sender_cpus:g} CPUs" if self.sender_cpus else "no CPU limit"
        return f"{self.transport} {self.streams} streams, {limit}"


def plan(order: MeasuringOrder, streams: Sequence[int], limits: Sequence[float]) -> list[Point]:
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


def _sweep(bed, order: MeasuringOrder, repetitions: int, streams: Sequence[int],
           limits: Sequence[float], what: str,
           measure: Callable[[Point, int], dict]) -> list[dict]:
    """Each repetition's points in their drawn order; a row per point with the path counters."""
    rows = []
    with progress(repetitions * len(streams) * len(limits) * len(TRANSPORTS), what) as bar:
        for rep in range(1, repetitions + 1):
            for position, point in enumerate(plan(order, streams, limits)):
                started = time.monotonic()
                before = PathCounters.read(bed)
                row = measure(point, rep)
                paths = before.since(bed)
                rows.append({"transport": point.transport, "streams": point.streams,
                             "sender_cpus": point.sender_cpus, "repetition": rep,
                             "order": position, **row,
                             "wall_s": time.monotonic() - started, **paths})
                bar.step(f"{point.name()}, repetition {rep}")
                settle()
    return rows


def sweep_iperf3(session: Session, bed, params, cgroups: Mapping[float, str | None],
                 order: MeasuringOrder) -> list[dict]:
    """iperf3 (memory to memory) at every point; single-path TCP is pinned to path 1. The
    limits swept are those of ``cgroups`` (limit -> its cgroup, None: no limit)."""
    server, client = bed.node("server"), bed.node("client")
    server_ip = bed.address("server", "eth0")
    path1_ip = bed.address("client", "eth0")

    def measure(point: Point, rep: int) -> dict:
        result = iperf3_client(
            client, server_ip, port=IPERF_PORTS[point.transport], seconds=params.duration_s,
            streams=point.streams, congestion=CONGESTION,
            # single-path TCP is pinned to path 1; MPTCP starts there and joins path 2
            bind=None if point.mptcp else path1_ip, mptcp=point.mptcp,
            cgroup=cgroups[point.sender_cpus])
        session.raw(f"iperf3-{point.transport}-p{point.streams:02d}-"
                    f"{limit_label(point.sender_cpus)}-r{rep}.json",
                    json.dumps(result.raw, indent=1))
        return {"tool": "iperf3", "goodput_mbit": result.received_bps / 1e6,
                "sent_mbit": result.sent_bps / 1e6, "retransmits": result.retransmits,
                "congestion": result.congestion, "bytes": result.bytes_received,
                "measure_s": result.seconds, "tool_s": result.process_s,
                "attempts": result.attempts}

    j = session.journal
    with iperf3_server(j, server, server_ip, IPERF_PORTS["tcp"]), \
            iperf3_server(j, server, server_ip, IPERF_PORTS["mptcp"], mptcp=True):
        return _sweep(bed, order, params.repetitions, params.streams, tuple(cgroups),
                      "s4 iperf3", measure)


def sweep_gridftp(session: Session, bed, params, cgroups: Mapping[float, str | None],
                  order: MeasuringOrder) -> list[dict]:
    """Real GridFTP uploads (globus-url-copy -p N) at every point."""
    from ...tools.gridftp import gridftp_server, gridftp_transfer

    server, client = bed.node("server"), bed.node("client")
    server_ip = bed.address("server", "eth0")
    size = params.gridftp_mbytes * 2**20

    def measure(point: Point, rep: int) -> dict:
        result = gridftp_transfer(client, server_ip, GRIDFTP_PORTS[point.transport], size,
                                  point.streams, mptcp=point.mptcp,
                                  cgroup=cgroups[point.sender_cpus])
        session.raw(f"gridftp-{point.transport}-p{point.streams:02d}-"
                    f"{limit_label(point.sender_cpus)}-r{rep}.txt", result.output)
        return {"tool": "gridftp", "goodput_mbit": result.mbit_per_s, "sent_mbit": None,
                "retransmits": None, "congestion": None, "bytes": result.bytes,
                "measure_s": result.seconds, "tool_s": result.seconds}

    j = session.journal
    with gridftp_server(j, server, server_ip, GRIDFTP_PORTS["tcp"], mptcp=False), \
            gridftp_server(j, server, server_ip, GRIDFTP_PORTS["mptcp"], mptcp=True):
        return _sweep(bed, order, params.repetitions, params.gridftp_streams, tuple(cgroups),
                      "s4 GridFTP", measure)
