"""A claim withdrawn by a registered change (``dropped``): its record kept, shown as withdrawn,
never judged (harness.verdicts.withdrawal; the third S3 review of 2026-11-29)."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

import pandas as pd
import pytest

from harness.verdicts import before_outcomes, withdrawal
from harness.verdicts.claims import MET, NOT_TESTABLE, WITHDRAWN, Verdict, summaries, table
from harness.verdicts.intervals import Estimate
from harness.verdicts.registration import claim_differences
from harness.verdicts.registration_file import RegistrationError, load
from harness.verdicts.run_pooling import pooled_verdict

BASE = '''\
study = "s9"

[[claims]]
id = "s9.first"
source = "target"
claim = "first"
paper = "-"
[claims.region]
high = 1.0
rule = "ours"

[[claims]]
id = "s9.over_read"
source = "target"
claim = "reads more than the paper says"
paper = "-"
gates = [{ name = "accelerated_virtualisation" }]
[claims.region]
low = 1.1
rule = "ours"

[[claims]]
id = "s9.last"
source = "target"
claim = "last"
paper = "-"
[claims.region]
high = 1.0
rule = "ours"

[design]
order = "shuffled"

[[changes]]
date = "2026-11-28"
after_outcomes = true
what = "over_read's gate added"
why = "a review"
claims = ["s9.over_read"]
[changes.replaced."s9.over_read"]
gates = []
'''
DROP = '''
[[changes]]
date = "2026-11-29T23:19Z"
after_outcomes = true
what = "s9.over_read withdrawn"
why = "it reads more than the sentence says"
claims = ["s9.over_read"]
dropped = ["s9.over_read"]
'''


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s9_registration.toml"
    path.write_text(text)
    return path


def test_a_change_withdraws_a_claim_that_keeps_its_record(tmp_path):
    before, after = load(write(tmp_path, BASE)), load(write(tmp_path, BASE + DROP))
    assert before.withdrawn("s9.over_read") is None
    change = after.withdrawn("s9.over_read")
    assert change is after.changes[1] and change.dropped == ("s9.over_read",)
    assert after.claim("s9.over_read") == before.claim("s9.over_read")  # its record, as it was
    assert after.withdrawn("s9.first") is None
    assert after.to_dict()["changes"][1]["dropped"] == ["s9.over_read"]
    assert "dropped" not in json.dumps(before.to_dict())  # other digests stay as they were
    assert after.digest != before.digest
    assert claim_differences(before.to_dict(), after.to_dict()) == [
        "s9.over_read: withdrawn by the change of 2026-11-29T23:19Z (its record kept, never judged)"]


@pytest.mark.parametrize("edit, said", [
    (lambda t: t.replace('dropped = ["s9.over_read"]', 'dropped = ["s9.gone"]'),
     "field dropped: 's9.gone' is not a claim of this registration that the change names in claims"),
    (lambda t: t.replace('claims = ["s9.over_read"]\ndropped', 'claims = ["s9.first"]\ndropped'),
     "field dropped: 's9.over_read' is not a claim of this registration that the change names in claims"),
    (lambda t: t + DROP.replace("23:19Z", "23:30Z"), "field dropped: s9.over_read was withdrawn already by change #2"),
    (lambda t: t.replace('dropped = ["s9.over_read"]', 'dropped = "s9.over_read"'),
     "field dropped: must be an array, not a string"),
])
def test_a_withdrawal_names_a_claim_the_file_keeps_once(tmp_path, edit, said):
    with pytest.raises(RegistrationError) as caught:
        load(write(tmp_path, edit(BASE + DROP)))
    assert said in str(caught.value) and "how to fix:" in str(caught.value)


def _verdict(claim, outcome=MET, value=0.5) -> Verdict:
    estimate = Estimate(value, value - 0.1, value + 0.1, 3, "", "repetitions", "Student t", "linear")
    return Verdict(claim, estimate, outcome, "the interval lies inside")


def _row(claim, outcome=MET, value=0.5) -> dict:
    return _verdict(claim, outcome, value).row()


def test_a_withdrawn_claim_is_shown_withdrawn_never_judged(tmp_path):
    """Whatever the analysis judged is replaced by the withdrawal; a claim the analysis no longer
    judges gets its row in its registered place; other tables are left as they are."""
    reg = load(write(tmp_path, BASE + DROP))
    first, over, last = reg.claims
    judged = table([_verdict(first), _verdict(over, value=1.5), _verdict(last)]).assign(extra="x")
    out = withdrawal.mark(judged, reg)
    assert list(out.claim_id) == ["s9.first", "s9.over_read", "s9.last"]
    row = out.set_index("claim_id").loc["s9.over_read"]
    assert row.outcome == WITHDRAWN and row.ours == "-" and pd.isna(row.value) and row.n == 0
    assert row.reason == ("withdrawn by change #2 (2026-11-29T23:19Z): s9.over_read withdrawn; its "
                          "registration is kept and it is never judged")
    assert out.set_index("claim_id").loc["s9.first", "outcome"] == MET
    missing = withdrawal.mark(judged[judged.claim_id != "s9.over_read"], reg)
    assert list(missing.claim_id) == ["s9.first", "s9.over_read", "s9.last"]
    assert str(missing.more_needed.dtype) == "Int64"
    assert summaries(out) == "no claims; targets: 2 met, 1 withdrawn"
    kept = load(write(tmp_path, BASE))
    assert withdrawal.mark(judged, kept) is judged  # nothing withdrawn: the table as it was


def test_a_pool_pools_nothing_of_a_withdrawn_claim_and_recomputes_nothing_before(tmp_path):
    reg = load(write(tmp_path, BASE + DROP))
    over = reg.claim("s9.over_read")
    rows = [pd.Series(r) for r in withdrawal.mark(pd.DataFrame([_row(over)] * 1), reg).to_dict("records")] * 3
    verdict, _ = pooled_verdict(over, rows, ["a", "b", "c"])
    assert verdict.outcome == WITHDRAWN and verdict.estimate is None
    assert verdict.reason.startswith("withdrawn by change #2")
    assert before_outcomes.as_before(reg, "s9.over_read") is None  # its replaced gates not rejudged
    assert "s9.over_read" not in before_outcomes.earlier_claims(reg)
    cell, how = before_outcomes.without_record(reg, "s9.over_read")
    assert cell == WITHDRAWN and "withdrawn by change #2 (2026-11-29T23:19Z): never judged" in how
    kept = load(write(tmp_path, BASE))
    assert before_outcomes.as_before(kept, "s9.over_read") is not None  # recorded, not withdrawn
    untestable = {**_row(over), "outcome": NOT_TESTABLE}
    assert pooled_verdict(over, [pd.Series(untestable)] * 3, ["a", "b", "c"])[0].outcome == NOT_TESTABLE


def test_the_pooled_report_lists_the_withdrawn_and_counts_them_apart(tmp_path):
    from harness.verdicts.before_outcomes import COLUMN, HOW
    from harness.verdicts.pool_report import before_outcomes_tally, withdrawn_block

    reg = load(write(tmp_path, BASE + DROP))
    frame = withdrawal.mark(pd.DataFrame([_row(c) for c in reg.claims]), reg)
    assert withdrawn_block(reg, frame) == [
        "**Withdrawn** (kept in the registration with the change that withdrew it, never judged; "
        "`harness claims show` prints its record):", "", "- `s9.over_read`: by change #2 (2026-11-29T23:19Z)", ""]
    frame[COLUMN], frame[HOW] = "", ""
    frame.loc[frame.claim_id == "s9.over_read", COLUMN] = WITHDRAWN
    rows = frame[frame[COLUMN] != ""]
    assert before_outcomes_tally(rows) == ("No verdict here is recomputed as registered before outcomes: "
                                           "1 withdrawn (never judged).")


def test_claims_show_and_history_say_which_claims_are_withdrawn(tmp_path, capsys, monkeypatch):
    from harness.commands import claims as command

    reg = load(write(tmp_path, BASE + DROP))
    monkeypatch.setattr(command, "_registration", lambda name: ("s9: test", reg))
    assert command.cmd_claims_show(Namespace(study="s9", json=False)) == 0
    out = capsys.readouterr().out
    assert ("[target] s9.over_read: reads more than the paper says  [WITHDRAWN by the change of "
            "2026-11-29T23:19Z: never judged]") in out
    assert "[target] s9.first: first\n" in out
    assert "    withdrew (kept, never judged): s9.over_read" in out

    class Study:
        name = "s9"

        @staticmethod
        def registration():
            return reg

    run = tmp_path / "runs" / "20261129T120000Z-a1b2c3"  # a run made before the withdrawal
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"status": "complete", "provenance": {"git": {"commit": "abc"}}}))
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (run / "registration.json").write_text(json.dumps(load(write(earlier, BASE)).to_dict()))
    monkeypatch.setattr(command, "_study", lambda name: Study)
    monkeypatch.setattr(command, "archived_runs", lambda name: [run])
    assert command.cmd_claims_history(Namespace(study="s9", verbose=False)) == 0
    out = capsys.readouterr().out
    assert ("(the code now)" in out and "    changed: s9.over_read: withdrawn by the change of 2026-11-29T23:19Z "
            "(its record kept, never judged)" in out)
    assert "recorded change 2026-11-29T23:19Z: s9.over_read withdrawn -- why: it reads more than the sentence " \
           "says\n    withdrew (kept, never judged): s9.over_read" in out
