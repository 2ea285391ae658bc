"""S1's figures: the paper's latency and bandwidth figures mirrored (Fig. 2/4 and 3: each
method against message size, 95 % intervals over the repetitions, the paper's 4-byte points
beside ours) and the SMP claim's points at one and at two online CPUs.

They draw the archived results; the numbers the claims rest on are :mod:`.analysis` and
:mod:`.smp`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .frames import UP, at_cpus, mean_ci
from .registration import BW_SMALL_MAX, LABELS, PAPER
from .smp import SMP_CHECK, SMP_STACKS


def _size_axes(ax) -> None:
    """Both axes logarithmic (sizes in doublings), a grid, the size axis labelled."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.set_xlabel("message size (bytes)")


def _finish(fig, ax, ylabel: str, title: str):
    """The value axis labelled, the title, the legend; the figure laid out and returned."""
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _curves(ax, frame: pd.DataFrame, methods: list[str], value: str) -> None:
    for i, method in enumerate(methods):
        sub = frame[(frame.method == method) & frame[value].notna()]
        if sub.empty:
            continue
        points = [(size, *mean_ci(group[value])) for size, group in sub.groupby("size")]
        x, y, err = zip(*points)
        ax.errorbar(x, y, yerr=err, marker="o", markersize=3, capsize=2, color=f"C{i}",
                    label=LABELS.get(method, method))
    _size_axes(ax)


def figure_latency(frame: pd.DataFrame, title: str = "S1: latency against message size"):
    """Mirror of the paper's Fig. 2/4: half round-trip latency against size, 95 % intervals
    over the repetitions, the paper's 4-byte points (2001 hardware) beside ours."""
    fig, ax = plt.subplots(figsize=(8, 5))
    frame = at_cpus(frame, UP)  # the 2-CPU level is the SMP figure's
    _curves(ax, frame, ["verbs-send", "verbs-write", "verbs-send-events", "tcp-nodelay",
                        "tcp-nagle", "tcp-qperf"], "latency_us")
    for (key, label), marker in zip((("mvia_4b_us", "paper: M-VIA 4 B"),
                                     ("tcp_4b_us", "paper: TCP/IP 4 B"),
                                     ("clan_4b_us", "paper: cLAN 4 B (hardware)")), "xD*"):
        ax.plot([4], [PAPER[key]], marker=marker, linestyle="none", color="k", label=label)
    return _finish(fig, ax, "latency, half round trip (us)", title)


def figure_bandwidth(frame: pd.DataFrame, title: str = "S1: bandwidth against message size"):
    """Mirror of the paper's bandwidth figure: verbs and TCP (Nagle on and off), 95 % intervals."""
    fig, ax = plt.subplots(figsize=(8, 5))
    frame = at_cpus(frame, UP)
    _curves(ax, frame, ["verbs-send-bw", "verbs-write-bw", "tcp-count", "tcp-count-nodelay",
                        "tcp-nodelay", "tcp-nagle", "tcp-qperf"], "bw_mbit")
    ax.axvline(BW_SMALL_MAX, color="grey", linestyle=":", linewidth=1)
    ax.text(BW_SMALL_MAX, ax.get_ylim()[0], " 512 B (paper)", fontsize=7, color="grey",
            va="bottom")
    return _finish(fig, ax, "bandwidth (Mbit/s)", title)


def figure_smp(frame: pd.DataFrame, title: str = "S1: latency on 1 and on 2 online CPUs"):
    """The SMP claim's points: each stack's mean latency against size at both CPU levels,
    95 % intervals over the repetitions (polling, the cross-check, dashed)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, method in enumerate((*SMP_STACKS, SMP_CHECK)):
        for cpus, style in ((1, "--"), (2, "-")):
            sub = at_cpus(frame, cpus)
            sub = sub[(sub.method == method) & sub.latency_mean_us.notna()] \
                if "latency_mean_us" in sub else sub.iloc[0:0]
            if sub.empty:
                continue
            points = [(size, *mean_ci(g.latency_mean_us)) for size, g in sub.groupby("size")]
            x, y, err = zip(*points)
            ax.errorbar(x, y, yerr=err, marker="o" if cpus == 2 else "s", markersize=3,
                        capsize=2, color=f"C{i}", linestyle=style,
                        alpha=1.0 if method in SMP_STACKS else 0.5,
                        label=f"{LABELS[method]}, {cpus} CPU" + ("" if method in SMP_STACKS
                                                                else " (cross-check)"))
    _size_axes(ax)
    return _finish(fig, ax, "latency, mean half round trip (us)", title)
