"""CPU use of a machine, read from its /proc: a process group's CPU seconds, the load average.

Both are facts of the *machine* under a node (a namespace node shares its
host's processes and load), so they are read through ``node.machine``.
"""

from __future__ import annotations

from ..nodes import Node
from ..nodes.procfs import parse_stats


def group_cpu_seconds(node: Node, pgid: int) -> float:
    """CPU seconds of a process group (live members + children they reaped), via /proc.

    utime + stime + cutime + cstime of every process whose process group is
    ``pgid``: a relay that forks per connection (socat) is counted with its
    children, and a child's CPU stays in the sum after it is reaped (it moves
    to its parent's cutime/cstime). One command reads every stat file and the
    clock tick rate, so the sum is one snapshot.
    """
    out = node.machine.run("cat /proc/[0-9]*/stat 2>/dev/null; getconf CLK_TCK", check=False,
                           timeout=20).stdout.splitlines()
    hz = int(out[-1]) if out and out[-1].isdigit() else 100
    ticks = sum(st.utime + st.stime + st.cutime + st.cstime
                for st in parse_stats("\n".join(out[:-1])) if st.pgid == pgid)
    return ticks / hz


def machine_load(node: Node) -> float:
    """1-minute load average of the machine under ``node`` (the machine is shared: noise)."""
    return float(node.machine.read_text("/proc/loadavg").split()[0])
