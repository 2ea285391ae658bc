"""Upstream Linux MPTCP (v1): the path manager's limits and endpoints.

``ip mptcp limits`` caps the subflows per connection and the ADD_ADDRs
accepted; ``ip mptcp endpoint`` tells the in-kernel path manager which local
addresses may open extra subflows. Both are per network namespace.
"""

from __future__ import annotations

import json

from ..errors import SpecError
from ..journal import Journal, undo_handler
from ..nodes import Node
from .record import ChangeRecord
from .sysctl import set_sysctl

MAX_SUBFLOWS = 8  # kernel limit (MPTCP_PM_ADDR_MAX)


def read_limits(node: Node) -> dict[str, int]:
    # iproute2 6.1 prints limits as text even with -j: "add_addr_accepted 0 subflows 2"
    words = node.run(["ip", "mptcp", "limits", "show"], timeout=10).stdout.split()
    data = dict(zip(words[::2], words[1::2]))
    return {"subflows": int(data.get("subflows", 0)),
            "add_addr_accepted": int(data.get("add_addr_accepted", 0))}


def set_limits(journal: Journal, node: Node, subflows: int, add_addr_accepted: int) -> ChangeRecord:
    for name, value in (("subflows", subflows), ("add_addr_accepted", add_addr_accepted)):
        if not 0 <= value <= MAX_SUBFLOWS:
            raise SpecError(f"MPTCP limit {name}={value} is out of range",
                            f"use 0..{MAX_SUBFLOWS}")
    before = read_limits(node)
    after = {"subflows": subflows, "add_addr_accepted": add_addr_accepted}
    if before == after:
        return ChangeRecord(node.name, "mptcp-limits", "limits", json.dumps(before),
                            json.dumps(after), changed=False)
    journal.record("mptcp-limits", node, before=before)
    node.run(["ip", "mptcp", "limits", "set", "subflow", str(subflows),
              "add_addr_accepted", str(add_addr_accepted)], timeout=10)
    return ChangeRecord(node.name, "mptcp-limits", "limits", json.dumps(before),
                        json.dumps(after), changed=True)


def read_endpoints(node: Node) -> list[dict]:
    res = node.run(["ip", "-j", "mptcp", "endpoint", "show"], timeout=10)
    return json.loads(res.stdout or "[]")


def add_endpoint(journal: Journal, node: Node, address: str, dev: str,
                 flags: tuple[str, ...] = ("subflow",)) -> ChangeRecord:
    """Announce ``address`` on ``dev`` to the path manager (e.g. as a subflow source)."""
    allowed = {"subflow", "signal", "backup", "fullmesh"}
    if not set(flags) <= allowed:
        raise SpecError(f"unknown MPTCP endpoint flags {sorted(set(flags) - allowed)}",
                        f"use some of {sorted(allowed)}")
    existing = read_endpoints(node)
    for ep in existing:
        if ep.get("address") == address:
            raise SpecError(f"{node.name} already has an MPTCP endpoint for {address} "
                            f"(id {ep.get('id')})",
                            "it was not made by this run: remove it yourself "
                            "(ip mptcp endpoint delete id N) or leave the address out")
    ep_id = max((int(ep.get("id", 0)) for ep in existing), default=0) + 1
    journal.record("mptcp-endpoint", node, id=ep_id, address=address)
    node.run(["ip", "mptcp", "endpoint", "add", address, "dev", dev, "id", str(ep_id), *flags],
             timeout=10)
    return ChangeRecord(node.name, "mptcp-endpoint", f"{address} dev {dev}", None,
                        f"id {ep_id} {' '.join(flags)}", changed=True)


def enable(journal: Journal, node: Node) -> ChangeRecord:
    return set_sysctl(journal, node, "net.mptcp.enabled", 1)


@undo_handler("mptcp-limits")
def _restore_limits(node: Node, data: dict) -> None:
    before = data["before"]
    node.run(["ip", "mptcp", "limits", "set", "subflow", str(before["subflows"]),
              "add_addr_accepted", str(before["add_addr_accepted"])], timeout=10)


@undo_handler("mptcp-endpoint")
def _remove_endpoint(node: Node, data: dict) -> None:
    for ep in read_endpoints(node):
        if int(ep.get("id", -1)) == int(data["id"]) and ep.get("address") == data["address"]:
            node.run(["ip", "mptcp", "endpoint", "delete", "id", str(data["id"])], timeout=10)
