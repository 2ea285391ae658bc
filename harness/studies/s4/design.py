"""S4's fixed design: the profiles, the sender's CPU limits, the calibration and the paper's numbers.

Shared by the study (:mod:`.study`), its sweep (:mod:`.measure`), its calibration
(:mod:`.calibration`) and its claims (:mod:`.registration`; s4/registration.toml states it),
so that none of them imports another's module for a constant.

The sender's CPU limit (004:66: "송신측 호스트의 CPU bandwidth을 제한하여") is a factor of
every profile: no limit, and the limit *anchored* to the paper's single stream. The paper
gives its peaks at 10 streams and the gains from 1 to 10, so its one-stream goodputs were
TCP 460 / 1.05 = 438 and MPTCP 934 / 1.16 = 805 Mbit/s (:data:`PAPER_ONE_STREAM`). Each run
first measures one stream of each transport at every candidate limit of
:data:`CALIBRATION_CPUS` (the calibration, a registered step of the design), then measures
the claims at the candidate whose one-stream goodputs are nearest those figures
(:func:`harness.studies.s4.calibration.choose_limit` states the rule).

Why these candidates (one stream, iperf3 4 s, this 2-core machine, 2026-11-29 at load 1-5,
three repetitions each; Mbit/s):

=========== ============ ==============
sender CPUs TCP          MPTCP
=========== ============ ==============
0.01        397-443      456-491
0.0125      437-465      625-678
0.015       468-478      708-917
0.0175      441-469      895-925
0.02        453-473      843-897
0.025       442-467      887-915
=========== ============ ==============

0.01 CPUs (1 ms of every 100 ms CFS period) was the smallest candidate until the change of
2026-11-29T23:33Z; from 0.02 on one stream is within a few per cent of its no-limit value (TCP 478,
MPTCP 940), so a larger limit cannot bring MPTCP nearer 805. Until 2026-11-29T00:45Z the one
limit was 0.01 CPUs, where one MPTCP stream got 378 Mbit/s of the paper's 805 (verdict
reference 20261127T162255Z): the sender starved, not limited as the paper's was.

The third referee of S4 (docs/reviews/s4-2026-11-29-third.md, its problem 2) found one TCP
stream barely held by any candidate (440-478 Mbit/s, throttled in 10-15 % of its CFS periods)
and the mapping from limit to MPTCP goodput unstable across runs (one MPTCP stream at 0.0125
CPUs: 440, 754 and 918 Mbit/s in the three runs of reference e1142e). Since the change of
2026-11-29T23:33Z the candidates reach below 0.01 CPUs, seven from 0.005 to 0.02 in steps of 0.0025
(below 0.01 the kernel's smallest quota, 1 ms, over a longer period: 0.005 CPUs is 1 ms every
200 ms, :func:`harness.config.cgroup.cfs_period_us`), and the verdict and paper profiles measure
each 5 times (was 3), so that the medians that choose the limit rest on more points. Measured
time: the calibration's points took 4.6-4.7 s each from start to start in the three runs of
e1142e (30 points in 133-137 s, 3 repetitions); 70 points take about 5.5-6 min, 3.2-3.6 min
more per run (the points at 0.01 CPUs took 0.3-0.4 s longer than at 0.02, and the two new limits are
lower still: estimated, not measured), so a verdict run about 20-21 min (16.5-17.1 min measured)
and a pooled reference of three about 61 min (50 measured).
"""

from __future__ import annotations

from ...verdicts.margins import FACTOR

#: the study's registration file (claims, design, changes), beside this module
REGISTRATION_FILE = "registration.toml"
#: The paper's largest parallelism (004:66 "병렬성(10)"): its peaks and gains are judged there.
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
#: The paper's one-stream goodputs its text implies: the peak (at 10 streams) / (1 + the
#: 1 -> 10 gain): TCP 438.1, MPTCP 805.2 Mbit/s.
PAPER_ONE_STREAM = {t: PAPER[f"{t}_peak_mbit"] / (1 + PAPER[f"{t}_gain_1_to_10_pct"] / 100)
                    for t in ("tcp", "mptcp")}
#: How those figures are made, for every text that shows them: the paper prints neither.
DERIVED = "460/1.05, 934/1.16: derived from the paper's peaks and gains; it prints no one-stream figure"


def implied_one_stream(transport: str) -> str:
    """The paper's one stream of ``transport`` in words, saying it is derived, not printed."""
    peak, gain = PAPER[f"{transport}_peak_mbit"], PAPER[f"{transport}_gain_1_to_10_pct"]
    return (f"{PAPER_ONE_STREAM[transport]:.0f} Mbit/s ({peak:g}/{1 + gain / 100:g}, derived: the "
            "paper prints no one-stream figure)")

#: The limit chosen by the calibration, as the sender_cpus parameter and claim ids name it.
ANCHORED = "anchored"
#: The sender CPU limits every profile measures the claims at (0: none).
SENDER_CPUS = (0.0, ANCHORED)
#: The candidate limits of the calibration (module docstring: why these).
CALIBRATION_CPUS = (0.005, 0.0075, 0.01, 0.0125, 0.015, 0.0175, 0.02)
#: The anchored limit puts the sender in the paper's regime only if its one-stream goodputs
#: are within this factor of the paper's in both transports (x/÷: the project's equivalence
#: margin, :data:`harness.verdicts.margins.FACTOR`, the one every claim's region uses).
CALIBRATION_FACTOR = FACTOR

PROFILES = {
    # quick: the notebook's defaults, under 3 min here at low load; a calibration of one
    # repetition, the claims' stream counts (1, 10) at no limit and at the anchored one, 2
    # repetitions of 3 s points (indicative: the intervals that decide need the verdict profile)
    "quick": dict(streams=(1, 10), repetitions=2, duration_s=3, sender_cpus=SENDER_CPUS,
                  calibration_cpus=CALIBRATION_CPUS, calibration_repetitions=1,
                  gridftp_streams=(1, 10), gridftp_mbytes=16),
    # verdict: the paper's 1..10 streams at both limits, 4 repetitions (one run of at least three
    # that a pooled reference needs), after a calibration of 5 repetitions (3 until 2026-11-29T23:33Z)
    "verdict": dict(streams=tuple(range(1, 11)), repetitions=4, duration_s=4,
                    sender_cpus=SENDER_CPUS, calibration_cpus=CALIBRATION_CPUS,
                    calibration_repetitions=5, gridftp_streams=(1, 4, 10), gridftp_mbytes=64),
    # paper: the paper's sweep at longer points, repeated 3 times
    "paper": dict(streams=tuple(range(1, 11)), repetitions=3, duration_s=8,
                  sender_cpus=SENDER_CPUS, calibration_cpus=CALIBRATION_CPUS,
                  calibration_repetitions=5, gridftp_streams=tuple(range(1, 11)),
                  gridftp_mbytes=192),
}


def limit_label(cpus: float | str) -> str:
    """How a limit is named in claim ids, tables and figures: "nolimit", "anchored", "cpu0.03"."""
    if cpus == ANCHORED:
        return ANCHORED
    return "nolimit" if not cpus else f"cpu{float(cpus):g}"
