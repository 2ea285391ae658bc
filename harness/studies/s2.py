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

from ..config.interface import Mtu
from ..config.sysctl import Sysctl, SysctlAtLeast
from ..errors import SpecError
from ..session import Session
from ..tools import fio as fio_tool
from ..tools.iperf3 import IPERF3, iperf3_client, iperf3_server, settle
from ..topology import DataDisk, Topology, TopologyBuilder
from . import s2_fs
from .base import Citation, Requirements, RunData, Study
from .order import MeasuringOrder
from .parameters import Parameters, param

STUDY = "s2"
LAN, WAN = "lan", "wan"
ADDRESSES = {("client", LAN): "198.18.2.2/24", ("server", LAN): "198.18.2.1/24",
             ("client", WAN): "198.18.3.2/24", ("server", WAN): "198.18.3.1/24"}
IPERF_PORTS = {LAN: 5301, WAN: 5302}
KIB, MIB = 1 << 10, 1 << 20

# The paper's disks (section 3): the NFS server's RAID1 wrote 30 MB/s and read 110 MB/s; the
# GPFS server (an X4500, 8 SATA disks) measured 500 MB/s on ext3 with IOzone.
NFS_DISK = DataDisk("nfs", size_mib=2048, read_mbyte_s=110, write_mbyte_s=30)
PFS_DISK = DataDisk("pfs", size_mib=2048, read_mbyte_s=500, write_mbyte_s=500)

# TCP buffers. "era": Linux 2.6's defaults when the paper was written (tcp_rmem max 174760,
# tcp_wmem max 131072, the core maxima 131071): the untuned state the paper starts from.
# "tuned": the paper's settings, verbatim (1 MB windows, SACK on, path-MTU discovery on).
TUNINGS = {
    "era": {"net.ipv4.tcp_rmem": "4096 87380 174760", "net.ipv4.tcp_wmem": "4096 16384 131072",
            "net.core.rmem_max": "131071", "net.core.wmem_max": "131071"},
    "tuned": {"net.ipv4.tcp_rmem": "4096 87380 1048576",
              "net.ipv4.tcp_wmem": "4096 87380 1048576",
              "net.core.rmem_max": "1048576", "net.core.wmem_max": "1048576",
              "net.ipv4.tcp_sack": "1", "net.ipv4.ip_no_pmtu_disc": "0"},
}
FILE_SYSTEMS = ("nfs", "pfs")  # pfs: the parallel file system in GPFS's role (GlusterFS)

PROFILES = {
    # quick: each claim's points once, small files (493 s measured on an idle machine, two
    # TCG VMs: ~170 s of VMs, ceilings, lab, file systems and verification before the first point)
    "quick": dict(windows_kib=(64, 256, 1024, 4096), clients=(1, 3), wan_clients=(1,),
                  block_sizes_kib=(1024,), point_seconds=3, window_seconds=3, repetitions=1),
    # verdict: the claims' points repeated, the block-size sweep, larger files
    # (sized for ~30 min here; measured: 1401 s start to report, 88 fio points, 4 of 12
    # testable claims inconclusive -- the parallel FS's WAN writes vary ~10 % between
    # repetitions, and "about the full link" (0.9..1.02) would need ~100 of them; the claims
    # need 1 and 3 LAN clients, one WAN client, the block sweep of the parallel FS)
    "verdict": dict(windows_kib=(64, 128, 256, 512, 1024, 2048, 4096), clients=(1, 3),
                    wan_clients=(1,), block_sizes_kib=(256, 1024, 4096), point_seconds=3,
                    window_seconds=3, repetitions=4),
    # paper: the paper's sweep (4 LAN / 5 WAN clients), 4 GB-class files scaled with the link
    "paper": dict(windows_kib=(64, 128, 256, 512, 1024, 2048, 4096), clients=(1, 2, 3, 4),
                  wan_clients=(1, 2, 3, 4, 5), block_sizes_kib=(256, 1024, 4096),
                  point_seconds=10, window_seconds=8, repetitions=5),
}


@dataclass(frozen=True)
class Params(Parameters):
    profiles: ClassVar[dict[str, dict]] = PROFILES
    wan_rate_mbit: float = param(1000.0, "the WAN link's rate (the paper: 1 Gbit/s)",
                                 unit="Mbit/s", low=1, high=100_000)
    wan_rtt_ms: float = param(4.8, "the WAN link's round-trip time (the paper: 4.8 ms)",
                              unit="ms", low=0.1, high=2000)
    windows_kib: tuple[int, ...] = param(PROFILES["quick"]["windows_kib"],
                                         "TCP windows of the iperf3 sweep (-w), besides "
                                         "autotuning", unit="KiB", low=4, high=65536)
    window_seconds: int = param(3, "seconds per iperf3 point", unit="s", low=1, high=600)
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
    block_sizes_kib: tuple[int, ...] = param((1024,), "fio block sizes (the paper: 1 MB; "
                                             "sweep: 256 KB..4 MB)", unit="KiB", low=4,
                                             high=65536)
    point_seconds: float = param(3, "about how long each fio point writes (then reads): its "
                                 "files are sized from the lab's scaled disk and link rates",
                                 unit="s", low=1, high=3600)
    file_mib: int = param(0, "bytes each client task writes, then reads", unit="MiB", low=1,
                          high=1 << 20, zero="sized from point_seconds and the lab's rates")
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
    verify_seconds: int = param(3, "iperf3 seconds per link direction when verifying the lab",
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
                     "file_systems", "mtus"):
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
    two disks."""
    b = (TopologyBuilder("s2-wan").node("client", whole_machine=True)
         .node("server", machine="server", whole_machine=True, disks=(NFS_DISK, PFS_DISK)))
    b.link(("client", LAN, ADDRESSES[("client", LAN)]),
           ("server", LAN, ADDRESSES[("server", LAN)]))
    b.link(("client", WAN, ADDRESSES[("client", WAN)]),
           ("server", WAN, ADDRESSES[("server", WAN)]),
           rate_mbit=params.wan_rate_mbit, delay_ms=params.wan_rtt_ms / 2, mtu=max(params.mtus))
    return b.build(notes=f"S2: a LAN wire (unshaped) and a WAN wire of {params.wan_rate_mbit:g} "
                         f"Mbit/s, RTT {params.wan_rtt_ms:g} ms (BDP {params.bdp_bytes / 1e6:.2f}"
                         " MB), between a client and a file server with two capped disks")


class S2(Study):
    name = STUDY
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
        return s2_fs.serve(session, bed, params.file_systems, ADDRESSES)

    def measure(self, session: Session, bed, params: Params, configured: dict) -> None:
        client, server = bed.node("client"), bed.node("server")
        order = MeasuringOrder(params.seed)
        rows: list[dict] = []
        started = time.monotonic()
        rows += measure_disks(session, server, configured, params)
        with iperf3_server(session.journal, server, bed.address("server", LAN), IPERF_PORTS[LAN]), \
                iperf3_server(session.journal, server, bed.address("server", WAN),
                              IPERF_PORTS[WAN]):
            for tuning in params.tunings:
                with session.journal.scope():
                    set_tuning(session, (client, server), tuning)
                    windows: tuple[int, ...] = (0,)  # autotuning: what NFS and GlusterFS get
                    if tuning == "tuned":
                        allow_windows(session, (client, server), max(params.windows_kib) * KIB)
                        windows += params.windows_kib
                    rows += measure_windows(bed, params, tuning, windows, order)
                    if tuning == "tuned":
                        rows += measure_flows(bed, params)
                        rows += measure_mtus(session, bed, params, order)
                    rows += measure_file_systems(session, bed, params, configured, tuning, order)
        session.results(pd.DataFrame(rows))
        session.note(order=order.record("the points of each sweep, in a new random order in "
                                        "each repetition"),
                     measure_s=round(time.monotonic() - started, 1),
                     tunings={k: TUNINGS[k] for k in params.tunings},
                     bdp_bytes=params.bdp_bytes, scaling=bed_scaling(session))

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import s2_analysis

        return s2_analysis.claims(data)

    def figures(self, data: RunData) -> dict:
        from . import s2_analysis

        return s2_analysis.figures(data)


def bed_scaling(session: Session) -> float:
    scaling = getattr(session, "scaling", None)
    return scaling.factor if scaling is not None else 1.0


def set_tuning(session: Session, nodes, tuning: str) -> None:
    session.apply(*(Sysctl(node, key, value) for node in nodes
                    for key, value in TUNINGS[tuning].items()))


def allow_windows(session: Session, nodes, largest: int) -> None:
    """Raise the core socket-buffer maxima so every window of the sweep can be asked for.

    ``-w`` sets SO_SNDBUF/SO_RCVBUF, which the kernel caps at net.core.wmem_max/rmem_max
    (and iperf3 then stops: "socket buffer size not set correctly"); TCP's autotuning
    is bounded by tcp_rmem/tcp_wmem instead, which stay as tuned. One batch: read and set
    one after another, these cost ~4 s each into a TCG VM (17 s for the four, measured)."""
    session.apply(*(SysctlAtLeast(node, key, largest) for node in nodes
                    for key in ("net.core.rmem_max", "net.core.wmem_max")))


def measure_windows(bed, params: Params, tuning: str, windows: tuple[int, ...],
                    order: MeasuringOrder) -> list[dict]:
    """Fig. 2-1: iperf3 across the WAN against the window asked for (-w; 0: autotuning)."""
    client, server_ip = bed.node("client"), bed.address("server", WAN)
    rows = []
    for rep in range(1, params.repetitions + 1):
        for window in order.shuffle(windows):
            result = iperf3_client(client, server_ip, IPERF_PORTS[WAN], params.window_seconds,
                                   window=window * KIB if window else None, omit=1)
            start = result.raw.get("start", {})
            rows.append({"kind": "window", "tuning": tuning, "path": WAN, "repetition": rep,
                         "window_kib": window, "mbit_s": result.received_mbps,
                         "rcvbuf_actual": start.get("rcvbuf_actual"),
                         "sndbuf_actual": start.get("sndbuf_actual"),
                         "retransmits": result.retransmits})
            settle()
    return rows


def measure_flows(bed, params: Params) -> list[dict]:
    """The paper's network check: 5 parallel flows each way across the WAN (tuned)."""
    client, server_ip = bed.node("client"), bed.address("server", WAN)
    rows = []
    for rep in range(1, params.repetitions + 1):
        for reverse in (False, True):
            result = iperf3_client(client, server_ip, IPERF_PORTS[WAN], params.window_seconds,
                                   streams=params.flows, reverse=reverse, omit=1)
            rows.append({"kind": "flows", "tuning": "tuned", "path": WAN, "repetition": rep,
                         "direction": "server->client" if reverse else "client->server",
                         "flows": params.flows, "mbit_s": result.received_mbps})
            settle()
    return rows


def measure_mtus(session: Session, bed, params: Params, order: MeasuringOrder) -> list[dict]:
    """MTU 1500 against 9000 across the WAN (tuned, autotuned window); the MTU is a recorded
    change of both wire ends, undone when the tuning's scope ends."""
    client, server = bed.node("client"), bed.node("server")
    server_ip = bed.address("server", WAN)
    rows = []
    for rep in range(1, params.repetitions + 1):
        for mtu in order.shuffle(params.mtus):
            session.apply(Mtu(client, bed.device("client", WAN), mtu),
                          Mtu(server, bed.device("server", WAN), mtu))
            result = iperf3_client(client, server_ip, IPERF_PORTS[WAN], params.window_seconds,
                                   omit=1)
            rows.append({"kind": "mtu", "tuning": "tuned", "path": WAN, "repetition": rep,
                         "mtu": mtu, "mbit_s": result.received_mbps})
            settle()
    session.apply(Mtu(client, bed.device("client", WAN), min(params.mtus)),
                  Mtu(server, bed.device("server", WAN), min(params.mtus)))
    return rows


def file_bytes(session: Session, params: Params, fs: str, path: str, clients: int,
               block_kib: int = 1024) -> int:
    """Bytes each client task writes (then reads) so a point takes about ``point_seconds``:
    the slower of the file system's disk (write rate) and the path (the scaled WAN's goodput,
    the LAN wire's measured ceiling), shared by the tasks; ``file_mib`` when given, or when
    the rates are unknown (machines from an inventory: 64 MiB)."""
    block = block_kib * KIB
    if params.file_mib:
        return max(block, params.file_mib * MIB // block * block)
    placement = session.placement()
    disks = (placement.get("disks") or {}).get("server", {})
    disk = disks.get(s2_fs.DISKS[fs], {}).get("write_mbyte_s")
    if disk is None:
        return 64 * MIB
    rates = [disk]
    if path == WAN:
        rates.append(params.wan_rate_mbit * bed_scaling(session) / 8)
    elif path == LAN:
        ceiling = (placement.get("wire_ceilings_mbit") or {}).get("client:lan--server:lan")
        if ceiling:
            rates.append(ceiling / 8)
    per_task = min(rates) * 1e6 * params.point_seconds / clients
    return max(block, int(per_task) // block * block)


def measure_disks(session: Session, server, configured: dict, params: Params) -> list[dict]:
    """The raw disks (the paper's IOzone on ext3): fio on the server, each file system's disk."""
    rows = []
    for fs in params.measured_file_systems():
        if not configured[fs].get("disk_dir"):  # a user's file system without server_disk_dir
            continue
        for rep in range(1, params.repetitions + 1):
            for rw in ("write", "read"):
                result = s2_fs.fio(session, server, configured[fs]["disk_dir"], rw, 1,
                                   MIB, file_bytes(session, params, fs, "local", 1),
                                   f"disk-{fs}-{rep}",
                                   cold=params.drop_caches and rw == "read",
                                   others=(), clear=configured[fs].get("clear", False))
                rows.append({"kind": "disk", "fs": fs, "path": "local", "repetition": rep,
                             "rw": rw, "clients": 1, "block_kib": 1024, **result})
    return rows


def file_system_points(params: Params, tuning: str) -> list[tuple[str, str, int, int]]:
    """The (file system, path, client tasks, block KiB) points of one tuning.

    Tuned: every file system over the LAN and the WAN, client tasks swept (1 MB blocks);
    the block-size sweep across the WAN for the parallel file system alone (the paper
    swept GPFS's block size, not NFS's). The era's tuning: NFS alone across the WAN, one
    client (the untuned cap the paper reports; it reports no untuned parallel file system).
    A user's parallel file system (``pfs_mount``) is measured over the one path it is
    mounted over.
    """
    points = []
    for fs in params.measured_file_systems():
        for path in params.paths(fs):
            if tuning != "tuned" and (path == LAN or fs != "nfs"):
                continue
            clients = (params.clients if path == LAN else params.wan_clients) \
                if tuning == "tuned" else (1,)
            sweep_blocks = tuning == "tuned" and path == WAN and fs == "pfs"
            blocks = params.block_sizes_kib if sweep_blocks else (1024,)
            points += [(fs, path, n, bs) for n in clients for bs in blocks]
    return points


def path_share(result: dict, path: str, rw: str) -> dict:
    """How much of what the point moved crossed its own path's wire (the client's
    interface: sent for a write, received for a read); none without counters."""
    moved = result.get(f"{path}_{'tx' if rw == 'write' else 'rx'}_bytes")
    if moved is None or not result.get("bytes"):
        return {}
    return {"path_bytes": moved, "path_share": moved / result["bytes"]}


def measure_file_systems(session: Session, bed, params: Params, configured: dict, tuning: str,
                         order: MeasuringOrder) -> list[dict]:
    """fio sequential write then read over each file system, mounted by the client over the
    LAN and across the WAN, at the points of ``file_system_points``."""
    client, server = bed.node("client"), bed.node("server")
    points = file_system_points(params, tuning)
    interfaces = {path: bed.device("client", path) for path in (LAN, WAN)}
    rows = []
    for fs in params.measured_file_systems():
        for path in params.paths(fs):
            mine = [p for p in points if p[0] == fs and p[1] == path]
            if not mine:
                continue
            with s2_fs.mounted(session, client, fs, bed.address("server", path),
                               configured[fs]) as mountpoint:
                for rep in range(1, params.repetitions + 1):
                    for _fs, _path, n, bs in order.shuffle(mine):
                        for rw in ("write", "read"):
                            result = s2_fs.fio(session, client, mountpoint, rw, n, bs * KIB,
                                               file_bytes(session, params, fs, path, n, bs),
                                               f"{fs}-{path}-{tuning}-{n}-{bs}-{rep}",
                                               cold=params.drop_caches and rw == "read",
                                               others=(server,),
                                               clear=configured[fs].get("clear", False),
                                               interfaces=interfaces)
                            rows.append({"kind": "fs", "fs": fs, "path": path,
                                         "tuning": tuning, "repetition": rep, "rw": rw,
                                         "clients": n, "block_kib": bs, **result,
                                         **path_share(result, path, rw)})
    return rows
