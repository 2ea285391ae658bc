"""What an undo handler accepts from a journal record, checked by kind before it acts.

Why: ``harness lab clean`` runs as root on whatever journal it finds in the data
folder, and archives are copied between people. A record is data another local
user or another machine may have written, so nothing in it reaches a shell or a
system call unchecked (issue 26: an ``ifname`` of ``x; rm -rf /`` went into a
shell unquoted, and any path a record named was removed). Each handler calls
these checks on its record first; a record that fails is refused with
:class:`RefusedRecord` (the journal reports it and goes on with the others) and
nothing is changed for it.

* Device and namespace names: the kernel's own alphabet, by pattern (an
  interface name is at most 15 bytes: IFNAMSIZ 16 with its NUL).
* Paths: absolute, already normalised (no ``..``, ``.`` or ``//``), no control
  characters, and below one of the folders the harness makes its own things in
  (:func:`own_roots`), named ``harness*`` or inside a folder so named -- every
  folder and file the harness creates is named so (``harness-vm-*``, ``harness-proc-*``,
  ``harness-RUNID``, cgroups ``harness-LABEL-TOKEN``...). On the node, the
  shell guard of :func:`guarded_remove` then refuses a path that is (or passes
  through) a symlink or that another user owns, in the same command that removes
  it (one round trip: ~0.5 s each under TCG).
* Processes: pids and start ticks are integers (pid > 1); the handlers signal
  only while the pid's start time (field 22 of /proc/PID/stat) is the recorded one
  and, for a record read back from a file, its /proc/PID/cmdline one the recorded
  command produces (:mod:`harness.journal.started_cmdline`).
* Mounts: only on a mount point the record says the harness created, or one of the
  system folders it mounts on with its own source and type
  (:data:`harness.config.mounts.SYSTEM_MOUNTS`).
* Python modules: only modules of the ``harness`` package, by pattern.
"""

from __future__ import annotations

import contextvars
import ipaddress
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import HarnessError

#: Daemon state folders the harness makes when they are missing (glusterd's, see
#: :func:`harness.config.mounts.state_dir_change`): the only "file" records outside
#: the harness's own folders that an undo may remove.
STATE_DIRS = ("/var/lib/glusterd", "/var/log/glusterfs", "/run/gluster")

IFNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}\Z")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")  # namespaces, volumes, tables, keys
SYSCTL_KEY = re.compile(r"^[a-z0-9_]+([./][A-Za-z0-9_.-]+)+\Z")
MODULE = re.compile(r"^harness(\.[A-Za-z_][A-Za-z0-9_]*)+\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

#: Folders below which the harness makes folders and files of its own (each named
#: ``harness*`` right below the folder), on this machine and on every node.
DEFAULT_ROOTS = ("/tmp", "/var/tmp", "/run", "/sys/fs/cgroup")
_roots: list[tuple[str, ...]] = []
# Undoing records this very process wrote (not read back from a file): a folder the user
# chose (S2's server_disk_dir on an inventory machine) holds a harness-* folder of the run's.
_recorded_here = contextvars.ContextVar("recorded_here", default=False)


class RefusedRecord(HarnessError):
    """A journal record whose data is not what its kind's handler would have written."""


def own_roots() -> tuple[str, ...]:
    """The folders :func:`own_path` accepts paths under (see :data:`DEFAULT_ROOTS`)."""
    if _roots:
        return _roots[-1]
    return tuple(dict.fromkeys((*DEFAULT_ROOTS, tempfile.gettempdir().rstrip("/") or "/tmp")))


@contextmanager
def only_roots(*roots: str) -> Iterator[None]:
    """Accept paths only under ``roots`` inside the block (tests: a temp folder alone)."""
    _roots.append(tuple(str(r).rstrip("/") for r in roots))
    try:
        yield
    finally:
        _roots.pop()


@contextmanager
def recorded_here() -> Iterator[None]:
    """Inside the block the records being undone are this process's own: a path need not be
    below :func:`own_roots` (every other check still holds). :class:`harness.journal.journal.Journal`
    uses it for the records it wrote itself, never for records it read from a file."""
    token = _recorded_here.set(True)
    try:
        yield
    finally:
        _recorded_here.reset(token)


def read_back() -> bool:
    """Whether the records being undone were read from a file (``harness lab clean``), not
    written by this very process (:func:`recorded_here`)."""
    return not _recorded_here.get()


def refuse(kind: str, what: str, value) -> RefusedRecord:
    return RefusedRecord(f"journal record of kind {kind!r} refused: {what}: {value!r:.200}",
                         "a record the harness wrote has none of this; the journal was "
                         "damaged or written by someone else. Inspect it; undo by hand what "
                         "it lists, if anything")


def text(kind: str, field: str, value, pattern: re.Pattern) -> str:
    if not isinstance(value, str) or not pattern.match(value) or value.endswith("\n"):
        raise refuse(kind, f"{field} is not a valid name", value)
    return value


def ifname(kind: str, value, field: str = "ifname") -> str:
    """An interface name as the kernel allows it (1-15 bytes, no '/', no spaces)."""
    return text(kind, field, value, IFNAME)


def name(kind: str, value, field: str = "name") -> str:
    """A namespace, volume, table or device name: letters, digits, '_', '.', '-'."""
    return text(kind, field, value, NAME)


def integer(kind: str, value, field: str, low: int = 0, high: int = 2**63) -> int:
    """An int (not a bool, not a string) within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise refuse(kind, f"{field} is not an integer in {low}..{high}", value)
    return value


def pid(kind: str, value, field: str = "pid") -> int:
    """A process id other than 0 and init's (signalling -1 or -0 would hit everything)."""
    return integer(kind, value, field, 2, 2**22)


def network(kind: str, value, field: str) -> str:
    """A route's destination: ``default`` or an IP network (``10.0.0.0/24``)."""
    if value == "default":
        return value
    try:
        ipaddress.ip_network(value, strict=False)
    except (ValueError, TypeError):
        raise refuse(kind, f"{field} is not an IP network", value) from None
    if not isinstance(value, str) or _CONTROL.search(value) or " " in value:
        raise refuse(kind, f"{field} is not an IP network", value)
    return value


def clean_path(kind: str, value, field: str = "path") -> str:
    """Absolute, normalised, printable: a path that means what it says."""
    if (not isinstance(value, str) or not value.startswith("/") or _CONTROL.search(value)
            or os.path.normpath(value) != value or value.startswith("//") or len(value) > 1024
            or value == "/"):
        raise refuse(kind, f"{field} is not an absolute normalised path", value)
    return value


def under_roots(kind: str, value, field: str = "path") -> str:
    """A clean path strictly below one of :func:`own_roots`."""
    path = clean_path(kind, value, field)
    if _recorded_here.get():
        return path
    if not any(path.startswith(root + "/") for root in own_roots()):
        raise refuse(kind, f"{field} is outside the folders the harness makes things in "
                     f"({', '.join(own_roots())})", value)
    return path


def own_path(kind: str, value, field: str = "path") -> str:
    """A path the harness made: below an own root, itself or a folder on its way there
    named ``harness*``."""
    path = under_roots(kind, value, field)
    root = max((r for r in own_roots() if path.startswith(r + "/")), key=len, default="")
    if not any(part.startswith("harness") for part in path[len(root) + 1:].split("/")):
        raise refuse(kind, f"{field} is not named harness* (nor inside a folder so named) "
                     f"below {root}", value)
    return path


def python_module(kind: str, value) -> str:
    """A module of the harness package (``harness.config.sysctl``), never any other."""
    return text(kind, "module", value, MODULE)


def guarded_remove(path: str, *, recursive: bool = True, marker: str = "") -> str:
    """Shell: remove ``path`` (checked with :func:`own_path` or :func:`under_roots` first)
    only if it is no symlink, no folder on its way is one (its real path is itself), and
    it belongs to the user running it; else say why on stderr and exit 3. Nothing there:
    nothing to do. ``marker``: a name that must exist inside it unless it is empty (a
    gluster brick's ``.glusterfs``, made when its brick process first starts)."""
    import shlex

    p = shlex.quote(path)
    need = (f' || {{ [ ! -e "$p/{marker}" ] && [ -n "$(ls -A -- "$p")" ]; }}'
            if marker else "")
    remove = "rm -rf --one-file-system --" if recursive else "rm -f --"
    return (f"p={p}; if [ -e \"$p\" ] || [ -L \"$p\" ]; then "
            f"if [ -L \"$p\" ] || [ \"$(realpath -e -- \"$p\")\" != \"$p\" ] "
            f"|| [ \"$(stat -c %u -- \"$p\")\" != \"$(id -u)\" ]{need}; then "
            "echo \"refused to remove $p: a symlink, reached through one, owned by another "
            f"user{', or neither empty nor holding ' + marker if marker else ''}\" >&2; "
            "exit 3; fi; "
            f"{remove} \"$p\"; fi")
