"""S0 figures: the paper's Fig. 5 mirrored (latency and bandwidth per message size, three
methods), the ratios to direct with the paper's numbers drawn in, and the unshaped relay
benchmark. The numbers behind them: :mod:`.analysis`."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from .analysis import COLORS, KB, LABELS, METHODS, PAPER, per_repetition, size_label
from .common import BENCH_PATHS
from .distance_verdict import far_ratios


def _log2_axis(ax) -> None:
    ax.set_xscale("log", base=2)
    ticks = [1, 16, 256, 4 * KB, 64 * KB, 1 << 20]
    ax.set_xticks(ticks, [size_label(t) for t in ticks])
    ax.set_xlabel("message size")
    ax.grid(alpha=0.3, which="both")


def figure(frame: pd.DataFrame, title: str = "S0: latency and bandwidth per message size"):
    """Mirror of the paper's Fig. 5: latency and bandwidth against message size, three methods."""
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    data = frame.assign(label=frame.method.map(LABELS))
    order = [LABELS[m] for m in METHODS]
    palette = {LABELS[m]: COLORS[m] for m in METHODS}
    for ax, col, ylabel, log in (
            (axes[0], "half_rtt_us", "latency, half round trip (us)", True),
            (axes[1], "stream_mbit", "streaming bandwidth (Mbit/s)", False),
            (axes[2], "pingpong_mbit", "ping-pong bandwidth, size / half-RTT (Mbit/s)", False)):
        sns.lineplot(data=data, x="size", y=col, hue="label", hue_order=order, palette=palette,
                     style="label", markers=True, dashes=False, errorbar="sd", ax=ax)
        _log2_axis(ax)
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8, title=None)
    axes[0].set_title("latency (lines: median of repetitions, band: ±1 sd)")
    axes[1].set_title("streaming bandwidth")
    axes[2].set_title("bandwidth as NetPIPE reports it")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def ratios_per_repetition(frame: pd.DataFrame) -> pd.DataFrame:
    """Per repetition and size: the paired ratios behind the claims (long form, for plots)."""
    out = []
    for metric in ("half_rtt_us", "stream_mbit", "pingpong_mbit"):
        w = per_repetition(frame, metric)
        if not set(METHODS) <= set(w.columns):
            continue
        out.append(pd.DataFrame({"proxies_x": w.proxies / w.direct,
                                 "nat_x": w.nat_srd / w.direct,
                                 "nat_vs_proxies_pct": (w.nat_srd / w.proxies - 1) * 100,
                                 "metric": metric}).reset_index())
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def _ci_line(ax, data, y, **kw) -> None:
    sns.lineplot(data=data, x="size", y=y, errorbar=("ci", 95), err_style="band", n_boot=500,
                 seed=1, ax=ax, **kw)


def ratio_figure(frame: pd.DataFrame):
    """Ratios to direct, and NAT + SRD against two proxies, with the paper's numbers drawn in.

    Lines: mean over repetitions of each repetition's paired ratio; bands: 95 % bootstrap
    intervals over the repetitions.
    """
    r = ratios_per_repetition(frame)
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
    ax = axes[0]
    lat = r[r.metric == "half_rtt_us"]
    _ci_line(ax, lat, "proxies_x", marker="o", color=COLORS["proxies"],
             label="two proxies / direct")
    _ci_line(ax, lat, "nat_x", marker="s", color=COLORS["nat_srd"], label="NAT + SRD / direct")
    ax.axhspan(2.0, 2.2, color=COLORS["proxies"], alpha=0.12,
               label="paper: two proxies about 2.1x")
    ax.axhspan(1.4, 1.6, color=COLORS["nat_srd"], alpha=0.12,
               label="paper: NAT + SRD about 1.5x")
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_ylabel("latency / direct latency")
    ax.set_title("latency relative to direct")
    ax = axes[1]
    for metric, ls, name in (("stream_mbit", "-", "streaming"), ("pingpong_mbit", "--",
                                                                  "ping-pong")):
        part = r[r.metric == metric]
        _ci_line(ax, part, "proxies_x", linestyle=ls, marker="o", color=COLORS["proxies"],
                 label=f"two proxies ({name})")
        _ci_line(ax, part, "nat_x", linestyle=ls, marker="s", color=COLORS["nat_srd"],
                 label=f"NAT + SRD ({name})")
    ax.axhspan(0, 0.5, color="grey", alpha=0.12, label="paper: both at most 0.5x")
    top = float(np.nanmax(r[r.metric != "half_rtt_us"][["proxies_x", "nat_x"]].to_numpy())) \
        if len(r) else 1.3
    ax.set_ylim(0, max(1.3, top * 1.05))
    ax.set_ylabel("bandwidth / direct bandwidth")
    ax.set_title("bandwidth relative to direct")
    ax = axes[2]
    _ci_line(ax, r[r.metric == "stream_mbit"], "nat_vs_proxies_pct", marker="o", color="C1",
             label="streaming")
    _ci_line(ax, r[r.metric == "pingpong_mbit"], "nat_vs_proxies_pct", marker="s",
             linestyle="--", color="C4", label="ping-pong")
    ax.fill_between([KB, 32 * KB], *PAPER["gain_1k_32k_pct"], color="C2", alpha=0.25,
                    label="paper: +18..27% (1-32 KB)")
    ax.fill_between([128 * KB, 1 << 20], *PAPER["gain_128k_1m_pct"], color="C2", alpha=0.45,
                    label="paper: +6..16% (128 KB-1 MB)")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_ylabel("NAT + SRD bandwidth over two proxies (%)")
    ax.set_title("what NAT on the source front gains")
    for ax in axes:
        _log2_axis(ax)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def bench_figure(bench: pd.DataFrame):
    """Unshaped lab: kernel forwarding, socat and srd side by side (one or two relay hops)."""
    b = bench[bench.repetition > 0].copy()
    order = [p for p in BENCH_PATHS if p in set(b.path)]
    b["iperf_gbit"] = b.iperf_mbit / 1e3
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    palette = {"direct": "C0", "nat_socat": "C7", "nat_srd": "C2", "proxies_socat": "C8",
               "proxies_srd": "C3", "proxies_srdmux": "C1"}
    sns.barplot(data=b, x="path", y="iperf_gbit", order=order, hue="path", palette=palette,
                errorbar=("pi", 100), ax=axes[0], legend=False)
    axes[0].set_ylabel("iperf3 throughput (Gbit/s); bar: median, whisker: min..max")
    axes[0].set_title("throughput, unshaped")
    sns.barplot(data=b, x="path", y="half_rtt_1b_us", order=order, hue="path", palette=palette,
                errorbar=("pi", 100), ax=axes[1], legend=False)
    axes[1].set_ylabel("1 B half round trip (us)")
    axes[1].set_title("latency, unshaped")
    for ax in axes:
        ax.set_xlabel("")
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def far_figure(far: pd.DataFrame):
    """The distance sweep: NAT + SRD / two proxies against the front-to-front one-way delay."""
    r = far_ratios(far).reset_index()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    sns.pointplot(data=r, x="one_way_delay_ms", y="nat_vs_proxies_x", errorbar=("ci", 95),
                  color=COLORS["nat_srd"], ax=ax, native_scale=True)
    ax.axhline(1.0, color="grey", lw=1)
    ax.axhspan(0.95, 1.05, color="grey", alpha=0.15, label="negligible (claim's region)")
    ax.axhline(1 + PAPER["nat_vs_proxies_latency_pct"] / 100, color=COLORS["nat_srd"], ls=":",
               label="paper at 0 ms: -28 %")
    ax.set_xlabel("front-to-front one-way delay (ms, netem)")
    ax.set_ylabel("latency, NAT + SRD / two proxies (1 B-1 KB)")
    ax.set_title("S0: the relay's cost as the clusters move apart")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig
