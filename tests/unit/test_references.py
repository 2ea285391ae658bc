"""Which committed verdict reference stands (harness.verdicts.references, `harness claims
references`): a reference stands while its archived registration is the study's of today, and a
superseded one names the changes recorded after its first run started."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from harness.archive.reference import reference_root
from harness.cli import main as cli_main
from harness.studies.registry import discover, get_study
from harness.verdicts.references import references, standing
from harness.verdicts.registration import DesignChange, Registration


def registration(*changes: tuple[str, str]) -> Registration:
    return Registration("s9", (), {}, tuple(DesignChange(date, what, "why") for date, what in changes))


def write(root: Path, name: str, digest: str, members: list[dict] | None = None, **meta) -> Path:
    folder = root / "s9" / name
    folder.mkdir(parents=True)
    record = {"run_id": name, "registration": {"digest": digest}, **meta}
    if members is not None:
        record["members"] = members
    (folder / "run.json").write_text(json.dumps(record))
    pd.DataFrame([{"claim_id": "s9.a", "source": "paper", "outcome": "reproduced"},
                  {"claim_id": "s9.b", "source": "paper", "outcome": "not testable here"}]
                 ).to_csv(folder / "claims.csv", index=False)
    return folder


def member(run_id: str, started: str, ended: str) -> dict:
    return {"run_id": run_id, "started": started, "ended": ended, "commit": "c" * 40}


def test_the_reference_under_todays_registration_stands_and_an_older_one_names_what_superseded_it(tmp_path):
    before = registration(("2026-11-28", "old"), ("2026-11-29T23:19Z", "before the runs"))
    today = registration(("2026-11-28", "old"), ("2026-11-29T23:19Z", "before the runs"),
                         ("2026-11-30T00:43Z", "after the review"), ("2026-12-01", "a later day"))
    write(tmp_path, "20261129T233000Z-pool-aaaaaa", before.digest, [
        member("r1", "2026-11-29T23:30:00+00:00", "2026-11-29T23:42:30+00:00"),
        member("r2", "2026-11-29T23:45:00+00:00", "2026-11-30T00:05:00+00:00")])
    write(tmp_path, "20261130T020000Z-pool-bbbbbb", today.digest, [
        member("r3", "2026-11-30T01:00:00+00:00", "2026-11-30T01:14:00+00:00")])
    old, new = references("s9", today, tmp_path)
    assert not old.stands and new.stands and standing([old, new]) is new
    # the timed change after the first run started and the later day; the same day's date-only
    # and the change before the runs are not named
    assert old.changes_since == ("#3 (2026-11-30T00:43Z)", "#4 (2026-12-01)")
    assert old.status() == "superseded by changes #3 (2026-11-30T00:43Z), #4 (2026-12-01)"
    assert [r.minutes for r in old.runs] == [12.5, 20.0]
    assert old.verdicts == "1 reproduced, 1 not testable here" and old.pooled
    assert new.status() == "stands: judged under today's registration"
    many = references("s9", registration(*[(f"2026-11-30T0{h}:00Z", "c") for h in range(3)]), tmp_path)[0]
    assert many.status() == ("superseded by the 3 changes recorded since it started, #1 (2026-11-30T00:00Z) "
                             "to #3 (2026-11-30T02:00Z)") and len(many.changes_since) == 3
    assert standing([old]) is None


def test_a_single_run_reference_is_its_own_run_with_the_commit_it_ran(tmp_path):
    reg = registration()
    write(tmp_path, "20261127T092615Z-efd65a", "sha256:" + "0" * 64, started="2026-11-27T09:26:15+00:00",
          ended="2026-11-27T09:40:15+00:00", provenance={"git": {"commit": "abc"}})
    (ref,) = references("s9", reg, tmp_path)
    assert not ref.pooled and ref.runs[0].commit == "abc" and ref.runs[0].minutes == 14
    assert ref.status() == "superseded: registered otherwise than today"  # no change recorded since


def test_the_cli_lists_each_committed_reference_and_the_one_that_stands(capsys):
    discover()
    assert cli_main(["claims", "references", "s0", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["s0"]
    folders = sorted(p.parent.name for p in (reference_root() / "s0").glob("*/run.json"))
    assert [r["reference"] for r in listed] == folders
    today = get_study("s0").registration().digest
    assert [r["stands"] for r in listed] == [r["registration"] == today for r in listed]
    pooled = [r for r in listed if r["pooled"]]
    assert pooled and all(len(r["runs"]) >= 3 and all(m["minutes"] for m in r["runs"]) for r in pooled)
    assert cli_main(["claims", "references", "s0"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("s0: ") and all(f in printed for f in folders)


def test_an_unknown_study_is_refused_before_anything_is_listed(capsys):
    assert cli_main(["claims", "references", "s0", "nosuchstudy"]) == 2
    said = capsys.readouterr()
    assert said.out == "" and "nosuchstudy" in said.err
