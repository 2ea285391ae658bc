"""Background processes on any node, controlled only through ``node.run`` (shell commands).

Why shell and not a transport feature: it works the same for SSH hosts, VMs
and the local machine, and survives this controller (the process lives in its
own session, ``setsid``, with output in a log file on the node). A process is
identified by PID *and* start time (:mod:`harness.nodes.procfs`) so that a
reused PID is never signalled; each query or signal is one command that also
waits on the node's side, to save round trips to slow (TCG) VMs.
"""

from __future__ import annotations

import re
import signal
import time

from ..errors import CommandTimeout, NodeError
from .base import Command, Node, Process, ProcessInfo, command_text
from .local import in_cgroup
from .procfs import PROC_STAT_SH, parse_stat

# sh -c _SPAWN harness-spawn CMD: prints the log path, then (from the new
# session leader) "PID <contents of /proc/PID/stat>". The leader traps TERM so
# that, when the group is stopped, it survives its child long enough to record
# the child's exit status (143 for a SIGTERM death); traps do not pass to the
# child. Both lines are written before the leader moves its output to the log,
# which is what lets the SSH channel close.
# The log and the status file live in a folder of their own, made by ``mktemp -d`` (0700,
# this user's): the node's /tmp is shared with its other users, and a status file beside
# the log -- its name in ps -- could be made first by one of them, as a link that root's
# write follows or as a status that is believed. ``set -C`` (noclobber): even in that
# folder the status is written only into a file that did not exist.
_SPAWN = r"""dir=$(mktemp -d "${TMPDIR:-/tmp}/harness-proc-XXXXXXXXXX") || exit 1
log=$dir/log
(set -C && : >"$log") || exit 1
printf '%s\n' "$log"
setsid sh -c '
printf "%s %s\n" "$$" "$(cat /proc/$$/stat)"
exec </dev/null >>"$2" 2>&1
trap : TERM
sh -c "$1"
code=$?
set -C
echo "$code" >"$3"
' harness-proc "$1" "$log" "$dir/status" &
"""

#: The folder _SPAWN makes: ``harness-proc-`` and mktemp's ten letters, in the node's temp.
PROCESS_FOLDER = re.compile(r"harness-proc-[A-Za-z0-9]{10}\Z")

# sh -c _REMOVE harness-remove FOLDER: the folder of a stopped process, its log and status,
# if it is what _SPAWN made (a real folder, not a link, of this user); else nothing.
REMOVE_FILES = r"""d=$1
[ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] || exit 0
rm -f -- "$d/log" "$d/status"
rmdir -- "$d" 2>/dev/null
exit 0
"""


def process_folder(log: str) -> str | None:
    """The folder of a log _SPAWN made (``.../harness-proc-XXXXXXXXXX/log``), else None."""
    folder, _, name = log.rpartition("/")
    if name != "log" or not PROCESS_FOLDER.match(folder.rpartition("/")[2]):
        return None
    return folder


def remove_files_command(log: str) -> str | None:
    """One shell command that removes a stopped process's folder (log and status), or None
    when ``log`` is not in a folder _SPAWN made."""
    folder = process_folder(log)
    if folder is None:
        return None
    return command_text(["sh", "-c", REMOVE_FILES, "harness-remove", folder])


# sh -c _STATE harness-state PID TICKS SIGNAL STATUSFILE TRIES UNTIL
# prints "<before> <after> <group alive 0/1> <exit status or empty>", where
# before/after are running|exited|gone|reused (exited = zombie leader) around
# sending SIGNAL (0: none) and then waiting up to TRIES x 50 ms, on the remote
# side to save round trips, for the leader (UNTIL=leader) or the whole group
# (UNTIL=group) to end. The signal goes to the process group only while the
# leader is the same process (same start time) or, after it ended, while its
# group still exists (a PID cannot be reused while a group of that id has
# members). `kill -s SIG -- -PGID`: dash's kill rejects `kill -SIG -- -PGID`.
_STATE = r"""p=$1 t=$2 sig=$3 st=$4 tries=$5 until=$6
""" + PROC_STAT_SH + r"""probe() {
  state=gone
  if proc_stat $p; then
    if [ "$proc_start" != "$t" ]; then state=reused
    else case $proc_state in Z|X|x) state=exited ;; *) state=running ;; esac
    fi
  fi
  group=0
  if [ "$state" != reused ] && kill -s 0 -- "-$p" 2>/dev/null; then group=1; fi
}
busy() {
  [ "$state" = running ] && return 0
  [ "$until" = group ] && [ "$group" = 1 ] && [ "$state" != exited ]
}
probe
before=$state
if [ "$state" != reused ] && [ "$sig" != 0 ]; then kill -s "$sig" -- "-$p" 2>/dev/null; probe; fi
while [ "$tries" -gt 0 ] && busy; do sleep 0.05; tries=$((tries - 1)); probe; done
code=$(cat "$st" 2>/dev/null)
[ "$state" = running ] || [ -z "$code" ] || rm -f "$st"
echo "$before $state $group $code"
"""


class ShellProcess(Process):
    """A background process on any node, controlled only through ``node.run``.

    Works for SSH hosts, VMs reached by a console or agent, and the local
    machine alike. It runs in its own session (``setsid``), so its process
    group id equals its PID; stop() signals that whole group, SIGTERM first,
    SIGKILL after ``grace``. Exit status comes from a status file written by
    the session leader; a process that vanished without writing one (killed
    from outside) reports ``-signal`` if we had signalled it, else -1.
    """

    def __init__(self, node: Node, info: ProcessInfo):
        self.node = node
        self.info = info
        self._status: int | None = None
        self._signalled = 0

    @property
    def status_file(self) -> str:
        folder = process_folder(self.info.log)
        return self.info.extra.get("status_file") or (
            f"{folder}/status" if folder else f"{self.info.log}.status")

    @classmethod
    def start(
        cls, node: Node, cmd: Command, *, cgroup: str | None = None, timeout: float = 30.0
    ) -> ShellProcess:
        text = in_cgroup(command_text(cmd), cgroup)
        result = node.run(["sh", "-c", _SPAWN, "harness-spawn", text], timeout=timeout)
        lines = result.stdout.splitlines()
        try:
            log_path = lines[0].strip()
            pid_text, stat = lines[1].split(" ", 1)
            pid = int(pid_text)
            ticks = parse_stat(stat).start_ticks
        except (IndexError, ValueError):
            raise NodeError(
                f"on {node.name}: could not start `{text}` in the background:"
                f" {result.stdout.strip()} {result.stderr.strip()}".strip(),
                "the node needs a POSIX sh, mktemp, setsid and /proc",
            ) from None
        info = ProcessInfo(
            node.describe(), pid, ticks, text, log_path,
            {"status_file": f"{log_path.rpartition('/')[0]}/status"}
        )
        return cls(node, info)

    def _state(
        self, sig: str = "0", wait: float = 0.0, until: str = "leader"
    ) -> tuple[str, str, bool]:
        """(state before signalling, state after waiting, group still alive)."""
        tries = max(0, int(wait / 0.05))
        result = self.node.run(
            [
                "sh",
                "-c",
                _STATE,
                "harness-state",
                str(self.info.pid),
                str(self.info.start_ticks),
                sig,
                self.status_file,
                str(tries),
                until,
            ],
            timeout=30 + wait * 1.5,
        )
        fields = result.stdout.split()
        if len(fields) < 3:
            raise NodeError(
                f"on {self.node.name}: cannot query process {self.info.pid}: {result.stdout!r}"
                f" {result.stderr.strip()}"
            )
        if len(fields) > 3:
            self._status = int(fields[3])
        return fields[0], fields[1], fields[2] == "1"

    def _ended(self) -> int:
        if self._status is None:
            self._status = -self._signalled if self._signalled else -1
        return self._status

    def poll(self) -> int | None:
        if self._status is not None:
            return self._status
        _before, state, _group = self._state()
        return None if state == "running" else self._ended()

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self._status is None:
            remaining = deadline - time.monotonic()
            # Wait on the remote side in slices, so one round trip covers up to 5 s.
            _before, state, _group = self._state(wait=max(0.0, min(remaining, 5.0)))
            if state != "running":
                return self._ended()
            if time.monotonic() >= deadline:
                raise CommandTimeout(f"did not finish within {timeout:g}s: {self.info.command}")
        return self._status

    def stop(self, grace: float = 3.0) -> int | None:
        state = "running"
        for sig, wait in (("TERM", grace), ("KILL", 5.0)):
            before, state, group = self._state(sig, wait=wait, until="group")
            if before == "running":
                self._signalled = getattr(signal, f"SIG{sig}")
            if state != "running" and (not group or state == "exited"):
                break
        return None if state == "running" else self._ended()

    def output(self) -> str:
        return self.node.run(["cat", self.info.log], check=False, timeout=60).stdout
