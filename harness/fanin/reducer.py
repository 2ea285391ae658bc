"""Start the mappers (background, journalled) and run the reducer (foreground) on lab nodes.

Mappers in namespaces of one machine are started as ONE background process
on that machine (a :class:`~harness.nodes.group.Launcher`: a shell that starts
each mapper inside its namespace and waits): with 48
mappers inside a VM this is one journal entry and one SSH round trip to
start, poll and stop, instead of 48 of each. Stopping sends SIGTERM to the
whole process group; every mapper then prints its counters and rusage.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import HarnessError
from ..journal.journal import Journal
from ..nodes import Node
from ..nodes.base import Process
from ..nodes.group import Call, launchers
from ..nodes.procfs import cpu_ticks, stat_command
from .spec import FaninOutput, ReduceSpec, SocketOptions, events, parse_output, serve_argv

READY_TIMEOUT = 120.0


class FaninError(HarnessError):
    """A mapper did not start, or a reducer failed."""


@dataclass
class MapperFleet:
    proto: str
    listens: list[str]
    groups: list[tuple[Node, Process, int]]  # (machine or node, process, mappers in it)
    pids: dict[str, int] = field(default_factory=dict)  # listen address -> mapper pid
    exits: list[dict] = field(default_factory=list)  # filled when stopped
    output: str = ""

    def pid_groups(self) -> list[tuple[Node, list[int]]]:
        """(machine, pids of mappers running there) -- for reading /proc/PID/stat."""
        out = []
        for machine, _proc, _count in self.groups:
            listens = self._listens_of.get(id(machine), [])
            out.append((machine, [self.pids[a] for a in listens if a in self.pids]))
        return out

    _listens_of: dict[int, list[str]] = field(default_factory=dict, repr=False)


@contextmanager
def mapper_fleet(journal: Journal, nodes: list[Node], listens: list[str], proto: str,
                 binary: str, sockets: SocketOptions | None = None,
                 ready_timeout: float = READY_TIMEOUT) -> Iterator[MapperFleet]:
    """Start one mapper per node (listening on ``listens[i]``); stop all on exit."""
    if len(nodes) != len(listens):
        raise FaninError(f"{len(nodes)} mapper nodes but {len(listens)} addresses")
    sockets = sockets or SocketOptions()
    argvs = [serve_argv(binary, proto, listen, sockets) for listen in listens]
    fleet = MapperFleet(proto, list(listens), [])
    try:
        for launcher in launchers([Call(node, argv) for node, argv in zip(nodes, argvs)]):
            proc = journal.start(launcher.machine, launcher.script)
            fleet.groups.append((launcher.machine, proc, len(launcher.indices)))
            fleet._listens_of[id(launcher.machine)] = [listens[i] for i in launcher.indices]
        _wait_listening(fleet, ready_timeout)
        yield fleet
    finally:
        _stop(journal, fleet)


def _wait_listening(fleet: MapperFleet, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(fleet.groups)
    while pending:
        for group in list(pending):
            _machine, proc, count = group
            output = proc.output()
            ready = events(output, "listening")
            errors = events(output, "error")
            if errors or (proc.poll() is not None and len(ready) < count):
                messages = "; ".join(e.get("message", "") for e in errors) or output[-500:]
                raise FaninError(f"{fleet.proto} mappers failed to start: {messages}",
                                 _start_hint(messages, fleet.proto))
            if len(ready) >= count:
                for event in ready:
                    fleet.pids[event["listen"]] = int(event["pid"])
                pending.remove(group)
        if pending and time.monotonic() > deadline:
            raise FaninError(f"{fleet.proto} mappers did not all listen within {timeout:g}s",
                             "the machine may be overloaded (TCG VM?); raise ready_timeout")
        if pending:
            time.sleep(0.2)


def _start_hint(message: str, proto: str) -> str:
    if "Address family not supported" in message or "Protocol not supported" in message:
        return (f"this kernel has no {proto.upper()}: load its module (modprobe {proto}) or run"
                " the study in a VM lab")
    if "in use" in message:
        return "another process holds that port in the namespace; choose another base port"
    return "see the mapper's message above"


def _stop(journal: Journal, fleet: MapperFleet) -> None:
    outputs = []
    for _machine, proc, _count in fleet.groups:
        try:
            proc.stop()
            outputs.append(proc.output())
        finally:
            journal.stop(proc)
    fleet.output = "\n".join(outputs)
    fleet.exits = events(fleet.output, "exit")


def mapper_cpu_ticks(fleet: MapperFleet) -> int:
    """utime + stime (clock ticks) summed over all running mappers, one command per machine."""
    total = 0
    for machine, pids in fleet.pid_groups():
        if not pids:
            continue
        total += cpu_ticks(machine.run(stat_command(pids), check=False, timeout=60).stdout)
    return total


@dataclass
class ReduceResult:
    spec: ReduceSpec
    targets: list[str]
    exit_status: int
    stdout: str
    stderr: str
    output: FaninOutput
    wall_s: float
    bracket: tuple[str, str] = ("", "")  # what the bracket command printed before and after

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and self.output.ok


BEFORE, AFTER = "@@harness-reducer-begins", "@@harness-reducer-ended"


def run_reducer(node: Node, binary: str, spec: ReduceSpec, targets: list[str],
                check: bool = True, bracket: str = "") -> ReduceResult:
    """Run one reducer to completion on ``node``; its JSON lines are parsed.

    ``bracket``: a shell command for the reducer's machine, run right before and
    right after the reducer *in the same command* -- counters read around the reducer
    without two extra round trips to a slow (TCG) VM. Its two outputs are in ``result.bracket``.
    """
    argv = spec.argv(binary, targets)
    started = time.monotonic()
    if bracket:
        script = (f"{bracket}\necho {BEFORE}\n"
                  f"{node.command_on_machine(argv)}\nst=$?\n"
                  f"echo {AFTER}\n{bracket}\nexit $st")
        res = node.machine.run(script, timeout=spec.time_bound_s() + 60, check=False,
                               track=True)
        before, _, rest = res.stdout.partition(BEFORE + "\n")
        stdout, _, after = rest.partition(AFTER + "\n")
        around = (before, after)
    else:
        res = node.run(argv, timeout=spec.time_bound_s(), check=False, track=True)
        stdout, around = res.stdout, ("", "")
    result = ReduceResult(spec, list(targets), res.exit_status, stdout, res.stderr,
                          parse_output(stdout + "\n" + res.stderr),
                          time.monotonic() - started, around)
    if check and not result.ok:
        errors = "; ".join(result.output.errors) or res.stderr.strip()[-500:] or "(no output)"
        raise FaninError(f"{spec.proto} reducer on {node.name} (N={len(targets)}, "
                         f"size={spec.size}) exited {res.exit_status}: {errors}",
                         _start_hint(errors, spec.proto))
    return result
