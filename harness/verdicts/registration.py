"""A study's claims registered before data, archived with every run, and their history.

A referee trusts a verdict only if its claim, its region and the design that
measures it were fixed before the outcome was seen. A study's registration is
its registration file (TOML beside the study's module, ``Study.registration_file``,
read by :mod:`harness.verdicts.registration_file`):

- its claims: every :class:`~harness.verdicts.claims.Claim` (the paper's, with its sentence,
  seed line, quantity, regime and region with the rule that made it; then our
  targets and lab checks);
- its design: what the claims rest on that must not move after data
  (repetitions per profile, the factors and their order rule, the metric);
- its changes: every :class:`DesignChange` made after archived runs existed, with
  its reason, so the report can show it; a change may withdraw claims (``dropped``): a
  withdrawn claim keeps its record and is never judged again (:mod:`.withdrawal`).

A study registers only through its file (TOML, no code): a study that names none is refused
with that fix (``Study.registration``).

Its digest (SHA-256 of the canonical JSON) is archived with every run
(``registration.json``, and ``run.json``'s ``registration``). A registration that
differs from the one an archived run was made with is shown as changed, claim
by claim, with the commits of the runs on either side of the change
(:func:`history`, ``harness claims history STUDY``, and the report).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .claims import Claim, Region

FILE = "registration.json"


@dataclass(frozen=True)
class Replaced:
    """What a change replaced of one claim, as the claim registered it before the change: its
    region and/or its gates (None: the change left that part as it was). Recorded so that the
    claim can be judged again as it stood before a change made after outcomes were read
    (:mod:`harness.verdicts.before_outcomes`)."""

    region: Region | None = None
    gates: tuple | None = None  # harness.verdicts.gates.Gate s; () where the claim had none
    #: what else the change replaced of the claim that no record can restore (a quantity, the
    #: sizes counted, a validity rule of the analysis's code), in words; "" where it replaced
    #: nothing beyond the region and gates recorded. A verdict "as registered before outcomes"
    #: keeps that part as today and says so with these words.
    also: str = ""

    def to_dict(self) -> dict:
        out = {}
        if self.region is not None:
            r = self.region
            out["region"] = {"low": None if math.isinf(r.low) else r.low,
                             "high": None if math.isinf(r.high) else r.high, "rule": r.why}
        if self.gates is not None:
            out["gates"] = [g.registration() for g in self.gates]
        if self.also:  # only where recorded: every other digest stays as it was
            out["also"] = self.also
        return out


@dataclass(frozen=True)
class DesignChange:
    """A change of a claim or of the design after archived runs existed, and why."""

    date: str  # ISO date of the change
    what: str
    why: str
    claims: tuple[str, ...] = ()  # the claim ids it touches (none: the whole design)
    renamed: Mapping[str, str] = field(default_factory=dict)  # old claim id -> new id
    #: made after outcomes were read (True), before any data of it (False), or not stated (None):
    #: a disclosure about the change, read from the registration file for reports
    #: (:mod:`harness.verdicts.disclosure`). Not in :meth:`to_dict`, so not in the digest: marking
    #: when a change was made changes nothing a run was made to test, and a correction of the mark
    #: must not turn every run made under the registration into one "registered otherwise".
    after_outcomes: bool | None = None
    #: claim id -> its region and/or gates as they stood before the change (only where recorded)
    replaced: Mapping[str, Replaced] = field(default_factory=dict)
    #: the claims it withdrew (``dropped``): each keeps its record in the registration, and this change
    #: as the one that withdrew it, and is never judged again (:mod:`harness.verdicts.withdrawal`)
    dropped: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        out = {"date": self.date, "what": self.what, "why": self.why,
               "claims": list(self.claims)}
        if self.renamed:  # only where a change renames: every other digest stays as it was
            out["renamed"] = dict(self.renamed)
        if self.replaced:  # likewise: only where a change records what it replaced
            out["replaced"] = {cid: r.to_dict() for cid, r in self.replaced.items()}
        if self.dropped:  # likewise: only where a change withdraws claims
            out["dropped"] = list(self.dropped)
        return out


@dataclass(frozen=True)
class Registration:
    study: str
    claims: tuple[Claim, ...]
    design: Mapping = field(default_factory=dict)
    changes: tuple[DesignChange, ...] = ()

    def claim(self, claim_id: str) -> Claim:
        """The registered claim ``claim_id``; a KeyError naming the study's ids if none."""
        for claim in self.claims:
            if claim.id == claim_id:
                return claim
        raise KeyError(f"{self.study} registers no claim {claim_id!r} (its claims: "
                       f"{', '.join(c.id for c in self.claims)})")

    def withdrawn(self, claim_id: str) -> DesignChange | None:
        """The change that withdrew ``claim_id`` (its ``dropped``), or None: a withdrawn claim keeps
        its record here and is never judged (:mod:`harness.verdicts.withdrawal`)."""
        return next((c for c in self.changes if claim_id in c.dropped), None)

    def body(self) -> dict:
        return {"study": self.study,
                "claims": [c.registration() for c in self.claims],
                "design": _plain(self.design),
                "changes": [c.to_dict() for c in self.changes]}

    @property
    def digest(self) -> str:
        return digest_of(self.body())

    def to_dict(self) -> dict:
        return {**self.body(), "digest": self.digest}

    def summary(self) -> dict:
        """What run.json keeps of it (the whole is ``registration.json``)."""
        by_source: dict[str, int] = {}
        for c in self.claims:
            by_source[c.source] = by_source.get(c.source, 0) + 1
        return {"digest": self.digest, "claims": by_source, "changes": len(self.changes)}


def digest_of(body: Mapping) -> str:
    canonical = json.dumps(_plain(body), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _plain(value):
    """JSON's own types, so that a digest does not depend on tuple-or-list or key order."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    return value


def registration_module_name(study_module: str) -> str:
    """Where a study module's registration is by convention: ``harness.studies.s4.study`` ->
    ``harness.studies.s4.registration`` (a study package's role module); a study kept in one
    file (``my_study`` beside its notebook) -> ``my_study_analysis``."""
    package, _, leaf = study_module.rpartition(".")
    if leaf == "study" and package:
        return f"{package}.registration"
    return f"{study_module}_analysis"


# -- history --------------------------------------------------------------------------------

@dataclass(frozen=True)
class ArchivedRegistration:
    """The registration one archived run was made with."""

    run_id: str
    path: Path
    commit: str
    body: dict | None  # None: the run predates registration (or its file is unreadable)
    status: str = ""  # run.json's: complete, incomplete ("" when it says none)

    @property
    def stopped_unregistered(self) -> bool:
        """An incomplete run with no registration stopped before it registered its claims
        (e.g. refused at the machine lock): it measured nothing under any registration."""
        return self.body is None and self.status == "incomplete"

    @property
    def digest(self) -> str:
        return (self.body or {}).get("digest") or ""


def read_archived(run_path: Path) -> ArchivedRegistration:
    meta = _json(run_path / "run.json") or {}
    body = _json(run_path / FILE)
    commit = ((meta.get("provenance") or {}).get("git") or {}).get("commit") or ""
    return ArchivedRegistration(run_path.name, run_path, commit, body,
                                str(meta.get("status") or ""))


def _json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _gate_names(gates: list[dict]) -> str:
    return "[" + ", ".join(str(g.get("name")) for g in gates) + "]"


def claim_differences(before: dict | None, after: dict | None) -> list[str]:
    """What changed between two registrations, claim by claim, in words."""
    if before is None:
        return ["(made before claims were registered: no registration archived)"]
    if after is None:
        return ["(no registration)"]
    old = {c["id"]: c for c in before.get("claims", [])}
    new = {c["id"]: c for c in after.get("claims", [])}
    out = []
    for cid in new.keys() - old.keys():
        out.append(f"{cid}: added ({new[cid]['region']['text']})")
    for cid in old.keys() - new.keys():
        out.append(f"{cid}: removed (was {old[cid]['region']['text']})")
    was_dropped = _dropped(before)
    for cid, change in _dropped(after).items():
        if cid not in was_dropped:
            out.append(f"{cid}: withdrawn by the change of {change.get('date')} (its record kept, never "
                       "judged)")
    for cid in sorted(old.keys() & new.keys()):
        for key in ("region", "quantity", "regime", "source", "quote", "paper"):
            a, b = old[cid].get(key), new[cid].get(key)
            if key == "region":
                a, b = (a or {}).get("text"), (b or {}).get("text")
            if a != b:
                out.append(f"{cid}: {key} {a!r} -> {b!r}")
        gates_before, gates_after = old[cid].get("gates") or [], new[cid].get("gates") or []
        if _plain(gates_before) != _plain(gates_after):
            out.append(f"{cid}: gates {_gate_names(gates_before)} -> {_gate_names(gates_after)}"
                       + (" (their parameters changed)" if _gate_names(gates_before)
                          == _gate_names(gates_after) else ""))
    if _plain(before.get("design")) != _plain(after.get("design")):
        keys = sorted(set(before.get("design") or {}) | set(after.get("design") or {}))
        moved = [k for k in keys if (before.get("design") or {}).get(k)
                 != (after.get("design") or {}).get(k)]
        out.append("design: " + ", ".join(moved) + " changed")
    return sorted(out)


def _dropped(body: dict) -> dict[str, dict]:
    """Each claim an archived registration's changes withdrew (``dropped``) -> that change."""
    return {cid: change for change in body.get("changes") or [] for cid in change.get("dropped") or []}


def history(current: Registration, runs: Iterable[Path]) -> list[dict]:
    """Each archived run in time order with the registration it was made with, and where a
    run's registration differs from the previous run's (and the last from today's) what
    changed.

    A run id given twice (a reference run is a copy of an archived run) is one run. A run
    that stopped before it registered its claims is listed with a note but is no step of the
    registration's history: on 2026-11-27 an S4 run refused at the machine lock read as two
    changes, "(no registration)" and back.
    """
    out, previous, seen = [], None, set()
    for path in sorted(runs, key=lambda p: p.name):
        if path.name in seen:
            continue
        seen.add(path.name)
        archived = read_archived(path)
        row = {"run_id": archived.run_id, "commit": archived.commit[:12],
               "digest": archived.digest[7:19] or "-", "changed": [], "path": str(path)}
        if archived.stopped_unregistered:
            out.append({**row, "note": "incomplete: stopped before it registered its claims, "
                                       "so nothing was measured under any registration"})
            continue
        if previous is not None and previous.digest != archived.digest:
            row["changed"] = claim_differences(previous.body, archived.body)
        out.append(row)
        previous = archived
    now = current.to_dict()
    if previous is not None and previous.digest != now["digest"]:
        out.append({"run_id": "(the code now)", "commit": "", "digest": now["digest"][7:19],
                    "changed": claim_differences(previous.body, now), "path": ""})
    return out
