"""CPU use of a machine, read from its /proc: a process group's CPU seconds and context switches,
the load average.

Both are facts of the *machine* under a node (a namespace node shares its
host's processes and load), so they are read through ``node.machine``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HarnessError
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


@dataclass(frozen=True)
class ContextSwitches:
    """A count of context switches, voluntary and involuntary apart.

    *Voluntary*: the thread gave up the CPU itself, sleeping until something happened (a relay in
    epoll_wait until a message arrives: what a relay's design causes, one per wake-up).
    *Involuntary*: the scheduler took the CPU from a runnable thread (preemption: what the
    machine's other load causes, e.g. a shared 2-core host). Read from /proc's
    ``voluntary_ctxt_switches`` and ``nonvoluntary_ctxt_switches``."""

    voluntary: int = 0
    involuntary: int = 0

    @property
    def total(self) -> int:
        return self.voluntary + self.involuntary

    def __add__(self, other: ContextSwitches) -> ContextSwitches:
        return ContextSwitches(self.voluntary + other.voluntary, self.involuntary + other.involuntary)

    def __sub__(self, other: ContextSwitches) -> ContextSwitches:
        return ContextSwitches(self.voluntary - other.voluntary, self.involuntary - other.involuntary)


def group_context_switches(node: Node, pgid: int) -> ContextSwitches:
    """Context switches, voluntary and involuntary apart, of every live thread of process group
    ``pgid``.

    Read from /proc/PID/task/TID/status (``voluntary_ctxt_switches`` and
    ``nonvoluntary_ctxt_switches``): a relay that sleeps in epoll_wait and wakes per message
    switches out voluntarily once per wake-up, so the difference of two readings around a
    ping-pong is the relay's switches for its messages; the involuntary ones are the machine's
    preemptions of it. A thread or child that ended between the readings takes its count with
    it (the harness's relays are one process, one thread).
    """
    pids = [st.pid for st in parse_stats(node.machine.run(
        "cat /proc/[0-9]*/stat 2>/dev/null", check=False, timeout=20).stdout) if st.pgid == pgid]
    if not pids:
        raise HarnessError(f"process group {pgid} on {node.name} has no live process: its "
                           "context switches cannot be read", "is the relay still running?")
    paths = " ".join(f"/proc/{pid}/task/*/status" for pid in pids)
    return context_switches(node.machine.run(f"cat {paths} 2>/dev/null", check=False,
                                             timeout=20).stdout)


def context_switches(status_text: str) -> ContextSwitches:
    """The voluntary and the involuntary context switches in /proc status files' text, each
    summed over the files."""
    voluntary = involuntary = 0
    for line in status_text.splitlines():
        key, _, value = line.partition(":")
        if key == "voluntary_ctxt_switches":
            voluntary += int(value.strip())
        elif key == "nonvoluntary_ctxt_switches":
            involuntary += int(value.strip())
    return ContextSwitches(voluntary, involuntary)


def machine_load(node: Node) -> float:
    """1-minute load average of the machine under ``node`` (the machine is shared: noise)."""
    return float(node.machine.read_text("/proc/loadavg").split()[0])
