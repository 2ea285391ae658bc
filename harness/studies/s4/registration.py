"""S4 claims: registered before data (``s4/registration.toml``), judged on our repetitions.

Every paper claim (the peaks and the 1 -> 10 stream gains of 004:66) is judged once per
registered sender CPU limit (no limit, and the limit anchored to the paper's single stream
by the run's calibration, :mod:`.calibration`), each in its regime:

- a claim at the anchored limit needs the calibration to have brought its own transport's
  one stream within the registered tolerance of the paper's
  (:func:`~.calibration.outside_tolerance`), and the claim points' own 1-stream median of that
  transport at that limit to lie there too (:func:`anchor_on_the_points`);
- a *gain* or a *peak* needs a sender that cannot reach the paper's peak with one stream (the
  paper's sender is CPU-limited, 004:66, and climbed from one stream: +5 % / +16 % from 1 to
  10); where one stream already gets there the claim is *not testable here* with the 1-stream
  numbers, never "not reproduced" nor "reproduced" (a peak an unlimited sender reaches with
  one stream says only what the wire carries: change of 2026-11-29T08:27Z, after a referee);
- beyond these rules of the analysis, registered gates (registration.toml, applied to every
  claims table by :class:`~harness.studies.base.Study`): the MPTCP gains and the contrast need
  the paper's coupled controller (``congestion_control``); every claim at the anchored limit a
  sender throttled in more than half of its CFS periods at the stream counts it compares
  (``cpu_throttled``), and its MPTCP claims the paper's stack, MPTCP v0.95 and iperf
  (``stack``; both since the change of 2026-11-29T23:33Z, after the third referee).

The paper's contrast (004:66: TCP gains about 5 % from 1 to 10 streams *whereas* MPTCP gains
about 16 %) is a claim of its own (:func:`_judge_contrast`): per repetition, at one limit, MPTCP's
ratio of 10-stream to 1-stream goodput over TCP's; it counts only where both gains count.

Every point a claim rests on is checked against what its wire can carry
(:func:`harness.verdicts.validity.check_rate`); an impossible point makes the claim *invalid*.
Summaries and the figures (which mark such points) are in :mod:`.figures`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...verdicts.claims import LAB, NOT_TESTABLE, Claim, Verdict, judge, not_testable, table
from ...verdicts.intervals import Estimate, mean_estimate
from ...verdicts.registration import Registration
from ...verdicts.registration_file import load
from ...verdicts.validity import Invalid, check_rate, payload_rate_mbit
from .calibration import outside_tolerance
from .design import (
    ANCHORED,
    CALIBRATION_FACTOR,
    PAPER,
    PAPER_ONE_STREAM,
    PAPER_PATH_MBIT,
    PAPER_SERVER_MBIT,
    REGISTRATION_FILE,
    TOP_STREAMS,
    implied_one_stream,
    limit_label,
)

TCP_CAPACITY = payload_rate_mbit(PAPER_PATH_MBIT)  # 478.2: one 500 Mbit/s path's TCP payload
MPTCP_CAPACITY = payload_rate_mbit(min(2 * PAPER_PATH_MBIT, PAPER_SERVER_MBIT))  # 956.4
CAPACITY = {"tcp": TCP_CAPACITY, "mptcp": MPTCP_CAPACITY}
#: the contrast's claims, s4.gain_contrast_1_10@{limit label} (:func:`_judge_contrast`)
CONTRAST = "gain_contrast_1_10"


def _limit_words(label: str, rows: pd.DataFrame | None = None) -> str:
    if label == ANCHORED:
        cpus = sorted(rows.sender_cpus.unique()) if rows is not None and not rows.empty else []
        at = f" ({', '.join(f'{c:g}' for c in cpus)} CPUs)" if cpus else ""
        return f"the sender's CPU limit anchored to the paper's single stream{at}"
    if label == "nolimit":
        return "no sender CPU limit"
    return f"sender limited to {label.removeprefix('cpu')} CPUs"


def with_limits(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its ``limit`` column (how claims name a limit): runs made before the
    anchored limit existed have only ``sender_cpus`` (and runs before that, not even it)."""
    if "sender_cpus" not in frame:
        frame = frame.assign(sender_cpus=0.0)
    if "limit" not in frame:
        frame = frame.assign(limit=frame.sender_cpus.map(limit_label))
    return frame


def registered() -> Registration:
    """S4's registration (:data:`REGISTRATION_FILE`)."""
    return load(Path(__file__).with_name(REGISTRATION_FILE))


def claim(claim_id: str) -> Claim:
    """The registered claim ``claim_id`` (:meth:`harness.verdicts.registration.Registration.claim`)."""
    return registered().claim(claim_id)


# -- judging --------------------------------------------------------------------------------

def rates(meta: dict) -> dict:
    """The run's link rates, which decide the wires' payload capacity."""
    p = meta.get("parameters", {})
    return {"path_rate_mbit": float(p.get("path_rate_mbit", PAPER_PATH_MBIT)),
            "server_rate_mbit": float(p.get("server_rate_mbit", PAPER_SERVER_MBIT))}


def wire_mbit(transport: str, path_rate_mbit: float, server_rate_mbit: float) -> float:
    """The rate of the tightest wire a transport's traffic crosses (TCP: path 1 only)."""
    return path_rate_mbit if transport == "tcp" else min(2 * path_rate_mbit, server_rate_mbit)


def invalid_rows(rows: pd.DataFrame, path_rate_mbit: float,
                 server_rate_mbit: float) -> list[Invalid]:
    """Each point among ``rows`` faster than its wire can carry."""
    out = []
    for r in with_limits(rows).itertuples():
        limit = r.limit + (f" {r.sender_cpus:g} CPUs" if r.limit == ANCHORED else "")
        bad = check_rate(f"{r.tool} {r.transport} {r.streams} streams, "
                         f"{limit}, repetition {r.repetition}",
                         r.goodput_mbit, wire_mbit(r.transport, path_rate_mbit,
                                                   server_rate_mbit))
        if bad:
            out.append(bad)
    return out


def _points(frame: pd.DataFrame, transport: str, label: str, streams: int) -> pd.DataFrame:
    return frame[(frame.transport == transport) & (frame.limit == label)
                 & (frame.streams == streams)]


def _per_rep(rows: pd.DataFrame) -> pd.Series:
    return rows.groupby("repetition").goodput_mbit.mean()


def _outside_regime(one: Estimate, transport: str) -> str:
    """Why a limit is not shown to be in the paper's regime ('' when it is): the upper end of
    the 1-stream interval (with one repetition, the value) must lie below the paper's peak."""
    peak = PAPER[f"{transport}_peak_mbit"]
    top = one.high if one.has_interval else one.value
    if top < peak:
        return ""
    if one.value >= peak:
        why = f"one {transport} stream already reaches the paper's peak here"
    else:
        why = (f"not shown that one {transport} stream stays below the paper's peak here (its "
               "interval reaches it; more repetitions would tell)")
    return (f"{why}: 1-stream goodput {one.text()}, its upper end not below {peak:g} Mbit/s "
            f"(the paper's sender needed parallel streams to get there; its 1-stream point "
            f"was ~{implied_one_stream(transport)})")


def anchor_on_the_points(frame: pd.DataFrame, label: str, transport: str | None = None) -> str:
    """Why the claims' own points at the anchored limit are not where the paper's sender was
    ('' when they are): the median 1-stream goodput of each transport there, on the claim
    points themselves (not the calibration's), within x/÷ the margin of the paper's one stream.
    The calibration chose the limit on its own points; at a quota of 1-2 ms per 100 ms the same
    limit gave one MPTCP stream 454-914 Mbit/s in the claim points of three runs (referee
    review of the pooled reference fbf94a, 2026-11-29)."""
    off = []
    for name, paper in PAPER_ONE_STREAM.items():
        if transport is not None and name != transport:  # a claim's own transport only
            continue
        one = _points(frame, name, label, 1)
        if one.empty:
            off.append(f"no 1-stream {name.upper()} point")
            continue
        median = float(one.goodput_mbit.median())
        factor = max(median / paper, paper / median) if median > 0 else float("inf")
        if factor > CALIBRATION_FACTOR:
            off.append(f"one {name.upper()} stream {median:.0f} Mbit/s (median of "
                       f"{len(one)}) against the paper's ~{implied_one_stream(name)}, a "
                       f"factor {factor:.3f}")
    if not off:
        return ""
    return (f"on the claims' own points at {_limit_words(label)} the sender is not where the "
            f"paper's was: {'; '.join(off)} (beyond x/÷ {CALIBRATION_FACTOR:g})")


def _other_links(rates_: dict) -> str:
    """Why the run's links are not the paper's ('' when they are)."""
    if (rates_["path_rate_mbit"], rates_["server_rate_mbit"]) == (PAPER_PATH_MBIT,
                                                                 PAPER_SERVER_MBIT):
        return ""
    return (f"this run's links are {rates_['path_rate_mbit']:g}/{rates_['server_rate_mbit']:g} "
            f"Mbit/s, the paper's {PAPER_PATH_MBIT:g}/{PAPER_SERVER_MBIT:g}")


def _outside(frame: pd.DataFrame, transport: str, label: str,
             calibration: pd.DataFrame | None) -> str:
    """Why ``transport`` at ``label`` is not where the paper's sender was ('' when it is): at
    the anchored limit, the calibration and the claim points' own one stream of that transport
    within the margin of the paper's; at every limit, one stream that does not already reach
    the paper's peak (its 95 % interval below it)."""
    one = _points(frame, transport, label, 1)
    outside = (outside_tolerance(calibration, transport)
               or anchor_on_the_points(frame, label, transport) if label == ANCHORED else "")
    if not outside:  # a peak as a gain: one stream must not already be there (change 08:27Z)
        outside = (_outside_regime(mean_estimate(_per_rep(one), "Mbit/s"), transport)
                   if not one.empty else f"needs 1 stream at {_limit_words(label)} to show that "
                   "one stream does not already reach the paper's peak; the run measured none")
    return outside


def _judge_paper(claim: Claim, frame: pd.DataFrame, transport: str, label: str,
                 kind: str, rates_: dict, calibration: pd.DataFrame | None) -> Verdict:
    """One paper claim at one limit, in its regime (module docstring)."""
    links = _other_links(rates_)
    if links:
        return not_testable(claim, links)
    one, top = _points(frame, transport, label, 1), _points(frame, transport, label, TOP_STREAMS)
    needed = (TOP_STREAMS,) if kind == "peak" else (1, TOP_STREAMS)
    if top.empty or (kind == "gain" and one.empty):
        measured = sorted(frame[frame.limit == label].streams.unique())
        return not_testable(claim, f"needs {' and '.join(map(str, needed))} streams at "
                                   f"{_limit_words(label)}; the run measured streams "
                                   f"{measured or 'none'} there")
    bad = invalid_rows(pd.concat([one, top]) if kind == "gain" else top, **rates_)
    top_rep = _per_rep(top)
    where = _limit_words(label, top)
    if kind == "peak":
        est = mean_estimate(top_rep, "Mbit/s")
        note = (f"at {TOP_STREAMS} streams, {where}; goodput without headers; the wire "
                f"carries at most {CAPACITY[transport]:.1f} Mbit/s of payload")
    else:
        pair = pd.concat([_per_rep(one), top_rep], axis=1, keys=["one", "top"]).dropna()
        ratio = mean_estimate(pair.top / pair.one, log=True)
        est = ratio.as_gain_pct() if ratio else None
        note = f"1 -> {TOP_STREAMS} streams, paired per repetition, {where}"
    if bad:
        return judge(claim, est, note, bad)
    return _in_regime(claim, est, note, _outside(frame, transport, label, calibration))


def _in_regime(claim: Claim, est: Estimate | None, note: str, outside: str) -> Verdict:
    """``claim`` judged on ``est``, or not testable here where ``outside`` says why; the
    estimate stays beside it (a pool shows it too), and decides nothing."""
    if outside:
        return Verdict(claim, est, NOT_TESTABLE,
                       f"{outside}; measured anyway: {est.text()}" if est else outside, None, note)
    return judge(claim, est, note)


def _gain_per_rep(frame: pd.DataFrame, transport: str, label: str) -> pd.Series:
    """Per repetition, ``transport``'s goodput at 10 streams over its goodput at 1 stream."""
    pair = pd.concat([_per_rep(_points(frame, transport, label, 1)),
                      _per_rep(_points(frame, transport, label, TOP_STREAMS))],
                     axis=1, keys=["one", "top"]).dropna()
    return pair.top / pair.one


def _judge_contrast(claim: Claim, frame: pd.DataFrame, label: str, rates_: dict,
                    calibration: pd.DataFrame | None) -> Verdict:
    """The paper's contrast at one limit: per repetition, MPTCP's 10-stream over 1-stream
    goodput divided by TCP's, all four points of one repetition at that limit (paired, so a
    repetition's drift cancels), a geometric mean over repetitions; 1.105 is the paper's
    1.16 / 1.05. It counts only where both gains count: each transport in its own gain regime."""
    links = _other_links(rates_)
    if links:
        return not_testable(claim, links)
    points = {(t, n): _points(frame, t, label, n)
              for t in ("tcp", "mptcp") for n in (1, TOP_STREAMS)}
    missing = [f"{t.upper()} {n}" for (t, n), rows in points.items() if rows.empty]
    if missing:
        measured = sorted(frame[frame.limit == label].streams.unique())
        return not_testable(claim, f"needs TCP and MPTCP at 1 and {TOP_STREAMS} streams at "
                                   f"{_limit_words(label)}; no {', '.join(missing)}-stream point "
                                   f"(the run measured streams {measured or 'none'} there)")
    bad = invalid_rows(pd.concat(points.values()), **rates_)
    pair = pd.concat([_gain_per_rep(frame, "mptcp", label), _gain_per_rep(frame, "tcp", label)],
                     axis=1, keys=["mptcp", "tcp"]).dropna()
    est = mean_estimate(pair.mptcp / pair.tcp, "x", log=True)
    note = (f"(MPTCP 10/1 streams) / (TCP 10/1 streams), the four points paired per repetition, "
            f"{_limit_words(label, points['mptcp', TOP_STREAMS])}")
    if bad:
        return judge(claim, est, note, bad)
    outside = "; ".join(f"the {t.upper()} gain does not count: {why}" for t in ("tcp", "mptcp")
                        if (why := _outside(frame, t, label, calibration)))
    return _in_regime(claim, est, note, outside)


def claims(frame: pd.DataFrame, path_rate_mbit: float = PAPER_PATH_MBIT,
           server_rate_mbit: float = PAPER_SERVER_MBIT, tool: str = "iperf3",
           calibration: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every registered claim judged on the run's iperf3 points (see the module docstring);
    ``calibration``: the run's calibration points (its ``calibration`` table)."""
    rates_ = {"path_rate_mbit": path_rate_mbit, "server_rate_mbit": server_rate_mbit}
    sub = with_limits(frame[frame.tool == tool])
    verdicts = []
    for paper_claim in registered().claims:  # s4.{transport}_{peak|gain_1_10}@{limit label}
        if paper_claim.source == LAB:
            continue
        name, label = paper_claim.id.removeprefix("s4.").split("@")
        if name == CONTRAST:
            verdicts.append(_judge_contrast(paper_claim, sub, label, rates_, calibration))
            continue
        transport, kind = name.split("_")[:2]
        verdicts.append(_judge_paper(paper_claim, sub, transport, label, kind, rates_,
                                     calibration))
    verdicts.append(_aggregation(sub, rates_))
    verdicts.append(_both_paths(sub, rates_))
    return table(verdicts)


def _aggregation(sub: pd.DataFrame, rates_: dict) -> Verdict:
    claim = registered().claim("s4.mptcp_over_tcp")
    tcp = _points(sub, "tcp", "nolimit", TOP_STREAMS)
    mp = _points(sub, "mptcp", "nolimit", TOP_STREAMS)
    if tcp.empty or mp.empty:
        return not_testable(claim, f"needs TCP and MPTCP at {TOP_STREAMS} streams without a "
                                   "CPU limit")
    pair = pd.concat([_per_rep(mp), _per_rep(tcp)], axis=1, keys=["mp", "tcp"]).dropna()
    return judge(claim, mean_estimate(pair.mp / pair.tcp, "x", log=True),
                 "paired per repetition", invalid_rows(pd.concat([tcp, mp]), **rates_))


def _both_paths(sub: pd.DataFrame, rates_: dict) -> Verdict:
    claim = registered().claim("s4.mptcp_both_paths")
    mp = sub[sub.transport == "mptcp"]
    if mp.empty:
        return not_testable(claim, "no MPTCP point")
    share = mp.path2_tx_bytes / (mp.path1_tx_bytes + mp.path2_tx_bytes)
    per_rep = share.groupby(mp.repetition).mean()
    return judge(claim, mean_estimate(per_rep), f"share of client bytes on path 2; "
                 f"{int(mp.mp_join_syn_ack_rx.sum())} subflow joins",
                 invalid_rows(mp, **rates_))
