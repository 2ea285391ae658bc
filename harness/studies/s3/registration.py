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

The claims, the design and its changes are registered in ``s3/registration.toml`` (read by
:func:`registered`, :mod:`harness.verdicts.registration_file`); this module tabulates
(:func:`rate_summary`, :func:`cpu_summary`) and makes the region a run's design sets
(:func:`design_regions`); the judging is in :mod:`.analysis`, the figures in :mod:`.figures`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ...fanin.spec import APPARATUS, PROTOCOL, failure_kind
from ...verdicts.claims import Claim, Region
from ...verdicts.failures import failed_round_share, zero_goodput
from ...verdicts.registration import Registration
from ...verdicts.registration_file import load
from .design import ERROR_TEXT_KEPT, PAPER_PERIOD_MS

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
#: the lab check that TIPC's data crossed the switch (its region's low is the threshold below
#: which one kernel delivered it between namespaces directly)
WIRE_CLAIM = "s3.lab_tipc_on_the_wire"
#: the claim that TIPC is best at most of the run's points: its region is set by the run's design
BEST_CLAIM = "s3.tipc_best_most"
#: A CPU point is in the paper's regime while its offered load, N x size per round over the
#: time its rounds took (the generator's marks), is within 10 % of the paper's: rounds that
#: overran their period stretch that time. Loads 0.7-9.5 % low read 4 KB points of the first
#: run of this design (20261126T163456Z-56d73d, quick, host load 5-7), 17-52 % low its 16 KB.
LOAD_SLACK = 0.10

#: the study's registration file, beside this module (S3.registration_file)
REGISTRATION_FILE = "registration.toml"


def registered() -> Registration:
    """S3's registration (:data:`REGISTRATION_FILE`)."""
    return load(Path(__file__).with_name(REGISTRATION_FILE))


def claim(claim_id: str) -> Claim:
    """The registered claim ``claim_id`` (:meth:`harness.verdicts.registration.Registration.claim`)."""
    return registered().claim(claim_id)


# -- tables ---------------------------------------------------------------------------------

def tcp_reference(frame: pd.DataFrame) -> str | None:
    present = set(frame.protocol)
    return "tcp-cubic" if "tcp-cubic" in present else ("tcp" if "tcp" in present else None)


def point_failure(row) -> str | None:
    """Whose failure stopped a rate point before its last round: ``"protocol"`` (the system
    under test: a connection reset or closed, a round timed out -- a result), ``"apparatus"``
    (the tool: invalid) or None (every asked round completed). Read from the row's
    ``failure`` (recorded since 2026-11-29), else classified from its error text as the
    generator words it (:func:`harness.fanin.spec.failure_kind`; the generator had started
    when it reported its socket buffers)."""
    done = getattr(row, "rounds", None)
    asked = getattr(row, "rounds_asked", None)
    if asked is None or pd.isna(asked):
        asked = done
    if done is None or pd.isna(done) or done >= asked:
        return None
    recorded = getattr(row, "failure", None)
    if isinstance(recorded, str) and recorded:
        return recorded
    error = getattr(row, "error", None)
    errors = [e.strip() for e in str(error).split(";") if e.strip()] \
        if isinstance(error, str) else []
    if isinstance(error, str) and len(error) >= ERROR_TEXT_KEPT and len(errors) > 1:
        errors = errors[:-1]  # the last message was cut where the row's text ends
    buffers = getattr(row, "sndbuf_effective", None)
    started = (buffers is not None and not pd.isna(buffers)) or done > 0 or bool(errors)
    return failure_kind(errors, started)


def rate_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rate sweep's rows, one per (protocol, N, size, repetition), under the registered
    rule for failures (:mod:`harness.verdicts.failures`): ``failure`` says whose failure
    stopped a point before its last round (:func:`point_failure`); where the protocol's,
    ``rate_mbit_mean`` is its goodput with every round that did not complete at zero
    (the completed rounds' mean kept as ``rate_mbit_completed``); where the apparatus's, it
    is NaN and the point is invalid (:mod:`.analysis`). ``failed``: stopped early at all;
    ``failed_round_share``: the share of the asked rounds that did not complete."""
    rate = frame[frame.experiment == "rate"].copy()
    if "repetition" not in rate:
        rate["repetition"] = 1
    rate["rate_mbit_completed"] = rate["rate_mbit_mean"]
    if "rounds" not in rate:
        rate["failed"] = False
        rate["failure"] = None
        rate["failed_round_share"] = 0.0
        return rate
    asked = rate["rounds_asked"] if "rounds_asked" in rate else rate["rounds"]
    rate["failed"] = rate["rounds"] < asked
    rate["failure"] = [point_failure(row) for row in rate.itertuples()]
    rate["failed_round_share"] = [failed_round_share(int(d), int(a)) if a > 0 else 0.0
                                  for d, a in zip(rate["rounds"], asked)]
    protocol = rate.failure == PROTOCOL
    rate.loc[protocol, "rate_mbit_mean"] = [
        zero_goodput(float(m) if pd.notna(m) else math.nan, int(d), int(a))
        for m, d, a in zip(rate.loc[protocol, "rate_mbit_completed"],
                           rate.loc[protocol, "rounds"], asked[protocol])]
    rate.loc[rate.failure == APPARATUS, "rate_mbit_mean"] = np.nan
    return rate


def best_protocols(rate: pd.DataFrame) -> list[str] | None:
    """TIPC, the TCP reference and SCTP, whose rates "best" compares; None when the sweep
    lacks one of them."""
    ref = tcp_reference(rate) if not rate.empty else None
    protos = ["tipc", ref, "sctp"]
    return protos if ref and set(protos) <= set(rate.protocol) else None


def best_region(rate: pd.DataFrame) -> Region | None:
    """The region the registered rule of "best at most points" makes from the run's design:
    at least k // 2 + 1 of its k points (mappers x size, each with all three protocols); None
    when the claim is not testable in the run."""
    protos = best_protocols(rate)
    if protos is None:
        return None
    rows = rate[rate.protocol.isin(protos)]
    k = len(set(zip(rows.mappers, rows.size_kb)))
    claim = registered().claim(BEST_CLAIM)
    return Region.above((k // 2 + 1) / k, claim.region.why + f": at least {k // 2 + 1} of {k}")


def design_regions(frame: pd.DataFrame) -> dict[str, Region]:
    """The regions a run's design set (:meth:`harness.studies.base.Study.design_regions`), by
    claim id: "best at most points" (:func:`best_region`) where it is testable."""
    region = best_region(rate_rows(frame))
    return {BEST_CLAIM: region} if region is not None else {}


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


def tipc_bypassed(frame: pd.DataFrame, threshold: float | None = None) -> bool:
    """True if TIPC's data did not cross the lab's network (intra-kernel delivery): its wire
    share below ``threshold`` (None: the registered lab check's region, :data:`WIRE_CLAIM`)."""
    if threshold is None:
        threshold = claim(WIRE_CLAIM).region.low
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
        text += ("; with fewer than 3 repetitions one run's Student t interval is too wide to "
                 "decide most claims: a verdict pools the three runs of profile=verdict with the "
                 "run as the unit (harness claims pool)")
    return text
