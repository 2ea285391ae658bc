"""S2 analysis: Fig. 2-1 mirrored (bandwidth against the TCP window), the file systems
against clients, and the paper's claims judged on the repetitions' intervals.

The lab's WAN is the paper's scaled by the run's factor f (``placement.scaling``):
rate x f, RTT / f, so the bandwidth-delay product -- what windows are measured
against -- is the paper's 0.6 MB. Throughputs are compared as fractions of the
line rate (TCP goodput at line rate: 1448 payload bytes per 1514-byte frame at MTU
1500, the shaper counting Ethernet headers), never in absolute Mbit/s.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ...verdicts.claims import Claim, judge, not_testable, table
from ...verdicts.intervals import mean_estimate
from ..base import RunData
from .design import MIN_RTTS
from .registration import ERA_PAPER_MBIT, GOODPUT_9000, GOODPUT_PER_WIRE, registered
from .validity import point_checks

__all__ = ["claims", "figures", "point_lengths", "registered", "wan"]

KIB = 1024

def wan(meta: dict) -> dict:
    """The lab's WAN as run: scale factor, goodput at line rate (Mbit/s), RTT (s)."""
    params = meta.get("parameters", {})
    factor = (meta.get("placement", {}).get("scaling") or {}).get("factor", 1.0)
    rate = params.get("wan_rate_mbit", 1000.0) * factor
    return {"factor": factor, "line_mbit": rate * GOODPUT_PER_WIRE, "rate_mbit": rate,
            "rtt_s": params.get("wan_rtt_ms", 4.8) / factor / 1e3}


def in_regime(frame: pd.DataFrame) -> pd.DataFrame:
    """The points long enough to count (>= MIN_RTTS measured round trips); a run that did not
    record point lengths has none."""
    if "rtts" not in frame:
        return frame.iloc[0:0]
    return frame[frame.rtts >= MIN_RTTS]


def per_rep(frame: pd.DataFrame, **where) -> pd.Series:
    """The measured value (Mbit/s for iperf3 rows, MB/s for fio rows) per repetition."""
    sub = frame
    for key, value in where.items():
        sub = sub[sub[key] == value]
    column = "mbit_s" if sub.get("mbyte_s") is None or sub["mbyte_s"].isna().all() \
        else "mbyte_s"
    return sub.groupby("repetition")[column].mean()


def _ratio(a: pd.Series, b: pd.Series | float):
    joined = a / b
    return joined.dropna()


class _Judge:
    """Judges claims on the points in the paper's regime, with every point's validity."""

    def __init__(self, frame: pd.DataFrame, meta: dict) -> None:
        self.all = frame
        self.frame = in_regime(frame)
        self.checks = point_checks(frame, meta)
        self.out: list = []

    def short(self, claim: Claim, rows: pd.DataFrame, what: str) -> bool:
        """Not testable when every measured point of ``rows`` (from the whole frame) is
        shorter than the regime needs; True when it said so."""
        if rows.empty or "rtts" not in rows:
            self.out.append(not_testable(claim, f"needs {what}" + (
                "" if "rtts" in self.all else " (this run recorded no point lengths)")))
            return True
        if (rows.rtts >= MIN_RTTS).any():
            return False
        self.out.append(not_testable(
            claim, f"{what}: every point shorter than the regime's {MIN_RTTS} round trips "
                   f"(measured {rows.rtts.min():.1f}..{rows.rtts.max():.1f}; point_rtts)"))
        return True

    def judge(self, claim: Claim, estimate, note: str, rows: pd.DataFrame) -> None:
        invalid = [self.checks[i] for i in rows.index if self.checks.get(i) is not None]
        self.out.append(judge(claim, estimate, note, invalid=invalid))


def _kind(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    return frame[frame.kind == kind] if "kind" in frame else frame.iloc[0:0]


def _fs(frame: pd.DataFrame, fs: str, path: str, rw: str | None = None) -> pd.DataFrame:
    if "kind" not in frame or "fs" not in frame:
        return frame.iloc[0:0]
    sub = frame[(frame.kind == "fs") & (frame.fs == fs) & (frame.path == path)
                & (frame.tuning == "tuned")]
    return sub if rw is None else sub[sub.rw == rw]


def claims(data: RunData) -> pd.DataFrame:
    frame, meta = data.results, data.meta
    w = wan(meta)
    line = w["line_mbit"]
    j = _Judge(frame, meta)
    f = j.frame
    _windows(j, f, w)
    _era(j, f, w)
    for claim, rw in ((registered().claim("nfs_tuned_disk"), "read"),
                      (registered().claim("nfs_tuned_write"), "write")):
        _fs_vs_disk(j, "nfs", "wan", rw, claim, most=False)
    _mtu(j, f)
    flows = _kind(f, "flows")
    if not j.short(registered().claim("network_fine"), _kind(frame, "flows"), "the 5-flow check"):
        worst = flows.groupby("repetition").mbit_s.min()
        j.judge(registered().claim("network_fine"), mean_estimate(worst / line, "x", log=True),
                "the slower direction of each repetition, at MTU 1500", flows)
    _pfs_lan(j, frame, meta)
    pw = _fs(f, "pfs", "wan", "write")
    if not j.short(registered().claim("pfs_wan_full_link"), _fs(frame, "pfs", "wan", "write"),
                   "the parallel FS across the WAN"):
        one = pw[(pw.clients == 1) & (pw.block_kib == 1024)]
        j.judge(registered().claim("pfs_wan_full_link"),
                mean_estimate(per_rep(one) * 8 / line, "x", log=True),
                "write, one task, 1 MiB blocks (fixed before data)", one)
    _clients(j, f, frame)
    nine = pw[(pw.clients == 9) & (pw.block_kib == 1024)] if not pw.empty else pw
    all_nine = _fs(frame, "pfs", "wan", "write")
    all_nine = all_nine[all_nine.clients == 9] if not all_nine.empty else all_nine
    if not j.short(registered().claim("task_scaling"), all_nine, "9 parallel-FS tasks across the WAN "
                   "(wan_clients with 9: the verdict profile)"):
        j.judge(registered().claim("task_scaling"),
                mean_estimate(per_rep(nine) * 8 / line, "x", log=True),
                "write, 9 tasks, 1 MiB blocks", nine)
    for path, cid in (("wan", "block_size"), ("lan", "block_size_lan")):
        _blocks(j, f, frame, path, registered().claim(cid))
    _saturation(j, meta)
    j.out.append(not_testable(registered().claim("gpfs_bimodal"),
                              "a fault inside GPFS on testbed 2's mixed hardware: needs GPFS"))
    for cid in ("testbed2_write", "testbed2_read"):
        j.out.append(not_testable(registered().claim(cid),
                                  "testbed 2's GPFS clusters on mixed hardware (Fig. 2-10): the "
                                  "lab has no GPFS and no model of them; its parallel FS across "
                                  "the WAN is testbed 1's case (pfs_wan_full_link)"))
    j.out.append(on_path(frame))
    return table(j.out)


def _windows(j: _Judge, f: pd.DataFrame, w: dict) -> None:
    line = w["line_mbit"]
    win = _kind(f, "window")
    tuned = win[win.tuning == "tuned"]
    every = _kind(j.all, "window")
    big = [int(k) for k in sorted(every[every.tuning == "tuned"].window_kib.unique())
           if k >= 1024]
    claim = registered().claim("window_line_rate")
    if not big:
        j.out.append(not_testable(claim, "needs a window of 1 MB or more"))
    elif not j.short(claim, every[(every.tuning == "tuned") & (every.window_kib == big[0])],
                     f"the {big[0]} KiB window"):
        rows = tuned[tuned.window_kib == big[0]]
        j.judge(claim, mean_estimate(per_rep(rows) / line, "x", log=True),
                f"window {big[0]} KiB, tuned; line {line:.1f} Mbit/s goodput (scaled by "
                f"{w['factor']:.3f})", rows)
    small = [int(k) for k in sorted(every[every.tuning == "tuned"].window_kib.unique())
             if 0 < k * KIB * 8 / w["rtt_s"] / 1e6 < 0.5 * line]
    claim = registered().claim("window_over_rtt")
    if not small:
        j.out.append(not_testable(claim, "needs a window well below the BDP"))
        return
    k = small[0]
    if j.short(claim, every[(every.tuning == "tuned") & (every.window_kib == k)],
               f"the {k} KiB window"):
        return
    expected = k * KIB * 8 / w["rtt_s"] / 1e6
    rows = tuned[tuned.window_kib == k]
    j.judge(claim, mean_estimate(per_rep(rows) / expected, "x", log=True),
            f"window {k} KiB over RTT {w['rtt_s'] * 1e3:.1f} ms = {expected:.1f} Mbit/s", rows)


def _era(j: _Judge, f: pd.DataFrame, w: dict) -> None:
    every = _kind(j.all, "window")
    every = every[(every.tuning == "era") & (every.window_kib == 0)] if not every.empty \
        else every
    if every.empty:
        for cid in ("era_cap", "nfs_untuned_capped"):
            j.out.append(not_testable(registered().claim(cid), "needs the era's tuning (tunings: era)"))
        return
    if j.short(registered().claim("era_cap"), every, "iperf3 under the era's buffers"):
        j.out.append(not_testable(registered().claim("nfs_untuned_capped"), "no era iperf3 point in the "
                                  "regime to compare NFS with"))
        return
    era = _kind(f, "window")
    era = era[(era.tuning == "era") & (era.window_kib == 0)]
    usable = per_rep(era)
    j.judge(registered().claim("era_cap"), mean_estimate(usable / w["line_mbit"], "x", log=True),
            "iperf3 with autotuning under the paper's untuned buffers (maxima 302400 B)", era)
    claim = registered().claim("nfs_untuned_capped")
    every_fs = j.all[(j.all.kind == "fs") & (j.all.fs == "nfs") & (j.all.path == "wan")
                     & (j.all.tuning == "era") & (j.all.clients == 1)] if "fs" in j.all \
        else j.all.iloc[0:0]
    if j.short(claim, every_fs, "NFS across the WAN under the era's buffers"):
        return
    fs = f[(f.kind == "fs") & (f.fs == "nfs") & (f.path == "wan") & (f.tuning == "era")
           & (f.clients == 1) & (f.rw == "read")]
    read = fs.groupby("repetition").mbyte_s.mean() * 8
    j.judge(claim, mean_estimate(_ratio(read, usable), "x", log=True),
            "the read, one client (fixed before data: the write's disk is below the cap)",
            pd.concat([fs, era]))


def _mtu(j: _Judge, f: pd.DataFrame) -> None:
    every = _kind(j.all, "mtu")
    mtu = _kind(f, "mtu")
    for cid in ("mtu_gain", "mtu_header_bound"):
        claim = registered().claim(cid)
        if every.empty or every.mtu.nunique() < 2:
            j.out.append(not_testable(claim, "needs MTUs 1500 and 9000"))
            continue
        if j.short(claim, every, "the MTU points"):
            continue
        gain = _ratio(per_rep(mtu, mtu=9000), per_rep(mtu, mtu=1500))
        est = mean_estimate(gain, log=True)
        bound = (GOODPUT_9000 / GOODPUT_PER_WIRE - 1) * 100
        j.judge(claim, est and est.as_gain_pct(),
                f"autotuned window, tuned buffers; paired per repetition; the headers allow "
                f"at most +{bound:.1f} %", mtu)


def _fs_vs_disk(j: _Judge, fs: str, path: str, rw: str, claim: Claim, most: bool) -> None:
    """The file system's ``rw`` over ``path`` against its raw disk, at a client count fixed
    before data (``most``: the most tasks measured over the path, else one), never the best
    of each repetition (a maximum of noisy points, averaged, reads high)."""
    every = _fs(j.all, fs, path, rw)
    disk_all = _kind(j.all, "disk")
    disk_all = disk_all[(disk_all.fs == fs) & (disk_all.rw == rw)] if not disk_all.empty \
        else disk_all
    if every.empty or disk_all.empty:
        j.out.append(not_testable(claim, f"needs {fs} over the {path.upper()} and its raw disk"))
        return
    if j.short(claim, every, f"{fs} {rw}s over the {path.upper()}") or \
            j.short(claim, disk_all, f"the raw disk's {rw}s"):
        return
    sub, disk = _fs(j.frame, fs, path, rw), _kind(j.frame, "disk")
    disk = disk[(disk.fs == fs) & (disk.rw == rw)]
    sub = sub[sub.block_kib == 1024]
    counts = sorted(every[every.block_kib == 1024].clients.unique())
    tasks = counts[-1] if most and counts else 1
    sub = sub[sub.clients == tasks]
    raw = disk.groupby("repetition").mbyte_s.mean()
    j.judge(claim, mean_estimate(_ratio(per_rep(sub), raw), "x", log=True),
            f"{rw}, {tasks} client task(s) (fixed before data), against fio on the server's "
            f"disk ({raw.mean():.2f} MB/s here)", pd.concat([sub, disk]))


def _pfs_lan(j: _Judge, frame: pd.DataFrame, meta: dict) -> None:
    """The parallel FS's LAN write against its disk, only where the LAN could carry the
    disk's rate (as the paper's 4 Gbit/s carried its 500 MB/s)."""
    claim = registered().claim("pfs_lan_below_disk")
    placement = meta.get("placement", {})
    ceiling = (placement.get("wire_ceilings_mbit") or {}).get("client:lan--server:lan")
    cap = ((placement.get("disks") or {}).get("server", {}).get("pfs") or {}).get(
        "write_mbyte_s")
    if ceiling and cap and ceiling / 8 < cap:
        j.out.append(not_testable(
            claim, f"the LAN wire carried {ceiling / 8:.1f} MB/s (measured ceiling), below the "
                   f"parallel FS disk's write cap of {cap:.1f} MB/s: the ratio to the disk "
                   "would be the wire's by construction (the paper's LAN carried its disk's "
                   "500 MB/s)"))
        return
    _fs_vs_disk(j, "pfs", "lan", "write", claim, most=True)


def _clients(j: _Judge, f: pd.DataFrame, frame: pd.DataFrame) -> None:
    for fs, path, cid, rws in (("nfs", "wan", "nfs_falls", ("write", "read")),
                               ("pfs", "lan", "pfs_scales", ("write",))):
        claim = registered().claim(cid)
        every = _fs(frame, fs, path)
        every = every[every.rw.isin(rws) & (every.block_kib == 1024)] if not every.empty \
            else every
        counts = sorted(every.clients.unique()) if not every.empty else []
        if len(counts) < 2:
            j.out.append(not_testable(claim, f"needs two client counts over the "
                                             f"{path.upper()} (the verdict profile's)"))
            continue
        if j.short(claim, every, f"{fs} over the {path.upper()}"):
            continue
        sub = _fs(f, fs, path)
        sub = sub[sub.rw.isin(rws) & (sub.block_kib == 1024)]
        ratios = [_ratio(per_rep(sub[sub.rw == rw], clients=counts[-1]),
                         per_rep(sub[sub.rw == rw], clients=counts[0])) for rw in rws]
        ratio = ratios[0]
        for other in ratios[1:]:  # the geometric mean of the directions' ratios
            ratio = (ratio * other).dropna().pow(1 / len(ratios))
        used = sub[sub.clients.isin((counts[0], counts[-1]))]
        j.judge(claim, mean_estimate(ratio, "x", log=True),
                f"{'/'.join(rws)} over the {path.upper()}, {counts[-1]} against {counts[0]} "
                "client task(s) in one client VM", used)


def _blocks(j: _Judge, f: pd.DataFrame, frame: pd.DataFrame, path: str, claim: Claim) -> None:
    every = _fs(frame, "pfs", path, "write")
    every = every[every.clients == 1] if not every.empty else every
    sizes = sorted(every.block_kib.unique()) if not every.empty else []
    if len(sizes) < 2:
        j.out.append(not_testable(claim, f"needs two block sizes over the {path.upper()} "
                                         "(block_paths; the verdict profile sweeps the WAN)"))
        return
    if j.short(claim, every, f"the block sweep over the {path.upper()}"):
        return
    sub = _fs(f, "pfs", path, "write")
    sub = sub[sub.clients == 1]
    ratio = _ratio(per_rep(sub, block_kib=sizes[-1]), per_rep(sub, block_kib=sizes[0]))
    j.judge(claim, mean_estimate(ratio, "x", log=True),
            f"parallel FS write over the {path.upper()}, {sizes[-1]} against {sizes[0]} KiB "
            "blocks", sub[sub.block_kib.isin((sizes[0], sizes[-1]))])


def _saturation(j: _Judge, meta: dict) -> None:
    placement = meta.get("placement", {})
    ceiling = (placement.get("wire_ceilings_mbit") or {}).get("client:lan--server:lan")
    cap = ((placement.get("disks") or {}).get("server", {}).get("pfs") or {}).get(
        "write_mbyte_s")
    measured = (f" (this run: one LAN wire of {ceiling / 8:.1f} MB/s measured, the disk "
                f"capped at {cap:.1f} MB/s)") if ceiling and cap else ""
    for cid in ("lan_saturation", "lan_saturation_read"):
        j.out.append(not_testable(
            registered().claim(cid),
            "the paper's clients were 4 machines with 1 Gbit/s each into a 4 Gbit/s server; "
            "the lab's are tasks in one client VM behind one wire" + measured + ", so where "
            "the server saturates cannot show"))


def point_lengths(frame: pd.DataFrame) -> pd.DataFrame:
    """Each kind of point's measured length in round trips of the scaled WAN and in BDPs
    (smallest and median), and how many fell short of the regime."""
    if "rtts" not in frame:
        return pd.DataFrame()
    keys = [k for k in ("kind", "fs", "path", "rw") if k in frame]
    grouped = frame.groupby(keys, dropna=False)
    out = grouped.agg(points=("rtts", "size"), rtts_min=("rtts", "min"),
                      rtts_median=("rtts", "median"), bdps_min=("bdps", "min"),
                      bdps_median=("bdps", "median"))
    out["short"] = grouped.rtts.apply(lambda r: int((r < MIN_RTTS).sum()))
    return out.round(1)


def on_path(frame: pd.DataFrame):
    """Our check that every file-system point's bytes crossed its own path (samples: the
    points); the lowest point is named, as one misrouted kind of point is what it catches."""
    claim = registered().claim("fs_on_path")
    if "path_share" not in frame:
        return not_testable(claim, "no interface counters in this run")
    points = frame[(frame.kind == "fs") & frame.path_share.notna()]
    if points.empty:
        return not_testable(claim, "no interface counters in this run")
    worst = points.loc[points.path_share.idxmin()]
    share = points.set_index("repetition").path_share  # a pool tells the runs apart by it
    return judge(claim, mean_estimate(share, "x", units="points"),
                 f"lowest: {worst.fs} {worst.rw} over the {worst.path.upper()} "
                 f"({worst.tuning}, {int(worst.clients)} client(s)): {worst.path_share:.2f}")


def figure_windows(frame: pd.DataFrame, meta: dict):
    """Fig. 2-1 mirrored: goodput across the WAN against the TCP window, per tuning, with
    window / RTT and the line drawn (the paper's own curve has the same shape)."""
    w = wan(meta)
    win = frame[(frame.kind == "window") & (frame.window_kib > 0)].copy()
    win["window_bdp"] = win.window_kib * KIB / (w["line_mbit"] / GOODPUT_PER_WIRE * 1e6 / 8
                                                * w["rtt_s"])
    win["fraction_of_line"] = win.mbit_s / w["line_mbit"]
    fig, ax = plt.subplots(figsize=(7, 4))
    sns.lineplot(data=win, x="window_bdp", y="fraction_of_line", hue="tuning", marker="o",
                 errorbar=("ci", 95), ax=ax)
    xs = sorted(win.window_bdp.unique())
    if xs:
        ax.plot(xs, [min(x, 1.0 / GOODPUT_PER_WIRE) * GOODPUT_PER_WIRE for x in xs], "k:",
                label="min(window / RTT, line)")
    ax.axvline(2, color="grey", lw=0.8, ls="--", label="the paper's 2 x BDP (1.2 MB)")
    # autotuning (no -w): what the file systems get, per tuning, as horizontal lines
    auto = frame[(frame.kind == "window") & (frame.window_kib == 0)]
    colours = dict(zip(sorted(win.tuning.unique()), sns.color_palette()))
    for i, (tuning, rows) in enumerate(auto.groupby("tuning")):
        colour = colours.get(tuning, sns.color_palette()[len(colours) + i])
        ax.axhline(rows.mbit_s.mean() / w["line_mbit"], color=colour, ls="-.", lw=1,
                   label=f"autotuning, {tuning} buffers (n={len(rows)})")
    ax.axhline(ERA_PAPER_MBIT / 1000, color="k", lw=0.8, ls="--",
               label=f"the paper, untuned: {ERA_PAPER_MBIT} Mbit/s of 1 Gbit/s")
    ax.set(xscale="log", xlabel="TCP window asked for (-w), in BDPs (0.6 MB)",
           ylabel="goodput / line rate", title="S2, Fig. 2-1: bandwidth against the window")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


#: The paper's file-system figures in MB/s, drawn scaled by f beside ours: (path, label,
#: MB/s, tasks or None for a level): Fig. 2-3/2-4 (GPFS on the LAN ~40 % below Ext3's 500),
#: Fig. 2-5 (GPFS across the WAN, 115), Fig. 2-6 (NFS across the WAN: read 70, write 28),
#: Fig. 2-12 (GPFS across the WAN, 9 tasks: 101).
PAPER_FS = (("lan", "paper: GPFS write ~0.6 x 500", 300.0, None),
            ("wan", "paper: GPFS 115", 115.0, None),
            ("wan", "paper: NFS read 70", 70.0, None),
            ("wan", "paper: NFS write 28", 28.0, None),
            ("wan", "paper: GPFS, 9 tasks: 101", 101.0, 9))


def figure_clients(frame: pd.DataFrame, meta: dict | None = None):
    """Throughput against client tasks, per file system, path and direction, with the
    paper's numbers scaled by the run's f (the lab's MB/s are the paper's x f)."""
    sub = frame[(frame.kind == "fs") & (frame.tuning == "tuned") & (frame.block_kib == 1024)]
    if sub.empty:
        return None
    grid = sns.relplot(data=sub, x="clients", y="mbyte_s", hue="fs", style="rw", col="path",
                       col_order=[p for p in ("lan", "wan") if p in set(sub.path)],
                       kind="line", marker="o", errorbar=("ci", 95), height=3.5, aspect=1.2)
    factor = wan(meta or {})["factor"]
    for path, ax in grid.axes_dict.items():
        for where, label, mbyte, tasks in PAPER_FS:
            if where != path:
                continue
            if tasks is None:
                ax.axhline(mbyte * factor, color="grey", lw=0.8, ls=":")
                ax.annotate(label, (ax.get_xlim()[0], mbyte * factor), fontsize=6,
                            color="grey", va="bottom")
            else:
                ax.plot([tasks], [mbyte * factor], "k*", ms=8)
                ax.annotate(label, (tasks, mbyte * factor), fontsize=6, ha="right",
                            va="bottom")
    grid.set_axis_labels("client tasks", f"throughput (MB/s, lab scale; paper x {factor:.3f})")
    grid.fig.suptitle("S2: file systems as clients are added (tuned), the paper's x f in grey",
                      y=1.03)
    return grid.fig


def figures(data: RunData) -> dict:
    out = {"fig2_1": figure_windows(data.results, data.meta)}
    clients = figure_clients(data.results, data.meta)
    if clients is not None:
        out["clients"] = clients
    return out
