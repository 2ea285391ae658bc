"""Interface settings: MTU and offloads (ethtool -K), restored afterwards."""

from __future__ import annotations

import json

from ..errors import SpecError
from ..journal import Journal, undo_handler
from ..nodes import Node
from ..tools.registry import Tool
from .record import ChangeRecord

ETHTOOL = Tool("ethtool", "ethtool --version", "ethtool")


def read_mtu(node: Node, ifname: str) -> int:
    res = node.run(["ip", "-j", "link", "show", "dev", ifname], check=False, timeout=10)
    if not res.ok:
        raise SpecError(f"{node.name} has no interface {ifname!r}",
                        f"list its interfaces with `ip link` on {node.name}")
    return int(json.loads(res.stdout)[0]["mtu"])


def set_mtu(journal: Journal, node: Node, ifname: str, mtu: int) -> ChangeRecord:
    if not 68 <= mtu <= 65535:
        raise SpecError(f"MTU {mtu} is out of range", "use 68..65535")
    before = read_mtu(node, ifname)
    if before == mtu:
        return ChangeRecord(node.name, "mtu", ifname, str(before), str(mtu), False)
    journal.record("mtu", node, ifname=ifname, before=before)
    node.run(["ip", "link", "set", "dev", ifname, "mtu", str(mtu)], timeout=10)
    return ChangeRecord(node.name, "mtu", ifname, str(before), str(mtu), True)


def read_offload(node: Node, ifname: str, feature: str) -> bool:
    res = node.run(["ethtool", "-k", ifname], timeout=10)
    for line in res.stdout.splitlines():
        name, _, state = line.strip().partition(":")
        if name == feature:
            return state.split()[0] == "on"
    raise SpecError(f"{node.name}:{ifname} has no offload feature {feature!r}",
                    f"see `ethtool -k {ifname}` for the names")


def set_offload(journal: Journal, node: Node, ifname: str, feature: str,
                enabled: bool) -> ChangeRecord:
    """E.g. feature 'generic-segmentation-offload' (ethtool's long name)."""
    before = read_offload(node, ifname, feature)
    state = "on" if enabled else "off"
    if before == enabled:
        return ChangeRecord(node.name, "offload", f"{ifname} {feature}", state, state, False)
    journal.record("offload", node, ifname=ifname, feature=feature, before=before)
    node.run(["ethtool", "-K", ifname, feature, state], timeout=10)
    return ChangeRecord(node.name, "offload", f"{ifname} {feature}",
                        "on" if before else "off", state, True)


@undo_handler("mtu")
def _restore_mtu(node: Node, data: dict) -> None:
    node.run(["ip", "link", "set", "dev", data["ifname"], "mtu", str(data["before"])],
             check=False, timeout=10)


@undo_handler("offload")
def _restore_offload(node: Node, data: dict) -> None:
    node.run(["ethtool", "-K", data["ifname"], data["feature"],
              "on" if data["before"] else "off"], check=False, timeout=10)
