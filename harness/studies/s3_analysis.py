"""S3's claims, registered before data, and how they are judged on independent repetitions.

A sample is one repetition: a fresh mapper fleet per protocol (fresh connections), the
protocols and the points in an order shuffled per repetition; a point's rounds are
averaged into that repetition's one value (rounds inside one fleet are not independent:
five quick runs of the old design, whose intervals came from rounds, read TIPC's gain
over CUBIC at +3.5, +4.8, +22, +23 and +96 %). A ratio TIPC/TCP is paired within a
repetition and averaged over repetitions on a log scale (Student t below 30
repetitions). A point in which a protocol completed no round, or read faster than the
port can carry, is *invalid*: shown with its numbers, deciding no claim. A claim is
judged only in the paper's regime, else "not testable here" with the measured reason.

This module registers (``CLAIMS``, ``DESIGN``, ``CHANGES``, :mod:`harness.registration`)
and tabulates (:func:`rate_summary`, :func:`cpu_summary`); the judging is in
:mod:`.s3_verdicts`, the figures in :mod:`.s3_figures`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..claims import LAB, Claim, Region
from ..registration import DesignChange
from .s3_design import PAPER_CPU_FANIN, PAPER_LINK_MBIT, PAPER_PERIOD_MS, PROFILES

PAPER = {
    "tipc_gain_small_avg_pct": 10.0,  # 1:48, <= 8 KB, over TCP
    "tipc_gain_small_max_pct": 16.0,
    "tipc_cpu_saving_pct": (7.0, 15.0),  # 25 ms period, <= 16 KB
    "gain_size_max_kb": 8,
    "cpu_size_max_kb": 16,
    "collapse_sizes_kb": (16, 32, 64),  # the paper's sizes from 16 KB on (Fig. 7's grid)
    "fanin": 48,
    "period_ms": PAPER_PERIOD_MS,
}
ORDER = ["tipc", "tcp-cubic", "tcp", "sctp"]
CPU_MAPPERS = 48  # the paper's 1:50 is the largest fan-in the lab holds
WIRE_SHARE_MIN = 0.5  # below it TIPC's data did not cross the switch (one kernel's shortcut)
#: A CPU point is in the paper's regime while its offered load, N x size per round over the
#: time its rounds took (the generator's marks), is within 10 % of the paper's: rounds that
#: overran their period stretch that time. Loads 0.7-9.5 % low read 4 KB points of the first
#: run of this design (20261126T163456Z-56d73d, quick, host load 5-7), 17-52 % low its 16 KB.
LOAD_SLACK = 0.10

_RATE_QUANTITY = ("mean round rate ((N x size) / (request to last byte) per round, timed by "
                  "our C generator in the reducer, CLOCK_MONOTONIC) over a point's measured "
                  "rounds")
_GAIN_QUOTE = ("병렬전송 노드가 48개인 1:48 통신의 경우 8KB 이하 구간에서 TIPC는 TCP보다 "
               "평균 10%, 최대 16%의 높은 전송률을 가졌으나")
_COLLAPSE_QUOTE = "네트워크 혼잡도가 높아지는 16KB 이상의 구간에서는 TIPC의 성능이 매우 낮았다"


def _collapse_claim(size: int) -> Claim:
    return Claim(
        f"s3.tipc_collapse_{size}kb", f"TIPC collapses at 1:48 x {size} KB (TIPC/TCP rate)",
        "very low", Region.below(0.5, "the paper: '매우 낮았다' (very low) with no number; "
                                 "read as below half of TCP's rate"), "x",
        quote=_COLLAPSE_QUOTE, seed_line="003:208",
        quantity=f"TIPC's over CUBIC-TCP's {_RATE_QUANTITY}, at 1:48 x {size} KB, paired per "
                 "repetition; geometric mean over repetitions",
        regime=f"1:48 fan-in, {size} KB per mapper (the paper: 16 KB and above), rounds back "
               "to back through one shaped switch port with a small FIFO; judged at this "
               "point alone")


# Registered before data. Each region quotes the paper (Section 5) and takes its precision:
# the rate and CPU numbers are stated plainly to 1 %, so they hold to half a percent either
# way; "most" is more than half; "very low" has no number and is read as below half.
CLAIMS = {
    "tipc_best": Claim(
        "s3.tipc_best_most", "TIPC has the best average rate in most (N, size) points",
        "most points", Region.above(0.5, "the paper: '가장 우수' (the best) over Fig. 7's "
                                    "points: more than half of the run's k points, at least "
                                    "k // 2 + 1 of k"), "",
        quote="실험 결과 평균 전송률 측면에서 TCP, SCTP와 비교해 TIPC의 성능이 가장 우수하였으며",
        seed_line="003:219",
        quantity=f"per repetition, the share of the run's (N, size) points where TIPC's "
                 f"{_RATE_QUANTITY} is the highest of TIPC, CUBIC-TCP and SCTP; mean over "
                 "repetitions",
        regime="every (N, size) point of the run's grid (the paper's Fig. 7: N up to 48, "
               "1-64 KB), rounds back to back, all three protocols measured"),
    "gain_avg": Claim(
        "s3.tipc_gain_avg", "TIPC over TCP, 1:48, <= 8 KB, average", "+10%",
        Region.stated(10, 1, "'평균 10%' (10 % on average)"), "%",
        quote=_GAIN_QUOTE, seed_line="003:208",
        quantity=f"TIPC's over CUBIC-TCP's {_RATE_QUANTITY} at 1:48, geometric mean over the "
                 "run's sizes <= 8 KB within a repetition; geometric mean over repetitions, "
                 "as a gain (r - 1) x 100",
        regime="1:48 fan-in, sizes up to 8 KB, rounds back to back"),
    "gain_max": Claim(
        "s3.tipc_gain_max", "TIPC over TCP, 1:48, <= 8 KB, best case", "+16%",
        Region.stated(16, 1, "'최대 16%' (up to 16 %)"), "%",
        quote=_GAIN_QUOTE, seed_line="003:208",
        quantity=f"TIPC's over CUBIC-TCP's {_RATE_QUANTITY} at 1:48, the largest ratio over "
                 "the run's sizes <= 8 KB within a repetition; geometric mean over repetitions "
                 "(a per-repetition statistic averaged, never a bootstrap of a maximum)",
        regime="1:48 fan-in, sizes up to 8 KB, rounds back to back"),
    **{f"collapse_{s}": _collapse_claim(s) for s in PAPER["collapse_sizes_kb"]},
    "cpu": Claim(
        "s3.tipc_cpu_saving", "TIPC uses 7-15% less CPU than TCP (25 ms period, <= 16 KB)",
        "-15..-7%", Region.between(-15.5, -6.5, "the paper: '7~15%의 낮은 CPU 점유율' (7-15 % "
                                   "lower CPU share), stated to 1 %: -15.5..-6.5"), "%",
        quote="25ms 주기의 경우 16KB 이하 크기에서 TIPC는 TCP보다 7~15%의 낮은 CPU 점유율을 보였고",
        seed_line="003:210",
        quantity="the reducer machine's CPU share as sar reports it (the paper: 'sar', "
                 "003:201): (user + nice + system + irq + softirq) / all ticks of /proc/stat "
                 "over the measured rounds, all CPUs; TIPC over CUBIC-TCP per size, geometric "
                 "mean over the sizes <= 16 KB within a CPU repetition; geometric mean over "
                 "CPU repetitions, as a gain (r - 1) x 100",
        regime=f"1:{CPU_MAPPERS} (the paper: 1:{PAPER_CPU_FANIN}, more than the lab holds), "
               f"sizes up to 16 KB, a round every {PAPER_PERIOD_MS} ms at "
               f"{PAPER_LINK_MBIT:g} Mbit/s carried over to our port (same offered load per "
               "unit of port rate), the load each point offered within 10 % of that (its "
               "rounds kept the period)"),
    "wire": Claim(
        "s3.lab_tipc_on_the_wire", "TIPC's data crosses the switch port (not a kernel shortcut)",
        "-", Region.above(WIRE_SHARE_MIN, "fewer packets through the bottleneck queue than "
                          "half of what TIPC's payload needs means the kernel delivered it "
                          "between namespaces directly (Linux >= 5.5: ~0.02-0.2)"), "",
        source=LAB,
        quantity="TIPC's packets through the switch port's FIFO per full-size packet its "
                 "payload needs (wire_share), median over the rate points of a repetition; "
                 "mean over repetitions"),
}

DESIGN = {
    "samples": "independent repetitions: a fresh mapper fleet (fresh connections) per protocol "
               "and repetition; a point's measured rounds are averaged into that "
               "repetition's one value, never used as samples",
    "profiles": {name: {k: values[k] for k in ("mappers", "sizes_kb", "rounds", "warmup",
                                                 "repetitions", "cpu_periods_paper_ms",
                                                 "cpu_sizes_kb", "cpu_rounds",
                                                 "cpu_repetitions")}
                 for name, values in PROFILES.items()},
    "factors": {"rate": ["protocol (tcp-cubic, sctp, tipc)", "fan-in N", "size"],
                "cpu": ["protocol (tipc, tcp-cubic)", "the paper's period", "size"]},
    "order": "from the run's recorded seed (MeasuringOrder), drawn before the first point: "
             "per repetition the protocols shuffled, per fleet its points shuffled; the rate "
             "sweep's repetitions, then the CPU phase's",
    "metric": {"rate": _RATE_QUANTITY,
               "cpu": "system-wide CPU share of the reducer's machine over the measured "
                      "rounds, /proc/stat read by the generator at its begin and end marks "
                      "(as sar computes it)"},
    "cpu_period": "ours = the paper's period x (1000 Mbit/s / the reducer port's shaped rate) "
                  "x (cpu_mappers / 50): the paper's offered load per unit of port rate",
    "judged_points": {"gain": "1:48 at each size <= 8 KB of the run",
                      "collapse": "1:48 at 16, 32 and 64 KB, one verdict per point",
                      "best": "every (N, size) point of the run",
                      "cpu": "1:48 at each CPU size <= 16 KB of the paper's 25 ms"},
    "invalid": "a point-repetition with no completed round (validity.check_rounds) or that "
               "stopped at an error before its last round (its rounds before the error are "
               "not the point's rate), or a mean rate above the port's payload rate plus "
               "what its htb bucket lets through at once (validity.check_rate), or a CPU "
               "share above 100 % (validity.check_share): shown, and any one under a claim "
               "makes it invalid",
    "cpu_regime": "a CPU repetition counts only if every claim point of both protocols "
                  "offered the paper's load within 10 %: its marked interval at most 1.1 x "
                  "rounds x period",
}

CHANGES = (
    DesignChange(
        "2026-11-26", "the collapse judged per point at 1:48 x 16, 32 and 64 KB (one verdict "
        "each; a point that completed no round, or stopped at an error, invalid) instead of "
        "the minimum TIPC/TCP "
        "ratio over the sizes >= 16 KB",
        "the minimum passed on the 64 KB point where no TIPC round completed (reference run "
        "20261125T130555Z-5b0f86), while at 16 KB, the size the paper names, TIPC/TCP read "
        "1.10x in that run and 0.72x in a fresh one", tuple(
            f"s3.tipc_collapse_{s}kb" for s in PAPER["collapse_sizes_kb"])),
    DesignChange(
        "2026-11-26", "CPU metric: the reducer process's CPU time per round (getrusage) -> "
        "the reducer machine's system-wide CPU share over the measured rounds (/proc/stat, "
        "as sar)", "the paper measured with sar (003:201), system-wide on the receiving "
        "node; the process's own time leaves out the softirq work the protocols differ in "
        "and is a different quantity", ("s3.tipc_cpu_saving",)),
    DesignChange(
        "2026-11-26", "CPU period: fixed 250 ms (quick, verdict; 250/500/1000 ms paper) -> "
        "the paper's 25 ms (25/50/100 ms) carried over to the port's shaped rate and N",
        "250 ms assumed a 100 Mbit/s port, but the lab scales the port to what its VMs carry: "
        "the reference run's port was 10 Mbit/s, so it offered 10x the paper's load per unit "
        "of port rate", ("s3.tipc_cpu_saving",)),
    DesignChange(
        "2026-11-26", "the verdict profile's CPU repetitions 24 -> 12 (2026-11-25), then 10 "
        "with the metric and period of this design (the CPU phase's repetitions are the CPU "
        "claim's samples, a fresh fleet per protocol each, since a design that used one pass)",
        "a 24-repetition verdict run took 2425 s; its first 12 repetitions gave the same "
        "outcome (-29.8 % [-33.5, -25.9] against -30.5 % [-33.4, -27.5]); decided after "
        "seeing that run, so recorded here. 10: the carried-over period (871 ms at the 28 "
        "Mbit/s port of a loaded host) makes a CPU fleet take 38-46 s; chosen before any "
        "verdict run of this design", ("s3.tipc_cpu_saving",)),
    DesignChange(
        "2026-11-26", "the CPU claim's regime: a repetition counts if each claim point's "
        "offered load was within 10 % of the paper's (its marked interval <= 1.1 x rounds x "
        "period; was: no round overran at all); the quick and verdict CPU sizes (4, 16) -> "
        "(1, 4) KB, the paper's 'up to 16 KB' at its realistic 3-4 KB partitions (003:190)",
        "the first run of this design (20261126T163456Z-56d73d, quick, host load 5-7) had "
        "its 48 mappers' 16 KB rounds (786 KB) take 330-480 ms, longer than the 302 ms "
        "period: a load 17-52 % below the paper's, out of its regime in every repetition; at "
        "4 KB single late rounds cost 0.7-9.5 % of the load, which the strict rule threw out "
        "with the 16 KB points; the paper profile keeps 1-64 KB", ("s3.tipc_cpu_saving",)),
    DesignChange(
        "2026-11-26", "rate claims: samples are repetitions (a fresh fleet per protocol each), "
        "a point's rounds averaged into one value; quick 1 -> 2 repetitions of 5 rounds (was "
        "10) at 1, 4, 16 KB (was 1, 4, 16, 64: the 10-minute budget; 64 KB cost 120 s in the "
        "first run of this design), verdict 3 repetitions of 40 rounds -> 5 of 10; the "
        "points' order shuffled per fleet (was fixed); a point that stopped at an error "
        "before its last round is invalid (TIPC at 1:48 x 64 KB completed 1 of 5 rounds, "
        "then its links reset, in both repetitions of that run)",
        "rounds inside one fleet are not independent: five quick runs of the old design read "
        "TIPC's average gain over CUBIC at 1:48 and <= 8 KB at +3.5, +4.8, +22, +23 and +96 %, "
        "each with an interval made from its rounds",
        ("s3.tipc_best_most", "s3.tipc_gain_avg", "s3.tipc_gain_max")),
    DesignChange(
        "2026-11-27", "the verdict profile's sizes 1, 4, 8, 16, 64 KB -> 1, 4, 8, 16, 32, 64 KB "
        "(fan-in 8 and 48, repetitions, rounds and order rules unchanged)",
        "s3.tipc_collapse_32kb, registered since 2026-11-26 as a claim of its own, had no "
        "point in the verdict profile and read 'not testable here' in its reference "
        "(20261126T171237Z-bbc0db); an acceptance audit of issue 23 named it. Made after "
        "that reference existed; its outcome at 16 and 64 KB (0.88x not reproduced, 64 KB "
        "invalid: no round completed) is not what moved it: no region or rule changes",
        ("s3.tipc_collapse_32kb",)),
)


# -- tables ---------------------------------------------------------------------------------

def tcp_reference(frame: pd.DataFrame) -> str | None:
    present = set(frame.protocol)
    return "tcp-cubic" if "tcp-cubic" in present else ("tcp" if "tcp" in present else None)


def rate_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rate sweep's rows, one per (protocol, N, size, repetition), ``failed`` where the
    generator stopped before the last round (no round, or an error: TIPC's links reset
    under incast). Their rate is NaN: the rounds before an error are not the point's rate,
    and such a point is invalid (:mod:`.s3_verdicts`)."""
    rate = frame[frame.experiment == "rate"].copy()
    if "repetition" not in rate:
        rate["repetition"] = 1
    if "rounds" not in rate:
        rate["failed"] = False
    else:
        asked = rate["rounds_asked"] if "rounds_asked" in rate else rate["rounds"]
        rate["failed"] = rate["rounds"].eq(0) | (rate["rounds"] < asked)
    rate.loc[rate.failed, "rate_mbit_mean"] = np.nan
    return rate


def rate_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per protocol, fan-in and size: the mean over repetitions of each repetition's mean
    round rate, its spread, and in how many repetitions it stopped early (``failed``)."""
    rate = rate_rows(frame)
    out = rate.groupby(["protocol", "mappers", "size_kb"]).agg(
        rate_mbit=("rate_mbit_mean", "mean"), sd_mbit=("rate_mbit_mean", "std"),
        round_ms=("round_ms_mean", "mean"), queue_drops=("queue_drops", "sum"),
        ok=("ok", "all"), repetitions=("ok", "size"), failed=("failed", "sum"))
    return out.reset_index()


def cpu_summary(frame: pd.DataFrame) -> pd.DataFrame:
    cpu = frame[frame.experiment == "cpu"]
    if "period_paper_ms" not in cpu:
        cpu = cpu.assign(period_paper_ms=np.nan)
    measures = {m: (m, "mean") for m in ("system_busy_pct", "system_softirq_pct",
                                         "reducer_cpu_pct", "mapper_cpu_pct") if m in cpu}
    out = cpu.groupby(["protocol", "period_paper_ms", "period_ms", "size_kb"], dropna=False).agg(
        **measures, overruns=("overruns", "sum"), round_ms=("round_ms_mean", "mean"),
        ok=("ok", "all"), repetitions=("ok", "size"))
    return out.reset_index()


def wire_share(frame: pd.DataFrame) -> pd.Series:
    """Median share of each protocol's payload that crossed the switch's bottleneck queue."""
    if "wire_share" not in frame:
        return pd.Series(dtype=float)
    return frame[frame.experiment == "rate"].groupby("protocol").wire_share.median()


def tipc_bypassed(frame: pd.DataFrame, threshold: float = WIRE_SHARE_MIN) -> bool:
    """True if TIPC's data did not cross the lab's network (intra-kernel delivery)."""
    share = wire_share(frame)
    return "tipc" in share and share["tipc"] < threshold


def evidence_note(frame: pd.DataFrame) -> str:
    """What the verdicts rest on: repetitions per rate point and rounds inside each."""
    rate = rate_rows(frame)
    done = rate[~rate.failed]
    if done.empty:
        return "no rate point completed a round"
    reps = rate.groupby(["protocol", "mappers", "size_kb"]).repetition.nunique()
    text = (f"the rate claims rest on {int(reps.min())}"
            + (f"-{int(reps.max())}" if reps.max() > reps.min() else "")
            + f" repetitions per point (a fresh mapper fleet each), each the mean of "
            f"{int(done.rounds.min())}"
            + (f"-{int(done.rounds.max())}" if done.rounds.max() > done.rounds.min() else "")
            + " measured rounds (the paper: 1000 rounds a point)")
    if reps.min() < 3:
        text += ("; with fewer than 3 repetitions a Student t interval is too wide to decide "
                 "most claims -- use profile=verdict")
    return text
