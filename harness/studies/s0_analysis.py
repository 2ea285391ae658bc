"""S0 analysis: the paper's Fig. 5 mirrored, ratios to direct, Table 1 beside ours, verdicts.

Two bandwidth definitions are kept apart: *streaming* (one-way, back-to-back
messages; what the harness's issue asks for) and *ping-pong* (size / half
round trip, NetPIPE's default and most likely the paper's). Claims about
bandwidth are judged on both, labelled.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..claims import (
    NO_DATA,
    NOT_REPRODUCED,
    PARTLY,
    REPRODUCED,
    Claim,
    change_claim,
    table,
    threshold_claim,
    value_claim,
)

METHODS = ("direct", "proxies", "nat_srd")
LABELS = {"direct": "1) direct", "proxies": "2) two proxies", "nat_srd": "3) NAT + SRD"}
COLORS = {"direct": "C0", "proxies": "C3", "nat_srd": "C2"}
KB = 1024
SMALL = (1, KB)  # latency claims: messages up to 1 KB (not bandwidth-bound)
PAPER = {
    "proxies_latency_x": 2.1,
    "nat_latency_x": 1.5,
    "nat_vs_proxies_latency_pct": -28.0,
    "gain_1k_32k_pct": (18.0, 27.0),
    "gain_128k_1m_pct": (6.0, 16.0),
    "gain_overall_pct": 25.0,
}
TARGETS = {"hop_us": 30.0, "srd_vs_socat": 1.0, "srd_vs_forward": 0.70}

PAPER_TABLE1 = pd.DataFrame([
    {"method": "NAT", "front-to-front connections": "many (one per flow)",
     "intra-cluster transport": "TCP", "implemented in": "kernel"},
    {"method": "Gateway", "front-to-front connections": "one",
     "intra-cluster transport": "vendor MPI", "implemented in": "kernel"},
    {"method": "Proxy", "front-to-front connections": "one",
     "intra-cluster transport": "TCP", "implemented in": "user space"},
])


def load(run_path: str | Path) -> tuple[dict[str, pd.DataFrame], dict]:
    run_path = Path(run_path)
    tables = {name: pd.read_parquet(run_path / f"{name}.parquet")
              for name in ("results", "connections", "bench", "nat")
              if (run_path / f"{name}.parquet").exists()}
    meta = json.loads((run_path / "run.json").read_text())
    return tables, meta


# -- per size ---------------------------------------------------------------------------------

def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per method and size: median over repetitions, spread across them, and within them."""
    g = frame.groupby(["method", "size"])
    out = g.agg(half_rtt_us=("half_rtt_us", "median"), half_rtt_sd_us=("half_rtt_us", "std"),
                half_rtt_p10_us=("half_rtt_p10_us", "median"),
                half_rtt_p90_us=("half_rtt_p90_us", "median"),
                stream_mbit=("stream_mbit", "median"), stream_sd_mbit=("stream_mbit", "std"),
                pingpong_mbit=("pingpong_mbit", "median"), repetitions=("repetition", "nunique"),
                iterations=("iterations", "sum")).reset_index()
    out["label"] = out.method.map(LABELS)
    order = {m: i for i, m in enumerate(METHODS)}
    return out.sort_values(["size", "method"], key=lambda s: s.map(order) if s.name == "method"
                           else s).reset_index(drop=True)


def ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """Per size: each method against direct, and NAT + SRD against two proxies."""
    s = summary(frame).set_index(["size", "method"])
    rows = []
    for size in sorted(frame["size"].unique()):
        try:
            d, px, nt = (s.loc[(size, m)] for m in METHODS)
        except KeyError:
            continue
        rows.append({
            "size": int(size),
            "proxies_latency_x": px.half_rtt_us / d.half_rtt_us,
            "nat_latency_x": nt.half_rtt_us / d.half_rtt_us,
            "nat_vs_proxies_latency_pct": (nt.half_rtt_us / px.half_rtt_us - 1) * 100,
            "proxies_stream_x": px.stream_mbit / d.stream_mbit,
            "nat_stream_x": nt.stream_mbit / d.stream_mbit,
            "nat_vs_proxies_stream_pct": (nt.stream_mbit / px.stream_mbit - 1) * 100,
            "proxies_pingpong_x": px.pingpong_mbit / d.pingpong_mbit,
            "nat_pingpong_x": nt.pingpong_mbit / d.pingpong_mbit,
            "nat_vs_proxies_pingpong_pct": (nt.pingpong_mbit / px.pingpong_mbit - 1) * 100,
        })
    return pd.DataFrame(rows)


def key_sizes(frame: pd.DataFrame, sizes=(1, KB, 32 * KB, 128 * KB, 1 << 20)) -> pd.DataFrame:
    """Latency and bandwidth of each method at the paper's landmark sizes, side by side."""
    s = summary(frame)
    s = s[s["size"].isin(sizes)]
    wide = s.pivot(index="size", columns="method",
                   values=["half_rtt_us", "stream_mbit", "pingpong_mbit"])
    wide = wide.reindex(columns=[(v, m) for v in ("half_rtt_us", "stream_mbit", "pingpong_mbit")
                                 for m in METHODS if (v, m) in wide.columns])
    wide.index = [size_label(i) for i in wide.index]
    return wide


def size_label(size: int) -> str:
    size = int(size)
    if size >= 1 << 20:
        return f"{size >> 20} MB"
    if size >= KB:
        return f"{size // KB} KB"
    return f"{size} B"


def _in(r: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame:
    return r[(r["size"] >= lo) & (r["size"] <= hi)]


# -- the unshaped relay benchmark -------------------------------------------------------------

def bench_summary(bench: pd.DataFrame) -> pd.DataFrame:
    """Per path: best (max throughput, min latency) of repetitions and the spread."""
    b = bench[bench.repetition > 0]
    out = b.groupby(["path", "relay", "hops"]).agg(
        iperf_best_mbit=("iperf_mbit", "max"), iperf_min_mbit=("iperf_mbit", "min"),
        iperf_median_mbit=("iperf_mbit", "median"),
        half_rtt_1b_best_us=("half_rtt_1b_us", "min"),
        half_rtt_1b_median_us=("half_rtt_1b_us", "median"),
        half_rtt_1b_max_us=("half_rtt_1b_us", "max"),
        half_rtt_64k_us=("half_rtt_64k_us", "median"),
        relay_cpu_s_per_gb=("relay_cpu_s_per_gb", "median"),
        relay_cpu_cores=("relay_cpu_cores", "median"),
        retransmits=("retransmits", "sum"), repetitions=("repetition", "nunique"),
    ).reset_index()
    order = {p: i for i, p in enumerate(("direct", "nat_socat", "nat_srd", "proxies_socat",
                                         "proxies_srd"))}
    return out.sort_values("path", key=lambda s: s.map(order)).reset_index(drop=True)


def hop_costs(bench: pd.DataFrame) -> dict[str, float | None]:
    """Half-RTT a relay hop adds (1 B, median over repetitions of paired differences)."""
    b = bench[bench.repetition > 0].pivot_table(index="repetition", columns="path",
                                                values="half_rtt_1b_us")

    def med(series) -> float | None:
        series = series.dropna()
        return float(series.median()) if len(series) else None

    out: dict[str, float | None] = {}
    for relay in ("srd", "socat"):
        nat_col, px_col = f"nat_{relay}", f"proxies_{relay}"
        out[f"nat_{relay}_hop_us"] = med(b[nat_col] - b["direct"]) \
            if {nat_col, "direct"} <= set(b.columns) else None
        out[f"proxies_{relay}_per_hop_us"] = med((b[px_col] - b["direct"]) / 2) \
            if {px_col, "direct"} <= set(b.columns) else None
    return out


def bench_targets(bench: pd.DataFrame) -> pd.DataFrame:
    """The issue's targets for our relay, judged on best-of-repetitions values.

    Contention from other users of the shared machine only ever slows a path
    down, so the best repetition is the least disturbed one; the spread is
    reported beside it.
    """
    bs = bench_summary(bench).set_index("path")
    hops = hop_costs(bench)
    out: list[Claim] = []

    def best(path: str):
        return float(bs.loc[path, "iperf_best_mbit"]) if path in bs.index else None

    def rng(path: str) -> str:
        r = bs.loc[path]
        return f"{r.iperf_min_mbit / 1e3:.1f}..{r.iperf_best_mbit / 1e3:.1f}"

    for key, label in (("nat_srd_hop_us", "one SRD hop: (NAT + SRD) - direct, 1 B half-RTT"),
                       ("proxies_srd_per_hop_us", "per srd hop in two proxies: "
                                                  "(two proxies - direct) / 2")):
        v = hops.get(key)
        out.append(threshold_claim(f"relay adds <= {TARGETS['hop_us']:g} us per hop ({label})",
                                   f"<= {TARGETS['hop_us']:g} us (target)", v,
                                   f"{v:.1f} us" if v is not None else "-",
                                   v is not None and v <= TARGETS["hop_us"],
                                   "median of per-repetition differences on the unshaped lab"))
    for kind in ("nat", "proxies"):
        srd, socat, fwd = best(f"{kind}_srd"), best(f"{kind}_socat"), best("direct")
        if srd and socat:
            out.append(threshold_claim(
                f"srd throughput >= socat ({kind})", ">= 1.0x socat (target)", srd / socat,
                f"{srd / socat:.2f}x ({srd / 1e3:.1f} vs {socat / 1e3:.1f} Gbit/s; "
                f"ranges {rng(f'{kind}_srd')} / {rng(f'{kind}_socat')})",
                srd / socat >= TARGETS["srd_vs_socat"]))
        if srd and fwd and kind == "nat":
            out.append(threshold_claim(
                "srd throughput >= 70% of kernel forwarding (NAT + SRD vs direct)",
                ">= 0.70x direct (target)", srd / fwd,
                f"{srd / fwd:.2f}x ({srd / 1e3:.1f} vs {fwd / 1e3:.1f} Gbit/s; "
                f"ranges {rng('nat_srd')} / {rng('direct')})",
                srd / fwd >= TARGETS["srd_vs_forward"],
                "a relayed stream crosses two more TCP stacks and a user-space process "
                "than a forwarded one, on a 2-core machine shared by sender, receiver, relay"))
    return table(out)


# -- claims -----------------------------------------------------------------------------------

def _range_claim(claim: str, lo: float, hi: float, values: pd.Series, tol_pp: float,
                 why: str) -> Claim:
    """A percentage range from the paper against ours per size; judged on our median."""
    values = values.dropna()
    paper = f"+{lo:g}..+{hi:g}%"
    if values.empty:
        return Claim(claim, paper, "-", NO_DATA, why)
    med = float(values.median())
    ours = f"{med:+.1f}% (sizes: {values.min():+.0f}..{values.max():+.0f}%)"
    inside = ((values >= lo - tol_pp) & (values <= hi + tol_pp)).mean()
    if lo - tol_pp <= med <= hi + tol_pp:
        verdict = f"{REPRODUCED} (tolerance ±{tol_pp:g} pp)"
    elif inside > 0:
        verdict = f"{PARTLY}: {inside:.0%} of sizes in range"
    else:
        verdict = f"{NOT_REPRODUCED} (tolerance ±{tol_pp:g} pp)"
    return Claim(claim, paper, ours, verdict, why)


def claims(frame: pd.DataFrame, bench: pd.DataFrame | None = None) -> pd.DataFrame:
    r = ratios(frame)
    s = summary(frame).set_index(["size", "method"])
    small = _in(r, *SMALL)
    hops = hop_costs(bench) if bench is not None and not bench.empty else {}
    bsum = bench_summary(bench).set_index("path") if bench is not None and not bench.empty \
        else None
    direct_1b = s.loc[(1, "direct"), "half_rtt_us"] if (1, "direct") in s.index else None
    hop = hops.get("proxies_srd_per_hop_us")
    why_lat = (f"median over 1 B-1 KB. Direct is {direct_1b:.0f} us (veth: no NIC, wire or "
               "interrupt moderation)" if direct_1b else "median over 1 B-1 KB")
    if hop is not None:
        why_lat += f"; a relay hop adds {hop:.0f} us (unshaped bench): a fixed cost against a " \
                   "small base"
    out: list[Claim] = [
        value_claim("Latency: two proxies / direct", PAPER["proxies_latency_x"],
                    small.proxies_latency_x.median() if len(small) else None, "x", 0.15,
                    why=why_lat),
        value_claim("Latency: NAT + SRD / direct", PAPER["nat_latency_x"],
                    small.nat_latency_x.median() if len(small) else None, "x", 0.15,
                    why=why_lat),
        change_claim("Latency: NAT + SRD vs two proxies", PAPER["nat_vs_proxies_latency_pct"],
                     small.nat_vs_proxies_latency_pct.median() if len(small) else None, 5.0,
                     "NAT on fa replaces one user-space hop (two socket terminations and a "
                     "process wake-up) with kernel forwarding"),
    ]
    big = _in(r, 128 * KB, 1 << 20)
    link_bound = ""
    if (1 << 20, "direct") in s.index:
        link_bound = ("1 MB streams at " + "/".join(
            f"{s.loc[(1 << 20, m), 'stream_mbit']:.0f}" for m in METHODS)
            + " Mbit/s (direct/proxies/NAT)")
    if bsum is not None and "nat_srd" in bsum.index:
        link_bound += (f"; unshaped, one srd hop carries "
                       f"{bsum.loc['nat_srd', 'iperf_best_mbit'] / 1e3:.1f} Gbit/s at "
                       f"{bsum.loc['nat_srd', 'relay_cpu_s_per_gb']:.2f} CPU-s/GB (splice): the "
                       "relay is not what limits 100 Mbit/s")
    small_msgs = ""
    if (1, "direct") in s.index:
        small_msgs = (f"; tiny messages are limited by one send() per message "
                      f"({s.loc[(1, 'direct'), 'stream_mbit']:.1f} Mbit/s direct at 1 B)")
    for metric, name, why in (
            ("stream", "streaming", link_bound + small_msgs),
            ("pingpong", "ping-pong (NetPIPE: size / half-RTT)",
             "follows latency: the relay hop's fixed cost matters up to ~1 KB; from 4 KB "
             "serialisation on the 100 Mbit/s links dominates every method alike")):
        worst = max(r[f"proxies_{metric}_x"].median(), r[f"nat_{metric}_x"].median()) \
            if len(r) else None
        out.append(threshold_claim(
            f"Bandwidth ({name}): both relayed methods below half of direct",
            "< 0.5x direct", worst,
            f"two proxies {r[f'proxies_{metric}_x'].median():.2f}x, NAT + SRD "
            f"{r[f'nat_{metric}_x'].median():.2f}x (median over sizes)" if len(r) else "-",
            worst is not None and worst < 0.5, why))
        col = f"nat_vs_proxies_{metric}_pct"
        out.append(_range_claim(f"Bandwidth ({name}): NAT + SRD over two proxies, 1-32 KB",
                                *PAPER["gain_1k_32k_pct"], _in(r, KB, 32 * KB)[col], 3.0, why))
        out.append(_range_claim(f"Bandwidth ({name}): NAT + SRD over two proxies, 128 KB-1 MB",
                                *PAPER["gain_128k_1m_pct"], big[col], 3.0, why))
        overall = _in(r, KB, 1 << 20)[col]
        out.append(change_claim(f"Bandwidth ({name}): NAT + SRD over two proxies, overall "
                                "(1 KB-1 MB)", PAPER["gain_overall_pct"],
                                overall.median() if len(overall) else None, 5.0, why))
    return table(out)


# -- Table 1 ----------------------------------------------------------------------------------

def table1(connections: pd.DataFrame) -> pd.DataFrame:
    """What our three methods actually did with ``flows`` open flows, measured (ss, conntrack)."""
    where = {"direct": "kernel (IP forwarding on fa and fb)",
             "proxies": "user space (srd on fa and on fb)",
             "nat_srd": "kernel NAT on fa + user-space SRD on fb"}
    rows = []
    for _, c in connections.iterrows():
        n = int(c.flows)
        if c.method == "direct":
            f2f = (f"0 terminate at the fronts; {int(c.public_segment_connections)} end-to-end "
                   f"connections cross the public segment for {n} flows")
        else:
            f2f = (f"{int(c.fb_peers_fa_public)} for {n} flows (one per flow), from "
                   f"{'fa itself' if c.method == 'proxies' else 'a1, translated to fa'}")
        rows.append({
            "method": LABELS[c.method], "front-to-front connections": f2f,
            "intra-cluster transport": "TCP", "implemented in": where[c.method],
            "TCP connections per flow": c.tcp_connections_per_flow,
            "user-space relays per flow": c.user_space_relays_per_flow,
            "connections translated by fa (conntrack)": int(c.snat_entries_fa),
        })
    return pd.DataFrame(rows)


# -- figures ----------------------------------------------------------------------------------

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


def ratio_figure(frame: pd.DataFrame):
    """Ratios to direct, and NAT + SRD against two proxies, with the paper's numbers drawn in."""
    r = ratios(frame)
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
    ax = axes[0]
    ax.plot(r["size"], r.proxies_latency_x, marker="o", color=COLORS["proxies"],
            label="two proxies / direct")
    ax.plot(r["size"], r.nat_latency_x, marker="s", color=COLORS["nat_srd"],
            label="NAT + SRD / direct")
    ax.axhline(PAPER["proxies_latency_x"], color=COLORS["proxies"], ls=":",
               label="paper: two proxies 2.1x")
    ax.axhline(PAPER["nat_latency_x"], color=COLORS["nat_srd"], ls=":",
               label="paper: NAT + SRD 1.5x")
    ax.axhline(1, color="grey", lw=0.8)
    ax.set_ylabel("latency / direct latency")
    ax.set_title("latency relative to direct")
    ax = axes[1]
    for metric, ls, name in (("stream", "-", "streaming"), ("pingpong", "--", "ping-pong")):
        ax.plot(r["size"], r[f"proxies_{metric}_x"], ls=ls, marker="o", color=COLORS["proxies"],
                label=f"two proxies ({name})")
        ax.plot(r["size"], r[f"nat_{metric}_x"], ls=ls, marker="s", color=COLORS["nat_srd"],
                label=f"NAT + SRD ({name})")
    ax.axhspan(0, 0.5, color="grey", alpha=0.12, label="paper: both below 0.5x")
    ax.set_ylim(0, max(1.3, float(np.nanmax(r.filter(like="_x").to_numpy())) * 1.05)
                if len(r) else 1.3)
    ax.set_ylabel("bandwidth / direct bandwidth")
    ax.set_title("bandwidth relative to direct")
    ax = axes[2]
    ax.plot(r["size"], r.nat_vs_proxies_stream_pct, marker="o", color="C1", label="streaming")
    ax.plot(r["size"], r.nat_vs_proxies_pingpong_pct, marker="s", ls="--", color="C4",
            label="ping-pong")
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
    order = [p for p in ("direct", "nat_socat", "nat_srd", "proxies_socat", "proxies_srd")
             if p in set(b.path)]
    b["iperf_gbit"] = b.iperf_mbit / 1e3
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
    palette = {"direct": "C0", "nat_socat": "C7", "nat_srd": "C2", "proxies_socat": "C8",
               "proxies_srd": "C3"}
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


# -- the measurements behind the differences ------------------------------------------------------

def explain(tables: dict[str, pd.DataFrame], meta: dict) -> list[str]:
    """Why our numbers differ from the paper's, each reason with the number that shows it."""
    frame, bench = tables["results"], tables.get("bench")
    s = summary(frame).set_index(["size", "method"])
    r = ratios(frame).set_index("size")
    kernel = next(iter(meta.get("capabilities", {}).values()), {}).get("kernel", "?")
    lines = []
    d1 = s.loc[(1, "direct"), "half_rtt_us"] if (1, "direct") in s.index else None
    if bench is not None and not bench.empty:
        hops = hop_costs(bench)
        bs = bench_summary(bench).set_index("path")
        lines.append(
            f"A relay hop costs {hops['proxies_srd_per_hop_us']:.1f} us of half round trip with "
            f"srd ({hops['proxies_socat_per_hop_us']:.1f} us with socat); NAT + one srd hop adds "
            f"{hops['nat_srd_hop_us']:.1f} us over kernel forwarding (unshaped, 1 B, Linux "
            f"{kernel}).")
        if d1 is not None:
            lines.append(
                f"Direct 1 B half round trip on the shaped lab is {d1:.1f} us: veths have no NIC, "
                "wire or interrupt moderation, so ratios to direct are set by the relay's fixed "
                f"cost over a small base (two proxies {r.loc[1, 'proxies_latency_x']:.1f}x, NAT + "
                f"SRD {r.loc[1, 'nat_latency_x']:.1f}x at 1 B); what NAT saves against two "
                f"proxies is a relative difference: {r.loc[1, 'nat_vs_proxies_latency_pct']:+.0f}% "
                f"at 1 B (paper {PAPER['nat_vs_proxies_latency_pct']:+.0f}%).")
        if {"nat_srd", "nat_socat"} <= set(bs.index):
            best = bs.loc["nat_srd", "iperf_best_mbit"]
            rate = meta.get("parameters", {}).get("rate_mbit") or 0
            times = f" — {best / rate:.0f}x the shaped link rate" if rate else ""
            lines.append(
                f"Zero-copy relaying: srd uses {bs.loc['nat_srd', 'relay_cpu_s_per_gb']:.2f} "
                f"CPU-s per GB relayed, socat {bs.loc['nat_socat', 'relay_cpu_s_per_gb']:.2f}; one "
                f"srd hop carries {best / 1e3:.1f} Gbit/s unshaped{times}, so on 100 Mbit/s links "
                "the relays do not limit bandwidth as the 2003 proxies did.")
        np_us = meta.get("s0", {}).get("nptcp_direct_half_rtt_1b_us")
        if np_us and "direct" in bs.index:
            lines.append(
                f"Tool cross-check on the unshaped direct path: NPtcp {np_us:.1f} us, our "
                f"ping-pong {bs.loc['direct', 'half_rtt_1b_median_us']:.1f} us (1 B half round "
                "trip).")
    if 1 << 20 in r.index:
        lo = min(r.loc[1 << 20, "proxies_stream_x"], r.loc[1 << 20, "nat_stream_x"])
        hi = max(r.loc[1 << 20, "proxies_stream_x"], r.loc[1 << 20, "nat_stream_x"])
        sd = frame[frame["size"] == 1 << 20].groupby("method").stream_mbit.std().max()
        lines.append(
            "Streaming 1 MB messages: " + ", ".join(
                f"{LABELS[m]} {s.loc[(1 << 20, m), 'stream_mbit']:.1f} Mbit/s" for m in METHODS)
            + f" — relayed/direct {lo:.2f}..{hi:.2f}x, nowhere near half"
            + (f"; the largest sd across repetitions is {sd:.1f} Mbit/s (CPU contention on "
               "the shared machine)" if pd.notna(sd) else "") + ".")
    if (1, "direct") in s.index:
        lines.append(
            f"Streaming 1 B messages reaches {s.loc[(1, 'direct'), 'stream_mbit']:.2f} Mbit/s "
            "direct: one system call per message, not the path, limits tiny messages, so small-"
            "size streaming ratios are noise around 1.")
    load = meta.get("s0", {}).get("loadavg", {})
    if load:
        lines.append("Machine load (1-minute load average, 2 cores) at start/after sweep/after "
                     "benchmark: " + " / ".join(f"{v:.1f}" for v in load.values()) + ".")
    return lines
