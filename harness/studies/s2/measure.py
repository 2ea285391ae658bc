"""S2's measurements: one repetition of every sweep, each point sized in round trips of the
scaled WAN (:mod:`harness.studies.s2.design`) and recorded with its length in RTTs and BDPs.

A repetition measures the raw disks, then each tuning in a new random order (the era's
buffers and the paper's 1 MB tuning, each a recorded change undone when its scope ends);
within a tuning the windows, the 5-flow directions, the MTUs, the file systems' paths and
their points are each shuffled from the run's seed. Each file system is mounted afresh
per repetition and tuning, so its TCP connection starts under that tuning's buffers.
"""

from __future__ import annotations

import math

from ...config.interface import Mtu
from ...config.sysctl import Sysctl, SysctlAtLeast
from ...run.session import Session
from ...tools.iperf3 import iperf3_client, settle
from ...tools.tcp_info import parse_samples, ss_command, window_reached
from ..order import MeasuringOrder
from . import fs as s2_fs
from .design import (
    ERA_BUFFER_MAX,
    IPERF_PORTS,
    KIB,
    LAN,
    MIB,
    SLOW_START_RTTS,
    TUNED_WINDOW_BDPS,
    WAN,
    tuned_buffer,
    tuning_settings,
    window_share,
)

#: the machines a file-system point's client tasks run on: fio's tasks all run on the one
#: client node (a VM of its own), however many there are
CLIENT_MACHINES = 1
#: seconds between two ``ss`` listings of a sampled point (a fork into a TCG guest costs
#: ~0.1-0.2 s; a 50-RTT point lasts 10 s or more)
SS_EVERY = 0.5


def bed_scaling(session: Session) -> float:
    scaling = getattr(session, "scaling", None)
    return scaling.factor if scaling is not None else 1.0


def wan_rtt_s(session: Session, params) -> float:
    """The lab's WAN round trip: the paper's divided by the scale factor."""
    return params.wan_rtt_ms / bed_scaling(session) / 1e3


def line_mbyte_s(session: Session, params) -> float:
    """The scaled WAN's TCP goodput at MTU 1500, MB/s."""
    return params.wan_rate_mbit * bed_scaling(session) * 1448 / 1514 / 8


def lengths(seconds: float, moved_bytes: float, rtt_s: float, bdp_bytes: float) -> dict:
    """A point's measured length in round trips of the scaled WAN and in its BDPs."""
    return {"rtts": seconds / rtt_s if rtt_s else float("nan"),
            "bdps": moved_bytes / bdp_bytes if bdp_bytes else float("nan")}


def iperf3_timing(session: Session, params) -> tuple[int, int]:
    """(seconds counted, seconds omitted) of an iperf3 point: ``point_rtts`` round trips
    after ``SLOW_START_RTTS`` omitted, in whole seconds (iperf3 3.12 reads -t as an int)."""
    rtt = wan_rtt_s(session, params)
    return max(1, math.ceil(params.point_rtts * rtt)), max(1, math.ceil(SLOW_START_RTTS * rtt))


#: the guest's receive-window accounting, read on each machine in one command
ACCOUNTING_COMMAND = "uname -r; cat /proc/sys/net/ipv4/tcp_adv_win_scale 2>/dev/null || true"


def kernel_accounting(release: str, adv_win_scale: int | None) -> int | None:
    """The tcp_adv_win_scale a kernel uses: None from Linux 6.6 (the sysctl is kept but
    ignored there: a per-socket scaling_ratio decides) or when it has none."""
    try:
        major, minor = (int(part) for part in release.split(".")[:2])
    except ValueError:
        return adv_win_scale
    return None if (major, minor) >= (6, 6) else adv_win_scale


def window_accounting(nodes, bdp_bytes: float) -> dict:
    """Each machine's receive-window accounting and the tuned buffer that gives the paper's
    window (:func:`harness.studies.s2.design.tuned_buffer`): the largest the machines need,
    so the window reaches ``TUNED_WINDOW_BDPS`` x the BDP whichever end receives."""
    machines = {}
    for node in nodes:
        lines = node.run(ACCOUNTING_COMMAND, timeout=30).stdout.split()
        release = lines[0] if lines else ""
        scale = int(lines[1]) if len(lines) > 1 and lines[1].lstrip("-").isdigit() else None
        used = kernel_accounting(release, scale)
        machines[node.name] = {"kernel": release, "tcp_adv_win_scale": scale,
                               "accounting": ("tcp_adv_win_scale" if used is not None
                                              else "scaling_ratio (starts at 0.5)"),
                               "window_share": window_share(used),
                               "buffer": tuned_buffer(bdp_bytes, used)}
    buffer = max(m["buffer"] for m in machines.values())
    return {"machines": machines, "tuned_buffer": buffer, "window_bdps": TUNED_WINDOW_BDPS,
            "bdp_bytes": bdp_bytes,
            "rule": "the paper's 1 MB tuning gave 3/4 of it as window on its 2.6.9 kernel "
                    f"(tcp_adv_win_scale 2): {TUNED_WINDOW_BDPS:.2f} BDP; the buffer gives that "
                    "window under each machine's own accounting"}


def set_tuning(session: Session, nodes, tuning: str, buffer: int) -> None:
    session.apply(*(Sysctl(node, key, value) for node in nodes
                    for key, value in tuning_settings(tuning, buffer).items()))


def allow_windows(session: Session, nodes, largest: int) -> None:
    """Raise the core socket-buffer maxima so every window of the sweep can be asked for.

    ``-w`` sets SO_SNDBUF/SO_RCVBUF, which the kernel caps at net.core.wmem_max/rmem_max
    (and iperf3 then stops: "socket buffer size not set correctly"); TCP's autotuning
    is bounded by tcp_rmem/tcp_wmem instead, which stay as tuned. One batch: read and set
    one after another, these cost ~4 s each into a TCG VM (17 s for the four, measured)."""
    session.apply(*(SysctlAtLeast(node, key, largest) for node in nodes
                    for key in ("net.core.rmem_max", "net.core.wmem_max")))


def _iperf3(session: Session, bed, params, name: str, **kwargs) -> tuple[object, dict]:
    """One iperf3 point across the WAN; a point the client sends is sampled with ``ss``
    on the client (the sending socket: :mod:`harness.tools.tcp_info`), the samples
    archived as raw/ss-NAME.txt and the window reached in the row."""
    seconds, omit = iperf3_timing(session, params)
    server = bed.address("server", WAN)
    sending = not kwargs.get("reverse")
    result = iperf3_client(bed.node("client"), server, IPERF_PORTS[WAN], seconds, omit=omit,
                           sample=ss_command(server, IPERF_PORTS[WAN]) if sending else None,
                           sample_every=SS_EVERY, **kwargs)
    moved = result.received_mbps * 1e6 / 8 * seconds
    window = {}
    if sending:
        session.raw(f"ss-{name}.txt", result.samples)
        window = window_reached(parse_samples(result.samples)).record(params.bdp_bytes)
    return result, {"seconds": seconds, "omit_s": omit, **window,
                    **lengths(seconds, moved, wan_rtt_s(session, params), params.bdp_bytes)}


def measure_windows(session: Session, bed, params, tuning: str, windows: tuple[int, ...],
                    order: MeasuringOrder, rep: int) -> list[dict]:
    """Fig. 2-1: iperf3 across the WAN against the window asked for (-w; 0: autotuning)."""
    rows = []
    for window in order.shuffle(windows):
        result, length = _iperf3(session, bed, params, f"window-{tuning}-{window}-{rep}",
                                 window=window * KIB if window else None)
        start = result.raw.get("start", {})
        rows.append({"kind": "window", "tuning": tuning, "path": WAN, "repetition": rep,
                     "window_kib": window, "mbit_s": result.received_mbps,
                     "rcvbuf_actual": start.get("rcvbuf_actual"),
                     "sndbuf_actual": start.get("sndbuf_actual"),
                     "retransmits": result.retransmits, **length})
        settle()
    return rows


def measure_flows(session: Session, bed, params, order: MeasuringOrder, rep: int) -> list[dict]:
    """The paper's network check: 5 parallel flows each way across the WAN (tuned)."""
    rows = []
    for reverse in order.shuffle((False, True)):
        result, length = _iperf3(session, bed, params,
                                 f"flows-{'reverse' if reverse else 'forward'}-{rep}",
                                 streams=params.flows, reverse=reverse)
        rows.append({"kind": "flows", "tuning": "tuned", "path": WAN, "repetition": rep,
                     "direction": "server->client" if reverse else "client->server",
                     "flows": params.flows, "mbit_s": result.received_mbps, **length})
        settle()
    return rows


def measure_mtus(session: Session, bed, params, order: MeasuringOrder, rep: int) -> list[dict]:
    """MTU 1500 against 9000 across the WAN (tuned, autotuned window); the MTU is a recorded
    change of both wire ends, undone when the tuning's scope ends."""
    client, server = bed.node("client"), bed.node("server")
    rows = []
    for mtu in order.shuffle(params.mtus):
        session.apply(Mtu(client, bed.device("client", WAN), mtu),
                      Mtu(server, bed.device("server", WAN), mtu))
        result, length = _iperf3(session, bed, params, f"mtu-{mtu}-{rep}")
        rows.append({"kind": "mtu", "tuning": "tuned", "path": WAN, "repetition": rep,
                     "mtu": mtu, "mbit_s": result.received_mbps, **length})
        settle()
    session.apply(Mtu(client, bed.device("client", WAN), min(params.mtus)),
                  Mtu(server, bed.device("server", WAN), min(params.mtus)))
    return rows


def expected_mbyte_s(session: Session, params, fs: str, path: str, tuning: str) -> float | None:
    """The rate a point is expected to run at: the faster direction of the slower of its
    disk and its path (the scaled WAN's goodput, capped under the era's buffers at their
    window / RTT; the LAN wire's measured ceiling); None when the disk's rates are unknown
    (machines from an inventory). Sizing at the faster direction keeps both directions of a
    point at least ``point_rtts`` long."""
    placement = session.placement()
    disk = ((placement.get("disks") or {}).get("server", {})).get(s2_fs.DISKS[fs])
    if not disk:
        return None
    path_rate = math.inf
    if path == WAN:
        path_rate = line_mbyte_s(session, params)
        if tuning == "era":
            path_rate = min(path_rate, ERA_BUFFER_MAX / wan_rtt_s(session, params) / 1e6)
    elif path == LAN:
        ceiling = (placement.get("wire_ceilings_mbit") or {}).get("client:lan--server:lan")
        if ceiling:
            path_rate = ceiling / 8
    return max(min(disk[f"{rw}_mbyte_s"], path_rate) for rw in ("read", "write"))


def file_bytes(session: Session, params, fs: str, path: str, clients: int, tuning: str,
               block_kib: int = 1024) -> int:
    """Bytes each client task writes (then reads): ``point_rtts`` round trips of the scaled
    WAN at the point's expected rate, shared by the tasks (the bytes do not depend on the
    scale factor); ``file_mib`` when given, or when the rates are unknown (machines from an
    inventory: 64 MiB)."""
    block = block_kib * KIB
    if params.file_mib:
        return max(block, params.file_mib * MIB // block * block)
    rate = expected_mbyte_s(session, params, fs, path, tuning)
    if rate is None:
        return 64 * MIB
    return point_bytes(session, params, rate, clients, block)


def point_bytes(session: Session, params, rate_mbyte_s: float, clients: int, block: int) -> int:
    """Bytes each of ``clients`` tasks moves for ``point_rtts`` round trips of the scaled WAN
    at ``rate_mbyte_s``, in whole blocks of ``block`` bytes (at least one)."""
    per_task = params.point_rtts * wan_rtt_s(session, params) * rate_mbyte_s * 1e6 / clients
    return max(block, math.ceil(per_task / block) * block)


def measure_disks(session: Session, server, configured: dict, params, rep: int) -> list[dict]:
    """The raw disks (the paper's IOzone on ext3): fio on the server, each file system's disk;
    between its write and its read (which clears the file), the disk's seek cost on the file
    the write laid out (:func:`harness.studies.s2.fs.seek_cost`), on both of its rows
    (``seek_ms``, ``seq_clat_ms``, ``rand_clat_ms``)."""
    rows = []
    rtt = wan_rtt_s(session, params)
    for fs in params.measured_file_systems():
        if not configured[fs].get("disk_dir"):  # a user's file system without server_disk_dir
            continue
        size = file_bytes(session, params, fs, "local", 1, "tuned")
        name, mine, seek = f"disk-{fs}-{rep}", [], {}
        for rw in ("write", "read"):
            if rw == "read":
                seek = s2_fs.seek_cost(session, server, configured[fs]["disk_dir"],
                                       s2_fs.laid_out_file(name), name, size,
                                       cold=params.drop_caches)
            result = s2_fs.fio(session, server, configured[fs]["disk_dir"], rw, 1, MIB, size,
                               name, cold=params.drop_caches and rw == "read",
                               others=(), clear=True)
            mine.append({"kind": "disk", "fs": fs, "path": "local", "repetition": rep,
                         "rw": rw, "clients": 1, "block_kib": 1024, **result,
                         **lengths(result["seconds"], result["bytes"], rtt, params.bdp_bytes)})
        rows += [{**row, **seek} for row in mine]
    return rows


def file_system_points(params, tuning: str) -> list[tuple[str, str, int, int]]:
    """The (file system, path, client tasks, block KiB) points of one tuning.

    Tuned: every file system over the LAN and the WAN at 1 MB blocks, client tasks swept
    (``clients`` on the LAN, ``wan_clients`` across the WAN: Figs. 2-3, 2-5, 2-6, 2-12;
    NFS on the LAN at the fewest tasks only: no claim rests on it, and a point costs ~50 s);
    the block-size sweep at one task for the parallel file system alone (the paper swept
    GPFS's block size, Figs. 2-7, 2-8), over ``block_paths``. The era's tuning: NFS alone
    across the WAN, one task (the untuned cap the paper reports; it reports no untuned
    parallel file system). A user's parallel file system (``pfs_mount``) is measured over
    the one path it is mounted over.
    """
    points = []
    for fs in params.measured_file_systems():
        for path in params.paths(fs):
            if tuning != "tuned":
                if path == WAN and fs == "nfs":
                    points.append((fs, path, 1, 1024))
                continue
            clients = params.clients if path == LAN else params.wan_clients
            if (fs, path) == ("nfs", LAN):  # no claim rests on NFS's LAN sweep (the paper's
                clients = clients[:1]  # NFS figure is across the WAN): its fewest tasks only
            mine = [(fs, path, n, 1024) for n in clients]
            if fs == "pfs" and path in params.block_paths:
                mine += [(fs, path, 1, bs) for bs in params.block_sizes_kib
                         if (fs, path, 1, bs) not in mine]
            points += mine
    return points


def path_share(result: dict, path: str, rw: str) -> dict:
    """How much of what the point moved crossed its own path's wire (the client's
    interface: sent for a write, received for a read); none without counters."""
    moved = result.get(f"{path}_{'tx' if rw == 'write' else 'rx'}_bytes")
    if moved is None or not result.get("bytes"):
        return {}
    return {"path_bytes": moved, "path_share": moved / result["bytes"]}


def measure_file_systems(session: Session, bed, params, configured: dict, tuning: str,
                         order: MeasuringOrder, rep: int) -> list[dict]:
    """fio sequential write then read over each file system, mounted by the client over the
    LAN and across the WAN (in a shuffled order), at the points of ``file_system_points``."""
    client, server = bed.node("client"), bed.node("server")
    points = file_system_points(params, tuning)
    interfaces = {path: bed.device("client", path) for path in (LAN, WAN)}
    rtt = wan_rtt_s(session, params)
    rows = []
    blocks = [(fs, path) for fs in params.measured_file_systems() for path in params.paths(fs)
              if any(p[:2] == (fs, path) for p in points)]
    for fs, path in order.shuffle(blocks):
        mine = [p for p in points if p[:2] == (fs, path)]
        with s2_fs.mounted(session, client, fs, bed.address("server", path),
                           configured[fs]) as mountpoint:
            for _fs, _path, n, bs in order.shuffle(mine):
                size = file_bytes(session, params, fs, path, n, tuning, bs)
                for rw in ("write", "read"):
                    result = s2_fs.fio(session, client, mountpoint, rw, n, bs * KIB, size,
                                       f"{fs}-{path}-{tuning}-{n}-{bs}-{rep}",
                                       cold=params.drop_caches and rw == "read",
                                       others=(server,),
                                       clear=True, interfaces=interfaces)
                    rows.append({"kind": "fs", "fs": fs, "path": path, "tuning": tuning,
                                 "repetition": rep, "rw": rw, "clients": n, "block_kib": bs,
                                 # where the tasks ran: all on the one client machine (the
                                 # paper's clients were machines each: issue 34 item 11)
                                 "client_machines": CLIENT_MACHINES,
                                 "machines_per_task": CLIENT_MACHINES / n,
                                 # the line a WAN claim asks the same point on the LAN to
                                 # reach (its gate: the file system on its own disk, no WAN)
                                 "line_mbyte_s": line_mbyte_s(session, params),
                                 **result, **path_share(result, path, rw),
                                 **lengths(result["seconds"], result["bytes"], rtt,
                                           params.bdp_bytes)})
    return rows


def ceiling_points(params) -> list[tuple[int, int]]:
    """The (client tasks, block KiB) points of the parallel FS's ceiling: the LAN's task
    counts at 1 MiB blocks and one task at each other block size (the parallel FS's LAN and
    block-size points, whose binding each claim's gate asks of it); none when the parallel
    FS is not measured over the LAN."""
    if "pfs" not in params.measured_file_systems() or LAN not in params.paths("pfs"):
        return []
    points = [(n, 1024) for n in params.clients]
    points += [(1, bs) for bs in params.block_sizes_kib if (1, bs) not in points]
    return points


def measure_ceiling(session: Session, bed, params, configured: dict, order: MeasuringOrder,
                    rep: int, earlier: list[dict]) -> list[dict]:
    """The parallel FS's own write ceiling in this lab (tuned): its second volume, on the
    server's uncapped disk (:data:`harness.studies.s2.design.FREE_DISK`), written over the
    LAN at :func:`ceiling_points` (shuffled), each point's files removed after it. Each row
    carries the same repetition's measured write of the parallel FS's capped disk
    (``disk_write_mbyte_s``) and the scaled WAN's goodput (``line_mbyte_s``): the bounds a
    claim's gate asks the ceiling to reach, so that its wire or disk, not the emulated
    machines, sets the figure it judges. None on a user's machines (nothing is served)."""
    conf = configured.get("pfs") or {}
    points = ceiling_points(params)
    if not conf.get("free_volume") or not points:
        return []
    client = bed.node("client")
    interfaces = {path: bed.device("client", path) for path in (LAN, WAN)}
    rtt = wan_rtt_s(session, params)
    disk = [r["mbyte_s"] for r in earlier if r.get("kind") == "disk" and r.get("fs") == "pfs"
            and r.get("rw") == "write" and r.get("repetition") == rep]
    ceiling = (session.placement().get("wire_ceilings_mbit") or {}).get("client:lan--server:lan")
    rate = ceiling / 8 if ceiling else None  # MB/s: the LAN wire sizes the points
    rows = []
    with s2_fs.mounted(session, client, "pfs", bed.address("server", LAN), conf,
                       volume=conf["free_volume"]) as mountpoint:
        for n, bs in order.shuffle(points):
            block = bs * KIB
            size = point_bytes(session, params, rate, n, block) if rate else 64 * MIB
            result = s2_fs.fio(session, client, mountpoint, "write", n, block, size,
                               f"ceiling-pfs-lan-{n}-{bs}-{rep}", cold=False, others=(),
                               clear=True, write_only=True, interfaces=interfaces)
            rows.append({"kind": "ceiling", "fs": "pfs", "path": LAN, "tuning": "tuned",
                         "repetition": rep, "rw": "write", "clients": n, "block_kib": bs,
                         "disk": s2_fs.FREE_DISK, "client_machines": CLIENT_MACHINES,
                         "disk_write_mbyte_s": disk[0] if disk else float("nan"),
                         "line_mbyte_s": line_mbyte_s(session, params),
                         **result, **path_share(result, LAN, "write"),
                         **lengths(result["seconds"], result["bytes"], rtt, params.bdp_bytes)})
    return rows
