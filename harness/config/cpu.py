"""A CPU taken offline or brought online (``/sys/devices/system/cpu/cpuN/online``), restored.

Why: S1 tests the paper's SMP-kernel observation (001:52) by running the same stock SMP
kernel on one and on two CPUs; a stock Debian kernel is always an SMP build, so the number
of CPUs it runs on is what a lab can vary. Writing 0 to a CPU's ``online`` file migrates
its tasks and interrupts to the others; writing back what was found restores it. A CPU
without that file does not exist or cannot be hot-unplugged (x86's CPU 0 on Debian's 6.1
kernel, CONFIG_BOOTPARAM_HOTPLUG_CPU0 unset): the fact refuses it before anything changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import expect
from ..nodes import Node, Result
from .operation import UNKNOWN, Change, Fact, Operation

KIND = "cpu-online"
_PATH = re.compile(r"^/sys/devices/system/cpu/cpu[0-9]{1,4}/online$")


def online_path(cpu: int) -> str:
    return f"/sys/devices/system/cpu/cpu{cpu}/online"


def online_fact(node: Node, cpu: int) -> Fact:
    """Whether ``cpu`` is online (True/False); SpecError if it has no ``online`` file."""
    path = online_path(cpu)

    def parse(res: Result) -> bool:
        value = res.stdout.strip()
        if not res.ok or value not in ("0", "1"):
            raise SpecError(f"{node.name}: CPU {cpu} cannot be taken offline or brought "
                            f"online: {path} is missing ({(res.stderr or value).strip()[:200]})"
                            " -- the machine has no such CPU or cannot hot-unplug it",
                            "give the machine that CPU (a VM: 2 vCPUs), or leave out the "
                            "level that needs it")
        return value == "1"

    return Fact(node, f"cat {path}", parse)


def write_command(path: str, online: bool) -> str:
    """The shell command that writes 1 or 0 (``path`` checked against :data:`_PATH`)."""
    return f"echo {int(online)} > {path}"


@dataclass
class CpuOnline(Operation):
    """CPU ``cpu`` of ``node`` online (True) or offline (False); undone to what was found."""

    node: Node
    cpu: int
    online: bool

    def check(self) -> None:
        if isinstance(self.cpu, bool) or not isinstance(self.cpu, int) \
                or not 0 <= self.cpu <= 9999:
            raise SpecError(f"CPU {self.cpu!r} is not a CPU number", "give 0..9999")
        if not isinstance(self.online, bool):
            raise SpecError(f"online={self.online!r} is not true or false",
                            "give True (online) or False (offline)")

    def facts(self) -> dict[str, Fact]:
        return {"online": online_fact(self.node, self.cpu)}

    def diff(self, facts: dict) -> list[Change]:
        before = facts["online"]
        path = online_path(self.cpu)
        change = Change(self.node, KIND, path, _text(before), _text(self.online))
        if before is UNKNOWN or before != self.online:
            change.command = write_command(path, self.online)
            change.undo = {"path": path, "before": 1 if before is UNKNOWN or before else 0}
        return [change]


def _text(value) -> str:
    return str(value) if value is UNKNOWN else ("online" if value else "offline")


@undo_handler(KIND)
def _restore_cpu(node: Node, data: dict) -> None:
    path = undo_checks.text(KIND, "path", data.get("path"), _PATH)
    before = undo_checks.integer(KIND, data.get("before"), "before", 0, 1)
    command = write_command(path, bool(before))
    tried = node.run(command, check=False, timeout=60)
    cpu = int(re.search(r"cpu(\d+)/online\Z", path).group(1))  # _PATH: it has one
    expect(_text(online_fact(node, cpu).read()), _text(bool(before)),
           f"CPU {cpu} of {node.name} {_text(not before)}", command, tried)
