"""S4 -- MPTCP versus TCP for Globus/GridFTP-style parallel transfers (seed 004).

Paper (Hong, KISTI, 2021): a client with two 500 Mbit/s interfaces reaches a
server with one 1 Gbit/s interface through a router. Single-path TCP (CUBIC)
peaks at 460 Mbit/s, MPTCP (out-of-tree v0.95, coupled BALIA) at 934 Mbit/s;
from 1 to 10 parallel streams TCP gains 5% and MPTCP 16%.

Here: upstream Linux MPTCP (v1) with the in-kernel path manager, an endpoint
on each client interface and per-interface policy routing. Upstream has no
coupled controller (LIA/OLIA/BALIA): each subflow runs the congestion control
asked for (CUBIC), uncoupled; the run records which controller ran. Traffic:
iperf3 (memory to memory) and a real GridFTP transfer (globus-url-copy with
-p N parallel data streams), each over TCP and over MPTCP.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from ..config import cgroup, mptcp
from ..config.congestion import DefaultCongestion
from ..progress import progress
from ..session import Session
from ..tools import counters
from ..tools.gridftp import GLOBUS_URL_COPY, GRIDFTP_SERVER
from ..tools.iperf3 import IPERF3, MPTCPIZE, iperf3_client, iperf3_server, settle
from ..topology import Topology, TopologyBuilder
from .base import Citation, Requirements, RunData, Study
from .order import MeasuringOrder
from .parameters import Parameters, param

STUDY = "s4"
IPERF_PORT_TCP = 5201
IPERF_PORT_MPTCP = 5202
GRIDFTP_PORT_TCP = 2811
GRIDFTP_PORT_MPTCP = 2812
CONGESTION = "cubic"
LAB_PREFIX = "198.18.0.0/15"  # RFC 2544 benchmarking range

PROFILES = {
    # quick: the notebook's defaults; minutes on a laptop
    "quick": dict(streams=(1, 2, 4, 10), repetitions=2, duration_s=4,
                  gridftp_streams=(1, 4, 10), gridftp_mbytes=64),
    # verdict: the quick sweep repeated until every claim's interval is narrow (~12 min)
    "verdict": dict(streams=(1, 2, 4, 10), repetitions=10, duration_s=4,
                    gridftp_streams=(1, 4, 10), gridftp_mbytes=64),
    # paper: the paper's sweep, 1..10 streams, repeated
    "paper": dict(streams=tuple(range(1, 11)), repetitions=3, duration_s=8,
                  gridftp_streams=tuple(range(1, 11)), gridftp_mbytes=192),
}


@dataclass(frozen=True)
class Params(Parameters):
    profiles: ClassVar[dict[str, dict]] = PROFILES
    streams: tuple[int, ...] = param(PROFILES["quick"]["streams"], "parallel streams per point",
                                     low=1, high=128)
    repetitions: int = param(2, "repetitions of the whole sweep (the claims' samples)", low=1,
                             high=100)
    seed: int = param(0, "seed of the randomised order of TCP and MPTCP in each repetition",
                      low=0, high=2**31 - 1, zero="a fresh seed, recorded in run.json")
    duration_s: int = param(4, "seconds per iperf3 point", unit="s", low=1, high=600)
    path_rate_mbit: float = param(500.0, "rate of each client path (the paper: 500)",
                                  unit="Mbit/s", low=1, high=40_000)
    server_rate_mbit: float = param(1000.0, "rate of the server's link (the paper: 1000)",
                                    unit="Mbit/s", low=1, high=40_000)
    sender_cpus: float = param(0.0, "CPU limit of the sender, in CPUs (a cgroup)", unit="CPUs",
                               low=0.05, high=64, zero="no limit")
    gridftp: bool = param(True, "also run real GridFTP transfers (globus-url-copy -p N)")
    gridftp_streams: tuple[int, ...] = param(PROFILES["quick"]["gridftp_streams"],
                                             "parallel GridFTP data streams per point",
                                             low=1, high=64)
    gridftp_mbytes: int = param(64, "bytes per GridFTP transfer", unit="MiB", low=1,
                                high=100_000)
    verify_seconds: int = param(2, "iperf3 seconds per link direction when verifying the lab",
                                unit="s", low=1, high=60)


def topology(params: Params) -> Topology:
    """client (eth0, eth1) -- router -- server (eth0); policy routing per client interface."""
    p, s = params.path_rate_mbit, params.server_rate_mbit
    return (
        TopologyBuilder("s4-mptcp")
        .node("client").node("router", forwarding=True).node("server")
        .link(("client", "eth0", "198.18.1.2/24"), ("router", "eth0", "198.18.1.1/24"), rate_mbit=p)
        .link(("client", "eth1", "198.18.2.2/24"), ("router", "eth1", "198.18.2.1/24"), rate_mbit=p)
        .link(("server", "eth0", "198.18.3.2/24"), ("router", "eth2", "198.18.3.1/24"), rate_mbit=s)
        # Routes cover the lab's prefix only: with no default route a lookup of
        # anything outside the lab (DNS, say) fails at once instead of timing out.
        .route("client", LAB_PREFIX, via="198.18.1.1", dev="eth0")
        .route("client", LAB_PREFIX, via="198.18.1.1", dev="eth0", table=101)
        .route("client", LAB_PREFIX, via="198.18.2.1", dev="eth1", table=102)
        .rule("client", "198.18.1.2/32", table=101, priority=1001)
        .rule("client", "198.18.2.2/32", table=102, priority=1002)
        .route("server", LAB_PREFIX, via="198.18.3.1", dev="eth0")
        .build(notes="S4: two 500 Mbit/s client paths, one 1 Gbit/s server link")
    )


def configure_mptcp(session: Session, bed) -> None:
    """Enable MPTCP; let the client open one extra subflow from its second interface."""
    client, server = bed.node("client"), bed.node("server")
    for node in (client, server):
        # GridFTP has no per-socket option: make CUBIC the nodes' default too. One node per
        # apply: both may extend their machine's allowed list, each from what the last left.
        session.apply(mptcp.enable(node), DefaultCongestion(node, CONGESTION))
    session.apply(mptcp.Limits(client, subflows=2, add_addr_accepted=0),
                  mptcp.Limits(server, subflows=2, add_addr_accepted=0),
                  mptcp.MptcpEndpoint(client, bed.address("client", "eth1"),
                                      bed.device("client", "eth1"), ("subflow",)))


@dataclass
class PathCounters:
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


class S4(Study):
    name = STUDY
    title = "MPTCP versus TCP for Globus/GridFTP-style parallel transfers"
    citation = Citation(
        "Wontaek Hong",
        "Monitoring of Parallel Transfer Performance for MPTCP-based Globus Service "
        "(MPTCP기반 Globus 서비스 적용을 위한 병렬 전송성능 모니터링)",
        "Korean conference proceedings, published 3 October 2021 (KoreaScience record "
        "CFKO202132348529237); author at KISTI", 2021, "004_d6ca26a4142f3e16.txt",
        note="the seed prints no venue; the record names the date but not the conference")
    Params = Params

    def topology(self, params: Params) -> Topology:
        return topology(params)

    def requirements(self, params: Params) -> Requirements:
        tools = (IPERF3, MPTCPIZE) + ((GLOBUS_URL_COPY, GRIDFTP_SERVER) if params.gridftp else ())
        return Requirements(features=frozenset({"mptcp"}), tools=tools)

    def configure(self, session: Session, bed, params: Params) -> str | None:
        """MPTCP on client and server; the sender's CPU limit. Returns the cgroup (or None)."""
        configure_mptcp(session, bed)
        if not params.sender_cpus:
            return None
        limit = cgroup.CpuLimit(bed.node("client"), params.sender_cpus, "s4-sender")
        session.apply(limit)
        return limit.path

    def measure(self, session: Session, bed, params: Params, cpu_cgroup: str | None) -> None:
        """Sweep streams x transports with iperf3, then with GridFTP; archive one table."""
        order = MeasuringOrder(params.seed)
        rows = sweep_iperf3(session, bed, params, cpu_cgroup, order)
        if params.gridftp:
            rows += sweep_gridftp(session, bed, params, cpu_cgroup, order)
        session.note(order=order.record(
            "TCP and MPTCP back to back per stream count, in an order shuffled per stream "
            "count and repetition"))
        session.results(pd.DataFrame(rows))
        session.note(controllers={
            "tcp": CONGESTION,
            "mptcp": f"upstream Linux MPTCP v1, in-kernel path manager, {CONGESTION} per subflow "
                     "(uncoupled; LIA/OLIA/BALIA are not in the upstream kernel)",
            "paper_mptcp": "out-of-tree MPTCP v0.95 with coupled BALIA",
        })

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import s4_analysis

        return s4_analysis.claims(data.results)

    def figures(self, data: RunData) -> dict:
        from . import s4_analysis

        return {"fig3": s4_analysis.figure(data.results)}


def measure(params: Params, run_dir: str = "", inventory: str = "") -> str:
    """The study run end to end (see :meth:`Study.run`); returns the run folder."""
    return S4().run(params, run_dir, inventory)


def sweep_iperf3(session: Session, bed, params: Params, cpu_cgroup: str | None,
                 order: MeasuringOrder) -> list[dict]:
    j = session.journal
    server, client = bed.node("server"), bed.node("client")
    server_ip = bed.address("server", "eth0")
    path1_ip = bed.address("client", "eth0")
    rows = []
    with iperf3_server(j, server, server_ip, IPERF_PORT_TCP), \
            iperf3_server(j, server, server_ip, IPERF_PORT_MPTCP, mptcp=True), \
            progress(params.repetitions * len(params.streams) * 2, "s4 iperf3") as bar:
        for rep in range(1, params.repetitions + 1):
            for streams in params.streams:
                for position, transport in enumerate(order.shuffle(("tcp", "mptcp"))):
                    is_mptcp = transport == "mptcp"
                    started = time.monotonic()
                    before = PathCounters.read(bed)
                    result = iperf3_client(
                        client, server_ip,
                        port=IPERF_PORT_MPTCP if is_mptcp else IPERF_PORT_TCP,
                        seconds=params.duration_s, streams=streams, congestion=CONGESTION,
                        # single-path TCP is pinned to path 1; MPTCP starts there and joins path 2
                        bind=None if is_mptcp else path1_ip, mptcp=is_mptcp,
                        cgroup=cpu_cgroup)
                    paths = before.since(bed)
                    wall = time.monotonic() - started
                    session.raw(f"iperf3-{transport}-p{streams:02d}-r{rep}.json",
                                _json(result.raw))
                    rows.append({
                        "tool": "iperf3", "transport": transport, "streams": streams,
                        "repetition": rep, "order": position,
                        "goodput_mbit": result.received_bps / 1e6,
                        "sent_mbit": result.sent_bps / 1e6, "retransmits": result.retransmits,
                        "congestion": result.congestion, "bytes": result.bytes_received,
                        "measure_s": result.seconds, "tool_s": result.process_s,
                        "wall_s": wall, **paths,
                    })
                    bar.step(f"{transport} {streams} streams, repetition {rep}")
                    settle()
    return rows


def sweep_gridftp(session: Session, bed, params: Params, cpu_cgroup: str | None,
                 order: MeasuringOrder) -> list[dict]:
    from ..tools.gridftp import gridftp_server, gridftp_transfer

    j = session.journal
    server, client = bed.node("server"), bed.node("client")
    server_ip = bed.address("server", "eth0")
    size = params.gridftp_mbytes * 2**20
    rows = []
    with gridftp_server(j, server, server_ip, GRIDFTP_PORT_TCP, mptcp=False), \
            gridftp_server(j, server, server_ip, GRIDFTP_PORT_MPTCP, mptcp=True), \
            progress(params.repetitions * len(params.gridftp_streams) * 2, "s4 GridFTP") as bar:
        for rep in range(1, params.repetitions + 1):
            for streams in params.gridftp_streams:
                for position, transport in enumerate(order.shuffle(("tcp", "mptcp"))):
                    is_mptcp = transport == "mptcp"
                    started = time.monotonic()
                    before = PathCounters.read(bed)
                    result = gridftp_transfer(
                        client, server_ip,
                        GRIDFTP_PORT_MPTCP if is_mptcp else GRIDFTP_PORT_TCP,
                        size, streams, mptcp=is_mptcp, cgroup=cpu_cgroup)
                    paths = before.since(bed)
                    wall = time.monotonic() - started
                    session.raw(f"gridftp-{transport}-p{streams:02d}-r{rep}.txt", result.output)
                    rows.append({
                        "tool": "gridftp", "transport": transport, "streams": streams,
                        "repetition": rep, "order": position,
                        "goodput_mbit": result.mbit_per_s,
                        "sent_mbit": None, "retransmits": None, "congestion": None,
                        "bytes": result.bytes, "measure_s": result.seconds,
                        "tool_s": result.seconds, "wall_s": wall,
                        **paths,
                    })
                    bar.step(f"{transport} {streams} streams, repetition {rep}")
                    settle()
    return rows


def _json(data: dict) -> str:
    import json

    return json.dumps(data, indent=1)
