"""S1 analysis: the paper's claims judged on the repetitions, and the tables shown beside them
(per-size summary, polling against events, the qperf cross-check). The figures drawn from the
same rows are :mod:`.figures`; the SMP claim is :mod:`.smp`.

Every claim rests on repetitions: one repetition measures every method over
every size, the methods in a shuffled order, so a repetition's values are
paired and a ratio of two methods is taken within it. Ratios are averaged on a
log scale (geometric mean) with a Student t or bootstrap interval over the
repetitions (:func:`harness.verdicts.intervals.mean_estimate`).

Under TCG every instruction of both guests is emulated, so absolute times are
many times those of real hardware and are no claim about it. What the ratios
can show is how the two software stacks compare when both pay the same
emulation tax per instruction: Soft-RoCE's kernel path against the socket path
over one and the same emulated NIC and wire.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...verdicts.claims import NOT_TESTABLE, Verdict, judge, not_testable, table
from ...verdicts.intervals import mean_estimate
from .frames import UP, at_cpus, geomean_rows, per_repetition, ratio_of
from .registration import (  # noqa: F401  (registered: read from here too)
    BW_SMALL_MAX,
    BW_TCP,
    HARDWARE,
    LABELS,
    LARGE_MIN,
    MIN_BW_MESSAGES,
    MIN_NAGLE_SIZES,
    PAPER,
    SMALL_MAX,
    WIRE_BOUND_FRACTION,
    claim,
    registered,
)
from .smp import SMP_CHECK, SMP_STACKS, smp_claim, smp_ratios, smp_table  # noqa: F401
from .validity import failed_bandwidth, faster_than_wire, impossible_shares
from .wire import Wire, wire_bound_shortfalls, wire_of

#: The cross-checks shown beside each bandwidth verdict (its TCP: s1_claims.BW_TCP).
BW_CROSS_CHECKS = (("tcp-count-nodelay", "msgcount with TCP_NODELAY"),
                   ("tcp-qperf", "qperf tcp_bw (1 s of messages)"),
                   ("tcp-nodelay", "the Python streaming tool (TCP_NODELAY)"))


# -- tidy views -------------------------------------------------------------------------------

def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per method and size: mean latency and bandwidth over the repetitions, spread, n (the
    1-CPU level's rows, the paper's UP kernel: :func:`smp_table` has the 2-CPU level)."""
    frame = at_cpus(frame, UP)
    spec = {name: (column, how) for name, column, how in (
        ("latency_us", "latency_us", "mean"), ("latency_sd", "latency_us", "std"),
        ("bw_mbit", "bw_mbit", "mean"), ("bw_sd", "bw_mbit", "std"),
        ("cpu_us_per_rt", "cpu_us_per_rt", "mean")) if column in frame}
    return frame.groupby(["method", "size"]).agg(**spec, n=("repetition", "nunique")) \
        .reset_index()


def irregularity(bandwidth: pd.Series) -> float:
    """How rough a bandwidth-against-size curve is, in doublings: the RMS, over the interior
    sizes, of each point's distance (log2 bandwidth) from the straight line through its two
    neighbours on a log-log plot (log2 bandwidth against log2 size).

    A regular curve bends slowly on a log-log plot (per-message cost giving way to the
    wire), so each point lies near the line through its neighbours: a power law lies on it
    exactly (0), and 400*s/(s+2000) Mbit/s at S1's sizes 4, 64, 512, 1024 B is 0.14 off it.
    A stall at some sizes (Nagle's algorithm holding a partial segment for the peer's
    delayed ACK, ~40 ms) puts points far off that line. The line is interpolated at the
    point's own log size, so unevenly spaced sizes cost a smooth curve nothing; the second
    difference over consecutive sizes used until 2026-11-26 scored that same curve 1.66
    (a power law 1.58) only because 4 -> 64 -> 512 -> 1024 B are 4, 3 and 1 doublings apart.
    NaN with fewer than 3 sizes.
    """
    values = bandwidth.dropna().sort_index()
    values = values[values > 0]
    if len(values) < 3:
        return math.nan
    x = np.log2(values.index.to_numpy(dtype=float))
    y = np.log2(values.to_numpy(dtype=float))
    weight = (x[1:-1] - x[:-2]) / (x[2:] - x[:-2])
    line = y[:-2] + weight * (y[2:] - y[:-2])
    return float(np.sqrt(np.mean((y[1:-1] - line) ** 2)))


def irregularity_table(frame: pd.DataFrame, top: int = SMALL_MAX) -> pd.DataFrame:
    """Irregularity of each TCP streaming curve (sizes <= ``top``) per repetition."""
    sub = frame[(frame.family == "tcp") & (frame["size"] <= top)]
    rows = []
    for (method, rep), group in sub.groupby(["method", "repetition"]):
        rows.append({"method": method, "repetition": rep,
                     "irregularity": irregularity(group.set_index("size").bw_mbit)})
    return pd.DataFrame(rows, columns=["method", "repetition", "irregularity"])


def cpu_share(frame: pd.DataFrame) -> pd.DataFrame:
    """Per repetition (rows) and latency method (columns): the client's CPU time during its
    measured exchanges over their wall time, all sizes summed (``cpu_phase_s`` /
    ``wall_phase_s``: read at perftest's results header and at its result row). One thread's
    CPU over the wall time of the same interval cannot exceed 1 by more than the counters'
    resolution (:func:`cpu_readings`)."""
    sums = _phase_sums(frame)
    if sums.empty:
        return pd.DataFrame()
    return (sums.cpu_phase_s / sums.wall_phase_s).unstack("method")


def cpu_readings(frame: pd.DataFrame) -> pd.DataFrame:
    """The shape of :func:`cpu_share`, each cell ``(intervals, wall_s)``: how many measured
    exchanges a share sums and their wall time, which bound its counters' resolution."""
    sums = _phase_sums(frame)
    if sums.empty:
        return pd.DataFrame()
    cells = pd.Series(list(zip(sums.intervals, sums.wall_phase_s)), index=sums.index)
    return cells.unstack("method")


def _phase_sums(frame: pd.DataFrame) -> pd.DataFrame:
    if "cpu_phase_s" not in frame or "wall_phase_s" not in frame:
        return pd.DataFrame()
    sub = frame[frame.cpu_phase_s.notna() & frame.wall_phase_s.notna()]
    if sub.empty:
        return pd.DataFrame()
    groups = sub.groupby(["repetition", "method"])
    sums = groups[["cpu_phase_s", "wall_phase_s"]].sum()
    sums["intervals"] = groups.size()
    return sums


@dataclass(frozen=True)
class _BandwidthRatio:
    """ib_send_bw over msgcount's TCP (Nagle on) at some sizes, the same count of messages
    on both sides: the ratio per repetition and size, its estimate, the verdict's note (with
    TCP_NODELAY, qperf's 1 s tcp_bw and the Python tool as cross-checks) and the invalid
    points it rests on (failed, or faster than a shaped wire)."""

    ratio: pd.DataFrame
    estimate: object
    note: str
    invalid: list
    wire: Wire

    @classmethod
    def of(cls, frame: pd.DataFrame, bw: pd.DataFrame, picked: list[int], wire: Wire,
           tcg: str) -> _BandwidthRatio:
        ratio = ratio_of(bw, "verbs-send-bw", BW_TCP, picked)
        if ratio.empty or ratio.columns.empty:
            return cls(pd.DataFrame(), None, "", [], wire)
        checks = "".join(_geomean_text(_over_sizes(ratio_of(bw, "verbs-send-bw", method,
                                                          picked)), label)
                         for method, label in BW_CROSS_CHECKS)
        note = (f"ib_send_bw against msgcount (C, Nagle on), the same count of messages, "
                f"sizes {int(min(ratio.columns))}..{int(max(ratio.columns))} B; "
                f"{wire.text()}{checks}{tcg}")
        return cls(ratio, mean_estimate(geomean_rows(ratio), "x", log=True), note,
                   _bandwidth_invalid(frame, ("verbs-send-bw", BW_TCP), picked, wire),
                   wire)

    @property
    def missing(self) -> bool:
        return self.ratio.empty

    def judged(self, claim, note: str = "", frame: pd.DataFrame | None = None):
        if self.missing:
            return not_testable(claim, "no size in this range has both verbs and msgcount "
                                       "TCP bandwidth (runs before 2026-11-27's change "
                                       "measured TCP with qperf only)")
        if not self.invalid and frame is not None:
            few = too_few_messages(frame, ("verbs-send-bw", BW_TCP), list(self.ratio.columns))
            if few:
                return undecided(claim, few, self.estimate, self.note + note)
        return judge(claim, self.estimate, self.note + note, invalid=self.invalid)


def _bw_large(part: _BandwidthRatio, frame: pd.DataFrame):
    """bw_large: invalid points first (they never decide; a point faster than the wire
    would also fake the regime), then the regime (both stacks wire-bound), then the ratio."""
    claim = registered().claim("s1.verbs_bw_large")
    if part.missing or part.invalid:
        return part.judged(claim)
    wire = part.wire
    rates, short = wire_bound_shortfalls(frame, wire, list(part.ratio.columns))
    cap = wire.framing_cap()
    if claim.region.low >= cap:  # the physics of the framing, before any measured rate
        return Verdict(claim, part.estimate, NOT_TESTABLE,
                       f"unreachable on an Ethernet wire: {wire.framing_text()}, so a ratio "
                       f"above {claim.region.low:g} (the region) would need TCP short of the "
                       "wire, outside the claim's regime (both stacks running into it). "
                       "Measured anyway (medians over the repetitions): " + "; ".join(rates),
                       note=part.note)
    if not wire.shaped:
        return not_testable(claim, "the paper's regime is both stacks running into the wire; "
                            "here the wire is unshaped, so there is no wire to be bound by and "
                            "the ratio compares the machines' CPUs (medians over the "
                            "repetitions: " + "; ".join(rates) + "; set wire_mbit to shape it)",
                            part.note)
    few = too_few_messages(frame, ("verbs-send-bw", BW_TCP), list(part.ratio.columns))
    if few:
        return undecided(claim, few, part.estimate, part.note)
    if short:
        return not_testable(claim, f"not both stacks wire-bound: below "
                            f"{WIRE_BOUND_FRACTION:.0%} of their payload bound on "
                            f"{wire.text()}: " + "; ".join(short) + " (medians over the "
                            "repetitions)", part.note)
    return part.judged(claim, "; both stacks wire-bound: " + "; ".join(rates))


# -- claims -------------------------------------------------------------------------------------

def claims(frame: pd.DataFrame, meta: dict | None = None) -> pd.DataFrame:
    """The paper's claims judged on the repetitions' intervals (ratios on a log scale).

    Every claim but the SMP one rests on the 1-CPU level's rows only (the paper's UP
    kernel, as registered since 2026-11-29); the SMP claim pairs the two levels within each
    repetition."""
    every_level, frame = frame, at_cpus(frame, UP)
    lat = per_repetition(frame, "latency_us")
    mean_lat = per_repetition(frame, "latency_mean_us")
    bw = per_repetition(frame, "bw_mbit")
    sizes = sorted(frame["size"].unique()) if "size" in frame else []
    tcg = _tcg_note(meta)
    wire = wire_of(meta)
    verdicts = []

    ratio = ratio_of(mean_lat, "tcp-qperf", "verbs-send", [4])
    if ratio.empty or 4 not in ratio.columns:
        verdicts.append(not_testable(claim("s1.latency_tcp_over_verbs_4b"), "4 B was not measured with qperf "
                                     "and perftest (sizes)"))
    else:
        verdicts.append(judge(claim("s1.latency_tcp_over_verbs_4b"), mean_estimate(ratio[4], "x", log=True),
                              "paired per repetition; means of half round trips, qperf "
                              "tcp_lat against ib_send_lat (C against C)"
                              + _cross_check(ratio_of(lat, "tcp-nodelay", "verbs-send", [4]))
                              + _events_check(ratio_of(mean_lat, "tcp-qperf",
                                                     "verbs-send-events", [4]))
                              + _qperf_rc_check(frame, mean_lat, [4])
                              + tcg))

    ratio = ratio_of(mean_lat, "tcp-qperf", "verbs-send", sizes)
    if ratio.empty:
        verdicts.append(not_testable(claim("s1.verbs_below_tcp_every_size"), "needs qperf and perftest "
                                     "latency"))
    else:
        worst = ratio.min(axis=1)
        at = ratio.mean().idxmin()
        python = ratio_of(lat, "tcp-nodelay", "verbs-send", sizes)
        verdicts.append(judge(claim("s1.verbs_below_tcp_every_size"), mean_estimate(worst, "x", log=True),
                              f"{len(ratio.columns)} sizes; the smallest ratio is mostly at "
                              f"{int(at)} B; qperf tcp_lat against ib_send_lat, means"
                              + _cross_check(python.min(axis=1).to_frame(0)
                                             if not python.empty else python)
                              + _events_check(_min_rows(ratio_of(mean_lat, "tcp-qperf",
                                                               "verbs-send-events", sizes)))
                              + _qperf_rc_check(frame, mean_lat, sizes, smallest=True)
                              + tcg))

    irr = irregularity_table(frame)
    wide = irr.pivot_table(index="repetition", columns="method", values="irregularity") \
        if not irr.empty else pd.DataFrame()
    nagle_sizes = _common_sizes(frame, ("tcp-nagle", "tcp-nodelay"), SMALL_MAX)
    if wide.empty or not {"tcp-nagle", "tcp-nodelay"} <= set(wide.columns):
        verdicts.append(not_testable(claim("s1.tcp_nagle_irregular"),
                                     "needs TCP streaming with and without Nagle at >= 3 sizes"))
    else:
        est = mean_estimate(wide["tcp-nagle"] / wide["tcp-nodelay"], "x", log=True)
        note = (f"irregularity (doublings): Nagle {wide['tcp-nagle'].mean():.2f}, "
                f"TCP_NODELAY {wide['tcp-nodelay'].mean():.2f}; streaming, one connection "
                f"per run; {len(nagle_sizes)} sizes {_sizes_text(nagle_sizes)}")
        invalid = _bandwidth_invalid(frame, ("tcp-nagle", "tcp-nodelay"), nagle_sizes, wire)
        if len(nagle_sizes) < MIN_NAGLE_SIZES and not invalid:
            verdicts.append(undecided(
                claim("s1.tcp_nagle_irregular"),
                f"{len(nagle_sizes)} sizes at or below {SMALL_MAX} B measured with and "
                f"without Nagle, fewer than the {MIN_NAGLE_SIZES} the registration asks (an "
                "irregular curve needs more than two interior points; parameter "
                "nagle_sizes)", est, note))
        else:
            verdicts.append(judge(claim("s1.tcp_nagle_irregular"), est, note, invalid=invalid))

    verdicts.append(_BandwidthRatio.of(frame, bw, [s for s in sizes if s <= BW_SMALL_MAX], wire,
                                       tcg).judged(claim("s1.verbs_bw_better_small"),
                                                   frame=frame))
    verdicts.append(_bw_large(_BandwidthRatio.of(frame, bw, [s for s in sizes if s >= LARGE_MIN],
                                                 wire, tcg), frame))

    small = [s for s in sizes if s <= SMALL_MAX]
    ratio = ratio_of(lat, "verbs-send-events", "verbs-send", small)
    if ratio.empty or ratio.columns.empty:
        verdicts.append(not_testable(claim("s1.polling_lowers_latency"), "events were not measured "
                                     "(completion=polling only)"))
    else:
        verdicts.append(judge(claim("s1.polling_lowers_latency"),
                              mean_estimate(geomean_rows(ratio), "x", log=True),
                              "ib_send_lat -e against ib_send_lat, paired per repetition"))
    share = cpu_share(frame)
    if share.empty or not {"verbs-send", "verbs-send-events"} <= set(share.columns):
        verdicts.append(not_testable(claim("s1.polling_costs_cpu"), "no CPU time of both modes"))
    else:
        poller = 100 * share["verbs-send"]
        verdicts.append(judge(claim("s1.polling_costs_cpu"), mean_estimate(poller, "%"),
                              f"the poller's own thread: {poller.mean():.1f} % of a CPU "
                              f"(events client, for comparison: "
                              f"{100 * share['verbs-send-events'].mean():.1f} %); the "
                              "client perftest thread's CPU time (/proc/PID/schedstat) over "
                              "the wall time of its measured exchanges (results header to "
                              "result row), all sizes together",
                              invalid=impossible_shares(
                                  share[["verbs-send", "verbs-send-events"]],
                                  cpu_readings(frame)[["verbs-send", "verbs-send-events"]])))
    verdicts.append(polling_bandwidth(frame, bw, small, wire, tcg))
    verdicts.append(smp_claim(every_level, tcg))
    verdicts.append(not_testable(claim("s1.hardware_latency_4b"), HARDWARE))
    verdicts.append(not_testable(claim("s1.hardware_bandwidth"), HARDWARE))
    return table(verdicts)


def too_few_messages(frame: pd.DataFrame, methods: tuple[str, ...], sizes: list[int]) -> str:
    """Why the bandwidth points of ``methods`` at ``sizes`` cannot decide a claim: fewer than
    :data:`MIN_BW_MESSAGES` messages in some (or a count not recorded); "" when all have
    enough."""
    if "iterations" not in frame:
        return f"the messages per bandwidth point were not recorded (at least {MIN_BW_MESSAGES}"
    sub = frame[frame.method.isin(methods) & frame["size"].isin(sizes)]
    counts = pd.to_numeric(sub.iterations, errors="coerce")
    if counts.notna().all() and (counts >= MIN_BW_MESSAGES).all():
        return ""
    least = "not recorded" if counts.isna().any() else f"{int(counts.min())}"
    return (f"a first look: the fewest messages in a bandwidth point is {least}, below the "
            f"{MIN_BW_MESSAGES} the registration asks for a bandwidth point to decide a claim "
            "(the verdict profile sends them; parameter bw_iterations)")


def undecided(claim, why: str, estimate, note: str) -> Verdict:
    """Not decided by this run's design (a profile with fewer points than the claim needs:
    not testable here, with the reason), the estimate kept beside it (what was measured)."""
    return Verdict(claim, estimate, NOT_TESTABLE, f"not decided by this run's design: {why}",
                   note=note)


def polling_bandwidth(frame: pd.DataFrame, bw: pd.DataFrame, sizes: list[int], wire: Wire,
                      tcg: str):
    """s1.polling_raises_bandwidth (001:72): ib_send_bw (polling the CQ) over ib_send_bw -e
    (completion events) at the sizes up to one frame, paired per repetition."""
    claim = registered().claim("s1.polling_raises_bandwidth")
    methods = ("verbs-send-bw", "verbs-send-bw-events")
    ratio = ratio_of(bw, *methods, sizes)
    if ratio.empty or ratio.columns.empty:
        return not_testable(claim, "ib_send_bw with completion events was not measured "
                                   "(completion=polling only, or a run from before "
                                   "2026-11-29)")
    picked = [int(s) for s in ratio.columns]
    estimate = mean_estimate(geomean_rows(ratio), "x", log=True)
    note = (f"ib_send_bw (polling) against ib_send_bw -e (events), the same count of "
            f"messages, sizes {_sizes_text(picked)}, paired per repetition; {wire.text()}{tcg}")
    invalid = _bandwidth_invalid(frame, methods, picked, wire)
    few = "" if invalid else too_few_messages(frame, methods, picked)
    if few:
        return undecided(claim, few, estimate, note)
    return judge(claim, estimate, note, invalid=invalid)


def _common_sizes(frame: pd.DataFrame, methods: tuple[str, ...], top: int) -> list[int]:
    """The sizes at or below ``top`` that every one of ``methods`` measured with a rate."""
    sets = [set(frame[(frame.method == m) & (frame["size"] <= top)]["size"].astype(int))
            for m in methods]
    return sorted(set.intersection(*sets)) if sets else []


def _sizes_text(sizes) -> str:
    sizes = [int(s) for s in sizes]
    return f"{min(sizes)}..{max(sizes)} B" if sizes else "none"


def _qperf_rc_check(frame: pd.DataFrame, mean_lat: pd.DataFrame, sizes, smallest=False) -> str:
    """The same TCP/verbs ratio with qperf on both sides (tcp_lat over rc_lat, through the
    RDMA CM): the second verbs tool; or why it has no figure (Soft-RoCE refused it)."""
    ratio = ratio_of(mean_lat, "tcp-qperf", "verbs-qperf", sizes)
    if not ratio.empty and not ratio.columns.empty:
        ratio = _min_rows(ratio) if smallest else ratio
        return _geomean_text(ratio, "qperf against itself (tcp_lat over rc_lat, RDMA CM)")
    if "note" in frame:
        notes = frame[(frame.method == "verbs-qperf") & frame.note.fillna("").astype(bool)].note
        if len(notes):
            return f"; qperf RC: {notes.iloc[0]}"
    return ""


def _bandwidth_invalid(frame: pd.DataFrame, methods: tuple[str, ...], sizes: list[int],
                       wire: Wire) -> list:
    """Failed points (0 Mbit/s or none) and, on a shaped wire, points faster than it."""
    return (failed_bandwidth(frame, methods, sizes)
            + faster_than_wire(frame, methods, sizes, wire.mbit, wire.mtu, wire.active_mtu,
                               wire.burst_bytes, wire.qperf_seconds))


def _over_sizes(ratio: pd.DataFrame) -> pd.DataFrame:
    """Per repetition the geometric mean over the sizes, as one column (empty stays empty)."""
    if ratio.empty or ratio.columns.empty:
        return pd.DataFrame()
    return geomean_rows(ratio).to_frame(0)


def _min_rows(ratio: pd.DataFrame) -> pd.DataFrame:
    return ratio.min(axis=1).to_frame(0) if not ratio.empty else ratio


def _events_check(ratio: pd.DataFrame) -> str:
    """The same TCP/verbs latency ratio with verbs sleeping on completion events: the paper
    does not say which mode its M-VIA figures used (001:52), so it is shown, not judged."""
    return _geomean_text(ratio, "verbs with completion events (ib_send_lat -e) in polling's "
                                "place")


def _cross_check(ratio: pd.DataFrame) -> str:
    """The same ratio with the harness's Python TCP tool (TCP_NODELAY) in place of qperf."""
    return _geomean_text(ratio, "the Python TCP tool (TCP_NODELAY) in qperf's place")


def _geomean_text(ratio: pd.DataFrame, what: str) -> str:
    """'; cross-check, WHAT: 0.52x': the geometric mean of the first column's positive values
    (empty when there are none)."""
    if ratio.empty:
        return ""
    values = ratio.iloc[:, 0].dropna()
    values = values[values > 0]
    if values.empty:
        return ""
    return f"; cross-check, {what}: {float(np.exp(np.log(values).mean())):.2f}x"


def _tcg_note(meta: dict | None) -> str:
    placement = (meta or {}).get("placement") or {}
    accel = ((placement.get("vm") or {}).get("accel") or "")
    if placement.get("where") == "vm" and accel != "kvm":
        return "; both ends emulated (TCG): ratios, not absolute times, carry the claim"
    return ""


# -- tables the notebook shows beside the figures --------------------------------------------

def polling_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Polling against events per size: latency and the client's CPU time per round trip
    (1 CPU, the claims' level)."""
    frame = at_cpus(frame, UP)
    sub = frame[frame.method.isin(["verbs-send", "verbs-send-events"])]
    if sub.empty:
        return pd.DataFrame()
    values = [v for v in ("latency_us", "cpu_us_per_rt", "wall_us_per_rt") if v in sub]
    out = sub.pivot_table(index="size", columns="completion", values=values)
    out.columns = [f"{value}_{mode}" for value, mode in out.columns]
    return out.reset_index()


def qperf_check(frame: pd.DataFrame, qperf: pd.DataFrame | None) -> pd.DataFrame:
    """qperf's point beside perftest's and the ping-pong's at the same size (means over
    repetitions): C against C for verbs and TCP, and how much the Python ping-pong adds."""
    if qperf is None or qperf.empty:
        return pd.DataFrame()
    frame = at_cpus(frame, UP)  # the qperf point is measured at the UP level
    size = int(qperf.msg_size.dropna().iloc[0]) if qperf.msg_size.notna().any() else None
    rows = []
    for test, method, value in (("rc_lat", "verbs-send", "latency_us"),
                                ("tcp_lat", "tcp-nodelay", "latency_us"),
                                ("rc_bw", "verbs-send-bw", "bw_mbit"),
                                ("tcp_bw", "tcp-nodelay", "bw_mbit")):
        got = qperf[qperf.test == test]
        ours = frame[(frame.method == method) & (frame["size"] == size)][value]
        q = got["latency_us" if value == "latency_us" else "bw_mbit_s"]
        rows.append({"qperf test": test, "size": size,
                     "qperf": float(q.iloc[0]) if len(q) else math.nan,
                     "ours": float(ours.mean()) if len(ours) else math.nan,
                     "ours (method)": method, "unit": "us" if value == "latency_us" else "Mbit/s"})
    return pd.DataFrame(rows)
