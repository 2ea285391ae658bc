"""``harness rerun RUN``: the same notebook with the same parameters, as a new run.

The original's run.json gives the notebook and every resolved parameter; the
new run is an ordinary ``harness run`` of them, whose run.json names the
original (``rerun_of``). Before it starts, a warning for each way this machine
now differs from the original's (git commit or uncommitted changes, kernel);
after it, one if the placement (host or VM, scaling) came out differently.
The original is only read.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from pathlib import Path

from .archive import Run, project_root
from .errors import SpecError


@dataclass(frozen=True)
class RerunPlan:
    original: Run
    notebook: Path
    parameters: dict
    warnings: list[str] = field(default_factory=list)


def plan(original: Run) -> RerunPlan:
    """What a rerun of ``original`` runs, checked before anything starts."""
    from .execute import HARNESS_PARAMETERS, check_parameters
    from .provenance import git_state

    meta = original.meta
    if not meta.get("notebook"):
        raise SpecError(f"run {original.run_id} names no notebook (a run made by a script, or "
                        "by a notebook whose file was not found)",
                        "run its study's notebook with the parameters of its run.json: "
                        "harness run NOTEBOOK -f PARAMS.yaml")
    notebook = Path(meta["notebook"])
    if not notebook.exists():
        raise SpecError(f"run {original.run_id}'s notebook {notebook} no longer exists",
                        "restore it (git checkout the run's commit) or run another notebook")
    given = {k: v for k, v in (meta.get("parameters") or {}).items()
             if k not in HARNESS_PARAMETERS or (k == "inventory" and v)}
    check_parameters(notebook.resolve(), given)
    warnings = []
    git = (meta.get("provenance") or {}).get("git") or {}
    now = git_state(project_root())
    if git.get("commit") != now.get("commit"):
        warnings.append(f"code differs: the original ran at commit {git.get('commit')}, "
                        f"this checkout is at {now.get('commit')}")
    if now.get("dirty"):
        warnings.append("this checkout has uncommitted changes: "
                        + ", ".join(now.get("changed_files") or []))
    elif git.get("dirty"):
        warnings.append("the original ran with uncommitted changes, which are not here")
    kernel = ((meta.get("provenance") or {}).get("controller") or {}).get("kernel")
    if kernel and kernel != platform.release():
        warnings.append(f"kernel differs: the original ran on {kernel}, this machine runs "
                        f"{platform.release()}")
    return RerunPlan(original, notebook, given, warnings)


def placement_warning(original: Run, new: Run) -> str | None:
    """Placement or scaling of the new run, if it differs from the original's."""
    def where(run: Run) -> tuple:
        place = run.meta.get("placement") or {}
        return place.get("where"), (place.get("scaling") or {}).get("factor")

    old, now = where(original), where(new)
    if old == now:
        return None
    return (f"placement differs: the original ran on {old[0]} (rate factor {old[1]}), the rerun "
            f"on {now[0]} (rate factor {now[1]}); compare them: harness compare "
            f"{original.run_id} {new.run_id}")


def rerun(original: Run, progress: bool = False, warn=print):
    """Run the plan; returns the new run's :class:`~harness.execute.NotebookRun`."""
    from .execute import run_notebook

    todo = plan(original)
    for warning in todo.warnings:
        warn(f"warning: {warning}")
    result = run_notebook(todo.notebook, todo.parameters, root=original.path.parents[2],
                          progress=progress, note={"rerun_of": original.run_id})
    moved = placement_warning(original, result.run)
    if moved:
        warn(f"warning: {moved}")
    return result
