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

This module holds the study (:class:`S1`): its lab's configuration (the CPU checks before
any change, the wire's MTU, Soft-RoCE) and what it reads from a run. The parameters, the
lab's constants and its topology are :mod:`.design`, the measurement :mod:`.measure` (both
re-exported here: they were defined here before), the claims :mod:`.analysis`, the figures
:mod:`.figures`.
"""

from __future__ import annotations

import time

import pandas as pd

from ... import msgcount
from ...config.cpu import CpuOnline
from ...config.interface import Mtu
from ...config.rdma import PRLIMIT, RDMA, RxeLink
from ...errors import HarnessError, SpecError
from ...run.session import Session
from ...tools import ibverbs, perftest, qperf
from ...topology.topology import Topology
from ..base import Citation, Requirements, RunData, Study
from .cpus import (
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
from .design import (
    ADDRESSES,
    MAX_SIZE,
    METHODS,
    MSGCOUNT_PORT,
    NAGLE_METHODS,
    NAGLE_SIZES,
    PERFTEST_PORT,
    PROFILES,
    QPERF_PORT,
    QUICK_SIZES,
    RXE,
    SMP_METHODS,
    TCP_PORT,
    VERDICT_BW_MESSAGES,
    WIRE,
    Params,
    powers_of_two,
    topology,
)
from .measure import Pair, measure, measure_method, measure_qperf, read_devices
from .registration import REGISTRATION_FILE
from .rows import bandwidth_rows, latency_rows, qperf_rows, tcp_rows

# the study's own names, and those it re-exports (defined here before: tests and notebooks
# import them from here)
__all__ = [
    "S1", "STUDY", "tools", "wait_active",
    "HOTPLUG_CPU", "ONLINE_AT", "ONLINE_LIST", "cpu_level", "host_cores", "measurable_levels",
    "read_online", "read_present", "vm_shape",
    "ADDRESSES", "MAX_SIZE", "METHODS", "MSGCOUNT_PORT", "NAGLE_METHODS", "NAGLE_SIZES",
    "PERFTEST_PORT", "PROFILES", "QPERF_PORT", "QUICK_SIZES", "RXE", "SMP_METHODS", "TCP_PORT",
    "VERDICT_BW_MESSAGES", "WIRE", "Params", "powers_of_two", "topology",
    "Pair", "measure", "measure_method", "measure_qperf", "read_devices",
    "bandwidth_rows", "latency_rows", "qperf_rows", "tcp_rows",
]

STUDY = "s1"


def tools(params: Params) -> tuple:
    return (RDMA, PRLIMIT, ibverbs.IBV_DEVINFO, perftest.IB_SEND_LAT, perftest.IB_WRITE_LAT,
            perftest.IB_SEND_BW, perftest.IB_WRITE_BW, qperf.QPERF)


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
        measure(session, bed, params, configured)

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import analysis as s1_analysis

        return s1_analysis.claims(data.results, data.meta)

    def figures(self, data: RunData) -> dict:
        from . import figures as s1_figures

        return {"latency": s1_figures.figure_latency(data.results),
                "bandwidth": s1_figures.figure_bandwidth(data.results)}
