"""Reference runs: committed runs that a reader's run of the same study is shown beside.

A reference run is an ordinary complete run folder, copied into the repository under
``data/reference/<study>/<run-id>/`` and committed (``.gitignore`` keeps ``data/runs/`` out
and lets ``data/reference/`` in). A report finds the one for its study here and puts the
headline outcomes of both runs side by side, claim by claim (:func:`compare_claims`), so a
reader sees at once whether the run on their machine says what the reference run said.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .archive import COMPLETE, RUN_FILE, project_root

# What a comparison shows of each claim, and of each run.
CLAIM_KEYS = ("claim_id", "source", "claim", "paper")
RUN_COLUMNS = ("ours", "outcome")


def reference_root() -> Path:
    """The repository's ``data/reference/`` (not ``$HARNESS_DATA``: reference runs are committed)."""
    return project_root() / "data" / "reference"


@dataclass(frozen=True)
class ReferenceRun:
    path: Path
    meta: dict

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def profile(self) -> str:
        return str((self.meta.get("parameters") or {}).get("profile") or "")

    def claims(self) -> pd.DataFrame | None:
        path = self.path / "claims.csv"
        return pd.read_csv(path) if path.exists() else None


def find_reference(study: str, profile: str = "", root: Path | None = None,
                   exclude: Path | None = None) -> ReferenceRun | None:
    """The reference run of a study: the newest complete one, of the same profile if there is one.

    ``exclude`` is the reader's own run (a reference run re-rendered is not its own reference).
    """
    folder = (root or reference_root()) / study
    found = []
    for run_file in sorted(folder.glob(f"*/{RUN_FILE}")):
        if exclude is not None and run_file.parent.resolve() == Path(exclude).resolve():
            continue
        try:
            meta = json.loads(run_file.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if meta.get("status") == COMPLETE:
            found.append(ReferenceRun(run_file.parent, meta))
    same_profile = [ref for ref in found if profile and ref.profile == profile]
    candidates = same_profile or found
    return candidates[-1] if candidates else None  # run ids start with their UTC time


def compare_claims(ours: pd.DataFrame | None, reference: pd.DataFrame | None) -> pd.DataFrame:
    """One row per claim of either run: the claim, the paper's value, then each run's estimate
    and outcome (``this run: ours``, ``this run: outcome``, ``reference: ...``) and whether the
    outcomes agree; a claim only one run has shows empty cells for the other."""
    columns = [*CLAIM_KEYS, *(f"{who}: {col}" for who in ("this run", "reference") for col in RUN_COLUMNS)]
    tables = []
    for who, frame in (("this run", ours), ("reference", reference)):
        if frame is None or frame.empty:
            tables.append(pd.DataFrame(columns=[*CLAIM_KEYS, *(f"{who}: {c}" for c in RUN_COLUMNS)]))
            continue
        keep = frame.reindex(columns=[*CLAIM_KEYS, *RUN_COLUMNS])
        tables.append(keep.rename(columns={c: f"{who}: {c}" for c in RUN_COLUMNS}))
    mine, theirs = tables
    theirs = theirs.drop(columns=[k for k in CLAIM_KEYS if k != "claim_id"])
    merged = mine.merge(theirs, on="claim_id", how="outer", sort=False)
    missing = merged["claim"].isna()
    if missing.any() and reference is not None:  # claims only the reference has: its own words
        ref = reference.set_index("claim_id")
        for key in ("source", "claim", "paper"):
            merged.loc[missing, key] = merged.loc[missing, "claim_id"].map(ref[key])
    merged = merged.reindex(columns=columns).fillna("")
    both = (merged["this run: outcome"] != "") & (merged["reference: outcome"] != "")
    merged["same outcome"] = ""
    merged.loc[both, "same outcome"] = (merged["this run: outcome"] == merged["reference: outcome"])[both].map(
        {True: "yes", False: "no"})
    return merged
