"""The ``serialising_wire`` gate: the run's wire probe (run.json ``wire_probe``,
:mod:`harness.lab.serialisation`) in words, each size the claim counts against what a
serialising wire of the link's rate carries."""

from __future__ import annotations

from collections.abc import Mapping

from ...lab.serialisation import size_text
from .facts import GateResult, RunFacts


def serialising_wire(_facts: RunFacts, _tables, params, meta: Mapping) -> GateResult:
    name = "serialising_wire"
    lo, hi = int(params["min_size"]), int(params["max_size"])
    probe = meta.get("wire_probe")
    if not probe:
        return GateResult(name, False, "the run recorded no wire probe (run.json wire_probe): "
                          "whether its wire serialises a message is unknown")
    where = f"probe on {probe.get('path', '?')}"
    if not probe.get("rate_mbit"):
        return GateResult(name, False, f"{where}: {probe.get('note') or 'no wire rate'}")
    sizes = [p for p in probe.get("sizes") or () if lo <= int(p["size"]) <= hi]
    if not sizes:
        return GateResult(name, False, f"{where}: no size of {lo}-{hi} B probed")
    slack = float(probe.get("slack", 0.0))

    def text(p) -> str:  # against the bound the probe applied: the wire's rate + the slack
        return size_text(int(p["size"]), float(p["pingpong_mbit"]), float(p["wire_mbit"]), slack,
                         bool(p["serialises"]))

    yes = [p for p in sizes if p["serialises"]]
    no = [p for p in sizes if not p["serialises"]]
    figures = (f"{where}, {probe.get('links', 1)} links of {probe['rate_mbit']:g} Mbit/s, "
               f"ping-pong against what a serialising path carries + {slack * 100:g} %: ")
    figures += "; ".join(part for part in (
        "serialises " + ", ".join(map(text, yes)) if yes else "",
        "does not serialise " + ", ".join(map(text, no)) if no else "") if part)
    if params.get("every"):  # every size the claim counts, not one a slow moment let through
        return GateResult(name, not no, figures + f" (every size of {lo}-{hi} B must serialise)")
    return GateResult(name, bool(yes), figures)
