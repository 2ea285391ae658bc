"""The records of the run being undone, for a handler that must know them.

A handler takes a node and one record's data; the cgroup's handler also needs the run's
other records: a process the run started inside the cgroup and that is still leaving it is
stopped by its own record (pid, start tick, command), never by pattern and never one the run
did not start (issue 40). :meth:`harness.journal.journal.Journal.undo` sets them around each
handler call; outside an undo there are none.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

_records: contextvars.ContextVar[tuple] = contextvars.ContextVar("undo_records", default=())


@contextmanager
def undoing(entries: Iterable) -> Iterator[None]:
    """Inside the block, :func:`recorded` answers from ``entries`` (the journal's)."""
    token = _records.set(tuple(entries))
    try:
        yield
    finally:
        _records.reset(token)


def recorded(kind: str, node: dict) -> list[dict]:
    """The data of every record of ``kind`` on ``node`` (its description) of the run being
    undone, undone or not (a process stopped by its record may still be leaving), newest
    first."""
    return [e.data for e in reversed(_records.get()) if e.kind == kind and e.node == node]
