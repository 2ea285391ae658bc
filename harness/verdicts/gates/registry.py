"""The gate registry: :class:`Gate` as a claim registers it, :data:`GATES` (which gates exist and
what each takes), :func:`evaluate` one gate on a run and :func:`apply` every claim's gates to a
claims table (see :mod:`harness.verdicts.gates` for what each gate is for)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from ..claims import INVALID, NOT_TESTABLE
from .cfs import cpu_throttled
from .congestion import congestion_control
from .facts import GateResult, RunFacts
from .levels import bounded, cpu_bound
from .links import links_verified
from .machines import accelerated_virtualisation, no_oversubscription, uniprocessor
from .reachable import reachable
from .serialisation import serialising_wire
from .stack import stack

#: the optional parameter every gate takes: the words its claim's verdict says when the gate fails,
#: which makes it a *stated condition*: evaluated and shown like a gate, but the claim is judged all
#: the same, its reason opening with these words and the figures (for a regime the paper explains
#: its result by without stating it, so that a lab unable to create it reads "not reproduced under
#: the paper's stated testbed" rather than a bare "not testable"; S0's relays, the sixth review)
UNMET = "unmet"

#: the optional parameter naming, in words, a cause the paper gives for its result but does not state
#: of its testbed: the gate decides (its failure makes the claim not testable here), and where such
#: gates are the only ones that fail, the reason also says what the claim reads under the paper's
#: stated testbed only (:data:`STATED_ONLY`), so that no negative result is hidden (S0's relays: the
#: sixth review asked for that reading, the seventh for the gate: a region the lab cannot reach is
#: not judged)
UNSTATED = "unstated"
#: the words before the verdict a claim gets under the paper's stated testbed only (in its reason)
STATED_ONLY = "under the paper's stated testbed only it reads"


@dataclass(frozen=True)
class Gate:
    """A gate as a claim registers it: its name and its parameters (registered levels)."""

    name: str
    params: Mapping[str, float | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in GATES:
            raise ValueError(f"gate {self.name!r} is not one of {sorted(GATES)}: name a gate "
                             "harness.verdicts.gates defines")
        if UNMET in self.params and not (isinstance(self.params[UNMET], str) and self.params[UNMET].strip()):
            raise ValueError(f"gate {self.name}: {UNMET} = {self.params[UNMET]!r} is not words: give the "
                             "sentence its claim's verdict says when the condition fails, or leave "
                             f"{UNMET} out to make the gate decide whether the claim is judged")
        if UNSTATED in self.params and not (isinstance(self.params[UNSTATED], str)
                                            and self.params[UNSTATED].strip()):
            raise ValueError(f"gate {self.name}: {UNSTATED} = {self.params[UNSTATED]!r} is not words: "
                             "name the cause the paper gives but does not state of its testbed")
        if UNMET in self.params and UNSTATED in self.params:
            raise ValueError(f"gate {self.name}: {UNMET} (judged all the same) and {UNSTATED} (the "
                             "gate decides) contradict each other: give one")
        spec = GATES[self.name]
        unknown = set(self.params) - set(spec.params) - set(spec.optional) - {UNMET, UNSTATED}
        missing = set(spec.params) - set(self.params)
        if unknown or missing:
            raise ValueError(f"gate {self.name}: parameters {sorted(self.params)} do not match "
                             f"what it takes {sorted(spec.params)} (optional "
                             f"{sorted(spec.optional)}; unknown {sorted(unknown)}, "
                             f"missing {sorted(missing)})")

    def registration(self) -> dict:
        return {"name": self.name, **{k: self.params[k] for k in sorted(self.params)}}

    @property
    def condition(self) -> str:
        """The words of a stated condition (:data:`UNMET`); "" for a gate that decides."""
        return " ".join(str(self.params.get(UNMET) or "").split())

    @property
    def unstated(self) -> str:
        """The words of a cause the paper does not state of its testbed (:data:`UNSTATED`); ""."""
        return " ".join(str(self.params.get(UNSTATED) or "").split())



GateCheck = Callable[..., GateResult]  # (facts, tables, params[, meta])


@dataclass(frozen=True)
class GateSpec:
    check: GateCheck
    params: tuple[str, ...] = ()  # required
    what: str = ""
    optional: tuple[str, ...] = ()
    meta: bool = False  # the check reads run.json itself (a probe's record), not only RunFacts
    region: bool = False  # the check compares a measured figure with the claim's region



GATES: dict[str, GateSpec] = {
    "no_oversubscription": GateSpec(no_oversubscription, (), "all VMs' vCPUs within the host's cores",
                                    ("vcpus_per_vm",)),
    "accelerated_virtualisation": GateSpec(accelerated_virtualisation, (), "VMs under a hardware accelerator",
                                           ("placement",), meta=True),
    "uniprocessor": GateSpec(uniprocessor, (), "one vCPU per VM (the paper's UP kernel)"),
    "cpu_bound": GateSpec(cpu_bound, ("table", "column", "min_pct"),
                          "a measured CPU busy share at least a registered level", ("rows",)),
    "serialising_wire": GateSpec(serialising_wire, ("min_size", "max_size"),
                                 "the run's wire probe shows the wire serialising a size the "
                                 "claim counts (with every = true: every size it counts)",
                                 ("every",), meta=True),
    "reachable": GateSpec(reachable, ("table", "column", "ceiling", "over", "min_size", "max_size"),
                          "the most the lab lets a gain be (its ceiling, measured) reaches the "
                          "claim's region", ("by",), region=True),
    "links_verified": GateSpec(links_verified, ("link",),
                               "the link verification passed on every direction of the link "
                               "(with direction: on that one)", ("direction",)),
    "at_least": GateSpec(bounded("at_least", below=False), ("table", "column", "min"),
                         "a measured quantity at least a registered level on every row",
                         ("rows", "what", "per")),
    "at_most": GateSpec(bounded("at_most", below=True), ("table", "column", "max"),
                        "a measured quantity at most a registered level on every row",
                        ("rows", "what", "per")),
    "congestion_control": GateSpec(congestion_control, ("transport", "controller"),
                                   "the transport's points ran the paper's congestion control, "
                                   "as recorded", ("what",), meta=True),
    "cpu_throttled": GateSpec(cpu_throttled, ("table", "groups", "more_than"),
                              "the CPU-limited sender throttled in more than a registered share "
                              "of its CFS periods in each group of points the claim compares",
                              ("rows",)),
    "stack": GateSpec(stack, ("transport", "sysctl", "tool", "paper"),
                      "the transport's points ran the paper's protocol implementation and "
                      "measuring tool, as recorded", ("table", "rows"), meta=True),
}


def evaluate(gate: Gate, facts: RunFacts, tables: Mapping[str, pd.DataFrame],
             meta: Mapping | None = None,
             region: tuple[float, float] = (-math.inf, math.inf)) -> GateResult:
    spec = GATES[gate.name]
    if spec.region:
        return spec.check(facts, tables, gate.params, region)
    if spec.meta:
        return spec.check(facts, tables, gate.params, meta or {})
    return spec.check(facts, tables, gate.params)


def apply(frame: pd.DataFrame, meta: Mapping, tables: Mapping[str, pd.DataFrame],
          gates: Mapping[str, tuple[Gate, ...]],
          regions: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """``frame`` (a claims table) with a ``gates`` column (each gate of each claim with its
    figures) and each claim with a failed gate *not testable here*, the failed gates' figures
    its reason. A failed stated condition (a gate registered with :data:`UNMET` words) leaves the
    claim judged, its reason opening with those words and the figures. A claim already not
    testable keeps its reason, the gates added to it (also one
    its analysis made not testable per point: it rests on points beyond the paper's regime that
    this lab's own apparatus makes possible, :func:`harness.verdicts.claims.judge`'s ``outside``,
    its estimate shown as measured anyway); a claim already invalid (it rests on a point
    impossible *in this lab*, not merely outside the paper's regime) stays invalid, the failed
    gates added to its reason: invalid takes precedence, so no estimate over impossible points
    is shown as "measured anyway". Which points are which is decided per point by the study
    (S0: :func:`harness.studies.s0.validity.checked_points`), never here."""
    frame = frame.copy()
    facts = RunFacts.from_meta(meta)
    texts: list[str] = []
    for i, claim_id in frame["claim_id"].items():
        region = (regions or {}).get(claim_id, (-math.inf, math.inf))  # the registered one
        claim_gates = gates.get(claim_id, ())
        results = [evaluate(g, facts, tables, meta, region) for g in claim_gates]
        texts.append("; ".join(r.text() for r in results))
        unmet: dict[str, list[str]] = {}  # a condition's words -> its failed gates' figures
        for g, r in zip(claim_gates, results):
            if not r.passed and g.condition:
                unmet.setdefault(g.condition, []).append(f"{r.gate} failed: {r.figures}")
        stated = "; ".join(f"{words} ({'; '.join(figures)})" for words, figures in unmet.items())
        failed = [r for g, r in zip(claim_gates, results) if not r.passed and not g.condition]
        if not failed:
            if stated:  # judged all the same: the unmet condition said first, with its figures
                frame.at[i, "reason"] = f"{stated}; {frame.at[i, 'reason']}"
            continue
        why = "the lab is not in the paper's regime: " + "; ".join(
            f"{r.gate} failed ({r.figures})" for r in failed) + (f"; and {stated}" if stated else "")
        judged = frame.at[i, "outcome"] not in (NOT_TESTABLE, INVALID)
        unstated = [g.unstated for g, r in zip(claim_gates, results) if not r.passed and not g.condition]
        reading = ""
        if judged and all(unstated):  # only causes the paper does not state failed: what it reads
            reading = "; " + stated_only(dict.fromkeys(unstated), frame.at[i, "outcome"],
                                      str(frame.at[i, "ours"] if "ours" in frame else ""),
                                      str(frame.at[i, "region"] if "region" in frame else ""))
        if not judged:  # invalid stays invalid: a claim
            # resting on a point impossible in this lab is never shown as a measurement, also
            # when the regime fails too; a point the lab makes possible outside the paper's
            # regime is not invalid (the study's analysis made it not testable, per point)
            frame.at[i, "reason"] = f"{frame.at[i, 'reason']}; and {why}"
        else:
            ours = frame.at[i, "ours"] if "ours" in frame else ""
            frame.at[i, "outcome"] = NOT_TESTABLE
            frame.at[i, "reason"] = (f"{why}; measured anyway: {ours}" if ours else why) + reading
        if "more_needed" in frame:
            frame.at[i, "more_needed"] = pd.NA
    frame["gates"] = texts
    return frame


def stated_only(causes, outcome: str, ours: str, region: str) -> str:
    """What a claim gated only by causes its paper does not state of its testbed (gates registered
    with :data:`UNSTATED` words) reads under the paper's stated testbed only: its verdict, estimate
    and region, after the causes' words."""
    against = f" against {region}" if region else ""
    return f"{'; '.join(causes)}: {STATED_ONLY} {outcome}: {ours}{against}"


def stated_only_outcome(reason: str) -> str:
    """The verdict a reason last says its claim reads under the paper's stated testbed only
    (:func:`stated_only`; a pool's own reading comes after its runs'); "" when it says none."""
    text = " ".join(str(reason or "").split())
    at = text.rfind(STATED_ONLY)
    return text[at + len(STATED_ONLY):].split(":", 1)[0].strip() if at >= 0 else ""
