"""A run started by a notebook itself (JupyterLab, plain papermill, nbclient), finished by it.

``harness run`` owns its runs: it executes the notebook, archives the executed
notebook and its report, and marks the run. A notebook run any other way makes
its own run (``run_dir`` empty), and only its kernel sees it through. So, in a
kernel, :func:`harness.run.runner.run_study` calls :func:`begin`:

- the run folder is made (``notebook`` in run.json: the source notebook, found by
  :func:`find_source`) and left ``incomplete`` when the measurement ends;
- after each later cell (IPython's ``post_run_cell`` event): a failed or
  interrupted cell finishes the run ``incomplete`` with the error; the
  successful execution of the source notebook's last code cell (or of the cell
  that called :func:`finish`) finishes it ``complete``. Either way the executed
  notebook, as the kernel recorded it (:mod:`harness.run.kernel_record`), and its
  report, rendered as ``harness run`` renders it, are archived first;
- a kernel that dies leaves the run ``incomplete`` (run.json ``finish``
  says what it waited for); so does a second run begun in the same kernel
  before the first one's notebook reached its end.

Outside a kernel (a script calling ``run_study``) nothing changes: the session
finishes the run when the measurement ends.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..archive.archive import COMPLETE, INCOMPLETE, Run, now_iso, project_root
from .kernel_record import LastCell, executed_notebook, kernel_shell, record, recorder

WAITING = "the notebook's last code cell (or harness.run.notebook_run.finish()) in its kernel"


@dataclass
class PendingRun:
    run: Run
    source: Path | None
    last_cell: LastCell | None
    finish_requested: bool = False
    study: object = None  # the Study (its title and citation head the report)


_pending: PendingRun | None = None


def begin(study: str, parameters: dict, root: Path | None = None,
          study_object: object = None) -> Run | None:
    """A new run finished by this kernel's notebook; None outside a kernel.
    ``study_object``: the Study itself, for the report's title and citation."""
    global _pending
    shell = kernel_shell()
    if shell is None:
        return None
    record()
    if _pending is not None:
        _finalise(INCOMPLETE, "the notebook began another run before reaching its last cell")
    source = find_source(shell, study)
    run = Run.create(study, parameters, root, notebook=str(source) if source else None)
    last = LastCell.of(source) if source else None
    run.update(finish=WAITING if last else
               "harness.run.notebook_run.finish() in the notebook's last cell (its source "
               "notebook was not found: see docs/how-to/jupyterlab.md)")
    _pending = PendingRun(run, source, last, study=study_object)
    if _after_cell not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _after_cell)
    return run


def finish() -> str | None:
    """Finish this kernel's pending run when the current cell ends (call it in the last cell).

    Only needed when the source notebook is unknown; a no-op under ``harness run``,
    which finishes its runs itself. Returns the run folder, or None.
    """
    if _pending is None:
        return None
    _pending.finish_requested = True
    return str(_pending.run.path)


def pending_run() -> Run | None:
    return _pending.run if _pending else None


def _after_cell(result) -> None:
    if _pending is None:
        return
    error = result.error_before_exec or result.error_in_exec
    if error is not None:
        from .session import format_error

        _finalise(INCOMPLETE, f"cell [{result.execution_count}] failed: {format_error(error)}")
        return
    info = result.info
    last = _pending.last_cell
    if _pending.finish_requested or (last and last.ran(info.raw_cell or "",
                                                       getattr(info, "cell_id", None))):
        _finalise(COMPLETE, None)


def _finalise(status: str, error: str | None) -> None:
    """Archive the executed notebook and its report, then mark the run."""
    global _pending
    pending, _pending = _pending, None
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    run = pending.run
    ended = now_iso()
    try:
        nb = executed_notebook(recorder().snapshot(), pending.source)
        _archive_notebook(run, nb)
        from ..archive.report import render_report

        # the report shows the status the run is about to get, as under `harness run`
        render_report(run.path / "notebook.ipynb", run.path / "report.html",
                      {**run.meta, "status": status, "ended": ended, "error": error},
                      pending.study)
    except Exception as exc:  # noqa: BLE001 -- as harness run: a report failure fails the run
        from .session import format_error

        status, error = INCOMPLETE, error or f"archiving the notebook: {format_error(exc)}"
    run.update(finish=None)
    run.finish(status, error, ended)
    from ..archive.index import refresh

    refresh(run.path.parents[2])  # nothing printed: nbval compares the last cell's output


def _archive_notebook(run: Run, nb) -> None:
    import nbformat

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "notebook.ipynb"
        nbformat.write(nb, str(path))
        run.add_file("notebook.ipynb", path)


def find_source(shell, study: str) -> Path | None:
    """The notebook this kernel runs: JupyterLab names it (``__session__``); otherwise the
    one notebook naming ``study`` in its metadata in the kernel's folder, the study module's
    folder or the project's ``notebooks/``."""
    named = shell.user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME")
    if named and named.endswith(".ipynb"):
        for candidate in (Path(named), Path.cwd() / Path(named).name):
            if candidate.is_file():
                return candidate.resolve()
    from ..studies import get_study

    folders = [Path.cwd()]
    try:
        import inspect

        folders.append(Path(inspect.getfile(type(get_study(study)))).parent)
    except Exception:  # noqa: BLE001 -- an unknown study has no module folder to look in
        pass
    folders.append(project_root() / "notebooks")
    for folder in folders:
        found = sorted(p for p in folder.glob("*.ipynb") if _names(p, study))
        if len(found) == 1:
            return found[0].resolve()
    return None


def _names(notebook: Path, study: str) -> bool:
    from ..errors import HarnessError
    from ..studies.registry import notebook_metadata

    try:
        return notebook_metadata(notebook).get("study") == study
    except HarnessError:
        return False
