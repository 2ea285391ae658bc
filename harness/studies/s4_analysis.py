"""S4 analysis: summary per point, the paper's Fig. 3 mirrored, claims with verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..claims import Claim, change_claim, table, threshold_claim, value_claim

PAPER = {
    "tcp_peak_mbit": 460.0,
    "mptcp_peak_mbit": 934.0,
    "tcp_gain_1_to_10_pct": 5.0,
    "mptcp_gain_1_to_10_pct": 16.0,
}


def load(run_path: str | Path) -> tuple[pd.DataFrame, dict]:
    run_path = Path(run_path)
    frame = pd.read_parquet(run_path / "results.parquet")
    meta = json.loads((run_path / "run.json").read_text())
    return frame, meta


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean, spread and count of goodput per tool, transport and stream count."""
    grouped = frame.groupby(["tool", "transport", "streams"])["goodput_mbit"]
    out = grouped.agg(["mean", "std", "min", "max", "count"]).reset_index()
    return out.rename(columns={"mean": "goodput_mbit", "std": "sd_mbit", "count": "n"})


def path_usage(frame: pd.DataFrame) -> pd.DataFrame:
    """Share of client bytes on each path and MPTCP subflow joins, per transport."""
    agg = frame.groupby(["tool", "transport"]).agg(
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


def _point(summ: pd.DataFrame, tool: str, transport: str, streams: int, col: str = "goodput_mbit"):
    row = summ[(summ.tool == tool) & (summ.transport == transport) & (summ.streams == streams)]
    return None if row.empty else float(row[col].iloc[0])


def claims(frame: pd.DataFrame, tool: str = "iperf3") -> pd.DataFrame:
    summ = summary(frame)
    sub = summ[summ.tool == tool]
    out: list[Claim] = []
    peaks = {}
    for transport in ("tcp", "mptcp"):
        t = sub[sub.transport == transport]
        if t.empty:
            peaks[transport] = (None, None)
            continue
        best = t.loc[t.goodput_mbit.idxmax()]
        peaks[transport] = (best.goodput_mbit, best.sd_mbit)
    out.append(value_claim(
        f"TCP peak throughput ({tool})", PAPER["tcp_peak_mbit"], peaks["tcp"][0], "Mbit/s", 0.10,
        peaks["tcp"][1], "one 500 Mbit/s path; our goodput excludes TCP/IP/Ethernet headers"))
    out.append(value_claim(
        f"MPTCP peak throughput ({tool})", PAPER["mptcp_peak_mbit"], peaks["mptcp"][0], "Mbit/s",
        0.10, peaks["mptcp"][1], "two 500 Mbit/s paths into one 1 Gbit/s server link"))
    ratio = (peaks["mptcp"][0] / peaks["tcp"][0]
             if peaks["tcp"][0] and peaks["mptcp"][0] else None)
    out.append(threshold_claim(
        f"MPTCP aggregates both paths: MPTCP/TCP >= 1.8 ({tool})", "934/460 = 2.03x", ratio,
        f"{ratio:.2f}x" if ratio else "-", bool(ratio and ratio >= 1.8)))
    for transport, key, label in (("tcp", "tcp_gain_1_to_10_pct", "TCP"),
                                  ("mptcp", "mptcp_gain_1_to_10_pct", "MPTCP")):
        lo = _point(sub, tool, transport, 1)
        hi_streams = int(sub[sub.transport == transport].streams.max()) if not sub.empty else None
        hi = _point(sub, tool, transport, hi_streams) if hi_streams else None
        gain = (hi / lo - 1) * 100 if lo and hi and hi_streams and hi_streams > 1 else None
        why = ("a single upstream-MPTCP/CUBIC stream already fills its paths; the paper's "
               "v0.95+BALIA needed more streams" if transport == "mptcp" else
               "one CUBIC stream already fills a 500 Mbit/s path without loss")
        out.append(change_claim(f"{label} gain from 1 to {hi_streams or 10} streams ({tool})",
                                PAPER[key], gain, 5.0, why))
    usage = path_usage(frame)
    mp = usage[(usage.tool == tool) & (usage.transport == "mptcp")]
    if not mp.empty:
        share = float(mp.path2_share.iloc[0])
        joins = int(mp.subflow_joins.iloc[0])
        out.append(threshold_claim(
            f"MPTCP used both paths ({tool}, from counters)", "both interfaces carry traffic",
            share, f"path 2 carried {share:.0%} of bytes; {joins} subflow joins",
            0.25 <= share <= 0.75 and joins > 0))
    return table(out)


def all_claims(frame: pd.DataFrame) -> pd.DataFrame:
    """The claims for iperf3, and for GridFTP when the run has GridFTP points."""
    tables = [claims(frame, "iperf3")]
    if (frame.tool == "gridftp").any():
        tables.append(claims(frame, "gridftp"))
    return pd.concat(tables, ignore_index=True)


def figure(frame: pd.DataFrame, title: str = "S4: throughput vs parallel streams"):
    """Mirror of the paper's Fig. 3: throughput of TCP and MPTCP against parallel streams."""
    tools = sorted(frame.tool.unique(), key=lambda t: t != "iperf3")
    fig, axes = plt.subplots(1, len(tools), figsize=(6.5 * len(tools), 4.5), squeeze=False,
                             sharey=True)
    for ax, tool in zip(axes[0], tools):
        sub = frame[frame.tool == tool]
        sns.lineplot(data=sub, x="streams", y="goodput_mbit", hue="transport",
                     hue_order=["tcp", "mptcp"], style="transport", markers=True, dashes=False,
                     errorbar="sd", ax=ax)
        if tool == "iperf3":
            # The paper gives peaks and 1->10 stream gains; these are the points they imply.
            for transport, peak, gain, color in (
                    ("TCP", PAPER["tcp_peak_mbit"], PAPER["tcp_gain_1_to_10_pct"], "C0"),
                    ("MPTCP", PAPER["mptcp_peak_mbit"], PAPER["mptcp_gain_1_to_10_pct"], "C1")):
                ax.plot([1, 10], [peak / (1 + gain / 100), peak], linestyle=":", marker="x",
                        color=color, label=f"paper {transport} (from text)")
        ax.set_title(f"{tool}")
        ax.set_xlabel("parallel streams")
        ax.set_ylabel("goodput (Mbit/s)")
        ax.set_ylim(0, 1100)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
