"""Nodes: one ``run(cmd) -> Result`` for the local machine, a namespace, an SSH host."""

from __future__ import annotations

from .base import DEFAULT_TIMEOUT, Node, Process, ProcessInfo
from .local import LocalNode
from .netns import MachineRootNode, NamespaceNode
from .result import Result

__all__ = [
    "DEFAULT_TIMEOUT",
    "LocalNode",
    "MachineRootNode",
    "NamespaceNode",
    "Node",
    "Process",
    "ProcessInfo",
    "Result",
    "described_within",
    "node_from_description",
]


def described_within(desc: dict, target: dict) -> bool:
    """Whether a node description is ``target`` or a node (a namespace, ...) inside it."""
    while isinstance(desc, dict):
        if desc == target:
            return True
        desc = desc.get("parent")
    return False


def node_from_description(desc: dict) -> Node:
    """Rebuild a node from :meth:`Node.describe` output (used to undo after a crash)."""
    kind = desc.get("type")
    if kind == "local":
        return LocalNode(desc.get("name", "local"))
    if kind == "netns":
        return NamespaceNode(desc["netns"], node_from_description(desc["parent"]), desc.get("name"))
    if kind == "machine-root":
        return MachineRootNode(node_from_description(desc["parent"]), desc.get("name"))
    if kind == "ssh":
        from .ssh import SSHNode
        from .sudo import SudoSSHNode

        return (SudoSSHNode if desc.get("sudo") is True else SSHNode).from_description(desc)
    raise ValueError(f"unknown node type in description: {desc!r}")
