"""Submitting runs and sweeps to Slurm, and following them: ``--slurm``, ``--wait``, ``--status``.

A submission is recorded (after sbatch accepted it, never before) as
``DATA/slurm/submissions/JOBID.json``: the sweep file or notebook, each array task's point,
the script. ``--status`` and ``--wait`` read those records, ask slurmctld about their jobs
(``harness.slurm.jobs``) and look in the archive: a point is *complete* when it has a
complete run (wherever it ran), *pending* or *running* while its newest job is, and
*failed* when that job ended without a complete run -- reported with Slurm's state, exit
code, the run's error when it left one, and the tail of the job's log. Submitting a sweep
again submits only the points that have neither a complete run nor a job still queued or
running.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..archive.archive import data_root, list_runs
from ..errors import SpecError
from .jobs import TaskState, job_states
from .sbatch import JobScript, SbatchOptions, check_data_folder, point_arguments, submit, test_only

POLL_SECONDS = 5.0
LOG_TAIL_LINES = 15


def submissions_dir(root: Path | None = None) -> Path:
    return (root or data_root()) / "slurm" / "submissions"


@dataclass(frozen=True)
class Submission:
    job_id: str
    source: str  # the sweep file (or the notebook, for one run)
    notebook: str
    points: list[dict]  # the array's task i ran points[i]
    script: str
    submitted: str

    def save(self, root: Path | None = None) -> Path:
        folder = submissions_dir(root)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.job_id}.json"
        # A fresh, unguessable file made exclusively in the folder (mkstemp: O_EXCL, 0600),
        # then renamed over the record: a fixed JOBID.tmp could be a link someone planted in
        # a shared data folder, and writing it would write whatever file the link names.
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{self.job_id}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps(self.__dict__, indent=1, default=str))
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def all_for(cls, source: Path, root: Path | None = None) -> list[Submission]:
        """This sweep's (or notebook's) submissions, oldest first."""
        folder = submissions_dir(root)
        found = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if Path(data.get("source", "")).resolve() == source.resolve():
                found.append(cls(**data))
        return sorted(found, key=lambda s: s.submitted)


def template_of(sweep, given: str | None) -> tuple[dict, str]:
    """The inventory template (data and YAML text): ``--inventory-template`` or the sweep's."""
    import yaml

    from .allocation import load_template

    if given:
        data = load_template(given)
    elif sweep is not None and sweep.inventory_template is not None:
        data = sweep.inventory_template
    else:
        raise SpecError("--slurm needs an inventory template: how the allocated nodes' devices "
                        "and addresses map onto the study's interfaces",
                        "add inventory_template: to the sweep file or give "
                        "--inventory-template FILE (see harness/slurm/allocation.py)")
    return data, yaml.safe_dump(data, sort_keys=False)


def check_points(notebook: Path, points: list[dict], template: dict) -> tuple[object, int]:
    """Each point's parameters and the template against the study, with documentation
    addresses (192.0.2.0/24) standing in for the nodes Slurm will give: all refusals come
    now, before anything is submitted. Returns the study and its number of machine roles."""
    from ..run.execute import check_parameters
    from .allocation import AllocatedHost, build, roles, write_inventory

    study = None
    count = 0
    with tempfile.TemporaryDirectory(prefix="harness-slurm-check-") as tmp:
        for point in points:
            given = {k: v for k, v in point.items() if k != "inventory"}
            study, params = check_parameters(notebook, given)
            topology = study.topology(params)
            count = max(count, len(roles(topology, template)))
            hosts = [AllocatedHost(f"node{i}", f"192.0.2.{i + 1}") for i in range(count)]
            inventory = write_inventory(build(topology, template, hosts), Path(tmp))
            check_parameters(notebook, {**given, "inventory": str(inventory)})
    return study, count


def job_script(notebook: Path, points: list[dict], options: str, template_text: str,
               nodes: int, name: str, share_machine: bool, root: Path | None = None) -> JobScript:
    return JobScript(name=name, notebook=notebook, nodes=nodes,
                     options=SbatchOptions.parse(options),
                     tasks=tuple(point_arguments(p) for p in points),
                     data=(root or data_root()).resolve(), template=template_text,
                     share_machine=share_machine)


def submit_points(source: Path, notebook: Path, points: list[dict], options: str,
                  template: tuple[dict, str], share_machine: bool, dry_run: bool,
                  root: Path | None = None) -> tuple[str | None, str]:
    """Check, then (unless ``dry_run``) submit one job (one point) or one array; returns the
    job id (None for a dry run) and the script."""
    sbatch_options = SbatchOptions.parse(options)  # our own refusals first, then Slurm's
    study, nodes = check_points(notebook, points, template[0])
    script = job_script(notebook, points, " ".join(_quoted(sbatch_options.args)), template[1],
                        nodes, f"harness-{study.name}", share_machine, root)
    text = script.text()
    if dry_run:
        return None, text
    check_data_folder(script.data)  # ours first, then Slurm's own refusal
    test_only(text)  # Slurm's own refusal, before anything is submitted or written
    script.log_dir.mkdir(parents=True, exist_ok=True)
    job_id = submit(text)
    Submission(job_id, str(source.resolve()), str(notebook), points, text,
               datetime.now(UTC).isoformat(timespec="milliseconds")).save(root)
    return job_id, text


def _quoted(args) -> list[str]:
    import shlex

    return [shlex.quote(a) for a in args]


@dataclass(frozen=True)
class PointStatus:
    point: dict
    status: str  # complete, pending, running, failed, not submitted
    run: str = ""  # the complete run's folder, or the failed job's incomplete run
    job: TaskState | None = None
    detail: str = ""


def sweep_status(sweep_path: Path, root: Path | None = None) -> list[PointStatus]:
    """Each point of the sweep: complete, pending, running, failed or not submitted."""
    from ..run.sweep import Sweep, _same, point_runs

    sweep = Sweep.load(sweep_path)
    submissions = Submission.all_for(sweep_path, root)
    states: dict[str, list[TaskState]] = {}  # asked only for jobs of points not complete
    by_job = runs_by_job(root)
    out = []
    for point, run in point_runs(sweep, root):
        if run is not None:
            out.append(PointStatus(point, "complete", str(run.path)))
            continue
        found = None
        for sub in reversed(submissions):  # the newest submission of this point decides
            for task, submitted in enumerate(sub.points):
                if _same(submitted, point):
                    found = (sub, task if len(sub.points) > 1 else None)
                    break
            if found:
                break
        if found is None:
            out.append(PointStatus(point, "not submitted"))
            continue
        sub, task = found
        if sub.job_id not in states:
            states[sub.job_id] = job_states(sub.job_id)
        state = next((s for s in states[sub.job_id] if s.task == task), None)
        key = sub.job_id if task is None else f"{sub.job_id}_{task}"
        failed_run = by_job.get(key)
        if state is not None and state.phase in ("pending", "running"):
            out.append(PointStatus(point, state.phase, job=state))
            continue
        out.append(PointStatus(point, "failed", str(failed_run.path) if failed_run else "", state,
                               failure(key, state, failed_run, root)))
    return out


def runs_by_job(root: Path | None = None) -> dict:
    """Archived runs made by a Slurm job, by ``JOBID`` or ``ARRAYID_TASK``."""
    out = {}
    for run in list_runs(root=root):
        slurm = run.meta.get("slurm") or {}
        if "array_job_id" in slurm:
            out[f"{slurm['array_job_id']}_{slurm['array_task_id']}"] = run
        elif "job_id" in slurm:
            out[str(slurm["job_id"])] = run
    return out


def failure(key: str, state: TaskState | None, run, root: Path | None) -> str:
    lines = [state.describe() if state else f"job {key}: Slurm no longer knows it "
             "(MinJobAge passed)"]
    if run is not None:
        lines.append(f"run {run.path}: {run.meta.get('status')}: "
                     f"{(run.meta.get('error') or '').strip()[:500]}")
    log = Path(state.log) if state and state.log else \
        (root or data_root()) / "slurm" / "logs" / (f"{key}.out")
    if log.is_file():
        tail = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        lines.append(f"log {log}:")
        lines += ["  | " + line for line in tail]
    else:
        lines.append(f"log {log}: not found")
    return "\n".join(lines)


def counts(statuses: list[PointStatus]) -> dict[str, int]:
    out = {"pending": 0, "running": 0, "complete": 0, "failed": 0, "not submitted": 0}
    for s in statuses:
        out[s.status] += 1
    return out


def progress_line(name: str, statuses: list[PointStatus]) -> str:
    c = counts(statuses)
    line = (f"batch {name}: {c['pending']} pending, {c['running']} running, "
            f"{c['complete']} complete, {c['failed']} failed")
    return line + (f", {c['not submitted']} not submitted" if c["not submitted"] else "")


def follow(sweep_path: Path, root: Path | None = None, interval: float = POLL_SECONDS,
           stream=None) -> list[PointStatus]:
    """Poll until no point is pending or running, one progress line (rewritten in place on a
    terminal, a new line when it changes otherwise); the final statuses."""
    stream = stream or sys.stdout
    tty = stream.isatty()
    last = ""
    while True:
        statuses = sweep_status(sweep_path, root)
        line = progress_line(sweep_path.name, statuses)
        if tty:
            stream.write("\r" + line.ljust(len(last)))
        elif line != last:
            stream.write(line + "\n")
        stream.flush()
        last = line
        c = counts(statuses)
        if not c["pending"] and not c["running"]:
            if tty:
                stream.write("\n")
            return statuses
        time.sleep(interval)


def follow_job(job_id: str, root: Path | None = None, interval: float = POLL_SECONDS,
               stream=None) -> tuple[TaskState | None, object]:
    """Poll one job until it ends, its state on one line; (its last state, its run or None)."""
    stream = stream or sys.stdout
    last = ""
    state = None
    while True:
        states = job_states(job_id)
        state = states[0] if states else state
        line = f"job {job_id}: {state.state if state else 'unknown to Slurm'}"
        if line != last:
            stream.write(line + "\n")
            stream.flush()
        last = line
        if not states or state.phase == "ended":
            return state, runs_by_job(root).get(str(job_id))
        time.sleep(interval)
