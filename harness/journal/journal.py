"""A write-ahead log of every change the harness makes, and its exact undo.

Each change is appended to a JSON-lines file *before* it is made (so a crash
between the two still leaves its entry), with what is needed to undo it. Undo
runs in reverse order and tolerates things that are already gone. Because the
journal is on disk, ``harness lab clean`` can finish the undo of a run that
crashed or was killed, from that run's own journal and never by name pattern. The order
of a run's undo -- changes inside a deleted namespace gone with it, batch handlers, a
change found still there tried once more -- is :mod:`harness.journal.undo_order`; Ctrl-C
is held meanwhile (:mod:`harness.journal.signals`).

Undo handlers are registered per kind with :func:`undo_handler`; each takes
the node (rebuilt from its description) and the entry's data, and looks after it acts
(:mod:`harness.journal.undo_left`): a change still there after its undo is recorded as a
failed undo (``undo-failed``), never as undone, and stays pending for ``harness lab
clean``. Each entry names the module that registered its kind's handler, so another
process (``harness lab clean`` after a SIGKILL) imports exactly that module: no hand-kept list of
handler modules to forget to update. The registry is :mod:`harness.journal.undo_registry`; the
undo of the journal's own kinds (``process``, ``file``) is :mod:`harness.journal.handlers`.

Configuration changes (:mod:`harness.config.operation`) also carry their
record -- node, kind, target, before, after -- beside the undo data, and a
change found already made is written as a ``noted`` line with nothing to undo.
The run's configuration list is therefore a view of this file
(:meth:`Journal.configuration`), complete even when a run fails half-way.

The file -- the format of its lines (listed there), a record appended and fsynced, the
lines read back -- is :mod:`harness.journal.file`.

What is read back is trusted no further than it can be checked (issue 26): a line
that is not a sound record is reported in :attr:`Journal.problems` and skipped,
the others still count; a record is undone only on the machine and boot it
names (a journal of another machine, of an earlier boot, or written before
records named their machine is refused, saying so: see :meth:`Journal.refusal`);
its handler checks its data by kind first (:mod:`harness.journal.undo_checks`); and
only modules of the ``harness`` package that register undo handlers are
imported for it. Records this process wrote itself are its own and need none
of that. The checks themselves are :mod:`harness.journal.trust`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import HarnessError
from ..nodes import Node, node_from_description
from ..nodes.base import Command, Process
from ..nodes.procfs import process_start_ticks
from . import undo_checks, undo_context
from .file import Contents, Entry, append_records, do_line, read_contents, writer_fields
from .handlers import (
    STATE_DIRS,
    STOP_RECORDED_PROCESS,
    inside_vanished_namespace,
    remove_process_log,
    remove_recorded_file,
    stop_recorded_process,
)
from .machineid import MachineId, identity_of, local_identity
from .signals import signals_deferred
from .trust import (
    UnreadableJournal,
    machine_key,
    mismatch,
    record_trust,
    unnamed_machine,
    without_trust,
)
from .undo_order import undo_newest_first
from .undo_registry import (
    _BATCH_HANDLERS,
    _GONE_WITH_NAMESPACE,
    _HANDLERS,
    _MODULES,
    BatchUndoFn,
    UndoFn,
    batch_undo_handler,
    load_undo_handlers,
    undo_handler,
)

# Names that stood here before the trust checks, the built-in undo, the handler registry
# and the file (Entry) moved to modules of their own (2026-11-27), and the undo order and
# the held signals after them (2026-11-29): the handler modules and tests import them from
# here, and so may anyone else.
__all__ = ["_BATCH_HANDLERS", "_HANDLERS", "_MODULES", "STATE_DIRS", "STOP_RECORDED_PROCESS", "BatchUndoFn",
           "Entry", "Journal", "UndoFailed", "UndoFn", "UnreadableJournal", "batch_undo_handler",
           "load_undo_handlers", "remove_process_log", "signals_deferred", "undo_handler"]


class UndoFailed(HarnessError):
    pass


class Journal:
    """Append-only change log at ``path`` (created if missing)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._nodes: dict[str, Node] = {}
        self._owner_pid = os.getpid()
        self._identities: dict[str, MachineId | None] = {}  # machine key -> identity, recorded
        self._checked: dict[str, str | None] = {}  # machine key -> why refused (None: matches)
        self.unwritten: list[int] = []  # undone, but the disk refused to say so
        # What the file holds already (a run's own journal after a crash, `lab clean`):
        # its changes, those found already made, their writers, and the unsound lines.
        found = read_contents(self.path) if self.path.exists() else Contents()
        self._entries, self._noted = found.entries, found.noted
        self._writers, self._writer_ids = found.writers, found.writer_ids
        self.problems = found.problems  # lines that were not sound records, skipped

    # -- reading -----------------------------------------------------------
    def pending(self) -> list[Entry]:
        """Changes recorded and not yet undone, oldest first."""
        return [e for e in sorted(self._entries.values(), key=lambda e: e.seq) if not e.undone]

    def left(self) -> list[Entry]:
        """Changes whose undo ran and failed (still there, or the undo itself failed), oldest
        first: what `harness lab clean` is to finish."""
        return [e for e in self.pending() if e.undo_error is not None]

    def left_behind(self) -> list[dict]:
        """:meth:`left` for a run's record: each change's kind, node, data and why."""
        return [{"seq": e.seq, "kind": e.kind, "node": e.node.get("name"), "data": e.data,
                 "why": e.undo_error} for e in self.left()]

    def writers(self) -> set[int]:
        """Pids of the processes that recorded changes in this journal."""
        return set(self._writers)

    def live_writers(self) -> list[int]:
        """Writers of this journal that still run: same machine and boot, and the pid's start
        time (field 22 of /proc/PID/stat) the one it recorded -- a pid alone is reused. A
        writer that recorded no start time (journals before 2026-11-26) or another machine
        cannot be checked, and is not taken for alive (its records are refused anyway:
        see :meth:`refusal`)."""
        here = local_identity()
        return sorted(pid for pid, ticks, controller in self._writer_ids
                      if pid != os.getpid() and ticks is not None and controller == here
                      and process_start_ticks(pid) == ticks)

    def refusal(self, entry: Entry) -> str | None:
        """Why ``entry`` read from the file may not be undone here, or None.

        Its record must name the machine it was made on, and that machine -- asked now,
        once per machine and journal -- must be the same host in the same boot. An SSH
        node is asked through its connection, so its host key is checked first.
        """
        if not entry.loaded:
            return None
        named = MachineId.from_dict(entry.machine)
        if named is None:
            return unnamed_machine(entry.machine)
        key = machine_key(entry.node)
        if key not in self._checked:
            try:
                node = self.node_for(entry.node)
                found = identity_of(node.machine)
            except Exception as exc:  # noqa: BLE001 -- unreachable, unknown host key, bad node
                self._checked[key] = f"its machine could not be asked who it is ({exc})"
            else:
                self._checked[key] = mismatch(named, found)
        return self._checked[key]

    def entry(self, seq: int) -> Entry:
        return self._entries[seq]

    def entries(self) -> list[Entry]:
        return sorted(self._entries.values(), key=lambda e: e.seq)

    def configuration(self) -> list[dict]:
        """Every configuration change of this journal, in order: the run's configuration list.

        One dict per change (node, kind, target, before, after, changed, seq),
        including changes found already made (``changed`` False) and changes
        whose command failed (``changed`` False, ``error``). Changes undone
        since are listed too: they were made during the run.
        """
        out: list[tuple[int, dict]] = []
        for e in self._entries.values():
            if e.record is not None:
                rec = {**e.record, "changed": e.error is None, "seq": e.seq}
                if e.error is not None:
                    rec["error"] = e.error
                out.append((e.seq, rec))
        out += [(seq, {**rec, "changed": False, "seq": seq}) for seq, rec in self._noted.items()]
        return [rec for _seq, rec in sorted(out, key=lambda item: item[0])]

    # -- writing -----------------------------------------------------------
    def _append(self, rec: dict) -> None:
        self._append_lines([rec])

    def _append_lines(self, recs: list[dict]) -> None:
        append_records(self.path, recs)

    def _next_seq(self) -> int:
        return max(max(self._entries, default=0), max(self._noted, default=0)) + 1

    def record(self, kind: str, node: Node, **data) -> Entry:
        """Record a change of ``kind`` on ``node`` that is about to be made."""
        return self.record_change(kind, node, data)

    def record_change(self, kind: str, node: Node, data: dict,
                      record: dict | None = None) -> Entry:
        """Record a change about to be made, with its configuration ``record`` if it has one."""
        if kind not in _HANDLERS:
            raise ValueError(f"no undo handler registered for {kind!r}")
        machine = self._identity(node)
        with self._lock:
            seq = self._next_seq()
            entry = Entry(seq, kind, node.describe(), dict(data), module=_MODULES[kind],
                          record=None if record is None else dict(record), machine=machine)
            # first: a change whose record is not on disk is never made
            self._append(do_line(entry, writer_fields()))
            self._entries[seq] = entry
            self._nodes.setdefault(json.dumps(entry.node, sort_keys=True), node)
            self._writers.add(os.getpid())
        return entry

    def record_many(self, changes: list[tuple[str, Node, dict]]) -> list[Entry]:
        """Record several changes about to be made, in one write and one fsync.

        For a lab's hundreds of links, addresses and qdiscs, all made after this returns:
        an fsync per record took 0.8-0.9 s of a 48-host star's build on this machine
        (2026-11-27). Each change is still its own ``do`` line, undone on its own."""
        for kind, _node, _data in changes:
            if kind not in _HANDLERS:
                raise ValueError(f"no undo handler registered for {kind!r}")
        machines = [self._identity(node) for _kind, node, _data in changes]
        common = writer_fields()
        with self._lock:
            first = self._next_seq()
            entries, lines = [], []
            for offset, ((kind, node, data), machine) in enumerate(zip(changes, machines)):
                entry = Entry(first + offset, kind, node.describe(), dict(data),
                              module=_MODULES[kind], machine=machine)
                entries.append(entry)
                lines.append(do_line(entry, common))
            self._append_lines(lines)  # first: no change is made before its record is on disk
            for entry, (_kind, node, _data) in zip(entries, changes):
                self._entries[entry.seq] = entry
                self._nodes.setdefault(json.dumps(entry.node, sort_keys=True), node)
            if entries:
                self._writers.add(os.getpid())
        return entries

    def note(self, node: Node, record: dict) -> int:
        """Record a configuration found already as asked: in the run's view, nothing to undo."""
        with self._lock:
            seq = self._next_seq()
            self._noted[seq] = dict(record)
            self._append({"op": "noted", "seq": seq, "node": node.describe(),
                          "record": self._noted[seq], "time": time.time()})
        return seq

    def failed(self, entry: Entry, error: str) -> None:
        """The recorded change's command failed; its undo stays pending (it tolerates that)."""
        with self._lock:
            entry.error = error
            self._append({"op": "failed", "seq": entry.seq, "error": error})

    def update(self, entry: Entry, **data) -> None:
        """Add facts learned after the change was made (e.g. a kernel-assigned id)."""
        with self._lock:
            entry.data.update(data)
            self._append({"op": "update", "seq": entry.seq, "data": data})

    def undo_failed(self, entry: Entry, error: BaseException | str) -> None:
        """The change's undo ran and it is still there (or the undo failed): it stays pending
        and says so on disk (a full disk: it stays pending all the same)."""
        text = " ".join(str(error).split())[:1000]  # one line: what, why, how to finish
        with self._lock:
            entry.undo_error = text
            try:
                self._append({"op": "undo-failed", "seq": entry.seq, "error": text,
                              "time": time.time()})
            except HarnessError:
                pass

    def mark_undone(self, entry: Entry, how: str = "") -> None:
        """The change is undone (``how``: other than by its own undo, e.g. its VM stopped).
        If the disk refuses the line (full), the undo still stands: on disk the entry stays
        pending, and ``harness lab clean`` repeats its undo, which tolerates what is already
        gone."""
        with self._lock:
            entry.undone = True
            line = {"op": "undone", "seq": entry.seq, "time": time.time()}
            if how:
                line["how"] = how
            if entry.note:
                line["note"] = entry.note
            try:
                self._append(line)
            except HarnessError:
                self.unwritten.append(entry.seq)

    def mark_undone_many(self, entries: list[Entry]) -> None:
        """Mark several changes undone in one write (see :meth:`mark_undone`)."""
        if not entries:
            return
        with self._lock:
            for entry in entries:
                entry.undone = True
            try:
                self._append_lines([{"op": "undone", "seq": e.seq, "time": time.time(),
                                     **({"note": e.note} if e.note else {})} for e in entries])
            except HarnessError:
                self.unwritten.extend(e.seq for e in entries)

    def _identity(self, node: Node) -> dict:
        """The identity of ``node``'s machine for a record (one round trip per machine and
        journal; ``{}`` when it cannot be read: such a record is never undone elsewhere)."""
        machine = node.machine
        key = machine_key(machine.describe())
        if key not in self._identities:
            try:
                self._identities[key] = identity_of(machine)
            except Exception:  # noqa: BLE001 -- the change's own command reports the node
                self._identities[key] = None
        found = self._identities[key]
        return {} if found is None else found.to_dict()

    # -- undoing -----------------------------------------------------------
    def node_for(self, desc: dict) -> Node:
        """The node a record describes (rebuilt once per description, trusted no further than
        :func:`~harness.journal.trust.without_trust` lets it)."""
        key = json.dumps(desc, sort_keys=True)
        if key not in self._nodes:
            self._nodes[key] = node_from_description(without_trust(desc))
        return self._nodes[key]

    def undo(self, entry: Entry, mark: bool = True) -> None:
        """Undo one change (``mark``: and write that it is undone; else the caller does).
        A handler that finds the change still there raises
        (:class:`~harness.journal.undo_left.UndoLeft`): that is written as a failed undo."""
        if entry.undone:
            return
        reason = self.refusal(entry)
        if reason is not None:
            raise undo_checks.RefusedRecord(
                f"not undone here: {entry.kind} record {entry.seq} of {self.path}: {reason}",
                "`harness lab clean` acts only on records of this machine and boot")
        if entry.kind not in _HANDLERS:
            load_undo_handlers(entry.module)
        if entry.kind not in _HANDLERS and entry.module:
            load_undo_handlers()  # the handler moved to another module since
        try:
            node = self.node_for(entry.node)
            if entry.kind not in _GONE_WITH_NAMESPACE or not inside_vanished_namespace(node):
                with record_trust(entry.loaded), undo_context.undoing(self.entries(), entry.seq):
                    entry.note = _HANDLERS[entry.kind](node, entry.data) or None
        except undo_checks.RefusedRecord:
            raise  # never acted on (a record naming what the harness does not make): not "left"
        except Exception as exc:
            self.undo_failed(entry, exc)
            raise
        if mark:
            self.mark_undone(entry)

    def undo_all(self, after_seq: int = 0,
                 leave: Callable[[Entry], bool] | None = None) -> list[str]:
        """Undo every pending change newer than ``after_seq``, newest first (the order, and
        what is tried again, are :mod:`harness.journal.undo_order`).

        ``leave`` names entries to leave pending: changes something else ends as a whole
        (the state inside a VM that is stopped next, see :meth:`harness.lab.lab.Lab.teardown`).
        Keeps going past failures and raises :class:`UndoFailed` listing them.
        """
        if os.getpid() != self._owner_pid:
            # A forked child that unwinds a copy of our stack must never undo.
            return []
        batch = [e for e in self.pending() if e.seq > after_seq and not (leave and leave(e))]
        failures = undo_newest_first(self, batch)
        if failures:
            raise UndoFailed(
                "could not undo every change:\n  " + "\n  ".join(failures),
                f"inspect {self.path}; `harness lab clean` retries the rest",
            )
        return failures

    @contextmanager
    def scope(self) -> Iterator[Journal]:
        """Undo, on exit (also on error or Ctrl-C), what was recorded inside the block."""
        start = self._next_seq() - 1
        try:
            yield self
        finally:
            self.undo_all(after_seq=start)

    # -- processes -----------------------------------------------------------
    @contextmanager
    def process(self, node: Node, cmd: Command, *, cgroup: str | None = None) -> Iterator[Process]:
        """Start ``cmd`` in the background on ``node``; stop it on exit, also on error."""
        proc = self.start(node, cmd, cgroup=cgroup)
        try:
            yield proc
        finally:
            self.stop(proc)

    def start(self, node: Node, cmd: Command, *, cgroup: str | None = None,
              record: dict | None = None) -> Process:
        """Start ``cmd`` in the background and journal it (``record``: a configuration
        change's record, for a daemon that is one -- see :class:`harness.config.Change`)."""
        # Ctrl-C between the start and the record would leak the process: hold it.
        with signals_deferred():
            proc = node.spawn(cmd, cgroup=cgroup)
            # Recorded against the machine that owns the process: a namespace can
            # vanish while its processes live on.
            entry = self.record_change(
                "process", node.machine,
                {"pid": proc.info.pid, "start_ticks": proc.info.start_ticks,
                 "command": proc.info.command, "log": proc.info.log, "host": proc.info.node},
                record,
            )
        proc.info.extra["journal_seq"] = entry.seq
        return proc

    def stop(self, proc: Process) -> None:
        proc.stop()
        seq = proc.info.extra.get("journal_seq")
        if seq in self._entries and not self._entries[seq].undone:
            remove_process_log(self.node_for(self._entries[seq].node).machine, proc.info.log)
            self.mark_undone(self._entries[seq])


# The journal's own kinds (the undo is in harness.journal.handlers). Registered here so
# that records keep naming harness.journal.journal as their module, as every journal written so
# far does: a record naming a module that registers no handler is refused.
@undo_handler("process", gone_with_namespace=False)
def _undo_process(node: Node, data: dict) -> None:
    stop_recorded_process(node, data)


@undo_handler("file", gone_with_namespace=False)
def _undo_file(node: Node, data: dict) -> None:
    remove_recorded_file(node, data)
