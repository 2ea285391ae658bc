"""Two `harness run` started together: one measures, the other is refused with its one error
and leaves no run folder (the lock is taken before the folder exists and held by `harness
run` across its kernel's life; the kernel does not refuse its own parent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_root, needs_tools

pytestmark = [pytest.mark.integration, needs_root, needs_tools("ping")]

NOTEBOOK = Path(__file__).resolve().parents[1] / "studies" / "ping_study.ipynb"


def test_two_runs_started_together_one_completes_the_other_leaves_one_error(tmp_path):
    env = {**os.environ, "HARNESS_DATA": str(tmp_path / "data"),
           "HARNESS_LOCK_DIR": str(tmp_path / "locks")}  # not the machine's: others measure
    env.pop("HARNESS_SHARE_MACHINE", None)
    env.pop("HARNESS_LOCK_HELD", None)
    # The winner holds the machine from before its kernel starts (seconds) to its report, long
    # after the loser's checks (the same imports), whichever of them gets the lock first.
    argv = [sys.executable, "-m", "harness", "run", "-q", str(NOTEBOOK), "-p", "count", "5",
            "-p", "interval_s", "0.2"]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes[0] == 0 and codes[1] != 0, outs
    loser_err = [err for p, (_out, err) in zip(procs, outs) if p.returncode != 0][0]
    assert loser_err.count("harness: error:") == 1 and "is measuring for run" in loser_err
    assert "Traceback" not in loser_err and "papermill" not in loser_err.lower()
    runs = list((tmp_path / "data" / "runs" / "ping-demo").iterdir())
    assert len(runs) == 1  # the refused run made no folder
    meta = json.loads((runs[0] / "run.json").read_text())
    assert meta["status"] == "complete", meta.get("error")
    lock = meta["machine_lock"]["local"]
    assert lock["mode"] == "exclusive" and lock["holder"]["run_id"] == meta["run_id"]
    assert lock["holder"]["pid"] in [p.pid for p in procs]  # harness run held it, not its kernel
    assert not list((tmp_path / "locks").glob("*.lock"))  # given back
