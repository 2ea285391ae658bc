"""``harness rerun RUN``: the same notebook with the same parameters, as a new run.

The original's run.json gives the study and every resolved parameter; the notebook
is this checkout's notebook of that study (found by study under ``notebooks/``, never
the path run.json names: see :func:`checkout_notebook`); the new run is an ordinary
``harness run`` of them, whose run.json names the original (``rerun_of``), archived under
your own data folder (``$HARNESS_DATA`` or the project's ``data/``), never beside the
original: a run folder from elsewhere (a colleague's /tmp/share) sits in folders someone
else may change. A run on machines is rerun on them only with ``--inventory`` named on the
command line: the inventory path in run.json is never used (a crafted one could name an
inventory that reconfigures this machine's own network card). Before it
starts, a warning for each way this machine now differs from the original's (git commit
or uncommitted changes, kernel); after it, one if the placement (host or VM, scaling)
came out differently.
The original is only read.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from ..archive.archive import Run, project_root
from ..errors import SpecError


def checkout_notebook(original: Run) -> tuple[Path, str | None]:
    """This checkout's notebook of the original's study, and a note if its name differs.

    run.json's notebook path is never opened: it names a folder of the machine that made
    the run (the reference runs name /tmp/ref/...), and a run folder from elsewhere could
    name any file, whose metadata would then choose a module to import as root. Only the
    notebooks under this checkout's ``notebooks/`` are candidates, matched by the study
    their metadata names; the recorded file name picks among several."""
    meta = original.meta
    study, named = meta.get("study"), str(meta.get("notebook"))
    folder = project_root() / "notebooks"
    found = []
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" not in path.parts and not path.is_symlink() \
                and _study_of(path) == study:
            found.append(path)
    here = _inside_checkout(named)
    if here is not None and _study_of(here) == study:
        return here, None
    wanted = PurePath(named).name
    same = [p for p in found if p.name == wanted]
    if same:
        return same[0], None
    if len(found) == 1:
        return found[0], (f"the original ran notebook {named}; this checkout's notebook of "
                          f"study {study} is {found[0].relative_to(project_root())}")
    names = ", ".join(str(p.relative_to(project_root())) for p in found) or "none"
    raise SpecError(f"run {original.run_id} ran notebook {named} of study {study!r}; this "
                    f"checkout's notebooks/ has no notebook of that name (notebooks of study "
                    f"{study!r}: {names})",
                    "check out the run's commit (its notebook is found by study in "
                    "notebooks/), or run a notebook yourself: harness run NOTEBOOK -f "
                    "PARAMS.yaml")


def _inside_checkout(named: str) -> Path | None:
    """A relative path (as newer run.json files write) to a notebook file of this checkout:
    no '..' out of it, no symlink on the way; else None."""
    if PurePath(named).is_absolute() or PurePath(named).suffix != ".ipynb":
        return None
    root = project_root().resolve()
    path = Path(os.path.normpath(root / named))
    if not path.is_relative_to(root) or path.resolve() != path or not path.is_file():
        return None
    return path


def _study_of(notebook: Path) -> str | None:
    """The study a notebook's metadata names (read as JSON, nothing imported)."""
    from ..studies.registry import notebook_metadata

    try:
        return notebook_metadata(notebook).get("study")
    except SpecError:
        return None


def _check_shape(original: Run, meta) -> None:
    """run.json as the harness writes it: a mapping, its study and notebook text, its
    parameters and provenance mappings. A run folder from elsewhere may hold anything there;
    each is one error naming the field, before anything is read from it."""
    def bad(what: str) -> SpecError:
        return SpecError(f"run {original.run_id}: run.json {what}",
                         "a run.json the harness wrote has none of this; rerun a run made "
                         "here, or run its notebook yourself: harness run NOTEBOOK -f PARAMS.yaml")

    if not isinstance(meta, dict):
        raise bad("is not a mapping")
    for name, kind in (("study", str), ("notebook", str), ("parameters", dict),
                       ("provenance", dict), ("placement", dict)):
        if meta.get(name) is not None and not isinstance(meta[name], kind):
            raise bad(f"field {name!r} is not a {'mapping' if kind is dict else 'text'}: "
                      f"{meta[name]!r:.80}")
    for outer, inner in (("provenance", "git"), ("provenance", "controller"),
                         ("placement", "scaling")):
        value = (meta.get(outer) or {}).get(inner)
        if value is not None and not isinstance(value, dict):
            raise bad(f"field '{outer}.{inner}' is not a mapping: {value!r:.80}")


@dataclass(frozen=True)
class RerunPlan:
    original: Run
    notebook: Path
    parameters: dict
    warnings: list[str] = field(default_factory=list)


def plan(original: Run, inventory: str | None = None) -> RerunPlan:
    """What a rerun of ``original`` runs, checked before anything starts; ``inventory``: the
    machines to run on, as named on the command line (never run.json's)."""
    from ..archive.provenance import git_state
    from .execute import HARNESS_PARAMETERS, check_parameters

    try:
        meta = original.meta
    except (ValueError, OSError) as exc:  # not JSON, not UTF-8, not a file
        raise SpecError(f"run {original.run_id}: its run.json cannot be read ({exc})",
                        "rerun a run folder the harness made") from None
    _check_shape(original, meta)
    if not meta.get("notebook"):
        raise SpecError(f"run {original.run_id} names no notebook (a run made by a script, or "
                        "by a notebook whose file was not found)",
                        "run its study's notebook with the parameters of its run.json: "
                        "harness run NOTEBOOK -f PARAMS.yaml")
    notebook, moved = checkout_notebook(original)
    recorded = (meta.get("parameters") or {}).get("inventory")
    if recorded and not inventory:
        raise SpecError(f"run {original.run_id} ran on the machines of an inventory "
                        f"(its run.json says {str(recorded)!r}); a rerun runs on machines only "
                        "when you name their inventory yourself",
                        f"harness rerun {original.run_id} --inventory FILE (run.json's path is "
                        "never used: a run folder from elsewhere could name any file)")
    if inventory == "slurm":
        raise SpecError("harness rerun --inventory slurm: a rerun does not run inside a Slurm "
                        "allocation", "submit the notebook with its parameters: harness run "
                        "NOTEBOOK -f PARAMS.yaml --slurm \"...\"")
    given = {k: v for k, v in (meta.get("parameters") or {}).items()
             if k not in HARNESS_PARAMETERS}
    if inventory:
        given["inventory"] = inventory
    check_parameters(notebook.resolve(), given)
    warnings = [moved] if moved else []
    if inventory and not recorded:
        warnings.append(f"the original ran on this machine; the rerun runs on the machines of "
                        f"{inventory}")
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


def rerun(original: Run, progress: bool = False, warn=print, inventory: str | None = None):
    """Run the plan into this user's data folder (:func:`~harness.archive.archive.data_root`);
    returns the new run's :class:`~harness.run.execute.NotebookRun`."""
    from .execute import run_notebook

    todo = plan(original, inventory)
    for warning in todo.warnings:
        warn(f"warning: {warning}")
    result = run_notebook(todo.notebook, todo.parameters, root=None,
                          progress=progress, note={"rerun_of": original.run_id})
    moved = placement_warning(original, result.run)
    if moved:
        warn(f"warning: {moved}")
    return result
