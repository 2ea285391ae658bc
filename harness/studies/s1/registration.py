"""S1's registration: the paper's claims (quoted, with their seed lines, quantities, regimes
and regions) and the design fixed before data; every change made after archived runs existed
is in :mod:`harness.studies.s1.changes`.

Kept apart from :mod:`harness.studies.s1.analysis` (which judges them) so the registration
reads as one document; the analysis and the study import it from here.
"""

from __future__ import annotations

from ...verdicts.claims import Claim, Region

# The paper's numbers, read from its text (section 3, Fig. 2 and Fig. 4).
PAPER = {"mvia_4b_us": 42.0, "tcp_4b_us": 58.0, "clan_4b_us": 10.0}
SMALL_MAX = 1024  # "small messages": one Ethernet frame at MTU 1500 (powers of two <= 1460 B)
BW_SMALL_MAX = 512  # the paper: "512바이트 이하" (512 bytes and below)
LARGE_MIN = 8192  # "large messages": several frames even at MTU 9000
IRREGULAR_RATIO = 2.0
#: "Both stacks run into the wire" (bw_large's regime): each stack's large-message goodput at
#: least this share of the payload its framing carries over the shaped wire. At 90 % the wire
#: is busy nine tenths of the time, so it, not the host, sets the rate; below that the host's
#: per-message cost does and a ratio compares CPUs. Fixed from those words on 2026-11-27,
#: before any run with a shaped wire existed.
WIRE_BOUND_FRACTION = 0.9
#: The bandwidth claims' TCP (since 2026-11-27): msgcount, a C program sending the same count
#: of messages as ib_send_bw's -n, timed the same way; Nagle on, as qperf before it.
BW_TCP = "tcp-count"

LABELS = {
    "verbs-send": "verbs send/recv (Soft-RoCE, polling)",
    "verbs-write": "verbs RDMA write (Soft-RoCE, polling)",
    "verbs-send-events": "verbs send/recv (Soft-RoCE, events)",
    "verbs-send-bw": "verbs send/recv (Soft-RoCE)",
    "verbs-write-bw": "verbs RDMA write (Soft-RoCE)",
    "tcp-nodelay": "TCP, TCP_NODELAY",
    "tcp-nagle": "TCP, Nagle on",
    "tcp-qperf": "TCP, qperf (C; Nagle on)",
    "tcp-count": "TCP, msgcount (C; Nagle on; ib_send_bw's count)",
    "tcp-count-nodelay": "TCP, msgcount (C; TCP_NODELAY; ib_send_bw's count)",
}
HARDWARE = ("needs a hardware RDMA device (InfiniBand, RoCE or iWARP NIC), which plays cLAN's "
            "part; this lab has Soft-RoCE between two emulated machines only. On machines from "
            "an inventory with such a NIC the same notebook measures it")

# The paper's platform (001:44): Intel L440GX+, Pentium III-500, Linux 2.2.16 (UP); latency
# is half a round trip, bandwidth the data sent per unit time from sender to receiver.
_PLATFORM = ("Pentium III-500, Linux 2.2.16 UP (001:44); latency half a round trip, bandwidth "
             "data per unit time sender to receiver")
_WIRE_VMS = ("ours: Soft-RoCE (verbs emulated in the kernel, M-VIA's role) and kernel TCP over "
             "one virtio wire (unshaped unless wire_mbit shapes it: htb at both ends) between "
             "two TCG-emulated VMs")
_EMULATION = ("MTU 1500; emulation multiplies every absolute time, so ratios, not microseconds, "
              "are compared")
_OURS = (_WIRE_VMS + ", each with both its vCPUs online (the rows of the cpus=2 level; the "
         "1-CPU level serves s1.smp_latency_larger only), " + _EMULATION)
_SAMPLES = ("samples: the repetitions (every method over every size in each, methods in a "
            "shuffled order; fresh perftest processes and a fresh TCP connection per method), "
            "geometric mean with a Student t (< 10) or bootstrap interval")

CLAIMS = {
    "latency_4b": Claim(
        "s1.latency_tcp_over_verbs_4b",
        "TCP / software verbs latency at 4 B (half round trip; M-VIA's heir: Soft-RoCE "
        "send/recv, polling)", "58/42 us, TCP ~1.4x",
        Region.about(1.4, 0.1, "M-VIA 'about 42 us', TCP 'about 58 us' at 4 B: 58/42 = 1.38, "
                               "i.e. TCP about 1.4x"), "x",
        quote="메시지 크기가 4바이트(bytes)인 경우 M-VIA는 약 42μs, TCP/IP는 약 58μs의 "
              "지연시간을 보인다.",
        seed_line="001:52",
        quantity="per repetition: qperf tcp_lat's mean half round trip at 4 B (C, like "
                 "perftest; 1 s of round trips) over ib_send_lat's mean half round trip at "
                 "4 B (send/recv, polling), both in us; the harness's Python ping-pong "
                 "(TCP_NODELAY, medians) as a cross-check in the note; " + _SAMPLES,
        regime="4-byte messages; M-VIA and TCP/IP on the same NIC (Intel eepro/100, Fast "
               "Ethernet, 001:52); " + _PLATFORM + ". " + _OURS),
    "latency_every_size": Claim(
        "s1.verbs_below_tcp_every_size",
        "software verbs latency below TCP at every size (smallest TCP/verbs ratio over the "
        "sizes)", "lower at every size",
        Region.above(1.0, "the paper: '모든 메시지 크기에서 M-VIA가 TCP/IP보다 작은 지연시간' "
                          "(M-VIA lower at every size): the smallest ratio above 1"), "x",
        quote="모든 메시지 크기에서 M-VIA가 TCP/IP보다 작은 지연시간을 보였다.",
        seed_line="001:52",
        quantity="per repetition: the smallest, over the measured sizes, of qperf tcp_lat's "
                 "mean half round trip over ib_send_lat's mean half round trip (send/recv, "
                 "polling); the Python ping-pong's ratio as a cross-check; " + _SAMPLES,
        regime="every message size of Fig. 2 (the text names no range; the figure's axis is "
               "not in the seed's text); same NIC and platform as at 4 B: " + _PLATFORM
               + ". Ours: the profile's sizes (quick 4..16384 B, verdict 4..65536 B, paper "
               "1 B..1 MB); " + _OURS),
    "nagle_irregular": Claim(
        "s1.tcp_nagle_irregular",
        "TCP small-message bandwidth irregular with Nagle, regular with TCP_NODELAY "
        "(irregularity Nagle / TCP_NODELAY)", "irregular vs regular",
        Region.above(IRREGULAR_RATIO, "the paper says it in words only ('불규칙한 성능' "
                     "irregular; with TCP_NODELAY '불규칙성이 사라진다' the irregularity "
                     "disappears); we read that as the Nagle curve at least twice as rough as "
                     "the TCP_NODELAY curve (roughness: RMS distance, in doublings, of each "
                     "interior point from the line through its neighbours in log2 bandwidth "
                     f"against log2 size, sizes <= {SMALL_MAX} B)"), "x",
        quote="대역폭의 경우 TCP는 Nagle 알고리즘[6]의 영향으로 작은 메시지의 경우 불규칙한 "
              "성능을 보이나 TCP_NODELAY 소켓 옵션을 사용하여 Nagle 알고리즘을 사용하지 "
              "않으면 불규칙성이 사라진다.",
        seed_line="001:54,56",  # one sentence, broken over two lines of the seed
        quantity="per repetition: the irregularity (RMS distance of each interior point's "
                 "log2 Mbit/s from the line through its neighbours in log2 Mbit/s against "
                 f"log2 size, sizes <= {SMALL_MAX} B, at least 3 sizes) of TCP streaming "
                 "with Nagle on over that with TCP_NODELAY (the harness's streaming tool, one "
                 "connection per run); " + _SAMPLES,
        regime="TCP's bandwidth for small messages (the text names no size; Fig. 3), Nagle's "
               "algorithm on against TCP_NODELAY, Fast Ethernet (eepro/100); " + _PLATFORM
               + f". Ours: sizes <= {SMALL_MAX} B (one frame at MTU 1500); " + _OURS),
    "bw_small": Claim(
        "s1.verbs_bw_better_small",
        f"software verbs / TCP bandwidth at <= {BW_SMALL_MAX} B (geometric mean over sizes)",
        "better <= 512 B",
        Region.above(1.0, "the paper: '512바이트 이하의 메시지에 대해 M-VIA의 대역폭이 우수' "
                          "(M-VIA's bandwidth better at 512 B and below): above 1"), "x",
        quote="512바이트 이하의 메시지에 대해 M-VIA의 대역폭이 우수하고",
        seed_line="001:56",
        quantity=f"per repetition: the geometric mean over the sizes <= {BW_SMALL_MAX} B of "
                 "ib_send_bw's average Mbit/s (send/recv, bw_iterations messages) over "
                 "msgcount's (C; the same bw_iterations messages, first write to the "
                 "receiver having the last, as ib_send_bw times first post to last completion; "
                 "Nagle on, as qperf's tcp_bw before it) at the same size; msgcount with "
                 "TCP_NODELAY, qperf tcp_bw (1 s) and the Python streaming tool (TCP_NODELAY) "
                 "as cross-checks; " + _SAMPLES,
        regime="messages of 512 bytes and below, M-VIA against TCP/IP on one eepro/100 (Fast "
               "Ethernet, 100 Mbit/s); " + _PLATFORM + f". Ours: the profile's sizes <= "
               f"{BW_SMALL_MAX} B (4, 64, 512 B in quick and verdict); " + _OURS),
    "bw_large": Claim(
        "s1.verbs_bw_large",
        f"software verbs / TCP bandwidth at >= {LARGE_MIN} B (geometric mean over sizes)",
        "slightly better for large",
        Region.above(1.0, "the paper: '큰 메시지의 경우에도 다소 우수' (for large messages "
                          "too, somewhat better): better, so above 1; the text puts no number "
                          "on 'somewhat', so no upper bound is read into it"), "x",
        quote="큰 메시지의 경우에도 다소 우수하다.",
        seed_line="001:56",
        quantity=f"per repetition: the geometric mean over the sizes >= {LARGE_MIN} B of "
                 "ib_send_bw's average Mbit/s (send/recv, bw_iterations messages) over "
                 "msgcount's (C; the same bw_iterations messages; Nagle on) at the same size; "
                 "msgcount with TCP_NODELAY, qperf tcp_bw (1 s) and the Python streaming tool "
                 "(TCP_NODELAY) as cross-checks; " + _SAMPLES,
        regime="large messages (the text names no size: Fig. 3's upper sizes), where both "
               "stacks run into the 100 Mbit/s Fast Ethernet wire; " + _PLATFORM + f". Ours: "
               f"sizes >= {LARGE_MIN} B (several frames even at MTU 9000) up to the profile's "
               "largest (16384 B quick, 65536 B verdict), judged only where both stacks are "
               "wire-bound: the wire shaped (wire_mbit, the rate the lab built after any "
               "scaling) and, at every such size, each stack's median goodput over the "
               f"repetitions at least {WIRE_BOUND_FRACTION:.0%} of the payload its framing "
               "carries over that wire (TCP 1448 B per 1514-byte frame, RoCE v2 1024 B per "
               "1082 at MTU 1500); otherwise not testable, naming the measured rates and the "
               "wire. Unshaped (the lab's default) the wire's rate is the emulated CPU's: both "
               "stacks are CPU-bound, not wire-bound; " + _OURS),
    "polling_latency": Claim(
        "s1.polling_lowers_latency",
        f"events / polling latency, verbs send/recv, sizes <= {SMALL_MAX} B", "polling lower",
        Region.above(1.0, "the paper: polling '지연시간을 줄일 수 있다' (can reduce latency): "
                          "events slower, ratio above 1"), "x",
        quote="데이터를 송수신 할 때 송수신 완료시점까지 기다리지 않고 계속 확인하는 "
              "방법(polling)을 사용하면 지연시간을 줄일 수 있다.",
        seed_line="001:64",
        quantity=f"per repetition: the geometric mean over the sizes <= {SMALL_MAX} B of "
                 "ib_send_lat -e's (completion events) typical half round trip over "
                 "ib_send_lat's (polling the CQ); " + _SAMPLES,
        regime="said in words in the section on Berkeley VIA and cLAN (001:64), with no figure, "
               "size, implementation or number: polling for the completion instead of waiting "
               f"for it. Ours: Soft-RoCE send/recv at sizes <= {SMALL_MAX} B; under TCG the "
               "busy poll competes with the emulated kernel that does rxe's work; " + _OURS),
    "polling_cpu": Claim(
        "s1.polling_costs_cpu",
        "CPU share of the client's process while it measures, polling minus events "
        "(percentage points)", "polling costs CPU",
        Region.above(50.0, "the paper: polling 'CPU를 사용하기 때문에' (uses the CPU while "
                           "it polls): the poller is on the CPU for the whole of its waits, "
                           "which are most of a round trip, where a client sleeping on events "
                           "is not; read as more than half of its round trips' time on the CPU "
                           "beyond the events client's share (above 50 percentage points). A "
                           "client doing nothing extra scores 0 and cannot pass"), "%",
        quote="이 방법은 폴링하는 동안 CPU를 사용하기 때문에",
        seed_line="001:64",
        quantity="per repetition: the client perftest thread's CPU share during its measured "
                 "exchanges only (CPU time from /proc/PID/schedstat and the scheduler's clock "
                 "that counts it, both read when perftest prints its results header, after "
                 "set-up, and again at its result row), CPU over elapsed time with all sizes "
                 "of the latency sweep summed, "
                 "ib_send_lat (polling) minus ib_send_lat -e (events), in percentage points; "
                 "arithmetic mean over the repetitions with a t or bootstrap interval",
        regime="said in words (001:64), no figure or number: polling uses the CPU while it "
               "polls, unsuited to a heavily loaded system. Ours: the client's process only "
               "(the server's is not summed), every size of the latency sweep; " + _OURS),
    "smp": Claim(
        "s1.smp_latency_larger",
        "latency with the kernel on 2 CPUs over on 1 CPU, verbs and TCP (geometric mean over "
        "sizes and both stacks)", "SMP latency larger overall",
        Region.above(1.0, "the paper: with an SMP kernel '지연시간이 전체적으로 커지는' "
                          "(latency becomes larger overall, 001:52): a direction only, no "
                          "number; 'overall' read as over the sizes and both stacks of the "
                          "experiment (M-VIA and TCP/IP), so their geometric mean of SMP "
                          "over UP latency above 1"), "x",
        quote="동일한 실험을 SMP 커널을 사용하여 수행하면 지연시간이 전체적으로 커지는 것을 "
              "관찰할 수 있다.",
        seed_line="001:52",
        quantity="per repetition: the geometric mean, over the profile's sizes and the two "
                 "stacks, of the mean half round trip with both vCPUs online over that with "
                 "CPU 1 offline in both VMs, paired within the repetition, for verbs "
                 "ib_send_lat -e (completion events) and qperf tcp_lat (both means); "
                 "ib_send_lat polling's ratio and each stack's alone as cross-checks in the "
                 "note; " + _SAMPLES + " (the two CPU levels in a new random order in each)",
        regime="the paper's latency experiment (M-VIA and TCP/IP on one eepro/100, Fig. 2) "
               "run with an SMP build of Linux 2.2.16 instead of the UP build it reports "
               "(001:44, 001:52) on an Intel L440GX+, a dual-processor board (the text does "
               "not say a second CPU was fitted or used); no size or number. Ours: one stock "
               "Debian 6.1 SMP kernel in each VM, run on 1 online vCPU (CPU 1 taken offline "
               "in both VMs, journalled, brought back) against 2, under TCG on a 2-core host "
               "that both VMs' vCPU threads share with other jobs. The kernel build is the "
               "same at both levels (an SMP build cannot be swapped for a UP one here), so "
               "what varies is the number of CPUs it runs on, not UP against SMP code; with 2 "
               "vCPUs per VM four emulator threads share two host cores, with 1 two do, so "
               "emulation may favour either level. Completion events, not polling: on one "
               "CPU a busy poll competes with the kernel doing Soft-RoCE's work (DESIGN "
               "completion), which would make '1 CPU slower' an artefact; " + _WIRE_VMS
               + ", " + _EMULATION),
    "hw_latency": Claim(
        "s1.hardware_latency_4b", "hardware VIA/RDMA latency at 4 B, against software verbs",
        "cLAN ~10 us, ~4x below M-VIA",
        Region.about(4.2, 0.1, "42/10 = 4.2: cLAN 'about 10 us' against M-VIA 'about 42 us'"),
        "x",
        quote="cLAN의 경우는 4바이트를 전송할 때 약 10μs의 지연시간이 있고",
        seed_line="001:64",
        quantity="the software verbs' 4 B half round trip over a hardware RDMA NIC's (cLAN's "
                 "heir), paired per repetition; needs an RDMA NIC, which this lab has not",
        regime="4-byte messages, Giganet cLAN1000 (hardware VIA, 001:64) against M-VIA's "
               "'about 42 us' (001:52) on the same platform: " + _PLATFORM),
    "hw_bandwidth": Claim(
        "s1.hardware_bandwidth", "hardware VIA/RDMA bandwidth far above firmware/software VIA",
        "cLAN far above B-VIA",
        Region.above(2.0, "the paper: '월등히 우수' (far better, 001:72) and no number; 'far' "
                          "is more than 'better' (above 1): read as at least twice, a rule "
                          "fixed in words before any data (no RDMA NIC has measured it)"),
        "x",
        quote="cLAN의 대역폭이 B-VIA의 대역폭보다 월등히 우수하다.",
        seed_line="001:72",
        quantity="a hardware RDMA NIC's bandwidth over the software verbs', per size, paired "
                 "per repetition; needs an RDMA NIC, which this lab has not",
        regime="message sizes up to the MTU (001:70), Giganet cLAN (hardware VIA) against "
               "Berkeley VIA (Myrinet firmware); " + _PLATFORM),
}


#: The design the claims rest on, fixed before data (:mod:`harness.verdicts.registration`). The
#: profiles are written out here, not imported: ``s1`` imports this module (for its claims),
#: so importing ``s1`` back would close an import circle; a unit test holds them equal to
#: ``s1.PROFILES`` and to the methods each profile measures.
DESIGN = {
    "samples": "repetitions: each measures every method over every size of the profile "
               "(fresh perftest processes at both ends per size, one fresh TCP connection per "
               "TCP method); a claim's quantity is taken within a repetition (paired), then "
               "averaged over the repetitions",
    "order": "the methods in a new random order in each repetition "
             "(harness.studies.order.MeasuringOrder from the run's seed, recorded in run.json; "
             "each row keeps its position), and the sizes in a new random order for each "
             "method (drawn from the same generator; each row keeps its size_position): a "
             "perftest sweep runs its sizes as invocations of their own in one script per "
             "end, in that order; the ping-pong client measures its sizes in the order given",
    "completion": "verbs latency is measured both ways in every repetition: polling the CQ "
                  "(ib_send_lat, perftest's default) and sleeping on completion events "
                  "(ib_send_lat -e); the paper names polling only for Berkeley VIA and cLAN "
                  "(001:64, and for their bandwidth 001:72) and does not say which its M-VIA "
                  "figures against TCP/IP used (001:52), so the verbs against TCP claims use "
                  "polling and events are drawn beside it (the figure, and the TCP/events ratio "
                  "in the latency claims' notes as a cross-check). Under TCG "
                  "polling is pathological: the busy poll competes for the emulated vCPU with "
                  "the kernel that does Soft-RoCE's work (~1.0-1.2 ms small-message half round "
                  "trips polling against ~0.55 ms with events in the runs of 2026-11-26), so "
                  "a polling/events ratio measures emulation as much as completion modes",
    "wire": "wire_mbit (default 0: unshaped) shapes the wire with htb on both ends' egress "
            "(scaled like any shaped link to the VMs' measured wire ceiling; the run records "
            "the rate built). When shaped, every bandwidth point is checked against the payload "
            "its stack's framing carries over that rate (TCP: harness.validity.check_rate; "
            "RoCE v2: its own 58-byte framing, s1_validity.check_verbs_rate, same slack); a "
            "faster point is invalid. s1.verbs_bw_large counts only where both stacks reach "
            f"{WIRE_BOUND_FRACTION:.0%} of their payload bound at every size >= {LARGE_MIN} B "
            "(medians over the repetitions)",
    "smp": "a second factor, cpus, levels 1 and 2 (parameter cpus, every profile (1, 2)), "
           "for s1.smp_latency_larger (001:52). In each repetition the levels run in a random "
           "order (the run's MeasuringOrder, drawn before the methods' order of each level; "
           "each row keeps its level in 'cpus' and the level's position in 'cpus_position'). "
           "Level 1: CPU 1 taken offline in both VMs (harness.config.cpu, journalled, restored "
           "to what was found when the level ends, also on error); level 2: both online. The "
           "online CPUs are read back in both VMs before each level measures (run.json). At "
           "level 2 every method of the profile is measured, exactly as before this factor: "
           "every other claim rests on those rows only (cpus=2, today's 2 vCPUs). At level 1 "
           "only the methods the SMP claim and its cross-check need: ib_send_lat -e (events), "
           "qperf tcp_lat (its sweep without tcp_bw) and ib_send_lat (polling, the "
           "cross-check), each at every size of the profile, sizes shuffled as at level 2. "
           "Why events and qperf, not polling: on one CPU a busy poll competes with the kernel "
           "doing Soft-RoCE's work (see completion), so '1 CPU slower' with polling would be "
           "an artefact of polling, not of the kernel's CPUs. A machine whose CPU 1 cannot "
           "go offline stops the run before anything is configured (one error; run with "
           "cpus=2 and the claim is not testable). A latency point of the claim's stacks "
           "missing or not above 0 at either level is a failed point (validity.Invalid: the "
           "claim is invalid), never dropped from the mean. Registered 2026-11-27 before any data of "
           "it existed",
    "scale": "ratios on a log scale: geometric means over sizes within a repetition and over "
             "repetitions; 95 % intervals, Student t below 10 repetitions, bootstrap from 10",
    "metric": {"latency": "mean half round trip, us (perftest t_avg against qperf tcp_lat, "
                          "which reports means only); the Python ping-pong's median against "
                          "perftest t_typical as the cross-check",
               "bandwidth": "average Mbit/s (ib_send_bw BW average over bw_iterations "
                            "messages; msgcount over the same count; qperf tcp_bw over 1 s; "
                            "the Python streaming tool's "
                            "bytes over its time as the cross-check)",
               "tcp_tool": "qperf (C) judges the latency claims and msgcount (C) the "
                           "bandwidth claims, like perftest (C); the harness's Python tool is "
                           "a cross-check there and judges "
                           "the Nagle claim alone: qperf has no TCP_NODELAY switch, so Nagle "
                           "on against off is TCP against TCP in one tool, one interpreter",
               "counts": "equal for the bandwidth claims: ib_send_bw sends bw_iterations "
                         "messages (-n) and msgcount the same count, each timed from its "
                         "first send to the receiver having the last (perftest: the last "
                         "completion; msgcount: the receiver's one-byte acknowledgement once "
                         "it read them all). qperf's tcp_bw (a cross-check) runs a duration "
                         "(-t qperf_seconds): its -n hangs its socket tests (measured "
                         "2026-11-27)",
               "cpu": "the client perftest thread's CPU time (/proc/PID/schedstat) over the "
                      "time (on the scheduler's clock) of its measured exchanges (results header to result row), "
                      "all sizes summed"},
    "profiles": {
        "quick": {"sizes": (4, 64, 512, 16384), "repetitions": 2, "iterations": 50,
                  "bw_iterations": 50, "tcp_budget_s": 0.05, "rdma_write": False,
                  "cpus": (1, 2),
                  "methods": ("verbs-send", "verbs-send-events", "verbs-send-bw",
                              "tcp-nodelay", "tcp-nagle", "tcp-qperf",
                              "tcp-count", "tcp-count-nodelay"),
                  "smp_methods": ("verbs-send", "verbs-send-events", "tcp-qperf")},
        "verdict": {"sizes": (4, 64, 512, 1024, 8192, 65536), "repetitions": 10,
                    "iterations": 300, "bw_iterations": 300, "tcp_budget_s": 0.1,
                    "rdma_write": False, "cpus": (1, 2),
                    "methods": ("verbs-send", "verbs-send-events", "verbs-send-bw",
                                "tcp-nodelay", "tcp-nagle", "tcp-qperf",
                              "tcp-count", "tcp-count-nodelay"),
                    "smp_methods": ("verbs-send", "verbs-send-events", "tcp-qperf")},
        "paper": {"sizes": tuple(1 << i for i in range(21)), "repetitions": 10,
                  "iterations": 1000, "bw_iterations": 1000, "tcp_budget_s": 0.2,
                  "rdma_write": True, "cpus": (1, 2),
                  "methods": ("verbs-send", "verbs-write", "verbs-send-events",
                              "verbs-send-bw", "verbs-write-bw", "tcp-nodelay", "tcp-nagle", "tcp-qperf",
                              "tcp-count", "tcp-count-nodelay"),
                  "smp_methods": ("verbs-send", "verbs-send-events", "tcp-qperf")},
    },
    # the points each claim is judged on, by claim id
    "points": {
        "s1.latency_tcp_over_verbs_4b": "4 B; tcp-qperf over verbs-send (means)",
        "s1.verbs_below_tcp_every_size": "every measured size, the smallest ratio; "
                                         "tcp-qperf over verbs-send (means)",
        "s1.tcp_nagle_irregular": f"sizes <= {SMALL_MAX} B, at least 3; tcp-nagle over "
                                  "tcp-nodelay (streaming)",
        "s1.verbs_bw_better_small": f"sizes <= {BW_SMALL_MAX} B; verbs-send-bw over "
                                    f"{BW_TCP} (the same count of messages)",
        "s1.verbs_bw_large": f"sizes >= {LARGE_MIN} B; verbs-send-bw over {BW_TCP} (the same "
                             "count of messages)",
        "s1.polling_lowers_latency": f"sizes <= {SMALL_MAX} B; verbs-send-events over "
                                     "verbs-send",
        "s1.polling_costs_cpu": "every size of the latency sweep, summed; verbs-send minus "
                                "verbs-send-events",
        "s1.smp_latency_larger": "every measured size; verbs-send-events and tcp-qperf "
                                 "(tcp_lat means) at cpus 2 over cpus 1; verbs-send's ratio "
                                 "as the cross-check",
        "s1.hardware_latency_4b": "none: needs an RDMA NIC (not testable here)",
        "s1.hardware_bandwidth": "none: needs an RDMA NIC (not testable here)",
    },
}
