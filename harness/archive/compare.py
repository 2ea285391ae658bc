"""``harness compare RUN RUN...``: what differs between runs, and their results side by side.

The runs' facts are read from their run.json, flattened into one key per fact
and grouped by section (parameters; code: git commit and dirty state; machine:
kernels; placement and scaling; configuration: every recorded change, sysctls
included, by node, kind and target; packages; tools; kernel features; link
verification). A :class:`Comparison` keeps, per section, the facts that are not
the same in every run, and how many are. Then the results: the claims table side
by side (outcome and our estimate per run), and a summary of each results table
(the mean of each measured column per group of its categorical columns).

Printed in the terminal and written as one self-contained HTML page under
``data/compare/`` (never inside a run folder; nothing archived is changed).
A sweep (``harness batch``) gets the same, its runs labelled by their swept
values, plus a figure of every claim's estimate across the points
(:func:`sweep_summary`).
"""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .archive import Run, data_root

SECTIONS = ("status", "parameters", "code", "machine", "placement", "configuration", "packages",
            "tools", "features", "link verification")
ID_COLUMNS = {"repetition", "order", "seq", "rep", "round"}


def _text(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _flatten(data, prefix: str = "") -> dict[str, str]:
    if not isinstance(data, dict):
        return {prefix: _text(data)} if prefix else {}
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        out.update(_flatten(value, name) if isinstance(value, dict) else {name: _text(value)})
    return out


def facts(meta: dict) -> dict[str, dict[str, str]]:
    """One run's comparable facts, by section, each a flat ``name -> text``."""
    prov = meta.get("provenance") or {}
    caps = meta.get("capabilities") or {}
    git = prov.get("git") or {}
    out = {
        "status": {"status": meta.get("status"), "error": meta.get("error"),
                   "notebook": meta.get("notebook")},
        "parameters": dict(meta.get("parameters") or {}),
        "code": {"git commit": git.get("commit"), "git dirty": git.get("dirty"),
                 "changed files": git.get("changed_files"), "branch": git.get("branch"),
                 "python": prov.get("python"),
                 # by content, tracked or not: a study not yet committed still differs here
                 "claims registration": (meta.get("registration") or {}).get("digest"),
                 **{f"file {name}": digest
                    for name, digest in (meta.get("code_digests") or {}).items()}},
        "machine": {"controller kernel": (prov.get("controller") or {}).get("kernel"),
                    "controller host": (prov.get("controller") or {}).get("hostname"),
                    **{f"{node} kernel": c.get("kernel") for node, c in caps.items()},
                    **{f"{node} default congestion": c.get("congestion_default")
                       for node, c in caps.items()}},
        "placement": meta.get("placement") or {},
        "configuration": {f"{r.get('node')} {r.get('kind')} {r.get('target')}":
                          f"{_text(r.get('before'))} -> {_text(r.get('after'))}"
                          + ("" if r.get("changed", True) else " (unchanged)")
                          for r in meta.get("configuration") or []},
        "packages": prov.get("packages") or {},
        "tools": {f"{node} {tool}": version for node, c in caps.items()
                  for tool, version in (c.get("tools") or {}).items()},
        "features": {f"{node} {feature}": ok for node, c in caps.items()
                     for feature, ok in (c.get("features") or {}).items()},
        "link verification": {
            f"{c.get('link')} {c.get('direction')}":
                f"{_text(c.get('link_layer_mbit'))} Mbit/s of {_text(c.get('configured_mbit'))}, "
                f"rtt {_text(c.get('rtt_ms'))} ms, {'ok' if c.get('ok') else 'NOT ok'}"
            for c in meta.get("link_verification") or []},
    }
    return {section: _flatten(values) for section, values in out.items()}


@dataclass
class Comparison:
    """Runs' differences and results; ``labels`` name the runs' columns."""

    runs: list[Run]
    labels: list[str]
    differences: dict[str, pd.DataFrame] = field(default_factory=dict)
    same: dict[str, int] = field(default_factory=dict)
    claims: pd.DataFrame | None = None
    results: pd.DataFrame | None = None

    @classmethod
    def of(cls, runs: list[Run], labels: list[str] | None = None) -> Comparison:
        labels = labels or [r.run_id for r in runs]
        metas = [r.meta for r in runs]
        per_run = [facts(m) for m in metas]
        comp = cls(runs, labels)
        for section in SECTIONS:
            keys = sorted(set().union(*(f[section] for f in per_run)))
            rows = {k: [f[section].get(k, "(absent)") for f in per_run] for k in keys}
            differ = {k: v for k, v in rows.items() if len(set(v)) > 1}
            comp.same[section] = len(rows) - len(differ)
            comp.differences[section] = pd.DataFrame.from_dict(differ, orient="index",
                                                               columns=labels)
        comp.claims = claims_side_by_side(runs, labels)
        comp.results = results_summary(runs, labels)
        return comp

    def text(self) -> str:
        lines = [f"{lab}: {r.path}" for lab, r in zip(self.labels, self.runs)]
        with pd.option_context("display.max_colwidth", 60, "display.width", 200):
            for section, frame in self.differences.items():
                head = f"\n== {section}: {len(frame)} differ, {self.same[section]} the same"
                lines.append(head + ("" if frame.empty else "\n" + frame.to_string()))
            for title, frame in (("claims", self.claims), ("results summary", self.results)):
                lines.append(f"\n== {title}")
                lines.append("(none archived)" if frame is None or frame.empty
                             else frame.to_string())
        return "\n".join(lines)

    def html(self, title: str, figure: str = "") -> str:
        e = html.escape
        parts = [f"<h1>{e(title)}</h1><ul>"]
        parts += [f"<li><b>{e(lab)}</b>: {e(str(r.path))}</li>"
                  for lab, r in zip(self.labels, self.runs)]
        parts.append("</ul>")
        for section, frame in self.differences.items():
            parts.append(f"<h2>{e(section)}</h2><p>{len(frame)} differ, "
                         f"{self.same[section]} the same in every run.</p>")
            if not frame.empty:
                parts.append(frame.to_html(border=0))
        if figure:
            parts.append(f'<h2>claims across the points</h2><img alt="claims across the points" '
                         f'src="data:image/png;base64,{figure}">')
        for name, frame in (("claims", self.claims), ("results summary", self.results)):
            parts.append(f"<h2>{name}</h2>")
            parts.append("<p>none archived</p>" if frame is None or frame.empty
                         else frame.to_html(border=0))
        from .report_sections import FONT_STACK

        style = (f"body{{font-family:{FONT_STACK};margin:1.5em}} table{{border-collapse:collapse;"
                 "font-size:.85em} td,th{border-bottom:1px solid #ddd;padding:.25em .5em;"
                 "text-align:left;vertical-align:top}")
        return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}'
                f"</title><style>{style}</style></head><body>{''.join(parts)}</body></html>\n")


def _table(run: Run, name: str) -> pd.DataFrame | None:
    path = run.path / f"{name}.parquet"
    return pd.read_parquet(path) if path.exists() else None


def claims_side_by_side(runs: list[Run], labels: list[str]) -> pd.DataFrame | None:
    """One row per claim, one column per run: 'outcome (our estimate)'."""
    cols = {}
    for run, label in zip(runs, labels):
        frame = _table(run, "claims")
        if frame is not None and not frame.empty:
            cols[label] = {row.claim_id: f"{row.outcome} ({row.ours})"
                           for row in frame.itertuples()}
    return pd.DataFrame(cols).rename_axis("claim") if cols else None


def results_summary(runs: list[Run], labels: list[str]) -> pd.DataFrame | None:
    """The mean of each measured (float) column per group of the categorical columns."""
    cols = {}
    for run, label in zip(runs, labels):
        frame = _table(run, "results")
        if frame is None or frame.empty:
            continue
        groups = [c for c in frame.columns if (pd.api.types.is_string_dtype(frame[c])
                                               or frame[c].dtype == object)
                  and 1 < frame[c].nunique() <= 8]
        values = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])
                  and c not in ID_COLUMNS][:8]
        if not values:
            continue
        cols[label] = (frame.groupby(groups, dropna=False)[values].mean().stack() if groups
                       else frame[values].mean())
        cols[label].index = [" ".join(str(p) for p in (k if isinstance(k, tuple) else (k,)))
                             for k in cols[label].index]
    return pd.DataFrame(cols).map(_text).rename_axis("group, measure") if cols else None


def compare_page(comparison: Comparison, name: str, title: str, figure: str = "",
                 root: Path | None = None) -> Path:
    """Write the HTML page ``<data>/compare/<name>.html`` (a new file each time)."""
    folder = (root or data_root()) / "compare"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.html"
    target.write_text(comparison.html(title, figure))
    return target


def page_name(runs: list[Run]) -> str:
    """The runs' ids joined; past a file name's length, the first id, the count and a hash."""
    name = "__".join(r.run_id for r in runs)
    if len(name) <= 200:
        return name
    import hashlib

    return f"{runs[0].run_id}__and-{len(runs) - 1}-more-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def claims_figure(comparison: Comparison, axis: str) -> str:
    """Each claim's estimate and interval against the sweep's points, as base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = [(lab, _table(r, "claims")) for lab, r in zip(comparison.labels, comparison.runs)]
    tables = [(lab, t) for lab, t in tables if t is not None and not t.empty]
    if not tables:
        return ""
    ids = list(dict.fromkeys(cid for _lab, t in tables for cid in t.claim_id))
    fig, axes = plt.subplots(len(ids), 1, figsize=(7, 2.2 * len(ids)), squeeze=False)
    for ax, cid in zip(axes[:, 0], ids):
        xs, ys, err = [], [], [[], []]
        for lab, t in tables:
            row = t[t.claim_id == cid]
            if row.empty or pd.isna(row.value.iloc[0]):
                continue
            v, lo, hi = (float(row[c].iloc[0]) for c in ("value", "low", "high"))
            xs.append(lab)
            ys.append(v)
            err[0].append(0 if pd.isna(lo) else v - lo)
            err[1].append(0 if pd.isna(hi) else hi - v)
        unit = tables[0][1].set_index("claim_id").get("unit", pd.Series(dtype=str)).get(cid, "")
        ax.errorbar(xs, ys, yerr=err, fmt="o-", capsize=4)
        ax.set_title(cid, fontsize=9)
        ax.set_ylabel(unit or "value")
    axes[-1, 0].set_xlabel(axis)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def sweep_summary(path: str | Path, root: Path | None = None) -> tuple[Comparison, Path]:
    """The latest complete run of each point of a sweep, compared; its page's path."""
    from ..errors import SpecError
    from ..run.sweep import Sweep, point_runs

    sweep = Sweep.load(path)
    found = [(point, run) for point, run in point_runs(sweep, root) if run is not None]
    if not found:
        raise SpecError(f"no point of sweep {path} has a complete run yet",
                        f"run it first: harness batch {path}")
    try:  # the points in the order of their swept values (a numeric axis reads left to right)
        found.sort(key=lambda pr: tuple(pr[0][k] for k in sweep.axes))
    except TypeError:
        pass
    labels = [", ".join(f"{k}={point[k]}" for k in sweep.axes) for point, _run in found]
    comparison = Comparison.of([run for _point, run in found], labels)
    figure = claims_figure(comparison, ", ".join(sweep.axes))
    page = compare_page(comparison, f"sweep-{Path(path).stem}",
                        f"sweep {Path(path).name}: {len(found)} of {len(sweep.points())} points",
                        figure, root)
    return comparison, page
