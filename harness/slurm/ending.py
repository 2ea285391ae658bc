"""How a run inside a Slurm job ends when Slurm ends it: one clear line, no traceback.

``scancel`` and a time limit send SIGTERM to every process of the job step at once (then
SIGKILL after the cluster's KillWait): the harness, which unwinds like Ctrl-C and undoes the
run's journal, and the notebook's kernel, which dies. What the kernel's death prints is
dropped (:mod:`harness.run.kernel_death`), and the log ends with one line saying what happened
to the run and to its changes.
"""

from __future__ import annotations

from ..archive.archive import Run


def ending_line(run) -> str:
    """The job log's last line after SIGTERM: the run, its status, what was undone."""
    if run is None:
        return ("harness: ended by SIGTERM (scancel or the job's time limit) before a run "
                "started: nothing was changed")
    run = Run(run.path)  # read again: the journal as the undo left it
    made = run.journal.entries()
    left = run.journal.pending()
    undone = (f"all {len(made)} recorded change(s) undone" if not left else
              f"{len(made) - len(left)} of {len(made)} recorded change(s) undone, "
              f"{len(left)} left: harness lab clean --data {run.path.parents[2]} finishes them")
    return (f"harness: run {run.path} ended by SIGTERM (scancel or the job's time limit): "
            f"{run.meta.get('status')}; {undone}")
