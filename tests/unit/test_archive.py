import json

import pandas as pd
import pytest

from harness.archive.archive import COMPLETE, INCOMPLETE, Run, latest_run, list_runs
from harness.errors import ArchiveError


def test_new_run_starts_incomplete_in_its_own_folder(tmp_path):
    a = Run.create("s4", {"x": 1}, tmp_path)
    b = Run.create("s4", {"x": 1}, tmp_path)
    assert a.path != b.path
    assert a.status == INCOMPLETE and a.meta["parameters"] == {"x": 1}
    assert a.path.parent == tmp_path / "runs" / "s4"


def test_complete_run_is_immutable(tmp_path):
    run = Run.create("s4", {}, tmp_path)
    run.add_raw("out.json", "{}")
    run.write_table(pd.DataFrame({"a": [1, 2]}))
    run.finish(COMPLETE)
    with pytest.raises(ArchiveError, match="immutable"):
        run.update(status=INCOMPLETE)
    with pytest.raises(ArchiveError, match="immutable"):
        run.add_raw("more.json", "{}")
    assert json.loads((run.path / "run.json").read_text())["status"] == COMPLETE
    assert not (run.path / "results.parquet").stat().st_mode & 0o222


def test_raw_files_and_tables_are_never_overwritten(tmp_path):
    run = Run.create("s4", {}, tmp_path)
    run.add_raw("out.json", "first")
    with pytest.raises(ArchiveError, match="exists already"):
        run.add_raw("out.json", "second")
    assert (run.path / "raw" / "out.json").read_text() == "first"
    run.write_table(pd.DataFrame({"a": [1]}))
    with pytest.raises(ArchiveError, match="exists already"):
        run.write_table(pd.DataFrame({"a": [2]}))
    with pytest.raises(ArchiveError, match="path"):
        run.add_raw("../escape", "x")


def test_listing_and_latest_skip_incomplete_runs(tmp_path):
    done = Run.create("s4", {}, tmp_path)
    done.finish(COMPLETE)
    broken = Run.create("s4", {}, tmp_path)
    broken.finish(INCOMPLETE, "interrupted")
    assert latest_run("s4", tmp_path).path == done.path
    assert [r.path for r in list_runs("s4", tmp_path, INCOMPLETE)] == [broken.path]
    assert broken.meta["error"] == "interrupted"
    with pytest.raises(ArchiveError, match="no complete run"):
        latest_run("s0", tmp_path)


def test_open_refuses_a_folder_that_is_not_a_run(tmp_path):
    with pytest.raises(ArchiveError, match="not a run folder"):
        Run.open(tmp_path)


def test_finish_records_the_end_time_the_report_already_shows(tmp_path):
    run = Run.create("s4", {}, tmp_path)
    run.finish(COMPLETE, None, "2026-11-25T04:34:28+00:00")
    assert run.meta["ended"] == "2026-11-25T04:34:28+00:00" and run.status == COMPLETE
