"""What Slurm says about jobs the harness submitted: one state per job or array task.

One ``scontrol show job -o ID`` per submission: it lists every task of an array that
slurmctld still knows (running, pending -- pending tasks collapsed into a range such as
``ArrayTaskId=2-3`` -- and ended ones for ``MinJobAge``, 300 s by default), each with its
state, exit code, reason and log path. sacct is not used: it needs the accounting
database, which many small clusters (and the test cluster) do not run. A job slurmctld no
longer knows is judged from the archive (a complete run, or the run it left incomplete).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from .sbatch import SlurmError

PENDING_STATES = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                  "RESV_DEL_HOLD", "SUSPENDED", "STOPPED", "SPECIAL_EXIT"}
RUNNING_STATES = {"RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING"}
FIELD = re.compile(r"(\w+)=(\S*)")


@dataclass(frozen=True)
class TaskState:
    """One job (task None) or array task as slurmctld reports it."""

    job_id: str
    task: int | None
    state: str  # Slurm's JobState: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    exit_code: str = ""
    reason: str = ""
    log: str = ""
    nodes: str = ""

    @property
    def phase(self) -> str:
        """pending, running or ended (the archive then says complete or failed)."""
        if self.state in PENDING_STATES:
            return "pending"
        if self.state in RUNNING_STATES:
            return "running"
        return "ended"

    def describe(self) -> str:
        name = self.job_id if self.task is None else f"{self.job_id}_{self.task}"
        extra = [f"exit {self.exit_code}" if self.exit_code else "",
                 f"reason {self.reason}" if self.reason not in ("", "None") else ""]
        return f"job {name} {self.state}" + "".join(f", {e}" for e in extra if e)


def _tasks(spec: str) -> list[int]:
    """``2-3``, ``0,2-5%2`` or ``4`` -> task indices (the ``%N`` limit is dropped)."""
    out: list[int] = []
    for part in spec.split("%")[0].split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            step = 1
            if ":" in high:
                high, step_text = high.split(":", 1)
                step = int(step_text)
            out += list(range(int(low), int(high) + 1, step))
        elif part.strip():
            out.append(int(part))
    return out


def parse_show_job(text: str) -> list[TaskState]:
    """``scontrol show job -o`` lines -> one TaskState per job or array task."""
    states = []
    for line in text.splitlines():
        fields = dict(FIELD.findall(line))
        if "JobId" not in fields:
            continue
        common = dict(state=fields.get("JobState", ""), exit_code=fields.get("ExitCode", ""),
                      reason=fields.get("Reason", ""), log=fields.get("StdOut", ""),
                      nodes=fields.get("NodeList", "") if fields.get("NodeList") != "(null)"
                      else "")
        array = fields.get("ArrayJobId")
        if array and fields.get("ArrayTaskId"):
            for task in _tasks(fields["ArrayTaskId"]):
                log = common["log"].replace("%A", array).replace("%a", str(task))
                states.append(TaskState(array, task, **{**common, "log": log}))
        else:
            states.append(TaskState(fields["JobId"], None, **{
                **common, "log": common["log"].replace("%j", fields["JobId"])}))
    return states


def job_states(job_id: str) -> list[TaskState]:
    """Every task slurmctld knows of job (or array) ``job_id``; [] once it forgot the job."""
    try:
        result = subprocess.run(["scontrol", "show", "job", "-o", str(job_id)],
                                capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise SlurmError("scontrol is not on PATH: this machine is not a Slurm submit host",
                         "ask about jobs from a login node of the cluster") from None
    except subprocess.TimeoutExpired:
        raise SlurmError("scontrol did not answer in 30 s", "check slurmctld: scontrol ping") \
            from None
    if result.returncode != 0:
        if "Invalid job id" in result.stderr:
            return []
        raise SlurmError(f"scontrol show job {job_id} failed: {result.stderr.strip()}")
    return parse_show_job(result.stdout)

