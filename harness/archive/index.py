"""``harness index``: ``data/index.html``, every archived run at a glance.

One row per run: study, id, status, start, key parameters, placement, the
verdicts of its ``claims.csv``, links to its report and files. Study and status
filters are a few lines of inline JavaScript; the page loads nothing from
anywhere (no CDN), and links are relative, so the ``data/`` folder can be
copied or served as it is. Only ``index.html`` is written (atomically): no run
folder is touched. ``harness run``, ``batch``, ``rerun`` and a notebook that
finishes its own run refresh it.
"""

from __future__ import annotations

import html
import os
import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .archive import data_root, list_runs
from .report_sections import FONT_STACK

FILES = ("report.html", "notebook.ipynb", "run.json", "results.csv", "claims.csv", "raw")


@dataclass(frozen=True)
class RunSummary:
    """What the index shows of one run, read from its folder."""

    path: Path
    study: str
    run_id: str
    status: str
    started: str
    parameters: dict
    placement: str
    verdicts: dict[str, int] = field(default_factory=dict)
    note: str = ""
    ours: dict[str, int] = field(default_factory=dict)  # our targets' and lab checks' outcomes

    @classmethod
    def read(cls, run) -> RunSummary:
        meta = run.meta
        place = meta.get("placement") or {}
        where = place.get("where") or ""
        factor = (place.get("scaling") or {}).get("factor")
        if factor and factor != 1:
            where += f" (rates x{factor:.3g})"
        note = meta.get("error") or ""
        if meta["status"] != "complete" and not meta.get("ended"):
            note = note or ("never finished: " + (meta.get("finish") or "its process ended")
                            if meta.get("finish") else "never finished (still running, or killed)")
        return cls(run.path, meta["study"], meta.get("run_id") or run.run_id, meta["status"],
                   meta.get("started") or "", meta.get("parameters") or {}, where,
                   verdicts(run.path), note, verdicts(run.path, ours=True))

    def key_parameters(self) -> str:
        shown = {k: v for k, v in self.parameters.items()
                 if v not in (None, "", [], ()) and k not in ("run_dir",)}
        first = {k: shown.pop(k) for k in ("profile",) if k in shown}
        return ", ".join(f"{k}={_short(v)}" for k, v in {**first, **shown}.items())

    def verdict_text(self) -> str:
        return ", ".join(f"{n} {o}" for o, n in self.verdicts.items())

    def ours_text(self) -> str:
        return ", ".join(f"{n} {o}" for o, n in self.ours.items())


def _short(value) -> str:
    if isinstance(value, list | tuple):
        text = ",".join(str(v) for v in value)
        return text if len(text) <= 24 else text[:21] + "..."
    return str(value)


def verdicts(run_path: Path, ours: bool = False) -> dict[str, int]:
    """Outcome counts of the paper's claims in a run's claims.csv (``ours=True``: of our
    targets and lab checks, counted apart)."""
    path = Path(run_path) / "claims.csv"
    if not path.exists():
        return {}
    import pandas as pd

    from ..verdicts.claims import OUTCOMES, PAPER

    frame = pd.read_csv(path)
    if "source" in frame:
        frame = frame[(frame.source != PAPER) if ours else (frame.source == PAPER)]
    elif ours:
        return {}
    counts = Counter(frame.outcome) if "outcome" in frame else Counter()
    return {o: counts[o] for o in OUTCOMES if counts[o]}


def summaries(root: Path | None = None) -> list[RunSummary]:
    """Every readable run, newest first."""
    runs = []
    for run in list_runs(root=root):
        try:
            runs.append(RunSummary.read(run))
        except (KeyError, ValueError, OSError):
            continue  # a folder half-written by a run that is just starting
    return sorted(runs, key=lambda r: r.started, reverse=True)


def render(runs: list[RunSummary], base: Path, extra: str = "") -> str:
    """The page; links are relative to ``base`` (the folder index.html is written to).
    ``extra``: HTML placed after the table (the static site's list of compare pages)."""
    studies = sorted({r.study for r in runs})
    statuses = sorted({r.status for r in runs})
    rows = "\n".join(_row(r, base) for r in runs)
    options = lambda values: "".join(f'<option>{html.escape(v)}</option>' for v in values)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>harness runs</title>
<style>
body {{ font-family: {FONT_STACK}; margin: 1.5em; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left;
          vertical-align: top; }}
tr.incomplete td.status {{ color: #b00; }}
tr.complete td.status {{ color: #070; }}
td.params, td.note {{ max-width: 28em; font-size: 0.85em; }}
td.nowrap {{ white-space: nowrap; }}
</style></head><body>
<h1>Archived runs</h1>
<p>{len(runs)} run(s) under <code>runs/</code>. Compare runs with
<code>harness compare RUN RUN</code>; re-run one with <code>harness rerun RUN</code>.</p>
<p><label>study <select id="study"><option value="">all</option>{options(studies)}</select></label>
<label>status <select id="status"><option value="">all</option>{options(statuses)}</select></label>
<span id="shown"></span></p>
<table id="runs"><thead><tr><th>study</th><th>run</th><th>status</th><th>started (UTC)</th>
<th>key parameters</th><th>placement</th><th>verdicts (paper's claims)</th>
<th>our targets, lab checks</th><th>files</th><th>note</th></tr></thead>
<tbody>
{rows}
</tbody></table>
{extra}
<script>
function filter() {{
  const study = document.getElementById("study").value;
  const status = document.getElementById("status").value;
  let shown = 0;
  for (const row of document.querySelectorAll("#runs tbody tr")) {{
    const ok = (!study || row.dataset.study === study) && (!status || row.dataset.status === status);
    row.style.display = ok ? "" : "none";
    shown += ok;
  }}
  document.getElementById("shown").textContent = shown + " shown";
}}
document.getElementById("study").onchange = filter;
document.getElementById("status").onchange = filter;
filter();
</script>
</body></html>
"""


def _row(run: RunSummary, base: Path) -> str:
    e = html.escape
    rel = Path(os.path.relpath(run.path, base))
    links = " ".join(f'<a href="{e((rel / name).as_posix())}">{e(name)}</a>'
                     for name in FILES if (run.path / name).exists())
    return (f'<tr class="{e(run.status)}" data-study="{e(run.study)}" '
            f'data-status="{e(run.status)}"><td class="nowrap">{e(run.study)}</td>'
            f'<td class="nowrap">{e(run.run_id)}</td><td class="status">{e(run.status)}</td>'
            f'<td class="nowrap">{e(run.started.replace("+00:00", ""))}</td>'
            f'<td class="params">{e(run.key_parameters())}</td><td>{e(run.placement)}</td>'
            f'<td>{e(run.verdict_text())}</td><td>{e(run.ours_text())}</td><td>{links}</td>'
            f'<td class="note">{e(run.note)}</td></tr>')


def write_index(root: Path | None = None) -> Path:
    """Write ``<data>/index.html`` (atomically) and return its path."""
    base = root or data_root()
    base.mkdir(parents=True, exist_ok=True)
    target = base / "index.html"
    tmp = base / f".index.html.{secrets.token_hex(4)}.tmp"
    tmp.write_text(render(summaries(base), base))
    os.replace(tmp, target)
    return target


def refresh(root: Path | None = None) -> Path | None:
    """:func:`write_index` after a run; a failure is said, never raised (the run stands)."""
    import sys

    try:
        return write_index(root)
    except Exception as exc:  # noqa: BLE001
        print(f"harness: the run index was not refreshed: {exc}", file=sys.stderr)
        return None
