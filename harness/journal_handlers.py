"""The undo of the journal's own kinds of change: a process it started, a file it made.

:class:`harness.journal.Journal` starts background processes itself and every
operation may make a file, so these two kinds belong to no operation module. The
functions here do the undo; :mod:`harness.journal` registers them (its records name
it as their kinds' module, as every journal written so far does). Also here: what the
journal does beside an undo -- removing a stopped process's log, and skipping a change
whose namespace is gone.
"""

from __future__ import annotations

import re
import shlex

from . import undo_checks
from .nodes import Node
from .nodes.procfs import PROC_STAT_SH
from .nodes.remote_process import process_folder, remove_files_command


def inside_vanished_namespace(node: Node) -> bool:
    """A change inside a namespace that no longer exists is gone with it."""
    path = node.netns_path
    if path is None:
        return False
    return not node.machine.run(["test", "-e", path], check=False, timeout=10).ok


def remove_process_log(node: Node, log: str) -> None:
    if log:
        node.run(_remove_log_command(log), check=False, timeout=10)


def _remove_log_command(log: str) -> str:
    """A log in its own folder (:mod:`harness.nodes.remote_process`) goes with its folder;
    a log of the older layout (beside its status file, right in /tmp) with that file."""
    return remove_files_command(log) or shlex.join(["rm", "-f", "--", log, f"{log}.status"])


_PROCESS_LOG = re.compile(r"^harness-proc-[A-Za-z0-9_]{6,32}(\.log)?\Z")


def _process_log(data: dict) -> str:
    """A recorded process's log, if the harness would have named it so: ``harness-proc-*``
    right in one of its own folders (mktemp there: /tmp or $TMPDIR). Then a plain ``rm -f``
    is safe (no folder on the way that someone could have made a link; a log that is a
    link loses the link only) and costs no extra process (~0.2 s each in a TCG VM). Any
    other log is left where it is; the process is stopped all the same."""
    log = data.get("log") or ""
    if not isinstance(log, str) or not log:
        return ""
    try:
        path = undo_checks.under_roots("process", log, "log")
    except undo_checks.RefusedRecord:
        return ""
    folder, name = path.rsplit("/", 1)
    if process_folder(path) is not None:  # its own folder, right in one of the harness's
        return path if folder.rsplit("/", 1)[0] in undo_checks.own_roots() else ""
    return path if folder in undo_checks.own_roots() and _PROCESS_LOG.match(name) else ""


# Stop process group $1 if its leader is still the process that started at tick $2
# (field 22 of /proc/PID/stat), then remove its log files. One command: each is a
# round trip to a VM or remote host. `kill -s SIG -- -PGID` works in dash and bash.
STOP_RECORDED_PROCESS = PROC_STAT_SH + r"""
p=$1 t=$2
if proc_stat $p && [ "$proc_start" = "$t" ]; then
  kill -s TERM -- -$p 2>/dev/null
  i=0
  while kill -s 0 -- -$p 2>/dev/null && [ $i -lt 10 ]; do sleep 0.3; i=$((i + 1)); done
  kill -s KILL -- -$p 2>/dev/null
fi
exit 0
"""


def stop_recorded_process(node: Node, data: dict) -> None:
    """Stop a recorded process group, only if its leader is still the same process."""
    pid = undo_checks.pid("process", data.get("pid"))
    ticks = undo_checks.integer("process", data.get("start_ticks"), "start_ticks", 0)
    log = _process_log(data)
    cleanup = f" && {_remove_log_command(log)}" if log else ""
    node.run(f"sh -c {shlex.quote(STOP_RECORDED_PROCESS)} stop {pid} {ticks}{cleanup}",
             timeout=20)


STATE_DIRS = undo_checks.STATE_DIRS  # importable from here, as before


def remove_recorded_file(node: Node, data: dict) -> None:
    """Remove a file or folder this run made: only one the harness names (under its own
    folders, ``harness*``) or a daemon state folder it made, never through a symlink or
    one owned by another user (:func:`harness.undo_checks.guarded_remove`)."""
    path = data.get("path")
    if path not in STATE_DIRS:
        undo_checks.own_path("file", path)
    res = node.run(undo_checks.guarded_remove(path), check=False, timeout=30)
    if res.exit_status == 3:
        raise undo_checks.RefusedRecord(res.stderr.strip(), "check the path by hand")
