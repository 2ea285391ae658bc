"""S3 -- TIPC versus CUBIC-TCP and SCTP for the Hadoop shuffle (seed 003).

Paper (Yoo, Chung, Kim, KIISE 2009): a reducer pulls map-output partitions
from N mappers at once (1:N fan-in). On 51 Opteron nodes, GbE through one
48-port switch, Linux 2.6.25, TIPC 1.7.6, it reports TIPC best in most cases
(at 1:48 and <= 8 KB +10% on average, up to +16% over TCP), TIPC collapsing
at >= 16 KB with many senders (static link window under incast), and at a
25 ms period and <= 16 KB 7-15% less CPU for TIPC than TCP.

The CPU claim is measured in a phase of its own after the rate sweep:
``cpu_repetitions`` independent passes, each booting a fresh mapper fleet per
protocol of ``cpu_protocols`` in an order shuffled per pass, so its interval
rests on passes whose differences are paired per pass (the rate sweep's
repetitions are few and long).

Here: one reducer and N mapper namespaces joined by a "switch" namespace
that routes; the switch's port toward the reducer is the bottleneck (htb at
``port_rate_mbit``) with a small FIFO (``queue_packets``, the switch-port
buffer; a packet-limited pfifo, because the namespace backend cannot yet put
a byte-limited bfifo under htb; its drops are read from the qdisc per point). Without it
a veth has no buffer to overflow and incast cannot happen. Traffic: our C
generator (harness.fanin), same code for every protocol; TIPC over UDP
bearers (they cross the switch's IP routing), configured on every node by
harness.config.tipc. The host kernel has no TIPC/SCTP: the lab runs in a VM.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from .. import fanin
from ..config import tipc
from ..errors import SpecError
from ..progress import progress
from ..session import Session
from ..tools.iperf3 import IPERF3
from ..tools.registry import TC
from ..topology import Topology, TopologyBuilder
from .base import Citation, Requirements, RunData, Study
from .order import MeasuringOrder
from .parameters import Parameters, param

STUDY = "s3"
MAX_MAPPERS = 48  # the paper's largest fan-in, and what one VM lab is built and verified with
PORT = 47000
LAB_PREFIX = "198.18.0.0/15"  # RFC 2544 benchmarking range
REDUCER_IP = "198.19.0.2"
TIPC_BEARER = "s3"
# Protocol variants: the generator's protocol and the TCP congestion control per socket.
VARIANTS = {
    "tcp-cubic": ("tcp", "cubic"),
    "tcp": ("tcp", ""),  # the kernel's default congestion control
    "sctp": ("sctp", ""),
    "tipc": ("tipc", ""),
}

PROFILES = {
    # quick: minutes in a TCG VM; few rounds, fan-in 8 and 48, four sizes
    # (the CPU phase at one period: each CPU repetition starts a fleet of 48 mappers per
    # protocol, ~7-20 s each here, so a second period would add ~45 s quiet, ~2 min loaded)
    "quick": dict(mappers=(8, 48), sizes_kb=(1, 4, 16, 64), rounds=10, warmup=2,
                  cpu_periods_ms=(250,), cpu_sizes_kb=(4, 16), cpu_rounds=6,
                  cpu_repetitions=2),
    # paper: the paper's grid (sizes 1-64 KB, fan-in up to 48, 1000 rounds per point)
    # verdict: the quick grid with enough rounds, and CPU repetitions for the CPU claim.
    # Measured here with 24 CPU repetitions: 2425 s (rate sweep ~20 min, CPU phase ~17 min,
    # 10.8 s per CPU point), one claim of five inconclusive; the CPU claim read the same from
    # that run's first 12 CPU repetitions (-29.8 % [-33.5, -25.9], not reproduced), so 12:
    # ~31 min (estimated from those per-point times).
    "verdict": dict(mappers=(8, 48), sizes_kb=(1, 4, 8, 16, 64), rounds=40, warmup=2,
                    cpu_periods_ms=(250,), cpu_sizes_kb=(4, 16), cpu_rounds=6, repetitions=3,
                    cpu_repetitions=12),
    "paper": dict(mappers=(1, 8, 16, 24, 32, 40, 48), sizes_kb=(1, 2, 4, 8, 16, 32, 64),
                  rounds=1000, warmup=20, cpu_periods_ms=(250, 500, 1000),
                  cpu_sizes_kb=(1, 2, 4, 8, 16, 32, 64), cpu_rounds=200, cpu_repetitions=2),
}


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
    rounds: int = param(10, "measured rounds per point", low=1, high=100_000)
    warmup: int = param(2, "unmeasured rounds before each point", low=0, high=10_000)
    repetitions: int = param(1, "repetitions of the rate sweep, protocols in a shuffled order "
                             "in each", low=1, high=100)
    seed: int = param(0, "seed of the randomised order of the protocols in each repetition "
                      "(rate sweep and CPU phase)",
                      low=0, high=2**31 - 1, zero="a fresh seed, recorded in run.json")
    port_rate_mbit: float = param(100.0, "the reducer's switch port (the paper: 1 Gbit/s)",
                                  unit="Mbit/s", low=1, high=10_000)
    mapper_rate_mbit: float = param(0.0, "rate of each mapper link", unit="Mbit/s", low=1,
                                    high=10_000, zero="unshaped (veth speed)")
    queue_packets: int = param(85, "switch-port buffer toward the reducer (85 x 1514 B ~ 128 KB)",
                               unit="packets", low=1, high=100_000)
    cpu_periods_ms: tuple[int, ...] = param(PROFILES["quick"]["cpu_periods_ms"],
                                            "CPU experiment: request periods", unit="ms",
                                            low=1, high=60_000)
    cpu_sizes_kb: tuple[int, ...] = param(PROFILES["quick"]["cpu_sizes_kb"],
                                          "CPU experiment: partition sizes", unit="KB",
                                          low=1, high=64)
    cpu_rounds: int = param(6, "CPU experiment: rounds per point (0 skips it)", low=0,
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
           rate_mbit=params.port_rate_mbit, queue_packets=params.queue_packets)
    b.route("reducer", LAB_PREFIX, via="198.19.0.1", dev="eth0")
    for i in range(n):
        name = mapper_name(i)
        b.node(name)
        b.link((name, "eth0", f"{mapper_ip(i)}/24"), ("switch", name, f"198.18.{i + 1}.1/24"),
               rate_mbit=mapper_rate)
        b.route(name, LAB_PREFIX, via=f"198.18.{i + 1}.1", dev="eth0")
    where = ("; the reducer in a kernel of its own, wired to the switch"
             if params.split_kernels else "")
    return b.build(notes=f"S3: 1:{n} fan-in; reducer port {params.port_rate_mbit:g} Mbit/s with "
                         f"a {params.queue_packets}-packet FIFO (switch-port buffer){where}")


# -- configuration ------------------------------------------------------------

def configure_tipc(session: Session, bed, n: int) -> dict:
    """TIPC identity and a UDP bearer on every node; wait until the reducer has n links."""
    reducer = bed.node("reducer")
    # The reducer's unicast remote (mapper 1) puts its bearer in replicast mode: it learns
    # every mapper from the discovery messages sent to it, mappers know only the reducer.
    configs = [tipc.TipcNode(reducer, "s3-reducer", "udp", dict(
        name=TIPC_BEARER, localip=REDUCER_IP, remoteip=mapper_ip(0)))]
    configs += [tipc.TipcNode(bed.node(mapper_name(i)), f"s3-{mapper_name(i)}", "udp", dict(
        name=TIPC_BEARER, localip=mapper_ip(i), remoteip=REDUCER_IP)) for i in range(n)]
    session.apply(*configs)
    if session.dry_run:
        return {"links_up": None, "media": "udp", "bearer": TIPC_BEARER}
    started = time.monotonic()
    up = tipc.wait_links(reducer, n, timeout=60 + 2 * n)
    if up < n:
        raise SpecError(f"only {up} of {n} TIPC links came up at the reducer",
                        "see `tipc link list` in the reducer namespace; UDP port 6118 must pass")
    state = tipc.state(reducer)
    return {"links_up": up, "links_s": round(time.monotonic() - started, 2),
            "reducer": state.to_dict(),
            "link_window": tipc.link_window(reducer, "udp", name=TIPC_BEARER),
            "media": "udp", "bearer": TIPC_BEARER}


def kernel_record(node) -> dict:
    res = node.run("uname -r; sysctl -n net.ipv4.tcp_congestion_control "
                   "net.ipv4.tcp_rmem net.ipv4.tcp_wmem net.core.rmem_default "
                   "net.core.wmem_default 2>/dev/null", check=False, timeout=60)
    keys = ["kernel", "tcp_default_cc", "tcp_rmem", "tcp_wmem", "rmem_default", "wmem_default"]
    return dict(zip(keys, [line.strip() for line in res.stdout.splitlines()]))


class S3(Study):
    name = STUDY
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
            return configure_tipc(session, bed, params.lab_mappers)
        return None

    def measure(self, session: Session, bed, params: Params, tipc_notes: dict | None) -> None:
        """The rate sweep, then the CPU phase, a fresh mapper fleet per protocol and
        repetition of each; archive."""
        from .s3_points import cpu_points, measure_fleet, phase_seconds, rate_points, round_frame

        started = time.monotonic()
        reducer = bed.node("reducer")
        binary = fanin.build_on(reducer)
        n_lab = params.lab_mappers
        port = bed.lab.topology.interface("switch", "red") if hasattr(bed, "lab") else None
        port_link = next((ln for ln in bed.lab.topology.links if port in (ln.a, ln.b)), None) \
            if port else None
        notes: dict = {"generator": {"binary": binary, "source_sha256": _source_sha()},
                       "port_rate_mbit_effective": port_link.rate_mbit if port_link else None,
                       "scaling": session.scaling.to_dict() if session.scaling else None,
                       "kernel": kernel_record(reducer), "lab_mappers": n_lab}
        if tipc_notes is not None:
            notes["tipc"] = tipc_notes
        mapper_nodes = [bed.node(mapper_name(i)) for i in range(n_lab)]
        rows, rounds, fleets = [], [], []
        # the rate sweep (every lab mapper), then the CPU phase (cpu_mappers); each repetition
        # starts a fresh fleet per protocol, the protocols in an order shuffled per repetition
        order = MeasuringOrder(params.seed)
        rate_orders = [order.shuffle(params.protocols) for _ in range(params.repetitions)]
        cpu = cpu_points(params)
        cpu_orders = [order.shuffle(params.cpu_protocols)
                      for _ in range(params.cpu_repetitions)] if cpu else []
        phases = [(rate_points(params), mapper_nodes, rate_orders),
                  (cpu, mapper_nodes[:params.cpu_mappers], cpu_orders)]
        total = sum(len(points) * len(sequence) for points, _nodes, orders in phases
                    for sequence in orders)
        with progress(total, "s3 fan-in") as bar:
            for points, nodes, orders in phases:
                for rep, sequence in enumerate(orders, 1):
                    for position, variant in enumerate(sequence):
                        fleet_rows, fleet_rounds, record = measure_fleet(
                            session, bed, params, variant, nodes, binary, points, rep, bar)
                        rows += [{**row, "order": position} for row in fleet_rows]
                        rounds.append(fleet_rounds)
                        fleets.append(record)
        notes["order"] = {**order.record(
            "the protocols one after another (a mapper fleet serves one protocol), in an "
            "order shuffled per repetition: the rate sweep's repetitions first, then the CPU "
            "phase's, each of these with a fresh fleet per protocol of cpu_protocols"),
            "rate": rate_orders, "cpu": cpu_orders}
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

    def load(self, run_path) -> RunData:
        return RunData.load(run_path)

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import s3_analysis

        params = data.meta["parameters"]
        period_scale = (min(params["cpu_periods_ms"]) / 25) if params.get("cpu_rounds") else 1.0
        return s3_analysis.claims(data.results, data.tables.get("rounds"),
                                  period_scale=period_scale)

    def figures(self, data: RunData) -> dict:
        from . import s3_analysis

        rounds = data.tables.get("rounds")
        return {"fig7": s3_analysis.figure_rate(data.results, rounds),
                "fig8": s3_analysis.figure_cpu(data.results),
                "paper": s3_analysis.figure_paper(data.results, rounds)}


def measure(params: Params, run_dir: str = "", inventory: str = "") -> str:
    """The study run end to end (see :meth:`Study.run`); returns the run folder."""
    return S3().run(params, run_dir, inventory)


def _source_sha() -> str:
    import hashlib

    return hashlib.sha256(fanin.build.PROGRAM.source_bytes()).hexdigest()
