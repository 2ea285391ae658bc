"""Reference runs: committed runs that a reader's run of the same study is shown beside.

A reference run is an ordinary complete run folder, copied into the repository under
``data/reference/<study>/<run-id>/`` and committed (``.gitignore`` keeps ``data/runs/`` out
and lets ``data/reference/`` in). A report finds the one for its study here and puts the
headline outcomes of both runs side by side, claim by claim (:func:`compare_claims`), so a
reader sees at once whether the run on their machine says what the reference run said.
"""

from __future__ import annotations

import json
import math
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


def _side(frame: pd.DataFrame | None, who: str) -> pd.DataFrame:
    keep = (pd.DataFrame() if frame is None else frame).reindex(columns=[*CLAIM_KEYS, *RUN_COLUMNS]).astype(object)
    return keep.rename(columns={col: f"{who}: {col}" for col in RUN_COLUMNS})


def compare_claims(ours: pd.DataFrame | None, reference: pd.DataFrame | None) -> pd.DataFrame:
    """One row per claim of either run: the claim, the paper's value, then each run's estimate
    and outcome (``this run: ours``, ``this run: outcome``, ``reference: ...``) and whether the
    outcomes agree; a claim only one run has shows empty cells for the other."""
    merged = _side(ours, "this run").merge(_side(reference, "reference"), on="claim_id", how="outer",
                                           suffixes=("", " (reference)"), sort=False)
    for key in CLAIM_KEYS[1:]:  # a claim only the reference has: in the reference's words
        merged[key] = merged[key].fillna(merged.pop(f"{key} (reference)"))
    merged = merged.fillna("")
    mine, theirs = merged["this run: outcome"], merged["reference: outcome"]
    merged["same outcome"] = (mine == theirs).map({True: "yes", False: "no"}).where(
        (mine != "") & (theirs != ""), "")
    merged["consistent"] = [consistent(ours, reference, cid) for cid in merged["claim_id"]]
    return merged


def consistent(ours: pd.DataFrame | None, reference: pd.DataFrame | None, claim_id: str) -> str:
    """Whether this run agrees with the reference on one claim's quantity: "yes" when the
    reference's estimate lies inside this run's 95 % interval, "no" when outside, "" when
    either has no estimate or this run no interval. (A quick run's interval is wide; the
    question a reader asks of it is whether it contradicts the reference, not whether it
    decides the claim.)"""
    def row(frame):
        if frame is None or "claim_id" not in frame or not {"value", "low", "high"} <= set(frame):
            return None
        hit = frame[frame.claim_id == claim_id]
        return None if hit.empty else hit.iloc[0]

    mine, theirs = row(ours), row(reference)
    if mine is None or theirs is None:
        return ""
    try:
        low, high, value = float(mine["low"]), float(mine["high"]), float(theirs["value"])
    except (TypeError, ValueError):
        return ""
    if any(map(math.isnan, (low, high, value))):
        return ""
    return "yes" if low <= value <= high else "no"
