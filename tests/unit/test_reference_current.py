"""The committed reference runs are current: today's analysis of each one's archived results
gives the claims table it archived, and it was registered as today's code registers its claims.

A reference that went stale -- its claims table made by older claim code, or its claims
registered otherwise than today -- would make every report compare against verdicts the
code no longer gives. This test fails the moment that happens, naming the claims that differ.

One change is known and listed (:data:`MADE_UNDER_OLD_INTERVALS`): the references were made
under the interval rule before issue 33 item 8 (a percentile bootstrap from 10 units, Student
t quantiles from a 3-decimal table below). For those the test checks instead that the old rule
gives their archived table exactly, and that today's rule changes nothing but interval ends
(and outcomes) of the claims it re-rules: the estimates, sample counts, regions and claims
must still be today's, and the registration test below is unchanged.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

import harness.studies.base as study_base
import harness.verdicts.intervals as intervals
from harness.archive.reference import reference_root
from harness.studies.registry import discover, get_study
from harness.verdicts.registration import read_archived

#: the columns that carry a verdict: the claim, its region, our estimate, the outcome
DECISION = ("claim_id", "source", "region", "value", "low", "high", "n", "outcome")
#: references that predate the registration of their study's claims, and why they stay for
#: now; the test below fails as soon as one of them is current (so the list cannot linger)
PREDATE_REGISTRATION: dict[str, str] = {}

_BOOTSTRAP_AT_10 = ("made under the percentile bootstrap at n >= 10 (issue 33 item 8: Student t below 30 "
                    "samples, exact quantiles); replaced by the pooled references of issue 33 item 9")
_T_TABLE = ("its Student t intervals used 3-decimal quantiles (12.706, 4.303, 2.776, ...; issue 33 item 8: "
            "computed exactly), its ends move by < 1e-3 of their width")
#: references made under the interval rule before issue 33 item 8, by "study/run id", and why
#: they stay; a listed reference must still give its archived table under the old rule, and the
#: test fails as soon as today's rule gives it unchanged (so the list cannot linger)
MADE_UNDER_OLD_INTERVALS: dict[str, str] = {
    "s0/20261127T092615Z-efd65a": f"{_BOOTSTRAP_AT_10} (its 5 unshaped targets at 10 repetitions); "
                                  f"the relay benchmark's 6 targets at 5 runs: {_T_TABLE}",
    "s1/20261127T125206Z-7aa342": f"{_BOOTSTRAP_AT_10} (7 claims at 10 repetitions)",
    "s2/20261126T221020Z-08dd74": f"{_T_TABLE} (its claims at 3 repetitions); replaced by the pooled "
                                  "references of issue 33 item 9",
    "s3/20261127T091253Z-468ee6": f"{_BOOTSTRAP_AT_10} (the CPU claim at 10 repetitions); at 5 "
                                  f"repetitions {_T_TABLE}",
    "s4/20261127T162255Z-60382b": f"{_BOOTSTRAP_AT_10} (6 claims at 10 repetitions)",
}
#: references made before their study's claims registered regime gates (harness.verdicts.gates, issue
#: 33 item 4), and why they stay: for these the registration test checks that today's differs
#: from the archived one by exactly the gates and the change that records them, and the claims
#: test judges them with the gates left out (the gates' own effect is tested in test_gates.py)
_GATES = ("registered before its claims' regime gates (change of 2026-11-28T22:25Z); replaced by "
          "the new reference of issue 34/35 measured under them")
GATES_ADDED_AFTER: dict[str, str] = {
    "s1/20261127T125206Z-7aa342": _GATES,
    "s3/20261127T091253Z-468ee6": _GATES,
}
GATES_CHANGE = "2026-11-28T22:25Z"
#: the rule those references were made under: the percentile bootstrap from 10 units, and below
#: it these 0.975 quantiles of Student's t (the table harness/verdicts/intervals.py had until then)
OLD_BOOTSTRAP_FROM = 10
OLD_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}
#: what today's interval rule may change in such a reference: the interval, hence the outcome
INTERVAL_COLUMNS = ("low", "high", "outcome")


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
def test_todays_analysis_of_a_reference_gives_its_archived_claims(run, monkeypatch):
    discover()
    study = get_study(run.parent.name)
    archived = pd.read_parquet(run / "claims.parquet")
    if f"{run.parent.name}/{run.name}" in GATES_ADDED_AFTER:
        monkeypatch.setattr(study_base, "apply_gates", lambda frame, *_args: frame)
    today = study.claims(study.load(run))
    diff = differences(archived, today)
    key = f"{run.parent.name}/{run.name}"
    if key in MADE_UNDER_OLD_INTERVALS:
        assert diff, (f"{key} is current under today's interval rule: take it out of "
                      "MADE_UNDER_OLD_INTERVALS")
        rerules = set(decisions(archived).query("n >= 2 and n < @intervals.T_BELOW").claim_id)
        beyond = [d for d in diff if d.split(":")[0] not in rerules
                  or d.split(": ")[1].split(" ")[0] not in INTERVAL_COLUMNS]
        assert not beyond, (f"{key} differs from today's analysis beyond the interval rule of "
                            "issue 33 item 8 (only the interval and outcome of a claim on 2-29 "
                            "samples may):\n  " + "\n  ".join(beyond))
        monkeypatch.setattr(intervals, "T_BELOW", OLD_BOOTSTRAP_FROM)
        monkeypatch.setattr(intervals, "t975", OLD_T975.__getitem__)
        diff = differences(archived, study.claims(study.load(run)))
        assert not diff, (f"reference {run.name} of {study.name} is stale beyond its interval rule: "
                          "today's analysis under the old rule differs from its claims table:\n  "
                          + "\n  ".join(diff))
        return
    assert not diff, (f"reference {run.name} of {study.name} is stale: today's analysis of its "
                      "results differs from its claims table -- make a new reference run at the "
                      "verdict profile:\n  " + "\n  ".join(diff))


@pytest.mark.parametrize("run", reference_runs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_reference_is_registered_as_today_and_at_the_verdict_profile(run):
    discover()
    study = get_study(run.parent.name)
    archived = read_archived(run)
    current = archived.digest == study.registration().digest
    key = f"{run.parent.name}/{run.name}"
    if key in GATES_ADDED_AFTER:
        assert not current, f"{key} is registered as today: take it out of GATES_ADDED_AFTER"
        today = study.registration().body()
        for claim in today["claims"]:
            claim.pop("gates", None)
        today["changes"] = [c for c in today["changes"] if c["date"] != GATES_CHANGE]
        before = {k: v for k, v in (archived.body or {}).items() if k != "digest"}
        assert json.loads(json.dumps(today)) == before, (
            f"{key} differs from today's registration beyond the regime gates of {GATES_CHANGE}")
        return
    if study.name in PREDATE_REGISTRATION:
        assert not current, (f"{study.name}'s reference is current now: take it out of "
                             "PREDATE_REGISTRATION")
        assert archived.body is None, f"{run.name}: listed as predating registration, but has one"
        return
    assert current, (f"reference {run.name} of {study.name} was registered as "
                     f"{archived.digest[7:19] or '(nothing)'}, today's code registers "
                     f"{study.registration().digest[7:19]}: `harness claims history "
                     f"{study.name}` says what changed; make a new reference run")

    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete"
    assert meta["parameters"]["profile"] == "verdict", f"{run.name} is not a verdict-profile run"
