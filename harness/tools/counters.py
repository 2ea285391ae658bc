"""Kernel counters read through a node: interface bytes and /proc/net/netstat.

Both are per network namespace (they follow the reading process's namespace),
so reading them through a namespace node gives that node's own counters.
"""

from __future__ import annotations

import json

from ..nodes import Node
from ..nodes.facts import NETSTAT_PATH, netstat_group


def interface_bytes(node: Node, devices: list[str]) -> dict[str, dict[str, int]]:
    """{device: {"tx": bytes, "rx": bytes}} for each device, in one command."""
    res = node.run(["ip", "-s", "-j", "link", "show"], timeout=10)
    return parse_interface_bytes(res.stdout, devices, node.name)


def parse_interface_bytes(text: str, devices: list[str], node: str = "node") -> dict[str, dict[str, int]]:
    out = {}
    for link in json.loads(text):
        if link.get("ifname") in devices:
            stats = link["stats64"]
            out[link["ifname"]] = {"tx": int(stats["tx"]["bytes"]), "rx": int(stats["rx"]["bytes"])}
    missing = set(devices) - set(out)
    if missing:
        raise KeyError(f"{node} has no interface {sorted(missing)}")
    return out


def interface_bytes_and_netstat(node: Node, devices: list[str], prefix: str
                                ) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """Both readings in ONE command (half the cost per measurement point)."""
    res = node.run(f"ip -s -j link show && echo NETSTAT && cat {NETSTAT_PATH}", timeout=10)
    links, _, netstat_text = res.stdout.partition("NETSTAT\n")
    return (parse_interface_bytes(links, devices, node.name),
            netstat_group(netstat_text, prefix))


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after}
