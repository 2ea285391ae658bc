"""The paper's claims beside our numbers, each with a one-line verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
PARTLY = "partly"
NO_DATA = "no data"


@dataclass(frozen=True)
class Claim:
    claim: str
    paper: str
    ours: str
    verdict: str
    why: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def within(ours: float, paper: float, rel_tol: float) -> bool:
    return abs(ours - paper) <= rel_tol * abs(paper)


def value_claim(claim: str, paper: float, ours: float | None, unit: str, rel_tol: float,
                spread: float | None = None, why: str = "") -> Claim:
    """A number the paper reports, reproduced when ours is within ``rel_tol`` of it."""
    if ours is None or pd.isna(ours):
        return Claim(claim, f"{paper:g} {unit}", "-", NO_DATA, why)
    ours_text = f"{ours:.0f} {unit}" if abs(ours) >= 10 else f"{ours:.2f} {unit}"
    if spread is not None and not pd.isna(spread):
        ours_text += f" (sd {spread:.1f})"
    verdict = REPRODUCED if within(ours, paper, rel_tol) else NOT_REPRODUCED
    return Claim(claim, f"{paper:g} {unit}", ours_text,
                 f"{verdict} (tolerance ±{rel_tol:.0%})", why)


def change_claim(claim: str, paper_pct: float, ours_pct: float | None, abs_tol_pp: float,
                 why: str = "") -> Claim:
    """A relative change in percent, reproduced within ``abs_tol_pp`` percentage points."""
    if ours_pct is None or pd.isna(ours_pct):
        return Claim(claim, f"{paper_pct:+.0f}%", "-", NO_DATA, why)
    ok = abs(ours_pct - paper_pct) <= abs_tol_pp
    return Claim(claim, f"{paper_pct:+.0f}%", f"{ours_pct:+.1f}%",
                 f"{REPRODUCED if ok else NOT_REPRODUCED} (tolerance ±{abs_tol_pp:g} pp)", why)


def threshold_claim(claim: str, paper: str, ours: float | None, ours_text: str, holds: bool,
                    why: str = "") -> Claim:
    if ours is None or pd.isna(ours):
        return Claim(claim, paper, "-", NO_DATA, why)
    return Claim(claim, paper, ours_text, REPRODUCED if holds else NOT_REPRODUCED, why)


def table(claims: list[Claim]) -> pd.DataFrame:
    return pd.DataFrame([c.to_dict() for c in claims])
