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
import re
import shlex
import stat
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from ..errors import HarnessError
from . import undo_checks
from .machineid import MachineId


class UnreadableJournal(HarnessError):
    """A journal file that is not a regular file this process can open without a symlink."""

    def __init__(self, path: Path, why: str, hint: str = ""):
        super().__init__(f"journal {printable(str(path))} cannot be read: {why}",
                         hint or "a run folder's journal.jsonl is a regular file the harness "
                         "wrote; look at this one and undo by hand what it lists, if anything")


#: Characters a terminal may act on: C0 and C1 controls, DEL, and the bidirectional
#: overrides that reorder what is shown. Line breaks and tabs are kept.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every character a terminal could act on shown as an escape (``\\x1b``):
    what ``harness lab clean`` prints from a journal (hostnames, paths, messages that quote
    a record) can never move the cursor, retitle the window or hide a line."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


#: Write bits of anyone but the owner: the group's (also what an ACL entry grants another
#: user or group shows there, as the ACL mask) and every user's.
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def read_journal_file(path: Path) -> bytes:
    """The bytes of the journal at ``path``, if it may be read at all.

    The journal itself must be a regular file, opened without following a symlink,
    owned by the user reading it (the harness wrote it as that user) and writable by
    no one but its owner (and root): a run folder from elsewhere may hold a folder, a
    FIFO (reading it would block ``lab clean`` for ever), a link to any file root can
    read, or a file another local user wrote -- or appended a record to -- naming this
    machine's boot id (which every user can read). On a cluster, HARNESS_DATA is often
    a setgid project folder and umask 002 common (Slurm jobs inherit it): a journal its
    group may write is one a colleague may have appended a ``process`` record naming a
    root login to (issue 37), so group write is refused as every user's is. The harness
    creates its journals 0600 whatever the umask (:func:`harness.journal.file.append_records`).
    Such a journal is refused with :class:`UnreadableJournal`; ``lab clean`` reports
    it and goes on with the other runs."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnreadableJournal(path, exc.strerror
                                + (" (a symlink is not followed)"
                                   if path.is_symlink() else "")) from None
    found = os.fstat(fd)
    mode = stat.S_IMODE(found.st_mode)
    hint = ""
    why = ("not a regular file" if not stat.S_ISREG(found.st_mode)
           else f"it belongs to uid {found.st_uid}, not to uid {os.geteuid()} that reads it: "
                "another user wrote it" if found.st_uid != os.geteuid()
           else "" if not mode & _OTHERS_WRITE
           else f"mode {mode:04o}: every user may write to it" if mode & stat.S_IWOTH
           else f"mode {mode:04o}: its group may write to it (or another user, by an ACL), so "
                "a record in it may be another user's")
    if why and stat.S_ISREG(found.st_mode) and found.st_uid == os.geteuid():
        hint = (f"if no one else can have written to it, take their write access away "
                f"(chmod g-w,o-w {shlex.quote(printable(str(path)))}; setfacl -b if it has an "
                "ACL) and run `harness lab clean` again; else undo by hand what it lists")
    if why:
        os.close(fd)
        raise UnreadableJournal(path, why, hint)
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
    if isinstance(machine, dict):
        return (f"it names its machine {printable(repr(machine))[:160]}, which is not a hostname "
                "and boot id as a machine reports them: the journal was damaged or written by "
                "someone else; undo by hand what it lists, if anything")
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
