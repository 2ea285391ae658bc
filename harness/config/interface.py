"""Interface settings: MTU and offloads (ethtool -K), restored afterwards."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from ..errors import SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import expect
from ..nodes import Node, Result
from ..tools.registry import Tool
from .operation import UNKNOWN, Change, Fact, Operation

ETHTOOL = Tool("ethtool", "ethtool --version", "ethtool")


def mtu_fact(node: Node, ifname: str) -> Fact:
    def parse(res: Result) -> int:
        if not res.ok:
            raise SpecError(f"{node.name} has no interface {ifname!r}",
                            f"list its interfaces with `ip link` on {node.name}")
        return int(json.loads(res.stdout)[0]["mtu"])

    return Fact(node, shlex.join(["ip", "-j", "link", "show", "dev", ifname]), parse)


def read_mtu(node: Node, ifname: str) -> int:
    return mtu_fact(node, ifname).read()


def mtu_command(ifname: str, mtu: int) -> str:
    return shlex.join(["ip", "link", "set", "dev", ifname, "mtu", str(mtu)])


@dataclass
class Mtu(Operation):
    node: Node
    ifname: str
    mtu: int

    def check(self) -> None:
        if not 68 <= self.mtu <= 65535:
            raise SpecError(f"MTU {self.mtu} is out of range", "use 68..65535")

    def facts(self) -> dict[str, Fact]:
        return {"mtu": mtu_fact(self.node, self.ifname)}

    def diff(self, facts: dict) -> list[Change]:
        before = facts["mtu"]
        change = Change(self.node, "mtu", self.ifname, before, self.mtu)
        if before != self.mtu:
            change.command = mtu_command(self.ifname, self.mtu)
            change.undo = {"ifname": self.ifname, "before": before}
        return [change]


def offload_fact(node: Node, ifname: str, feature: str) -> Fact:
    def parse(res: Result) -> bool:
        if not res.ok:
            raise SpecError(f"{node.name}: `ethtool -k {ifname}` failed: "
                            f"{(res.stderr or res.stdout).strip()}",
                            f"check the interface (`ip link` on {node.name}) and that "
                            "ethtool is installed")
        for line in res.stdout.splitlines():
            name, _, state = line.strip().partition(":")
            if name == feature:
                return state.split()[0] == "on"
        raise SpecError(f"{node.name}:{ifname} has no offload feature {feature!r}",
                        f"see `ethtool -k {ifname}` for the names")

    return Fact(node, shlex.join(["ethtool", "-k", ifname]), parse)


def offload_command(ifname: str, feature: str, enabled: bool) -> str:
    return shlex.join(["ethtool", "-K", ifname, feature, "on" if enabled else "off"])


def _on_off(value) -> str:
    return value if value is UNKNOWN else ("on" if value else "off")


@dataclass
class Offload(Operation):
    """E.g. feature 'generic-segmentation-offload' (ethtool's long name) on or off."""

    node: Node
    ifname: str
    feature: str
    enabled: bool

    def facts(self) -> dict[str, Fact]:
        return {"enabled": offload_fact(self.node, self.ifname, self.feature)}

    def diff(self, facts: dict) -> list[Change]:
        before = facts["enabled"]
        change = Change(self.node, "offload", f"{self.ifname} {self.feature}", _on_off(before),
                        _on_off(self.enabled))
        if before != self.enabled:
            change.command = offload_command(self.ifname, self.feature, self.enabled)
            change.undo = {"ifname": self.ifname, "feature": self.feature, "before": before}
        return [change]


@undo_handler("mtu")
def _restore_mtu(node: Node, data: dict) -> None:
    mtu = undo_checks.integer("mtu", data.get("before"), "before", 68, 65535)
    ifname = undo_checks.ifname("mtu", data.get("ifname"))
    command = mtu_command(ifname, mtu)
    tried = node.run(command, check=False, timeout=10)
    fact = mtu_fact(node, ifname)
    res = node.run(fact.command, check=False, timeout=10)
    if res.ok:  # a link gone is as found
        expect(fact.parse(res), mtu, f"MTU of {ifname} on {node.name}", command, tried)


@undo_handler("offload")
def _restore_offload(node: Node, data: dict) -> None:
    before = data.get("before")
    if not isinstance(before, bool):
        raise undo_checks.refuse("offload", "before is not on/off", before)
    feature = undo_checks.text("offload", "feature", data.get("feature"), _FEATURE)
    ifname = undo_checks.ifname("offload", data.get("ifname"))
    command = offload_command(ifname, feature, before)
    tried = node.run(command, check=False, timeout=10)
    if node.run(["ip", "link", "show", "dev", ifname], check=False, timeout=10).ok:
        expect(_on_off(offload_fact(node, ifname, feature).read()), _on_off(before),
               f"offload {feature} of {ifname} on {node.name}", command, tried)


_FEATURE = re.compile(r"^[a-z][a-z0-9-]{0,63}\Z")  # ethtool -k's names: tso, gro, rx-gro-hw
