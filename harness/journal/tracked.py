"""Measurement tools run in the foreground, journalled so that none outlives the harness.

Why: servers were already journalled (``journal.start``), but clients ran
through plain ``node.run`` -- an iperf3 client, ``globus-url-copy``, a fan-in
reducer. After a SIGKILL of the harness they ran on (a local command sits in
its own session; a remote one does not notice its SSH channel is gone), and
``harness lab clean`` could not see them.

Now a command run with ``node.run(..., track=True)`` inside a session
(:func:`journalled`) is recorded in the journal *before* it starts: kind
``tracked``, against the machine it runs on, with the command, the node
(namespace included) and the name of a small file on that machine. A
wrapper writes its own pid, start time (field 22 of /proc/PID/stat) and
process group into that file, runs the command, and removes the file.
The file lives in :data:`STOP_DIR`, a folder of the user the harness runs as
(root) with mode 0700 -- not ``$TMPDIR``, where after a hard kill another user
could have put a file of that name pointing ``lab clean`` at any process group
(issue 26). Before any signal the undo checks the folder (no symlink, ours,
0700) and the file (no symlink: ``O_NOFOLLOW``; ours: ``fstat``), and that the
recorded pid is still the process that started at the recorded tick *and* leads
the recorded group; the file's name comes from the record only if it is one the
harness makes (``harness-tracked-`` and 16 hex digits). It is
still one ``node.run``, one round trip (what matters under TCG: ~0.5 s each).
When the command ends normally the entry is marked undone. After a timeout, an
error, Ctrl-C -- or, from ``harness lab clean``, after a SIGKILL -- the undo reads
the file and stops the process group only while the wrapper is still the same
process (pid *and* start time) leading that group, then removes the file. Never by name.
"""

from __future__ import annotations

import dataclasses
import os
import re
import secrets
import shlex
import signal
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import CommandFailed
from ..nodes import base
from ..nodes.base import Command, Node, command_text
from ..nodes.procfs import GROUP_RUNNING_SH, PROC_STAT_SH, group_running, read_stat
from ..nodes.result import Result
from . import undo_checks
from .journal import Journal, signals_deferred, undo_handler
from .undo_left import UndoLeft

PREFIX = "harness-tracked-"
NAME = re.compile(r"^harness-tracked-[0-9a-f]{16}\Z")
#: Where the wrappers' files live on every machine: the running user's (root's), mode 0700.
#: Not under /run/harness: in a VM of the lab that is the read-only share of its boot folder.
#: A user who cannot write /run (a non-root inventory user) gets ~/.harness-tracked instead.
STOP_DIR = "/run/harness-tracked"
REFUSED = 3  # STOP_TRACKED's status when the folder or file is not as the harness made it

# The folder, made if missing and checked: a directory (no symlink), ours, mode 700.
# TRACK checks with shell builtins only (`-O`: owned by us), as every process started costs
# ~0.2 s under TCG and this runs before every tracked command; the undo checks the mode too.
_DIR_MADE = r"""__d=$1
[ -w "${__d%/*}" ] || __d=$HOME/.harness-tracked  # a user who cannot write /run: their own
[ -d "$__d" ] || mkdir -p -m 0700 "$__d"
if [ -L "$__d" ] || [ ! -d "$__d" ] || [ ! -O "$__d" ]; then
  echo "harness: $__d is not a folder of user $(id -u)" >&2; exit 125
fi
"""
_DIR_CHECK = r"""__d=$1
[ -w "${__d%/*}" ] || __d=$HOME/.harness-tracked
[ -e "$__d" ] || [ -L "$__d" ] || exit 0
if [ -L "$__d" ] || [ ! -d "$__d" ] || [ "$(stat -c %u:%a "$__d")" != "$(id -u):700" ]; then
  echo "harness: $__d is not a folder of user $(id -u) with mode 0700: refused" >&2; exit 3
fi
"""

# sh -c TRACK harness-tracked DIR NAME COMMAND: "<pid> <start ticks> <pgrp>" of this shell
# into DIR/NAME (created exclusively), the command run by `sh -c` exactly as an untracked node.run runs it (not in a
# subshell: there `$$` would name this wrapper, and `echo $$ > cgroup.procs` would put the
# wrapper, not the tool, in a CPU-limited cgroup), the file removed, the command's status
# passed on. /proc/$$/stat is read with the `read` builtin (fields 22 and 5 counted after
# the last ")", as procfs.PROC_STAT_SH does): under TCG every process started costs ~0.2 s.
TRACK = _DIR_MADE + r"""__hf="$__d/$2" __hc=$3
if read -r __hs </proc/$$/stat; then
  set -- ${__hs##*)}
  set -C  # O_EXCL: never write through a name someone put there
  printf '%s %s %s\n' "$$" "${20}" "$3" >"$__hf" || exit 125
  set +C
fi
sh -c "$__hc"
__hs=$?
rm -f "$__hf"
exit $__hs
"""

# sh -c STOP_TRACKED harness-stop DIR NAME: stop the group recorded in DIR/NAME while its
# wrapper is the same process, leads that group, and the group is not our own; remove the
# file. The folder and file are checked first (see the module's docstring): a file that is a
# symlink, or not ours, is refused (status 3) and left for the user to look at.
STOP_TRACKED = PROC_STAT_SH + GROUP_RUNNING_SH + _DIR_CHECK + r"""f="$__d/$2"
[ -e "$f" ] || [ -L "$f" ] || exit 0
if [ -L "$f" ] || [ ! -f "$f" ] || [ "$(stat -c %u "$f")" != "$(id -u)" ]; then
  echo "harness: $f is a symlink, not a file, or not ours: refused" >&2; exit 3
fi
read p t g <"$f"
case "$p:$t:$g" in *[!0-9:]*|:*|*::*|*:) rm -f "$f"; exit 0 ;; esac
proc_stat $$; me=$proc_pgrp
if [ "$g" -gt 1 ] && [ "$g" != "$me" ] && proc_stat "$p" \
    && [ "$proc_start" = "$t" ] && [ "$proc_pgrp" = "$g" ]; then
  kill -s TERM -- "-$g" 2>/dev/null
  i=0
  while kill -s 0 -- "-$g" 2>/dev/null && [ $i -lt 10 ]; do sleep 0.3; i=$((i + 1)); done
  kill -s KILL -- "-$g" 2>/dev/null
  i=0
  while group_running "$g" && [ $i -lt 15 ]; do sleep 0.2; i=$((i + 1)); done
  if group_running "$g"; then echo "process group $g still running after SIGKILL:$live" >&2; exit 5; fi
fi
rm -f "$f"
exit 0
"""

_STILL_RUNNING = 5
_active: list[Journal] = []


@contextmanager
def journalled(journal: Journal) -> Iterator[Journal]:
    """Inside the block, ``node.run(..., track=True)`` is journalled in ``journal``."""
    _active.append(journal)
    base.tracker = _track
    try:
        yield journal
    finally:
        _active.remove(journal)
        if not _active:
            base.tracker = None


def _track(node: Node, cmd: Command, **kwargs) -> Result:
    return run_tracked(_active[-1], node, cmd, **kwargs)


def tracked_command(name: str, cmd: Command) -> list[str]:
    return ["sh", "-c", TRACK, "harness-tracked", STOP_DIR, name, command_text(cmd)]


def run_tracked(journal: Journal, node: Node, cmd: Command, *, timeout: float = 60.0,
                check: bool = True, stdin: bytes | None = None,
                hint: str | None = None) -> Result:
    """``node.run(cmd)``, journalled before it starts and stopped by that record if it does
    not end by itself (see the module's docstring)."""
    text = command_text(cmd)
    name = PREFIX + secrets.token_hex(8)
    with signals_deferred():  # Ctrl-C between the record and the start cannot leak it
        entry = journal.record_change("tracked", node.machine,
                                      {"name": name, "command": text, "node": node.describe()})
    try:
        result = node.run(tracked_command(name, cmd), timeout=timeout, check=False,
                          stdin=stdin)
    except BaseException:
        try:
            journal.undo(entry)
        except Exception:  # noqa: BLE001 -- e.g. the node is gone: the entry stays pending
            pass           # for the session's undo and `harness lab clean`; the cause matters
        raise
    journal.mark_undone(entry)  # it ended; its wrapper removed the file
    result = dataclasses.replace(result, command=text)
    if check and not result.ok:
        raise CommandFailed(result, hint)
    return result


@undo_handler("tracked", gone_with_namespace=False)
def stop_tracked(node: Node, data: dict) -> None:
    """Stop a journalled foreground command's group if its wrapper still runs; remove its file.

    On this machine in Python (``O_NOFOLLOW`` and ``fstat``), elsewhere by
    :data:`STOP_TRACKED` in one round trip; both check the same things."""
    name = undo_checks.text("tracked", "name", data.get("name"), NAME)
    if node.is_local:
        folder = STOP_DIR
        if not os.access(os.path.dirname(folder), os.W_OK):
            folder = os.path.expanduser("~/.harness-tracked")
        stop_local(folder, name)
        return
    res = node.run(shlex.join(["sh", "-c", STOP_TRACKED, "harness-stop", STOP_DIR, name]),
                   check=False, timeout=30)
    if res.exit_status == REFUSED:
        raise undo_checks.RefusedRecord(f"{node.name}: {res.stderr.strip()}",
                                        "look at the file; no process was signalled")
    if res.exit_status == _STILL_RUNNING:
        raise UndoLeft(f"tracked command {name} on {node.name}", " ".join(res.stderr.split()),
                       "kill -KILL the process group named")
    if not res.ok:
        raise CommandFailed(res)


def stop_local(folder: str, name: str, grace: float = 3.0) -> None:
    """This machine's :data:`STOP_TRACKED`: read ``folder/name`` without following a
    symlink, only if the folder and file are ours (and the folder 0700); signal the recorded
    group only while its pid is the process that started at the recorded tick and leads it."""
    def refused(what: str) -> undo_checks.RefusedRecord:
        return undo_checks.RefusedRecord(f"tracked command's file {folder}/{name}: {what}",
                                         "look at it; no process was signalled")

    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return  # nothing was ever written here
    except OSError as exc:
        raise refused(f"its folder cannot be opened without following a link ({exc})") from None
    try:
        st = os.fstat(dfd)
        if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
            raise refused(f"its folder belongs to uid {st.st_uid} with mode "
                          f"{stat.S_IMODE(st.st_mode):o}, not ours with 0700")
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
        except FileNotFoundError:
            return  # the command ended and its wrapper removed the file
        except OSError as exc:  # ELOOP: a symlink
            raise refused(f"cannot be opened without following a link ({exc})") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                raise refused(f"not a regular file of ours (uid {st.st_uid})")
            words = os.read(fd, 256).decode(errors="replace").split()
        finally:
            os.close(fd)
        if len(words) == 3 and all(w.isdigit() for w in words):
            _stop_group(*(int(w) for w in words), grace=grace)
        os.unlink(name, dir_fd=dfd)
    finally:
        os.close(dfd)


def _stop_group(pid: int, ticks: int, pgrp: int, grace: float) -> None:
    """TERM, then KILL after ``grace`` s, to group ``pgrp`` -- only while ``pid`` is the
    process that started at ``ticks`` and leads ``pgrp``, and the group is not ours."""
    found = read_stat(pid)
    if (found is None or found.ended or found.start_ticks != ticks or found.pgid != pgrp
            or pgrp <= 1 or pgrp == os.getpgrp()):
        return
    try:
        os.killpg(pgrp, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pgrp, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(pgrp, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 3.0  # a group on its way out after SIGKILL (issue 40)
    while (live := group_running(pgrp)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if live:
        raise UndoLeft(f"tracked command's process group {pgrp}",
                       f"still running after SIGKILL: pids {' '.join(map(str, live))}",
                       f"kill -KILL -- -{pgrp}")
