"""S4's fixed design: the profiles, the sender's CPU limits and the paper's testbed numbers.

Shared by the study (:mod:`.study`), its sweep (:mod:`.measure`) and its claims
(:mod:`.registration`; s4/registration.toml states it), so that none of them imports
another's module for a constant.

The sender's CPU limit (004:66: "송신측 호스트의 CPU bandwidth을 제한하여") is a factor of
every profile, over one registered set of limits. The set was fixed from calibration
runs of one stream per limit (2026-11-26, this 2-core machine, iperf3 4 s):

=========== ===================== ====================== ==========================
sender CPUs TCP, 1 stream (Mbit/s) MPTCP, 1 stream         iperf3's own CPU (sender)
=========== ===================== ====================== ==========================
none        478 (fills its path)  940 (fills both)        0.6-1.2 % of a CPU
0.5 .. 0.1  477-478               940-941
0.03        478                   920-921
0.015       463-471               806-910
0.01        463                   408
=========== ===================== ====================== ==========================

The sender needs about 1 % of a CPU for 940 Mbit/s (the copy into the socket; the rest
is segmentation offload and softirq work not charged to it), so only a limit near
0.01 CPUs (1 ms of every 100 ms CFS period, the smallest quota the period allows) makes
one stream fall short of its paths: the process then sleeps ~99 ms per period while
its socket buffer drains. Registered: no limit (the lab's own sender, where one stream
fills its path) and 0.01 CPUs (the weakest sender the cgroup can express, the only
limit at which TCP's one stream fell below its path). Three limits at the verdict
profile's 10 repetitions of 1..10 streams would take ~50 min here; two take ~34.
"""

from __future__ import annotations

#: The registered sender CPU limits (0: none), the same in every profile.
SENDER_CPUS = (0.0, 0.01)
#: The paper's largest parallelism (004:66 "병렬성(10)"): its peaks and gains are judged there.
#: the study's registration file (claims, design, changes), beside this module
REGISTRATION_FILE = "registration.toml"
TOP_STREAMS = 10

#: The paper's testbed (004:60): two 500 Mbit/s client interfaces, one 1 Gbit/s server.
PAPER_PATH_MBIT = 500.0
PAPER_SERVER_MBIT = 1000.0
#: The paper's numbers (004:66).
PAPER = {
    "tcp_peak_mbit": 460.0,
    "mptcp_peak_mbit": 934.0,
    "tcp_gain_1_to_10_pct": 5.0,
    "mptcp_gain_1_to_10_pct": 16.0,
}

PROFILES = {
    # quick: the notebook's defaults, ~3.3 min here; both registered limits, the
    # claims' stream counts (1, 10) and one between, 2 repetitions (indicative)
    "quick": dict(streams=(1, 4, 10), repetitions=2, duration_s=4, sender_cpus=SENDER_CPUS,
                  gridftp_streams=(1, 10), gridftp_mbytes=64),
    # verdict: the paper's 1..10 streams at both limits, 10 repetitions (~34 min here)
    "verdict": dict(streams=tuple(range(1, 11)), repetitions=10, duration_s=4,
                    sender_cpus=SENDER_CPUS, gridftp_streams=(1, 4, 10), gridftp_mbytes=64),
    # paper: the paper's sweep at longer points, repeated 3 times
    "paper": dict(streams=tuple(range(1, 11)), repetitions=3, duration_s=8,
                  sender_cpus=SENDER_CPUS, gridftp_streams=tuple(range(1, 11)),
                  gridftp_mbytes=192),
}


def limit_label(cpus: float) -> str:
    """How a limit is named in claim ids and figures: "nolimit", "cpu0.01"."""
    return "nolimit" if not cpus else f"cpu{cpus:g}"
