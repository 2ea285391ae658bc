"""``/proc/PID/stat``: the one parser (Python) and the one shell function for it.

Why it matters: a PID alone does not name a process -- it is reused -- so the
harness identifies each process it starts by PID *and* start time (field 22,
clock ticks since boot), and signals it only while both match. The command
name (field 2) is in parentheses and may hold spaces and ")", so fields are
counted after the LAST ")".
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    """The fields of one /proc/PID/stat line that the harness uses."""

    pid: int
    state: str  # R, S, D, Z (zombie), X/x (dead), ...
    ppid: int
    pgid: int
    utime: int  # clock ticks
    stime: int
    start_ticks: int  # since boot: with pid, the identity of the process
    cutime: int = 0  # of children it has waited for
    cstime: int = 0

    @property
    def cpu_ticks(self) -> int:
        return self.utime + self.stime

    @property
    def ended(self) -> bool:
        """Exited and not yet reaped (zombie), or dead."""
        return self.state in ("Z", "X", "x")


def parse_stat(line: str) -> ProcStat:
    """One /proc/PID/stat line (ValueError if it is not one)."""
    head, sep, tail = line.rpartition(")")
    fields = tail.split()
    if not sep or len(fields) < 20:
        raise ValueError(f"not a /proc/PID/stat line: {line[:120]!r}")
    # fields[0] is field 3 (state): field N is fields[N - 3]
    return ProcStat(int(head.split("(", 1)[0]), fields[0], int(fields[1]), int(fields[2]),
                    int(fields[11]), int(fields[12]), int(fields[19]), int(fields[13]),
                    int(fields[14]))


def parse_stats(text: str) -> list[ProcStat]:
    """Every parseable /proc/PID/stat line of ``text`` (others skipped)."""
    out = []
    for line in text.splitlines():
        try:
            out.append(parse_stat(line))
        except ValueError:
            continue
    return out


def read_stat(pid: int) -> ProcStat | None:
    """/proc/PID/stat of a process of this machine; None if there is none."""
    try:
        with open(f"/proc/{int(pid)}/stat") as fh:
            return parse_stat(fh.read())
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None


def group_running(pgrp: int) -> list[int]:
    """The pids of process group ``pgrp`` of this machine still running (zombies do not
    count; :data:`GROUP_RUNNING_SH` in Python)."""
    try:
        os.killpg(pgrp, 0)
    except (ProcessLookupError, PermissionError):
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = read_stat(int(entry))
            if stat is not None and stat.pgid == pgrp and not stat.ended:
                found.append(int(entry))
    return found


def process_start_ticks(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat)."""
    stat = read_stat(pid)
    return None if stat is None else stat.start_ticks


def stat_command(pids: list[int]) -> str:
    """Shell command printing /proc/PID/stat of each pid (vanished ones silently skipped)."""
    return ("cat " + " ".join(f"/proc/{int(p)}/stat" for p in pids) if pids else "true") \
        + " 2>/dev/null"


def cpu_ticks(stat_text: str) -> int:
    """utime + stime (clock ticks) summed over the /proc/PID/stat lines of ``stat_text``."""
    return sum(stat.cpu_ticks for stat in parse_stats(stat_text))


#: Shell function (POSIX sh) for scripts that run on a node: ``proc_stat PID``
#: sets ``proc_state`` (field 3), ``proc_pgrp`` (field 5, its process group) and
#: ``proc_start`` (field 22, start ticks) and fails if there is no such process.
#: The function's own positional parameters are used, the caller's are left alone.
# group_running PGID: whether a member of process group PGID still runs (a zombie waiting to be
# reaped does not: a container's init may never reap it); its pids in $live. One /proc scan,
# only while `kill -0` finds the group at all (the common case after SIGKILL: it does not).
GROUP_RUNNING_SH = r"""group_running() {
  kill -s 0 -- -$1 2>/dev/null || return 1
  live=
  for __d in /proc/[0-9]*; do
    read -r __s 2>/dev/null < $__d/stat || continue
    set -- "$1" ${__s##*)}
    [ "$4" = "$1" ] && [ "$2" != Z ] && live="$live ${__d#/proc/}"
  done
  [ -n "$live" ]
}
"""

PROC_STAT_SH = r"""proc_stat() {
  proc_state= proc_start= proc_pgrp=
  __ps=$(cat /proc/$1/stat 2>/dev/null)
  [ -n "$__ps" ] || return 1
  set -- ${__ps##*)}
  proc_state=$1 proc_pgrp=$3 proc_start=${20}
}
"""
