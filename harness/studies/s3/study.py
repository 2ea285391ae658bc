"""S3 -- TIPC versus CUBIC-TCP and SCTP for the Hadoop shuffle (seed 003).

Paper (Yoo, Chung, Kim, KIISE 2009): a reducer pulls map-output partitions
from N mappers at once (1:N fan-in). On 51 Opteron nodes, GbE through one
48-port switch, Linux 2.6.25, TIPC 1.7.6, it reports TIPC best in most cases
(at 1:48 and <= 8 KB +10% on average, up to +16% over TCP), TIPC collapsing
at >= 16 KB with many senders (static link window under incast), and at a
25 ms period and <= 16 KB 7-15% less CPU for TIPC than TCP.

Samples are independent repetitions, never the rounds inside one: each repetition
of the rate sweep starts a fresh mapper fleet per protocol (fresh connections), the
protocols in an order shuffled per repetition and the (fan-in, size) points in an order
shuffled per fleet, from the recorded seed; a point's rounds are averaged into that
repetition's one value. The CPU claim is measured in a phase of its own after the rate
sweep, the same way: ``cpu_repetitions`` passes, a fresh fleet per protocol of
``cpu_protocols`` in each. Its CPU is the reducer machine's, system-wide, over the
measured rounds (what ``sar`` reports, as the paper measured it), at the paper's periods
carried over to our port's rate (:func:`.design.cpu_period_ms`).

Here: one reducer and N mapper namespaces joined by a "switch" namespace
that routes; the switch's port toward the reducer is the bottleneck (netem's own rate
at ``port_rate_mbit`` since 2026-11-29, ``port_shaper``; htb before) with a small FIFO
(``queue_packets``, the switch-port buffer, in packets: netem's limit, or a pfifo under
htb; its drops are read from the qdisc per point). Without it a veth has no buffer to
overflow and incast cannot happen. The verdict profile's port rate is registered
(``port_scaling="registered"``): a lab whose measured ceiling cannot carry it is refused
before any point; other profiles scale it to the ceiling. Traffic: our C
generator (harness.fanin), same code for every protocol; TIPC on its Ethernet
bearer as the paper ran it (the switch then bridges its ports: harness.config.bridge;
``tipc_media="udp"``: UDP bearers the switch routes), configured on every node by
harness.config.tipc. The host kernel has no TIPC/SCTP: the lab runs in a VM.
A protocol's failure (a TIPC link reset) is a result, counted by the registered rule
(harness.verdicts.failures); the CPU phase runs CPU-bound (:func:`.design.cpu_bound_period_ms`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from ... import fanin
from ...config import tipc
from ...config.bridge import L2Switch
from ...errors import HarnessError, SpecError
from ...progress import progress
from ...run.session import Session
from ...tools.iperf3 import IPERF3
from ...tools.registry import TC
from ...topology.topology import SHAPERS, Topology, TopologyBuilder
from ..base import Citation, Requirements, RunData, Study
from ..order import MeasuringOrder
from ..parameters import Parameters, param
from .design import (
    CALIBRATION_ROUNDS,
    CPU_LOADS,
    CPU_PERIOD_FACTOR,
    PAPER_PERIOD_MS,
    PORT_SCALINGS,
    PROFILES,
    VARIANTS,
)
from .measure import (
    Point,
    cpu_bound_points,
    cpu_points,
    fleet_plan,
    measure_fleet,
    phase_seconds,
    protocol_orders,
    rate_points,
    round_frame,
    round_times_ms,
)
from .registration import REGISTRATION_FILE, design_regions

STUDY = "s3"
MAX_MAPPERS = 48  # the paper's largest fan-in, and what one VM lab is built and verified with
PORT = 47000
LAB_PREFIX = "198.18.0.0/15"  # RFC 2544 benchmarking range
REDUCER_IP = "198.19.0.2"
TIPC_BEARER = "s3"
SWITCH_BRIDGE = "s3sw"  # the switch's bridge when TIPC runs on Ethernet
@dataclass(frozen=True)
class Params(Parameters):
    profiles: ClassVar[dict[str, dict]] = PROFILES
    protocols: tuple[str, ...] = param(("tcp-cubic", "sctp", "tipc"), "protocols to compare",
                                       choices=VARIANTS, item="protocol")
    mappers: tuple[int, ...] = param(PROFILES["quick"]["mappers"], "fan-in values (1:N)",
                                     low=1, high=MAX_MAPPERS, above="the lab holds (each "
                                     "mapper is a namespace with its own link; 48 is the "
                                     "paper's largest fan-in)")
    sizes_kb: tuple[int, ...] = param(PROFILES["quick"]["sizes_kb"], "partition sizes",
                                      unit="KB", low=1, high=64)
    rounds: int = param(5, "measured rounds per point (averaged into the repetition's value)",
                        low=1, high=100_000)
    warmup: int = param(2, "unmeasured rounds before each point", low=0, high=10_000)
    repetitions: int = param(2, "repetitions of the rate sweep (the rate claims' samples), each "
                             "a fresh mapper fleet per protocol, protocols and points in a "
                             "shuffled order", low=1, high=100)
    seed: int = param(0, "seed of the randomised order of the protocols and points in each "
                      "repetition (rate sweep and CPU phase)",
                      low=0, high=2**31 - 1, zero="a fresh seed, recorded in run.json")
    port_rate_mbit: float = param(100.0, "the reducer's switch port (the paper: 1 Gbit/s)",
                                  unit="Mbit/s", low=1, high=10_000)
    mapper_rate_mbit: float = param(0.0, "rate of each mapper link", unit="Mbit/s", low=1,
                                    high=10_000, zero="unshaped (veth speed)")
    queue_packets: int = param(85, "switch-port buffer toward the reducer (85 x 1514 B ~ 128 KB)",
                               unit="packets", low=1, high=100_000)
    cpu_periods_paper_ms: tuple[int, ...] = param(
        PROFILES["quick"]["cpu_periods_paper_ms"], "CPU experiment: the paper's request "
        "periods (at its 1 Gbit/s and 1:50); ours carry the same load per unit of port rate: "
        "period x 1000 Mbit/s / our port's rate x cpu_mappers / 50", unit="ms", low=1,
        high=10_000)
    cpu_sizes_kb: tuple[int, ...] = param(PROFILES["quick"]["cpu_sizes_kb"],
                                          "CPU experiment: partition sizes", unit="KB",
                                          low=1, high=64)
    cpu_rounds: int = param(6, "CPU experiment: measured rounds per point (0 skips it)", low=0,
                            high=100_000)
    cpu_mappers: int = param(48, "CPU experiment: fan-in (the paper: 1:50)", low=1,
                             high=MAX_MAPPERS, above="the lab holds")
    cpu_repetitions: int = param(2, "CPU experiment: independent repetitions, each a fresh "
                                 "mapper fleet per protocol, protocols in a shuffled order "
                                 "(the CPU claim's samples)", low=1, high=1000)
    cpu_protocols: tuple[str, ...] = param(("tipc", "tcp-cubic"), "CPU experiment: protocols "
                                           "compared (some of `protocols`)", choices=VARIANTS,
                                           item="protocol")
    sndbuf: int = param(0, "SO_SNDBUF for every protocol", unit="B", low=4096, high=1 << 30,
                        zero="kernel default")
    rcvbuf: int = param(0, "SO_RCVBUF for every protocol", unit="B", low=4096, high=1 << 30,
                        zero="kernel default")
    round_timeout_s: float = param(20.0, "time allowed for one round", unit="s", low=0.1,
                                   high=3600)
    verify_seconds: int = param(4, "iperf3 seconds per shaped direction when verifying "
                                "(the wire between two TCG VMs is jittery)", unit="s",
                                low=1, high=60)
    # The reducer in a kernel of its own (a second VM, joined to the switch by a wire).
    # None: when TIPC is measured -- between namespaces of ONE kernel, Linux >= 5.5 hands
    # TIPC messages over directly and they never cross the lab's network.
    reducer_own_kernel: bool | None = param(None, "the reducer in a second VM; empty: yes "
                                            "when TIPC is measured")
    tipc_media: str = param("eth", "TIPC's bearer: eth (the paper's: Ethernet frames through "
                            "the switch, which then bridges its ports) or udp (UDP datagrams "
                            "the switch routes)", choices=tipc.MEDIA)
    cpu_load: str = param("cpu", "CPU experiment: how its period is set: cpu (2 x the "
                          "slowest CPU protocol's back-to-back round time: the receiver's CPU "
                          "loaded as the paper's shuffle loaded it) or wire (the paper's load "
                          "per unit of port rate)", choices=CPU_LOADS)
    port_shaper: str = param("netem", "how the reducer's port enforces its rate: netem (each "
                             "frame's departure scheduled at the rate: no bucket, and a TCG "
                             "stall loses the link no time), htb (a bucket of max(32 KB, 2 ms) "
                             "that lets a small round leave at once; under TCG it carried "
                             "0.944-0.964 of its rate) or serialise (tbf, each frame at the "
                             "wire's pace; in a TCG VM under load its timers fell to 0.28-0.47 "
                             "of the rate)", choices=SHAPERS)
    port_scaling: str = param("ceiling", "how the port's rate meets the machine: ceiling (scaled "
                              "to what the lab's VMs carry, measured at the run's start) or "
                              "registered (as given; a lab that cannot carry it is refused "
                              "before any point is measured)", choices=PORT_SCALINGS)

    def check(self) -> None:
        """The CPU phase measures protocols the lab is configured for: some of ``protocols``."""
        if not self.cpu_rounds:
            return
        twice = sorted({p for p in self.cpu_protocols if self.cpu_protocols.count(p) > 1})
        if twice:
            raise SpecError(f"parameter cpu_protocols names {', '.join(twice)} twice",
                            "name each protocol once")
        missing = [p for p in self.cpu_protocols if p not in self.protocols]
        if missing:
            raise SpecError(f"parameter cpu_protocols has protocol(s) {', '.join(missing)} that "
                            f"are not in protocols ({', '.join(self.protocols)})",
                            "add them to protocols, choose cpu_protocols among protocols, or "
                            "set cpu_rounds=0 to skip the CPU experiment")

    @property
    def split_kernels(self) -> bool:
        if self.reducer_own_kernel is None:
            return "tipc" in self.protocols
        return self.reducer_own_kernel

    @property
    def lab_mappers(self) -> int:
        return max(max(self.mappers), self.cpu_mappers if self.cpu_rounds else 0)

    def kernel_features(self) -> set[str]:
        """Kernel features the chosen protocols need (TCP: none beyond a namespace lab)."""
        return {f for p in self.protocols if (f := fanin.FEATURES[VARIANTS[p][0]])}


def mapper_name(i: int) -> str:
    return f"m{i + 1:02d}"


def mapper_ip(i: int) -> str:
    return f"198.18.{i + 1}.2"


def topology(params: Params, mappers: int | None = None) -> Topology:
    """reducer -- switch (routes) -- m01..mNN; the switch's reducer port is the bottleneck."""
    n = mappers or params.lab_mappers
    if not 1 <= n <= MAX_MAPPERS:
        raise SpecError(f"{n} mappers: out of range", f"use 1..{MAX_MAPPERS}")
    mapper_rate = params.mapper_rate_mbit or None
    b = TopologyBuilder(f"s3-fanin-{n}").node(
        "reducer", machine="reducer" if params.split_kernels else "").node("switch",
                                                                           forwarding=True)
    b.link(("reducer", "eth0", f"{REDUCER_IP}/24"), ("switch", "red", "198.19.0.1/24"),
           rate_mbit=params.port_rate_mbit, queue_packets=params.queue_packets,
           shaper=params.port_shaper)
    b.route("reducer", LAB_PREFIX, via="198.19.0.1", dev="eth0")
    for i in range(n):
        name = mapper_name(i)
        b.node(name)
        b.link((name, "eth0", f"{mapper_ip(i)}/24"), ("switch", name, f"198.18.{i + 1}.1/24"),
               rate_mbit=mapper_rate)
        b.route(name, LAB_PREFIX, via=f"198.18.{i + 1}.1", dev="eth0")
    where = ("; the reducer in a kernel of its own, wired to the switch"
             if params.split_kernels else "")
    fixed = (f"s3's reducer port at {params.port_rate_mbit:g} Mbit/s, registered for profile "
             f"{params.profile} (s3/registration.toml [design] port_scaling)"
             if params.port_scaling == "registered" else "")
    return b.build(notes=f"S3: 1:{n} fan-in; reducer port {params.port_rate_mbit:g} Mbit/s with "
                         f"a {params.queue_packets}-packet FIFO (switch-port buffer){where}",
                   fixed_rates=fixed)


# -- configuration ------------------------------------------------------------

def configure_tipc(session: Session, bed, n: int, media: str = "eth") -> dict:
    """TIPC identity and a bearer on every node; wait until the reducer has n links.

    ``eth`` (the paper's bearer, 003:201): the switch bridges its ports (:class:`L2Switch`:
    one Ethernet segment, the mappers' ports isolated from each other so each mapper links
    to the reducer only, as in the UDP star) and every node enables TIPC on its ``eth0``.
    ``udp``: a UDP bearer the switch routes; the reducer's unicast remote (mapper 1) puts
    its bearer in replicast mode, it learns every mapper from the discovery messages sent
    to it, mappers know only the reducer. Both recorded, and undone, like every change."""
    reducer = bed.node("reducer")
    names = [mapper_name(i) for i in range(n)]
    if media == "eth":
        switch_ports = ["red", *names]
        session.apply(L2Switch(bed.node("switch"), SWITCH_BRIDGE, tuple(switch_ports),
                               isolated=tuple(names)))
        configs = [tipc.TipcNode(reducer, "s3-reducer", "eth", dict(dev="eth0"))]
        configs += [tipc.TipcNode(bed.node(name), f"s3-{name}", "eth", dict(dev="eth0"))
                    for name in names]
        where = dict(dev="eth0")
    else:
        configs = [tipc.TipcNode(reducer, "s3-reducer", "udp", dict(
            name=TIPC_BEARER, localip=REDUCER_IP, remoteip=mapper_ip(0)))]
        configs += [tipc.TipcNode(bed.node(name), f"s3-{name}", "udp", dict(
            name=TIPC_BEARER, localip=mapper_ip(i), remoteip=REDUCER_IP))
            for i, name in enumerate(names)]
        where = dict(name=TIPC_BEARER)
    session.apply(*configs)
    record = {"media": media, "bearer": configs[0].bearer_id,
              "switch": "bridge (mapper ports isolated)" if media == "eth" else "IP router"}
    if session.dry_run:
        return {"links_up": None, **record}
    started = time.monotonic()
    up = tipc.wait_links(reducer, n, timeout=60 + 2 * n)
    if up < n:
        hint = ("Ethernet frames of type 0x88ca must cross the switch's bridge"
                if media == "eth" else "UDP port 6118 must pass")
        raise SpecError(f"only {up} of {n} TIPC links came up at the reducer ({media} bearer)",
                        f"see `tipc link list` in the reducer namespace; {hint}")
    return {**record, "links_up": up, "links_s": round(time.monotonic() - started, 2),
            "reducer": tipc.state(reducer).to_dict(),
            "link_window": tipc.link_window(reducer, media, **where)}


def kernel_record(node) -> dict:
    res = node.run("uname -r; sysctl -n net.ipv4.tcp_congestion_control "
                   "net.ipv4.tcp_rmem net.ipv4.tcp_wmem net.core.rmem_default "
                   "net.core.wmem_default 2>/dev/null", check=False, timeout=60)
    keys = ["kernel", "tcp_default_cc", "tcp_rmem", "tcp_wmem", "rmem_default", "wmem_default"]
    return dict(zip(keys, [line.strip() for line in res.stdout.splitlines()]))


class S3(Study):
    name = STUDY
    registration_file = REGISTRATION_FILE
    title = "TIPC versus TCP versus SCTP for Hadoop-style shuffle fan-in"
    citation = Citation(
        "Dae Hyun Yoo, Sang Hwa Chung, Tae Hun Kim",
        "Applying TIPC Protocol for Increasing Network Performance in Hadoop-based Distributed "
        "Computing Environment",
        "Journal of KIISE: Computer Systems and Theory (정보과학회논문지: 시스템 및 이론) 36(5), "
        "October", 2009, "003_4846a53aaad56b29.txt")
    Params = Params

    def topology(self, params: Params) -> Topology:
        return topology(params)

    def requirements(self, params: Params) -> Requirements:
        return Requirements(features=frozenset(params.kernel_features()), tools=(TC, IPERF3))

    def prepare(self, params: Params, inventory: str) -> None:
        fanin.build_local()  # before any change and before a VM boots (it shares our files)

    def configure(self, session: Session, bed, params: Params) -> dict | None:
        """TIPC identities and bearers on every node, when TIPC is measured."""
        if "tipc" in params.protocols:
            return configure_tipc(session, bed, params.lab_mappers, params.tipc_media)
        return None

    def measure(self, session: Session, bed, params: Params, tipc_notes: dict | None) -> None:
        """The rate sweep, then the CPU phase; in each repetition a fresh mapper fleet per
        protocol, the protocols in an order shuffled per repetition and the points in an
        order shuffled per fleet, all drawn from the recorded seed before the first point."""
        started = time.monotonic()
        reducer = bed.node("reducer")
        binary = fanin.build_on(reducer)
        n_lab = params.lab_mappers
        port_mbit = port_rate_mbit(bed)
        cpu = cpu_points(params, port_mbit or params.port_rate_mbit)
        notes: dict = {"generator": {"binary": binary, "source_sha256": _source_sha()},
                       "port_rate_mbit_effective": port_mbit,
                       "scaling": session.scaling.to_dict() if session.scaling else None,
                       "kernel": kernel_record(reducer), "lab_mappers": n_lab,
                       "cpu_load": params.cpu_load, "port_shaper": params.port_shaper,
                       "port_scaling": params.port_scaling,
                       "port_rate_registered_mbit": params.port_rate_mbit
                       if params.port_scaling == "registered" else None,
                       "port_ceiling_mbit": session.scaling.ceiling_mbit
                       if session.scaling else None}
        if params.cpu_load == "wire":
            notes["cpu_periods_ms"] = {str(p.period_paper_ms): p.period_ms for p in cpu}
        if tipc_notes is not None:
            notes["tipc"] = tipc_notes
        mapper_nodes = [bed.node(mapper_name(i)) for i in range(n_lab)]
        order = MeasuringOrder(params.seed)
        plan = fleet_plan(order, [
            (rate_points(params), mapper_nodes, params.repetitions, params.protocols),
            (cpu, mapper_nodes[:params.cpu_mappers], params.cpu_repetitions
             if cpu else 0, params.cpu_protocols)])
        rows, rounds, fleets = [], [], []

        def run(variant, nodes, points, repetition, position, bar):
            listens = [fanin.mapper_address(VARIANTS[variant][0], mapper_ip(i), PORT, i)
                       for i in range(len(nodes))]
            fleet_rows, fleet_rounds, record = measure_fleet(
                session, bed, params, variant, nodes, listens, binary, points, repetition, bar)
            rows.extend({**row, "order": position} for row in fleet_rows)
            rounds.append(fleet_rounds)
            fleets.append(record)

        periods: dict[str, Point] = {}  # CPU-bound: each CPU point with its calibrated period
        with progress(sum(len(f.points) for f in plan), "s3 fan-in") as bar:
            for fleet in plan:
                points = fleet.points
                if fleet.experiment == "cpu" and params.cpu_load == "cpu":
                    if not periods:
                        periods, notes["cpu_calibration"] = self.calibrate(
                            params, cpu, mapper_nodes[:params.cpu_mappers], rows, run)
                        notes["cpu_periods_ms"] = {
                            str(p.period_paper_ms): {} for p in periods.values()}
                        for p in periods.values():
                            notes["cpu_periods_ms"][str(p.period_paper_ms)][
                                str(p.size_kb)] = p.period_ms
                    points = [periods[p.key()] for p in points]
                run(fleet.variant, fleet.nodes, points, fleet.repetition, fleet.position, bar)
        notes["order"] = {**order.record(
            "per repetition a fresh mapper fleet per protocol (a fleet serves one protocol), "
            "the protocols in an order shuffled per repetition, the points of each fleet in an "
            "order shuffled per fleet (s3.fleets[].points): the rate sweep's repetitions "
            "first, then the CPU phase's with a fresh fleet per protocol of cpu_protocols"),
            "rate": protocol_orders(plan, "rate"), "cpu": protocol_orders(plan, "cpu")}
        if "tipc" in params.protocols:
            stat = reducer.run(["tipc", "link", "stat", "show"], check=False, timeout=60)
            session.raw("tipc-link-stat.txt", stat.stdout + stat.stderr)
        session.results(pd.DataFrame(rows))
        session.results(pd.concat(rounds, ignore_index=True) if rounds
                        else round_frame([]), "rounds")
        notes["fleets"] = fleets
        notes["protocol_seconds"] = phase_seconds(fleets, "rate")
        notes["cpu_protocol_seconds"] = phase_seconds(fleets, "cpu")
        notes["measure_s"] = round(time.monotonic() - started, 1)
        notes["process_model"] = ("reducer: one thread per mapper connection, pthread barrier "
                                  "releases all requests at once, CLOCK_MONOTONIC; mapper: one "
                                  "process per node; SOCK_STREAM for TCP, SCTP and TIPC")
        session.note(s3=notes)

    @staticmethod
    def calibrate(params: Params, cpu: list[Point], nodes: list, rows: list[dict], run
                  ) -> tuple[dict[str, Point], dict]:
        """The CPU-bound regime's periods (``cpu_load="cpu"``, :func:`.design.cpu_bound_period_ms`):
        each CPU point's slowest back-to-back round time among the CPU protocols, read from
        the rate sweep where it measured that point for a protocol, else from a calibration
        fleet of that protocol (``experiment="calibration"`` rows, :data:`.design.CALIBRATION_ROUNDS`
        rounds a point), measured before the CPU phase's first fleet. Returns the points by
        key and the record for run.json."""
        times = round_times_ms(rows, params.cpu_mappers)
        sizes = sorted({p.size_kb for p in cpu})
        calibrated = []
        for variant in params.cpu_protocols:
            missing = [s for s in sizes if (variant, s) not in times]
            if missing:
                run(variant, nodes, [Point("calibration", params.cpu_mappers, s,
                                           CALIBRATION_ROUNDS, 1) for s in missing], 1, 0, None)
                calibrated += [f"{variant} {s} KB" for s in missing]
        times = round_times_ms(rows, params.cpu_mappers)
        try:
            points, record = cpu_bound_points(cpu, times, params.cpu_protocols)
        except KeyError as exc:
            raise HarnessError(f"the CPU phase's period cannot be set: {exc.args[0]}",
                                    "the lab carried no round of any CPU protocol at that point "
                                    "(see the calibration rows); or use cpu_load=wire") from None
        return {p.key(): p for p in points}, {
            "rule": f"period = {CPU_PERIOD_FACTOR:g} x the slowest CPU protocol's back-to-back "
                    "round time (median over repetitions) at the point, for the paper's "
                    f"{PAPER_PERIOD_MS} ms",
            "calibration_fleets": calibrated, "points": record}

    def load(self, run_path) -> RunData:
        return RunData.load(run_path)

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import analysis as s3_verdicts

        meta = data.meta or {}
        return s3_verdicts.claims(
            data.results, wire_mbit=port_rate_of_run(meta),
            shaper=(meta.get("s3") or {}).get("port_shaper") or "htb",
            port=s3_verdicts.PortCheck.from_meta(meta, "reducer:eth0--switch:red",
                                                 "switch->reducer"),
            cpus=reducer_cpus(meta))

    def design_regions(self, data: RunData) -> dict:
        return design_regions(data.results)

    def figures(self, data: RunData) -> dict:
        from . import figures as s3_figures

        return {"fig7": s3_figures.figure_rate(data.results),
                "fig8": s3_figures.figure_cpu(data.results),
                "paper": s3_figures.figure_paper(data.results)}


def port_rate_mbit(bed) -> float | None:
    """The reducer port's shaped rate in the lab as built (after any scaling), or None."""
    if not hasattr(bed, "lab"):
        return None
    port = bed.lab.topology.interface("switch", "red")
    link = next((ln for ln in bed.lab.topology.links if port in (ln.a, ln.b)), None)
    return link.rate_mbit if link else None


def reducer_cpus(meta: dict) -> int | None:
    """The CPUs the reducer's machine had: its VM's vCPUs, else (nodes on the host's kernel)
    the controller's CPUs; None when the run recorded neither."""
    vm = (meta.get("placement") or {}).get("vm") or {}
    cpus = vm.get("cpus") if vm else ((meta.get("provenance") or {}).get("controller") or {}).get(
        "cpus") or (meta.get("machine_activity") or {}).get("cpus")
    return int(cpus) if cpus else None


def port_rate_of_run(meta: dict) -> float | None:
    """The reducer port's rate an archived run measured through (None: not recorded)."""
    return (meta.get("s3") or {}).get("port_rate_mbit_effective") or \
        (meta.get("parameters") or {}).get("port_rate_mbit")


def _source_sha() -> str:
    import hashlib

    return hashlib.sha256(fanin.build.PROGRAM.source_bytes()).hexdigest()
