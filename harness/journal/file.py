"""The journal's file: the record of one change, a line read back, a line appended.

Apart from :class:`harness.journal.journal.Journal` (which decides what to record, when, and
how to undo it) because the file's format and its write discipline are one concern
that the run's whole undo rests on: every journal written so far must keep reading
the same, and every record must be on disk before its change is made. Nothing here
imports :mod:`harness.journal.journal`; it re-exports :class:`Entry`.

Lines (JSON, one per line, keys sorted):

* ``{"op": "do", "seq", "kind", "node", "data", "module", "record"?, "time", "pid",
  "pid_start", "machine", "controller"}``: ``machine`` is the identity (hostname and
  boot id, :mod:`harness.journal.machineid`) of the machine the change is made on,
  ``controller`` that of the machine whose process ``pid`` (started at tick
  ``pid_start``) wrote it
* ``{"op": "update", "seq", "data"}``: facts learned after the change
* ``{"op": "failed", "seq", "error"}``: the change's command failed
* ``{"op": "noted", "seq", "node", "record", "time"}``: already as asked, no undo
* ``{"op": "undone", "seq", "time"}`` (and ``"how"`` when something else ended it: its VM;
  ``"note"`` when it is undone but something else now uses what the run made)
* ``{"op": "undo-failed", "seq", "error", "time"}``: its undo ran and the change is still
  there (or the undo failed): it stays pending, and ``harness lab clean`` retries it
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import write_failed
from ..nodes.procfs import process_start_ticks
from .machineid import MachineId, local_identity
from .trust import read_journal_file


@dataclass
class Entry:
    seq: int
    kind: str
    node: dict
    data: dict
    undone: bool = False
    module: str = ""  # the module that registers the kind's undo handler
    record: dict | None = None  # a configuration change's record (see harness.config)
    error: str | None = None  # the change's command failed (it may not have been made)
    machine: dict | None = None  # hostname and boot id of the machine it was made on
    loaded: bool = False  # read from the file (not recorded by this process): checked first
    undo_error: str | None = None  # its last undo failed: what is left, why, how to finish
    note: str | None = None  # undone, and what else now uses what the run made


#: Kinds as :func:`undo_handler` registers them (``file``, ``mptcp-limits``, ``tipc_bearer``).
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,63}")


@dataclass
class Contents:
    """What a journal file holds: the changes, the changes found already made, and who
    wrote them; the lines that were not sound records are in ``problems``."""

    entries: dict[int, Entry] = field(default_factory=dict)  # seq -> change recorded
    noted: dict[int, dict] = field(default_factory=dict)  # seq -> record of a change found made
    writers: set[int] = field(default_factory=set)  # pids of the processes that recorded
    # (pid, start ticks, controller's identity) of each writer that recorded them
    writer_ids: set[tuple[int, int | None, MachineId | None]] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)  # lines that were not sound records

    def add(self, rec: dict) -> None:
        """Take in one line's record, or raise (ValueError, TypeError, KeyError,
        AttributeError) if it is not a sound one."""
        if not isinstance(rec, dict):
            raise TypeError("not a JSON object")
        op, seq = rec["op"], rec["seq"]
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
            raise ValueError(f"seq {seq!r} is not a positive integer")
        if op == "do":
            kind, node, data, module = rec["kind"], rec["node"], rec["data"], rec.get("module", "")
            record = rec.get("record")
            if not (isinstance(kind, str) and isinstance(node, dict) and isinstance(data, dict)
                    and isinstance(module, str) and (record is None or isinstance(record, dict))):
                raise TypeError("kind, node, data, module or record of the wrong type")
            if not _KIND.fullmatch(kind):
                # printed by `lab clean` as it is: no terminal escapes, no other lines
                raise ValueError(f"kind {kind[:40]!r} is not a name an undo handler has")
            if seq in self.entries or seq in self.noted:
                raise ValueError(f"seq {seq} recorded twice")
            machine = rec.get("machine")
            self.entries[seq] = Entry(seq, kind, node, data, module=module, record=record,
                                      machine=machine if isinstance(machine, dict) else None,
                                      loaded=True)
            writer = rec.get("pid")
            if isinstance(writer, int) and not isinstance(writer, bool):
                self.writers.add(writer)
                ticks = rec.get("pid_start")
                self.writer_ids.add((writer, ticks if isinstance(ticks, int) else None,
                                     MachineId.from_dict(rec.get("controller"))))
        elif op == "noted":
            if not isinstance(rec["record"], dict):
                raise TypeError("record is not an object")
            self.noted[seq] = rec["record"]
        elif op in ("undone", "update", "failed", "undo-failed"):
            entry = self.entries.get(seq)
            if entry is None:
                raise ValueError(f"{op} of seq {seq}, which no earlier record made")
            if op == "undone":
                entry.undone = True
                entry.note = str(rec["note"]) if rec.get("note") is not None else None
            elif op == "undo-failed":
                entry.undo_error = str(rec["error"])
            elif op == "update":
                if not isinstance(rec["data"], dict):
                    raise TypeError("data is not an object")
                entry.data.update(rec["data"])
            else:
                entry.error = str(rec["error"])
        else:
            raise ValueError(f"unknown op {op!r}")


def writer_fields() -> dict:
    """When a ``do`` line is written and by whom: the process, its start tick (a pid alone
    is reused) and its machine's identity (:meth:`harness.journal.journal.Journal.live_writers`)."""
    return {"time": time.time(), "pid": os.getpid(),
            "pid_start": process_start_ticks(os.getpid()),
            "controller": local_identity().to_dict()}


def do_line(entry: Entry, writer: dict) -> dict:
    """The ``do`` line of a change about to be made (``writer``: :func:`writer_fields`)."""
    line = {"op": "do", "seq": entry.seq, "kind": entry.kind, "node": entry.node,
            "data": entry.data, "module": entry.module, **writer, "machine": entry.machine}
    if entry.record is not None:
        line["record"] = entry.record
    return line


def read_contents(path: Path) -> Contents:
    """Read every sound line; report and skip the others (a torn last line after a
    crash, a record missing a field, a line someone else wrote). A file that may not
    be read at all (not a regular file, a symlink, another user's) is refused with
    :class:`~harness.journal.trust.UnreadableJournal`."""
    found = Contents()
    raw = read_journal_file(path)
    for number, line in enumerate(raw.decode("utf-8", errors="replace").split("\n"), 1):
        if not line.strip():
            continue
        try:
            found.add(json.loads(line))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            found.problems.append(f"{path} line {number}: skipped, not a sound record "
                                  f"({exc.__class__.__name__}: {str(exc)[:120]})")
    return found


def append_records(path: Path, recs: list[dict]) -> None:
    """Append records in one write and one fsync (a crash tears at most the last line,
    which :func:`read_contents` skips; the lines before it stand). A new journal is
    created readable and writable by its owner alone (issue 37)."""
    line = "".join(json.dumps(rec, sort_keys=True) + "\n" for rec in recs).encode()
    if not line:
        return
    try:
        # 0600 whatever the umask (a Slurm job's 002 in a setgid project folder would make it
        # 0664: a journal the group may write, which `lab clean` refuses), never through a link
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        with open(fd, "ab+") as fh:
            # A torn last line (a crash mid-write) must not swallow this record: start
            # a line of our own after it (the torn one is skipped when read).
            end = fh.seek(0, os.SEEK_END)
            if end and os.pread(fh.fileno(), 1, end - 1) != b"\n":
                line = b"\n" + line
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:  # a torn last line is skipped when read (see read_contents)
        raise write_failed(path, exc) from None
