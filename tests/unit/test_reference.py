"""harness.archive.reference: the committed reference run of a study, and the two runs' claims side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from harness.archive.reference import compare_claims, find_reference, reference_root


def make_run(root: Path, study: str, run_id: str, status: str = "complete", profile: str = "quick") -> Path:
    path = root / study / run_id
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"run_id": run_id, "study": study, "status": status,
                                               "parameters": {"profile": profile}}))
    return path


def claims(**outcomes: tuple[str, str]) -> pd.DataFrame:
    return pd.DataFrame([{"claim_id": cid, "source": "paper", "claim": f"says {cid}", "paper": "2x",
                          "ours": ours, "outcome": outcome, "value": 1.0}
                         for cid, (ours, outcome) in outcomes.items()])


def test_reference_runs_live_in_the_repository_not_in_harness_data(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    assert reference_root() == Path(__file__).resolve().parents[2] / "data" / "reference"


def test_the_newest_complete_run_of_the_same_profile_is_the_reference(tmp_path):
    make_run(tmp_path, "s4", "20261101T000000Z-aaaaaa", profile="quick")
    make_run(tmp_path, "s4", "20261102T000000Z-bbbbbb", profile="verdict")
    make_run(tmp_path, "s4", "20261103T000000Z-cccccc", profile="quick")
    make_run(tmp_path, "s4", "20261104T000000Z-dddddd", status="incomplete", profile="quick")
    make_run(tmp_path, "s0", "20261105T000000Z-eeeeee", profile="quick")
    assert find_reference("s4", "quick", tmp_path).run_id == "20261103T000000Z-cccccc"
    assert find_reference("s4", "verdict", tmp_path).run_id == "20261102T000000Z-bbbbbb"
    assert find_reference("s4", "paper", tmp_path).run_id == "20261103T000000Z-cccccc"  # newest of any
    assert find_reference("s3", "quick", tmp_path) is None


def test_a_reference_run_is_not_its_own_reference(tmp_path):
    only = make_run(tmp_path, "s4", "20261101T000000Z-aaaaaa")
    assert find_reference("s4", "quick", tmp_path, exclude=only) is None


def test_a_broken_run_json_is_skipped(tmp_path):
    make_run(tmp_path, "s4", "20261101T000000Z-aaaaaa")
    (make_run(tmp_path, "s4", "20261102T000000Z-bbbbbb") / "run.json").write_text("{not json")
    assert find_reference("s4", "quick", tmp_path).run_id == "20261101T000000Z-aaaaaa"


def test_claims_side_by_side_with_agreement():
    ours = claims(a=("2.0x [1.9, 2.1]", "reproduced"), b=("5x [4, 6]", "not reproduced"),
                  c=("1x [0, 2]", "inconclusive"))
    ref = claims(a=("2.1x [2.0, 2.2]", "reproduced"), b=("2x [1.9, 2.1]", "reproduced"),
                 d=("3x [2, 4]", "not reproduced"))
    table = compare_claims(ours, ref).set_index("claim_id")
    assert list(table.columns) == ["source", "claim", "paper", "this run: ours", "this run: outcome",
                                   "reference: ours", "reference: outcome", "same outcome",
                                   "consistent"]
    assert table.loc["a", "same outcome"] == "yes" and table.loc["b", "same outcome"] == "no"
    assert table.loc["a", "reference: ours"] == "2.1x [2.0, 2.2]"
    assert table.loc["c", "reference: outcome"] == "" and table.loc["c", "same outcome"] == ""
    assert table.loc["d", "claim"] == "says d" and table.loc["d", "this run: outcome"] == ""


def test_a_run_without_claims_still_shows_the_reference():
    table = compare_claims(None, claims(a=("2x [1, 3]", "reproduced")))
    assert table.to_dict("records") == [{
        "claim_id": "a", "source": "paper", "claim": "says a", "paper": "2x", "this run: ours": "",
        "this run: outcome": "", "reference: ours": "2x [1, 3]", "reference: outcome": "reproduced",
        "same outcome": "", "consistent": ""}]


def test_consistent_means_the_references_estimate_lies_inside_this_runs_interval():
    def frame(**rows):
        return pd.DataFrame([{"claim_id": cid, "source": "paper", "claim": cid, "paper": "2x",
                              "ours": "", "outcome": "inconclusive", "value": v, "low": lo,
                              "high": hi} for cid, (v, lo, hi) in rows.items()])

    ours = frame(a=(2.0, 1.5, 2.5), b=(2.0, 1.9, 2.1), c=(2.0, float("nan"), float("nan")))
    ref = frame(a=(2.4, 2.3, 2.5), b=(2.4, 2.3, 2.5), c=(2.0, 1.9, 2.1))
    table = compare_claims(ours, ref).set_index("claim_id")
    assert table.loc["a", "consistent"] == "yes"  # wide quick interval holds the reference
    assert table.loc["b", "consistent"] == "no"  # a narrow interval that excludes it
    assert table.loc["c", "consistent"] == ""  # no interval here: no judgement
