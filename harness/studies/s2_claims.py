"""S2's registration: the paper's claims (quote, seed line, quantity, regime, region and the
rule that made it), the design fixed before data, and every change made after archived runs
existed (docs/explanation/verdicts.md). Judged by :mod:`harness.studies.s2_analysis`.
"""

from __future__ import annotations

from ..claims import LAB, Claim, Region
from ..registration import DesignChange
from .s2_lab import MIN_RTTS, POINT_RTTS, PROFILES, SLOW_START_RTTS

GOODPUT_PER_WIRE = 1448 / 1514  # TCP payload per Ethernet frame at MTU 1500 (timestamps on)
GOODPUT_9000 = 8948 / 9014  # ... at MTU 9000
ERA_PAPER_MBIT = 160.74  # the paper's usable bandwidth before tuning (Fig. 2-1, section 2)

# The paper's WAN (002:78-96): KISTI-PNU, 1 Gbit/s, RTT 4.8 ms, BDP 0.6 MB; tuned: the 1 MB
# sysctls of 002:152-160. Ours, in every regime below: the same link scaled by f.
_WAN = "the paper's dedicated KISTI-PNU WAN: 1 Gbit/s, RTT 4.8 ms, BDP 0.6 MB (002:78-96)"
_SCALED = ("ours: the WAN shaped (netem + rate) between two TCG VMs and scaled by f = 0.4 x "
           "the WAN wire's measured ceiling / 1 Gbit/s (placement.WIRE_HEADROOM; 0.012..0.045 "
           "measured): rate x f, RTT / f, the BDP kept; compared as fractions of the line's "
           "TCP goodput (1448/1514 of the rate)")
_FS = ("ours: kernel NFS v4 and GlusterFS (GPFS's role) served by one server VM from virtio "
       "disks capped at the paper's rates x f; clients are fio tasks (one file each) in one "
       "client VM, not machines")
_SAMPLES = ("samples: the repetitions (each a fresh iperf3 connection set or a fresh fio job "
            "with its own files), geometric mean with a Student t (< 10) or bootstrap interval; "
            f"only points of at least {MIN_RTTS} measured round trips of the scaled WAN count "
            f"(each sized to {POINT_RTTS}; iperf3 omits the first {SLOW_START_RTTS}, slow "
            "start); a point above its wire's or disk's physical bound is invalid")

CLAIMS = {
    "window_line_rate": Claim(
        "window_line_rate", "From a window of about 2 x BDP (1 MB) the usable bandwidth is "
        "about the line rate (Fig. 2-1)", "~line rate from 1 MB",
        Region.between(0.9, 1.02, "'about the line rate' read off Fig. 2-1, whose curve "
                       "flattens within a tenth of 1 Gbit/s; 1.02 allows the shaper's burst"),
        "x line",
        quote="TCP 윈도우 크기가 1 MB에 도달할 때부 터 사용가능 대역폭이 최대 대역폭에 "
              "근접하는 것을 볼 수 있다.",
        seed_line="002:110",
        quantity="per repetition: iperf3's received Mbit/s across the WAN (client to server, "
                 "-w the smallest window >= 1024 KiB of the sweep, tuned buffers, first second "
                 "omitted) over the line's TCP goodput; " + _SAMPLES,
        regime="TCP windows from 1 MB up (Fig. 2-1), the paper's tuned buffers (1 MB "
               "sysctls, 002:152-160), one flow; " + _WAN + ". " + _SCALED),
    "window_over_rtt": Claim(
        "window_over_rtt", "Below the BDP the bandwidth is about window / RTT",
        "window / RTT (Fig. 2-1's rising part)",
        Region.between(0.75, 1.25, "Fig. 2-1 draws the rising part along window / RTT; read "
                       "off a log-scale figure, a quarter either way"), "x window/RTT",
        quote="LFN에서는 기본적인 윈도우 크기 로는 파이프의 일부분만을 채우고. 이 "
              "세그먼트가 수신지까지 갔다 올 때까 지, 즉 Ack를 받을 때까지 대기하고, "
              "이것은 치명적인 성능 저하를 야기한다.",
        seed_line="002:86",
        quantity="per repetition: iperf3's received Mbit/s across the WAN at the smallest "
                 "window of the tuned sweep whose window / RTT is below half the line (-w, "
                 "first second omitted) over window / RTT (window in bytes x 8 / the scaled "
                 "RTT); " + _SAMPLES,
        regime="windows below the BDP (Fig. 2-1's rising part). The text states the mechanism "
               "(a window fills part of the pipe, then waits a round trip for the ACK), not "
               "the number window / RTT, which is the mechanism's consequence and what Fig. "
               "2-1's rising part follows; " + _WAN + ". " + _SCALED),
    "era_cap": Claim(
        "era_cap", "Untuned (the era's default buffers), the usable bandwidth is capped far "
        "below the line: 160.74 Mbit/s of 1 Gbit/s", "0.16 of the line",
        Region.stated(0.16, 0.01, "160.74 Mbit/s of the 1 Gbit/s line, as a fraction of the "
                      "line to the two figures the claim is about (0.16)"), "x line",
        quote="TCP 윈도우 크기 변경 전에는 160.74 Mbps의 사용가능 대역폭이 병목구간이 되어",
        seed_line="002:112,116",
        quantity="per repetition: iperf3's received Mbit/s across the WAN with autotuning (no "
                 "-w) under the paper's untuned buffers as it prints them (tcp_rmem "
                 "'302400 87380 302400', tcp_wmem '4096 87380 302400', core maxima 302400 B, "
                 "002:144-150) over the line's TCP goodput; " + _SAMPLES,
        regime="before the window change, one flow, the buffers the paper lists before tuning "
               "(maxima 302400 B = 0.5 BDP, 002:144-150); " + _WAN + ". Ours: Linux 6.1 "
               "(tcp_adv_win_scale 1: a window of about half the buffer) where the paper's "
               "kernel was 2.6.9. " + _SCALED),
    "nfs_untuned_capped": Claim(
        "nfs_untuned_capped", "Untuned, NFS across the WAN is capped by that usable bandwidth",
        "NFS <= usable bandwidth (160.74 Mbit/s)",
        Region.below(1.1, "'capped by' the untuned usable bandwidth: NFS at most that, with a "
                     "tenth for iperf3's and fio's different averaging"), "x usable",
        quote="160.74 Mbps의 사용가능 대역폭이 병목구간이 되어, 사용가능 대역폭에 수렴했지만",
        seed_line="002:116",
        quantity="per repetition: the better of NFS's sequential write and read (fio, one "
                 "client task, 1 MiB blocks, caches dropped before the read), MB/s x 8, "
                 "across the WAN under the era's buffers, over the same repetition's era "
                 "autotuned iperf3 Mbit/s; " + _SAMPLES,
        regime="NFS across the WAN before the window change; the paper's words are that NFS "
               "'converged to' (수렴) the usable bandwidth, which bounds it from above; the "
               "direction and client count are not stated; " + _WAN + ". " + _SCALED + "; "
               + _FS),
    "nfs_tuned_disk": Claim(
        "nfs_tuned_disk", "Tuned, NFS reads across the WAN reach 60-70 % of the disk's "
        "(Ext3's) read", "60-70 % of the disk (read: 70 of 110 MB/s, 002:252)",
        Region.between(0.6, 0.7, "the paper's own range, 60-70 %"), "x disk",
        quote="변경 후에는 디스크의 성능이 병목구간이 되어, NFS의 최대성능인 Ext3의 "
              "60~70% 성능을 나타내었다.",
        seed_line="002:116",
        quantity="per repetition: NFS's sequential read across the WAN (fio, 1 MiB blocks, "
                 "the best client count, tuned buffers) over fio's read on the server's NFS "
                 "disk, MB/s over MB/s; " + _SAMPLES,
        regime="NFS across the WAN after the window change (1 MB windows), against Ext3 on the "
               "server's disk. The 60-70 % is the read: the paper's NFS read 70 of the disk's "
               "110 MB/s (0.64), while its write reached 28 of 30 (0.93, 002:252; 26 MB/s "
               "'all of the disk', 002:379): see nfs_tuned_write; " + _WAN + ". "
               + _SCALED + "; " + _FS),
    "nfs_tuned_write": Claim(
        "nfs_tuned_write", "Tuned, NFS writes across the WAN reach about the disk's write "
        "(28 of 30 MB/s)", "about 28 MB/s of 30 (0.93 of the disk)",
        Region.about(0.93, 0.03, "'write 28 MB/s 정도' (about 28) of the disk's 30 MB/s: "
                     "27..29 of 30"), "x disk",
        quote="최대 read 70 MB/s, write 28 MB/s 정도를 보여주고 있다.",
        seed_line="002:252",
        quantity="per repetition: NFS's sequential write across the WAN (fio, 1 MiB blocks, "
                 "the best client count, tuned buffers) over fio's write on the server's NFS "
                 "disk, MB/s over MB/s; " + _SAMPLES,
        regime="Fig. 2-6: NFS from KGFS (KISTI) to PGFS (PNU) across the WAN, a RAID1 of "
               "write 30 / read 110 MB/s; " + _WAN + ". " + _SCALED + "; " + _FS),
    "mtu_gain": Claim(
        "mtu_gain", "MTU 9000: about 10 % more than 1500 can be expected (the paper's "
        "expectation, not its measurement; on a shaped line the headers cap the gain at "
        "+3.8 %: see mtu_header_bound)", "~+10 % expected",
        Region.about(10, 5, "'about 10 %' (10% 정도), an expectation"), "%",
        quote="점보프레임을 사 용학으로써 패킷 처리량이 감소하여 10% 정도의 성능 향상을 "
              "기대할 수 있 다.",
        seed_line="002:166",
        quantity="per repetition: iperf3's received Mbit/s across the WAN at MTU 9000 over "
                 "that at MTU 1500 (both wire ends set, tuned buffers, autotuned window), as a "
                 "gain in % on a log scale; " + _SAMPLES,
        regime="jumbo frames (9000 B) against 1500 B on the tuned WAN; the paper states the "
               "gain as what 'can be expected' (기대할 수 있다), not as its measurement, and "
               "gives the mechanism: fewer packets to process. On a line whose rate is the "
               "limit (ours, shaped, and the paper's 1 Gbit/s), fewer packets only save "
               "headers: goodput is 1448/1514 of the rate at 1500 and 8948/9014 at 9000, a gain "
               "of at most +3.8 %, below the region: the physical bound is judged beside it as "
               "mtu_header_bound; " + _WAN + ". " + _SCALED),
    "mtu_header_bound": Claim(
        "mtu_header_bound", "MTU 9000's gain over 1500 on the shaped line stays within what "
        "the saved headers allow (+3.8 %)", "-",
        Region.below(3.8 + 2.0, "our check, not the paper's: (8948/9014) / (1448/1514) = "
                     "+3.8 %, plus validity.SLACK (2 %) for the clocks"), "%", LAB,
        quantity="per repetition: the same MTU 9000 over MTU 1500 gain as mtu_gain; samples: "
                 "the repetitions"),
    "network_fine": Claim(
        "network_fine", "Five parallel flows reach 950-986 Mbit/s each way: the network is "
        "fine", "950..986 Mbit/s = 0.957..0.993 of the goodput at MTU 9000",
        # From the text alone (Table 2-5 and 002:352): the paper's flows ran at MTU 9000,
        # whose TCP goodput on 1 Gbit/s is 992.7 Mbit/s, so its 950..986 Mbit/s is
        # 0.957..0.993 of what the line carries. The region was moved after a verdict run
        # on 2026-11-25 (to ">= 0.95"); that is undone here (CHANGES).
        Region.between(950 / (1000 * GOODPUT_9000), 986 / (1000 * GOODPUT_9000),
                       "Table 2-5's 950..986 Mbit/s at MTU 9000 (002:352) over the goodput "
                       "of 1 Gbit/s at MTU 9000 (1000 x 8948/9014 = 992.7 Mbit/s)"), "x line",
        quote="모든 테스트베드 조합에 대해서 양방향으로 최고 대역폭인 1 Gbps에 근접하게 "
              "나타나며, 따 라서 네트워크의 영향으로 인한 성능의 저하는 아닌 것으로 보인다.",
        seed_line="002:358",
        quantity="per repetition: the slower direction of iperf3 with 5 parallel flows across "
                 "the WAN (client to server and -R, tuned buffers, the flows' received Mbit/s "
                 "summed) over the line's TCP goodput; " + _SAMPLES,
        regime="5 flows from one client to the 5 server nodes PGFS01..05 (002:356), each way, "
               "MTU 9000 and 1 MB windows (002:352), Table 2-5: 950..986 Mbit/s; "
               + _WAN + ". Ours: 5 flows between one client and one server at MTU 1500 "
               "(the WAN's smaller MTU), as a fraction of the goodput at MTU 1500; "
               + _SCALED),
    "pfs_lan_below_disk": Claim(
        "pfs_lan_below_disk", "On the LAN the parallel FS writes about 40 % below the raw disk",
        "~0.6 of the disk", Region.about(0.6, 0.1, "'about 40 % below' (0.6 of the disk)"),
        "x disk",
        quote="GPFS 자체의 오버헤드로 인해 성능이 40%가량 떨어지는 것을 볼 수있다.",
        seed_line="002:238",
        quantity="per repetition: the parallel FS's sequential write on the LAN (fio, 1 MiB "
                 "blocks, the best client count, tuned buffers) over fio's write on the "
                 "server's parallel-FS disk, MB/s over MB/s; " + _SAMPLES,
        regime="GPFS on the LAN (KGFS clients, 1 Gbit/s each, into the X4500's 4 Gbit/s, "
               "002:201), 4 GB files, 1 MB blocks, sequential (002:230), against Ext3 on its 8 "
               "disks at once (500 MB/s, 002:224); the direction is not stated (ours: write). "
               "The paper's LAN into the server (4 Gbit/s = 500 MB/s, 002:238) carried the "
               "disk's rate, so the 40 % is GPFS's own; ours is judged only where the LAN "
               "wire's measured ceiling is at least the parallel FS disk's write cap (else "
               "the ratio would be the wire's by construction: not testable). Ours: an "
               "unshaped LAN wire between the VMs; " + _FS),
    "pfs_wan_full_link": Claim(
        "pfs_wan_full_link", "Across the WAN the parallel FS reaches about the full link "
        "(115 MB/s on 1 Gbit/s)", "115 MB/s = 0.96 of the goodput",
        Region.between(0.9, 1.02, "115 MB/s of 119.6 MB/s TCP goodput (0.96), 'about': a "
                       "tenth below, the shaper's burst above"), "x line",
        quote="이론적으로 예상할 수 있는 최적의 성능을 나타내고 있어, 네트워크가 제공하는 "
              "성능을 모두 이용하는 것으로 판단된다.",
        seed_line="002:247",
        quantity="per repetition: the parallel FS's sequential write across the WAN (fio, "
                 "MB/s x 8, the best client count and block size, tuned buffers) over the "
                 "line's TCP goodput; " + _SAMPLES,
        regime="GPFS across the WAN (PGFS clients to the X4500, Fig. 2-5) against the 115 MB/s "
               "the paper expects of the full link (002:245), 4 GB files, 1 MB blocks; the "
               "direction is not stated (ours: write); " + _WAN + ". " + _SCALED + "; " + _FS),
    "nfs_falls": Claim(
        "nfs_falls", "NFS throughput falls as clients are added", "falls",
        Region.below(0.95, "falls: most clients below one client's, beyond a 5 % noise band"),
        "x one client",
        quote="NFS의 경우에 클라이언트 수가 증가함에 따라 성능이 계속해서 감소하며",
        seed_line="002:252",
        quantity="per repetition: NFS across the WAN with the most client tasks of the "
                 "profile (wan_clients) over that with the fewest, the geometric mean of the "
                 "write ratio and the read ratio (fio, 1 MiB blocks, tuned), MB/s over MB/s; "
                 + _SAMPLES,
        regime="Fig. 2-6: NFS from KGFS (KISTI) to PGFS (PNU), i.e. across the WAN, clients "
               "added (the figure's count is not in the text), both directions (read up to 70, "
               "write 28 MB/s on a RAID1 of 30/110 MB/s); " + _WAN + ". Ours: 1 against 9 "
               "tasks in the verdict profile; " + _SCALED + "; " + _FS),
    "pfs_scales": Claim(
        "pfs_scales", "The parallel FS scales as clients are added", "scales",
        Region.above(1.05, "scales: most clients above one client's, beyond a 5 % noise "
                     "band"), "x one client",
        quote="클라이언트 수가 증가함에 따라 write의 경우는 3에서 read의 경우는 2에서 최대 "
              "성능에 수렴되고 있다.",
        seed_line="002:232",
        quantity="per repetition: the parallel FS's sequential write on the LAN with the most "
                 "client tasks of the profile over that with the fewest (fio, 1 MiB blocks, "
                 "tuned), MB/s over MB/s; " + _SAMPLES,
        regime="Fig. 2-3: GPFS on the LAN, KGFS clients added (up to 4 machines), write rising "
               "until 3 clients; across the WAN the paper shows write growing in proportion to "
               "the tasks, to 101 MB/s at 9 (002:391,395: task_scaling). The sentence is about "
               "the LAN (KGFS in KISTI to the X4500 in KISTI, 002:232). Ours: 1 against 3 "
               "tasks on the LAN in the verdict profile; " + _FS),
    "task_scaling": Claim(
        "task_scaling", "Across the WAN the parallel FS's write grows with the tasks, to "
        "101 MB/s at 9 (Fig. 2-12)", "101 MB/s at 9 tasks = 0.845 of the goodput",
        Region.stated(101 * 8 / (1000 * GOODPUT_PER_WIRE), 8 / (1000 * GOODPUT_PER_WIRE),
                      "101 MBps of 1 Gbit/s's 119.6 MB/s TCP goodput"), "x line",
        quote="태스크 수가 9에 이를 때에는 101 MBps 까지 증가하여 네트워크를 거의 최 대로 "
              "사용하는 것을 볼 수 있다.",
        seed_line="002:395",
        quantity="per repetition: the parallel FS's sequential write across the WAN with 9 "
                 "client tasks (fio, 1 MiB blocks, tuned), MB/s x 8, over the line's TCP "
                 "goodput; " + _SAMPLES,
        regime="Fig. 2-12: KGFS client tasks (KISTI) to the PGFS server (PNU) across the WAN, "
               "tasks added up to 9; " + _WAN + ". Ours: 9 fio tasks in one client VM "
               "(wan_clients must include 9: the verdict profile's); " + _SCALED + "; "
               + _FS),
    "block_size": Claim(
        "block_size", "Block size has no effect on WAN throughput (115 MB/s throughout)",
        "no effect", Region.between(0.9, 1.1, "'no effect': the figure's bars agree within "
                                    "a tenth"), "x",
        quote="WAN 구간에서도 역시 블록크기에 따른 영향 없이 네트워크의 성능을 충분히 "
              "사용하여 115 MB/s의 성능을 나타내고 있다.",
        seed_line="002:263",
        quantity="per repetition: the parallel FS's sequential write across the WAN, one "
                 "client task, at the largest block size of the profile over that at the "
                 "smallest (fio, tuned), MB/s over MB/s; " + _SAMPLES,
        regime="Fig. 2-8: GPFS across the WAN (PGFS to the X4500), 4 GB files, sequential, "
               "block sizes of the figure (not in the text); the direction is not stated (ours: "
               "write); " + _WAN + ". Ours: 256 KiB against 4 MiB in the verdict profile; "
               + _SCALED + "; " + _FS),
    "block_size_lan": Claim(
        "block_size_lan", "Block size has no effect on LAN throughput", "no effect",
        Region.between(0.9, 1.1, "'no effect' (영향을 받지 않고 동일한 성능): the bars agree "
                       "within a tenth, as for the WAN"), "x",
        quote="LAN 구간에서 블록크기에 따라 영향을 받지 않고 동일한 성능을 보이며",
        seed_line="002:263",
        quantity="per repetition: the parallel FS's sequential write on the LAN, one client "
                 "task, at the largest block size over the smallest (fio, tuned), MB/s over "
                 "MB/s; " + _SAMPLES,
        regime="Fig. 2-7: GPFS on the LAN (KGFS to the X4500), 4 GB files, sequential; the "
               "direction is not stated (ours: write). Ours: measured when block_paths "
               "includes lan (the paper profile); " + _FS),
    "lan_saturation": Claim(
        "lan_saturation", "On the LAN write saturates at 3 clients and read at 2",
        "3 (write), 2 (read)", Region.between(2.5, 3.5, "a count of clients"), "clients",
        quote="클라이언트 수가 증가함에 따라 write의 경우는 3에서 read의 경우는 2에서 최대 "
              "성능에 수렴되고 있다.",
        seed_line="002:232",
        quantity="the client count at which write stops rising on the LAN; not measured here "
                 "(not testable: the reason gives the lab's measured wire and disk)",
        regime="Fig. 2-3: 4 KGFS machines, 1 Gbit/s each, into the X4500's 4 Gbit/s (002:201), "
               "whose disks read 500 MB/s on Ext3 (002:224). Ours: client tasks in one VM "
               "behind one wire, so where the server saturates cannot show"),
    "fs_on_path": Claim(
        "fs_on_path", "Each file-system point's data crossed the wire of the path it is "
        "labelled with (the client's interface counters during the point)", "-",
        Region.above(0.95, "our check, not the paper's: the bytes sent (write) or received "
                     "(read) on the path's interface, headers included, against the bytes "
                     "fio moved; a point routed over the other wire reads ~0"), "x", LAB,
        quantity="per file-system point: the client's byte counter of the point's own wire "
                 "(tx for a write, rx for a read, read in the same command as fio) over the "
                 "bytes fio moved; samples: the points (mean with an interval; the lowest "
                 "point named)"),
    "gpfs_bimodal": Claim(
        "gpfs_bimodal", "Testbed 2: write across the WAN is bimodal, 13 or 80 MB/s (a fault "
                        "inside GPFS)", "13 / 80 MB/s = 0.16",
        Region.between(12.5 / 80.5, 13.5 / 79.5, "the paper's two modes, 13 and 80 MBps, "
                       "each stated to 1 MB/s (± 0.5): the lower over the upper, "
                       "12.5/80.5..13.5/79.5"), "x",
        quote="write 연산에서 I/O 성능이 13 MBps와 80 MBps 로 양극화 되는 현상을 발견하였다.",
        seed_line="002:342",
        quantity="the lower mode of the WAN write's throughput over its upper mode; not "
                 "testable here: the modes come from a fault inside GPFS on mixed hardware, "
                 "which neither NFS nor GlusterFS in a lab has",
        regime="testbed 2: the GPFS_PDAISY server at PNU, KISTI's KGFS and KIGFS clusters as "
               "clients, 4 GB files, 256 KB blocks (002:331, 340), mixed hardware (002:291-296)"),
}


#: The design the claims rest on, fixed before data (:mod:`harness.registration`). The
#: profiles come from :mod:`harness.studies.s2_lab`, which the study imports too.
DESIGN = {
    "samples": "repetitions: every point of a sweep is measured once per repetition (a fresh "
               "iperf3 connection set; a fresh fio job, one file per task, written then read, "
               "caches dropped on both machines before the read; each file system mounted "
               "afresh per repetition and tuning); a claim's quantity is taken per repetition "
               "(ratios paired within it), then averaged over the repetitions",
    "order": "per repetition: the raw disks (write then read), then the tunings (era, tuned) "
             "in a new random order; within a tuning the windows, the two 5-flow directions, "
             "the MTUs, the file systems' (file system, path) mounts and each mount's points "
             "(client tasks x block size) each in a new random order (harness.studies.order."
             "MeasuringOrder from the run's seed, recorded in run.json); each point is written "
             "then read",
    "scale": "ratios on a log scale (geometric mean over repetitions); 95 % intervals, "
             "Student t below 10 repetitions, bootstrap from 10",
    "point_length": f"every point sized to {POINT_RTTS} round trips of the scaled WAN at its "
                    "expected rate (iperf3: -t that long after -O of "
                    f"{SLOW_START_RTTS} round trips; fio: files of {POINT_RTTS} RTTs at the "
                    "faster direction of the slower of disk and path, shared by the tasks); "
                    f"a claim counts only points of at least {MIN_RTTS} measured round trips; "
                    "each point's rtts and bdps are in the results",
    "validity": "every point against its wire and disk (harness.validity): WAN points against "
                "the scaled line's goodput at their MTU (+2 %), LAN points against the LAN "
                "wire's measured ceiling (+50 %: that ceiling is one 3 s iperf3 under a "
                "host load that varies 2-3x during a run), disk and file-system points against "
                "their disk's cap (+ one 2 MiB request and 0.1 s of the cap that QEMU's "
                "throttle admits ahead, over the point's bytes, +2 %)",
    "metric": {"network": "iperf3's received Mbit/s (slow start omitted) over the WAN's "
                          "TCP goodput at line rate: wan_rate_mbit x f x 1448/1514, f the "
                          "run's placement.scaling.factor; RTT wan_rtt_ms / f",
               "file system": "fio's MB/s, sequential, one file per client task; the raw "
                              "disks by fio on the server"},
    "fixed": {"wan_rate_mbit": 1000.0, "wan_rtt_ms": 4.8, "tunings": ("era", "tuned"),
              "file_systems": ("nfs", "pfs"), "mtus": (1500, 9000), "flows": 5,
              "drop_caches": True, "point_rtts": POINT_RTTS},
    "profiles": PROFILES,
    # the points each claim is judged on, by claim id
    "points": {
        "window_line_rate": "tuned, the smallest window >= 1024 KiB",
        "window_over_rtt": "tuned, the smallest window whose window / RTT < 0.5 of the line",
        "era_cap": "era, autotuning (no -w)",
        "nfs_untuned_capped": "era: NFS across the WAN, one task, 1 MiB blocks, the better of "
                              "write and read, over era autotuning",
        "nfs_tuned_disk": "tuned: NFS read across the WAN, 1 MiB blocks, the best client "
                          "count, over the NFS disk's read",
        "nfs_tuned_write": "tuned: NFS write across the WAN, 1 MiB blocks, the best client "
                           "count, over the NFS disk's write",
        "mtu_gain": "tuned, autotuning: MTU 9000 over 1500",
        "mtu_header_bound": "tuned, autotuning: MTU 9000 over 1500",
        "network_fine": "tuned: 5 flows, the slower direction",
        "pfs_lan_below_disk": "tuned: parallel FS write on the LAN, 1 MiB blocks, the best "
                              "client count, over its disk's write (only where the LAN "
                              "ceiling >= the disk's write cap)",
        "pfs_wan_full_link": "tuned: parallel FS write across the WAN, the best client count "
                             "and block size",
        "nfs_falls": "tuned: NFS across the WAN, the most client tasks over the fewest, write "
                     "and read",
        "pfs_scales": "tuned: parallel FS write on the LAN, the most client tasks over the "
                      "fewest",
        "task_scaling": "tuned: parallel FS write across the WAN, 9 tasks, 1 MiB blocks",
        "block_size": "tuned: parallel FS write across the WAN, one task, the largest block "
                      "over the smallest",
        "block_size_lan": "tuned: parallel FS write on the LAN, one task, the largest block "
                          "over the smallest",
        "lan_saturation": "none: client tasks in one VM (not testable here)",
        "fs_on_path": "every file-system point (tuned and era)",
        "gpfs_bimodal": "none: needs GPFS (not testable here)",
    },
}

_REVIEW = "issue 24's review against the seed (2026-11-26)"

#: Changes of a claim or of the design after archived runs existed.
CHANGES = (
    DesignChange(
        date="2026-11-26", claims=("fs_on_path",),
        what="fs_on_path's source: target -> lab (met / not met, shown with the checks of the "
             "lab); its quantity, region and points unchanged",
        why="it checks the lab (that each point's bytes crossed the wire it is labelled with), "
            "which is what source 'lab' means since the protocol distinguished the two; it "
            "was never an engineering target of ours, and the code already called it 'our "
            "check, not the paper's'"),
    DesignChange(
        date="2026-11-26",
        what="points sized in round trips of the scaled WAN, not seconds: 50 RTTs at the "
             "expected rate (iperf3 after omitting 10 RTTs of slow start), and only points of "
             ">= 30 measured RTTs count; point_seconds and window_seconds replaced by "
             "point_rtts; rtts and bdps recorded per point",
        why=_REVIEW + ": 3-second points were single 1 MiB NFS files (~1.7 BDP, ~14 RTTs) and "
            "iperf3 points ~10 RTTs half in slow start, where the paper moved 4 GB (~6800 "
            "BDP); the disks' read cap also leaked on such short files (a raw read of 17.2 "
            "MB/s against a 1.31 MB/s cap: QEMU's throttle admits the first request whole)"),
    DesignChange(
        date="2026-11-26", claims=("era_cap",),
        what="the era's buffers: the paper's printed listing (maxima 302400 B, 002:144-150) "
             "instead of Linux 2.6's defaults (131071..174760 B); era_cap's region 0.1..0.3 "
             "-> 0.155..0.165 (the paper's 160.74 Mbit/s of 1 Gbit/s to two figures)",
        why=_REVIEW + ": the paper prints its untuned buffers, and the substitute (whose "
            "windows the old region was derived from) manufactured agreement with 160.74 "
            "Mbit/s; the region now comes from the paper's number, not from our buffers"),
    DesignChange(
        date="2026-11-26", claims=("nfs_tuned_disk", "nfs_tuned_write"),
        what="nfs_tuned_disk judged on the read (NFS read over the disk's read); new "
             "nfs_tuned_write: NFS write over the disk's write, about 0.93 (28 of 30 MB/s)",
        why=_REVIEW + ": the paper's 60-70 % is its read (70 of 110 MB/s), while its NFS "
            "write reached ~0.93 of the disk (002:252, 379)"),
    DesignChange(
        date="2026-11-26", claims=("mtu_gain", "mtu_header_bound"),
        what="mtu_gain stated as the paper's expectation; new lab check mtu_header_bound: the "
             "gain within the +3.8 % the saved headers allow on a shaped line (+2 % slack); "
             "MTU points checked against their wire at their MTU",
        why=_REVIEW + ": 'about 10 % can be expected' is an expectation, and a rate-limited "
            "line caps the gain at (8948/9014)/(1448/1514) = +3.8 %; the report shows both"),
    DesignChange(
        date="2026-11-26", claims=("network_fine",),
        what="network_fine's region: >= 0.95 -> 0.957..0.993 of the goodput, from Table 2-5 "
             "(950..986 Mbit/s) at the paper's MTU 9000 (002:352) over 1 Gbit/s's goodput at "
             "MTU 9000",
        why="the region was first 0.95..1.0 and moved to >= 0.95 on 2026-11-25 after a verdict "
            "run read 1.00x [0.99, 1.00] (commit 4607b76): a region chosen after a run. It is "
            "now derived from the text alone (" + _REVIEW + ")"),
    DesignChange(
        date="2026-11-26", claims=("nfs_falls", "pfs_scales", "task_scaling"),
        what="nfs_falls judged across the WAN (wan_clients, most over fewest, write and read); "
             "the verdict profile sweeps 1 and 9 WAN tasks; new task_scaling (Fig. 2-12, 9 "
             "tasks -> 101 MB/s); pfs_scales stays on the LAN (002:232 is Fig. 2-3, KGFS to "
             "the X4500 inside KISTI)",
        why=_REVIEW + ": 'NFS falls as clients are added' is Fig. 2-6, KGFS to PGFS across "
            "the WAN, not the disk-bound LAN"),
    DesignChange(
        date="2026-11-26", claims=("pfs_lan_below_disk", "lan_saturation", "gpfs_bimodal",
                                   "block_size_lan"),
        what="pfs_lan_below_disk judged only where the LAN wire's measured ceiling is at least "
             "the parallel FS disk's write cap (else not testable, with both numbers); "
             "lan_saturation's reason gives the measured wire and disk; gpfs_bimodal's region "
             "from the text (13 over 80 MB/s); new block_size_lan (Fig. 2-7), measured when "
             "block_paths includes lan",
        why=_REVIEW + ": the unshaped LAN (2.5x the line) under a disk at 4x put the parallel "
            "FS's LAN write near 0.6 of the disk by construction; a placeholder region (0..0, "
            "rule '-') is not a registration"),
    DesignChange(
        date="2026-11-26",
        what="the tunings' order shuffled per repetition (each repetition measures both; the "
             "file systems are mounted per repetition and tuning), the 5-flow directions and "
             "the mounts shuffled too; every point checked against its wire and disk "
             "(invalid, never inconclusive); verdict profile: 3 repetitions (was 4), windows "
             "64, 1024, 4096 KiB (was seven), WAN tasks 1 and 9; NFS on the LAN at the fewest "
             "tasks only (no claim rests on it since nfs_falls moved to the WAN); quick: one "
             "task per path and windows 64 and 1024 KiB",
        why=_REVIEW + ": a fixed tuning order lets drift fall on one tuning; 50-RTT points "
            "make a verdict repetition ~12-13 min here (a quick run at f = 0.038 under load "
            "2-6), and the verdict run must stay within ~45 min (fixed before the run)"),
)
