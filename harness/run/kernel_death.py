"""A notebook kernel's death after SIGTERM is no news: the log lines it leaves are dropped.

``scancel``, a Slurm time limit or ``kill`` send SIGTERM to the harness and to the notebook's
kernel at once. The run's outcome is recorded by the harness (run.json's status and error,
the journal's undo); what the kernel's death then prints says nothing more. Three such
lines were seen in the test cluster's job logs (2026-11-26/27):

- nbclient's "Kernel died while waiting for execute reply." (the papermill side);
- asyncio's "Task exception was never retrieved" with a traceback of the abandoned cell
  task (``DeadKernelError``, or a ``ZMQError`` when the harness closed the kernel's
  channels first), printed when the interpreter exits;
- inside the kernel, ipykernel's "Exception in message handler:" with a ``ZMQError``
  ("Socket operation on non-socket"): the cell's reply, sent after the undo, finds the
  channels the shutdown request closed meanwhile (CI of 2026-11-27). Ctrl-C leaves the same
  20-line traceback on the user's terminal (2026-11-30): the harness's process group gets
  SIGINT, the kernel (its own session) does not, and nbclient interrupts it and then asks it
  to shut down, so the interrupted cell's reply finds no channel either.

Each is dropped only when its exception is one of a kernel or channel that is gone; the
same messages with any other exception still reach the log.
"""

from __future__ import annotations

import logging

ABANDONED_TASK = "Task exception was never retrieved"
KERNEL_DIED = "Kernel died while waiting for execute reply."
HANDLER_FAILED = "Exception in message handler:"

#: The loggers these messages come from: the harness's (asyncio, papermill) and the
#: kernel's own (ipykernel logs through its traitlets application, "IPKernelApp").
HARNESS_LOGGERS = ("asyncio", "papermill")
KERNEL_LOGGERS = ("IPKernelApp",)


def kernel_gone(exc: BaseException | None) -> bool:
    """An exception that only says the kernel or its channels went away (by class name, so
    neither nbclient nor zmq is imported here)."""
    if exc is None:
        return False
    names = {f"{c.__module__}.{c.__name__}" for c in type(exc).__mro__}
    return "nbclient.exceptions.DeadKernelError" in names or \
        any(n.startswith("zmq.") and n.endswith("ZMQError") for n in names)


class KernelGoneFilter(logging.Filter):
    """Drops the three messages above for a gone kernel; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message == KERNEL_DIED:
            return False
        if message.startswith(ABANDONED_TASK) or message.startswith(HANDLER_FAILED):
            return not kernel_gone(record.exc_info[1] if record.exc_info else None)
        return True


def _install(names: tuple[str, ...]) -> None:
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, KernelGoneFilter) for f in logger.filters):
            logger.addFilter(KernelGoneFilter())


def quiet_kernel_death() -> None:
    """In the harness's process, for the rest of it (asyncio logs the abandoned task only
    when the interpreter exits, after the run has ended). Safe to call again."""
    _install(HARNESS_LOGGERS)


def quiet_own_death() -> None:
    """In a kernel that SIGTERM or an interrupt is ending: its last reply may find its channels
    closed. Safe to call again."""
    _install(KERNEL_LOGGERS)
