"""The ``cpu_throttled`` gate: a CPU-limited sender was held back by its limit, as the paper's was.

A cgroup's CFS bandwidth counters (``cpu.stat``: ``nr_periods``, ``nr_throttled``, read before
and after each point; S4's ``cpu_periods`` and ``cpu_throttled_periods``) say how often the
limit bit: in a throttled period the sender ran out of its quota and waited. A sender throttled
in few of its periods sent at what its path or its own pace allowed, not at its CPU's limit.
S4's third referee read it from results.csv: at the anchored limit one TCP stream was throttled
in 10-15 % of its periods (at 440-478 Mbit/s, its path carrying 478.2), ten MPTCP streams in
100 %: one shared limit put one transport at its CPU's bound and the other not.

The gate asks that in each group of points a claim compares (S4: its transport's 1- and
10-stream points, the four of the contrast) the sender was throttled in more than a registered
share of the periods, summed over the group's points; its figures name every group's share.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .facts import GateResult, RunFacts
from .levels import select_rows

#: the CFS counters of the sender's cgroup per point, as S4 records them (harness.studies.s4.measure)
PERIODS, THROTTLED = "cpu_periods", "cpu_throttled_periods"


def group_words(clause: str) -> str:
    """A group's selection in words: "transport=tcp,streams=10" -> "TCP 10 streams"."""
    words = []
    for part in filter(None, clause.split(",")):
        key, _, value = part.partition("=")
        if key == "transport":
            words.append(value.upper())
        elif key == "streams":
            words.append(f"{value} stream" + ("" if value == "1" else "s"))
        else:
            words.append(f"{key} {value}")
    return " ".join(words) or "every point"


def cpu_throttled(_facts: RunFacts, tables: Mapping[str, pd.DataFrame], params) -> GateResult:
    """Throttled periods over periods, summed over each group's points (``groups``: selections
    "column=value[,column=value]" separated by ";", within ``rows``), more than ``more_than``
    (a share, 0..1) in every group. A group with no counted period fails ("not counted")."""
    name = "cpu_throttled"
    table, level = params["table"], float(params["more_than"])
    frame = tables.get(table)
    if frame is None or PERIODS not in frame or THROTTLED not in frame:
        return GateResult(name, False, f"the sender's CFS periods were not counted in this run "
                          f"({table}.{THROTTLED} / {PERIODS})")
    frame = select_rows(frame, params)
    if isinstance(frame, str):
        return GateResult(name, False, frame)
    shares, low = [], []
    for clause in [c.strip() for c in str(params["groups"]).split(";") if c.strip()]:
        group = select_rows(frame, {"rows": clause})
        if isinstance(group, str):
            return GateResult(name, False, group)
        periods = pd.to_numeric(group[PERIODS], errors="coerce")
        throttled = pd.to_numeric(group[THROTTLED], errors="coerce")
        counted = periods.notna() & throttled.notna() & (periods > 0)
        words = group_words(clause)
        if not counted.any():
            shares.append(f"{words}: no period counted")
            low.append(words)
            continue
        total, bit = float(periods[counted].sum()), float(throttled[counted].sum())
        per_point = throttled[counted] / periods[counted]
        share = bit / total
        shares.append(f"{words} {100 * share:.0f} % ({bit:.0f} of {total:.0f} periods, "
                      f"{int(counted.sum())} points, {100 * per_point.min():.0f}-"
                      f"{100 * per_point.max():.0f} % per point)")
        if not share > level:
            low.append(words)
    if not shares:
        return GateResult(name, False, "no group of points to read (groups is empty)")
    figures = (f"the sender throttled in {'; '.join(shares)} of its CFS periods, against more "
               f"than {100 * level:g} % registered (the sender held at its CPU limit, as the "
               "paper's)")
    if low:
        figures += f"; not more at {', '.join(low)}"
    return GateResult(name, not low, figures)
