"""S4's tables, its mirror of the paper's Fig. 3 and its calibration curve, apart from the
claims (:mod:`.registration`)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ...verdicts.validity import payload_rate_mbit
from .calibration import per_limit
from .design import (
    ANCHORED,
    CALIBRATION_FACTOR,
    PAPER,
    PAPER_ONE_STREAM,
    PAPER_PATH_MBIT,
    PAPER_SERVER_MBIT,
)
from .registration import invalid_rows, wire_mbit, with_limits

KEYS = ["tool", "limit", "sender_cpus", "transport", "streams"]


def load(run_path: str | Path) -> tuple[pd.DataFrame, dict]:
    run_path = Path(run_path)
    frame = pd.read_parquet(run_path / "results.parquet")
    meta = json.loads((run_path / "run.json").read_text())
    return frame, meta


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean, spread and count of goodput per tool, CPU limit, transport and stream count (per
    tool: results.csv holds iperf3 and GridFTP rows, and only iperf3's judge the claims)."""
    grouped = with_limits(frame).groupby(KEYS)["goodput_mbit"]
    out = grouped.agg(["mean", "std", "min", "max", "count"]).reset_index()
    return out.rename(columns={"mean": "goodput_mbit", "std": "sd_mbit", "count": "n"})


def path_usage(frame: pd.DataFrame) -> pd.DataFrame:
    """Share of client bytes on each path and MPTCP subflow joins, per transport and limit."""
    agg = with_limits(frame).groupby(["tool", "limit", "sender_cpus", "transport"]).agg(
        path1_bytes=("path1_tx_bytes", "sum"), path2_bytes=("path2_tx_bytes", "sum"),
        mptcp_connections=("mp_capable_syn_ack_rx", "sum"),
        subflow_joins=("mp_join_syn_ack_rx", "sum"), fallbacks=("mp_fallback", "sum"),
    ).reset_index()
    total = agg["path1_bytes"] + agg["path2_bytes"]
    agg["path1_share"] = agg["path1_bytes"] / total
    agg["path2_share"] = agg["path2_bytes"] / total
    return agg


def overhead(frame: pd.DataFrame) -> pd.DataFrame:
    """Harness time per point beyond the measuring tool's own duration."""
    out = frame[["tool", "transport", "streams", "repetition", "tool_s", "wall_s"]].copy()
    out["harness_s"] = out["wall_s"] - out["tool_s"]
    out["harness_share"] = out["harness_s"] / out["wall_s"]
    return out


def invalid_table(frame: pd.DataFrame, path_rate_mbit: float = PAPER_PATH_MBIT,
                  server_rate_mbit: float = PAPER_SERVER_MBIT) -> pd.DataFrame:
    """Every point of the run (iperf3 and GridFTP, every limit and stream count) faster than
    its wire, with its numbers: the report lists them beside the count of points checked,
    including those no claim rests on (the claims table names only its own)."""
    bad = invalid_rows(with_limits(frame), path_rate_mbit, server_rate_mbit)
    return pd.DataFrame([vars(p) for p in bad],
                        columns=["point", "quantity", "value", "bound", "unit", "why", "breaks"])


def figure(frame: pd.DataFrame, path_rate_mbit: float = PAPER_PATH_MBIT,
           server_rate_mbit: float = PAPER_SERVER_MBIT,
           title: str = "S4: throughput vs parallel streams, per sender CPU limit"):
    """Mirror of the paper's Fig. 3: goodput of TCP and MPTCP against parallel streams.

    One panel per tool and sender CPU limit. Dotted: the paper's numbers as its text
    gives them (the peak at 10 streams and the 1 -> 10 gain, so the 1-stream point is
    peak / (1 + gain)), measured with its CPU-limited sender. Dashed grey: what each wire
    carries as TCP payload. Red crosses: invalid points (faster than their wire).
    """
    frame = with_limits(frame)
    tools = sorted(frame.tool.unique(), key=lambda t: t != "iperf3")
    limits = sorted(frame.limit.unique(), key=lambda c: (c != "nolimit", c != ANCHORED, c))
    fig, axes = plt.subplots(len(tools), len(limits), squeeze=False, sharey=True,
                             figsize=(5.5 * len(limits), 4.2 * len(tools)))
    for row, tool in enumerate(tools):
        for col, label in enumerate(limits):
            ax = axes[row][col]
            sub = frame[(frame.tool == tool) & (frame.limit == label)]
            sns.lineplot(data=sub, x="streams", y="goodput_mbit", hue="transport",
                         hue_order=["tcp", "mptcp"], style="transport", markers=True,
                         dashes=False, errorbar="sd", ax=ax)
            for transport, color in (("tcp", "C0"), ("mptcp", "C1")):
                cap = payload_rate_mbit(wire_mbit(transport, path_rate_mbit, server_rate_mbit))
                ax.axhline(cap, color="grey", linestyle="--", linewidth=0.8)
                ax.annotate(f"{transport} wire: {cap:.0f}", (0.02, cap), fontsize=7,
                            xycoords=("axes fraction", "data"), va="bottom", color="grey")
                if tool == "iperf3":
                    peak = PAPER[f"{transport}_peak_mbit"]
                    gain = PAPER[f"{transport}_gain_1_to_10_pct"]
                    ax.plot([1, 10], [peak / (1 + gain / 100), peak], linestyle=":",
                            marker="x", color=color,
                            label=f"paper {transport.upper()} (004:66, limited sender; its 1-stream "
                                  f"point {peak / (1 + gain / 100):.0f} derived: {peak:g}/{1 + gain / 100:g})")
            bad = invalid_rows(sub, path_rate_mbit, server_rate_mbit)
            if bad:
                values = [b.value for b in bad]
                streams = [int(b.point.split(" streams")[0].split()[-1]) for b in bad]
                ax.scatter(streams, values, marker="X", s=80, color="red", zorder=5,
                           label=f"invalid ({len(bad)}): faster than its wire")
            cpus = ", ".join(f"{c:g}" for c in sorted(sub.sender_cpus.unique()))
            limit = "no CPU limit" if label == "nolimit" else f"sender {cpus} CPUs"
            ax.set_title(f"{tool}, {limit} ({label})")
            ax.set_xlabel("parallel streams")
            ax.set_ylabel("goodput (Mbit/s)")
            ax.set_ylim(0, max(1100, *(frame.goodput_mbit.max() * 1.05,)))
            ax.grid(alpha=0.3)
            ax.legend(loc="lower right", fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def calibration_figure(points: pd.DataFrame,
                       title: str = "S4: calibration of the sender's CPU limit (one stream)"):
    """One stream's goodput against the sender's CPU limit, per transport: each calibration
    point, the medians the rule compares, the paper's one-stream goodput (its peak / (1 +
    its gain)) with the registered tolerance as a band, and the chosen (anchored) limit."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    medians = per_limit(points)
    for transport, color in (("tcp", "C0"), ("mptcp", "C1")):
        mine = points[points.transport == transport]
        ax.scatter(mine.sender_cpus, mine.goodput_mbit, color=color, alpha=0.45, s=18)
        ax.plot(medians.sender_cpus, medians[f"{transport}_mbit"], marker="o", color=color,
                label=f"{transport.upper()}, median of the calibration's points")
        target = PAPER_ONE_STREAM[transport]
        ax.axhspan(target / CALIBRATION_FACTOR, target * CALIBRATION_FACTOR, color=color,
                   alpha=0.08)
        ax.axhline(target, color=color, linestyle=":",
                   label=f"paper {transport.upper()} one stream {target:.0f}, derived "
                         f"(x/÷ {CALIBRATION_FACTOR:g})")
    for cpus in sorted(points.anchored_cpus.unique()) if "anchored_cpus" in points else ():
        ax.axvline(cpus, color="black", linestyle="--", linewidth=1,
                   label=f"anchored limit {cpus:g} CPUs")
    ax.set_xlabel("sender CPU limit (CPUs: cgroup quota / period)")
    ax.set_ylabel("one-stream goodput (Mbit/s)")
    ax.set_ylim(0, 1100)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)
    ax.set_title(title)
    fig.tight_layout()
    return fig
