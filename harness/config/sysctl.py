"""Kernel parameters (sysctl): read, set if different, restore the old value."""

from __future__ import annotations

from ..errors import SpecError
from ..journal import Journal, undo_handler
from ..nodes import Node
from .record import ChangeRecord


def normalise(value: str) -> str:
    return " ".join(str(value).split())


def read_sysctl(node: Node, key: str) -> str:
    res = node.run(["sysctl", "-n", key], check=False, timeout=10)
    if not res.ok:
        raise SpecError(f"{node.name} has no sysctl {key!r}: {res.stderr.strip()}",
                        "check the name (`sysctl -a`); some keys need a kernel module loaded")
    return normalise(res.stdout)


def set_sysctl(journal: Journal, node: Node, key: str, value: str | int) -> ChangeRecord:
    value = normalise(str(value))
    before = read_sysctl(node, key)
    if before == value:
        return ChangeRecord(node.name, "sysctl", key, before, value, changed=False)
    journal.record("sysctl", node, key=key, before=before, after=value)
    node.run(["sysctl", "-qw", f"{key}={value}"], timeout=10,
             hint=f"the value {value!r} may be invalid for {key}")
    return ChangeRecord(node.name, "sysctl", key, before, value, changed=True)


@undo_handler("sysctl")
def _restore_sysctl(node: Node, data: dict) -> None:
    node.run(["sysctl", "-qw", f"{data['key']}={data['before']}"], timeout=10)
