"""S4 -- MPTCP versus TCP for Globus/GridFTP-style parallel transfers (seed 004).

Paper (Hong, KISTI, 2021): a client with two 500 Mbit/s interfaces reaches a
server with one 1 Gbit/s interface through a router. Single-path TCP (CUBIC)
peaks at 460 Mbit/s, MPTCP (out-of-tree v0.95, coupled BALIA) at 934 Mbit/s;
from 1 to 10 parallel streams TCP gains 5% and MPTCP 16%.

Here: upstream Linux MPTCP (v1) with the in-kernel path manager, an endpoint
on each client interface and per-interface policy routing. Upstream has no
coupled controller (LIA/OLIA/BALIA): each subflow runs the congestion control
asked for (CUBIC), uncoupled; run.json's ``controllers`` records the kernel's
scheduler, path manager and controllers. Traffic: iperf3 (memory to memory) and
a real GridFTP transfer (globus-url-copy with -p N parallel data streams), each
over TCP and over MPTCP, from a sender with no CPU limit and from one limited by a
cgroup to the limit anchored to the paper's single stream (the paper limits its
sender's CPU, 004:66): each run first calibrates that limit (:mod:`.calibration`,
:mod:`.design` says which candidates and why), then measures all factors in an
order shuffled per repetition (:mod:`.measure`).
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
from .design import ANCHORED, PROFILES, REGISTRATION_FILE, limit_label
from .measure import (
    CONGESTION,
    SenderLimit,
    calibrate,
    iperf3_servers,
    order_design,
    sweep_gridftp,
    sweep_iperf3,
)

STUDY = "s4"
LAB_PREFIX = "198.18.0.0/15"  # RFC 2544 benchmarking range
#: The smallest limit S4 takes: its smallest calibration candidate (design.CALIBRATION_CPUS), the
#: kernel's smallest quota of 1 ms over a 200 ms period (harness.config.cgroup.cfs_period_us;
#: 0.01 CPUs, 1 ms of 100 ms, until the change of 2026-11-29T23:33Z)
MIN_CPUS = 0.005


def _limits(name: str, value, words: tuple[str, ...] = ()) -> list:
    """The items of a list of CPU limits given as 0.01, "0,0.01" or a list; each 0 (no
    limit), MIN_CPUS..64 or one of ``words``; no repeats, not empty."""
    if isinstance(value, str):
        items: Iterable = [v for v in value.replace(" ", "").split(",") if v]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise SpecError(f"parameter {name}={value!r} is not a list of CPU limits",
                        f"write e.g. {_example(words)}")
    out: list = []
    for item in items:
        if isinstance(item, str) and item in words:
            cpus: float | str = item
        else:
            try:
                cpus = float(item)
            except (TypeError, ValueError):
                raise SpecError(f"parameter {name} has a non-number {item!r}",
                                f"write e.g. {_example(words)}") from None
            if isinstance(item, bool) or (cpus and not MIN_CPUS <= cpus <= 64):
                raise SpecError(f"parameter {name}={cpus:g} is out of range",
                                f"use {MIN_CPUS:g}..64 CPUs (or 0: no limit)")
        if cpus in out:
            raise SpecError(f"parameter {name} repeats {cpus}", "give each limit once")
        out.append(cpus)
    if not out:
        raise SpecError(f"parameter {name} is empty", f"give at least one limit, e.g. {_example(words)}")
    return out


def _example(words: tuple[str, ...]) -> str:
    return "0,anchored (0: no limit; anchored: the calibrated limit)" if words else "0.01,0.015"


def cpu_limits(name: str, value) -> tuple[float | str, ...]:
    """Sender CPU limits the claims are measured at: 0 (no limit), 0.01..64 CPUs, or
    "anchored" (the limit the run's calibration chooses, :mod:`.calibration`)."""
    return tuple(_limits(name, value, (ANCHORED,)))


def candidate_limits(name: str, value) -> tuple[float, ...]:
    """The calibration's candidate limits: each 0.01..64 CPUs, ascending, no repeats."""
    out = _limits(name, value)
    if 0.0 in out:
        raise SpecError(f"parameter {name} has 0 (no limit), which is not a limit to calibrate",
                        f"give limits of {MIN_CPUS:g}..64 CPUs")
    return tuple(sorted(out))


@dataclass(frozen=True)
class Params(Parameters):
    profiles: ClassVar[dict[str, dict]] = PROFILES
    streams: tuple[int, ...] = param(PROFILES["quick"]["streams"], "parallel streams per point",
                                     low=1, high=128)
    repetitions: int = param(2, "repetitions of the whole sweep (the claims' samples)", low=1,
                             high=100)
    seed: int = param(0, "seed of the randomised order of every factor in each repetition",
                      low=0, high=2**31 - 1, zero="a fresh seed, recorded in run.json")
    duration_s: int = param(PROFILES["quick"]["duration_s"], "seconds per iperf3 point", unit="s",
                            low=1, high=600)
    path_rate_mbit: float = param(500.0, "rate of each client path (the paper: 500)",
                                  unit="Mbit/s", low=1, high=40_000)
    server_rate_mbit: float = param(1000.0, "rate of the server's link (the paper: 1000)",
                                    unit="Mbit/s", low=1, high=40_000)
    sender_cpus: tuple[float | str, ...] = param(
        PROFILES["quick"]["sender_cpus"], "CPU limits of the sender (a cgroup each), swept; "
        "the paper limits its sender's CPU (004:66); anchored: the calibration's choice",
        unit="CPUs", low=MIN_CPUS, high=64, zero="no limit", parse=cpu_limits)
    calibration_cpus: tuple[float, ...] = param(
        PROFILES["quick"]["calibration_cpus"], "candidate limits the calibration measures one "
        "stream at before the claims (only with sender_cpus anchored)", unit="CPUs",
        low=MIN_CPUS, high=64, parse=candidate_limits)
    calibration_repetitions: int = param(
        PROFILES["quick"]["calibration_repetitions"], "repetitions of the calibration (its "
        "medians choose the anchored limit)", low=1, high=20)
    gridftp: bool = param(True, "also run real GridFTP transfers (globus-url-copy -p N)")
    gridftp_streams: tuple[int, ...] = param(PROFILES["quick"]["gridftp_streams"],
                                             "parallel GridFTP data streams per point",
                                             low=1, high=64)
    gridftp_mbytes: int = param(PROFILES["quick"]["gridftp_mbytes"], "bytes per GridFTP transfer",
                                unit="MiB", low=1, high=100_000)
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
    for cpus in (0.0, ANCHORED):
        label, limited = limit_label(cpus), CGROUP_KINDS if cpus else ()
        needs[f"s4.tcp_peak@{label}"] = needs[f"s4.tcp_gain_1_10@{label}"] = limited
        needs[f"s4.mptcp_peak@{label}"] = needs[f"s4.mptcp_gain_1_10@{label}"] = \
            needs[f"s4.gain_contrast_1_10@{label}"] = limited + mptcp_path
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


@dataclass(frozen=True)
class SenderLimits:
    """The limits :meth:`S4.configure` made: those measured as given (no limit, fixed CPUs) and
    the calibration's candidates (empty: no anchored limit, or its cgroups not made)."""

    fixed: tuple[SenderLimit, ...]
    candidates: tuple[SenderLimit, ...] = ()


def controllers(kernel: dict, frame: pd.DataFrame) -> dict:
    """What run.json says ran: each transport's congestion control (asked, and as iperf3
    reported it), the client kernel's MPTCP scheduler and path manager, and the coupled
    controllers it offers (upstream: none), beside the paper's."""
    reported = {t: sorted(frame[frame.transport == t].congestion.dropna().unique())
                for t in ("tcp", "mptcp")} if "congestion" in frame else {}
    coupled = kernel.get("coupled_controllers") or []
    return {
        "tcp": CONGESTION,
        "mptcp": f"upstream Linux MPTCP v1, {kernel.get('net.mptcp.path_manager') or 'in-kernel'} "
                 f"path manager, scheduler {kernel.get('net.mptcp.scheduler') or '(no sysctl)'}, "
                 f"{CONGESTION} per subflow, uncoupled (coupled controllers in this kernel: "
                 f"{', '.join(coupled) or 'none'})",
        "paper_mptcp": "out-of-tree MPTCP v0.95 with the coupled BALIA controller (004:66)",
        "reported_by_iperf3": reported,
        "client_kernel": kernel,
    }


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

    def configure(self, session: Session, bed, params: Params) -> SenderLimits:
        """MPTCP on client and server; a cgroup per sender CPU limit, and with ``anchored``
        one per candidate of the calibration. A run as found makes no cgroup, and a point
        "limited" by a cgroup that does not exist would be an unlimited point mislabelled,
        so such limits are left out of the sweep and run.json says which and why."""
        configure_mptcp(session, bed)
        if session.as_found is not None:
            require_congestion_allowed(bed.node("client"))
        not_made: dict[str, str] = {}

        def made(cpus: float, label: str) -> SenderLimit | None:
            limit = cgroup.CpuLimit(bed.node("client"), cpus, f"s4-sender-{label}")
            records = session.apply(limit)
            if session.as_found is not None and any(r.changed for r in records):
                not_made[label] = (f"not measured: its cgroup {limit.path} was not made (run "
                                   f"as found: {OPERATIONS['cgroup']})")
                return None
            return SenderLimit.of(cpus, limit.path)

        fixed: list[SenderLimit | None] = []
        for cpus in params.sender_cpus:
            if cpus == ANCHORED:
                continue
            fixed.append(made(cpus, limit_label(cpus)) if cpus else SenderLimit.of(0.0))
        candidates: list[SenderLimit | None] = []
        if ANCHORED in params.sender_cpus:
            candidates = [made(cpus, f"calibration-{cpus:g}") for cpus in params.calibration_cpus]
            if None in candidates:
                not_made[ANCHORED] = ("not measured: the calibration's cgroups were not made "
                                      f"(run as found: {OPERATIONS['cgroup']})")
                candidates = []
        if not_made:
            session.note(sender_cpus_not_measured=not_made)
        return SenderLimits(tuple(f for f in fixed if f), tuple(c for c in candidates if c))

    def measure(self, session: Session, bed, params: Params, limits: SenderLimits) -> None:
        """Calibrate the anchored limit (when asked and its cgroups exist), then sweep limits x
        streams x transports with iperf3, then with GridFTP; archive the tables."""
        order = MeasuringOrder(params.seed)
        measured = list(limits.fixed)
        with iperf3_servers(session, bed):
            if limits.candidates:
                anchor, points = calibrate(session, bed, params, limits.candidates, order)
                session.results(pd.DataFrame(points), "calibration")
                session.note(calibration={**anchor.record(),
                                          "repetitions": params.calibration_repetitions})
                measured.append(next(c for c in limits.candidates
                                     if c.cpus == anchor.cpus).anchored())
            rows = sweep_iperf3(session, bed, params, measured, order)
        if params.gridftp:
            rows += sweep_gridftp(session, bed, params, measured, order)
        session.note(order=order.record(order_design(self.registration().design)))
        frame = pd.DataFrame(rows)
        session.results(frame)
        session.note(controllers=controllers(mptcp.read_kernel(bed.node("client")), frame))

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import registration as s4_analysis

        return s4_analysis.claims(data.results, **s4_analysis.rates(data.meta),
                                  calibration=data.tables.get("calibration"))

    def run_conditions(self, meta: dict) -> str:
        """The anchored limit the run's calibration chose, with the calibration's own one-stream
        medians (not the claim points'; since 2026-11-29 the text says so, and that the paper's
        one stream is derived), or ""."""
        chosen = (meta.get("calibration") or {}).get("chosen")
        return f"anchored limit {chosen}" if chosen else ""

    def figures(self, data: RunData) -> dict:
        from . import figures as s4_figures
        from . import registration as s4_analysis

        out = {"fig3": s4_figures.figure(data.results, **s4_analysis.rates(data.meta))}
        if data.tables.get("calibration") is not None:
            out["calibration"] = s4_figures.calibration_figure(data.tables["calibration"])
        return out
