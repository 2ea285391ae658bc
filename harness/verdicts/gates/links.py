"""The ``links_verified`` gate: the run's link verification (run.json ``link_verification``,
:mod:`harness.lab.verify`) on the directions of a named link, a failed one in words: what was
measured against what it had to be."""

from __future__ import annotations

from collections.abc import Mapping

from ...lab.rate_plan import recorded_fit_note
from .facts import GateResult, RunFacts

_BELOW_TOLERANCE = "below the verification's tolerance"


def _link_failure(record: Mapping) -> str:
    """One failed link direction in words: what was measured against what it had to be."""
    parts = []
    if record.get("rate_ok") is False:
        tries = record.get("attempts") or []
        ratio = record.get("rate_ratio")
        parts.append(f"rate {_two_decimals(record.get('link_layer_mbit'))} of "
                     f"{_two_decimals(record.get('configured_mbit'))} Mbit/s configured"
                     + (f" ({ratio:.3f}" if ratio is not None else " (")
                     + (f"; tries {', '.join(f'{t:.3f}' for t in tries)}" if tries else "")
                     + _past_slow_start(record)
                     + f"; {recorded_fit_note(record) or _BELOW_TOLERANCE})")
    if record.get("rtt_ok") is False:
        parts.append(f"RTT {_two_decimals(record.get('rtt_ms'))} ms against "
                     f"{_two_decimals(record.get('expected_rtt_ms'))} ms expected")
    return f"{record.get('link')} {record.get('direction')}: " + (
        "; ".join(parts) or "failed")


def _two_decimals(value) -> str:
    """A link verification's figure (Mbit/s, ms: a known scale) to two decimals, ``?`` when
    the record has none. Not the three significant digits of :mod:`.levels`, which suit a
    quantity of any scale: a failed check reads "22.18 of 23.39 Mbit/s" (S2's reference WAN, 0.948 of
    its rate) and an RTT "9.00 ms against 4.80 ms", as the reports have said since the gate
    came (tests/unit/test_gates.py holds both)."""
    return "?" if value is None else f"{float(value):.2f}"


def links_verified(facts: RunFacts, _tables, params) -> GateResult:
    name = "links_verified"
    part = str(params["link"])
    # ``direction`` (optional): only that direction counts, the one the claim's data crosses
    # (S3: switch->reducer; the other carries only requests and acks)
    way = str(params.get("direction") or "")
    mine = [r for r in facts.links if part in str(r.get("link", ""))
            and (not way or r.get("direction") == way)]
    if not mine:
        return GateResult(name, False, f"no verification of a link named *{part}*"
                          + (f" in direction {way}" if way else "") + " was recorded")
    failed = [r for r in mine if r.get("ok") is False
              or r.get("rate_ok") is False or r.get("rtt_ok") is False]
    if failed:
        return GateResult(name, False, "verification failed: " + "; ".join(
            _link_failure(r) for r in failed) + " (the run measured on past it)")
    return GateResult(name, True, f"{len(mine)} direction{'s' if len(mine) != 1 else ''} of "
                      f"*{part}* verified: " + ", ".join(
                          f"{r.get('direction')} {r.get('rate_ratio') or 0:.3f} of its rate"
                          + _past_slow_start(r)
                          if r.get("rate_ratio") is not None else f"{r.get('direction')}"
                          for r in mine))


def _past_slow_start(record: Mapping) -> str:
    """What a long link's rate check covered (harness.lab.rate_plan), or nothing: a short
    link's check, or a run from before checks omitted slow start."""
    if not record.get("omitted_s"):
        return ""
    return (f" over {record.get('steady_rtts') or 0:.0f} RTTs after {record['omitted_s']} s of "
            "slow start")

