"""The order of a run's undo, and what is tried again (:meth:`harness.journal.journal.Journal.undo_all`).

Newest change first, so that each is undone in the state it was made in. Three things
bend that order, each for a measured reason:

* Changes inside a namespace this undo deletes (links, qdiscs, routes, per-namespace
  sysctls: kinds registered ``gone_with_namespace``) go with it and are marked undone once
  their namespace is. Every mark goes to disk in one write at the end: an fsync per mark
  took 0.4-0.8 s of a 48-host star's teardown (2026-11-27). A crash before that leaves
  them pending, and a second undo finds their namespace gone. One whose namespace was
  not deleted after all is a failure: still there.
* Consecutive changes of a kind with a batch handler on one node (a lab's namespaces) are
  undone by one call: one command instead of one round trip each into an emulated VM.
* A change found still there (:class:`~harness.journal.undo_left.UndoLeft`) is tried once
  more at the end, newest first: what held it may have gone with an older change's undo
  (a sender SIGKILLed at 0.01 CPUs leaves slowly until its cgroup's undo lifts the limit;
  issue 40).

The undo of one change, the refusal of a record of another machine or boot, and the
marks themselves are the journal's: this module only orders them, through
:class:`UndoingJournal`, and imports nothing of :mod:`harness.journal.journal`.
"""

from __future__ import annotations

import json
from typing import Protocol

from ..nodes import Node
from .file import Entry
from .signals import signals_deferred
from .trust import record_trust
from .undo_left import UndoLeft
from .undo_registry import _BATCH_HANDLERS, _GONE_WITH_NAMESPACE


class UndoingJournal(Protocol):
    """What the order asks of the journal whose changes it undoes."""

    def refusal(self, entry: Entry) -> str | None: ...
    def node_for(self, desc: dict) -> Node: ...
    def undo(self, entry: Entry, mark: bool = True) -> None: ...
    def undo_failed(self, entry: Entry, error: BaseException | str) -> None: ...
    def mark_undone_many(self, entries: list[Entry]) -> None: ...


def undo_newest_first(journal: UndoingJournal, batch: list[Entry]) -> list[str]:
    """Undo ``batch`` (pending entries of ``journal``, oldest first) newest first, keeping
    going past failures; return them, one line each (none: everything is undone). Ctrl-C is
    held meanwhile (:func:`~harness.journal.signals.signals_deferred`)."""
    return _Order(journal, batch).run()


def _netns_key(parent: dict, name) -> tuple[str, object]:
    """A namespace by the node it was made on and its name (a dict key)."""
    return json.dumps(parent, sort_keys=True), name


class _Order:
    """One undo of a batch: what is done, what waits for its namespace, what failed."""

    def __init__(self, journal: UndoingJournal, batch: list[Entry]):
        self.journal, self.batch = journal, batch
        self.failures: list[str] = []
        self.again: list[tuple[Entry, int]] = []  # found still there: tried once more at the end
        # namespaces deleted in this batch, and the changes inside them waiting to go with them
        self.doomed = {_netns_key(e.node, e.data.get("name"))
                       for e in batch if e.kind == "netns" and journal.refusal(e) is None}
        self.inside: dict[tuple[str, object], list[Entry]] = {}
        self.marks: list[Entry] = []  # undone, written to disk in one go at the end
        self.group: list[Entry] = []  # consecutive entries undone by one batch handler

    def run(self) -> list[str]:
        with signals_deferred():
            try:
                for entry in reversed(self.batch):
                    try:
                        if entry.kind in _GONE_WITH_NAMESPACE \
                                and entry.node.get("type") == "netns" \
                                and _netns_key(entry.node["parent"],
                                               entry.node["netns"]) in self.doomed:
                            self.inside.setdefault(_netns_key(entry.node["parent"],
                                                              entry.node["netns"]), []).append(entry)
                            continue
                        if entry.kind in _BATCH_HANDLERS:
                            if self.group and (self.group[0].kind != entry.kind
                                               or self.group[0].node != entry.node):
                                self._flush_group()
                            self.group.append(entry)
                            continue
                        self._flush_group()
                        self.journal.undo(entry, mark=False)
                        self._undone([entry])
                    except Exception as exc:  # keep going: undo as much as possible
                        self.failures.append(f"{entry.kind} {entry.data}: {exc}")
                        if isinstance(exc, UndoLeft):
                            self.again.append((entry, len(self.failures) - 1))
                self._flush_group()
                self._try_again()
            finally:
                self.journal.mark_undone_many(self.marks)
        for entries in self.inside.values():  # their namespace was not deleted: still there
            for e in entries:
                self.failures.append(f"{e.kind} {e.data}: not undone, its namespace was not deleted")
                self.journal.undo_failed(e, "not undone: its namespace was not deleted")
        return self.failures

    def _undone(self, entries: list[Entry]) -> None:
        """Mark ``entries`` undone (in memory; on disk at the end), and with a namespace the
        changes that went with it."""
        for e in entries:
            e.undone = True
            self.marks.append(e)
            if e.kind == "netns":
                self._undone(self.inside.pop(_netns_key(e.node, e.data.get("name")), []))

    def _flush_group(self) -> None:
        """Undo the entries gathered for one batch handler (none refused) in one call."""
        group = self.group
        if not group:
            return
        for e in list(group):
            reason = self.journal.refusal(e)
            if reason is not None:
                self.failures.append(f"{e.kind} record {e.seq} not undone here: {reason}")
                group.remove(e)
        if not group:
            return
        try:
            with record_trust(any(e.loaded for e in group)):
                _BATCH_HANDLERS[group[0].kind](self.journal.node_for(group[0].node),
                                               [e.data for e in group])
            self._undone(list(group))
        except Exception as exc:
            self.failures.append(f"{group[0].kind} {[e.data for e in group]}: {exc}")
            for e in group:
                self.journal.undo_failed(e, exc)
        group.clear()

    def _try_again(self) -> None:
        """Once more, newest first, each change found still there; its failure line is
        replaced by the second try's, or dropped if that one undid it."""
        failures = self.failures
        for entry, index in self.again:
            try:
                self.journal.undo(entry, mark=False)
                self._undone([entry])
                failures[index] = ""
            except Exception as exc:  # noqa: BLE001 -- still there: reported below
                failures[index] = f"{entry.kind} {entry.data}: {exc}"
        failures[:] = [f for f in failures if f]
