"""Kernel parameters (sysctl): read, set if different, restore the old value."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..errors import SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import expect
from ..nodes import Node, Result
from .operation import Change, Fact, Operation


def normalise(value: str) -> str:
    return " ".join(str(value).split())


def sysctl_fact(node: Node, key: str) -> Fact:
    """The value of ``key`` on ``node`` (whitespace normalised); SpecError if it has none."""

    def parse(res: Result) -> str:
        if not res.ok:
            raise SpecError(f"{node.name} has no sysctl {key!r}: {res.stderr.strip()}",
                            "check the name (`sysctl -a`); some keys need a kernel module loaded")
        return normalise(res.stdout)

    return Fact(node, shlex.join(["sysctl", "-n", key]), parse)


def read_sysctl(node: Node, key: str) -> str:
    return sysctl_fact(node, key).read()


def write_command(key: str, value: str) -> str:
    return shlex.join(["sysctl", "-qw", f"{key}={value}"])


@dataclass
class Sysctl(Operation):
    """``key`` = ``value`` on ``node``; the old value is restored on undo."""

    node: Node
    key: str
    value: str | int

    def facts(self) -> dict[str, Fact]:
        return {"value": sysctl_fact(self.node, self.key)}

    def diff(self, facts: dict) -> list[Change]:
        return [sysctl_change(self.node, self.key, facts["value"], normalise(str(self.value)))]


@dataclass
class SysctlAtLeast(Sysctl):
    """An integer ``key`` raised to ``value`` if it is below it, left as it is otherwise
    (e.g. net.core.rmem_max, which caps what a socket may ask for)."""

    def diff(self, facts: dict) -> list[Change]:
        before = facts["value"]
        try:
            enough = int(before) >= int(self.value)
        except ValueError:
            raise SpecError(f"{self.node.name}: sysctl {self.key} is {before!r}, not an integer",
                            "SysctlAtLeast is for integer keys; use Sysctl") from None
        return [sysctl_change(self.node, self.key, before,
                              before if enough else normalise(str(self.value)))]


def sysctl_change(node: Node, key: str, before, after: str) -> Change:
    """The change from ``before`` (a fact's value) to ``after``: none if they are equal."""
    change = Change(node, "sysctl", key, before, after)
    if before != after:
        change.command = write_command(key, after)
        change.undo = {"key": key, "before": before, "after": after}
    return change


#: Every key the harness changes is a network one (net.ipv4.*, net.core.*, net.mptcp.*);
#: a record restoring any other (kernel.core_pattern runs a program as root) is refused.
_KEY = re.compile(r"^net(\.[A-Za-z0-9_-]+){1,6}\Z")
_VALUE = re.compile(r"^[A-Za-z0-9 _.:,/+-]{0,256}\Z")


@undo_handler("sysctl")
def _restore_sysctl(node: Node, data: dict) -> None:
    key = undo_checks.text("sysctl", "key", data.get("key"), _KEY)
    before = undo_checks.text("sysctl", "before", str(data.get("before")), _VALUE)
    command = write_command(key, before)
    tried = node.run(command, check=False, timeout=10)
    expect(read_sysctl(node, key), normalise(before), f"sysctl {key} on {node.name}", command,
           tried)
