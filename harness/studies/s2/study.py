"""S2 -- a shared file system over a long fat link, and TCP window tuning (seed 002).

Paper (Woo Jun, KISTI, ~2007): GPFS mounted across a dedicated 1 Gbit/s link
between KISTI and PNU, RTT 4.8 ms (bandwidth-delay product 0.6 MB). With the
era's default TCP buffers the usable bandwidth -- and untuned NFS -- was capped
near 160 Mbit/s; windows of ~2 x BDP (they set 1 MB with sysctl) reach the line
rate, and then the disk limits. MTU 9000 gave ~10 % more. On the LAN, GPFS
write saturated at 3 clients and read at 2, ~40 % below the raw disk; across
the WAN GPFS reached ~115 MB/s (the full link) whatever the block size, while
NFS throughput fell as clients were added.

Here: a file server and a client machine, each a VM of its own (file data must
cross the emulated network: in one kernel the client would short-cut through
caches and loopback), joined by two wires: a LAN wire (unshaped: as fast as the
VMs carry) and a WAN wire shaped to the paper's 1 Gbit/s with its 4.8 ms RTT
(netem + a rate limit), scaled down to what the VMs carry with the
bandwidth-delay product kept (rate x f, delay / f). The server has two disks of
its own, capped at the paper's rates and scaled by the same f: the NFS server's
RAID1 (write 30, read 110 MB/s) and the GPFS server's array (ext3 measured at
500 MB/s). File systems: kernel NFS (v4, ``nfsd`` in the server's kernel) and
GlusterFS in GPFS's role. Measurements: iperf3 against the TCP window (Fig.
2-1) with the era's default buffers and the paper's tuned sysctls (recorded
operations, undone at the end), 5 parallel flows each way, the raw disks (fio
on the server), and fio sequential write/read over each file system as
clients are added, on the LAN and across the WAN, tuned and untuned, MTU 1500
and 9000, and against the block size.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from ...config.interface import Mtu
from ...config.route import HostRoute
from ...errors import SpecError
from ...run.session import Session
from ...tools import fio as fio_tool
from ...tools.iperf3 import IPERF3, iperf3_server
from ...topology.topology import SHAPERS, Topology, TopologyBuilder
from ..base import Citation, Requirements, RunData, Study
from ..order import MeasuringOrder
from ..parameters import Parameters, param
from . import fs as s2_fs
from .design import (
    ADDRESSES,
    FILE_SYSTEMS,
    FREE_DISK,
    IPERF_PORTS,
    KIB,
    LAN,
    MIB,
    NFS_DISK,
    PFS_DISK,
    POINT_RTTS,
    PROFILES,
    STUDY,
    TCP_RTO_MIN_MS,
    TUNINGS,
    WAN,
    scaled_rto_min_ms,
    tuning_settings,
)
from .measure import (
    allow_windows,
    bed_scaling,
    file_bytes,
    file_system_points,
    measure_ceiling,
    measure_disks,
    measure_file_systems,
    measure_flows,
    measure_mtus,
    measure_windows,
    path_share,
    set_tuning,
    window_accounting,
)
from .registration import REGISTRATION_FILE

__all__ = ["ADDRESSES", "FILE_SYSTEMS", "IPERF_PORTS", "KIB", "LAN", "MIB", "NFS_DISK",
           "PFS_DISK", "PROFILES", "S2", "STUDY", "TUNINGS", "WAN", "Params", "file_bytes",
           "file_system_points", "path_share", "topology"]


@dataclass(frozen=True)
class Params(Parameters):
    profiles: ClassVar[dict[str, dict]] = PROFILES
    wan_rate_mbit: float = param(1000.0, "the WAN link's rate (the paper: 1 Gbit/s)",
                                 unit="Mbit/s", low=1, high=100_000)
    wan_rtt_ms: float = param(4.8, "the WAN link's round-trip time (the paper: 4.8 ms)",
                              unit="ms", low=0.1, high=2000)
    wan_shaper: str = param("netem", "how the WAN enforces its rate: netem (each frame's departure "
                            "scheduled after the one before, so an emulator's stall loses no "
                            "link time) or htb (a 32 KB bucket: in TCG VMs it carried 0.93-0.955 "
                            "of the rate with TCP's queue standing, 2026-11-29)", choices=SHAPERS)
    windows_kib: tuple[int, ...] = param(PROFILES["quick"]["windows_kib"],
                                         "TCP windows of the iperf3 sweep (-w), besides "
                                         "autotuning", unit="KiB", low=4, high=65536)
    tunings: tuple[str, ...] = param(("era", "tuned"), "TCP buffer settings compared: the "
                                     "era's defaults and the paper's 1 MB tuning",
                                     choices=tuple(TUNINGS), item="tuning")
    file_systems: tuple[str, ...] = param(FILE_SYSTEMS, "file systems: kernel NFS v4 and the "
                                          "parallel file system (GlusterFS in GPFS's role)",
                                          choices=FILE_SYSTEMS, item="file system")
    clients: tuple[int, ...] = param(PROFILES["quick"]["clients"], "concurrent client tasks "
                                     "per LAN point (fio jobs, each its own file; the paper: "
                                     "4 LAN clients)", low=1, high=16)
    wan_clients: tuple[int, ...] = param((1,), "concurrent client tasks per WAN point (the "
                                         "paper: 5 WAN clients)", low=1, high=16)
    block_sizes_kib: tuple[int, ...] = param((1024,), "fio block sizes of the parallel "
                                             "file system's sweep, at one task (the paper: "
                                             "1 MB; sweep: 256 KB..4 MB)", unit="KiB", low=4,
                                             high=65536)
    block_paths: tuple[str, ...] = param((WAN,), "the paths the block-size sweep runs over "
                                         "(Fig. 2-7: LAN, Fig. 2-8: WAN)", choices=(LAN, WAN),
                                         item="path")
    point_rtts: int = param(POINT_RTTS, "round trips of the scaled WAN each point lasts at "
                            "its expected rate (iperf3 after omitting slow start; fio files "
                            "sized to it); claims count only points of at least "
                            "s2_lab.MIN_RTTS measured round trips", unit="RTTs", low=1,
                            high=100_000)
    file_mib: int = param(0, "bytes each client task writes, then reads", unit="MiB", low=1,
                          high=1 << 20, zero="sized from point_rtts and the lab's rates")
    mtus: tuple[int, ...] = param((1500, 9000), "WAN MTUs compared (iperf3, tuned)",
                                  unit="B", low=1500, high=9000)
    flows: int = param(5, "parallel TCP flows of the network check (the paper: 5)", low=1,
                       high=64)
    repetitions: int = param(1, "repetitions of every point, in a shuffled order (the "
                             "claims' samples)", low=1, high=100)
    seed: int = param(0, "seed of the randomised order of the points in each repetition",
                      low=0, high=2**31 - 1, zero="a fresh seed, recorded in run.json")
    drop_caches: bool = param(True, "drop the page caches of client and server before each "
                              "read, so reads come from the disk across the network")
    scale_rto_min: bool = param(True, "scale TCP's minimum RTO with the WAN's delays (rto_min "
                                "200 ms / f on the routes between the WAN ends; a lab only): "
                                "a timeout then lasts the paper's round trips")
    verify_seconds: int = param(3, "iperf3 seconds counted per link direction when verifying "
                                "the lab; the scaled WAN omits its slow start first and counts "
                                "at least 20 round trips and 5 s (harness.lab.rate_plan)",
                                unit="s", low=1, high=60)
    # -- machines from an inventory: the user's own file systems, not a lab's --------------
    nfs_export: str = param("", "inventory runs: an existing NFS export of the inventory's "
                            "server (its path, e.g. /export/scratch), mounted by the client "
                            "over each path; empty: none (a VM lab serves its own)")
    pfs_mount: str = param("", "inventory runs: the client's mount of an existing parallel "
                           "file system (e.g. GPFS at /gpfs/fs1); empty: none")
    pfs_path: str = param(WAN, "inventory runs: the path the parallel file system's traffic "
                          "takes, as results and claims label it", choices=(LAN, WAN))
    server_disk_dir: str = param("", "inventory runs: a directory on the server's local disk "
                                 "(the one under the NFS export) for the raw-disk fio; empty: "
                                 "the raw disk is not measured and its claims say so")

    def check(self) -> None:
        for name in ("windows_kib", "clients", "wan_clients", "block_sizes_kib", "tunings",
                     "file_systems", "mtus", "block_paths"):
            values = getattr(self, name)
            if len(set(values)) != len(values):
                raise SpecError(f"parameter {name}={values} repeats a value", "give each once")
        if set(self.mtus) - {1500, 9000}:
            raise SpecError(f"parameter mtus={self.mtus}: the paper compares 1500 and 9000 only",
                            "give 1500, 9000 or both")
        if "tuned" not in self.tunings:
            raise SpecError("tunings must include tuned",
                            "the file-system sweeps run with the paper's tuning; add era to "
                            "compare the untuned state")
        for name in ("nfs_export", "pfs_mount", "server_disk_dir"):
            check_absolute_path(name, getattr(self, name))
        if self.server_disk_dir and not self.existing:
            raise SpecError("server_disk_dir is the disk under an existing NFS export",
                            "give nfs_export too, or leave server_disk_dir empty")
        if self.existing and not self.measured_file_systems():
            raise SpecError(f"file_systems={','.join(self.file_systems)} names none of the "
                            "existing file systems given (nfs_export: nfs; pfs_mount: pfs)",
                            "add the file system you gave a path for to file_systems")

    @property
    def existing(self) -> bool:
        """The user's own file systems (machines from an inventory), not a lab's."""
        return bool(self.nfs_export or self.pfs_mount)

    def measured_file_systems(self) -> tuple[str, ...]:
        """The file systems measured: a lab's are all of ``file_systems``; on real machines
        those of them the user gave a path for."""
        if not self.existing:
            return self.file_systems
        given = {"nfs": self.nfs_export, "pfs": self.pfs_mount}
        return tuple(fs for fs in self.file_systems if given[fs])

    def paths(self, fs: str) -> tuple[str, ...]:
        """The paths a file system is mounted over: both, except a user's parallel file
        system, which is mounted already (over ``pfs_path``)."""
        return (self.pfs_path,) if self.existing and fs == "pfs" else (LAN, WAN)

    @property
    def bdp_bytes(self) -> float:
        return self.wan_rate_mbit * 1e6 / 8 * self.wan_rtt_ms / 1e3


def check_absolute_path(name: str, value: str) -> None:
    """A path of the user's machines (fio works in it; commands quote it): absolute, of the
    characters fio's directories may have, no '..'."""
    if value and (not fio_tool.PATH.match(value) or ".." in value.split("/")):
        raise SpecError(f"parameter {name}={value!r} is not a plain absolute path",
                        "give an absolute path of letters, digits and _ . / @ + - (no spaces "
                        "or '..'), e.g. /gpfs/fs1")


def topology(params: Params) -> Topology:
    """Client and server, each a whole VM; a LAN wire and a long fat WAN wire; the server's
    two capped disks and the uncapped one of the parallel FS's ceiling."""
    b = (TopologyBuilder("s2-wan").node("client", whole_machine=True)
         .node("server", machine="server", whole_machine=True, disks=(NFS_DISK, PFS_DISK, FREE_DISK)))
    b.link(("client", LAN, ADDRESSES[("client", LAN)]),
           ("server", LAN, ADDRESSES[("server", LAN)]))
    b.link(("client", WAN, ADDRESSES[("client", WAN)]),
           ("server", WAN, ADDRESSES[("server", WAN)]),
           rate_mbit=params.wan_rate_mbit, delay_ms=params.wan_rtt_ms / 2, mtu=max(params.mtus),
           shaper=params.wan_shaper)
    return b.build(notes=f"S2: a LAN wire (unshaped) and a WAN wire of {params.wan_rate_mbit:g} "
                         f"Mbit/s, RTT {params.wan_rtt_ms:g} ms (BDP {params.bdp_bytes / 1e6:.2f}"
                         " MB), between a client and a file server with two capped disks (and an "
                         "uncapped one: the parallel FS's own ceiling)")


def scale_timers(session: Session, bed, params: Params) -> int:
    """TCP's minimum RTO scaled with the WAN's delays (:func:`~harness.studies.s2.design.
    scaled_rto_min_ms`): a host route to the peer's WAN address out of each end's WAN device
    carrying it (recorded, undone at the end); what was set goes to run.json
    (``tcp_timers``). Returns the rto_min in ms (0: not scaled)."""
    factor = bed_scaling(session)
    rto_min = scaled_rto_min_ms(factor) if params.scale_rto_min else 0
    rtt_ms = params.wan_rtt_ms / factor if factor else params.wan_rtt_ms
    if rto_min:
        session.apply(*(HostRoute(bed.node(node), bed.address(peer, WAN),
                                  device=bed.device(node, WAN), rto_min_ms=rto_min)
                        for node, peer in (("client", "server"), ("server", "client"))))
    if not session.dry_run:
        floor = rto_min or TCP_RTO_MIN_MS
        session.note(tcp_timers={
            "rto_min_ms": floor, "scaled": bool(rto_min), "factor": factor,
            "wan_rtt_ms": rtt_ms, "rto_min_rtts": floor / rtt_ms,
            "paper_rto_min_rtts": TCP_RTO_MIN_MS / params.wan_rtt_ms,
            "capped": bool(rto_min) and rto_min < round(TCP_RTO_MIN_MS / factor),
            "why": "Linux's RTO is about srtt + max(4 rttvar, rto_min); 200 ms on the paper's "
                   "4.8 ms WAN is 42 round trips, on the scaled WAN about one: scaled by 1 / f "
                   "it stays 42"})
    return rto_min


def note_wan_queue(session: Session, bed) -> dict | None:
    """The WAN's shaper and the queue behind its delay line as the lab realised it (the
    client's egress; both ends get the same plan), for run.json (``wan_queue``): in full
    frames and in BDPs, beside the rule that one flow needs at least one BDP of it
    (:meth:`~harness.topology.shaping.EgressPlan.queue_record`). None: not a lab."""
    lab = getattr(bed, "lab", None)
    plan = lab.egress_plan("client", WAN) if lab is not None else None
    if plan is None or session.dry_run:
        return None
    record = {"shaper": plan.kind, **(plan.queue_record() or {})}
    session.note(wan_queue=record)
    return record


class S2(Study):
    name = STUDY
    registration_file = REGISTRATION_FILE
    title = "A shared file system over a long fat link: TCP window tuning, NFS and a parallel FS"
    citation = Citation("Woo Jun (우 준), KISTI",
                        "Global shared file system I/O performance analysis report "
                        "(글로벌공유파일시스템 I/O 성능 분석 보고서)",
                        "KISTI technical report", 2007, "002_f8e0015e89fa5cdf.txt",
                        note="the seed prints no date or report number; the year is estimated "
                             "from its testbed (Sun X4500, Red Hat Enterprise Linux 4)")
    Params = Params

    def topology(self, params: Params) -> Topology:
        return topology(params)

    def requirements(self, params: Params) -> Requirements:
        if params.existing:  # the client's mount.nfs4: check_testbed looks there
            return Requirements(tools=(IPERF3, fio_tool.FIO))
        return Requirements(tools=(IPERF3, *s2_fs.tools(params.file_systems)))

    def check_where(self, params: Params, inventory: str) -> None:
        if inventory and not params.existing:
            raise SpecError("on machines from an inventory S2 measures file systems you have: "
                            "none was given",
                            "give nfs_export=PATH (an export of the inventory's server) and/or "
                            "pfs_mount=PATH (the client's mount of your parallel file system, "
                            "e.g. GPFS); the harness serves no file system on real machines")
        if params.existing and not inventory:
            raise SpecError("nfs_export, pfs_mount and server_disk_dir name file systems of "
                            "real machines",
                            "give an inventory of those machines, or leave them empty: the "
                            "VM lab serves its own NFS and parallel file system")

    def check_testbed(self, session: Session, bed, params: Params) -> None:
        if params.existing:
            s2_fs.check_existing(bed.node("client"), bed.node("server"), params)

    def configure(self, session: Session, bed, params: Params) -> dict:
        """The WAN at its smaller MTU; in a lab, the server's disks formatted and mounted and
        its file systems served; on real machines, the user's file systems found (all
        recorded)."""
        session.apply(*(Mtu(bed.node(n), bed.device(n, WAN), min(params.mtus))
                        for n in ("client", "server")))
        if params.existing:
            return s2_fs.existing(session, bed.node("server"), params)
        rto_min = scale_timers(session, bed, params)
        note_wan_queue(session, bed)
        configured = s2_fs.serve(session, bed, params.file_systems, ADDRESSES)
        for conf in configured.values():
            conf["rto_min_ms"] = rto_min
        return configured

    def measure(self, session: Session, bed, params: Params, configured: dict) -> None:
        """Per repetition: the raw disks, then each tuning in a new random order, its
        sweeps in shuffled orders (:mod:`harness.studies.s2.measure`)."""
        client, server = bed.node("client"), bed.node("server")
        order = MeasuringOrder(params.seed)
        rows: list[dict] = []
        started = time.monotonic()
        accounting = window_accounting((client, server), params.bdp_bytes)
        buffer = accounting["tuned_buffer"]
        with iperf3_server(session.journal, server, bed.address("server", LAN), IPERF_PORTS[LAN]), \
                iperf3_server(session.journal, server, bed.address("server", WAN),
                              IPERF_PORTS[WAN]):
            for rep in range(1, params.repetitions + 1):
                rows += measure_disks(session, server, configured, params, rep)
                for tuning in order.shuffle(params.tunings):
                    with session.journal.scope():
                        set_tuning(session, (client, server), tuning, buffer)
                        windows: tuple[int, ...] = (0,)  # autotuning: what the FSs get
                        if tuning == "tuned":
                            allow_windows(session, (client, server),
                                          max(params.windows_kib) * KIB)
                            windows += params.windows_kib
                        rows += measure_windows(session, bed, params, tuning, windows, order,
                                                rep)
                        if tuning == "tuned":
                            rows += measure_flows(session, bed, params, order, rep)
                            rows += measure_mtus(session, bed, params, order, rep)
                        rows += measure_file_systems(session, bed, params, configured, tuning,
                                                     order, rep)
                        if tuning == "tuned":
                            rows += measure_ceiling(session, bed, params, configured, order,
                                                    rep, rows)
        session.results(pd.DataFrame(rows))
        session.note(order=order.record("per repetition: the raw disks, then the tunings in a "
                                        "new random order; within a tuning the windows, the "
                                        "5-flow directions, the MTUs, the file systems' "
                                        "paths and their points each in a new random order"),
                     measure_s=round(time.monotonic() - started, 1),
                     tunings={k: tuning_settings(k, buffer) for k in params.tunings},
                     window_accounting=accounting,
                     bdp_bytes=params.bdp_bytes, scaling=bed_scaling(session))

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import analysis as s2_analysis

        return s2_analysis.claims(data)

    def figures(self, data: RunData) -> dict:
        from . import analysis as s2_analysis

        return s2_analysis.figures(data)


