"""The study contract's promise: a new study is a notebook and one module, nothing else edited.

The throw-away study in tests/studies/ (two namespaces, one ping measurement, one claim) is
found by the harness from its notebook's metadata or from $HARNESS_STUDY_PATH, listed by
`harness params` and `harness lab show`, run by `harness run`, archived and reported.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import needs_root, needs_tools

from harness.archive.report import external_fetches

ROOT = Path(__file__).resolve().parents[3]
STUDY_DIR = ROOT / "tests" / "studies"
NOTEBOOK = STUDY_DIR / "ping_study.ipynb"

pytestmark = [pytest.mark.integration]


def harness(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, **(env or {})}, timeout=300)
    if check and res.returncode != 0:
        raise AssertionError(f"harness {' '.join(args)} failed ({res.returncode}):\n"
                             f"{res.stdout}\n{res.stderr}")
    return res


def test_the_harness_does_not_name_the_throwaway_study():
    """Nothing under harness/ or in noxfile.py lists the study: it is found, not registered."""
    for path in [*ROOT.joinpath("harness").rglob("*.py"), ROOT / "noxfile.py"]:
        assert "ping-demo" not in path.read_text() and "ping_study" not in path.read_text(), path


def test_params_lists_each_parameter_with_default_range_and_help():
    out = harness("params", str(NOTEBOOK)).stdout
    assert "ping-demo: Round-trip time over one veth pair" in out
    lines = out.splitlines()
    count = next(line for line in lines if line.startswith("count "))
    assert "(profile)" in count and " 5 " in count and " 50 " in count and "2..1000" in count
    assert lines[lines.index(count) + 1].strip() == "echo requests sent"
    rate = next(line for line in lines if line.startswith("rate_mbit "))
    assert "100.0" in rate and "Mbit/s" in rate


def test_lab_show_finds_the_study_by_notebook_and_by_study_path():
    by_notebook = harness("lab", "show", str(NOTEBOOK), "-p", "rate_mbit", "250").stdout
    assert "topology ping-demo: 2 nodes, 1 links" in by_notebook and "250" in by_notebook
    by_name = harness("lab", "show", "ping-demo",
                      env={"HARNESS_STUDY_PATH": str(STUDY_DIR)}).stdout
    assert "topology ping-demo" in by_name
    unknown = harness("lab", "show", "ping-demo", check=False)
    assert unknown.returncode == 2 and "unknown study 'ping-demo'" in unknown.stderr
    assert "HARNESS_STUDY_PATH" in unknown.stderr


def test_bad_parameter_of_the_new_study_is_refused_before_anything(data_root):
    res = harness("run", str(NOTEBOOK), "-p", "count", "1", check=False)
    assert res.returncode == 2 and "count=1 is out of range" in res.stderr and "2..1000" in res.stderr
    assert not (data_root / "runs").exists()


@needs_root
@needs_tools("ping", "iperf3")
def test_run_archives_and_reports_the_new_study(data_root):
    res = harness("run", str(NOTEBOOK), "-p", "count", "4", "-q")
    assert "complete" in res.stdout
    runs = list((data_root / "runs" / "ping-demo").iterdir())
    assert len(runs) == 1
    run = runs[0]
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete" and meta["study"] == "ping-demo"
    assert meta["parameters"]["count"] == 4 and meta["parameters"]["profile"] == "quick"
    assert meta["placement"]["where"] == "host"
    assert [c["ok"] for c in meta["link_verification"]] and all(
        c["rtt_ms"] is not None for c in meta["link_verification"])
    results = pd.read_parquet(run / "results.parquet")
    assert list(results.seq) == [1, 2, 3, 4] and (results.rtt_ms > 0).all()
    assert "4 packets transmitted" in (run / "raw" / "ping.txt").read_text()
    report = (run / "report.html").read_text()
    assert "a veth pair answers within 1 ms" in report
    assert f"<title>ping-demo run {run.name} — " in report and external_fetches(report) == []
    assert 'id="provenance"' in report and meta["ended"] in report
    assert "run_study(study, params" not in report  # code hidden; kept in the archived notebook
    assert "run_study(study, params" in (run / "notebook.ipynb").read_text()
    assert "WARNING" not in res.stderr and "Warning" not in res.stderr, res.stderr  # e.g. the kernel's TCP one
    claims = pd.read_csv(run / "claims.csv")  # the verdicts, archived beside the results
    assert list(claims.claim_id) == ["ping.veth_rtt"] and claims.n[0] == 4
    assert claims.outcome[0] == "met" and claims.high[0] < 1.0  # our target, not a paper's
    listed = harness("runs", "ping-demo").stdout
    assert str(run) in listed and "complete" in listed and "targets: 1 met" in listed
    # the claims' registration, archived before the data, and the study's code by content
    registration = json.loads((run / "registration.json").read_text())
    assert [c["id"] for c in registration["claims"]] == ["ping.veth_rtt"]
    assert registration["claims"][0]["source"] == "target"
    assert meta["registration"]["digest"] == registration["digest"]
    assert meta["registration"]["claims"] == {"target": 1}
    assert any(name.endswith("ping_study.py") for name in meta["code_digests"])
    assert any(name.endswith("ping_study.ipynb") for name in meta["code_digests"])
    history = harness("claims", "history", str(NOTEBOOK)).stdout
    assert f"{run.name}" in history and registration["digest"][7:19] in history
    assert "changed" not in history  # one run, registered as the code registers it now


@needs_root
def test_dry_run_prints_the_new_studys_changes_and_makes_none(data_root):
    from conftest import netns_names

    out = harness("run", str(NOTEBOOK), "--dry-run", "-p", "rate_mbit", "50").stdout
    assert out.startswith("dry run of ping-demo: placement host")
    planned = re.findall(r"netns (\S+): absent", out)
    assert len(planned) == 2 and "veth eth0" in out and "rate 50000000bit" in out
    assert not set(planned) & netns_names(), "a dry run creates no namespace"
    assert not (data_root / "runs").exists()
