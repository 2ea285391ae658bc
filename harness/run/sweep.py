"""Parameter sweeps over a notebook: ``harness batch SWEEP.yaml``.

A sweep file::

    notebook: notebooks/s4_mptcp.ipynb
    parameters:          # the same for every point
      profile: quick
    sweep:               # the cartesian product of these lists
      sender_cpus: [0.0, 0.5]
      path_rate_mbit: [100, 500]

Each point is one archived run. Running the sweep again skips points that already
have a complete run of the same notebook with the same parameters, so an
interrupted batch resumes where it stopped.

For ``harness batch SWEEP --slurm "OPTIONS"`` (harness/slurm/submit.py) the file may carry
``inventory_template:`` (harness/slurm/allocation.py): how each job's allocated nodes become
the study's machines. A run made in a Slurm allocation counts for the point whose parameters
it has: its inventory was the one Slurm gave it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..archive.archive import COMPLETE, Run, archived_notebook, list_runs
from ..errors import SpecError

FORMAT = "see the format in harness/run/sweep.py"
#: At most this many points (runs) in one sweep, counted before the product is built: a
#: two-line file of 9 axes with 10 values each was 10^9 points, a MemoryError after
#: filling this machine's 24 GiB. Each point is a run of minutes; 10000 is weeks already.
MAX_POINTS = 10_000


@dataclass(frozen=True)
class Sweep:
    notebook: Path
    fixed: dict
    axes: dict[str, list]
    inventory_template: dict | None = None  # for --slurm: allocation -> inventory

    @classmethod
    def load(cls, path: str | Path) -> Sweep:
        path = Path(path)
        if not path.exists():
            raise SpecError(f"sweep file {path} does not exist", "give the path of a YAML sweep")
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise SpecError(f"sweep file {path} is not valid YAML: {exc}", FORMAT) from None
        if not isinstance(data, dict) or "notebook" not in data:
            raise SpecError(f"sweep file {path} needs 'notebook:'",
                            "see the format in harness/run/sweep.py")
        unknown = set(data) - {"notebook", "parameters", "sweep", "inventory_template"}
        if unknown:
            raise SpecError(f"sweep file {path} has unknown keys {sorted(unknown)}",
                            "use notebook, parameters, sweep and inventory_template")
        template = data.get("inventory_template")
        if template is not None:
            from ..slurm.allocation import check_template

            template = check_template(template, f"{path} (inventory_template)")
        fixed = data.get("parameters") or {}
        axes = data.get("sweep") or {}
        if not isinstance(fixed, dict) or not isinstance(axes, dict):
            raise SpecError(f"sweep file {path}: parameters and sweep must be mappings", FORMAT)
        for name, values in axes.items():
            if not isinstance(values, list) or not values:
                raise SpecError(f"sweep file {path}: sweep.{name} must be a non-empty list",
                                f"write sweep: {{{name}: [value, value, ...]}}")
        count = 1
        for values in axes.values():
            count *= len(values)
        if count > MAX_POINTS:
            raise SpecError(f"sweep file {path}: {' x '.join(str(len(v)) for v in axes.values())}"
                            f" = {count} points, more than {MAX_POINTS} runs",
                            "sweep fewer values (split the sweep into files, or fix a "
                            "parameter under parameters:)")
        overlap = set(fixed) & set(axes)
        if overlap:
            raise SpecError(f"sweep file {path}: {sorted(overlap)} are both fixed and swept",
                            "keep each parameter under either parameters or sweep")
        if not isinstance(data["notebook"], str):
            raise SpecError(f"sweep file {path}: notebook must be a path", FORMAT)
        notebook = Path(data["notebook"])
        if not notebook.is_absolute():
            notebook = (path.parent / notebook) if (path.parent / notebook).exists() else notebook
        if not notebook.is_file():
            raise SpecError(f"sweep file {path}: notebook {data['notebook']} does not exist",
                            "give the notebook's path, absolute or relative to the sweep file")
        return cls(notebook.resolve(), fixed, axes, template)

    def points(self) -> list[dict]:
        names = list(self.axes)
        return [{**self.fixed, **dict(zip(names, combo))}
                for combo in itertools.product(*(self.axes[n] for n in names))]


def completed_runs(study: str, notebook: Path, root: Path | None = None) -> list[Run]:
    """Complete runs of ``study`` from ``notebook``, oldest first: by ``harness run``, or by the
    notebook itself in JupyterLab, papermill or nbclient (run.json names its source notebook)."""
    return [run for run in list_runs(study, root, COMPLETE)
            if (archived_notebook(run.meta) or Path("")).resolve() == notebook]


def completed_parameters(study: str, notebook: Path, root: Path | None = None) -> list[dict]:
    return [run_parameters(run) for run in completed_runs(study, notebook, root)]


def run_parameters(run: Run) -> dict:
    """A run's parameters as a point is matched against them: a run made in a Slurm
    allocation (run.json ``slurm``) ran on the inventory its job built from the nodes Slurm
    gave it (kept as ``slurm/inventories/JOB.yaml``); it stands for the point that names no
    inventory."""
    parameters = dict(run.meta.get("parameters", {}))
    if run.meta.get("slurm"):
        parameters.pop("inventory", None)
    return parameters


def point_runs(sweep: Sweep, root: Path | None = None) -> list[tuple[dict, Run | None]]:
    """Each point of the sweep with its newest complete run (None: not run yet)."""
    from .execute import check_parameters

    out = []
    for point in sweep.points():
        study, params = check_parameters(sweep.notebook, point)
        wanted = _wanted(params, point)
        done = [run for run in completed_runs(study.name, sweep.notebook, root)
                if _same(run_parameters(run), wanted)]
        out.append((point, done[-1] if done else None))
    return out


def _wanted(params, point: dict) -> dict:
    return {**params.to_dict(), **{k: v for k, v in point.items() if k == "inventory"}}


def run_sweep(path: str | Path, root: Path | None = None, progress: bool = True) -> list:
    from tqdm import tqdm

    from .execute import check_parameters, run_notebook

    sweep = Sweep.load(path)
    points = sweep.points()
    resolved = []
    for point in points:  # validate every point before running any
        study, params = check_parameters(sweep.notebook, point)
        resolved.append((point, study, params))
    outcomes = []
    bar = tqdm(total=len(points), desc=f"batch {Path(path).name}", unit="run",
               disable=not progress)
    for point, study, params in resolved:
        wanted = _wanted(params, point)
        if any(_same(done, wanted) for done in completed_parameters(study.name, sweep.notebook, root)):
            outcomes.append(("skipped", point, None))
            bar.update(1)
            continue
        result = run_notebook(sweep.notebook, point, root)
        outcomes.append((result.status, point, result.run.path))
        bar.update(1)
    bar.close()
    return outcomes


def _same(done: dict, wanted: dict) -> bool:
    def norm(d: dict) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()
                if k != "run_dir" and v not in (None, "")}

    return norm(done) == norm(wanted)
