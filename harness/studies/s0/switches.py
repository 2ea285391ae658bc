"""S0's context-switch claims (000:28 "halved", 000:88 "one context switch fewer"), judged on the
relays' voluntary context switches per round trip.

The run counts each relayed method's relays' switches around one 1 B ping-pong
(:func:`.measure.context_switch_point`), voluntary and involuntary apart
(:class:`harness.tools.cpu.ContextSwitches`). A relay that sleeps until its message arrives
switches out *voluntarily* once per wake-up: that is what the paper's mechanism -- one
user-space relay fewer -- changes. *Involuntary* switches are the machine preempting a runnable
relay: on the shared 2-core host they moved the two proxies' count above its structural 4 per
round trip (4.04-5.27 per repetition in the pooled reference 20261129T113502Z-pool-cfba0f, the
S0 referee of 2026-11-29), a fact of the host's load, not of the relays' design. The claims read
the voluntary count; the involuntary one stays in the table and the verdict's note.

A run archived before the split (change of 2026-11-29T13:14Z in the registration) recorded the
sum only: the registered quantity was not measured, so its claims are *not testable here*, with
the sum it did record in the reason.
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
#: the column the claims read, and the ones kept beside it
VOLUNTARY, INVOLUNTARY, ALL = "voluntary_per_round_trip", "involuntary_per_round_trip", "per_round_trip"


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


def switch_verdicts(switches: pd.DataFrame | None) -> list[Verdict]:
    """The paper's context-switch claims on the run's measured voluntary switches per round trip,
    NAT + SRD / two proxies paired per repetition (module docstring)."""
    if switches is None or switches.empty:
        return [not_testable(claim(k), "the run measured no context switches of its relays "
                             "(runs before the change of 2026-11-29T10:16Z did not)")
                for k in SWITCH_CLAIMS]
    if VOLUNTARY not in switches:
        per = switches.pivot_table(index="repetition", columns="method", values=ALL)
        said = ", ".join(f"{LABELS.get(m, m)} {per[m].median():.2f}" for m in per)
        return [not_testable(claim(k), "the run recorded its relays' voluntary and involuntary context "
                             "switches together (runs before the change of 2026-11-29T13:14Z): the "
                             f"registered quantity, voluntary switches, was not measured (all "
                             f"switches per round trip, medians: {said})") for k in SWITCH_CLAIMS]
    per = switches.pivot_table(index="repetition", columns="method", values=VOLUNTARY)
    if not {"proxies", "nat_srd"} <= set(per) or not (per.proxies > 0).all():
        return [not_testable(claim(k), "the two proxies' relays recorded no voluntary context switch "
                             "in a repetition: the ratio has no denominator") for k in SWITCH_CLAIMS]
    forced = switches.pivot_table(index="repetition", columns="method", values=INVOLUNTARY)
    ratio = per.nat_srd / per.proxies
    note = (f"relays' voluntary context switches per 1 B round trip (medians of {len(per)} "
            f"repetitions): two proxies {per.proxies.median():.2f} (srdmux on fa and fb), NAT + SRD "
            f"{per.nat_srd.median():.2f} (srd on fb); involuntary ones (the machine preempting a "
            f"relay, not counted): two proxies {forced.proxies.median():.2f}, NAT + SRD "
            f"{forced.nat_srd.median():.2f}")
    return [judge(claim(k), mean_estimate(ratio, "x", log=True), note) for k in SWITCH_CLAIMS]
