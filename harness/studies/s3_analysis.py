"""S3 analysis: rate per protocol (Fig. 7), CPU per period (Fig. 8), the paper's claims."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import ScalarFormatter

from ..claims import NOT_TESTABLE, Claim, Region, Verdict, judge, not_testable, table
from ..intervals import bootstrap_groups, mean_estimate

PAPER = {
    "tipc_gain_small_avg_pct": 10.0,  # 1:48, <= 8 KB, over TCP
    "tipc_gain_small_max_pct": 16.0,
    "tipc_cpu_saving_pct": (7.0, 15.0),  # 25 ms period, <= 16 KB
    "cpu_size_max_kb": 16,
    "collapse_size_kb": 16,
    "period_ms": 25,
}
ORDER = ["tipc", "tcp-cubic", "tcp", "sctp"]


def load(run_path: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    run_path = Path(run_path)
    frame = pd.read_parquet(run_path / "results.parquet")
    rounds_file = run_path / "rounds.parquet"
    rounds = pd.read_parquet(rounds_file) if rounds_file.exists() else pd.DataFrame()
    meta = json.loads((run_path / "run.json").read_text())
    return frame, rounds, meta


def tcp_reference(frame: pd.DataFrame) -> str | None:
    present = set(frame.protocol)
    return "tcp-cubic" if "tcp-cubic" in present else ("tcp" if "tcp" in present else None)


def rate_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean per-round transfer rate per protocol, fan-in and size (over repetitions).

    A point where not one round completed (e.g. TIPC's links reset under incast and
    took every connection with them) delivered nothing: its rate counts as 0, and
    ``failed`` counts such points. Its error is in the results table.
    """
    rate = frame[frame.experiment == "rate"].copy()
    dead = rate["rounds"].eq(0) if "rounds" in rate else pd.Series(False, index=rate.index)
    rate.loc[dead, "rate_mbit_mean"] = 0.0
    rate["failed"] = dead
    out = rate.groupby(["protocol", "mappers", "size_kb"]).agg(
        rate_mbit=("rate_mbit_mean", "mean"), sd_mbit=("rate_mbit_mean", "std"),
        p5_mbit=("rate_mbit_p5", "mean"), round_ms=("round_ms_mean", "mean"),
        queue_drops=("queue_drops", "sum"), ok=("ok", "all"), repetitions=("ok", "size"),
        failed=("failed", "sum"))
    return out.reset_index()


def cpu_summary(frame: pd.DataFrame) -> pd.DataFrame:
    cpu = frame[frame.experiment == "cpu"]
    out = cpu.groupby(["protocol", "period_ms", "size_kb"]).agg(
        reducer_cpu_pct=("reducer_cpu_pct", "mean"), mapper_cpu_pct=("mapper_cpu_pct", "mean"),
        system_busy_pct=("system_busy_pct", "mean"), overruns=("overruns", "sum"),
        **({"reducer_cpu_ms_per_round": ("reducer_cpu_ms_per_round", "mean")}
           if "reducer_cpu_ms_per_round" in cpu else {}),
        round_ms=("round_ms_mean", "mean"), ok=("ok", "all"))
    return out.reset_index()


def _order(frame: pd.DataFrame) -> list[str]:
    return [p for p in ORDER if p in set(frame.protocol)]


def _size_axis(grid, sizes) -> None:
    """Log-scaled partition sizes, ticked at the sizes measured, labelled in plain KB."""
    ticks = sorted(sizes)
    grid.set(xscale="log")
    for ax in grid.axes.flat:
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(int(s)) for s in ticks])
        ax.minorticks_off()
        ax.set_xlabel("partition size per mapper (KB)")


def figure_rate(frame: pd.DataFrame, rounds: pd.DataFrame | None = None):
    """Fig. 7 mirror: average transfer rate against partition size, one panel per fan-in.

    With the rounds table, each point is the mean over its rounds with a 95 % bootstrap
    interval as error bar; without it, the per-point means (no bars).
    """
    summ = rate_summary(frame)
    if summ.empty:
        return None
    data, bars = summ, None
    if rounds is not None and not rounds.empty:
        data = rounds[rounds.experiment == "rate"]
        bars = ("ci", 95)
    grid = sns.relplot(data=data, x="size_kb", y="rate_mbit", hue="protocol", col="mappers",
                       kind="line", marker="o", hue_order=_order(summ), height=3.2, aspect=1.0,
                       col_wrap=min(4, summ.mappers.nunique()), errorbar=bars,
                       err_style="bars", n_boot=500, seed=1)
    grid.set(ylabel="average transfer rate (Mbit/s)")
    _size_axis(grid, summ.size_kb.unique())
    grid.figure.suptitle("Reducer transfer rate, 1:N fan-in (mirror of the paper's Fig. 7)",
                         y=1.03)
    return grid.figure


#: Fig. 8 rows: what is plotted, and its axis label
CPU_MEASURES = {
    "reducer_cpu_pct": "reducer CPU (%)",
    "reducer_cpu_ms_per_round": "reducer CPU per round (ms)",
    "system_busy_pct": "reducer machine busy (%)",
}


def figure_cpu(frame: pd.DataFrame):
    """Fig. 8 mirror: CPU against partition size, one column per period; one row each for
    the reducer's CPU share, its CPU time per round and the whole machine's busy share."""
    summ = cpu_summary(frame)
    if summ.empty:
        return None
    measures = [m for m in CPU_MEASURES if m in summ]
    long = summ.melt(id_vars=["protocol", "period_ms", "size_kb"], value_vars=measures,
                     var_name="measure", value_name="value")
    long["period"] = long.period_ms.map(lambda p: f"period {p:g} ms")
    grid = sns.relplot(data=long, x="size_kb", y="value", hue="protocol", col="period",
                       row="measure", row_order=measures, kind="line", marker="o",
                       hue_order=_order(summ), height=2.6, aspect=1.3,
                       facet_kws={"sharey": "row", "margin_titles": True})
    grid.set_titles(col_template="{col_name}", row_template="")
    for measure, axes in zip(measures, grid.axes):
        axes[0].set_ylabel(CPU_MEASURES[measure])
    _size_axis(grid, summ.size_kb.unique())
    grid.figure.suptitle("CPU use by period and size (mirror of the paper's Fig. 8)", y=1.03)
    return grid.figure


def figure_paper(frame: pd.DataFrame, rounds: pd.DataFrame | None = None):
    """Ours against the paper's numbers: TIPC over TCP per size (rate at the largest fan-in,
    reducer CPU per round at the shortest period), 95 % intervals, the paper's values drawn."""
    ref = tcp_reference(frame)
    if not ref or "tipc" not in set(frame.protocol):
        return None
    groups = round_rates(rounds if rounds is not None else pd.DataFrame(), frame)
    big_n = max((k[1] for k in groups), default=None)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    ax = axes[0]
    rows = []
    for (proto, n, size), tipc in sorted(groups.items()):
        if proto != "tipc" or n != big_n or (ref, n, size) not in groups:
            continue
        est = bootstrap_groups({"t": tipc, "r": groups[(ref, n, size)]},
                               lambda d: 100 * (d["t"].mean() / d["r"].mean() - 1)
                               if d["r"].mean() > 0 else float("nan"), "%")
        if est:
            rows.append((size, est))
    if rows:
        x = [r[0] for r in rows]
        y = [r[1].value for r in rows]
        err = [[r[1].value - (r[1].low if r[1].has_interval else r[1].value) for r in rows],
               [(r[1].high if r[1].has_interval else r[1].value) - r[1].value for r in rows]]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=f"ours, 1:{big_n} (95 % CI)")
    ax.axhline(PAPER["tipc_gain_small_avg_pct"], color="C2", ls=":",
               label="paper: +10 % on average, <= 8 KB")
    ax.axhline(PAPER["tipc_gain_small_max_pct"], color="C2", ls="--",
               label="paper: up to +16 %, <= 8 KB")
    ax.axvspan(PAPER["collapse_size_kb"], 64 * 1.2, color="C3", alpha=0.08,
               label="paper: TIPC 'very low' from 16 KB")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("partition size per mapper (KB)")
    ax.set_ylabel(f"TIPC rate over {ref} (%)")
    ax.set_title(f"rate, 1:{big_n} fan-in (Fig. 7)")
    ax.legend(fontsize=7)
    ax = axes[1]
    cpu = cpu_ratios(frame)
    if cpu is not None:
        ref, period, _metric, ratios = cpu
        diff = (100 * (ratios - 1)).rename("pct").reset_index()
        sns.lineplot(data=diff, x="size_kb", y="pct", marker="o", errorbar=("ci", 95),
                     err_style="bars", ax=ax, label=f"ours, period {period:g} ms", n_boot=500,
                     seed=1)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())
    low, high = PAPER["tipc_cpu_saving_pct"]
    ax.axhspan(-high, -low, xmax=1, color="C2", alpha=0.2, label="paper: -15..-7 %, <= 16 KB")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("partition size per mapper (KB)")
    ax.set_ylabel(f"TIPC reducer CPU over {ref} (%)")
    ax.set_title("CPU per round (Fig. 8), error bars over CPU repetitions")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _pct(a: float, b: float) -> float | None:
    return None if not b or pd.isna(a) or pd.isna(b) else 100.0 * (a - b) / b



def wire_share(frame: pd.DataFrame) -> pd.Series:
    """Median share of each protocol's payload that crossed the switch's bottleneck queue."""
    if "wire_share" not in frame:
        return pd.Series(dtype=float)
    return frame[frame.experiment == "rate"].groupby("protocol").wire_share.median()


def tipc_bypassed(frame: pd.DataFrame, threshold: float = 0.5) -> bool:
    """True if TIPC's data did not cross the lab's network (intra-kernel delivery)."""
    share = wire_share(frame)
    return "tipc" in share and share["tipc"] < threshold


def claims(frame: pd.DataFrame, rounds: pd.DataFrame | None = None,
           period_scale: float = 1.0) -> pd.DataFrame:
    """The paper's claims beside ours; ``period_scale`` maps the paper's 25 ms to ours.

    If TIPC's traffic did not cross the switch (all lab nodes in one kernel: Linux >= 5.5
    hands TIPC messages between namespaces directly), every claim involving TIPC is
    marked not testable, with the measured share of bytes on the wire as the reason.
    """
    table_ = _claims(frame, rounds if rounds is not None else pd.DataFrame(), period_scale)
    if tipc_bypassed(frame):
        share = wire_share(frame)
        why = (f"the switch queue saw {share['tipc']:.0%} of the packets TIPC's data needs "
               f"(TCP/SCTP: {share.drop('tipc').min():.0%}+): all nodes share one kernel, which "
               "delivers TIPC between namespaces directly; needs mappers and reducer in "
               "different kernels (VMs)")
        tipc = table_.claim_id.isin([c.id for c in CLAIMS.values()])
        table_.loc[tipc, "outcome"] = NOT_TESTABLE
        table_.loc[tipc, "reason"] = why
    return table_


PAPER_ROUNDS = 1000
INDICATIVE_BELOW = 100  # rounds per point under which a few-percent verdict is within noise


def evidence_note(frame: pd.DataFrame) -> str:
    """How much the verdicts rest on: rounds per rate point, and the spread of round rates."""
    rate = frame[(frame.experiment == "rate") & (frame.rounds > 0)]
    if rate.empty:
        return "no rate point completed a round"
    rounds = int(rate.rounds.min())
    # half the 5-95 % spread of one point's round rates, relative to its mean: the typical
    # uncertainty of a single round; the mean over n rounds narrows it by ~sqrt(n)
    spread = ((rate.rate_mbit_p95 - rate.rate_mbit_p5) / 2 / rate.rate_mbit_mean).median()
    text = (f"verdicts rest on {rounds}"
            + (f"-{int(rate.rounds.max())}" if rate.rounds.max() > rounds else "")
            + f" measured rounds per rate point (the paper: {PAPER_ROUNDS}); one round's rate "
            f"varies by about ±{spread:.0%} around its point's mean")
    if rounds < INDICATIVE_BELOW:
        text += (f"; with fewer than {INDICATIVE_BELOW} rounds a verdict within a few percent "
                 "of its threshold is indicative only -- raise `rounds` or use profile=paper")
    return text


# Each region quotes the paper (Section 5) and takes its precision: the rate and CPU numbers
# are stated plainly to 1 %, so they hold to half a percent either way.
CLAIMS = {
    "tipc_best": Claim(
        "s3.tipc_best_most", "TIPC has the best average rate in most (N, size) points",
        "most points", Region.above(0.5, "the paper: 'TIPC의 성능이 가장 우수' (TIPC performed "
                                    "best) in most cases of Fig. 7: more than half the points"),
        ""),
    "gain_avg": Claim(
        "s3.tipc_gain_avg", "TIPC over TCP, 1:48, <= 8 KB, average", "+10%",
        Region.stated(10, 1, "'평균 10%' (10 % on average)"), "%"),
    "gain_max": Claim(
        "s3.tipc_gain_max", "TIPC over TCP, 1:48, <= 8 KB, best case", "+16%",
        Region.stated(16, 1, "'최대 16%' (up to 16 %)"), "%"),
    "collapse": Claim(
        "s3.tipc_collapse", "TIPC collapses at >= 16 KB with many senders (worst TIPC/TCP rate)",
        "very low", Region.below(0.5, "the paper: '매우 낮았다' (very low) with no number; we "
                                 "read it as below half of TCP's rate"), "x"),
    "cpu": Claim(
        "s3.tipc_cpu_saving", "TIPC uses 7-15% less CPU than TCP (25 ms period, <= 16 KB)",
        "-15..-7%", Region.between(-15.5, -6.5, "the paper: '7~15%의 낮은 CPU 점유율' (7-15 % "
                                   "lower CPU share), stated to 1 %: -15.5..-6.5"), "%"),
}


def round_rates(rounds: pd.DataFrame, frame: pd.DataFrame) -> dict[tuple, np.ndarray]:
    """Per (protocol, mappers, size_kb) of the rate experiment: every measured round's rate.

    A point where no round completed delivered nothing: each round it asked for
    counts as rate 0 (see :func:`rate_summary`).
    """
    out: dict[tuple, np.ndarray] = {}
    if not rounds.empty:
        r = rounds[rounds.experiment == "rate"]
        for key, grp in r.groupby(["protocol", "mappers", "size_kb"]):
            out[tuple(key)] = grp.rate_mbit.to_numpy(dtype=float)
    rate = frame[frame.experiment == "rate"]
    if "rounds" in rate:
        for row in rate[rate["rounds"] == 0].itertuples():
            key = (row.protocol, int(row.mappers), int(row.size_kb))
            if key not in out:
                out[key] = np.zeros(max(int(getattr(row, "rounds_asked", 1) or 1), 1))
    return out


def _gain_stat(keys: list[tuple[tuple, tuple]], how: str):
    def stat(d) -> float:
        gains = [100 * (d[t].mean() / d[r].mean() - 1) for t, r in keys if d[r].mean() > 0]
        if not gains:
            return float("nan")
        return float(np.mean(gains) if how == "mean" else np.max(gains))
    return stat


def _claims(frame: pd.DataFrame, rounds: pd.DataFrame, period_scale: float) -> pd.DataFrame:
    groups = round_rates(rounds, frame)
    ref = tcp_reference(frame)
    out: list[Verdict] = []
    points = sorted({(n, s) for (_, n, s) in groups})
    protos = [p for p in ("tipc", ref, "sctp") if p and any(k[0] == p for k in groups)]
    tested = [pt for pt in points if all((p, *pt) in groups for p in protos)]
    if "tipc" in protos and len(protos) >= 2 and tested:
        def best_share(d) -> float:
            best = [max(protos, key=lambda p: d[(p, *pt)].mean()) for pt in tested]
            return sum(b == "tipc" for b in best) / len(best)
        est = bootstrap_groups({k: v for k, v in groups.items() if k[0] in protos
                                and k[1:] in tested}, best_share)
        est = est and replace(est, units="rounds")
        # "most" of N points is more than half: at least N // 2 + 1 of them
        most = (len(tested) // 2 + 1) / len(tested)
        claim = replace(CLAIMS["tipc_best"], region=Region.above(
            most, CLAIMS["tipc_best"].region.why + f": at least {len(tested) // 2 + 1} of "
            f"{len(tested)}"))
        out.append(judge(claim, est, f"share of {len(tested)} points, against "
                         + ", ".join(p for p in protos if p != "tipc")
                         + "; each point's rounds resampled"))
    else:
        out.append(not_testable(CLAIMS["tipc_best"], "needs TIPC and another protocol"))
    big_n = max((n for n, _ in points), default=None)
    why = f"1:{big_n} fan-in" + ("" if big_n == 48 else " (the paper: 1:48)")
    pairs = [((("tipc", big_n, s)), ((ref, big_n, s))) for n, s in points
             if n == big_n and s <= 8 and ("tipc", n, s) in groups and (ref, n, s) in groups]
    for key, how in (("gain_avg", "mean"), ("gain_max", "max")):
        if not pairs:
            out.append(not_testable(CLAIMS[key], "needs TIPC and TCP at <= 8 KB"))
            continue
        sub = {k: groups[k] for pair in pairs for k in pair}
        out.append(judge(CLAIMS[key], bootstrap_groups(sub, _gain_stat(pairs, how), "%"),
                         why + f"; sizes {', '.join(f'{p[0][2]} KB' for p in pairs)}"))
    big = [((("tipc", big_n, s)), ((ref, big_n, s))) for n, s in points
           if n == big_n and s >= PAPER["collapse_size_kb"] and ("tipc", n, s) in groups
           and (ref, n, s) in groups]
    if big:
        def worst(d) -> float:
            return float(min(d[t].mean() / d[r].mean() for t, r in big if d[r].mean() > 0))
        sub = {k: groups[k] for pair in big for k in pair}
        summ = rate_summary(frame)
        dead = summ[(summ.protocol == "tipc") & (summ.failed > 0) & (summ.mappers == big_n)
                    & (summ.size_kb >= PAPER["collapse_size_kb"])]
        note = "collapse = TIPC below half of TCP's rate at the largest fan-in"
        if not dead.empty:
            note += "; no TIPC round completed at " + ", ".join(
                f"1:{int(r.mappers)} x {int(r.size_kb)} KB" for r in dead.itertuples())
        out.append(judge(CLAIMS["collapse"], bootstrap_groups(sub, worst, "x"), note))
    else:
        out.append(not_testable(CLAIMS["collapse"], "needs TIPC and TCP at >= 16 KB"))
    out.append(_cpu_verdict(frame, period_scale))
    return table(out)


def cpu_ratios(frame: pd.DataFrame) -> tuple[str, float, str, pd.Series] | None:
    """TIPC's reducer CPU over TCP's at our shortest CPU period, paired per (CPU repetition,
    size): (the TCP it is compared with, the period, the column compared, the ratios).

    CPU time per round when the run has it: the reducer does the same work every round,
    so this is the paper's utilisation x period while rounds keep the period -- and,
    unlike utilisation, stays comparable when they overrun it (incast stalls, collapse).
    None without TIPC and a TCP in the CPU experiment.
    """
    cpu = frame[frame.experiment == "cpu"]
    ref = tcp_reference(cpu) if not cpu.empty else None
    if not ref or "tipc" not in set(cpu.protocol):
        return None
    if "repetition" not in cpu:  # a run from before repetitions: one pass
        cpu = cpu.assign(repetition=1)
    metric = "reducer_cpu_ms_per_round" if "reducer_cpu_ms_per_round" in cpu else \
        "reducer_cpu_pct"
    period = cpu.period_ms.min()
    w = cpu[cpu.period_ms == period].pivot_table(index=["repetition", "size_kb"],
                                                 columns="protocol", values=metric)
    if not {"tipc", ref} <= set(w.columns):
        return None
    return ref, float(period), metric, (w["tipc"] / w[ref]).rename("ratio")


def _cpu_verdict(frame: pd.DataFrame, period_scale: float) -> Verdict:
    """Reducer CPU per round, TIPC over TCP: the samples are the CPU repetitions.

    Each CPU repetition measured both protocols with fresh mapper fleets, back to
    back in a shuffled order; its ratio is the geometric mean over sizes <= 16 KB of
    TIPC's over TCP's, and the ratios are averaged on a log scale over repetitions
    (a repetition missing either protocol is left out: nothing to pair it with).
    """
    found = cpu_ratios(frame)
    if found is None:
        return not_testable(CLAIMS["cpu"], "needs a CPU experiment with TIPC and TCP")
    ref, period, metric, ratios = found
    small = ratios[ratios.index.get_level_values("size_kb") <= PAPER["cpu_size_max_kb"]]
    small = small[np.isfinite(small) & (small > 0)]
    per_rep = np.exp(np.log(small).groupby(level="repetition").mean())
    est = mean_estimate(per_rep, log=True, units="repetitions")
    cpu = frame[(frame.experiment == "cpu") & (frame.period_ms == period)
                & (frame.size_kb <= PAPER["cpu_size_max_kb"])]
    late = sorted({int(k) for k in cpu[cpu.protocol.isin(["tipc", ref])
                                       & (cpu.overruns > 0)].size_kb})
    what = "reducer CPU time per round" if metric == "reducer_cpu_ms_per_round" \
        else "reducer CPU share"
    reps = int(cpu.repetition.nunique()) if "repetition" in cpu else 1
    note = (f"{what} at our shortest period {period:g} ms (the paper's {PAPER['period_ms']} ms "
            f"x {period_scale:g} for our slower port), TIPC over {ref} paired within each CPU "
            f"repetition (fresh mapper fleets, shuffled order; geometric mean over sizes): "
            f"{len(per_rep)} of {reps} repetitions paired"
            + (f"; rounds overran the period at {', '.join(f'{k} KB' for k in late)}"
               if late else ""))
    return judge(CLAIMS["cpu"], est and est.map(lambda r: (r - 1) * 100, "%"), note)
