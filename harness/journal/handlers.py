"""The undo of the journal's own kinds of change: a process it started, a file it made.

:class:`harness.journal.journal.Journal` starts background processes itself and every
operation may make a file, so these two kinds belong to no operation module. The
functions here do the undo; :mod:`harness.journal.journal` registers them (its records name
it as their kinds' module, as every journal written so far does). Also here: what the
journal does beside an undo -- removing a stopped process's log, and skipping a change
whose namespace is gone.
"""

from __future__ import annotations

import re
import shlex

from ..errors import CommandFailed
from ..nodes import Node
from ..nodes.procfs import GROUP_RUNNING_SH, PROC_STAT_SH
from ..nodes.remote_process import process_folder, remove_files_command
from . import undo_checks
from .started_cmdline import CHECK_CMDLINE_SH, accepted_cmdlines, sound_command, text_word
from .undo_left import UndoLeft


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
# (field 22 of /proc/PID/stat) and, if $3 is 1, runs the command line the harness started
# ($4 the command, then the command lines it may show: harness.journal.started_cmdline); else, with
# the command line it found on stderr, exit 4 and signal nothing. One command: each is a
# round trip to a VM or remote host. `kill -s SIG -- -PGID` works in dash and bash. After
# SIGKILL it looks (issue 40): a member of the group still running (not a zombie waiting to
# be reaped) 3 s later is exit 5, with its pids on stderr. A leader with an empty command
# line is ending (a zombie no one reaps -- its parent, the killed harness, is gone -- or a
# process past releasing its memory): waited for up to 3 s to be a zombie or gone; then
# nothing is signalled, and members of its group still running are exit 6 (its pid and start
# tick say it was the run's, but no command line says the members are).
STOP_RECORDED_PROCESS = PROC_STAT_SH + GROUP_RUNNING_SH + CHECK_CMDLINE_SH + r"""
p=$1 t=$2 check=$3 text=$4
shift 4
ours() { proc_stat $p && [ "$proc_start" = "$t" ]; }
ended() { ! ours || [ "$proc_state" = Z ] || [ "$proc_state" = X ]; }
if ours; then
  if [ "$check" = 1 ] && ! cmdline_ok $p "$text" "$@"; then
    if [ -z "$found" ]; then
      i=0
      while ! ended && [ $i -lt 15 ]; do sleep 0.2; i=$((i + 1)); done
      if ended; then
        if group_running $p; then echo "$live" >&2; exit 6; fi
        exit 0
      fi
    fi
    printf '%s' "$found" >&2; exit 4
  fi
  kill -s TERM -- -$p 2>/dev/null
  i=0
  while kill -s 0 -- -$p 2>/dev/null && [ $i -lt 10 ]; do sleep 0.3; i=$((i + 1)); done
  kill -s KILL -- -$p 2>/dev/null
  i=0
  while group_running $p && [ $i -lt 15 ]; do sleep 0.2; i=$((i + 1)); done
  if group_running $p; then echo "process group $p still running after SIGKILL:$live" >&2; exit 5; fi
fi
exit 0
"""
_STILL_RUNNING = 5
_REFUSED_CMDLINE = 4
_LEADER_ENDED_GROUP_RUNS = 6
#: The longest recorded command checked (the whole check is one argument of ``sh -c``,
#: which Linux caps at 128 KiB); the harness's longest, QEMU's, is about 2 KiB.
MAX_COMMAND = 16 << 10


def stop_recorded_process(node: Node, data: dict) -> None:
    """Stop a recorded process group, only if its leader is still the same process: the same
    pid and start tick and, for a record read back from a file, a command line the recorded
    command produces (:mod:`harness.journal.started_cmdline`; issue 37: a pid and its start tick are
    both world-readable). A record read back without a sound ``command`` is refused."""
    pid = undo_checks.pid("process", data.get("pid"))
    ticks = undo_checks.integer("process", data.get("start_ticks"), "start_ticks", 0)
    command = data.get("command")
    check = undo_checks.read_back()
    if check and not (sound_command(command) and len(command) <= MAX_COMMAND):
        raise undo_checks.RefusedRecord(
            f"journal record of kind 'process' refused: it holds no command line the harness "
            f"started (command {command!r:.200}), so nothing says pid {pid} at tick {ticks} is "
            "still a process of the run",
            f"stop it by hand if it is the run's: ps -o pid,lstart,args -p {pid}, then "
            f"kill -TERM -- -{pid}")
    words = [text_word(command), *accepted_cmdlines(command)] if check else ["", ""]
    log = _process_log(data)
    cleanup = f" && {_remove_log_command(log)}" if log else ""
    res = node.run(f"sh -c {shlex.quote(STOP_RECORDED_PROCESS)} stop {pid} {ticks} {int(check)} "
                   f"{' '.join(shlex.quote(w) for w in words)}{cleanup}", check=False, timeout=20)
    if res.exit_status == _REFUSED_CMDLINE:
        found = shlex.join(res.stderr.rstrip("\x01").replace("\x02", "\n").split("\x01"))
        raise undo_checks.RefusedRecord(
            f"journal record of kind 'process' refused: process {pid} (start tick {ticks}) runs "
            f"{found!r:.300}, not the command the record says the harness started "
            f"({command!r:.300}) nor a program that command execs",
            f"it is not signalled; if it is the run's all the same, stop it by hand: "
            f"kill -TERM -- -{pid}")
    if res.exit_status == _LEADER_ENDED_GROUP_RUNS:
        raise undo_checks.RefusedRecord(
            f"journal record of kind 'process' refused: its leader, process {pid} (start tick "
            f"{ticks}), has ended, but processes of its group still run ({res.stderr.strip()}); "
            "no command line says they are the run's, so none is signalled",
            f"look at them (ps -o pid,lstart,args -g {pid}); if they are the run's, "
            f"stop them by hand: kill -TERM -- -{pid}")
    if res.exit_status == _STILL_RUNNING:
        raise UndoLeft(f"process group {pid} ({' '.join(str(command or 'a process of the run').split())[:80]})",
                       " ".join(res.stderr.split())[:300], f"kill -KILL -- -{pid}")
    if not res.ok:
        raise CommandFailed(res)


STATE_DIRS = undo_checks.STATE_DIRS  # importable from here, as before


def remove_recorded_file(node: Node, data: dict) -> None:
    """Remove a file or folder this run made: only one the harness names (under its own
    folders, ``harness*``) or a daemon state folder it made, never through a symlink or
    one owned by another user (:func:`harness.journal.undo_checks.guarded_remove`)."""
    path = data.get("path")
    if path not in STATE_DIRS:
        undo_checks.own_path("file", path)
    q = shlex.quote(path)
    # one round trip: remove, then see nothing there any more (rm's own error is the why)
    res = node.run(f"{undo_checks.guarded_remove(path)}; [ ! -e {q} ] && [ ! -L {q} ] || "
                   "exit 1", check=False, timeout=30)
    if res.exit_status == 3:
        raise undo_checks.RefusedRecord(res.stderr.strip(), "check the path by hand")
    if not res.ok:
        raise UndoLeft(f"{path} on {node.name}", " ".join(res.stderr.split())[:600]
                       or "it is still there after rm", f"rm -r -- {q}")
