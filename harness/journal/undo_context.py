"""The records of the run being undone, for a handler that must know them.

A handler takes a node and one record's data; the cgroup's handler also needs the run's
other records: a process the run started inside the cgroup and that is still leaving it is
stopped by its own record (pid, start tick, command; a tracked command by its stop file),
never by pattern and never one the run did not start (issue 40).
:meth:`harness.journal.journal.Journal.undo` sets them around each handler call; outside an
undo there are none.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

_records: contextvars.ContextVar[tuple] = contextvars.ContextVar("undo_records", default=((), 0))


@contextmanager
def undoing(entries: Iterable, current: int) -> Iterator[None]:
    """Inside the block, :func:`newer` answers from ``entries`` (the journal's), ``current``
    being the seq of the record whose undo runs."""
    token = _records.set((tuple(entries), current))
    try:
        yield
    finally:
        _records.reset(token)


def newer(kind: str, machine: dict) -> list[tuple[dict, dict]]:
    """(node, data) of every record of ``kind`` made after the one being undone on
    ``machine`` (its description) or in a namespace of it, undone or not (a process stopped
    by its record may still be leaving), newest first."""
    entries, current = _records.get()
    return [(e.node, e.data) for e in reversed(entries)
            if e.kind == kind and e.seq > current and _on(e.node, machine)]


def _on(node: dict, machine: dict) -> bool:
    """Whether ``node`` (a description) is ``machine`` or a namespace under it."""
    while isinstance(node, dict):
        if node == machine:
            return True
        node = node.get("parent")
    return False
