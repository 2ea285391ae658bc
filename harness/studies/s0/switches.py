"""S0's context-switch claims (000:28 "halved", 000:88 "one context switch fewer"), judged on all
the relays' context switches per round trip, voluntary and involuntary together.

The run counts each relayed method's relays' switches around one 1 B ping-pong
(:func:`.measure.context_switch_point`), voluntary and involuntary apart
(:class:`harness.tools.cpu.ContextSwitches`). A relay that sleeps until its message arrives
switches out *voluntarily* once per wake-up; when the shared machine preempts it first, the same
switch is counted *involuntary* instead: the two columns trade places, their sum does not move.
Measured in the pooled reference 20261129T175330Z-pool-854254 (the sixth S0 review of 2026-11-29):
srd's voluntary + involuntary switches are 2.00 per round trip in all 30 repetitions, the
voluntary and involuntary counts correlating at -1.0, and the voluntary count alone varying with a
coefficient of variation of 0.39 in one run. So the claims read the total (the registration's
change of 2026-11-29T19:57Z, reverting the voluntary-only count of 13:14Z); the voluntary and
involuntary counts stay in switches.csv, the summary table and the verdict's note.

The count is a count of the lab's relays' switches, not the paper's cost in time: that NAT + SRD
crosses one user-space relay where two proxies cross two is this lab's architecture as the paper
describes it (Table 1, 000:86), so the claims confirm the relays switch as the design implies,
not an independent measurement of the paper's cost.
"""

from __future__ import annotations

import pandas as pd

from ...verdicts.claims import Verdict, judge, not_testable
from ...verdicts.intervals import mean_estimate
from .common import LABELS
from .registration import claim

__all__ = ["SWITCH_CLAIMS", "switch_summary", "switch_verdicts"]

#: the relays' context switches per round trip: the two claims on it (000:88 "one fewer", 000:28
#: "halved"), NAT + SRD's relay over the two proxies', paired per repetition
SWITCH_CLAIMS = ("s0.cost.switches_fewer", "s0.cost.switches_halved")
#: the column the claims read (all switches), and the two kept beside it
ALL, VOLUNTARY, INVOLUNTARY = "per_round_trip", "voluntary_per_round_trip", "involuntary_per_round_trip"
#: the relayed methods in the verdict's note, in words
NAMES = {"proxies": "two proxies", "nat_srd": "NAT + SRD"}


def switch_summary(switches: pd.DataFrame | None) -> pd.DataFrame:
    """Per relayed method: its relays, and the median over repetitions of their round trips, context
    switches and switches per round trip -- all, voluntary and involuntary (the last two empty for a
    run archived before they were recorded apart) -- the notebook's table beside Table 1."""
    columns = ["method", "label", "relays", "round_trips", "context_switches", "per_round_trip",
               VOLUNTARY, INVOLUNTARY, "repetitions"]
    if switches is None or switches.empty:
        return pd.DataFrame(columns=columns)
    switches = switches.copy()
    for column in (VOLUNTARY, INVOLUNTARY):
        if column not in switches:
            switches[column] = float("nan")
    out = switches.groupby("method").agg(
        relays=("relays", "first"), round_trips=("round_trips", "median"),
        context_switches=("context_switches", "median"), per_round_trip=(ALL, "median"),
        voluntary_per_round_trip=(VOLUNTARY, "median"),
        involuntary_per_round_trip=(INVOLUNTARY, "median"),
        repetitions=("repetition", "nunique")).reset_index()
    out.insert(1, "label", out.method.map(LABELS))
    return out[columns]


def _apart(switches: pd.DataFrame, per: pd.DataFrame) -> str:
    """The voluntary and involuntary switches per round trip beside the total (medians), with how
    much each varies over repetitions; what a run archived with the total only says instead."""
    if VOLUNTARY not in switches or INVOLUNTARY not in switches:
        return "voluntary and involuntary apart: not recorded (a run archived before 2026-11-29T13:14Z)"
    parts = []
    for column, words in ((VOLUNTARY, "voluntary"), (INVOLUNTARY, "involuntary")):
        table = switches.pivot_table(index="repetition", columns="method", values=column)
        parts.append(f"{words}: " + ", ".join(
            f"{NAMES[m]} {table[m].median():.2f} (coefficient of variation {_cv(table[m])})"
            for m in NAMES if m in table))
    totals = ", ".join(f"{NAMES[m]} {_cv(per[m])}" for m in NAMES)
    return ("; ".join(parts) + f"; the total's coefficient of variation: {totals} (preemption moves "
            "a switch from one column to the other, not out of the total)")


def _cv(values: pd.Series) -> str:
    mean = float(values.mean())
    return f"{float(values.std(ddof=1)) / mean:.3f}" if len(values) > 1 and mean else "-"


def switch_verdicts(switches: pd.DataFrame | None) -> list[Verdict]:
    """The paper's context-switch claims on the run's measured switches per round trip (voluntary
    + involuntary), NAT + SRD / two proxies paired per repetition (module docstring)."""
    if switches is None or switches.empty:
        return [not_testable(claim(k), "the run measured no context switches of its relays "
                             "(runs before the change of 2026-11-29T10:16Z did not)")
                for k in SWITCH_CLAIMS]
    per = switches.pivot_table(index="repetition", columns="method", values=ALL)
    if not {"proxies", "nat_srd"} <= set(per) or not (per.proxies > 0).all():
        return [not_testable(claim(k), "the two proxies' relays recorded no context switch in a "
                             "repetition: the ratio has no denominator") for k in SWITCH_CLAIMS]
    ratio = per.nat_srd / per.proxies
    note = (f"relays' context switches (voluntary + involuntary) per 1 B round trip, medians of "
            f"{len(per)} repetitions: two proxies {per.proxies.median():.2f} (srdmux on fa and fb), "
            f"NAT + SRD {per.nat_srd.median():.2f} (srd on fb); {_apart(switches, per)}; a count of "
            "this lab's relays' switches (one user-space relay against two, the architecture the "
            "paper describes), not the paper's cost in time")
    return [judge(claim(k), mean_estimate(ratio, "x", log=True), note) for k in SWITCH_CLAIMS]
