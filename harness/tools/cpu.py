"""CPU use of a machine, read from its /proc: a process group's CPU seconds, the load average.

Both are facts of the *machine* under a node (a namespace node shares its
host's processes and load), so they are read through ``node.machine``.
"""

from __future__ import annotations

from ..nodes import Node


def group_cpu_seconds(node: Node, pgid: int) -> float:
    """CPU seconds of a process group (live members + children they reaped), via /proc.

    utime + stime + cutime + cstime (fields 14-17 of /proc/PID/stat) of every
    process whose process group is ``pgid``: a relay that forks per connection
    (socat) is counted with its children. One command reads every stat file
    and the clock tick rate, so the sum is one snapshot. (Parsed here, not by
    :mod:`harness.nodes.procfs`: its ``ProcStat`` has no cutime/cstime, and
    without them a socat child's CPU would vanish from the sum when it is reaped.)
    """
    machine = node.machine
    out = machine.run("cat /proc/[0-9]*/stat 2>/dev/null; getconf CLK_TCK", check=False,
                      timeout=20).stdout.splitlines()
    hz = int(out[-1]) if out and out[-1].isdigit() else 100
    ticks = 0
    for line in out[:-1]:
        try:
            fields = line.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                ticks += sum(int(f) for f in fields[11:15])
        except (IndexError, ValueError):
            continue
    return ticks / hz


def machine_load(node: Node) -> float:
    """1-minute load average of the machine under ``node`` (the machine is shared: noise)."""
    return float(node.machine.read_text("/proc/loadavg").split()[0])
