"""How a run inside a Slurm job ends when Slurm ends it: one clear line, no traceback.

``scancel`` and a time limit send SIGTERM to every process of the job step at once (then
SIGKILL after the cluster's KillWait): the harness, which unwinds like Ctrl-C and undoes the
run's journal, and the notebook's kernel, which dies. The kernel's death then surfaced in
the job's log as noise after the harness's own line: nbclient's "Kernel died while waiting
for execute reply." and, when the interpreter exits, asyncio's "Task exception was never
retrieved" with a traceback of the abandoned cell task (``DeadKernelError``, or a
``ZMQError`` when the harness closed the kernel's channels first; both seen in the test
cluster's job logs, 2026-11-26/27). The run's outcome is already recorded (run.json's
status and error); those lines say nothing more, so they are dropped, and the log ends with
one line saying what happened to the run and to its changes.
"""

from __future__ import annotations

import logging

from .archive import Run

#: The messages dropped, each only for an exception of a kernel that is gone.
ABANDONED_TASK = "Task exception was never retrieved"
KERNEL_DIED = "Kernel died while waiting for execute reply."


def kernel_gone(exc: BaseException | None) -> bool:
    """An exception that only says the kernel or its channels went away (by class name, so
    neither nbclient nor zmq is imported here)."""
    if exc is None:
        return False
    names = {f"{c.__module__}.{c.__name__}" for c in type(exc).__mro__}
    return "nbclient.exceptions.DeadKernelError" in names or \
        any(n.startswith("zmq.") and n.endswith("ZMQError") for n in names)


class KernelGoneFilter(logging.Filter):
    """Drops the two messages above; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message == KERNEL_DIED:
            return False
        if message.startswith(ABANDONED_TASK):
            return not kernel_gone(record.exc_info[1] if record.exc_info else None)
        return True


def quiet_kernel_death() -> None:
    """Install the filter for the rest of this process (asyncio logs the abandoned task only
    when the interpreter exits, after the run has ended). Safe to call again."""
    for name in ("asyncio", "papermill"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, KernelGoneFilter) for f in logger.filters):
            logger.addFilter(KernelGoneFilter())


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
