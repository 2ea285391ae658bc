"""S1 -- user-level messaging (RDMA verbs, the heir of VIA) against kernel TCP (seed 001).

Paper (Kim, Kim, Kim, ETRI, ~2001): VIA implementations on Linux 2.2 --
M-VIA (VIA emulated in software over Fast Ethernet), Berkeley VIA (Myrinet
firmware) and Giganet cLAN (hardware VIA) -- against TCP/IP. On the same
eepro/100 NIC M-VIA has the lower latency at every size (4 B: ~42 us against
~58 us); TCP's small-message bandwidth is irregular with Nagle's algorithm and
regular with TCP_NODELAY; M-VIA's bandwidth is better up to 512 B and slightly
better for large messages; polling for completion lowers latency at a CPU cost;
cLAN is lowest everywhere (~10 us at 4 B).

Here: Soft-RoCE (``rdma_rxe``, verbs emulated by the kernel over an ordinary
Ethernet NIC) plays M-VIA, against kernel TCP over the same wire. Two nodes,
each the initial network namespace of a VM of its own (rxe's UDP socket lives
only there on Linux 6.x: see :class:`harness.topology.topology.TopologyNode`), joined by
a wire. Verbs: perftest (``ib_send_lat``, ``ib_write_lat``, ``ib_send_lat -e``,
``ib_send_bw``, ``ib_write_bw``), the client's CPU time over its measured exchange;
TCP: qperf's ``tcp_lat`` at every size (C against perftest's C: the latency claims'
TCP; its ``tcp_bw`` a cross-check), msgcount (:mod:`harness.msgcount`, C: the
bandwidth claims' TCP, the same count of messages as ``ib_send_bw -n``, Nagle on and,
as a cross-check, TCP_NODELAY), and the harness's ping-pong and streaming tool
with TCP_NODELAY and with Nagle on (the Nagle claim, TCP against TCP in one tool;
a cross-check of both); one qperf point of rc_lat/rc_bw as a second verbs opinion;
``ibv_devinfo -v`` archived and the paper's Table 1 rebuilt from it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from ... import msgcount
from ...config.cpu import CpuOnline
from ...config.interface import Mtu
from ...config.rdma import PRLIMIT, RDMA, RxeLink
from ...errors import HarnessError, SpecError
from ...progress import progress
from ...run.session import Session
from ...tools import ibverbs, perftest, perftest_sweep, pingpong, qperf
from ...topology.topology import Topology, TopologyBuilder
from ..base import Citation, Requirements, RunData, Study
from ..order import MeasuringOrder
from ..parameters import Parameters, param
from .cpus import (  # noqa: F401
    HOTPLUG_CPU,
    ONLINE_AT,
    ONLINE_LIST,
    cpu_level,
    host_cores,
    measurable_levels,
    read_online,
    read_present,
    vm_shape,
)
from .registration import REGISTRATION_FILE
from .rows import bandwidth_rows, latency_rows, qperf_rows, tcp_rows  # noqa: F401

STUDY = "s1"
WIRE = "wire"  # the interface name of the wire at both nodes
ADDRESSES = {"a": "198.18.1.1/24", "b": "198.18.1.2/24"}  # RFC 2544 benchmarking range
RXE = "rxe0"
TCP_PORT = 47100
PERFTEST_PORT = 18515
QPERF_PORT = 19765
MSGCOUNT_PORT = 47200
MAX_SIZE = 1 << 20  # the paper's figures end at 1 MB (issue 11: "up to 1 MB")

# The compared methods: (family, kind, tool, completion, nagle)
METHODS = {
    "verbs-send": ("verbs", "latency", "ib_send_lat", "polling", None),
    "verbs-write": ("verbs", "latency", "ib_write_lat", "polling", None),
    "verbs-send-events": ("verbs", "latency", "ib_send_lat", "events", None),
    "verbs-send-bw": ("verbs", "bandwidth", "ib_send_bw", "polling", None),
    # completion events for bandwidth (s1.polling_raises_bandwidth, 001:72; since 2026-11-29)
    "verbs-send-bw-events": ("verbs", "bandwidth", "ib_send_bw", "events", None),
    "verbs-write-bw": ("verbs", "bandwidth", "ib_write_bw", "polling", None),
    "tcp-nodelay": ("tcp", "both", "pingpong", None, False),
    "tcp-nagle": ("tcp", "both", "pingpong", None, True),
    # C against C: the latency and bandwidth claims' TCP (qperf sets no TCP_NODELAY)
    "tcp-qperf": ("tcp", "both", "qperf", None, True),
    # C, a count of messages like ib_send_bw's -n (the bandwidth claims' TCP since
    # 2026-11-27): Nagle on as qperf, and TCP_NODELAY as its cross-check
    "tcp-count": ("tcp", "bandwidth", "msgcount", None, True),
    "tcp-count-nodelay": ("tcp", "bandwidth", "msgcount", None, False),
    # qperf's RC tests (rc_lat, rc_bw) at every size, connected through the RDMA CM: the
    # second verbs tool beside perftest (a cross-check; issue 34 item 8, since 2026-11-29)
    "verbs-qperf": ("verbs", "both", "qperf-rc", "polling", None),
}

#: the methods measured with the streaming tool at the Nagle claim's sizes too
NAGLE_METHODS = ("tcp-nodelay", "tcp-nagle")


#: the methods of the 2-CPU level (s1.smp_latency_larger, paired with the same methods at the
#: 1-CPU level): verbs with completion events and qperf's tcp_lat judge it; polling is its
#: cross-check (on one CPU a busy poll competes with the kernel doing Soft-RoCE's work)
SMP_METHODS = ("verbs-send", "verbs-send-events", "tcp-qperf")


def powers_of_two(top: int) -> tuple[int, ...]:
    return tuple(1 << i for i in range(top.bit_length()) if 1 << i <= top)


# each claim's range with the fewest sizes: 4 B; three sizes <= 512 B (bandwidth and polling
# over <= 1 KB); >= 8 KB. Every perftest size costs ~3 s per method under TCG: with 1024 B as
# well, the quick run took 242 s on an idle machine
QUICK_SIZES = (4, 64, 512, 16384)
#: the Nagle claim's sizes (s1.tcp_nagle_irregular, 001:54-56): at least 8 at or below 1 KiB
#: so that "irregular" rests on more than two interior points (issue 34 item 5); measured by
#: the streaming tool alone (tcp-nagle, tcp-nodelay), ~0.1 s a size, in every profile
NAGLE_SIZES = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
#: messages per bandwidth point the verdict profile sends (issue 34 item 6): at least 10^4
VERDICT_BW_MESSAGES = 10_000

PROFILES = {
    # quick: a first look in two TCG VMs, ~3-4 min: the sizes each claim needs, send/recv
    # only, 2 repetitions, 50 messages per bandwidth point -- fewer than the 10^4 the
    # bandwidth claims need, so its report says they are not decided (every perftest size is
    # a process at each end, ~3 s under TCG)
    "quick": dict(sizes=QUICK_SIZES, nagle_sizes=NAGLE_SIZES, repetitions=2, iterations=50,
                  bw_iterations=50, tcp_budget_s=0.05, rdma_write=False, cpus=(1, 2)),
    # verdict: each claim's sizes (4 B; <= 512 B; <= 1 KB; >= 8 KB up to 64 KB), send/recv,
    # 10 repetitions (the count fixed before any data, s1/registration.toml changes), 10^4
    # messages per bandwidth point. Two runs of 10 repetitions with 300 messages (2026-11-26,
    # idle: 1232 s and 1310 s, ~120 s a repetition); 10^4 messages add ~4 x 110 s per
    # repetition at 64 KiB (verbs ~48 Mbit/s under TCG): about 90-110 min a run, estimated
    "verdict": dict(sizes=(4, 64, 512, 1024, 8192, 65536), nagle_sizes=NAGLE_SIZES,
                    repetitions=10, iterations=300, bw_iterations=VERDICT_BW_MESSAGES,
                    tcp_budget_s=0.1, rdma_write=False, cpus=(1, 2)),
    # paper: the paper's sizes up to 1 MB, perftest's default 1000 iterations
    "paper": dict(sizes=powers_of_two(MAX_SIZE), nagle_sizes=NAGLE_SIZES, repetitions=10,
                  iterations=1000, bw_iterations=VERDICT_BW_MESSAGES, tcp_budget_s=0.2,
                  rdma_write=True, cpus=(1, 2)),
}


@dataclass(frozen=True)
class Params(Parameters):
    profiles: ClassVar[dict[str, dict]] = PROFILES
    sizes: tuple[int, ...] = param(QUICK_SIZES, "message sizes", unit="B",
                                   low=1, high=MAX_SIZE, above="the paper's largest size (1 MB)")
    nagle_sizes: tuple[int, ...] = param(NAGLE_SIZES, "the Nagle claim's message sizes, "
                                         "measured by the streaming tool (Nagle on and "
                                         "TCP_NODELAY) beside sizes; the claim needs at least "
                                         "8 at or below 1 KiB", unit="B", low=1, high=MAX_SIZE,
                                         above="the paper's largest size (1 MB)")
    repetitions: int = param(2, "repetitions: every method over every size, methods in a "
                             "shuffled order in each (the claims' samples)", low=1, high=100)
    iterations: int = param(50, "perftest round trips per latency point (-n)",
                            low=perftest.MIN_ITERATIONS, high=1_000_000)
    bw_iterations: int = param(50, "messages per bandwidth point, the same count for verbs "
                               "(perftest -n) and TCP (msgcount)",
                               low=perftest.MIN_ITERATIONS, high=1_000_000)
    tcp_budget_s: float = param(0.05, "seconds per size for the TCP ping-pong and again for "
                                "TCP streaming (at least 5 round trips)", unit="s", low=0.01,
                                high=60)
    wire_mbit: float = param(0.0, "the wire's rate in each direction (htb on both ends; the "
                             "paper's wire: Fast Ethernet, 100). Under TCG the stacks carry "
                             "less than 100 (verbs ~48 Mbit/s at 64 KiB) and a faster rate is "
                             "scaled to the wire's measured ceiling; on real machines with "
                             "fast CPUs 100 puts both stacks at the paper's wire",
                             unit="Mbit/s", low=1, high=100_000,
                             zero="unshaped: the wire carries what the machines do (the "
                                  "large-message bandwidth claim is then not testable)")
    mtu: int = param(1500, "the wire's MTU (RoCE's active MTU follows: 1500 gives 1024, "
                     "9000 gives 4096)", unit="B", choices=(1500, 9000))
    rdma_write: bool = param(False, "also RDMA write (ib_write_lat, ib_write_bw); no claim "
                             "rests on it")
    completion: tuple[str, ...] = param(("polling", "events"), "completion modes of "
                                        "ib_send_lat: polling the CQ, sleeping on events (-e)",
                                        choices=("polling", "events"), item="mode")
    qperf_size: int = param(64, "the qperf cross-check point (rc_lat, rc_bw, tcp_lat, tcp_bw)",
                            unit="B", low=1, high=MAX_SIZE, zero="no qperf cross-check")
    qperf_seconds: int = param(1, "seconds per qperf test (tcp_lat and tcp_bw at each size: "
                               "the claims' TCP; and the cross-check point)", unit="s", low=1,
                               high=60)
    cpus: tuple[int, ...] = param((1, 2), "online CPUs per machine, the levels of the SMP "
                                  "factor: 1 (the paper's uniprocessor kernel, 001:44) "
                                  "measures every method (every claim), 2 brings CPU 1 online "
                                  "in both machines and measures the latency the SMP claim "
                                  "needs, only where the host has a core for each of two "
                                  "2-vCPU VMs (else the VMs get 1 vCPU and the level is "
                                  "skipped, recorded); levels in a random order per "
                                  "repetition", low=1, high=2)
    seed: int = param(0, "seed of the randomised order of the methods in each repetition",
                      low=0, high=2**31 - 1, zero="a fresh seed, recorded in run.json")
    verify_seconds: int = param(1, "seconds per link direction when verifying the lab",
                                unit="s", low=1, high=60)

    def check(self) -> None:
        if "polling" not in self.completion:
            raise SpecError("completion must include polling",
                            "polling is the verbs baseline every claim compares with; add "
                            "events to compare the two")
        for name in ("sizes", "nagle_sizes"):
            value = getattr(self, name)
            if len(set(value)) != len(value):
                raise SpecError(f"parameter {name}={value} repeats a size", "give each once")
        if len(set(self.cpus)) != len(self.cpus):
            raise SpecError(f"parameter cpus={self.cpus} repeats a level", "give 1,2 or 2")
        if 1 not in self.cpus:
            raise SpecError("parameter cpus must include 1",
                            "every claim but the SMP one rests on the 1-CPU rows (the paper's "
                            "uniprocessor machines, 001:44); give 1,2 (or 1 alone: the SMP "
                            "claim is then not testable)")

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(m for m in METHODS
                     if (not m.endswith("-events") or "events" in self.completion)
                     and ("write" not in m or self.rdma_write))

    def method_sizes(self, method: str) -> tuple[int, ...]:
        """The sizes ``method`` measures: the profile's, and the Nagle claim's for the
        streaming tool (ascending)."""
        extra = self.nagle_sizes if method in NAGLE_METHODS else ()
        return tuple(sorted(set(self.sizes) | set(extra)))

    @property
    def smp_methods(self) -> tuple[str, ...]:
        """The methods of the 2-CPU level (none without it)."""
        return tuple(m for m in self.methods if m in SMP_METHODS) if 2 in self.cpus else ()

    def level_methods(self, cpus: int) -> tuple[str, ...]:
        return self.methods if cpus == 1 else self.smp_methods


def topology(params: Params, cores: int | None = None) -> Topology:
    """Two nodes, each a whole VM (its initial namespace: Soft-RoCE's home), one wire; VMs of
    the shape the CPU levels need on a host of ``cores`` cores (:func:`cpus.vm_shape`)."""
    b = (TopologyBuilder("s1-pair").node("a", whole_machine=True)
         .node("b", machine="b", whole_machine=True))
    b.link(("a", WIRE, ADDRESSES["a"]), ("b", WIRE, ADDRESSES["b"]),
           rate_mbit=params.wire_mbit or None)
    wire = f"shaped to {params.wire_mbit:g} Mbit/s" if params.wire_mbit else "unshaped"
    shape = vm_shape(params.cpus, host_cores() if cores is None else cores)
    boot = f", booted {' '.join(shape.kernel_args)}" if shape.kernel_args else ""
    return b.build(notes=f"S1: two kernels joined by one wire ({wire}), Soft-RoCE ({RXE}) over "
                         f"it at MTU {params.mtu}, kernel TCP over the same wire; VMs of "
                         f"{shape.cpus} vCPU{'s' if shape.cpus > 1 else ''}{boot}, each vCPU "
                         "pinned to a host core of its own where the cores suffice", vms=shape)


def tools(params: Params) -> tuple:
    return (RDMA, PRLIMIT, ibverbs.IBV_DEVINFO, perftest.IB_SEND_LAT, perftest.IB_WRITE_LAT,
            perftest.IB_SEND_BW, perftest.IB_WRITE_BW, qperf.QPERF)


# -- measurement --------------------------------------------------------------------------------

@dataclass
class Pair:
    """The two ends: the client (a) measures against the server (b)."""

    client: object
    server: object
    server_ip: str
    gid_index: int | None
    msgcount_client: str = ""  # the msgcount binary's path on the client


def measure_method(session: Session, pair: Pair, params: Params, method: str, rep: int,
                   sizes: tuple[int, ...] | None = None, cpus: int = 1) -> list[dict]:
    """One method over every size (in the order given: shuffled per repetition), one sweep
    (verbs) or one ping-pong client run (TCP), at the CPU level ``cpus`` (its raw files say
    which: ``-2cpu`` for level 2)."""
    tag = f"r{rep}" + ("" if cpus == 1 else f"-{cpus}cpu")
    family, kind, tool, completion, nagle = METHODS[method]
    sizes = tuple(sizes or params.method_sizes(method))
    if tool == "qperf-rc":
        return _qperf_rc(session, pair, params, method, rep, tag, sizes, cpus)
    started = time.monotonic()
    if family == "verbs":
        run = perftest.PerftestRun(tool, iterations=params.iterations if kind == "latency"
                                   else params.bw_iterations, events=completion == "events",
                                   device=RXE, gid_index=pair.gid_index, port=PERFTEST_PORT)
        # each size is an invocation of its own in the sweep's script, in the shuffled order
        plan = perftest_sweep.PerftestSweep(run, sizes)
        budget = 120 + len(sizes) * (10 + run.iterations * 0.05) + plan.longest_s()
        # two fresh attempts for the sizes a client could not finish: the one retry gave out
        # at repetition ~11 of a verdict run at host load 7 (the client's connect window
        # over before the server of that size listened); each retry is marked in the archive
        swept = perftest_sweep.sweep(session.journal, pair.server, pair.client, plan,
                                     pair.server_ip, timeout=budget, retries=2)
        reports = swept.reports
        session.raw(f"{method}-{tag}.client.txt", swept.client_out)
        session.raw(f"{method}-{tag}.server.txt", swept.server_out)
        rows = latency_rows(reports) if kind == "latency" else bandwidth_rows(reports)
        info = reports[0].info
        extra = {"rdma_mtu": info.get("mtu"), "link_type": info.get("link_type")}
    elif tool == "qperf":
        # the 2-CPU level needs tcp_lat only (no claim reads its bandwidth)
        plan = qperf.QperfSweep(sizes, params.qperf_seconds, QPERF_PORT,
                                tests=("tcp_lat", "tcp_bw") if cpus == 1 else ("tcp_lat",))
        res = pair.client.run(["sh", "-c", plan.client_command(pair.server_ip)], check=False,
                              track=True, timeout=plan.timeout_s())
        session.raw(f"{method}-{tag}.txt", res.stdout + res.stderr)
        if not res.ok:
            raise HarnessError(f"qperf sweep failed (exit {res.exit_status}): "
                               f"{(res.stderr or res.stdout).strip()[-300:]}",
                               "is the qperf server on b still running?")
        rows = qperf_rows(qperf.parse_sweep(res.stdout))
        extra = {}
    elif tool == "msgcount":
        run = msgcount.CountRun(params.bw_iterations, sizes, nodelay=not nagle)
        res = pair.client.run(run.client_argv(pair.msgcount_client, pair.server_ip,
                                              MSGCOUNT_PORT),
                              check=False, track=True, timeout=run.timeout_s())
        session.raw(f"{method}-{tag}.txt", res.stdout + res.stderr)
        # a size that failed is a row without a rate (a failed point, shown and judged
        # invalid), never left out; output that is not the program's stops the run
        rows = [r.row() for r in msgcount.parse_output(res.stdout, sizes)]
        extra = {}
    else:
        result = pingpong.client(session.journal, pair.client,
                                 {"tcp": (pair.server_ip, TCP_PORT)}, list(sizes),
                                 params.tcp_budget_s, params.tcp_budget_s, stream=True,
                                 warmup=5, nagle=bool(nagle),
                                 timeout=120 + len(sizes) * params.tcp_budget_s * 2 * 40)
        session.raw(f"{method}-{tag}.json", _json(result))
        rows = tcp_rows(result)
        extra = {}
    seconds = time.monotonic() - started
    return [{"repetition": rep, "cpus": cpus, "method": method, "family": family, "kind": kind,
             "tool": tool, "completion": completion, "nagle": nagle, **row, **extra,
             "method_s": seconds} for row in rows]


def _qperf_rc(session: Session, pair: Pair, params: Params, method: str, rep: int, tag: str,
              sizes: tuple[int, ...], cpus: int) -> list[dict]:
    """qperf's rc_lat and rc_bw at every size, through the RDMA CM (-cm1): the second verbs
    tool. A cross-check: where Soft-RoCE refuses it, its rows are empty and the refusal is
    archived and returned in each row's note (nothing rests on it)."""
    family, kind, tool, completion, nagle = METHODS[method]
    started = time.monotonic()
    plan = qperf.QperfSweep(sizes, params.qperf_seconds, QPERF_PORT, tests=("rc_lat", "rc_bw"),
                            use_cm=True)
    res = pair.client.run(["sh", "-c", plan.client_command(pair.server_ip)], check=False,
                          track=True, timeout=plan.timeout_s())
    session.raw(f"{method}-{tag}.txt", res.stdout + res.stderr)
    common = {"repetition": rep, "cpus": cpus, "method": method,
              "family": family, "kind": kind, "tool": tool, "completion": completion,
              "nagle": nagle}
    try:
        if not res.ok:
            raise HarnessError(f"exit {res.exit_status}: "
                               f"{(res.stderr or res.stdout).strip()[-300:]}")
        rows = qperf_rows(qperf.parse_sweep(res.stdout), "rc_lat", "rc_bw")
        note = ""
    except HarnessError as exc:
        rows = [{"size": size, "latency_us": None, "latency_mean_us": None,
                 "bw_mbit": None} for size in sizes]
        note = f"qperf RC over Soft-RoCE failed: {exc.message}"
    seconds = time.monotonic() - started
    return [{**common, **row, "note": note, "method_s": seconds} for row in rows]


def _json(value) -> str:
    import json

    return json.dumps(value, indent=1)


def read_devices(session: Session, node, label: str) -> list[ibverbs.VerbsDevice]:
    """``ibv_devinfo -v`` of the node's RXE device, archived as it is."""
    res = node.run(["ibv_devinfo", "-v", "-d", RXE], check=False, timeout=60)
    session.raw(f"ibv_devinfo-{label}.txt", res.stdout + res.stderr)
    devices = ibverbs.parse_devinfo(res.stdout) if res.ok else []
    if not devices:
        raise HarnessError(f"{node.name}: ibv_devinfo shows no {RXE}: "
                           f"{(res.stderr or res.stdout).strip()[-300:]}",
                           "is the Soft-RoCE link up (`rdma link show`)?")
    return devices


def wait_active(node, timeout: float = 30.0) -> str:
    """Wait until the RXE port is ACTIVE (it follows the netdev's carrier)."""
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        res = node.run(["rdma", "link", "show", f"{RXE}/1"], check=False, timeout=30)
        state = res.stdout.strip()
        if " ACTIVE " in f" {state} ":
            return state
        time.sleep(0.5)
    raise HarnessError(f"{node.name}: {RXE} did not become ACTIVE: {state[-200:]}",
                       f"is the wire up (`ip link show {WIRE}`)?")


def measure_qperf(session: Session, pair: Pair, params: Params) -> list[dict]:
    """One cross-check point: qperf's rc_lat, rc_bw, tcp_lat, tcp_bw at ``qperf_size`` (its
    server is the one the tcp-qperf method uses, running for the whole measurement)."""
    run = qperf.QperfRun(("rc_lat", "rc_bw", "tcp_lat", "tcp_bw"), params.qperf_size,
                         params.qperf_seconds, QPERF_PORT, use_cm=True)
    res = pair.client.run(run.client_argv(pair.server_ip), check=False, track=True,
                          timeout=60 + 4 * (params.qperf_seconds + 10))
    session.raw("qperf.txt", res.stdout + res.stderr)
    if not res.ok:  # qperf's RC tests on Soft-RoCE (without -cm1: "failed to modify QP to
        rc_error = (res.stderr or res.stdout).strip()[-300:]  # RTR", no RoCE v2 GID)
        run = qperf.QperfRun(("tcp_lat", "tcp_bw"), params.qperf_size,
                             params.qperf_seconds, QPERF_PORT)
        res = pair.client.run(run.client_argv(pair.server_ip), check=False, track=True,
                              timeout=60 + 2 * (params.qperf_seconds + 10))
        session.raw("qperf-tcp.txt", res.stdout + res.stderr)
        if not res.ok:
            raise HarnessError(f"qperf failed (exit {res.exit_status}): "
                               f"{(res.stderr or res.stdout).strip()[-300:]}")
        rows = [r.row() for r in qperf.parse_output(res.stdout)]
        return [{**row, "note": f"rc tests failed: {rc_error}"} for row in rows]
    return [r.row() for r in qperf.parse_output(res.stdout)]


class S1(Study):
    name = STUDY
    registration_file = REGISTRATION_FILE
    title = "User-level messaging (RDMA verbs over Soft-RoCE, VIA's heir) against kernel TCP"
    citation = Citation("Kangho Kim, Jin-Soo Kim, Haejin Kim",
                        "A Comparison of VIA Implementations on Linux (리눅스 상의 VIA 구현 비교)",
                        "Proceedings of the KIISE Fall Conference (한국정보과학회 학술발표논문집) "
                        "27(2), pp. 627-629, October", 2000, "001_b632ab557478d51e.txt",
                        note="the seed prints no venue; venue, pages and date as cited by "
                             "S. Lee et al., J. KICS 27(4C), 2002, reference 1")
    Params = Params

    def topology(self, params: Params) -> Topology:
        return topology(params)

    def requirements(self, params: Params) -> Requirements:
        return Requirements(features=frozenset({"rdma_rxe"}), tools=tools(params))

    def configure(self, session: Session, bed, params: Params) -> dict:
        """The wire's MTU and a Soft-RoCE link over it, on both machines (recorded, undone).

        First, before anything changes, the CPUs: CPU 0 online on both machines and no CPU
        beyond 1 (read in one batch); where the 2-CPU level can run, CPU 1's ``online``
        file must exist (read, not written: a machine without it is one error before any
        change). The levels the machines can run are recorded (:func:`measurable_levels`)."""
        levels = params.cpus
        if not session.dry_run:
            nodes = [bed.node("a"), bed.node("b")]
            online, present = read_online(nodes), read_present(nodes)
            if any(value not in ONLINE_AT.values() for value in online.values()) \
                    or any(value not in ONLINE_AT.values() for value in present.values()):
                raise SpecError(f"S1's CPU levels need machines with CPU 0 (and at most CPU "
                                f"1) present; the machines have online {online}, present "
                                f"{present}",
                                "run its VMs with 1 or 2 vCPUs, or inventory machines with "
                                "1 or 2 CPUs")
            levels = measurable_levels(params.cpus, present)
        if not session.dry_run:  # compiled (or found built) before anything changes
            for name in ("a", "b"):
                msgcount.build_on(bed.node(name))
        ops = []
        for name in ("a", "b"):
            node, dev = bed.node(name), bed.device(name, WIRE)
            ops += [Mtu(node, dev, params.mtu), RxeLink(node, RXE, dev)]
        if 2 in levels and not session.dry_run:  # can CPU 1 move? (a no-op: as found)
            ops += [CpuOnline(bed.node(name), HOTPLUG_CPU, online[bed.node(name).name]
                              == ONLINE_AT[2]) for name in ("a", "b")]
        session.apply(*ops)
        if session.dry_run:
            return {}
        return {"links": {name: wait_active(bed.node(name)) for name in ("a", "b")},
                "levels": list(levels), "present_cpus": present}

    def measure(self, session: Session, bed, params: Params, configured: dict) -> None:
        started = time.monotonic()
        a, b = bed.node("a"), bed.node("b")
        devices = {label: read_devices(session, node, label) for label, node in
                   (("a", a), ("b", b))}
        port_a = devices["a"][0].ports[0]
        gid_a, gid_b = port_a.ipv4_gid_index(), devices["b"][0].ports[0].ipv4_gid_index()
        if gid_a != gid_b:
            raise HarnessError(f"the two ends' IPv4 RoCE v2 GIDs have different indexes "
                               f"({gid_a}, {gid_b}); perftest takes one -x for both")
        facts = ibverbs.read_socket_facts(a, bed.device("a", WIRE))
        columns = [ibverbs.device_column(devices["a"][0], label=f"Soft-RoCE ({RXE})"),
                   ibverbs.tcp_column(facts)]
        session.results(pd.DataFrame(ibverbs.table1(columns)), "table1")
        server_ip = bed.address("b", WIRE)
        pair = Pair(a, b, server_ip, gid_a, msgcount.build_on(a))
        order = MeasuringOrder(params.seed)
        rows: list[dict] = []
        timings: dict[str, float] = {}
        notes: dict = {"online_cpus": []}
        levels = tuple(configured.get("levels") or params.cpus)
        notes["levels"] = list(levels)
        skipped = [c for c in params.cpus if c not in levels]
        if skipped:
            notes["levels_skipped"] = {
                str(c): f"the machines have CPUs {configured.get('present_cpus')} present: "
                        f"no CPU 1 to bring online (VMs of 1 vCPU: two 2-vCPU VMs would need "
                        f"{2 * 2} host cores, this host has {host_cores()})" for c in skipped}
        steps = params.repetitions * sum(len(params.level_methods(c)) for c in levels)
        with pingpong.server(session.journal, b, server_ip, TCP_PORT, timeout=60), \
                qperf.server(session.journal, b, QPERF_PORT, timeout=30), \
                msgcount.server(session.journal, b, msgcount.build_on(b), server_ip,
                                MSGCOUNT_PORT), \
                progress(steps, "s1 methods") as bar:
            for rep in range(1, params.repetitions + 1):
                for level_position, cpus in enumerate(order.shuffle(levels)):
                    t_level = time.monotonic()
                    with cpu_level(session, (a, b), cpus) as online:
                        notes["online_cpus"].append({"repetition": rep, "cpus": cpus,
                                                     "online": online})
                        for position, method in enumerate(
                                order.shuffle(params.level_methods(cpus))):
                            t0 = time.monotonic()
                            sizes = tuple(order.shuffle(params.method_sizes(method)))
                            rows += [{**row, "order": position, "cpus_position": level_position,
                                      "size_position": sizes.index(row["size"])}
                                     for row in measure_method(session, pair, params, method,
                                                               rep, sizes, cpus)]
                            key = method if cpus == 1 else f"{method}@{cpus}cpu"
                            timings[key] = round(timings.get(key, 0.0) + time.monotonic() - t0,
                                                 1)
                            bar.step(f"{method}, {cpus} CPU, repetition {rep}")
                    key = f"level {cpus} cpu (switch and measure)"
                    timings[key] = round(timings.get(key, 0.0) + time.monotonic() - t_level, 1)
            if params.qperf_size:
                try:
                    session.results(pd.DataFrame(measure_qperf(session, pair, params)),
                                    "qperf")
                except HarnessError as exc:  # a cross-check: its failure is said, not fatal
                    notes["qperf_error"] = exc.message
        session.results(pd.DataFrame(rows))
        notes |= {"order": order.record(
                           "the CPU levels in a new random order in each repetition; within "
                           "each level its methods in a new random order, and the sizes in a "
                           "new random order for each method"),
                       "method_seconds": timings,
                       "rdma": {"device": RXE, "gid_index": gid_a,
                                "active_mtu": port_a.active_mtu,
                                "links": configured.get("links")},
                       "wire_mtu": params.mtu, "socket_facts": vars(facts)}
        notes["measure_s"] = round(time.monotonic() - started, 1)
        session.note(s1=notes)

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import analysis as s1_analysis

        return s1_analysis.claims(data.results, data.meta)

    def figures(self, data: RunData) -> dict:
        from . import analysis as s1_analysis

        return {"latency": s1_analysis.figure_latency(data.results),
                "bandwidth": s1_analysis.figure_bandwidth(data.results)}
