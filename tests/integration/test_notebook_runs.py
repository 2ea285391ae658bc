"""A study notebook run outside `harness run` (by nbclient, as papermill and JupyterLab drive a
kernel) is archived like one of `harness run`; an interrupted one stays incomplete; the index
lists both; `harness rerun` repeats a run's parameters and changes nothing archived."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
from conftest import needs_root, needs_tools, netns_names
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from harness.journal.journal import Journal

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "tests" / "studies" / "ping_study.ipynb"

pytestmark = [pytest.mark.integration, needs_root, needs_tools("ping", "iperf3")]


@pytest.fixture
def kernel_env(data_root, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports this checkout's harness
    return data_root


def client(count: int, folder: Path) -> tuple[NotebookClient, Path]:
    """The ping study's notebook saved with ``count`` into ``folder`` (beside its module), as
    a user edits and saves it, and a client to execute it there."""
    folder.mkdir()
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    nb.cells[1].source = nb.cells[1].source.replace("count = None", f"count = {count}")
    nbformat.write(nb, str(folder / NOTEBOOK.name))
    shutil.copy(NOTEBOOK.with_name("ping_study.py"), folder)
    shutil.copy(NOTEBOOK.with_name("ping_registration.toml"), folder)  # the study reads it
    return NotebookClient(nb, timeout=240, kernel_name="python3",
                          resources={"metadata": {"path": str(folder)}}), folder / NOTEBOOK.name


def runs(data: Path) -> dict[str, dict]:
    """The runs with a run.json (a run's folder is made a moment before its run.json, which
    is written whole by a rename: a watcher must not trip over a folder without one yet)."""
    return {p.parent.name: json.loads(p.read_text())
            for p in sorted((data / "runs" / "ping-demo").glob("*/run.json"))}


def interrupt_when_measuring(data: Path, skip: str) -> threading.Thread:
    """Interrupt the kernel (SIGINT, as JupyterLab's interrupt does) once the new run's links
    are verified: the measurement is next."""
    def watch():
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            for run_id, meta in runs(data).items():
                if run_id != skip and meta.get("link_verification"):
                    time.sleep(1.5)
                    os.kill(meta["owner_pid"], signal.SIGINT)  # the kernel made the run
                    return
            time.sleep(0.2)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_notebook_runs_outside_harness_run_are_archived_and_indexed(kernel_env, tmp_path):
    data = kernel_env
    done, path = client(4, tmp_path / "done")
    done.execute()
    (complete_id, meta), = runs(data).items()
    run = data / "runs" / "ping-demo" / complete_id
    assert meta["status"] == "complete" and meta["error"] is None
    assert meta["notebook"] == str(path)
    assert meta["parameters"]["count"] == 4
    archived = nbformat.read(str(run / "notebook.ipynb"), as_version=4)
    assert [c.source for c in archived.cells] == [c.source for c in done.nb.cells]
    assert archived.cells[0].cell_type == "markdown"
    assert any("ping.veth_rtt" in json.dumps(o) for o in archived.cells[-1].outputs)
    report = (run / "report.html").read_text()
    assert "a veth pair answers within 1 ms" in report
    assert (run / "claims.csv").exists()
    assert all(not p.stat().st_mode & stat.S_IWUSR for p in run.rglob("*") if p.is_file())

    stopped, _path = client(60, tmp_path / "stopped")  # 12 s of pings, interrupted early
    watcher = interrupt_when_measuring(data, complete_id)
    with pytest.raises(CellExecutionError):
        stopped.execute()
    watcher.join()
    (stopped_id, meta), = [(k, v) for k, v in runs(data).items() if k != complete_id]
    assert meta["status"] == "incomplete"
    assert "interrupt" in meta["error"].lower() or "KeyboardInterrupt" in meta["error"]
    stopped_run = data / "runs" / "ping-demo" / stopped_id
    assert Journal(stopped_run / "journal.jsonl").pending() == []
    assert not [n for n in netns_names() if n.startswith(meta["testbed"]["prefix"])]
    assert (stopped_run / "notebook.ipynb").exists() and not (stopped_run / "results.csv").exists()

    page = (data / "index.html").read_text()  # refreshed by each notebook as it finished
    assert complete_id in page and stopped_id in page
    assert "1 met" in page  # the ping study's claim is our target, counted apart


def test_rerun_repeats_the_parameters_and_leaves_the_original_alone(kernel_env):
    from unit.archived import fingerprint

    data = kernel_env
    env = {**os.environ, "HARNESS_DATA": str(data)}
    first = subprocess.run([sys.executable, "-m", "harness", "run", "-q", str(NOTEBOOK),
                            "-p", "count", "3", "-p", "interval_s", "0.05"],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    (original_id, original), = runs(data).items()
    before = fingerprint(data / "runs" / "ping-demo" / original_id)
    again = subprocess.run([sys.executable, "-m", "harness", "rerun", "-q", original_id],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"rerun of {original_id}" in again.stdout
    assert fingerprint(data / "runs" / "ping-demo" / original_id) == before
    (new_id, new), = [(k, v) for k, v in runs(data).items() if k != original_id]
    assert new["status"] == "complete" and new["rerun_of"] == original_id
    assert new["parameters"] == original["parameters"]
    compared = subprocess.run([sys.executable, "-m", "harness", "compare", original_id, new_id],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert compared.returncode == 0, compared.stderr[-2000:]
    assert "== parameters: 0 differ" in compared.stdout
    assert fingerprint(data / "runs" / "ping-demo" / original_id) == before


def test_plain_papermill_run_is_archived_with_its_injected_parameters(kernel_env, tmp_path):
    import papermill as pm

    data = kernel_env
    pm.execute_notebook(str(NOTEBOOK), str(tmp_path / "out.ipynb"), parameters={"count": 3},
                        cwd=str(NOTEBOOK.parent), progress_bar=False)
    (run_id, meta), = runs(data).items()
    assert meta["status"] == "complete" and meta["parameters"]["count"] == 3
    assert meta["notebook"] == "tests/studies/ping_study.ipynb"  # relative to the project
    archived = nbformat.read(str(data / "runs" / "ping-demo" / run_id / "notebook.ipynb"),
                             as_version=4)
    sources = [c.source for c in archived.cells]
    injected = [s for s in sources if "count = 3" in s]
    assert injected and sources.index(injected[0]) == 2  # right after the parameters cell
