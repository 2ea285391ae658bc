"""How far a journal read back from a file is trusted (issue 26).

A journal this process writes is its own. One it reads -- ``harness lab clean`` over
run folders, which may come from elsewhere -- is checked before anything in it is
acted on: the file itself (:func:`read_journal_file`), the machine and boot each record
names (:func:`unnamed_machine`, :func:`mismatch`), the node it describes
(:func:`without_trust`) and the paths its records may name (:func:`record_trust`).
:class:`harness.journal.journal.Journal` applies these; the per-kind checks of a record's data
are :mod:`harness.journal.undo_checks`.
"""

from __future__ import annotations

import json
import os
import stat
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from ..errors import HarnessError
from . import undo_checks
from .machineid import MachineId


class UnreadableJournal(HarnessError):
    """A journal file that is not a regular file this process can open without a symlink."""

    def __init__(self, path: Path, why: str):
        super().__init__(f"journal {path} cannot be read: {why}",
                         "a run folder's journal.jsonl is a regular file the harness wrote; "
                         "look at this one and undo by hand what it lists, if anything")


def read_journal_file(path: Path) -> bytes:
    """The bytes of the journal at ``path``, if it may be read at all.

    The journal itself must be a regular file, opened without following a symlink,
    owned by the user reading it (the harness wrote it as that user) and not writable
    by every user: a run folder from elsewhere may hold a folder, a FIFO (reading it
    would block ``lab clean`` for ever), a link to any file root can read, or a file
    another local user wrote naming this machine's boot id (which every user can
    read). Such a journal is refused with :class:`UnreadableJournal`; ``lab clean``
    reports it and goes on with the other runs."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnreadableJournal(path, exc.strerror
                                + (" (a symlink is not followed)"
                                   if path.is_symlink() else "")) from None
    found = os.fstat(fd)
    why = ("not a regular file" if not stat.S_ISREG(found.st_mode)
           else f"it belongs to uid {found.st_uid}, not to uid {os.geteuid()} that reads it: "
                "another user wrote it" if found.st_uid != os.geteuid()
           else "every user may write to it" if found.st_mode & stat.S_IWOTH else "")
    if why:
        os.close(fd)
        raise UnreadableJournal(path, why)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def record_trust(read_back: bool) -> AbstractContextManager:
    """Records this process wrote itself may name paths anywhere the run chose; records read
    from a file (``read_back``) only paths below the harness's own folders
    (:mod:`harness.journal.undo_checks`)."""
    return nullcontext() if read_back else undo_checks.recorded_here()


def machine_key(desc: dict) -> str:
    """The machine a node description runs on (namespaces stripped), as a dict key."""
    while isinstance(desc, dict) and desc.get("type") in ("netns", "machine-root"):
        desc = desc.get("parent")
    return json.dumps(desc, sort_keys=True)


def unnamed_machine(machine: dict | None) -> str:
    """Why a record whose ``machine`` names no machine is never undone by the harness."""
    if machine == {}:
        return ("its machine could not say who it was when the record was written, so the "
                "harness cannot tell that this is the same machine and boot: undo it by "
                "hand if it is this machine's and still there")
    return ("it was recorded before journal records named their machine (2026-11-26), "
            "so the harness cannot tell which machine and boot it belongs to: undo "
            "it by hand if it is this machine's and still there")


def mismatch(named: MachineId, found: MachineId | None) -> str | None:
    """Why the machine ``found`` now is not the machine and boot a record ``named``, or None."""
    if found is None:
        return "its machine did not say who it is"
    if named.hostname != found.hostname:
        return (f"it was recorded on machine {named.describe()}, and this is "
                f"{found.describe()}: a journal of another machine is never undone here")
    if named.boot_id != found.boot_id:
        return (f"it was recorded in an earlier boot of {named.hostname} (boot "
                f"{named.boot_id}, now {found.boot_id}): what it made ended with that boot "
                "or is no longer what it named")
    return None


def without_trust(desc):
    """A node description as read from a journal, with nothing that widens trust: an SSH
    node's unknown host key is never accepted on a journal's word."""
    if not isinstance(desc, dict):
        return desc
    out = dict(desc)
    if out.get("type") == "ssh":
        out["accept_unknown_host"] = False
    if "parent" in out:
        out["parent"] = without_trust(out["parent"])
    return out
