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
-p N parallel data streams), each over TCP and over MPTCP, from a sender whose CPU
is limited by a cgroup at each registered limit (the paper limits its sender's CPU,
004:66; :mod:`.design` says which limits and why), all factors in an order
shuffled per repetition (:mod:`.measure`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from ...config import cgroup, mptcp
from ...config.congestion import DefaultCongestion
from ...errors import CapabilityMissing, SpecError
from ...machines.privileges import OPERATIONS
from ...run.session import Session
from ...tools.gridftp import GLOBUS_URL_COPY, GRIDFTP_SERVER
from ...tools.iperf3 import IPERF3, MPTCPIZE
from ...topology.topology import Topology, TopologyBuilder
from ..base import Citation, Requirements, RunData, Study
from ..order import MeasuringOrder
from ..parameters import Parameters, param
from .design import PROFILES, REGISTRATION_FILE, SENDER_CPUS, limit_label
from .measure import CONGESTION, ORDER_DESIGN, sweep_gridftp, sweep_iperf3

STUDY = "s4"
LAB_PREFIX = "198.18.0.0/15"  # RFC 2544 benchmarking range
MIN_CPUS = 0.01  # 1 ms of a 100 ms CFS period: the smallest quota the cgroup's period allows


def cpu_limits(name: str, value) -> tuple[float, ...]:
    """Sender CPU limits: 0.01, "0,0.01" or a list; each 0 (no limit) or 0.01..64, no repeats."""
    if isinstance(value, str):
        items: Iterable = [v for v in value.replace(" ", "").split(",") if v]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise SpecError(f"parameter {name}={value!r} is not a list of CPU limits",
                        "write e.g. 0,0.01 (0: no limit)")
    out = []
    for item in items:
        try:
            cpus = float(item)
        except (TypeError, ValueError):
            raise SpecError(f"parameter {name} has a non-number {item!r}",
                            "write e.g. 0,0.01 (0: no limit)") from None
        if isinstance(item, bool) or (cpus and not MIN_CPUS <= cpus <= 64):
            raise SpecError(f"parameter {name}={cpus:g} is out of range",
                            f"use {MIN_CPUS:g}..64 CPUs (or 0: no limit)")
        if cpus in out:
            raise SpecError(f"parameter {name} repeats {cpus:g}", "give each limit once")
        out.append(cpus)
    if not out:
        raise SpecError(f"parameter {name} is empty", "give at least one limit (0: no limit)")
    return tuple(out)


@dataclass(frozen=True)
class Params(Parameters):
    profiles: ClassVar[dict[str, dict]] = PROFILES
    streams: tuple[int, ...] = param(PROFILES["quick"]["streams"], "parallel streams per point",
                                     low=1, high=128)
    repetitions: int = param(2, "repetitions of the whole sweep (the claims' samples)", low=1,
                             high=100)
    seed: int = param(0, "seed of the randomised order of every factor in each repetition",
                      low=0, high=2**31 - 1, zero="a fresh seed, recorded in run.json")
    duration_s: int = param(4, "seconds per iperf3 point", unit="s", low=1, high=600)
    path_rate_mbit: float = param(500.0, "rate of each client path (the paper: 500)",
                                  unit="Mbit/s", low=1, high=40_000)
    server_rate_mbit: float = param(1000.0, "rate of the server's link (the paper: 1000)",
                                    unit="Mbit/s", low=1, high=40_000)
    sender_cpus: tuple[float, ...] = param(
        PROFILES["quick"]["sender_cpus"], "CPU limits of the sender (a cgroup each), swept; "
        "the paper limits its sender's CPU (004:66)", unit="CPUs", low=MIN_CPUS, high=64,
        zero="no limit", parse=cpu_limits)
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


#: the changes a CPU limit makes (:mod:`harness.config.cgroup`), by cgroup version
CGROUP_KINDS = ("cgroup-v2", "cgroup-v1", "cgroup-controller")


def as_found_needs() -> dict[str, tuple[str, ...]]:
    """Claim id -> the kinds of change it rests on, for a run as found: MPTCP's claims on the
    client's second-path endpoint and policy routing, a limited sender's on its cgroup."""
    needs: dict[str, tuple[str, ...]] = {}
    mptcp_path = ("mptcp-endpoint", "rule")
    for cpus in SENDER_CPUS:
        label, limited = limit_label(cpus), CGROUP_KINDS if cpus else ()
        needs[f"s4.tcp_peak@{label}"] = needs[f"s4.tcp_gain_1_10@{label}"] = limited
        needs[f"s4.mptcp_peak@{label}"] = needs[f"s4.mptcp_gain_1_10@{label}"] = \
            limited + mptcp_path
    needs["s4.mptcp_over_tcp"] = needs["s4.mptcp_both_paths"] = mptcp_path
    return {claim: kinds for claim, kinds in needs.items() if kinds}


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


ALLOWED_CONGESTION = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


def require_congestion_allowed(node) -> None:
    """Before measuring as found: iperf3 asks for CUBIC on every sender socket, which a login
    without CAP_NET_ADMIN may do only if the kernel's allowed list names it (this host's
    kernel defaults to bbr and allows "reno bbr"); otherwise every point would fail with
    iperf3's EPERM. Say so once, before the first point."""
    allowed = node.read_text(ALLOWED_CONGESTION).split()
    if CONGESTION not in allowed:
        raise CapabilityMissing(
            f"{node.name} lets ordinary logins use only the congestion control "
            f"{' '.join(allowed) or '(none)'}, and S4 measures with {CONGESTION} (the paper's)",
            f"ask its administrator to add {CONGESTION} to net.ipv4.tcp_allowed_congestion_"
            f"control, or reach it as root or with sudo: true in the inventory; nothing was "
            f"changed")


class S4(Study):
    name = STUDY
    registration_file = REGISTRATION_FILE
    title = "MPTCP versus TCP for Globus/GridFTP-style parallel transfers"
    citation = Citation(
        "Wontaek Hong",
        "Monitoring of Parallel Transfer Performance for MPTCP-based Globus Service "
        "(MPTCP기반 Globus 서비스 적용을 위한 병렬 전송성능 모니터링)",
        "Korean conference proceedings, published 3 October 2021 (KoreaScience record "
        "CFKO202132348529237); author at KISTI", 2021, "004_d6ca26a4142f3e16.txt",
        note="the seed prints no venue; the record names the date but not the conference")
    Params = Params
    #: On a user's machines whose login is not root and may not sudo (:mod:`harness.machines.as_found`)
    #: S4 measures TCP and MPTCP as the machines are; a claim resting on a change not made
    #: is "not testable here": MPTCP's second subflow needs the client's endpoint, a limited
    #: sender its cgroup (whose points are then not measured at all, see :meth:`configure`).
    as_found = as_found_needs()

    def topology(self, params: Params) -> Topology:
        return topology(params)

    def requirements(self, params: Params) -> Requirements:
        tools = (IPERF3, MPTCPIZE) + ((GLOBUS_URL_COPY, GRIDFTP_SERVER) if params.gridftp else ())
        return Requirements(features=frozenset({"mptcp"}), tools=tools)

    def configure(self, session: Session, bed, params: Params) -> dict[float, str | None]:
        """MPTCP on client and server; a cgroup per sender CPU limit. Returns limit -> cgroup
        for each limit that can be measured: a run as found makes no cgroup, and a point
        "limited" by a cgroup that does not exist would be an unlimited point mislabelled,
        so such limits are left out of the sweep and run.json says which and why."""
        configure_mptcp(session, bed)
        if session.as_found is not None:
            require_congestion_allowed(bed.node("client"))
        cgroups: dict[float, str | None] = {}
        not_made: dict[str, str] = {}
        for cpus in params.sender_cpus:
            if not cpus:
                cgroups[cpus] = None
                continue
            limit = cgroup.CpuLimit(bed.node("client"), cpus, f"s4-sender-{limit_label(cpus)}")
            records = session.apply(limit)
            if session.as_found is not None and any(r.changed for r in records):
                not_made[limit_label(cpus)] = (f"not measured: its cgroup {limit.path} was not "
                                               f"made (run as found: {OPERATIONS['cgroup']})")
                continue
            cgroups[cpus] = limit.path
        if not_made:
            session.note(sender_cpus_not_measured=not_made)
        return cgroups

    def measure(self, session: Session, bed, params: Params,
                cgroups: dict[float, str | None]) -> None:
        """Sweep limits x streams x transports with iperf3, then with GridFTP; archive one table."""
        order = MeasuringOrder(params.seed)  # the limits measured: those of ``cgroups``
        rows = sweep_iperf3(session, bed, params, cgroups, order)
        if params.gridftp:
            rows += sweep_gridftp(session, bed, params, cgroups, order)
        session.note(order=order.record(ORDER_DESIGN))
        session.results(pd.DataFrame(rows))
        session.note(controllers={
            "tcp": CONGESTION,
            "mptcp": f"upstream Linux MPTCP v1, in-kernel path manager, {CONGESTION} per subflow "
                     "(uncoupled; LIA/OLIA/BALIA are not in the upstream kernel)",
            "paper_mptcp": "out-of-tree MPTCP v0.95 with coupled BALIA",
        })

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import registration as s4_analysis

        return s4_analysis.claims(data.results, **s4_analysis.rates(data.meta))

    def figures(self, data: RunData) -> dict:
        from . import figures as s4_figures
        from . import registration as s4_analysis

        return {"fig3": s4_figures.figure(data.results, **s4_analysis.rates(data.meta))}
