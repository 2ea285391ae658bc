"""Mounts, mountpoints, writable state directories and kernel modules, as recorded changes.

The building blocks of the file-system operations (:mod:`harness.config.nfs`,
:mod:`harness.config.glusterfs`); each is a fact (part of one probe command,
read in sections) and a :class:`~harness.config.operation.Change` with an
exact undo:

* **mounts** are read from ``/proc/mounts`` (octal escapes such as ``\\040``
  decoded). A mount this run made is undone by ``umount`` only while the
  topmost mount at that path is still the one it made (same source and type):
  a mount stacked on top later is not this run's to remove, and the undo
  fails loudly instead.
* **mountpoints** that did not exist are created, and removed by ``rmdir``
  (never ``rm -r``: with a file system still mounted there, a recursive
  removal would delete that file system's files). A mount is made only on a
  mountpoint the harness creates (one that exists already is refused), and its
  record says so (``made``); the only exceptions are the system folders of
  :data:`SYSTEM_MOUNTS`, with the harness's own source and type. An undo refuses
  any other mount record (issue 37: a record naming ``/home`` or ``/run/sshd``
  would otherwise have unmounted or removed it; records written before
  2026-11-28 carry no ``made`` and are refused, saying how to clean by hand).
* **state directories** a daemon must write (``/var/lib/nfs``,
  ``/var/lib/glusterd``...): in the VM lab the host's root is shared
  read-only, so such a directory gets a tmpfs over it, seeded with a copy of
  what was there (package-shipped hook scripts, empty tables) and unmounted
  by the undo. Writability is tested by coreutils' ``test -w`` (``env test``,
  not the shell's builtin: dash's builtin answers "writable" for root
  without asking the kernel, access(2) says EROFS). A directory that is
  missing is created (and removed with its contents by the undo: only this
  run wrote there). A writable one is left as it is.
* **kernel modules** (:mod:`harness.config.kmod`) are loaded explicitly
  before the mount that needs them.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import CapabilityMissing, SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import settle
from ..nodes import Node, Result
from .kmod import module_change, module_probe, parse_module, sections
from .operation import UNKNOWN, Change, Fact, Operation

STATE_TAG = "harness-state"  # the tmpfs source name of a state directory made writable
# An absolute path that needs no quoting in /proc/mounts or in a mount option (no spaces,
# commas, colons); shlex-quoted anyway wherever it goes.
_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}\Z|^[0-9a-fA-F:]*:[0-9a-fA-F:.]*\Z")
_OPTION = re.compile(r"^[a-z][a-z0-9_-]*(=[A-Za-z0-9@._:/-]+)?\Z")
_PATH = re.compile(r"^/[A-Za-z0-9_.@+-][A-Za-z0-9_./@+-]*\Z")
_OCTAL = re.compile(r"\\([0-7]{3})")

#: The daemons' state folders a seeded tmpfs may go over (see :func:`state_dir_change`).
STATE_DIR_MOUNTS = ("/var/lib/nfs", *undo_checks.STATE_DIRS)
#: The only folders that existed before the harness on which it mounts (path -> file system
#: type and source): nfsd's control file system, and the state folders' tmpfs. Every other
#: mount of the harness is on a mountpoint it created, and its record says ``made``.
SYSTEM_MOUNTS = {"/proc/fs/nfsd": ("nfsd", "nfsd"),
                 **{path: ("tmpfs", STATE_TAG) for path in STATE_DIR_MOUNTS}}


def check_path(what: str, path: str, root: bool = False) -> str:
    """An absolute, normalised path of plain characters (SpecError otherwise); ``/``
    itself only if ``root``."""
    if path == "/" and root:
        return path
    if (not isinstance(path, str) or not _PATH.match(path) or os.path.normpath(path) != path
            or path == "/"):
        raise SpecError(f"{what} {path!r} is not a plain absolute path",
                        "give an absolute path without '..', '//', a trailing '/', spaces, "
                        "commas or colons, other than / itself (e.g. /srv/export)")
    return path


def check_options(what: str, options: Sequence[str]) -> tuple[str, ...]:
    """Mount or export options: words or word=value, no commas, spaces or quotes."""
    if isinstance(options, str):
        raise SpecError(f"{what} options must be a list of words, not the string {options!r}",
                        "e.g. ('rw', 'sync', 'no_subtree_check')")
    options = tuple(options)
    bad = [o for o in options if not isinstance(o, str) or not _OPTION.match(o)]
    if bad:
        raise SpecError(f"{what} options {bad} are not valid",
                        "each option is a word or word=value (letters, digits, _ . : / @ -)")
    return options


def check_host(what: str, host: str) -> str:
    if not isinstance(host, str) or not _HOST.match(host):
        raise SpecError(f"{what} {host!r} is not a host name or address",
                        "give an IP address (10.0.2.15, fd00::1) or a host name")
    return host


def tools_probe(*names: str) -> str:
    """Shell: section ``@tools`` listing which of ``names`` are on the node's PATH."""
    return ("echo @tools; for t in " + " ".join(shlex.quote(n) for n in names) +
            "; do command -v \"$t\" >/dev/null 2>&1 && echo \"$t\"; done")


def require_tools(node: Node, parts: dict[str, list[str]], names: tuple[str, ...],
                  hint: str) -> None:
    """CapabilityMissing naming every one of ``names`` that ``tools_probe`` did not find."""
    found = {line.strip() for line in parts.get("tools", []) if line.strip()}
    missing = [n for n in names if n not in found]
    if missing:
        raise CapabilityMissing(f"{node.name} lacks {', '.join(missing)}", hint)


# -- /proc/mounts -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    fstype: str
    options: tuple[str, ...]


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mounts(lines: list[str] | str) -> tuple[Mount, ...]:
    """``/proc/mounts`` lines, in mount order (a later mount at a path hides earlier ones)."""
    if isinstance(lines, str):
        lines = lines.splitlines()
    mounts = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 4:
            mounts.append(Mount(_unescape(parts[0]), _unescape(parts[1]), parts[2],
                                tuple(parts[3].split(","))))
    return tuple(mounts)


def mounted_at(mounts: tuple[Mount, ...], path: str) -> Mount | None:
    """The visible (last) mount at ``path``, or None."""
    found = [m for m in mounts if m.target == path]
    return found[-1] if found else None


MOUNTS_PROBE = "echo @mounts; cat /proc/mounts"


def mount_change(node: Node, kind: str, target: str, mounts, fstype: str, source: str,
                 command: str, after: str, made: bool = False) -> Change:
    """Mount ``source`` (``fstype``) at ``target`` unless it is the visible mount there already.

    Another mount visible at ``target`` is refused: it is not this run's. ``made``: the
    harness creates ``target`` just before (:func:`mountpoint_change`); else it must be
    one of :data:`SYSTEM_MOUNTS` with this type and source.
    """
    if not made and SYSTEM_MOUNTS.get(target) != (fstype, source):
        raise ValueError(f"{target} is no mountpoint the harness makes, nor one of its system "
                         f"mounts with {fstype} {source}")
    change = Change(node, kind, target, None, after)
    if mounts is not UNKNOWN:
        found = mounted_at(mounts, target)
        if found is not None and (found.fstype, found.source) == (fstype, source):
            change.before = change.after
            return change
        if found is not None:
            raise SpecError(f"{node.name}:{target} is in use: {found.source} ({found.fstype}) "
                            "is mounted there",
                            "choose another mountpoint, or unmount it yourself first")
    change.command = command
    change.undo_kind = "unmount"
    change.undo = {"path": target, "fstype": fstype, "source": source,
                   **({"made": True} if made else {})}
    return change


@undo_handler("unmount", gone_with_namespace=False)
def _unmount(node: Node, data: dict) -> None:
    """Unmount what this run mounted, if it is still the visible mount there."""
    path, fstype, source = unmount_record("unmount", data)
    settle(node, act=unmount_script(path, fstype, source), look=not_mounted(path, fstype, source),
           what=f"{fstype} mount of {source} on {path} ({node.name})",
           finish=f"umount {shlex.quote(path)} (busy? fuser -vm {shlex.quote(path)})",
           wait=BUSY_WAIT, timeout=120)


#: How long a busy mount (a process of the run still leaving it) is tried again.
BUSY_WAIT = 5.0


def not_mounted(path: str, fstype: str, source: str) -> str:
    """Shell: no mount of ``source`` (``fstype``) on ``path`` is left in /proc/mounts."""
    p, t, s = (shlex.quote(x) for x in (path, fstype, source))
    return f"! awk -v p={p} -v s={s} -v t={t} '$2 == p && $1 == s && $3 == t {{f = 1}} END {{exit !f}}' /proc/mounts"


_FSTYPE = re.compile(r"^[a-z0-9][a-z0-9._]{0,31}\Z")
_SOURCE = re.compile(r"^[A-Za-z0-9_.:/@+-]{1,512}\Z")


def unmount_record(kind: str, data: dict) -> tuple[str, str, str]:
    """A mount's path, file system type and source, each as a mount would have them, on a
    mountpoint the record says the harness made or one of :data:`SYSTEM_MOUNTS` as it
    mounts it there."""
    found = (undo_checks.clean_path(kind, data.get("path")),
             undo_checks.text(kind, "fstype", data.get("fstype"), _FSTYPE),
             undo_checks.text(kind, "source", data.get("source"), _SOURCE))
    if data.get("made") is not True and SYSTEM_MOUNTS.get(found[0]) != found[1:]:
        raise not_made(kind, found[0], f"umount {shlex.quote(found[0])}")
    return found


def not_made(kind: str, path: str, by_hand: str) -> undo_checks.RefusedRecord:
    """A mount record whose mountpoint the record does not say the harness created."""
    return undo_checks.RefusedRecord(
        f"journal record of kind {kind!r} refused: it does not say the harness created the "
        f"mountpoint {path!r:.200} (records written before 2026-11-28 do not), and it is not "
        "one of the system folders the harness mounts on: the harness unmounts and removes "
        "only mountpoints it made",
        f"if the run mounted it, undo it by hand: {by_hand}")


def unmount_script(path: str, fstype: str, source: str) -> str:
    """Shell: unmount ``path`` if its visible mount is (``source``, ``fstype``); exit 1 if
    another mount hides it; nothing if it is gone. /proc/mounts escapes no plain path."""
    p, t, s = (shlex.quote(x) for x in (path, fstype, source))
    return (f"top=$(awk -v p={p} '$2 == p {{top = $1 \" \" $3}} END {{print top}}' /proc/mounts); "
            f"mine=$(awk -v p={p} -v s={s} -v t={t} '$2 == p && $1 == s && $3 == t' /proc/mounts); "
            f"if [ \"$top\" = {shlex.quote(source + ' ' + fstype)} ]; then umount {p}; "
            f"elif [ -n \"$mine\" ]; then echo {p}\" is hidden by $top mounted on top\" >&2; "
            "exit 1; fi")


# -- mountpoints and state directories ----------------------------------------------------------

def dir_probe(name: str, path: str) -> str:
    """Shell: section ``@name`` with one word: rw | ro | notdir | missing | noparent."""
    p = shlex.quote(path)
    parent = shlex.quote(os.path.dirname(path))
    return (f"echo @{name}; if [ -d {p} ]; then if env test -w {p}; then echo rw; "
            f"else echo ro; fi; elif [ -e {p} ] || [ -L {p} ]; then echo notdir; "
            f"elif [ -d {parent} ] && env test -w {parent}; then echo missing; "
            "else echo noparent; fi")


def dir_state(parts: dict[str, list[str]], name: str) -> str:
    words = [line.strip() for line in parts.get(name, []) if line.strip()]
    return words[0] if words else "unreadable"


def mountpoint_change(node: Node, path: str, state) -> Change:
    """The directory to mount on: created if missing (and removed again by ``rmdir``)."""
    change = Change(node, "mountpoint", path, "directory", "directory")
    if state is UNKNOWN or state == "missing":
        change.before = None if state == "missing" else UNKNOWN
        change.command = shlex.join(["mkdir", path])  # fails if it exists: made is never a lie
        change.undo = {"path": path, "made": True}
    elif state not in ("rw", "ro"):
        raise SpecError(f"{node.name}: cannot use {path} as a mountpoint: "
                        f"{_DIR_WORDS.get(state, state)}",
                        "give a directory, or a new path whose parent directory exists")
    return change


@undo_handler("mountpoint", gone_with_namespace=False)
def _remove_mountpoint(node: Node, data: dict) -> None:
    path = undo_checks.clean_path("mountpoint", data.get("path"))
    p = shlex.quote(path)
    if data.get("made") is not True:
        raise not_made("mountpoint", path, f"rmdir {p}")
    settle(node, act=f"if [ -d {p} ]; then rmdir {p}; fi", look=f"[ ! -d {p} ]",
           what=f"mountpoint {path} on {node.name}", finish=f"rmdir {p}", wait=BUSY_WAIT,
           timeout=30)


_DIR_WORDS = {"notdir": "it exists and is not a directory",
              "noparent": "its parent directory is missing or read-only",
              "unreadable": "the probe printed nothing for it"}


def state_dir_change(node: Node, path: str, state) -> Change:
    """Make ``path`` writable for a daemon: a seeded tmpfs over a read-only one, a new
    directory for a missing one, nothing for a writable one (see the module's doc)."""
    change = Change(node, "state-dir", path, "writable", "writable")
    if state == "rw":
        return change
    if state is UNKNOWN or state == "ro":
        if SYSTEM_MOUNTS.get(path) != ("tmpfs", STATE_TAG):
            raise ValueError(f"{path} is not a state folder of SYSTEM_MOUNTS")
        change.before = "read-only" if state == "ro" else UNKNOWN
        change.after = "tmpfs seeded with a copy of its files"
        p = shlex.quote(path)
        # Copy out, mount, copy back: the tmpfs starts as the directory was (same files,
        # modes, owners). A failure before the mount changes nothing; after it, the undo
        # (it tolerates a missing mount) removes the tmpfs.
        change.command = (f"set -e; d=$(mktemp -d); cp -a {p}/. \"$d\"/; "
                          f"mount -t tmpfs -o mode=0755 {STATE_TAG} {p}; "
                          f"cp -a \"$d\"/. {p}/; rm -rf \"$d\"")
        change.undo_kind = "unmount"
        change.undo = {"path": path, "fstype": "tmpfs", "source": STATE_TAG}
    elif state == "missing":
        change.before = None
        change.after = "new directory"
        change.command = shlex.join(["mkdir", "-m", "0755", path])
        change.undo_kind = "file"  # harness.journal.journal: rm -rf --one-file-system
        change.undo = {"path": path}
    else:
        raise SpecError(f"{node.name}: state directory {path} cannot be made writable: "
                        f"{_DIR_WORDS.get(state, state)}",
                        "check the path on the node")
    return change


# -- a network file system's client ---------------------------------------------------------------

class ClientMount(Operation):
    """A network file system mounted on a client: its kernel module loaded, the mountpoint
    made, then ``mount -t FSTYPE [-o OPTIONS] SOURCE MOUNTPOINT``.

    Subclasses are dataclasses with ``node``, ``mountpoint`` and ``options``
    fields and a ``source``; they set the class attributes below. A mountpoint
    with another mount on it is refused; the same mount there is as asked; a
    mountpoint that exists already (with nothing mounted) is refused too: the
    harness mounts only on a folder it makes.
    """

    node: Node
    mountpoint: str
    options: Sequence[str]
    fstype: str  # mount -t
    proc_fstype: str  # as /proc/mounts names it
    kind: str  # the mount change's record kind
    modules: tuple[str, ...]  # the kernel modules it needs, loaded in this order
    program: str  # the mount helper it needs
    hint: str  # how to get them
    unmount_kind = "unmount"

    @property
    def source(self) -> str:
        raise NotImplementedError

    def check(self) -> None:
        check_path("mountpoint", self.mountpoint)
        check_options(f"{self.fstype} mount", self.options)

    def facts(self) -> dict[str, Fact]:
        def parse(res: Result) -> dict:
            parts = sections(res.stdout)
            require_tools(self.node, parts, (self.program,), self.hint)
            return {"mounts": parse_mounts(parts.get("mounts", [])),
                    "mountpoint": dir_state(parts, "mountpoint"),
                    "modules": [parse_module(self.node, m, parts, self.hint)
                                for m in self.modules]}

        probe = "; ".join([tools_probe(self.program), dir_probe("mountpoint", self.mountpoint),
                           MOUNTS_PROBE, *map(module_probe, self.modules)])
        return {"client": Fact(self.node, probe, parse)}

    def diff(self, facts: dict) -> list[Change]:
        fact = facts["client"]
        get = (lambda key: fact[key]) if fact is not UNKNOWN else (lambda key: UNKNOWN)
        options = ",".join(check_options(f"{self.fstype} mount", self.options))
        command = shlex.join(["mount", "-t", self.fstype, *(["-o", options] if options else []),
                              self.source, self.mountpoint])
        mount = mount_change(self.node, self.kind, self.mountpoint, get("mounts"),
                             self.proc_fstype, self.source, command,
                             f"{self.source} ({self.fstype} {options or 'defaults'})", made=True)
        if not mount.changed:
            return [mount]
        if get("mountpoint") in ("rw", "ro"):
            raise SpecError(f"{self.node.name}: mountpoint {self.mountpoint} exists already",
                            "give a path that does not exist yet: the harness mounts only on a "
                            "folder it makes itself, and removes it again afterwards")
        mount.undo_kind = self.unmount_kind
        states = get("modules")
        return [*(module_change(self.node, m, UNKNOWN if states is UNKNOWN else states[i])
                  for i, m in enumerate(self.modules)),
                mountpoint_change(self.node, self.mountpoint, get("mountpoint")), mount]
