"""S1's SMP claim (s1.smp_latency_larger, 001:52): latency with 2 online CPUs over 1, paired
per repetition, and its table of points (its figure is
:func:`harness.studies.s1.figures.figure_smp`).

The 2-CPU level's rows exist for this claim alone; every other claim reads the 1-CPU level,
the paper's uniprocessor kernel (:data:`harness.studies.s1.frames.UP`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...verdicts.claims import judge, not_testable
from ...verdicts.intervals import mean_estimate
from .frames import at_cpus, geomean_rows, per_repetition
from .registration import LABELS, registered
from .validity import failed_latency

#: The SMP claim's stacks (judged) and its cross-check (polling, shown in the note).
SMP_STACKS = ("verbs-send-events", "tcp-qperf")
SMP_CHECK = "verbs-send"


def smp_ratios(frame: pd.DataFrame, method: str) -> pd.DataFrame:
    """Mean latency with 2 CPUs over with 1, per repetition (rows) and size (columns), for
    ``method``; empty unless both levels measured it."""
    two = per_repetition(at_cpus(frame, 2), "latency_mean_us")
    one = per_repetition(at_cpus(frame, 1), "latency_mean_us")
    if two.empty or one.empty or method not in two.columns.get_level_values(0) \
            or method not in one.columns.get_level_values(0):
        return pd.DataFrame()
    common = [s for s in two[method].columns if s in one[method].columns]
    return two[method][common] / one[method][common].reindex(two.index)


def smp_claim(frame: pd.DataFrame, tcg: str = ""):
    """s1.smp_latency_larger: per repetition, the geometric mean over the sizes and both
    stacks (verbs with completion events, qperf tcp_lat) of latency at 2 CPUs over at 1."""
    claim = registered().claim("s1.smp_latency_larger")
    levels = set(frame["cpus"].dropna().astype(int)) if "cpus" in frame else {2}
    if not {1, 2} <= levels:
        return not_testable(claim, f"the {'2' if 1 in levels else '1'}-CPU level was not "
                            "measured (parameter cpus without it; VMs of 1 vCPU, the host "
                            "having too few cores for two of 2; or a run from before the CPU "
                            "factor): the claim pairs latency at 1 and 2 online CPUs")
    ratios = {m: smp_ratios(frame, m) for m in SMP_STACKS}
    missing = [LABELS[m] for m, r in ratios.items() if r.empty or r.columns.empty]
    if missing:
        return not_testable(claim, "not measured at both CPU levels: " + ", ".join(missing)
                            + " (events need completion to include events)")
    both = pd.concat(ratios, axis=1)
    per_rep = geomean_rows(both).dropna()
    sizes = sorted({int(s) for r in ratios.values() for s in r.columns})
    stacks = "; ".join(f"{LABELS[m]} {float(np.exp(np.log(r.where(r > 0)).stack().mean())):.2f}x"
                       for m, r in ratios.items())
    check = smp_ratios(frame, SMP_CHECK)
    cross = "" if check.empty else (
        f"; cross-check, {LABELS[SMP_CHECK]} (a busy poll on one CPU competes with the kernel "
        f"doing Soft-RoCE's work): "
        f"{float(np.exp(np.log(check.where(check > 0)).stack().mean())):.2f}x")
    note = (f"latency at 2 online CPUs over 1 (CPU 1 online, then offline, in both VMs), paired per "
            f"repetition, means; sizes {sizes[0]}..{sizes[-1]} B; each stack alone: {stacks}"
            + cross + tcg)
    return judge(claim, mean_estimate(per_rep, "x", log=True), note,
                 invalid=failed_latency(frame, SMP_STACKS, sizes))


def smp_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean latency (us, over the repetitions) at 1 and 2 online CPUs per method and size, and
    their ratio (geometric mean of the per-repetition ratios): the SMP claim's points."""
    rows = []
    for method in (*SMP_STACKS, SMP_CHECK):
        ratio = smp_ratios(frame, method)
        if ratio.empty:
            continue
        for size in ratio.columns:
            values = {cpus: at_cpus(frame, cpus) for cpus in (1, 2)}
            means = {cpus: sub[(sub.method == method) & (sub["size"] == size)]
                     .latency_mean_us.mean() for cpus, sub in values.items()}
            r = ratio[size].where(ratio[size] > 0).dropna()
            rows.append({"method": LABELS[method], "judged": method in SMP_STACKS,
                         "size": int(size), "latency_1cpu_us": means[1],
                         "latency_2cpu_us": means[2],
                         "ratio_2_over_1": float(np.exp(np.log(r).mean())) if len(r)
                         else math.nan, "n": len(r)})
    return pd.DataFrame(rows)
