"""Run a study notebook through papermill and archive it as one run.

``harness run NOTEBOOK -p NAME VALUE`` checks every parameter (names against
the notebook's parameters cell, values against the study's own rules) and the
inventory before anything starts, creates the run folder, executes the
notebook into it, renders the HTML report beside it, undoes anything a dead
kernel left behind (from the run's journal), and marks the run complete --
or incomplete, with the error, if anything went wrong or Ctrl-C came.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..archive.archive import COMPLETE, INCOMPLETE, Run, now_iso
from ..errors import HarnessError, SpecError
from ..studies import Study, study_of_notebook
from .kernel_death import quiet_kernel_death
from .kernels import ipc_kernel
from .last_writer import outlive_other_writers
from .session import format_error, sigterm_as_interrupt

# Parameters the harness itself injects into every study notebook.
HARNESS_PARAMETERS = ("run_dir", "inventory")


@dataclass
class NotebookRun:
    run: Run
    status: str
    report: Path | None
    seconds: float
    error: str | None = None
    left: list[dict] | None = None  # changes still there after their undo (issue 40)


def parse_value(text: str):
    """A command-line value as YAML: 10 -> int, 0.5 -> float, true -> bool, 1-10 -> str."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def notebook_parameters(notebook: Path) -> dict:
    import papermill as pm

    return pm.inspect_notebook(str(notebook))


def check_parameters(notebook: Path, given: dict) -> tuple[Study, object]:
    """Validate names and values before anything runs; return (study, resolved params)."""
    study = study_of_notebook(notebook)
    declared = notebook_parameters(notebook)
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise SpecError(f"unknown parameter(s) {', '.join(unknown)} for {notebook.name}",
                        f"its parameters are: {', '.join(declared)}")
    reserved = sorted(set(given) & {"run_dir"})
    if reserved:
        raise SpecError("run_dir is set by `harness run` itself", "leave it out")
    strays = sorted(set(declared) - set(study.Params.rules()) - set(HARNESS_PARAMETERS))
    if strays:
        raise SpecError(f"{notebook.name} declares parameter(s) {', '.join(strays)} that study "
                        f"{study.name} does not know",
                        f"remove them from its parameters cell, or add them to {study.name}'s "
                        "Params (`harness params` lists what it knows)")
    merged = {**notebook_defaults(notebook), **given}
    params = study.parameters(merged)
    inventory = merged.get("inventory") or ""
    study.check_where(params, inventory)
    if inventory:
        from ..machines.inventory import Inventory

        Inventory.load(inventory).check_covers(study.topology(params))
    return study, params


@contextmanager
def machine_taken(study: str) -> Iterator[tuple[object, dict]]:
    """This machine's lock, taken before the run folder exists and held until the run is
    finished (the kernel's whole life, its undo and the report included).

    Why: when only checked here and taken inside the kernel, two runs started 3 s apart
    both passed the check and the second died in its notebook with MachineBusy, leaving
    an incomplete run folder with a papermill traceback. Now a refused run leaves only
    its one error. The kernel learns that the lock is held for its run from
    ``$HARNESS_LOCK_HELD`` (see :func:`harness.run.machinelock.held_for`)."""
    from .machinelock import LocalLock, sharing_requested, this_process

    share = sharing_requested()
    lock = LocalLock()
    record = lock.acquire(this_process("", study, "", share), share)
    try:
        yield lock, record
    finally:
        lock.release()


@contextmanager
def lock_named_for_kernel(lock, run: Run) -> Iterator[None]:
    """Name the run in the lock and tell the kernel (by environment) that it is held."""
    from .machinelock import HELD_ENV, relabel, this_process

    owner = this_process(run.run_id, run.study, str(run.path), lock.owner.share)
    relabel(lock, owner)
    before = os.environ.get(HELD_ENV)
    os.environ[HELD_ENV] = json.dumps(owner.to_dict(), sort_keys=True)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(HELD_ENV, None)
        else:
            os.environ[HELD_ENV] = before


def notebook_defaults(notebook: Path) -> dict:
    """The values of the notebook's parameters cell, as Python values."""
    return {name: _default(info) for name, info in notebook_parameters(notebook).items()}


def _default(info) -> object:
    text = info.get("default") if isinstance(info, dict) else None
    if text is None:
        return None
    try:
        import ast

        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parameters_file(path: str | Path) -> dict:
    """Parameters from a YAML file of ``name: value`` lines (``harness run -f``, as papermill's)."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"parameters file {path} does not exist", "give a YAML file of name: value")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"parameters file {path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise SpecError(f"parameters file {path} must be a mapping of parameter names to values",
                        "write one `name: value` per line, e.g. `streams: 1-10`")
    return data


def run_notebook(notebook: str | Path, parameters: dict | None = None,
                 root: Path | None = None, progress: bool = False,
                 note: dict | None = None) -> NotebookRun:
    """Execute ``notebook`` into a new run; ``note``: extra run.json fields (``rerun_of``)."""
    notebook = Path(notebook).resolve()
    given = dict(parameters or {})
    study, params = check_parameters(notebook, given)
    with machine_taken(study.name) as (lock, lock_record):
        run = Run.create(study.name, {**params.to_dict(), **{k: v for k, v in given.items()
                                                        if k in HARNESS_PARAMETERS}},
                         root, notebook=str(notebook))
        with lock_named_for_kernel(lock, run):
            lock_record = {**lock_record, "holder": lock_record["holder"]
                           if lock_record["mode"] == "shared" else lock.owner.to_dict()}
            run.update(machine_lock={"local": lock_record}, **(note or {}))
            return _execute(notebook, given, run, study, progress)


def _execute(notebook: Path, given: dict, run: Run, study, progress: bool) -> NotebookRun:
    """The kernel's life for ``run``, then its undo, report and final status."""
    import papermill as pm

    from ..archive.report import render_report  # pandas and nbconvert: only when a run renders

    executed = run.path / "notebook.ipynb"
    started = time.monotonic()
    error: BaseException | None = None
    # Ctrl-C or SIGTERM: nbclient shuts the kernel down, and its "Kernel died" lines (a log
    # line and, at exit, an abandoned task's traceback) would follow the run's own ending line
    quiet_kernel_death()
    with sigterm_as_interrupt():
        try:
            with ipc_kernel(run.journal) as kernel:
                pm.execute_notebook(
                    str(notebook), str(executed),
                    parameters={**given, "run_dir": str(run.path)},
                    kernel_name="python3", cwd=str(notebook.parent), report_mode=False,
                    # the measurement's own progress line (harness.progress) is on the kernel's
                    # stderr: shown here, rather than papermill's count of cells
                    progress_bar=False, stderr_file=sys.stderr if progress else None,
                    coalesce_streams=True,  # the archived notebook keeps a progress line's last
                    **kernel,               # state
                )
        except BaseException as exc:  # includes KeyboardInterrupt: mark, clean, re-raise
            error = exc
        finally:
            # the kernel got the same SIGTERM and may still be recording or undoing: its last
            # record must be in the journal before the journal is undone
            killed = outlive_other_writers(run.journal)
            if killed:
                run.update(kernel_killed_before_undo=killed)
            leftovers = run.journal.pending()
            try:
                run.journal.undo_all()
            except HarnessError as exc:
                error = error or exc
            if leftovers:
                run.update(cleanup_after_kernel=[f"{e.kind} {e.data}" for e in leftovers])
            left = run.journal.left_behind()  # undone and seen still there: named, not hidden
            run.update(left_behind=left or None)
            report, ended = None, now_iso()
            if executed.exists():  # the report shows the status the run is about to get
                outcome = {"status": COMPLETE if error is None else INCOMPLETE, "ended": ended,
                           "error": None if error is None else format_error(error)}
                try:
                    report = render_report(executed, run.path / "report.html", {**run.meta, **outcome},
                                           study)
                except Exception as exc:  # a report failure must not hide the run's outcome
                    error = error or exc
            status = COMPLETE if error is None else INCOMPLETE
            run.finish(status, None if error is None else format_error(error), ended)
    seconds = time.monotonic() - started
    if isinstance(error, KeyboardInterrupt):
        error.left_behind = left  # harness.cli says what is left, not "every change was undone"
        error.run_path = run.path
        raise error
    return NotebookRun(run, status, report, seconds, None if error is None else format_error(error),
                       left or None)
