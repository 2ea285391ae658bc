"""The committed reference runs are current: today's analysis of each one's archived results
gives the claims table it archived, and it was registered as today's code registers its claims.

A reference that went stale -- its claims table made by older claim code, or its claims
registered otherwise than today -- would make every report compare against verdicts the
code no longer gives. This test fails the moment that happens, naming the claims that differ.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from harness.archive.reference import reference_root
from harness.studies.registry import discover, get_study
from harness.verdicts.registration import read_archived

#: the columns that carry a verdict: the claim, its region, our estimate, the outcome
DECISION = ("claim_id", "source", "region", "value", "low", "high", "n", "outcome")
#: references that predate the registration of their study's claims, and why they stay for
#: now; the test below fails as soon as one of them is current (so the list cannot linger)
PREDATE_REGISTRATION: dict[str, str] = {}


def reference_runs() -> list[Path]:
    return sorted(p.parent for p in reference_root().glob("*/*/run.json"))


def decisions(frame: pd.DataFrame) -> pd.DataFrame:
    have = [c for c in DECISION if c in frame]
    return frame[have].sort_values("claim_id").reset_index(drop=True)


def differences(archived: pd.DataFrame, today: pd.DataFrame) -> list[str]:
    a, b = decisions(archived).set_index("claim_id"), decisions(today).set_index("claim_id")
    out = [f"{cid}: only in the archived table" for cid in a.index.difference(b.index)]
    out += [f"{cid}: only in today's analysis" for cid in b.index.difference(a.index)]
    for cid in a.index.intersection(b.index):
        for col in a.columns.intersection(b.columns):
            x, y = a.at[cid, col], b.at[cid, col]
            if isinstance(x, float | int) and isinstance(y, float | int):
                same = (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9,
                                                                        abs_tol=1e-12)
            else:
                same = str(x) == str(y) or (pd.isna(x) and pd.isna(y))
            if not same:
                out.append(f"{cid}: {col} archived {x!r}, today {y!r}")
    return out


def test_there_is_a_reference_run_of_every_study():
    assert {p.parent.name for p in reference_runs()} >= {"s0", "s1", "s2", "s3", "s4"}


@pytest.mark.parametrize("run", reference_runs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_todays_analysis_of_a_reference_gives_its_archived_claims(run):
    discover()
    study = get_study(run.parent.name)
    archived = pd.read_parquet(run / "claims.parquet")
    today = study.claims(study.load(run))
    diff = differences(archived, today)
    assert not diff, (f"reference {run.name} of {study.name} is stale: today's analysis of its "
                      "results differs from its claims table -- make a new reference run at the "
                      "verdict profile:\n  " + "\n  ".join(diff))


@pytest.mark.parametrize("run", reference_runs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_reference_is_registered_as_today_and_at_the_verdict_profile(run):
    discover()
    study = get_study(run.parent.name)
    archived = read_archived(run)
    current = archived.digest == study.registration().digest
    if study.name in PREDATE_REGISTRATION:
        assert not current, (f"{study.name}'s reference is current now: take it out of "
                             "PREDATE_REGISTRATION")
        assert archived.body is None, f"{run.name}: listed as predating registration, but has one"
        return
    assert current, (f"reference {run.name} of {study.name} was registered as "
                     f"{archived.digest[7:19] or '(nothing)'}, today's code registers "
                     f"{study.registration().digest[7:19]}: `harness claims history "
                     f"{study.name}` says what changed; make a new reference run")
    import json

    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete"
    assert meta["parameters"]["profile"] == "verdict", f"{run.name} is not a verdict-profile run"
