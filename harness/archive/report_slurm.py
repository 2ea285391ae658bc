"""The report's "Slurm job" rows, from run.json's ``slurm`` block (harness/commands/slurm.py).

A run made inside a Slurm job records the job (id, array job and task, node list, partition,
cluster), which allocated node took which role, and the sbatch script the harness wrote.
The report shows them in its provenance section so a reader can find the job in the
cluster's own records (``sacct -j``), its log, and the options it ran with, without opening
run.json. The script itself stays in run.json (``slurm.script``) and in
``DATA/slurm/submissions/JOBID.json``; the report lists its ``#SBATCH`` options, the user's
apart from those the harness sets itself.
"""

from __future__ import annotations

import shlex

#: ``#SBATCH`` options the harness writes into every script (harness/slurm/sbatch.py JobScript).
HARNESS_SET = ("--job-name", "--nodes", "--exclusive", "--output", "--array")


def sbatch_options(script: str) -> tuple[list[str], list[str]]:
    """The script's ``#SBATCH`` options: (set by the harness, given by the user)."""
    ours, theirs = [], []
    for line in script.splitlines():
        if not line.startswith("#SBATCH "):
            continue
        option = line[len("#SBATCH "):].strip()
        (ours if option.split("=", 1)[0] in HARNESS_SET else theirs).append(option)
    return ours, theirs


def job_name(slurm: dict) -> str:
    """``JOB`` or ``ARRAYJOB_TASK``: how the cluster's tools and our log name it."""
    if slurm.get("array_job_id") is not None and slurm.get("array_task_id") is not None:
        return f"{slurm['array_job_id']}_{slurm['array_task_id']}"
    return str(slurm.get("job_id") or "")


def log_path(slurm: dict, ours: list[str]) -> str | None:
    """The job's log, from the script's ``--output`` with Slurm's ``%j``/``%A``/``%a`` filled."""
    for option in ours:
        name, _, value = option.partition("=")
        if name == "--output" and value:
            return (value.replace("%A", str(slurm.get("array_job_id", "")))
                    .replace("%a", str(slurm.get("array_task_id", "")))
                    .replace("%j", str(slurm.get("job_id", ""))))
    return None


def slurm_rows(meta: dict) -> dict:
    """One row per fact of the run's Slurm job; {} for a run made outside Slurm."""
    slurm = meta.get("slurm")
    if not isinstance(slurm, dict) or not slurm:
        return {}
    script = slurm.get("script") or ""
    ours, theirs = sbatch_options(script)
    name = job_name(slurm)
    rows = {
        "job": name + ("" if name == str(slurm.get("job_id") or "")
                       else f" (job id {slurm.get('job_id')})"),
        "array": (f"job {slurm['array_job_id']}, task {slurm['array_task_id']}"
                  if slurm.get("array_job_id") is not None else "not an array"),
        "cluster": slurm.get("cluster"),
        "partition": slurm.get("partition"),
        "node list": slurm.get("node_list"),
        "roles (allocation order)": ", ".join(f"{role} on {host}" for role, host in
                                              (slurm.get("roles") or {}).items()) or None,
        "sbatch options given (--slurm)": " ".join(shlex.quote(o) for o in theirs) or "none",
        "sbatch options set by the harness": " ".join(shlex.quote(o) for o in ours) or None,
        "sbatch script": (f"written by the harness, {len(script.splitlines())} lines: in "
                          f"run.json (slurm.script) and in the data folder's slurm/submissions/"
                          f"{slurm.get('array_job_id') or slurm.get('job_id')}.json"
                          if script else "none: an interactive allocation (salloc)"),
        "job log": log_path(slurm, ours),
    }
    return {k: v for k, v in rows.items() if v is not None}
