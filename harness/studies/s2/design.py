"""S2's lab constants, profiles and the rule that sizes every point: one module the study,
its measurement and its analysis all import (never the study itself), so imports run one way.

Point length (issue 24): the paper moved 4 GB files (002:230), about 6800 bandwidth-delay
products of its 0.6 MB link, so slow start was a rounding error in every figure. Until
2026-11-26 a point was sized in seconds of the scaled rates (3 s): NFS points were single
1 MiB files (~1.7 BDP, ~14 RTTs) and iperf3 points ~10 RTTs, half of them in slow start.
Now every point is sized in round trips of the scaled WAN, which makes its bytes
independent of the scale factor f (RTT / f x rate x f): ``POINT_RTTS`` round trips at the
point's expected rate. Slow start from 10 segments to the 0.6 MB window takes ~6 RTTs and
moves ~1 BDP where the line would move ~6, so a 50-RTT point at line rate loses at most
~10 % to it (less on disk-bound points, whose window is smaller), and iperf3 omits the
first ``SLOW_START_RTTS`` round trips outright. A claim counts only points whose measured
length is at least ``MIN_RTTS`` round trips (``rtts`` in the results, with ``bdps``).
"""

from __future__ import annotations

from ...topology.topology import DataDisk

STUDY = "s2"
LAN, WAN = "lan", "wan"
ADDRESSES = {("client", LAN): "198.18.2.2/24", ("server", LAN): "198.18.2.1/24",
             ("client", WAN): "198.18.3.2/24", ("server", WAN): "198.18.3.1/24"}
IPERF_PORTS = {LAN: 5301, WAN: 5302}
KIB, MIB = 1 << 10, 1 << 20

#: The registered point length: each point lasts about this many round trips of the scaled
#: WAN at its expected rate (module docstring), in every profile: the quick profile has
#: fewer points, never shorter ones.
POINT_RTTS = 50
#: Points shorter than this (measured) do not count for a claim: slow start would be more
#: than ~15 % of them.
MIN_RTTS = 30
#: Round trips iperf3 omits (-O) before it counts: slow start to a 0.6 MB window from 10
#: segments is log2(0.6 MB / 14.5 kB) = 5.4 round trips, plus hystart's exit margin.
SLOW_START_RTTS = 10

# The paper's disks (section 3): the NFS server's RAID1 wrote 30 MB/s and read 110 MB/s; the
# GPFS server (an X4500, 8 SATA disks) measured 500 MB/s on ext3 with IOzone -- the rate of
# its 4 Gbit/s LAN too, so "GPFS ~40 % below the disk" on the LAN was GPFS's own. The lab's
# unshaped LAN carries about its wires' ceiling C, and the WAN is scaled to 0.4 C
# (placement.WIRE_HEADROOM), so a disk of D MB/s at the paper's scale caps at D x f =
# D x 0.4 C / 1000 MB/s: 500 would be 1.6 x the LAN and "below the disk" the wire's by
# construction (issue 34 item 15). The parallel FS's disk is therefore PFS_DISK_MBYTE_S =
# 200: 0.64 of the LAN (room for the LAN's ceiling to fall a third under load) and still
# 1.6 x the WAN's 125 MB/s, so the WAN's claims stay network-bound as the paper's were.
PFS_DISK_MBYTE_S = 200
NFS_DISK = DataDisk("nfs", size_mib=2048, read_mbyte_s=110, write_mbyte_s=30)
PFS_DISK = DataDisk("pfs", size_mib=2048, read_mbyte_s=PFS_DISK_MBYTE_S,
                    write_mbyte_s=PFS_DISK_MBYTE_S)
#: The parallel FS's own ceiling in this lab (the referee of 2026-11-30: GlusterFS wrote a flat
#: ~8.3 MB/s on the LAN, below both its disk and its wire, a ceiling of the emulated CPUs that
#: nothing measured). A third server disk, uncapped (as fast as the emulation goes: the host's
#: page cache), carries a second volume of the same parallel FS; its write over the LAN is
#: what the file system itself can do here with no disk cap binding. (Not a tmpfs brick:
#: tmpfs before Linux 6.6 has no user.* xattrs, which glusterfsd needs.)
FREE_DISK = DataDisk("pfs-free", size_mib=2048)
#: The paper's LAN into the GPFS server: 4 Gbit/s (500 MB/s, 002:201, 238), the disk's rate.
PAPER_LAN_MBIT = 4000.0

#: The era's buffers as the paper prints them before tuning (002:144-150, verbatim; the
#: ``tcp_rmem`` minimum 302400 above its default is the paper's own listing), and the
#: paper's tuning (002:154-160; SACK and path-MTU discovery on, 002:166-170), its 1 MB
#: buffers replaced by :func:`tuned_buffer`'s (``TUNED_BUFFER`` below) when a run sizes them.
ERA_BUFFER_MAX = 302400
PAPER_TUNED_BUFFER = 1048576
TUNED_BUFFER = "{tuned_buffer}"
TUNINGS = {
    "era": {"net.ipv4.tcp_rmem": "302400 87380 302400",
            "net.ipv4.tcp_wmem": "4096 87380 302400",
            "net.core.rmem_max": "302400", "net.core.wmem_max": "302400"},
    "tuned": {"net.ipv4.tcp_rmem": f"4096 87380 {TUNED_BUFFER}",
              "net.ipv4.tcp_wmem": f"4096 87380 {TUNED_BUFFER}",
              "net.core.rmem_max": TUNED_BUFFER, "net.core.wmem_max": TUNED_BUFFER,
              "net.ipv4.tcp_sack": "1", "net.ipv4.ip_no_pmtu_disc": "0"},
}

#: The tuned window (issue 34 item 9). Linux advertises part of a receive buffer as window
#: (:mod:`harness.tools.tcp_info`): the paper's 2.6.9 kernel three quarters
#: (tcp_adv_win_scale 2, its default until 2.6.20), so its 1 MB tuning gave a window of
#: 786432 B = 1.31 of its 0.6 MB BDP; Linux 6.1 (tcp_adv_win_scale 1) half, so the same 1 MB
#: gives 524288 B = 0.87 BDP -- below the BDP, where the paper's was above. The tuned buffer
#: is therefore sized to give the paper's window in BDPs under the guest's own accounting.
PAPER_BDP_BYTES = 1e9 / 8 * 4.8e-3
PAPER_ADV_WIN_SCALE = 2
#: Linux 6.6 on: no tcp_adv_win_scale, a per-socket scaling_ratio that starts at half
SCALING_RATIO_START = 0.5


#: TCP's timers (issue 34 item 16). Linux's minimum retransmission timeout is 200 ms
#: (TCP_RTO_MIN) on every path, and its RTO is about srtt + max(4 rttvar, rto_min): on the
#: paper's 4.8 ms WAN a timeout stalls a connection for ~43 round trips (205 ms); on the
#: lab's WAN, its delays scaled by 1 / f (RTT ~200 ms at f = 0.023), for ~2 -- a loss
#: recovered by timeout would cost the lab a twentieth of what it cost the paper. The
#: scaled WAN therefore carries rto_min = 200 ms / f on its routes (both ends; undone at the
#: end), so a timeout lasts what it lasted on the paper's link, in its round trips. The
#: delayed-ACK timer (40 ms minimum) is left: a bulk transfer ACKs every second segment.
TCP_RTO_MIN_MS = 200
#: TCP's largest RTO (TCP_RTO_MAX, 120 s): a route's rto_min above it is refused, so a lab
#: scaled below f = 200 / 120000 (a wire ceiling of ~4 Mbit/s, seen under a load of 18) gets
#: this much, and run.json's tcp_timers says it fell short
TCP_RTO_MAX_MS = 120_000


def scaled_rto_min_ms(factor: float) -> int:
    """The minimum RTO of a WAN whose delays are the paper's / ``factor``, at most TCP's
    largest RTO; 0 (the kernel's own) when the WAN is not scaled (``factor`` 1 or more)."""
    if not 0 < factor < 1:
        return 0
    return min(round(TCP_RTO_MIN_MS / factor), TCP_RTO_MAX_MS)


def window_share(adv_win_scale: int | None) -> float:
    """The share of a receive buffer Linux advertises as window (``tcp_win_from_space``):
    ``1 - 2^-scale`` for a positive scale, ``2^scale`` otherwise; ``None`` (a kernel of 6.6
    or later): the scaling ratio's starting half."""
    if adv_win_scale is None:
        return SCALING_RATIO_START
    return 1 - 2.0 ** -adv_win_scale if adv_win_scale > 0 else 2.0 ** adv_win_scale


#: the paper's tuned window, in its BDPs (1.31)
TUNED_WINDOW_BDPS = PAPER_TUNED_BUFFER * window_share(PAPER_ADV_WIN_SCALE) / PAPER_BDP_BYTES


def tuned_buffer(bdp_bytes: float, adv_win_scale: int | None) -> int:
    """The buffer maximum (bytes, whole pages) that gives ``TUNED_WINDOW_BDPS`` x the BDP as
    window under a kernel with ``adv_win_scale`` (None: 6.6 or later)."""
    wanted = TUNED_WINDOW_BDPS * bdp_bytes / window_share(adv_win_scale)
    return -(-int(wanted) // 4096) * 4096


def tuning_settings(tuning: str, buffer: int = PAPER_TUNED_BUFFER) -> dict[str, str]:
    """The sysctls of ``tuning``, the tuned buffer maxima ``buffer`` bytes."""
    return {key: value.replace(TUNED_BUFFER, str(int(buffer)))
            for key, value in TUNINGS[tuning].items()}
FILE_SYSTEMS = ("nfs", "pfs")  # pfs: the parallel file system in GPFS's role (GlusterFS)

PROFILES = {
    # quick: each claim's points once, one client task per path (so "falls" / "scales" and
    # the task scaling cannot be decided), points as long as the verdict's
    "quick": dict(windows_kib=(64, 1024), clients=(1,), wan_clients=(1,),
                  block_sizes_kib=(1024,), block_paths=(WAN,), repetitions=1),
    # verdict: the claims' points repeated, the block-size sweep on the LAN and across the
    # WAN (Figs. 2-7, 2-8), 1 and 9 WAN tasks (Figs. 2-5, 2-6, 2-12). One run of the three a
    # pooled reference needs (issue 33 item 3; registration: runs.verdict = 3): 2 repetitions
    # each, the earlier 6 (issue 34 item 15) divided by three, so the pooled reference still
    # has 6 repetitions of every point. 50-RTT points make one repetition ~12-13 min here (a
    # quick run of 2026-11-26 at f = 0.038, load 2-6): a run of ~30 min, three ~80 min.
    "verdict": dict(windows_kib=(64, 1024, 4096), clients=(1, 3), wan_clients=(1, 9),
                    block_sizes_kib=(256, 1024, 4096), block_paths=(LAN, WAN), repetitions=2),
    # paper: the paper's sweeps (4 LAN clients, 5 WAN clients and 9 tasks, blocks on both
    # paths)
    "paper": dict(windows_kib=(64, 128, 256, 512, 1024, 2048, 4096), clients=(1, 2, 3, 4),
                  wan_clients=(1, 2, 3, 4, 5, 9), block_sizes_kib=(256, 1024, 4096),
                  block_paths=(LAN, WAN), repetitions=5),
}
