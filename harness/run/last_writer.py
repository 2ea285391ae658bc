"""The harness undoes a run's journal only once no other process still writes it.

``scancel`` and a time limit send SIGTERM to the harness and to the notebook's kernel at once.
The kernel, the journal's other writer, may be halfway through a change then (taking the lock
of an inventory machine over SSH, say): if the harness undid the journal while the kernel
still ran, a record the kernel wrote a moment later stayed pending, its process left running
on the node (CI run of 2026-11-29: the lock on the second Slurm node). So the harness first
waits for the kernel to end, its own undo included, and ends it (SIGKILL) when the wait is
over; only a child of this process is ever signalled, named by pid and start time.
"""

from __future__ import annotations

import os
import signal
import time

from ..journal.journal import Journal
from ..nodes.procfs import read_stat


def _running(pids: list[int]) -> list[int]:
    """Those of ``pids`` that still run: an exited child not yet reaped (a zombie) writes no
    more."""
    out = []
    for pid in pids:
        stat = read_stat(pid)
        if stat is not None and not stat.ended:
            out.append(pid)
    return out


def outlive_other_writers(journal: Journal, grace_s: float = 10.0,
                          poll_s: float = 0.05) -> list[int]:
    """Wait up to ``grace_s`` for every other live writer of ``journal`` to end, then SIGKILL
    those of them that are this process's children; the pids killed (empty: none was needed).

    A writer that is not a child of this process (a second harness on the same run, which the
    run folder's lock refuses anyway) is waited for, never signalled.
    """
    deadline = time.monotonic() + grace_s
    others = _running(journal.live_writers())
    while others and time.monotonic() < deadline:
        time.sleep(poll_s)
        others = _running(others)
    me = os.getpid()
    killed = []
    for pid in others:
        stat = read_stat(pid)
        if stat is None or stat.ended or stat.ppid != me:
            continue
        # pid and start time: the child is not reaped, so its pid cannot name another process
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
    end = time.monotonic() + 5.0
    while _running(killed) and time.monotonic() < end:
        time.sleep(poll_s)
    return killed
