"""S4 claims: registered before data (CLAIMS, DESIGN, CHANGES), judged on our repetitions.

Every paper claim (the peaks and the 1 -> 10 stream gains of 004:66) is judged once per
registered sender CPU limit (:data:`~.design.SENDER_CPUS`), and only in the paper's
regime: a sender that cannot reach the paper's peak with one stream (its sender is
CPU-limited, 004:66, and needed parallel streams: +5 % / +16 % from 1 to 10). Where one
stream already gets there, the claim is *not testable here* with the 1-stream numbers,
never "not reproduced". Every point a claim rests on is checked against what its wire
can carry (:func:`harness.verdicts.validity.check_rate`); an impossible point makes the claim
*invalid*. Summaries and the figure (which marks such points) are in :mod:`.figures`.
"""

from __future__ import annotations

import pandas as pd

from ...lab.verify import RATE_TOLERANCE
from ...verdicts.claims import LAB, Claim, Region, Verdict, judge, not_testable, table
from ...verdicts.intervals import Estimate, mean_estimate
from ...verdicts.registration import DesignChange
from ...verdicts.validity import SLACK, Invalid, check_rate, payload_rate_mbit
from .design import (
    PAPER,
    PAPER_PATH_MBIT,
    PAPER_SERVER_MBIT,
    PROFILES,
    SENDER_CPUS,
    TOP_STREAMS,
    limit_label,
)

SEED = "004:66"
TCP_CAPACITY = payload_rate_mbit(PAPER_PATH_MBIT)  # 478.2: one 500 Mbit/s path's TCP payload
MPTCP_CAPACITY = payload_rate_mbit(min(2 * PAPER_PATH_MBIT, PAPER_SERVER_MBIT))  # 956.4
CAPACITY = {"tcp": TCP_CAPACITY, "mptcp": MPTCP_CAPACITY}
QUOTES = {
    "tcp_peak": "일반 `tcp` 환경의 경우 최대 460Mbps의 전송 성능을 기록한 반면",
    "mptcp_peak": "`mptcp` 환경의 경우 최대 934Mbps의 전송 성능을 보였다",
    "tcp_gain": "병렬성(1)에 대한 병렬성(10)에서의 전송 성능의 경우 일반 `tcp` 환경에서는 약 5% 증가되는 반면",
    "mptcp_gain": "`mptcp` 환경에서는 약 16% 증가되는 것으로 나타났다",
    "aggregation": "이는 `mptcp` 환경에서 추가 적용된 NIC으로 인한 직관적인 전송 성능 증가에 기인한 것이다",
}
LIMIT_QUOTE = "송신측 호스트의 CPU bandwidth을 제한하여 설정 적용함으로써"


def _limit_words(cpus: float) -> str:
    return f"sender limited to {cpus:g} CPUs" if cpus else "no sender CPU limit"


def _regime(transport: str, cpus: float) -> str:
    peak = PAPER[f"{transport}_peak_mbit"]
    return (f"iperf -P 1..10 uploads over two {PAPER_PATH_MBIT:g} Mbit/s client paths into one "
            f"{PAPER_SERVER_MBIT:g} Mbit/s server link (004:60); the sender's CPU limited "
            f"(004:66 '{LIMIT_QUOTE}'), here {_limit_words(cpus)}; counts only where one "
            f"{transport} stream cannot reach the paper's own peak: the 95 % interval of the "
            f"1-stream goodput (this transport, this limit) lies below {peak:g} Mbit/s, as the "
            "paper's sender reached its peak only with parallel streams")


def _peak_region(transport: str) -> Region:
    """[2p - c, c (1 + SLACK)]: as far below the wire's payload capacity c as the paper's
    peak p, or closer, up to what the wire can carry."""
    p, c = PAPER[f"{transport}_peak_mbit"], CAPACITY[transport]
    wire = "one 500 Mbit/s path" if transport == "tcp" else "the 1 Gbit/s server link"
    return Region(2 * p - c, c * (1 + SLACK),
                  f"the paper's {p:g} Mbit/s is {p / c:.3f} of {wire}'s TCP payload capacity "
                  f"c = {c:.1f} Mbit/s (1448/1514 of the rate, the same htb accounting as "
                  f"Mininet's): what it says physically is 'close to that wire's capacity'. "
                  f"Rule: the paper's own shortfall c - p = {c - p:.1f} Mbit/s either way, "
                  f"capped at what the wire carries (c + {SLACK:.0%} clock slack): "
                  f"2p - c .. c(1+{SLACK:g}). Its printed digits (460 +- 5, 934 +- 0.5) are "
                  "its testbed's number, not a precision another lab could reach")


def _paper_claims(cpus: float) -> dict[str, Claim]:
    label, words = limit_label(cpus), _limit_words(cpus)
    out = {}
    for t, name in (("tcp", "TCP"), ("mptcp", "MPTCP")):
        out[f"{t}_peak@{label}"] = Claim(
            f"s4.{t}_peak@{label}", f"{name} peak at {TOP_STREAMS} streams ({words})",
            f"{PAPER[f'{t}_peak_mbit']:g} Mbit/s", _peak_region(t), "Mbit/s",
            quote=QUOTES[f"{t}_peak"], seed_line=SEED,
            quantity=f"iperf3 receiver goodput (TCP payload), Mbit/s, {TOP_STREAMS} parallel "
                     f"streams, mean over repetitions; judged at {TOP_STREAMS} streams (the "
                     "paper's largest parallelism, where its gains put its maximum), never at "
                     "the best of the sweep (a maximum selected on the data it is judged on)",
            regime=_regime(t, cpus))
        gain = PAPER[f"{t}_gain_1_to_10_pct"]
        out[f"{t}_gain@{label}"] = Claim(
            f"s4.{t}_gain_1_10@{label}", f"{name} gain from 1 to {TOP_STREAMS} streams ({words})",
            f"+{gain:g}%", Region.about(gain, 1, f"'약 {gain:g}% 증가' (about {gain:g} % more)"),
            "%", quote=QUOTES[f"{t}_gain"], seed_line=SEED,
            quantity=f"per repetition, iperf3 goodput at {TOP_STREAMS} streams / at 1 stream "
                     "(same transport, same limit), geometric mean over repetitions, as a gain",
            regime=_regime(t, cpus))
    return out


def _claims() -> dict[str, Claim]:
    claims: dict[str, Claim] = {}
    for key in ("tcp_peak", "mptcp_peak", "tcp_gain", "mptcp_gain"):
        for cpus in SENDER_CPUS:
            label = limit_label(cpus)
            claims[f"{key}@{label}"] = _paper_claims(cpus)[f"{key}@{label}"]
    low, high = 2 * RATE_TOLERANCE, 2 / RATE_TOLERANCE
    claims["aggregation"] = Claim(
        "s4.mptcp_over_tcp", "MPTCP / TCP at 10 streams, no CPU limit: the second NIC's "
        "capacity added", "934/460 = 2.03x",
        Region(low, high, f"two paths carry twice one path's payload (the 1 Gbit/s server link "
               f"is no tighter): 2x, each path within the lab's verified rate tolerance "
               f"({RATE_TOLERANCE:g} of its rate) either way: {low:.3f}..{high:.3f}"), "x", LAB,
        quote=QUOTES["aggregation"], seed_line=SEED,
        quantity="per repetition, iperf3 goodput of MPTCP / of TCP at 10 streams, no sender "
                 "CPU limit, geometric mean",
        regime="a check of the lab (its second path adds its capacity), with the lab's own "
               "sender; not the paper's number")
    claims["both_paths"] = Claim(
        "s4.mptcp_both_paths", "MPTCP carries traffic on both client paths (counters)",
        "both NICs used", Region(0.25, 0.75, "each 500 Mbit/s path carries a quarter to three "
                                 "quarters of the bytes"), "", LAB,
        quantity="per repetition, mean over MPTCP iperf3 points of path 2's share of the "
                 "client's transmitted bytes (interface counters)",
        regime="every MPTCP iperf3 point, every limit")
    return claims


CLAIMS = _claims()

DESIGN = {
    "samples": "repetitions: each measures every point of the sweep once, each point with a "
               "fresh iperf3 (or globus-url-copy) connection set; claims pair points within "
               "a repetition",
    "repetitions": {name: p["repetitions"] for name, p in PROFILES.items()},
    "factors": {"sender_cpus": list(SENDER_CPUS), "transport": ["tcp", "mptcp"],
                "streams": {name: list(p["streams"]) for name, p in PROFILES.items()}},
    "order": "per repetition, every (sender_cpus, streams, transport) point in one order "
             "shuffled from the recorded seed; iperf3's points, then GridFTP's likewise",
    "metric": "iperf3 sum_received bits_per_second / 1e6 (TCP payload, Mbit/s) over "
              "duration_s (4 s; paper profile 8 s); GridFTP is shown, judges nothing",
    "judged_at": {"peaks": f"{TOP_STREAMS} streams, each registered limit",
                  "gains": f"1 and {TOP_STREAMS} streams, each registered limit",
                  "aggregation": f"{TOP_STREAMS} streams, no limit",
                  "both_paths": "all MPTCP iperf3 points"},
    "regime_rule": "a paper claim counts at a limit only where the 95 % interval of its "
                   "transport's 1-stream goodput there lies below the paper's peak (TCP 460, "
                   "MPTCP 934 Mbit/s); the run's links must be the paper's 500/1000 Mbit/s",
    "invalid_rule": "a point above its wire's TCP payload rate x (1 + SLACK): TCP one path "
                    "(500 Mbit/s: 478.2), MPTCP min(2 paths, server link) (1000: 956.4)",
}

CHANGES = (
    DesignChange(
        "2026-11-26",
        "The paper's sender CPU limit is a factor of every profile: the claims are judged at "
        "each registered limit (none, 0.01 CPUs), in the paper's regime only (one stream below "
        "the paper's peak), else 'not testable here' with the 1-stream numbers; before: judged "
        "with no limit only.",
        "004:66 limits the sender's CPU; without it one stream fills its path (reference run "
        "20261125T130125Z-b3345a: TCP 478 Mbit/s at 1 stream, gain -0.1 %), which says nothing "
        "about the paper. The limits come from calibration runs (see s4_design): one stream "
        "reached 478/940 Mbit/s down to 0.1 CPUs, 478/920 at 0.03, 463/408 at 0.01. Disclosed: "
        "one of those calibration runs (0.01 CPUs, one repetition) also measured 10 streams "
        "(TCP 460, MPTCP 186 Mbit/s) before 0.01 was registered; 0.01 was chosen as the "
        "smallest quota a 100 ms CFS period expresses and the only limit where TCP's one "
        "stream fell below its path, not for that outcome.",
        tuple(c.id for c in CLAIMS.values() if c.source != LAB)),
    DesignChange(
        "2026-11-26",
        "Peaks judged at 10 streams (registered) instead of at the stream count with the best "
        "mean; region from a written rule (the paper's shortfall from the wire's payload "
        "capacity either way, capped at the capacity) instead of its printed digits "
        "(933.5..934.5).",
        "the best mean, then estimated there, selects a maximum on the data it judges; no run "
        "can land inside 933.5..934.5, and 934 is the paper's testbed's number.",
        tuple(c.id for c in CLAIMS.values() if "peak" in c.id)),
    DesignChange(
        "2026-11-26",
        "MPTCP/TCP (934/460) and 'both paths carry traffic' are lab checks (source lab); the "
        "ratio is judged at 10 streams without a CPU limit against 2x within the lab's rate "
        "tolerance.",
        "the ratio checks that the second path adds its capacity, a property of the lab, "
        "not a finding of the paper's.", ("s4.mptcp_over_tcp", "s4.mptcp_both_paths")),
    DesignChange(
        "2026-11-26",
        "verdict profile sweeps 1..10 streams (was 1, 2, 4, 10); every factor's order is "
        "shuffled per repetition (was the transport only).",
        "the paper sweeps 병렬성(1)..(10) (004:66); stream counts in a fixed ascending order "
        "put any drift of the shared machine on the larger counts."),
)


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
    for r in rows.itertuples():
        bad = check_rate(f"{r.tool} {r.transport} {r.streams} streams, "
                         f"{limit_label(r.sender_cpus)}, repetition {r.repetition}",
                         r.goodput_mbit, wire_mbit(r.transport, path_rate_mbit,
                                                   server_rate_mbit))
        if bad:
            out.append(bad)
    return out


def _points(frame: pd.DataFrame, transport: str, cpus: float, streams: int) -> pd.DataFrame:
    return frame[(frame.transport == transport) & (frame.sender_cpus == cpus)
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
    paper_one = peak / (1 + PAPER[f"{transport}_gain_1_to_10_pct"] / 100)
    if one.value >= peak:
        why = f"one {transport} stream already reaches the paper's peak here"
    else:
        why = (f"not shown that one {transport} stream stays below the paper's peak here (its "
               "interval reaches it; more repetitions would tell)")
    return (f"{why}: 1-stream goodput {one.text()}, its upper end not below {peak:g} Mbit/s "
            f"(the paper's sender needed parallel streams to get there; its 1-stream point "
            f"was ~{paper_one:.0f})")


def _judge_paper(claim: Claim, frame: pd.DataFrame, transport: str, cpus: float,
                 kind: str, rates_: dict) -> Verdict:
    if (rates_["path_rate_mbit"], rates_["server_rate_mbit"]) != (PAPER_PATH_MBIT,
                                                                 PAPER_SERVER_MBIT):
        return not_testable(claim, f"this run's links are {rates_['path_rate_mbit']:g}/"
                                   f"{rates_['server_rate_mbit']:g} Mbit/s, the paper's "
                                   f"{PAPER_PATH_MBIT:g}/{PAPER_SERVER_MBIT:g}")
    one, top = _points(frame, transport, cpus, 1), _points(frame, transport, cpus, TOP_STREAMS)
    if one.empty or top.empty:
        measured = sorted(frame[frame.sender_cpus == cpus].streams.unique())
        return not_testable(claim, f"needs 1 and {TOP_STREAMS} streams at "
                                   f"{_limit_words(cpus)}; the run measured streams "
                                   f"{measured or 'none'} there")
    bad = invalid_rows(pd.concat([one, top]) if kind == "gain" else top, **rates_)
    top_rep = _per_rep(top)
    if kind == "peak":
        est = mean_estimate(top_rep, "Mbit/s")
        note = (f"at {TOP_STREAMS} streams; goodput without headers; the wire carries at most "
                f"{CAPACITY[transport]:.1f} Mbit/s of payload")
    else:
        pair = pd.concat([_per_rep(one), top_rep], axis=1, keys=["one", "top"]).dropna()
        ratio = mean_estimate(pair.top / pair.one, log=True)
        est = ratio.as_gain_pct() if ratio else None
        note = f"1 -> {TOP_STREAMS} streams, paired per repetition"
    if bad:
        return judge(claim, est, note, bad)
    outside = _outside_regime(mean_estimate(_per_rep(one), "Mbit/s"), transport)
    if outside:
        return not_testable(claim, outside, note)
    return judge(claim, est, note)


def claims(frame: pd.DataFrame, path_rate_mbit: float = PAPER_PATH_MBIT,
           server_rate_mbit: float = PAPER_SERVER_MBIT, tool: str = "iperf3") -> pd.DataFrame:
    """Every registered claim judged on the run's iperf3 points (see the module docstring)."""
    rates_ = {"path_rate_mbit": path_rate_mbit, "server_rate_mbit": server_rate_mbit}
    sub = frame[frame.tool == tool]
    if "sender_cpus" not in sub:  # a run made before the limit was a factor: no limit
        sub = sub.assign(sender_cpus=0.0)
    verdicts = []
    for key, claim in CLAIMS.items():
        if claim.source == LAB:
            continue
        transport, kind = key.split("@")[0].split("_")
        cpus = next(c for c in SENDER_CPUS if key.endswith("@" + limit_label(c)))
        verdicts.append(_judge_paper(claim, sub, transport, cpus, kind, rates_))
    verdicts.append(_aggregation(sub, rates_))
    verdicts.append(_both_paths(sub, rates_))
    return table(verdicts)


def _aggregation(sub: pd.DataFrame, rates_: dict) -> Verdict:
    claim = CLAIMS["aggregation"]
    tcp, mp = _points(sub, "tcp", 0.0, TOP_STREAMS), _points(sub, "mptcp", 0.0, TOP_STREAMS)
    if tcp.empty or mp.empty:
        return not_testable(claim, f"needs TCP and MPTCP at {TOP_STREAMS} streams without a "
                                   "CPU limit")
    pair = pd.concat([_per_rep(mp), _per_rep(tcp)], axis=1, keys=["mp", "tcp"]).dropna()
    return judge(claim, mean_estimate(pair.mp / pair.tcp, "x", log=True),
                 "paired per repetition", invalid_rows(pd.concat([tcp, mp]), **rates_))


def _both_paths(sub: pd.DataFrame, rates_: dict) -> Verdict:
    claim = CLAIMS["both_paths"]
    mp = sub[sub.transport == "mptcp"]
    if mp.empty:
        return not_testable(claim, "no MPTCP point")
    share = mp.path2_tx_bytes / (mp.path1_tx_bytes + mp.path2_tx_bytes)
    per_rep = share.groupby(mp.repetition).mean()
    return judge(claim, mean_estimate(per_rep), f"share of client bytes on path 2; "
                 f"{int(mp.mp_join_syn_ack_rx.sum())} subflow joins",
                 invalid_rows(mp, **rates_))
