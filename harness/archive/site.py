"""``harness site OUT``: the archive as one folder of static pages a lab can publish.

``OUT`` (new; never written over) gets

- ``index.html``: every archived run (the page of :mod:`harness.archive.index`), its links
  pointing at the copies below, and a list of the compare pages;
- ``runs/<study>/<run-id>/``: each run's report.html, run.json, results and claims tables and
  executed notebook, copied (regular files only; a symlink is not followed);
- ``compare/``: one comparison of each study's complete runs (:class:`Comparison`, written
  here), and every compare page and sweep summary already under the data folder's
  ``compare/`` (``harness compare``, ``harness batch``), copied.

Every link is relative and stays inside ``OUT``; no page fetches anything (reports are
self-contained, :func:`harness.archive.report.external_fetches` is checked on every page
copied), not even an icon (each page names an empty one), so the folder opens from a file://
URL and from any plain web server. Nothing archived is changed.
"""

from __future__ import annotations

import html
import os
import shutil
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import SpecError
from .archive import COMPLETE, Run, data_root, list_runs, refuse_existing
from .index import FILES, render, summaries

#: what of a run folder the site carries (the index links to each that exists)
SITE_FILES = tuple(name for name in FILES if name != "raw")


@dataclass(frozen=True)
class Site:
    path: Path
    runs: int
    pages: int
    files: int


def _copy(source: Path, target: Path) -> bool:
    """Copy a regular file (never through a symlink); False when ``source`` is none."""
    try:
        if not stat.S_ISREG(os.lstat(source).st_mode):
            return False
    except FileNotFoundError:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target, follow_symlinks=False)
    return True


#: a page's own icon, empty: without one a browser asks the server for /favicon.ico, outside
#: the folder when it is published under a path (and a 404 on the console of every page)
NO_ICON = '<link rel="icon" href="data:,">'


def with_icon(text: str) -> str:
    """The page with :data:`NO_ICON` as the first thing of its head, unless it names an icon."""
    if 'rel="icon"' in text or "<head>" not in text:
        return text
    return text.replace("<head>", "<head>" + NO_ICON, 1)


def _checked_page(source: Path) -> str:
    from .report import external_fetches

    text = with_icon(source.read_text())
    fetched = external_fetches(text)
    if fetched:
        raise SpecError(f"{source} would fetch {', '.join(sorted(set(fetched))[:3])}: not "
                        "published", "re-render it with this harness (its pages fetch nothing)")
    return text


def study_comparisons(root: Path, out: Path) -> list[tuple[str, str]]:
    """One compare page per study with two complete runs or more: (title, relative path)."""
    from .compare import Comparison

    pages = []
    by_study: dict[str, list[Run]] = {}
    for run in list_runs(root=root, status=COMPLETE):
        try:
            by_study.setdefault(run.study, []).append(run)
        except (KeyError, ValueError, OSError):
            continue
    for study, runs in sorted(by_study.items()):
        if len(runs) < 2:
            continue
        title = f"{study}: its {len(runs)} complete runs compared"
        target = out / "compare" / f"study-{study}.html"
        target.parent.mkdir(exist_ok=True)
        target.write_text(with_icon(Comparison.of(runs).html(title)))
        pages.append((title, target.relative_to(out).as_posix()))
    return pages


def archived_pages(root: Path, out: Path) -> list[tuple[str, str]]:
    """Every compare page and sweep summary of the data folder, copied: (title, path)."""
    pages = []
    folder = root / "compare"
    for source in sorted(folder.glob("*.html")) if folder.is_dir() else []:
        if not stat.S_ISREG(os.lstat(source).st_mode):
            continue
        target = out / "compare" / source.name
        if target.exists():  # a generated study page of the same name wins
            continue
        target.parent.mkdir(exist_ok=True)
        target.write_text(_checked_page(source))
        kind = "sweep summary" if source.name.startswith("sweep-") else "compare page"
        pages.append((f"{kind}: {source.stem}", target.relative_to(out).as_posix()))
    return pages


def pages_list(pages: list[tuple[str, str]]) -> str:
    if not pages:
        return "<h2>Compare pages</h2><p>none yet</p>"
    items = "".join(f'<li><a href="{html.escape(path)}">{html.escape(title)}</a></li>'
                    for title, path in pages)
    return f"<h2>Compare pages and sweep summaries</h2><ul>{items}</ul>"


def write_site(out: Path, root: Path | None = None) -> Site:
    """Write the site of the archive under ``root`` (default: the data folder) into ``out``."""
    root = root or data_root()
    out = Path(out)
    refuse_existing(out, "a site", "give a new folder (publish it by copying it whole)")
    out.mkdir()
    try:
        shown = []
        files = 0
        for summary in summaries(root):
            rel = summary.path.relative_to(root / "runs")
            target = out / "runs" / rel
            for name in SITE_FILES:
                source = summary.path / name
                if name.endswith(".html") and source.is_file() and not source.is_symlink():
                    target.mkdir(parents=True, exist_ok=True)
                    (target / name).write_text(_checked_page(source))
                    files += 1
                else:
                    files += _copy(source, target / name)
            target.mkdir(parents=True, exist_ok=True)
            shown.append(replace(summary, path=target))
        pages = study_comparisons(root, out) + archived_pages(root, out)
        (out / "index.html").write_text(with_icon(render(shown, out, pages_list(pages))))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # the folder this call created
        raise
    return Site(out, len(shown), len(pages), files + len(pages) + 1)
