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
process group into that file, runs the command, and removes the file. It is
still one ``node.run``, one round trip (what matters under TCG: ~0.5 s each).
When the command ends normally the entry is marked undone. After a timeout, an
error, Ctrl-C -- or, from ``harness lab clean``, after a SIGKILL -- the undo reads
the file and stops the process group only while the wrapper is still the same
process (pid *and* start time), then removes the file. Never by name.
"""

from __future__ import annotations

import dataclasses
import secrets
import shlex
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import CommandFailed
from .journal import Journal, signals_deferred, undo_handler
from .nodes import base
from .nodes.base import Command, Node, command_text
from .nodes.procfs import PROC_STAT_SH
from .nodes.result import Result

PREFIX = "harness-tracked-"

# sh -c TRACK harness-tracked NAME COMMAND: "<pid> <start ticks> <pgrp>" of this shell into
# $TMPDIR/NAME, the command run by `sh -c` exactly as an untracked node.run runs it (not in a
# subshell: there `$$` would name this wrapper, and `echo $$ > cgroup.procs` would put the
# wrapper, not the tool, in a CPU-limited cgroup), the file removed, the command's status
# passed on. /proc/$$/stat is read with the `read` builtin (fields 22 and 5 counted after
# the last ")", as procfs.PROC_STAT_SH does): under TCG every process started costs ~0.2 s.
TRACK = r"""__hf="${TMPDIR:-/tmp}/$1" __hc=$2
if read -r __hs </proc/$$/stat; then
  set -- ${__hs##*)}
  printf '%s %s %s\n' "$$" "${20}" "$3" >"$__hf"
fi
sh -c "$__hc"
__hs=$?
rm -f "$__hf"
exit $__hs
"""

# sh -c STOP_TRACKED harness-stop NAME: stop the group recorded in $TMPDIR/NAME while its
# wrapper is the same process and the group is not our own; remove the file.
STOP_TRACKED = PROC_STAT_SH + r"""f="${TMPDIR:-/tmp}/$1"
[ -f "$f" ] || exit 0
read p t g <"$f"
proc_stat $$; me=$proc_pgrp
if [ -n "$g" ] && [ "$g" -gt 1 ] && [ "$g" != "$me" ] && proc_stat "$p" \
    && [ "$proc_start" = "$t" ]; then
  kill -s TERM -- "-$g" 2>/dev/null
  i=0
  while kill -s 0 -- "-$g" 2>/dev/null && [ $i -lt 10 ]; do sleep 0.3; i=$((i + 1)); done
  kill -s KILL -- "-$g" 2>/dev/null
fi
rm -f "$f"
exit 0
"""

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
    return ["sh", "-c", TRACK, "harness-tracked", name, command_text(cmd)]


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
def _undo_tracked(node: Node, data: dict) -> None:
    """Stop a journalled foreground command's group if its wrapper still runs; remove its file."""
    node.run(shlex.join(["sh", "-c", STOP_TRACKED, "harness-stop", data["name"]]), timeout=30)
