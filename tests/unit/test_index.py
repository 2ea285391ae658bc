"""`harness index`: data/index.html lists every run, filters by study and status, changes
nothing archived."""

from __future__ import annotations

import re

from harness.cli import main
from unit.archived import fingerprint, make_run


def test_index_lists_every_run_with_status_parameters_verdicts_and_links(data_root, capsys):
    good = make_run(data_root, {"profile": "quick", "count": 5})
    bad = make_run(data_root, {"profile": "paper", "count": 50}, complete=False,
                   outcome="not reproduced")
    before = fingerprint(data_root / "runs")
    assert main(["index"]) == 0
    page = (data_root / "index.html").read_text()
    assert fingerprint(data_root / "runs") == before  # nothing archived changed
    rows = re.findall(r"<tr class=\"(\w+)\" data-study=\"ping-demo\".*?</tr>", page, re.S)
    assert sorted(rows) == ["complete", "incomplete"]
    for run in (good, bad):
        assert run.run_id in page
        assert f'href="runs/ping-demo/{run.run_id}/run.json"' in page
    assert "profile=quick, count=5" in page and "profile=paper, count=50" in page
    assert "1 reproduced" in page and "1 not reproduced" in page
    assert "interrupted (SIGINT/SIGTERM)" in page
    assert '<option>ping-demo</option>' in page and '<option>incomplete</option>' in page
    assert "http://" not in page and "https://" not in page  # self-contained
    assert "index.html" in capsys.readouterr().out


def test_a_run_that_never_finished_says_so(data_root):
    run = make_run(data_root, {"count": 5}, complete=False)
    meta = run.meta
    del meta["ended"]
    from harness.archive.archive import _write_json_atomic
    from harness.archive.index import summaries

    _write_json_atomic(run.path / "run.json", {**meta, "ended": None,
                                               "finish": "the notebook's last code cell"})
    (summary,) = summaries(data_root)
    assert summary.note.startswith("interrupted")  # its error first
    _write_json_atomic(run.path / "run.json", {**meta, "ended": None, "error": None,
                                               "finish": "the notebook's last code cell"})
    (summary,) = summaries(data_root)
    assert summary.note == "never finished: the notebook's last code cell"


def test_our_targets_and_lab_checks_are_counted_apart_from_the_papers_claims(data_root):
    import pandas as pd

    from harness.archive.archive import Run
    from harness.archive.index import RunSummary

    run = Run.create("ping-demo", {"count": 5}, data_root)
    run.write_table(pd.DataFrame([
        {"claim_id": "p", "source": "paper", "outcome": "reproduced"},
        {"claim_id": "t", "source": "target", "outcome": "met"},
        {"claim_id": "l", "source": "lab", "outcome": "not met"}]), "claims")
    summary = RunSummary.read(run)
    assert summary.verdict_text() == "1 reproduced"
    assert summary.ours_text() == "1 met, 1 not met"
