"""S3's registered claims (:mod:`.registration`) judged on one run's repetitions.

Every estimate rests on repetitions (a fresh mapper fleet per protocol each); a ratio
TIPC/TCP is paired within a repetition and averaged over repetitions on a log scale.
A point-repetition that completed no round or read faster than the port can carry is
invalid (:mod:`harness.verdicts.validity`) and makes the claim that rests on it invalid; a claim
outside the paper's regime is "not testable here" with the measured reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ...fanin.spec import APPARATUS, PROTOCOL
from ...lab.verify import RATE_TOLERANCE
from ...topology.shaping import BURST_SECONDS, ETHERNET_HEADER, MIN_BURST_BYTES, PEAK_FRAMES
from ...verdicts.claims import NOT_TESTABLE, Verdict, judge, not_testable, table
from ...verdicts.claims import PAPER as PAPER_SOURCE
from ...verdicts.failures import floored_ratio
from ...verdicts.intervals import mean_estimate, within
from ...verdicts.validity import Invalid, check_apparatus, check_rate, check_share, payload_rate_mbit
from .design import PAPER_CPU_FANIN, USER_HZ
from .regime_figures import regime_note
from .registration import (
    BEST_CLAIM,
    CPU_MAPPERS,
    LOAD_SLACK,
    PAPER,
    WIRE_CLAIM,
    best_protocols,
    best_region,
    rate_rows,
    registered,
    tcp_reference,
    tipc_bypassed,
    wire_share,
)

# -- validity -------------------------------------------------------------------------------

def point_name(row) -> str:
    return f"{row.protocol} 1:{int(row.mappers)} x {int(row.size_kb)} KB, repetition " \
           f"{int(row.repetition)}"


def bucket_allowance_mbit(mappers: int, size_kb: int, wire_mbit: float,
                          shaper: str = "htb") -> float:
    """How far above the port's payload rate a round's mean rate may read: the shaper's
    bucket refills while the port idles between rounds and lets its bytes leave at once, so
    a round of R bytes needs at least (R - bucket) / rate; infinite when a round fits in the
    bucket. htb's bucket (:mod:`harness.topology.shaping`) is max(32 KB, 2 ms of the rate):
    a 1:8 x 1 KB round leaves whole before the shaper counts it, the bottleneck's own
    artefact; a serialising port's (``shaper="serialise"``) is two frames."""
    bucket = port_bucket_bytes(wire_mbit, shaper)
    round_bytes = mappers * size_kb * 1024
    if round_bytes <= bucket:
        return float("inf")
    return payload_rate_mbit(wire_mbit) * (round_bytes / (round_bytes - bucket) - 1)


def invalid_rate_points(rows: pd.DataFrame, wire_mbit: float | None,
                        shaper: str = "htb") -> list[Invalid]:
    """The rate point-repetitions among ``rows`` (:func:`.registration.rate_rows`) that no claim
    may rest on: the apparatus failed there (the generator could not start or connect,
    crashed, was interrupted), or its completed rounds read faster than the port carries.
    A point the protocol failed (a TIPC link reset, a round that timed out) is a result,
    counted at zero goodput for the rounds that did not complete, never invalid here."""
    out = []
    for row in rows.itertuples():
        name = point_name(row)
        bad = None
        if getattr(row, "failure", None) == APPARATUS:
            error = str(getattr(row, "error", "") or "").split(";")[0]
            bad = check_apparatus(name, APPARATUS, f"{int(row.rounds)} of "
                                  f"{int(getattr(row, 'rounds_asked', row.rounds))} rounds"
                                  + (f", {error}" if error else ""))
        completed = getattr(row, "rate_mbit_completed", row.rate_mbit_mean)
        if bad is None and wire_mbit and pd.notna(completed) and row.rounds > 0:
            allowance = bucket_allowance_mbit(row.mappers, row.size_kb, wire_mbit, shaper)
            if np.isfinite(allowance):
                bad = check_rate(name, float(completed), wire_mbit,
                                 quantity="mean round rate", allowance_mbit=allowance,
                                 why="what the port's shaper lets through at once after an idle "
                                     "gap")
        if bad is not None:
            out.append(bad)
    return out


def failure_note(rows: pd.DataFrame, protocol: str = "tipc") -> str:
    """What the registered failure rule counted among ``rows``: the rounds of ``protocol``
    that did not complete, counted at zero goodput (empty: none failed)."""
    mine = rows[(rows.protocol == protocol) & (rows.failure == PROTOCOL)] \
        if "failure" in rows else rows.iloc[:0]
    if mine.empty:
        return ""
    asked = mine.rounds_asked if "rounds_asked" in mine else mine.rounds
    lost = int((asked - mine.rounds).sum())
    errors = mine.error.dropna() if "error" in mine else pd.Series(dtype=object)
    first = str(errors.iloc[0]).split(";")[0] if len(errors) else "no message"
    return (f"; {protocol}: {lost} of {int(asked.sum())} rounds did not complete in "
            f"{len(mine)} point-repetition(s) ({first}), counted at zero goodput (the "
            "registered rule for failures of the protocol)")


@dataclass(frozen=True)
class PortCheck:
    """The reducer port as the lab's link check measured it toward the reducer (run.json's
    link_verification): its configured and measured link-layer rates and TCP goodput."""

    configured_mbit: float
    measured_mbit: float
    goodput_mbit: float | None
    tolerance: float = RATE_TOLERANCE

    @property
    def ratio(self) -> float:
        return self.measured_mbit / self.configured_mbit

    @property
    def within_tolerance(self) -> bool:
        return self.ratio >= self.tolerance

    @classmethod
    def from_meta(cls, meta: dict, link: str, direction: str) -> PortCheck | None:
        for check in meta.get("link_verification") or []:
            if check.get("link") == link and check.get("direction") == direction \
                    and check.get("configured_mbit") and check.get("link_layer_mbit"):
                return cls(float(check["configured_mbit"]), float(check["link_layer_mbit"]),
                           check.get("goodput_mbit"))
        return None


#: a point whose completed rounds read at least this share of the port's measured goodput is
#: limited by the port as the lab delivered it, when that port measured below its tolerance
PORT_LIMITED = 0.9
GAIN_CLAIMS = ("s3.tipc_gain_avg", "s3.tipc_gain_max")
COLLAPSE_CLAIMS = {f"s3.tipc_collapse_{s}kb": s for s in PAPER["collapse_sizes_kb"]}
#: s3.tipc_better_8kb, once TIPC ahead at 1:48 x 8 KB, is withdrawn (registration, changes): never judged
RATE_CLAIMS = (BEST_CLAIM, *GAIN_CLAIMS, *COLLAPSE_CLAIMS)


def port_limited_points(rate: pd.DataFrame, port: PortCheck) -> list[str]:
    """The rate points (protocol 1:N x size, over repetitions) whose mean completed-round rate
    reached :data:`PORT_LIMITED` of the port's measured goodput (link layer where no goodput)."""
    ceiling = port.goodput_mbit or payload_rate_mbit(port.measured_mbit)
    means = rate.groupby(["protocol", "mappers", "size_kb"]).rate_mbit_completed.mean()
    return [f"{p} 1:{int(n)} x {int(s)} KB" for (p, n, s), v in means.items()
            if pd.notna(v) and v >= PORT_LIMITED * ceiling]


def port_bucket_bytes(wire_mbit: float, shaper: str = "htb") -> float:
    """What the reducer port's shaper lets leave at once after an idle gap (bytes): netem's
    rate (the default since 2026-11-29) schedules every frame at the rate, so nothing."""
    if shaper == "netem":
        return 0.0
    if shaper == "serialise":
        return PEAK_FRAMES * (1500 + ETHERNET_HEADER)
    return max(MIN_BURST_BYTES, wire_mbit * 1e6 / 8 * BURST_SECONDS)


def bucket_shaped_points(rate: pd.DataFrame, wire_mbit: float, shaper: str = "htb") -> list[str]:
    """The (fan-in, size) points whose round is at most twice the port's bucket: at least half
    of such a round leaves at once, so its rate is the bucket's as much as the port's
    (issue 35 item 8: the bottleneck's own artefact)."""
    bucket = port_bucket_bytes(wire_mbit, shaper)
    points = sorted({(int(n), int(s)) for n, s in zip(rate.mappers, rate.size_kb)
                     if n * s * 1024 <= 2 * bucket})
    return [f"1:{n} x {s} KB" for n, s in points]


def _bucket_note(verdict: Verdict, rate: pd.DataFrame, wire_mbit: float, shaper: str
                 ) -> Verdict:
    if verdict.claim.id not in RATE_CLAIMS:
        return verdict
    shaped = bucket_shaped_points(rate, wire_mbit, shaper)
    if not shaped:
        return verdict
    text = (f"the port's {shaper} bucket ({port_bucket_bytes(wire_mbit, shaper) / 1024:.3g} KB) "
            f"passes at least half of a round at once at {', '.join(shaped)}: there the rate is "
            "the bucket's as much as the port's")
    return replace(verdict, note=f"{verdict.note}; {text}" if verdict.note else text)


def _regime_note(verdict: Verdict, rate: pd.DataFrame) -> Verdict:
    """A claim of 003:208 with this run's own regime figures in its note (:mod:`.regime_figures`):
    a gain claim the reducer's busy share at 1-4 KB and the drops at 8 KB, a collapse claim the
    drops at 8 KB and at its own size; others unchanged."""
    cid = verdict.claim.id
    if cid not in GAIN_CLAIMS and cid not in COLLAPSE_CLAIMS:
        return verdict
    sizes = (PAPER["gain_size_max_kb"], *((COLLAPSE_CLAIMS[cid],) if cid in COLLAPSE_CLAIMS else ()))
    text = regime_note(rate, sizes, small=cid in GAIN_CLAIMS, fanin=PAPER["fanin"])
    return replace(verdict, note=f"{verdict.note}; {text}" if verdict.note and text else verdict.note or text)


def _port_note(verdict: Verdict, rate: pd.DataFrame, port: PortCheck) -> Verdict:
    """A rate claim's note says which points the port limited when it measured below its
    tolerance (issue 35 item 8); others unchanged."""
    if verdict.claim.id not in RATE_CLAIMS or port.within_tolerance:
        return verdict
    limited = port_limited_points(rate, port)
    text = (f"the reducer port measured {port.measured_mbit:.3g} of {port.configured_mbit:.3g} "
            f"Mbit/s ({port.ratio:.2f}, below the lab's {port.tolerance:g} tolerance): "
            + (f"it limits {', '.join(limited)} (mean rate >= {PORT_LIMITED:g} x its measured "
               "goodput)" if limited else "no point reached 0.9 x its measured goodput"))
    return replace(verdict, note=f"{verdict.note}; {text}" if verdict.note else text)


# -- claims ---------------------------------------------------------------------------------

def claims(frame: pd.DataFrame, wire_mbit: float | None = None, shaper: str = "htb",
           port: PortCheck | None = None, cpus: int | None = None) -> pd.DataFrame:
    """The registered claims judged on this run; ``wire_mbit``: the port's shaped rate,
    ``shaper`` how it was enforced (a run from before 2026-11-29: htb), ``port`` what the
    lab's link check measured on it (:class:`PortCheck`; None: not recorded), ``cpus`` the
    reducer machine's CPUs (the CPU claim's tick resolution; None: not recorded).

    If TIPC's traffic did not cross the switch (all lab nodes in one kernel: Linux >= 5.5
    hands TIPC messages between namespaces directly), every claim involving TIPC is
    marked not testable, with the measured share of bytes on the wire as the reason.
    """
    rate = rate_rows(frame)
    bound = (wire_mbit, shaper)
    verdicts = [_best_verdict(rate, bound), *_gain_verdicts(rate, bound),
                *(_point_verdict(rate, bound, cid, s, "collapse = below half of TCP's rate")
                  for cid, s in COLLAPSE_CLAIMS.items()),
                _cpu_verdict(frame, cpus), _wire_verdict(rate)]
    verdicts = [_regime_note(v, rate) for v in verdicts]
    if port is not None:
        verdicts = [_port_note(v, rate, port) for v in verdicts]
    if wire_mbit and not rate.empty:
        verdicts = [_bucket_note(v, rate, wire_mbit, shaper) for v in verdicts]
    table_ = table(verdicts)
    if tipc_bypassed(frame):
        share = wire_share(frame)
        why = (f"the switch queue saw {share['tipc']:.0%} of the packets TIPC's data needs "
               f"(TCP/SCTP: {share.drop('tipc').min():.0%}+): all nodes share one kernel, which "
               "delivers TIPC between namespaces directly; needs mappers and reducer in "
               "different kernels (VMs)")
        paper = table_.source == PAPER_SOURCE
        table_.loc[paper, "outcome"] = NOT_TESTABLE
        table_.loc[paper, "reason"] = why
    return table_


def _values(rate: pd.DataFrame, protocol: str) -> pd.Series:
    """One protocol's per-repetition point values, indexed by (mappers, size_kb, repetition)."""
    rows = rate[rate.protocol == protocol]
    return rows.set_index(["mappers", "size_kb", "repetition"]).rate_mbit_mean


def paired_ratios(rate: pd.DataFrame, points: list[tuple[int, int]], ref: str):
    """TIPC's rows and its reference's at ``points``, paired per repetition: (ratios indexed
    by (mappers, size_kb, repetition), the rows they rest on, repetitions left unpaired)."""
    wanted = set(points)
    at = [(m, s) in wanted for m, s in zip(rate.mappers, rate.size_kb)]
    rows = rate[rate.protocol.isin(["tipc", ref]) & np.array(at, dtype=bool)]
    tipc, tcp = _values(rows, "tipc"), _values(rows, ref)
    both = set(tipc.index) & set(tcp.index)
    reps = set(rows.repetition)
    paired = {r for r in reps if all((*p, r) in both for p in points)}
    keep = sorted(k for k in both if k[2] in paired)
    # zero goodput (every round failed) reads 0.01x or 100x; both zero: no ratio (failures)
    ratios = floored_ratio(tipc.loc[keep], tcp.loc[keep]).dropna() if keep \
        else pd.Series(dtype=float)
    return ratios.rename("ratio"), rows[rows.repetition.isin(paired)], sorted(reps - paired)


def _unpaired_note(unpaired: list[int]) -> str:
    return (f"; repetition(s) {', '.join(map(str, unpaired))} left out: a protocol "
            "missing there") if unpaired else ""


def _best_verdict(rate: pd.DataFrame, bound: tuple) -> Verdict:
    claim = registered().claim(BEST_CLAIM)
    protos = best_protocols(rate)
    if protos is None:
        return not_testable(claim, "needs TIPC, TCP and SCTP in the rate sweep (the run has "
                                   f"{', '.join(sorted(set(rate.protocol))) or 'none'})")
    ref = protos[1]
    rows = rate[rate.protocol.isin(protos)]
    points = sorted(set(zip(rows.mappers, rows.size_kb)))
    counts = rows.groupby("repetition").size()
    reps = [r for r, c in counts.items() if c == len(points) * len(protos)]
    wide = rows[rows.repetition.isin(reps)].set_index(
        ["repetition", "mappers", "size_kb", "protocol"]).rate_mbit_mean.unstack("protocol")
    # TIPC is best where its goodput is strictly the highest: a tie (all three delivered
    # nothing) is no one's; a point the apparatus failed (no rate) is best for no one and
    # makes the verdict invalid below
    wide = wide.reindex(columns=protos).fillna(-np.inf)
    best = wide["tipc"] > wide[[ref, "sctp"]].max(axis=1)
    shares = best.groupby(level="repetition").mean() if reps else []
    k = len(points)
    region = best_region(rate)
    # a share cannot leave [0, 1]: its interval held within it (intervals.within says why)
    est = within(mean_estimate(shares, units="repetitions"), 0.0, 1.0)
    invalid = invalid_rate_points(rows[rows.repetition.isin(reps)], *bound)
    return judge(replace(claim, region=region), est,
                 f"share of {k} points per repetition, TIPC against "
                 f"{ref}, sctp" + _unpaired_note(sorted(set(rows.repetition) - set(reps)))
                 + failure_note(rows[rows.repetition.isin(reps)]),
                 invalid=invalid)


def _gain_verdicts(rate: pd.DataFrame, bound: tuple) -> list[Verdict]:
    ref = tcp_reference(rate) if not rate.empty else None
    n = PAPER["fanin"]
    sizes = sorted({int(s) for m, s in zip(rate.mappers, rate.size_kb)
                    if m == n and s <= PAPER["gain_size_max_kb"]})
    out = []
    for key, how in (("s3.tipc_gain_avg", "mean"), ("s3.tipc_gain_max", "max")):
        claim = registered().claim(key)
        if not ref or "tipc" not in set(rate.protocol):
            out.append(not_testable(claim, "needs TIPC and TCP in the rate sweep"))
            continue
        if not sizes:
            fanins = ", ".join(f"1:{m}" for m in sorted(set(rate.mappers)))
            out.append(not_testable(claim, f"the run measured {fanins} at sizes "
                                    f"{', '.join(map(str, sorted(set(rate.size_kb))))} KB; "
                                    f"the paper's regime is 1:{n} at <= 8 KB"))
            continue
        ratios, rows, unpaired = paired_ratios(rate, [(n, s) for s in sizes], ref)
        logs = np.log(ratios.where(ratios > 0)).groupby(level="repetition")
        per_rep = np.exp(logs.mean() if how == "mean" else logs.max())
        est = mean_estimate(per_rep, log=True, units="repetitions")
        out.append(judge(claim, est and est.as_gain_pct(),
                         f"1:{n}; sizes {', '.join(f'{s} KB' for s in sizes)}; TIPC over "
                         f"{ref} paired per repetition, "
                         + ("geometric mean over sizes" if how == "mean"
                            else "the best size") + " within each"
                         + _unpaired_note(unpaired) + failure_note(rows),
                         invalid=invalid_rate_points(rows, *bound)))
    return out


def _point_verdict(rate: pd.DataFrame, bound: tuple, claim_id: str, size: int, reading: str
                   ) -> Verdict:
    """A claim about TIPC/TCP at one point, 1:48 x ``size`` KB (a collapse), paired per
    repetition; ``reading`` says what the region means."""
    claim = registered().claim(claim_id)
    ref = tcp_reference(rate) if not rate.empty else None
    n = PAPER["fanin"]
    if not ref or "tipc" not in set(rate.protocol):
        return not_testable(claim, "needs TIPC and TCP in the rate sweep")
    if not ((rate.mappers == n) & (rate.size_kb == size)).any():
        return not_testable(claim, f"1:{n} x {size} KB is not in this run's grid (fan-in "
                            f"{', '.join(map(str, sorted(set(rate.mappers))))}; sizes "
                            f"{', '.join(map(str, sorted(set(rate.size_kb))))} KB)")
    ratios, rows, unpaired = paired_ratios(rate, [(n, size)], ref)
    est = mean_estimate(ratios.where(ratios > 0).dropna(), unit="x", log=True,
                        units="repetitions")
    return judge(claim, est, f"TIPC over {ref} at 1:{n} x {size} KB, paired per repetition; "
                 + reading + _unpaired_note(unpaired)
                 + failure_note(rows),
                 invalid=invalid_rate_points(rows, *bound))


def _wire_verdict(rate: pd.DataFrame) -> Verdict:
    claim = registered().claim(WIRE_CLAIM)
    tipc = rate[rate.protocol == "tipc"]
    if tipc.empty or "wire_share" not in tipc:
        return not_testable(claim, "no TIPC rate point with a wire share in the run")
    per_rep = tipc.groupby("repetition").wire_share.median()
    return judge(claim, mean_estimate(per_rep, units="repetitions"),
                 "median over each repetition's TIPC rate points")


def cpu_rows(frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The CPU phase's rows in the claim's regime (1:48, the paper's 25 ms, <= 16 KB) and, if
    none, why not."""
    cpu = frame[frame.experiment == "cpu"]
    if cpu.empty:
        return cpu, "the run has no CPU experiment"
    if "period_paper_ms" not in cpu or "system_busy_pct" not in cpu:
        return cpu.iloc[:0], ("a run from before the paper's period was carried over to the "
                              "port's rate (its periods: "
                              f"{', '.join(f'{p:g}' for p in sorted(set(cpu.period_ms)))} ms)")
    rows = cpu[(cpu.period_paper_ms == PAPER["period_ms"])
               & (cpu.size_kb <= PAPER["cpu_size_max_kb"])]
    if rows.empty:
        return rows, (f"no CPU point at the paper's {PAPER['period_ms']} ms and <= 16 KB (the "
                      f"run's: {sorted(set(cpu.period_paper_ms))} ms, "
                      f"{sorted(set(cpu.size_kb))} KB)")
    if not (rows.mappers == CPU_MAPPERS).all():
        return rows.iloc[:0], (f"the CPU experiment ran at 1:{int(rows.mappers.max())}; the "
                               f"paper's regime is 1:{PAPER_CPU_FANIN}, here 1:{CPU_MAPPERS}")
    return rows, ""


def kept_period(rows: pd.DataFrame) -> pd.Series:
    """Per CPU row: the point offered the paper's load within :data:`LOAD_SLACK` -- its
    rounds took at most 1.1 x rounds x period between the generator's marks (rows without
    the marks: no round overran)."""
    interval = rows.get("cpu_interval_s", pd.Series(np.nan, index=rows.index))
    limit = rows.rounds * rows.period_ms / 1000 * (1 + LOAD_SLACK)
    return (interval <= limit) | (interval.isna() & (rows.overruns.fillna(0) == 0))


def tick_points(rows: pd.DataFrame, cpus: int | None = None) -> pd.Series:
    """Per CPU row, how many points of the busy share one /proc/stat tick is: 100 over the
    ticks the interval counted (``system_ticks``, recorded since 2026-11-29), else over
    interval x USER_HZ x ``cpus`` (an upper bound on the ticks where a TCG guest's clock falls
    behind, so a lower bound on the step); NaN where neither is known."""
    ticks = rows["system_ticks"] if "system_ticks" in rows \
        else pd.Series(np.nan, index=rows.index)
    if cpus and "cpu_interval_s" in rows:
        ticks = ticks.fillna(rows.cpu_interval_s * USER_HZ * cpus)
    return 100.0 / pd.to_numeric(ticks, errors="coerce").where(lambda x: x > 0)


def _tick_text(use: pd.DataFrame, ref: str, cpus: int | None) -> str:
    """The busy shares' resolution in the CPU claim's note (the referee of 2026-11-29: one
    tick was about 2.3 points, more than the point a 7 % relative saving is at 15 % busy)."""
    step = tick_points(use, cpus).dropna()
    if step.empty:
        return ""
    counted = "system_ticks" in use and use.system_ticks.notna().all()
    source = ("the ticks each interval counted" if counted else
              f"{_span(use.cpu_interval_s)} s x {USER_HZ} Hz x {cpus} CPUs")
    tcp = float(use[use.protocol == ref].system_busy_pct.median())
    smallest = min(PAPER["tipc_cpu_saving_pct"]) / 100 * tcp
    return (f"; resolution: one /proc/stat tick is {'' if counted else 'about '}"
            f"{_span(step)} points of a busy share ({source}), against "
            f"{smallest:.2g} points for the paper's smallest "
            f"saving ({min(PAPER['tipc_cpu_saving_pct']):g} % of {ref}'s median {tcp:.3g} %)")


def _span(values: pd.Series) -> str:
    """``low-high`` to two significant digits, one figure when they print alike."""
    low, high = f"{values.min():.2g}", f"{values.max():.2g}"
    return low if low == high else f"{low}-{high}"


def _cpu_verdict(frame: pd.DataFrame, cpus: int | None = None) -> Verdict:
    """System-wide CPU of the reducer's machine, TIPC over TCP: the samples are the CPU
    repetitions, each a fresh fleet per protocol, back to back in a shuffled order.

    A repetition counts if both protocols have every claim size there and every one of
    those rounds kept its period: an overrun round means the offered load was not the
    paper's periodic one.
    """
    claim = registered().claim("s3.tipc_cpu_saving")
    rows, why = cpu_rows(frame)
    ref = tcp_reference(rows) if not rows.empty else None
    if why or not ref or "tipc" not in set(rows.protocol):
        return not_testable(claim, why or "needs TIPC and TCP in the CPU experiment")
    rows = rows[rows.protocol.isin(["tipc", ref])]
    sizes = sorted(set(rows.size_kb))
    reps = sorted(set(rows.repetition))
    complete = [r for r in reps if len(rows[rows.repetition == r]) == 2 * len(sizes)]
    kept = rows.assign(kept=kept_period(rows)).groupby("repetition").kept.all()
    counted = [r for r in complete if kept[r]]
    late = rows[rows.repetition.isin(complete) & ~kept_period(rows)]
    period = float(rows.period_ms.iloc[0])
    if not counted:
        return not_testable(claim, f"no CPU repetition kept the {period:g} ms period (the "
                            "paper's load within 10 %) at every claim point: "
                            + _late_text(late))
    use = rows[rows.repetition.isin(counted)]
    w = use.pivot_table(index=["repetition", "size_kb"], columns="protocol",
                        values="system_busy_pct")
    ratio = (w["tipc"] / w[ref]).where(lambda r: r > 0)
    per_rep = np.exp(np.log(ratio).groupby(level="repetition").mean())
    est = mean_estimate(per_rep, log=True, units="repetitions")
    invalid = [bad for row in use.itertuples() if (bad := check_share(
        f"{row.protocol} CPU {int(row.size_kb)} KB, repetition {int(row.repetition)}",
        float(row.system_busy_pct), quantity="machine CPU share")) is not None]
    periods = rows.groupby("size_kb").period_ms.first()
    note = (f"reducer machine's CPU share (sar's) at the paper's {PAPER['period_ms']} ms, here "
            + ", ".join(f"{periods[s]:g} ms at {s} KB" for s in sizes)
            + " (the period the run derived at each point); TIPC over "
            f"{ref} paired per CPU "
            f"repetition (fresh fleets, shuffled order): {len(counted)} of {len(reps)} "
            "repetitions counted")
    note += _tick_text(use, ref, cpus)
    if len(counted) < len(complete):
        note += "; out of the regime (load > 10 % below the paper's): " + _late_text(late)
    if len(complete) < len(reps):
        note += f"; {len(reps) - len(complete)} repetition(s) missing a protocol or size"
    return judge(claim, est and est.as_gain_pct(), note, invalid=invalid)


def _late_text(late: pd.DataFrame) -> str:
    def one(r) -> str:
        due = r.rounds * r.period_ms / 1000
        took = getattr(r, "cpu_interval_s", np.nan)
        load = f", load {due / took - 1:+.0%}" if took and np.isfinite(took) else ""
        return (f"{r.protocol} {int(r.size_kb)} KB rep {int(r.repetition)} ({int(r.overruns)} "
                f"of {int(r.rounds)} rounds late{load})")
    return ", ".join(one(r) for r in late.itertuples()) or "none"
