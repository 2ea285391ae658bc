"""S3's figures: the paper's Fig. 7 (rate) and Fig. 8 (CPU) mirrored, and ours against the
paper's numbers. Every point is the mean over repetitions with its 95 % interval (Student t
below 30 repetitions: :func:`harness.verdicts.intervals.mean_estimate`); a point where a protocol
stopped before its last round (no round, or an error) is drawn as a cross on the axis's
floor, never as a rate of 0.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import ScalarFormatter

from ...verdicts.intervals import Estimate, mean_estimate
from .analysis import cpu_rows, kept_period, paired_ratios
from .registration import ORDER, PAPER, cpu_summary, rate_rows, tcp_reference

FLOOR = 0.03  # where failed points sit, as a fraction of the axis height


def _colours(protocols) -> dict[str, tuple]:
    palette = sns.color_palette("colorblind", len(ORDER))
    return {p: palette[ORDER.index(p) if p in ORDER else 0] for p in protocols}


def _order(protocols) -> list[str]:
    return sorted(set(protocols), key=lambda p: ORDER.index(p) if p in ORDER else len(ORDER))


def _size_axis(ax, sizes) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(sizes))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.minorticks_off()
    ax.set_xlabel("partition size per mapper (KB)")


def _bars(estimates: list[Estimate | None]) -> tuple[list, list, list]:
    """Values and asymmetric error bars (0 where there is no interval)."""
    y = [e.value if e else np.nan for e in estimates]
    low = [e.value - e.low if e and e.has_interval else 0.0 for e in estimates]
    high = [e.high - e.value if e and e.has_interval else 0.0 for e in estimates]
    return y, low, high


def _floor_marks(ax, xs, colour, label: str | None) -> None:
    if xs:
        ax.scatter(xs, [FLOOR] * len(xs), marker="x", s=60, color=colour, label=label,
                   transform=ax.get_xaxis_transform(), clip_on=False, zorder=5)


def figure_rate(frame: pd.DataFrame):
    """Fig. 7 mirror: mean rate against size, one panel per fan-in, one line per protocol."""
    rate = rate_rows(frame)
    if rate.empty:
        return None
    fanins = sorted(set(rate.mappers))
    fig, axes = plt.subplots(1, len(fanins), figsize=(3.6 * len(fanins), 3.4), sharey=True,
                             squeeze=False)
    colours = _colours(rate.protocol)
    for ax, n in zip(axes[0], fanins):
        marked = False
        for proto in _order(rate.protocol):
            rows = rate[(rate.protocol == proto) & (rate.mappers == n)]
            sizes = sorted(set(rows.size_kb))
            ests = [mean_estimate(rows[rows.size_kb == s].rate_mbit_mean, units="repetitions")
                    for s in sizes]
            y, low, high = _bars(ests)
            ax.errorbar(sizes, y, yerr=[low, high], marker="o", capsize=3,
                        color=colours[proto], label=proto)
            failed = sorted({int(r.size_kb) for r in rows[rows.failed].itertuples()})
            _floor_marks(ax, failed, colours[proto],
                         None if marked else "stopped before its last round (lost rounds at 0; "
                         "invalid if the tool failed)")
            marked = marked or bool(failed)
        ax.set_title(f"1:{n} fan-in")
        ax.set_ylim(bottom=0)
        _size_axis(ax, set(rate.size_kb))
    axes[0][0].set_ylabel("average transfer rate (Mbit/s)")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle("Reducer transfer rate, 1:N fan-in (mirror of the paper's Fig. 7); "
                 "mean over repetitions, 95 % interval", y=1.02)
    fig.tight_layout()
    return fig


def figure_cpu(frame: pd.DataFrame):
    """Fig. 8 mirror: the reducer machine's CPU share (sar's) against size, one panel per
    paper period; a ring where the point offered more than 10 % less than the paper's load
    (its rounds overran the period: out of the regime)."""
    summ = cpu_summary(frame)
    if summ.empty or "system_busy_pct" not in summ:
        return None
    cpu = frame[frame.experiment == "cpu"]
    periods = sorted(set(summ.period_paper_ms.dropna())) or [np.nan]
    fig, axes = plt.subplots(1, len(periods), figsize=(4.2 * len(periods), 3.4), sharey=True,
                             squeeze=False)
    colours = _colours(cpu.protocol)
    for ax, paper in zip(axes[0], periods):
        at = cpu[cpu.period_paper_ms == paper] if "period_paper_ms" in cpu else cpu
        for proto in _order(at.protocol):
            rows = at[at.protocol == proto]
            sizes = sorted(set(rows.size_kb))
            ests = [mean_estimate(rows[rows.size_kb == s].system_busy_pct, units="repetitions")
                    for s in sizes]
            y, low, high = _bars(ests)
            ax.errorbar(sizes, y, yerr=[low, high], marker="o", capsize=3,
                        color=colours[proto], label=proto)
            late = [s for s in sizes if not kept_period(rows[rows.size_kb == s]).all()]
            ax.scatter(late, [y[sizes.index(s)] for s in late], s=140, facecolors="none",
                       edgecolors=colours[proto], zorder=4)
        ours = at.period_ms.iloc[0] if len(at) else np.nan
        ax.set_title(f"paper {paper:g} ms = ours {ours:g} ms")
        ax.set_ylim(bottom=0)
        _size_axis(ax, set(at.size_kb))
    axes[0][0].set_ylabel("reducer machine CPU busy (%)")
    axes[0][-1].legend(fontsize=7, title="ring: load > 10 % low", title_fontsize=7)
    fig.suptitle("CPU by period and size (mirror of the paper's Fig. 8); mean over CPU "
                 "repetitions, 95 % interval", y=1.02)
    fig.tight_layout()
    return fig


#: the ratio axis of figure_paper: a log scale, so that 2x and 0.5x are equally far from 1x
#: (the estimates are geometric means); bars beyond it (two repetitions give a Student t
#: factor of 12.7) are cut at its edge
RATIO_AXIS = (0.25, 4.0)


def _ratio_axis(ax, label: str) -> None:
    ax.set_yscale("log")
    ax.set_ylim(*RATIO_AXIS)
    ticks = [0.25, 0.5, 1.0, 2.0, 4.0]
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"{t:g}x ({(t - 1) * 100:+.0f} %)" for t in ticks])
    ax.minorticks_off()
    ax.set_ylabel(label)
    ax.axhline(1, color="grey", lw=0.8)


def _ratio_per_size(rate: pd.DataFrame, n: int, ref: str) -> tuple[list, list, list]:
    """Per size at 1:n: TIPC's rate over ``ref`` (paired per repetition, geometric mean over
    repetitions), and the sizes where a point stopped early (invalid)."""
    sizes, ests, failed = [], [], []
    for size in sorted(set(rate[rate.mappers == n].size_kb)):
        ratios, rows, _ = paired_ratios(rate, [(n, size)], ref)
        if rows.failed.any():
            failed.append(size)
        sizes.append(size)
        ests.append(mean_estimate(ratios.where(ratios > 0).dropna(), log=True,
                                  units="repetitions"))
    return sizes, ests, failed


def figure_paper(frame: pd.DataFrame):
    """Ours against the paper's numbers: TIPC over TCP per size -- the rate at 1:48 (the
    paper: +10 % on average and up to +16 % at <= 8 KB, 'very low' from 16 KB) and the
    machine's CPU at the paper's 25 ms (the paper: 7-15 % less at <= 16 KB)."""
    rate = rate_rows(frame)
    ref = tcp_reference(rate) if not rate.empty else None
    if not ref or "tipc" not in set(rate.protocol):
        return None
    n = PAPER["fanin"] if PAPER["fanin"] in set(rate.mappers) else int(rate.mappers.max())
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    sizes, ests, failed = _ratio_per_size(rate, n, ref)
    y, low, high = _bars(ests)
    left.errorbar(sizes, y, yerr=[low, high], marker="o", capsize=3, color="C0",
                  label=f"ours, 1:{n} (95 % interval over repetitions)")
    _floor_marks(left, failed, "C3", "a protocol stopped before its last round (lost rounds "
                 "counted at 0)")
    small = [s for s in sizes if s <= PAPER["gain_size_max_kb"]] or [1, 8]
    left.hlines(1 + PAPER["tipc_gain_small_avg_pct"] / 100, min(small), max(small),
                color="C2", ls=":", label="paper: +10 % on average, <= 8 KB")
    left.hlines(1 + PAPER["tipc_gain_small_max_pct"] / 100, min(small), max(small),
                color="C2", ls="--", label="paper: up to +16 %, <= 8 KB")
    left.hlines(0.5, min(PAPER["collapse_sizes_kb"]), max(PAPER["collapse_sizes_kb"]),
                color="C3", ls="--", label="paper: 'very low' from 16 KB (read: below 0.5x)")
    _size_axis(left, sizes)
    _ratio_axis(left, f"TIPC rate / {ref} rate")
    left.set_title(f"rate, 1:{n} fan-in (Fig. 7)")
    left.legend(fontsize=7)
    rows, why = cpu_rows(frame)
    cref = tcp_reference(rows) if not rows.empty else None
    if cref and "tipc" in set(rows.protocol):
        w = rows.pivot_table(index=["repetition", "size_kb"], columns="protocol",
                             values="system_busy_pct")
        ratio = (w["tipc"] / w[cref]).where(lambda r: r > 0).dropna()
        csizes = sorted(set(ratio.index.get_level_values("size_kb")))
        y, low, high = _bars([mean_estimate(ratio.xs(s, level="size_kb"), log=True,
                                            units="repetitions") for s in csizes])
        right.errorbar(csizes, y, yerr=[low, high], marker="o", capsize=3, color="C0",
                       label=f"ours, period {rows.period_ms.iloc[0]:g} ms, every CPU "
                             "repetition (95 % interval)")
        _size_axis(right, csizes)
    else:
        right.text(0.5, 0.5, f"no CPU claim points: {why}", ha="center", va="center",
                   transform=right.transAxes, fontsize=8, wrap=True)
    low_pct, high_pct = PAPER["tipc_cpu_saving_pct"]
    right.axhspan(1 - high_pct / 100, 1 - low_pct / 100, color="C2", alpha=0.2,
                  label="paper: 7-15 % less, 25 ms, <= 16 KB")
    _ratio_axis(right, f"TIPC machine CPU / {cref or 'TCP'}'s")
    right.set_title(f"CPU at the paper's {PAPER['period_ms']} ms (Fig. 8)")
    right.legend(fontsize=7)
    fig.suptitle("TIPC over TCP against the paper's numbers (log scale; bars cut at the "
                 "axis)", y=1.02)
    fig.tight_layout()
    return fig
