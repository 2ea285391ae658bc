"""A synthetic run folder with an executed notebook, for the report tests (unit and Chromium)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import nbformat
import pandas as pd

from harness.studies import Citation

# a real 1x1 PNG, as matplotlib would embed one
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc000000301010018dd8db00000000049454e44ae426082")).decode()


class FakeStudy:
    title = "A study of nothing"
    citation = Citation("A. Author, B. Author", "A Paper", "Journal of Tests 1(2)", 1999)


def run_meta(run_id="20261125T010203Z-abcdef", **extra) -> dict:
    return {
        "run_id": run_id, "study": "demo", "status": "complete", "error": None,
        "started": "2026-11-25T01:02:03+00:00", "ended": "2026-11-25T01:04:05+00:00",
        "notebook": "/src/notebooks/demo.ipynb", "inventory": None,
        "parameters": {"profile": "quick", "streams": [1, 4], "rate_mbit": 100.0},
        "placement": {"where": "vm", "reason": "the host kernel lacks tipc", "accel": "tcg"},
        "capabilities": {"local": {"kernel": "6.1.0-host", "tools": {"iperf3": "iperf 3.12"}},
                         "vm0": {"kernel": "6.1.0-28-amd64", "tools": {"iperf3": "iperf 3.16"}}},
        "provenance": {"git": {"commit": "0123abcd" * 5, "dirty": True, "branch": "main",
                               "changed_files": [" M harness/archive/report.py"]},
                       "python": "3.11.7", "packages": {"papermill": "2.7.0"},
                       "controller": {"hostname": "lab1", "kernel": "6.1.0-host", "cpus": 2,
                                      "machine": "x86_64", "kernel_version": "#1 SMP"}},
        **extra,
    }


def executed_notebook(folder: Path, extra_outputs: list | None = None) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata.update(kernelspec={"name": "python3", "display_name": "Python 3", "language": "python"},
                       language_info={"name": "python", "version": "3.11.7"})
    (folder / "figure.png").write_bytes(base64.b64decode(PNG))
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Demo\nThe paper's numbers beside ours.\n\n![a figure](figure.png)"),
        nbformat.v4.new_code_cell("profile = 'quick'  # PARAMETERS-CELL", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("profile = 'paper'  # INJECTED-CELL",
                                  metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_code_cell("run_path = run_study(study, params)  # PLUMBING-CODE"),
        nbformat.v4.new_code_cell("fig = analysis.figure(frame)"),
        nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUT\nprint(columns)", metadata={"tags": ["remove-cell"]}),
    ]
    nb.cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="placement: vm - TCG\n")]
    nb.cells[4].outputs = [nbformat.v4.new_output("display_data", data={"image/png": PNG,
                                                                       "text/plain": "<Figure>"})]
    nb.cells[5].outputs = [nbformat.v4.new_output("stream", name="stdout", text="CHECKED-COLUMNS\n")]
    if extra_outputs:
        cell = nbformat.v4.new_code_cell("more_figures()")
        cell.outputs = extra_outputs
        nb.cells.append(cell)
    path = folder / "notebook.ipynb"
    nbformat.write(nb, str(path))
    return path


def write_run(folder: Path, meta: dict, outcomes: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(meta))
    pd.DataFrame([{"claim_id": cid, "source": "paper", "claim": f"claim {cid}", "paper": "2.1x",
                   "ours": f"{value} [1, 3] (n=2)", "outcome": outcome}
                  for cid, (value, outcome) in outcomes.items()],
                 columns=["claim_id", "source", "claim", "paper", "ours", "outcome"]
                 ).to_csv(folder / "claims.csv", index=False)
    return folder
