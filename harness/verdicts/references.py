"""The committed verdict references of a study, and which of them stands today.

A study's references are folders under ``data/reference/<study>/``: a pooled reference
(``harness claims pool --reference``, several runs with a copy of each under ``members/``) or,
from before the protocol of runs as blocks, a single run. Each was judged under the
registration it archived (``registration.json``). It *stands* while that registration is the
study's registration today (the same digest): a change recorded since supersedes it, and the
reference stays in the repository as what was measured and judged then, never rewritten.

``harness claims references`` prints this list; the documentation's page of references is
rendered from it (docsgen), so which reference stands is read from the data, never typed in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ..archive.archive import RUN_FILE
from .claims import summaries

#: the folder under data/reference/<study>/ of a pooled reference has this in its name
POOLED = "-pool-"


@dataclass(frozen=True)
class MeasuredRun:
    """One run a reference rests on: its id, when it measured, the commit it ran."""

    run_id: str
    started: str
    ended: str
    commit: str

    @property
    def minutes(self) -> float | None:
        """How long the run took, start to end, in minutes (None where either is not recorded)."""
        start, end = _when(self.started), _when(self.ended)
        if start is None or end is None:
            return None
        return (end - start).total_seconds() / 60

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "started": self.started, "ended": self.ended,
                "commit": self.commit, "minutes": None if self.minutes is None else round(self.minutes, 1)}


@dataclass(frozen=True)
class Reference:
    """A committed reference, its runs, its registration and what its table says."""

    study: str
    run_id: str
    path: Path
    pooled: bool
    digest: str
    runs: tuple[MeasuredRun, ...]
    verdicts: str  # the paper's claims' counts, then ours apart (claims.summaries)
    stands: bool  # judged under the study's registration of today
    changes_since: tuple[str, ...] = ()  # labels '#N (date)' of changes recorded after its first run started

    def status(self) -> str:
        if self.stands:
            return "stands: judged under today's registration"
        since = self.changes_since
        if len(since) > 2:  # the first and the last (changes_since lists every one)
            return f"superseded by the {len(since)} changes recorded since it started, {since[0]} to {since[-1]}"
        if since:
            return "superseded by changes " + ", ".join(since)
        return "superseded: registered otherwise than today"

    def to_dict(self) -> dict:
        return {"study": self.study, "reference": self.run_id, "pooled": self.pooled,
                "registration": self.digest, "runs": [r.to_dict() for r in self.runs],
                "verdicts": self.verdicts, "stands": self.stands,
                "changes_since": list(self.changes_since), "status": self.status()}


def references(study: str, registration, root: Path) -> list[Reference]:
    """Every committed reference of ``study`` under ``root`` (``data/reference``), oldest first,
    each marked against ``registration`` (the study's :class:`~harness.verdicts.registration.
    Registration` of today)."""
    found = []
    for run_file in sorted((root / study).glob(f"*/{RUN_FILE}")):
        folder = run_file.parent
        meta = json.loads(run_file.read_text())
        pooled = POOLED in folder.name or bool(meta.get("members"))
        digest = str((meta.get("registration") or {}).get("digest") or "")
        runs = tuple(_members(meta)) if pooled else (_run(meta),)
        table = folder / "claims.csv"
        verdicts = summaries(pd.read_csv(table)) if table.is_file() else "no claims table"
        stands = bool(digest) and digest == registration.digest
        since = () if stands else tuple(_changes_since(registration, runs))
        found.append(Reference(study, folder.name, folder, pooled, digest, runs, verdicts, stands, since))
    return found


def standing(found: list[Reference]) -> Reference | None:
    """The newest reference that stands, or None."""
    return next((ref for ref in reversed(found) if ref.stands), None)


def _members(meta: dict) -> list[MeasuredRun]:
    return [MeasuredRun(str(m.get("run_id") or ""), str(m.get("started") or ""),
                        str(m.get("ended") or ""), str(m.get("commit") or ""))
            for m in meta.get("members") or []]


def _run(meta: dict) -> MeasuredRun:
    commit = ((meta.get("provenance") or {}).get("git") or {}).get("commit") or ""
    return MeasuredRun(str(meta.get("run_id") or ""), str(meta.get("started") or ""),
                       str(meta.get("ended") or ""), str(commit))


def _changes_since(registration, runs: tuple[MeasuredRun, ...]) -> list[str]:
    """The labels of the registration's changes made after the reference's first run started:
    a change dated with its time (``2026-11-29T23:19Z``) by that time; one dated by its day only
    when its day is later than the run's (a change of the same day cannot be placed)."""
    starts = [s for s in (_when(r.started) for r in runs) if s is not None]
    if not starts:
        return []
    first = min(starts)
    out = []
    for number, change in enumerate(registration.changes, 1):
        when = _when(change.date)
        if when is None:
            continue
        later = when > first if "T" in change.date else when.date() > first.date()
        if later:
            out.append(f"#{number} ({change.date})")
    return out


def _when(text: str) -> datetime | None:
    """An ISO date or time as archived or registered ('2026-11-30T00:33:18+00:00',
    '2026-11-29T23:19Z', '2026-11-28'), in UTC; None if it is not one."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
